//! Reading an import file: its format (given or detected from name and
//! content) and its hosts, or every problem with its line — the one path for
//! `merlya hosts import` and the console's `/hosts import`.

use std::path::Path;

use super::{ImportFormat, ImportReport, detect_format, parse};

/// The hosts of `file`, or a message naming the file, each bad line and what was expected.
pub fn read_import_file(file: &Path, format: Option<ImportFormat>) -> Result<ImportReport, String> {
    let text = crate::input::read_text(file, crate::input::DATA_LIMIT, "an inventory to import")
        .map_err(|e| format!("{e}; nothing was imported"))?;
    let Some(format) = format.or_else(|| detect_format(file, &text)) else {
        return Err(format!(
            "cannot tell the format of {}; pass --format (ssh-config, known-hosts, etc-hosts, ansible-ini, ansible-yaml, csv, toml, json, yaml)",
            file.display()
        ));
    };
    parse(format, &text).map_err(|errors| {
        // A value quoted back (a host name of 10 MB) is cut: one readable line per error.
        let lines: Vec<String> =
            errors.iter().map(|e| format!("  {}: {}", file.display(), crate::input::shorten(&e.to_string()))).collect();
        format!("{} has {} error(s); nothing was imported:\n{}", file.display(), errors.len(), lines.join("\n"))
    })
}
