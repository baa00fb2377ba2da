//! JSON and YAML lists of host objects, and the host record shared with TOML.

use serde::Deserialize;

use super::{ImportReport, LineError, ansible_yaml::yaml_line_error};
use crate::inventory::{Elevation, Host};

/// A host as written in JSON, YAML and TOML files. Unknown keys are errors.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct HostRecord {
    /// Required in lists; TOML takes it from the table name.
    #[serde(default)]
    pub name: Option<String>,
    pub hostname: String,
    #[serde(default)]
    pub port: Option<u16>,
    #[serde(default, alias = "user")]
    pub username: Option<String>,
    #[serde(default)]
    pub tags: Vec<String>,
    #[serde(default)]
    pub jump: Option<String>,
    #[serde(default)]
    pub identity_file: Option<String>,
    #[serde(default)]
    pub elevation: Option<Elevation>,
}

impl HostRecord {
    /// Builds the host, with `fallback_name` when the record has none.
    pub fn into_host(self, fallback_name: Option<&str>) -> Result<Host, String> {
        let name = self.name.or(fallback_name.map(String::from)).ok_or("missing field `name`")?;
        let mut host = Host::new(name, self.hostname);
        host.port = self.port.unwrap_or(22);
        host.username = self.username;
        for tag in &self.tags {
            host.add_tag(tag);
        }
        host.jump = self.jump;
        host.identity_file = self.identity_file;
        host.elevation = self.elevation.unwrap_or_default();
        Ok(host)
    }
}

fn finish(records: Vec<HostRecord>) -> Result<ImportReport, Vec<LineError>> {
    let mut hosts = Vec::new();
    let mut errors = Vec::new();
    for (index, record) in records.into_iter().enumerate() {
        match record.into_host(None) {
            Ok(h) => hosts.push(h),
            Err(e) => errors.push(LineError::new(0, format!("entry {}: {e}", index + 1))),
        }
    }
    if errors.is_empty() { Ok(ImportReport { hosts, ..Default::default() }) } else { Err(errors) }
}

pub fn parse_json(text: &str) -> Result<ImportReport, Vec<LineError>> {
    let records: Vec<HostRecord> =
        serde_json::from_str(text).map_err(|e| vec![LineError::new(e.line(), e.to_string())])?;
    finish(records)
}

pub fn parse_yaml(text: &str) -> Result<ImportReport, Vec<LineError>> {
    let records: Vec<HostRecord> = crate::input::from_yaml(text).map_err(|e| vec![yaml_line_error(&e)])?;
    finish(records)
}
