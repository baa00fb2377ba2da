//! `/etc/hosts`: `ADDRESS NAME [ALIAS...]`; loopback, multicast and
//! `localhost`-style entries are skipped (localhost is always present).

use std::net::IpAddr;

use super::{ImportReport, LineError, merge_by_name};
use crate::inventory::Host;

pub fn parse(text: &str) -> Result<ImportReport, Vec<LineError>> {
    let mut skipped = Vec::new();
    let mut errors = Vec::new();
    let mut hosts = Vec::new();
    for (index, raw) in text.lines().enumerate() {
        let line_no = index + 1;
        let line = raw.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let mut fields = line.split_whitespace();
        let address = fields.next().unwrap_or("");
        let Ok(ip) = address.parse::<IpAddr>() else {
            errors.push(LineError::new(line_no, format!("{address:?} is not an IP address")));
            continue;
        };
        let Some(name) = fields.next() else {
            errors.push(LineError::new(line_no, format!("{address} has no host name")));
            continue;
        };
        if ip.is_loopback() || ip.is_multicast() || ip.is_unspecified() || is_local_name(name) {
            skipped.push(format!("line {line_no}: {name} ({address}) is a local or multicast entry"));
            continue;
        }
        hosts.push((Host::new(name, address), line_no));
    }
    let mut report = merge_by_name(hosts, &mut errors);
    if !errors.is_empty() {
        return Err(errors);
    }
    report.skipped = skipped;
    Ok(report)
}

fn is_local_name(name: &str) -> bool {
    name == "localhost" || name.starts_with("ip6-") || name.starts_with("localhost.")
}
