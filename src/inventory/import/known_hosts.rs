//! OpenSSH `known_hosts` lines, as read by the host key check (ssh::known_hosts) and imported as
//! hosts: plain entries become hosts; hashed, wildcard and marker lines are skipped and counted.

use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;

use super::{ImportReport, LineError};
use crate::inventory::Host;

/// One parsed known_hosts line.
pub struct KnownHostsLine<'a> {
    /// `@revoked` or `@cert-authority`, if the line has one.
    pub marker: Option<String>,
    /// The comma-separated host patterns (plain, `[host]:port`, `!negated`, `|1|` hashed).
    pub hosts: &'a str,
    /// The key's type (`ssh-ed25519`).
    pub key_type: &'a str,
    /// The key, base64.
    pub key_b64: &'a str,
}

impl<'a> KnownHostsLine<'a> {
    /// The line's fields; `None` for a blank line, a comment or too few fields.
    pub fn parse(line: &'a str) -> Option<Self> {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            return None;
        }
        let mut fields = line.split_whitespace();
        let mut first = fields.next()?;
        let mut marker = None;
        if first.starts_with('@') {
            marker = Some(first.to_string());
            first = fields.next()?;
        }
        Some(Self { marker, hosts: first, key_type: fields.next()?, key_b64: fields.next()? })
    }
}

/// The importer: plain entries become hosts; hashed, wildcard and marker lines are skipped and counted.
pub fn import_hosts(text: &str) -> Result<ImportReport, Vec<LineError>> {
    let mut report = ImportReport::default();
    let mut errors = Vec::new();
    let mut hashed = 0usize;
    let mut hosts: Vec<Host> = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let line_no = index + 1;
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let Some(entry) = KnownHostsLine::parse(trimmed) else {
            errors.push(LineError::new(line_no, "expected `HOSTS KEYTYPE BASE64KEY`"));
            continue;
        };
        if B64.decode(entry.key_b64).is_err() {
            errors.push(LineError::new(line_no, format!("key of type {} is not valid base64", entry.key_type)));
            continue;
        }
        if let Some(marker) = entry.marker {
            report.skipped.push(format!("line {line_no}: {marker} entry"));
            continue;
        }
        if entry.hosts.starts_with("|1|") {
            hashed += 1;
            continue;
        }
        if let Some(host) = host_from_patterns(entry.hosts) {
            if !hosts.iter().any(|h| h.name == host.name) {
                hosts.push(host);
            }
        } else {
            report.skipped.push(format!("line {line_no}: {} has no concrete host name", entry.hosts));
        }
    }
    if hashed > 0 {
        report.skipped.push(format!("{hashed} hashed entries (names cannot be recovered)"));
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    report.hosts = hosts;
    Ok(report)
}

/// `web01,10.0.0.1` → name web01, address 10.0.0.1; `[h]:2222` → port 2222.
fn host_from_patterns(patterns: &str) -> Option<Host> {
    let mut names: Vec<(String, u16)> = Vec::new();
    for p in patterns.split(',') {
        if p.contains(['*', '?', '!']) {
            continue;
        }
        let (name, port) = match p.strip_prefix('[').and_then(|r| r.split_once("]:")) {
            Some((n, port)) => (n.to_string(), port.parse().unwrap_or(22)),
            None => (p.to_string(), 22),
        };
        names.push((name, port));
    }
    let is_ip = |n: &str| n.parse::<std::net::IpAddr>().is_ok();
    let (name, port) =
        names.iter().find(|(n, _)| !is_ip(n)).or_else(|| names.iter().find(|(n, _)| !n.contains(':')))?;
    let address = names.iter().find(|(n, _)| is_ip(n)).map(|(n, _)| n.clone()).unwrap_or_else(|| name.clone());
    // One address on several ports is several hosts (containers, forwarded sshds): the port is
    // part of the name unless it is SSH's own.
    let name = if *port == 22 { name.clone() } else { format!("{name}-{port}") };
    let mut host = Host::new(name, address);
    host.port = *port;
    Some(host)
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl";
    const OTHER: &str = "AAAAC3NzaC1lZDI1NTE5AAAAIEJv0Kq8wLzZ5l5Z9hM6rj8b1lQx2F4Z4oYl3h4nM2u9";

    #[test]
    fn import_counts_hashed_and_reports_bad_lines() {
        let text = format!("web01,10.0.0.1 ssh-ed25519 {KEY}\n|1|abc|def ssh-ed25519 {KEY}\n[db]:2200 ssh-rsa {KEY}\n");
        let report = import_hosts(&text).unwrap();
        assert_eq!(report.hosts.len(), 2);
        assert_eq!(report.hosts[0].hostname, "10.0.0.1");
        assert_eq!(report.hosts[1].port, 2200);
        assert_eq!(report.skipped, ["1 hashed entries (names cannot be recovered)"]);
        let errors = import_hosts("web01 ssh-ed25519\n").unwrap_err();
        assert_eq!(errors[0].line, 1);
    }

    #[test]
    fn one_address_on_several_ports_is_several_hosts() {
        let text = format!(
            "[127.0.0.1]:2201 ssh-ed25519 {KEY}\n[127.0.0.1]:2202 ssh-ed25519 {OTHER}\nweb01 ssh-ed25519 {KEY}\n[web01]:2222 ssh-ed25519 {OTHER}\n"
        );
        let report = import_hosts(&text).unwrap();
        let hosts: Vec<(String, String, u16)> =
            report.hosts.iter().map(|h| (h.name.clone(), h.hostname.clone(), h.port)).collect();
        assert_eq!(
            hosts,
            [
                ("127.0.0.1-2201".to_string(), "127.0.0.1".to_string(), 2201),
                ("127.0.0.1-2202".to_string(), "127.0.0.1".to_string(), 2202),
                ("web01".to_string(), "web01".to_string(), 22),
                ("web01-2222".to_string(), "web01".to_string(), 2222),
            ]
        );
    }
}
