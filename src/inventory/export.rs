//! `merlya hosts export`: JSON, YAML and CSV that the importers read back.
//! The built-in localhost is left out so an export re-imports cleanly.

use serde::Serialize;

use super::host::Host;

/// Export formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ExportFormat {
    Json,
    Yaml,
    Csv,
}

#[derive(Serialize)]
struct Record<'a> {
    name: &'a str,
    hostname: &'a str,
    port: u16,
    #[serde(skip_serializing_if = "Option::is_none")]
    username: Option<&'a str>,
    tags: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    jump: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    identity_file: Option<&'a str>,
    elevation: &'a str,
}

impl<'a> From<&'a Host> for Record<'a> {
    fn from(h: &'a Host) -> Self {
        Record {
            name: &h.name,
            hostname: &h.hostname,
            port: h.port,
            username: h.username.as_deref(),
            tags: &h.tags,
            jump: h.jump.as_deref(),
            identity_file: h.identity_file.as_deref(),
            elevation: h.elevation.as_str(),
        }
    }
}

/// Renders `hosts` (minus localhost) in `format`.
pub fn export(hosts: &[Host], format: ExportFormat) -> Result<String, String> {
    let records: Vec<Record> = hosts.iter().filter(|h| !h.is_local()).map(Record::from).collect();
    match format {
        ExportFormat::Json => serde_json::to_string_pretty(&records).map(|s| s + "\n").map_err(|e| e.to_string()),
        ExportFormat::Yaml => yaml_serde::to_string(&records).map_err(|e| e.to_string()),
        ExportFormat::Csv => {
            let mut writer = csv::Writer::from_writer(Vec::new());
            let header = ["name", "hostname", "port", "username", "tags", "jump", "elevation", "identity_file"];
            writer.write_record(header).map_err(|e| e.to_string())?;
            for r in &records {
                writer
                    .write_record([
                        r.name,
                        r.hostname,
                        &r.port.to_string(),
                        r.username.unwrap_or(""),
                        &r.tags.join(";"),
                        r.jump.unwrap_or(""),
                        r.elevation,
                        r.identity_file.unwrap_or(""),
                    ])
                    .map_err(|e| e.to_string())?;
            }
            let bytes = writer.into_inner().map_err(|e| e.to_string())?;
            String::from_utf8(bytes).map_err(|e| e.to_string())
        }
    }
}
