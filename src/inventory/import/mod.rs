//! Host importers: OpenSSH config, known_hosts, /etc/hosts, Ansible INI and
//! YAML inventories, CSV, TOML, JSON and YAML host lists.
//!
//! Every importer is a pure function from text to hosts. A file with any bad
//! line imports nothing: all its errors are returned, each with its line, so
//! the user fixes the file once instead of discovering problems one by one.

mod ansible_ini;
/// Ansible's connection variables, layered from `all` through groups to the host.
mod ansible_vars;
mod ansible_yaml;
mod etc_hosts;
mod file;
mod host_list;
pub mod known_hosts;
mod range;
pub mod ssh_config;
mod table;

use std::path::Path;

use serde::Serialize;

pub use file::read_import_file;

use super::host::{Host, validate_host};

/// One problem in an imported file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LineError {
    /// 1-based line (0 when the problem is the whole file).
    pub line: usize,
    /// What is wrong and what was expected.
    pub message: String,
}

impl LineError {
    /// A problem at `line`.
    pub fn new(line: usize, message: impl Into<String>) -> Self {
        Self { line, message: message.into() }
    }
}

impl std::fmt::Display for LineError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.line == 0 { write!(f, "{}", self.message) } else { write!(f, "line {}: {}", self.line, self.message) }
    }
}

/// The formats `merlya hosts import` understands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ImportFormat {
    /// OpenSSH client configuration (Host blocks).
    SshConfig,
    /// OpenSSH known_hosts.
    KnownHosts,
    /// /etc/hosts.
    EtcHosts,
    /// Ansible INI inventory.
    AnsibleIni,
    /// Ansible YAML inventory.
    AnsibleYaml,
    /// CSV with header name,hostname,port,username,tags.
    Csv,
    /// TOML with `[hosts.NAME]` tables.
    Toml,
    /// JSON list of host objects.
    Json,
    /// YAML list of host objects.
    Yaml,
}

/// What an import produced.
#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize)]
pub struct ImportReport {
    /// Hosts to add or update.
    pub hosts: Vec<Host>,
    /// The line each host was read from, in the order of `hosts` (0, or
    /// missing, where the format does not say), so problems can name it.
    pub lines: Vec<usize>,
    /// Entries that were deliberately passed over, with the reason (e.g. hashed known_hosts lines).
    pub skipped: Vec<String>,
    /// Hosts listed several times and merged into one, with their lines.
    pub merged: Vec<String>,
}

impl ImportReport {
    /// Line of host `index`, 0 when unknown.
    fn line(&self, index: usize) -> usize {
        self.lines.get(index).copied().unwrap_or(0)
    }
}

/// Guesses the format from the file name, then from the content.
pub fn detect_format(path: &Path, text: &str) -> Option<ImportFormat> {
    let name = path.file_name()?.to_string_lossy().to_ascii_lowercase();
    let ext = path.extension().map(|e| e.to_string_lossy().to_ascii_lowercase()).unwrap_or_default();
    match ext.as_str() {
        "csv" => return Some(ImportFormat::Csv),
        "toml" => return Some(ImportFormat::Toml),
        "json" => return Some(ImportFormat::Json),
        "ini" => return Some(ImportFormat::AnsibleIni),
        "yaml" | "yml" => return Some(yaml_flavour(text)),
        _ => {}
    }
    if name.starts_with("known_hosts") {
        return Some(ImportFormat::KnownHosts);
    }
    if name == "config" || name.starts_with("ssh_config") {
        return Some(ImportFormat::SshConfig);
    }
    let first = text.lines().map(str::trim).find(|l| !l.is_empty() && !l.starts_with('#'))?;
    let first_word = first.split_whitespace().next().unwrap_or("");
    if first.starts_with('[') && first.ends_with(']') {
        Some(ImportFormat::AnsibleIni)
    } else if first_word.eq_ignore_ascii_case("host") || first_word.eq_ignore_ascii_case("match") {
        Some(ImportFormat::SshConfig)
    } else if first_word.parse::<std::net::IpAddr>().is_ok() {
        Some(ImportFormat::EtcHosts)
    } else if name == "hosts" || name == "inventory" {
        Some(ImportFormat::AnsibleIni)
    } else {
        None
    }
}

/// A YAML file is an Ansible inventory when its top level is a mapping of groups.
fn yaml_flavour(text: &str) -> ImportFormat {
    match crate::input::from_yaml::<yaml_serde::Value>(text) {
        Ok(yaml_serde::Value::Mapping(_)) => ImportFormat::AnsibleYaml,
        _ => ImportFormat::Yaml,
    }
}

/// Parses `text` as `format`; errors come in line order.
pub fn parse(format: ImportFormat, text: &str) -> Result<ImportReport, Vec<LineError>> {
    let parsed = match format {
        ImportFormat::SshConfig => ssh_config::import_hosts(text),
        ImportFormat::KnownHosts => known_hosts::import_hosts(text),
        ImportFormat::EtcHosts => etc_hosts::parse(text),
        ImportFormat::AnsibleIni => ansible_ini::parse(text),
        ImportFormat::AnsibleYaml => ansible_yaml::parse(text),
        ImportFormat::Csv => table::parse_csv(text),
        ImportFormat::Toml => table::parse_toml(text),
        ImportFormat::Json => host_list::parse_json(text),
        ImportFormat::Yaml => host_list::parse_yaml(text),
    };
    // JSON and YAML lists have no line per host; their hosts are the entries in order.
    let entries = matches!(format, ImportFormat::Json | ImportFormat::Yaml);
    let report = parsed.and_then(|report| check_hosts(&report, entries).map(|()| report));
    report.map_err(|mut errors| {
        errors.sort_by_key(|e| e.line);
        errors
    })
}

/// Final checks shared by every importer: valid names and tags, no duplicate
/// names, each problem placed by its line, or by its entry number in lists
/// (`entries`); a duplicate names where the name first appeared too.
fn check_hosts(report: &ImportReport, entries: bool) -> Result<(), Vec<LineError>> {
    let mut errors = Vec::new();
    let mut seen = std::collections::HashMap::new();
    for (index, host) in report.hosts.iter().enumerate() {
        let line = report.line(index);
        let at = if entries { format!("entry {}: ", index + 1) } else { String::new() };
        if let Err(e) = validate_host(host) {
            errors.push(LineError::new(line, format!("{at}{e}")));
        }
        if let Some(first) = seen.insert(host.name.as_str(), index) {
            let first_line = report.line(first);
            let before = if entries {
                format!(" (first as entry {})", first + 1)
            } else if first_line > 0 {
                format!(" (first on line {first_line})")
            } else {
                String::new()
            };
            errors.push(LineError::new(line, format!("{at}host {} appears twice{before}", host.name)));
        }
    }
    if errors.is_empty() { Ok(()) } else { Err(errors) }
}

/// Merges hosts that share a name, for formats that list a host once per
/// group (Ansible) or alias line (/etc/hosts): tags are united and later
/// entries fill settings left at their defaults. Two entries setting one
/// field differently are an error naming both lines; other merges are noted
/// in the report with their lines. `found` pairs each host with its line (0
/// when the format has none).
pub(crate) fn merge_by_name(found: Vec<(Host, usize)>, errors: &mut Vec<LineError>) -> ImportReport {
    let mut report = ImportReport::default();
    let mut index: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    let mut seen_on: Vec<Vec<usize>> = Vec::new();
    for (host, line) in found {
        let Some(&at) = index.get(&host.name) else {
            index.insert(host.name.clone(), report.hosts.len());
            report.hosts.push(host);
            report.lines.push(line);
            seen_on.push(vec![line]);
            continue;
        };
        let first_line = report.lines[at];
        let existing = &mut report.hosts[at];
        let mut conflict = |field: &str, a: &dyn std::fmt::Display, b: &dyn std::fmt::Display| {
            let first = if first_line > 0 { format!("line {first_line}") } else { "its first entry".into() };
            errors.push(LineError::new(
                line,
                format!("host {} is listed again with {field} {b}, but {first} gives {a}", existing.name),
            ));
        };
        match (&existing.username, &host.username) {
            (Some(a), Some(b)) if a != b => conflict("user", a, b),
            _ => {}
        }
        if existing.hostname != existing.name && host.hostname != host.name && existing.hostname != host.hostname {
            conflict("address", &existing.hostname, &host.hostname);
        }
        if existing.port != 22 && host.port != 22 && existing.port != host.port {
            conflict("port", &existing.port, &host.port);
        }
        for tag in &host.tags {
            existing.add_tag(tag);
        }
        if existing.username.is_none() {
            existing.username = host.username;
        }
        if existing.hostname == existing.name && host.hostname != host.name {
            existing.hostname = host.hostname;
        }
        if existing.port == 22 {
            existing.port = host.port;
        }
        if existing.identity_file.is_none() {
            existing.identity_file = host.identity_file;
        }
        seen_on[at].push(line);
    }
    for (host, lines) in report.hosts.iter().zip(&seen_on) {
        if lines.len() > 1 {
            let listed = if lines.contains(&0) {
                format!("{} times", lines.len())
            } else {
                format!("on lines {}", lines.iter().map(usize::to_string).collect::<Vec<_>>().join(", "))
            };
            report.merged.push(format!("{} is listed {listed}; merged into one host", host.name));
        }
    }
    report
}

/// The elevation Ansible's become variables ask for: `ansible_become` (yes/true/1 or no), its
/// method (`sudo` when not named) and whether a become password is set (its value is not
/// imported: store it with `merlya secret set`). `None` when they ask for nothing.
pub(crate) fn ansible_elevation(
    become_: Option<&str>,
    method: Option<&str>,
    password_set: bool,
) -> Result<Option<crate::inventory::Elevation>, String> {
    use crate::inventory::Elevation;
    let asked = match become_.map(|b| b.trim().to_ascii_lowercase()) {
        Some(b) if matches!(b.as_str(), "yes" | "true" | "1" | "on") => true,
        Some(b) if matches!(b.as_str(), "no" | "false" | "0" | "off") => return Ok(None),
        Some(b) => return Err(format!("ansible_become {b:?} is not yes or no")),
        None => method.is_some(),
    };
    if !asked {
        return Ok(None);
    }
    Ok(Some(match (method.map(str::trim).unwrap_or("sudo"), password_set) {
        ("sudo", false) => Elevation::Sudo,
        ("sudo", true) => Elevation::SudoPassword,
        ("doas", false) => Elevation::Doas,
        ("doas", true) => Elevation::DoasPassword,
        ("su", _) => Elevation::Su,
        (other, _) => return Err(format!("ansible_become_method {other:?}: merlya elevates with sudo, doas or su")),
    }))
}

/// Parses a port number, naming the line when it is not one.
pub(crate) fn parse_port(value: &str, line: usize) -> Result<u16, LineError> {
    value
        .trim()
        .parse::<u16>()
        .ok()
        .filter(|p| *p != 0)
        .ok_or_else(|| LineError::new(line, format!("port {value:?} is not a number from 1 to 65535")))
}

#[cfg(test)]
mod tests;
