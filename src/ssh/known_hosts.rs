//! OpenSSH `known_hosts`: host key verification and the known_hosts importer.
//!
//! Lookup follows OpenSSH: the host is `name` on port 22 and `[name]:port`
//! otherwise; comma lists and hashed (`|1|salt|hmac`) entries are matched;
//! `@revoked` keys are refused; `@cert-authority` lines are ignored here.

use std::io::Write;
use std::path::{Path, PathBuf};

use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use hmac::{Hmac, KeyInit, Mac};
use sha1::Sha1;

use crate::inventory::Host;
use crate::inventory::import::{ImportReport, LineError};

/// What the known_hosts files say about a server key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KnownHostStatus {
    /// The key is recorded for this host.
    Known,
    /// Nothing is recorded for this host.
    Unknown,
    /// The host is recorded only with keys of other types.
    KnownWithOtherTypes,
    /// The host is recorded with a different key of the same type: refuse.
    Changed { file: PathBuf, line: usize },
    /// The key is marked `@revoked`.
    Revoked { file: PathBuf, line: usize },
}

/// The name a host is recorded under for a port.
pub fn host_pattern(host: &str, port: u16) -> String {
    if port == 22 { host.to_string() } else { format!("[{host}]:{port}") }
}

/// `SHA256:...` fingerprint as OpenSSH prints it.
pub fn fingerprint(key_type: &str, key_b64: &str) -> String {
    use sha2::Digest;
    let _ = key_type;
    let blob = B64.decode(key_b64).unwrap_or_default();
    let digest = sha2::Sha256::digest(&blob);
    format!("SHA256:{}", base64::engine::general_purpose::STANDARD_NO_PAD.encode(digest))
}

/// Checks `key_type key_b64` offered by `host:port` against every file in order.
pub fn check(files: &[PathBuf], host: &str, port: u16, key_type: &str, key_b64: &str) -> KnownHostStatus {
    let wanted = host_pattern(host, port);
    let mut other_types = false;
    let mut same_type_mismatch: Option<(PathBuf, usize)> = None;
    for file in files {
        let Ok(text) = std::fs::read_to_string(file) else { continue };
        for (index, line) in text.lines().enumerate() {
            let Some(entry) = Entry::parse(line) else { continue };
            if !entry.matches(&wanted) {
                continue;
            }
            let same_key = entry.key_type == key_type && entry.key_b64 == key_b64;
            match entry.marker.as_deref() {
                Some("@revoked") if same_key => {
                    return KnownHostStatus::Revoked { file: file.clone(), line: index + 1 };
                }
                Some(_) => continue,
                None => {}
            }
            if same_key {
                return KnownHostStatus::Known;
            } else if entry.key_type == key_type {
                same_type_mismatch.get_or_insert((file.clone(), index + 1));
            } else {
                other_types = true;
            }
        }
    }
    match (same_type_mismatch, other_types) {
        (Some((file, line)), _) => KnownHostStatus::Changed { file, line },
        (None, true) => KnownHostStatus::KnownWithOtherTypes,
        (None, false) => KnownHostStatus::Unknown,
    }
}

/// Appends a key for `host:port` to `file` (created with mode 600 if missing).
pub fn append(file: &Path, host: &str, port: u16, key_type: &str, key_b64: &str) -> std::io::Result<()> {
    if let Some(parent) = file.parent() {
        std::fs::create_dir_all(parent)?;
    }
    let mut options = std::fs::OpenOptions::new();
    options.create(true).append(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut f = options.open(file)?;
    writeln!(f, "{} {key_type} {key_b64}", host_pattern(host, port))
}

/// One parsed known_hosts line.
struct Entry<'a> {
    marker: Option<String>,
    hosts: &'a str,
    key_type: &'a str,
    key_b64: &'a str,
}

impl<'a> Entry<'a> {
    fn parse(line: &'a str) -> Option<Self> {
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

    fn matches(&self, wanted: &str) -> bool {
        let mut positive = false;
        for pattern in self.hosts.split(',') {
            if let Some(hashed) = pattern.strip_prefix("|1|") {
                if hashed_matches(hashed, wanted) {
                    positive = true;
                }
            } else if let Some(neg) = pattern.strip_prefix('!') {
                if glob_match(neg, wanted) {
                    return false;
                }
            } else if glob_match(pattern, wanted) {
                positive = true;
            }
        }
        positive
    }
}

fn glob_match(pattern: &str, name: &str) -> bool {
    if !pattern.contains(['*', '?']) {
        return pattern == name;
    }
    globset::GlobBuilder::new(pattern)
        .literal_separator(false)
        .backslash_escape(false)
        .build()
        .map(|g| g.compile_matcher().is_match(name))
        .unwrap_or(false)
}

/// `salt|hmac` (both base64): HMAC-SHA1(salt, host) == hmac.
fn hashed_matches(hashed: &str, wanted: &str) -> bool {
    let Some((salt, hash)) = hashed.split_once('|') else { return false };
    let (Ok(salt), Ok(hash)) = (B64.decode(salt), B64.decode(hash)) else { return false };
    let Ok(mut mac) = Hmac::<Sha1>::new_from_slice(&salt) else { return false };
    mac.update(wanted.as_bytes());
    mac.verify_slice(&hash).is_ok()
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
        let Some(entry) = Entry::parse(trimmed) else {
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

    fn file_with(content: &str) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("known_hosts");
        std::fs::write(&path, content).unwrap();
        (dir, path)
    }

    #[test]
    fn known_unknown_changed_and_port_form() {
        let (_d, path) = file_with(&format!("web01,10.0.0.1 ssh-ed25519 {KEY}\n[db]:2222 ssh-ed25519 {KEY}\n"));
        let files = [path.clone()];
        assert_eq!(check(&files, "web01", 22, "ssh-ed25519", KEY), KnownHostStatus::Known);
        assert_eq!(check(&files, "db", 2222, "ssh-ed25519", KEY), KnownHostStatus::Known);
        assert_eq!(check(&files, "db", 22, "ssh-ed25519", KEY), KnownHostStatus::Unknown);
        assert_eq!(check(&files, "web01", 22, "ssh-ed25519", OTHER), KnownHostStatus::Changed { file: path, line: 1 });
        assert_eq!(check(&files, "web01", 22, "ecdsa-sha2-nistp256", OTHER), KnownHostStatus::KnownWithOtherTypes);
    }

    #[test]
    fn hashed_entries_match() {
        // Produced by `ssh-keygen -H` for host "hashed.example".
        let salt = B64.encode(b"0123456789abcdef0123");
        let mut mac = Hmac::<Sha1>::new_from_slice(b"0123456789abcdef0123").unwrap();
        mac.update(b"hashed.example");
        let hash = B64.encode(mac.finalize().into_bytes());
        let (_d, path) = file_with(&format!("|1|{salt}|{hash} ssh-ed25519 {KEY}\n"));
        assert_eq!(
            check(std::slice::from_ref(&path), "hashed.example", 22, "ssh-ed25519", KEY),
            KnownHostStatus::Known
        );
        assert_eq!(check(&[path], "other.example", 22, "ssh-ed25519", KEY), KnownHostStatus::Unknown);
    }

    #[test]
    fn revoked_is_refused_and_append_round_trips() {
        let (_d, path) = file_with(&format!("@revoked * ssh-ed25519 {KEY}\n"));
        assert!(matches!(
            check(std::slice::from_ref(&path), "any", 22, "ssh-ed25519", KEY),
            KnownHostStatus::Revoked { .. }
        ));
        append(&path, "new", 2200, "ssh-ed25519", OTHER).unwrap();
        assert_eq!(check(&[path], "new", 2200, "ssh-ed25519", OTHER), KnownHostStatus::Known);
    }

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
