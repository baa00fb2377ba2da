//! Reading an import file: its format (given or detected from name and
//! content) and its hosts, or every problem with its line — the one path for
//! `merlya hosts import` and the console's `/hosts import`.

use std::path::Path;

use super::{ImportFormat, ImportReport, detect_format, parse};

/// The hosts of `file`, or a message naming the file, each bad line and what was expected.
pub fn read_import_file(file: &Path, format: Option<ImportFormat>) -> Result<ImportReport, String> {
    let text = std::fs::read_to_string(file).map_err(|e| format!("cannot read {}: {e}", file.display()))?;
    let Some(format) = format.or_else(|| detect_format(file, &text)) else {
        return Err(format!(
            "cannot tell the format of {}; pass --format (ssh-config, known-hosts, etc-hosts, ansible-ini, ansible-yaml, csv, toml, json, yaml)",
            file.display()
        ));
    };
    parse(format, &text).map_err(|errors| {
        let lines: Vec<String> = errors.iter().map(|e| format!("  {}: {e}", file.display())).collect();
        format!("{} has {} error(s); nothing was imported:\n{}", file.display(), errors.len(), lines.join("\n"))
    })
}
