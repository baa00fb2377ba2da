//! OpenSSH `known_hosts`: host key verification (the file's lines are read by
//! inventory::import::known_hosts, which also imports them as hosts).
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

use crate::inventory::import::known_hosts::KnownHostsLine;

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
            let Some(entry) = KnownHostsLine::parse(line) else { continue };
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

/// Appends a key for `host:port` to `file` (created with mode 600 if missing), in one write.
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
    // One write of the whole line: keys trusted together are appended from several connections at
    // once, and `writeln!` would write the line in pieces that interleave with the others'.
    let line = format!("{} {key_type} {key_b64}\n", host_pattern(host, port));
    f.write_all(line.as_bytes())
}

/// How the host key check matches a known_hosts line's host patterns.
trait Matches {
    fn matches(&self, wanted: &str) -> bool;
}

impl Matches for KnownHostsLine<'_> {
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

    /// Keys trusted together ("trust all") are appended from several connections at once: each
    /// line must arrive whole, never interleaved with another's pieces.
    #[test]
    fn concurrent_appends_write_whole_lines() {
        let (_d, path) = file_with("");
        let start = std::sync::Arc::new(std::sync::Barrier::new(8));
        let threads: Vec<_> = (0..8u16)
            .map(|t| {
                let (path, start) = (path.clone(), start.clone());
                std::thread::spawn(move || {
                    start.wait();
                    for i in 0..50u16 {
                        append(
                            &path,
                            "127.0.0.1",
                            40000 + t * 100 + i,
                            "ssh-ed25519",
                            if t % 2 == 0 { KEY } else { OTHER },
                        )
                        .unwrap();
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let files = [path.clone()];
        for t in 0..8u16 {
            for i in 0..50u16 {
                let key = if t % 2 == 0 { KEY } else { OTHER };
                let port = 40000 + t * 100 + i;
                assert_eq!(check(&files, "127.0.0.1", port, "ssh-ed25519", key), KnownHostStatus::Known, "{port}");
            }
        }
        assert_eq!(std::fs::read_to_string(&path).unwrap().lines().count(), 400);
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
}
