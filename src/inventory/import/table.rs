//! Tabular formats: CSV (`name,hostname,port,username,tags`, tags `;`-separated)
//! and TOML (`[hosts.NAME]` tables).

use std::collections::BTreeMap;

use serde::Deserialize;

use super::{ImportReport, LineError, host_list::HostRecord, parse_port};
use crate::inventory::Host;

const CSV_COLUMNS: [&str; 8] = ["name", "hostname", "port", "username", "tags", "jump", "elevation", "identity_file"];

pub fn parse_csv(text: &str) -> Result<ImportReport, Vec<LineError>> {
    let mut reader = csv::ReaderBuilder::new().trim(csv::Trim::All).flexible(false).from_reader(text.as_bytes());
    let headers = reader.headers().map_err(|e| vec![LineError::new(1, e.to_string())])?.clone();
    let columns: Vec<String> = headers.iter().map(|h| h.to_ascii_lowercase()).collect();
    let mut errors = Vec::new();
    for column in &columns {
        if !CSV_COLUMNS.contains(&column.as_str()) {
            errors.push(LineError::new(1, format!("unknown column {column:?}; expected {}", CSV_COLUMNS.join(","))));
        }
    }
    for required in ["name", "hostname"] {
        if !columns.iter().any(|c| c == required) {
            errors.push(LineError::new(1, format!("missing column {required:?}")));
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    let (mut hosts, mut lines) = (Vec::new(), Vec::new());
    for record in reader.records() {
        let record = match record {
            Ok(r) => r,
            Err(e) => {
                let line = e.position().map(|p| p.line() as usize).unwrap_or(0);
                errors.push(LineError::new(line, e.to_string()));
                continue;
            }
        };
        let line = record.position().map(|p| p.line() as usize).unwrap_or(0);
        let field = |name: &str| -> Option<String> {
            columns
                .iter()
                .position(|c| c == name)
                .and_then(|i| record.get(i))
                .filter(|v| !v.is_empty())
                .map(String::from)
        };
        match csv_host(&field, line) {
            Ok(h) => {
                hosts.push(h);
                lines.push(line);
            }
            Err(e) => errors.push(e),
        }
    }
    if errors.is_empty() { Ok(ImportReport { hosts, lines, ..Default::default() }) } else { Err(errors) }
}

fn csv_host(field: &dyn Fn(&str) -> Option<String>, line: usize) -> Result<Host, LineError> {
    let name = field("name").ok_or_else(|| LineError::new(line, "empty name"))?;
    let hostname = field("hostname").ok_or_else(|| LineError::new(line, "empty hostname"))?;
    let mut host = Host::new(name, hostname);
    if let Some(port) = field("port") {
        host.port = parse_port(&port, line)?;
    }
    host.username = field("username");
    for tag in field("tags").unwrap_or_default().split(';').map(str::trim).filter(|t| !t.is_empty()) {
        host.add_tag(tag);
    }
    host.jump = field("jump");
    host.identity_file = field("identity_file");
    if let Some(e) = field("elevation") {
        host.elevation = e.parse().map_err(|e: String| LineError::new(line, e))?;
    }
    Ok(host)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TomlFile {
    hosts: BTreeMap<String, HostRecord>,
}

/// `[[hosts]]` tables, each with its `name`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TomlList {
    hosts: Vec<HostRecord>,
}

/// TOML in either form: `[hosts.NAME]` tables, or an array of `[[hosts]]` tables with a `name`.
pub fn parse_toml(text: &str) -> Result<ImportReport, Vec<LineError>> {
    let parsed = |e: toml::de::Error| {
        // The line the error's span starts on (a span at a line's start is on that line).
        let line = e.span().map(|s| text[..s.start.min(text.len())].matches('\n').count() + 1).unwrap_or(0);
        vec![LineError::new(line, e.message().to_string())]
    };
    let array_form = text.lines().any(|l| l.trim_start().starts_with("[[hosts]]"));
    let records: Vec<(String, HostRecord)> = if array_form {
        let file: TomlList = toml::from_str(text).map_err(parsed)?;
        file.hosts.into_iter().enumerate().map(|(i, r)| (format!("hosts[{i}]"), r)).collect()
    } else {
        let file: TomlFile = toml::from_str(text).map_err(parsed)?;
        file.hosts.into_iter().collect()
    };
    let mut hosts = Vec::new();
    let mut errors = Vec::new();
    for (name, record) in records {
        let fallback = (!array_form).then_some(name.as_str());
        match record.into_host(fallback) {
            Ok(h) => hosts.push(h),
            Err(e) => errors.push(LineError::new(0, format!("{}{name}: {e}", if array_form { "" } else { "hosts." }))),
        }
    }
    if errors.is_empty() { Ok(ImportReport { hosts, ..Default::default() }) } else { Err(errors) }
}
