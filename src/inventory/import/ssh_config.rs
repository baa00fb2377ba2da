//! OpenSSH client configuration (`~/.ssh/config`): one parser serves both the
//! importer (Host blocks become hosts) and the connector (settings for hosts
//! that are not in the inventory).
//!
//! Semantics follow ssh_config(5): keywords are case-insensitive, `Key value`
//! or `Key=value`, the first value obtained for a keyword wins, `IdentityFile`
//! accumulates, `Host` patterns support `*`, `?` and `!negation`. `Match` and
//! `Include` blocks are recognised and skipped.

use std::path::{Path, PathBuf};

use globset::Glob;

use super::{ImportReport, LineError, parse_port};
use crate::inventory::Host;

/// A parsed configuration file.
#[derive(Debug, Default, Clone)]
pub struct SshConfigFile {
    blocks: Vec<Block>,
}

#[derive(Debug, Clone)]
struct Block {
    /// `None` for the settings before the first Host line and for Match blocks.
    patterns: Option<Vec<String>>,
    /// Whether this is a Match block (never applied).
    is_match: bool,
    options: Vec<(String, String, usize)>,
}

/// Settings for one host alias after applying every matching block.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ResolvedHost {
    /// `HostName`, with `%h` replaced by the alias.
    pub hostname: Option<String>,
    /// `User`.
    pub user: Option<String>,
    /// `Port`.
    pub port: Option<u16>,
    /// Every `IdentityFile`, `~` expanded, in order.
    pub identity_files: Vec<PathBuf>,
    /// `ProxyJump` (comma-separated chain), unless `none`.
    pub proxy_jump: Option<String>,
}

impl SshConfigFile {
    /// Parses text; syntax errors (keyword without value, bad port) carry their line.
    pub fn parse(text: &str) -> Result<Self, Vec<LineError>> {
        let mut blocks = vec![Block { patterns: None, is_match: false, options: Vec::new() }];
        let mut errors = Vec::new();
        for (index, raw) in text.lines().enumerate() {
            let line_no = index + 1;
            let line = raw.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let (key, value) = split_keyword(line);
            let key = key.to_ascii_lowercase();
            if value.is_empty() {
                errors.push(LineError::new(line_no, format!("{key} needs a value")));
                continue;
            }
            match key.as_str() {
                "host" => blocks.push(Block {
                    patterns: Some(value.split_whitespace().map(|p| unquote(p).to_string()).collect()),
                    is_match: false,
                    options: Vec::new(),
                }),
                "match" => blocks.push(Block { patterns: None, is_match: true, options: Vec::new() }),
                _ => {
                    if key == "port"
                        && let Err(e) = parse_port(value, line_no)
                    {
                        errors.push(e);
                    }
                    if let Some(block) = blocks.last_mut() {
                        block.options.push((key, unquote(value).to_string(), line_no));
                    }
                }
            }
        }
        if errors.is_empty() { Ok(Self { blocks }) } else { Err(errors) }
    }

    /// Reads and parses a file; a missing file is an empty configuration.
    pub fn load(path: &Path) -> Result<Self, String> {
        match std::fs::read_to_string(path) {
            Ok(text) => Self::parse(&text).map_err(|errors| {
                let lines: Vec<String> = errors.iter().map(|e| format!("{}: {e}", path.display())).collect();
                lines.join("\n")
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Self::default()),
            Err(e) => Err(format!("cannot read {}: {e}", path.display())),
        }
    }

    /// The settings that apply to `alias`.
    pub fn resolve(&self, alias: &str) -> ResolvedHost {
        let mut out = ResolvedHost::default();
        for block in &self.blocks {
            if block.is_match {
                continue;
            }
            if let Some(patterns) = &block.patterns
                && !host_matches(patterns, alias)
            {
                continue;
            }
            for (key, value, _) in &block.options {
                match key.as_str() {
                    "hostname" if out.hostname.is_none() => out.hostname = Some(value.replace("%h", alias)),
                    "user" if out.user.is_none() => out.user = Some(value.clone()),
                    "port" if out.port.is_none() => out.port = value.parse().ok(),
                    "identityfile" => out.identity_files.push(expand_tilde(value)),
                    "proxyjump" if out.proxy_jump.is_none() => {
                        out.proxy_jump = (!value.eq_ignore_ascii_case("none")).then(|| value.clone())
                    }
                    _ => {}
                }
            }
        }
        out
    }

    /// Concrete host aliases (patterns without wildcards or negation), in file order.
    pub fn concrete_aliases(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for pattern in self.blocks.iter().filter_map(|b| b.patterns.as_ref()).flatten() {
            if !pattern.contains(['*', '?', '!']) && !out.contains(pattern) {
                out.push(pattern.clone());
            }
        }
        out
    }
}

/// `Key value`, `Key=value` or `Key = value`.
fn split_keyword(line: &str) -> (&str, &str) {
    let end = line.find(|c: char| c.is_whitespace() || c == '=').unwrap_or(line.len());
    let (key, rest) = line.split_at(end);
    let rest = rest.trim_start();
    let rest = rest.strip_prefix('=').unwrap_or(rest).trim();
    (key, rest)
}

fn unquote(s: &str) -> &str {
    s.strip_prefix('"').and_then(|s| s.strip_suffix('"')).unwrap_or(s)
}

/// ssh_config(5) pattern lists: any positive match and no negated match.
fn host_matches(patterns: &[String], alias: &str) -> bool {
    let matches = |p: &str| Glob::new(p).map(|g| g.compile_matcher().is_match(alias)).unwrap_or(p == alias);
    let mut positive = false;
    for p in patterns {
        if let Some(neg) = p.strip_prefix('!') {
            if matches(neg) {
                return false;
            }
        } else if matches(p) {
            positive = true;
        }
    }
    positive
}

/// Expands a leading `~/` to the home directory.
pub fn expand_tilde(path: &str) -> PathBuf {
    match (path.strip_prefix("~/"), dirs::home_dir()) {
        (Some(rest), Some(home)) => home.join(rest),
        _ => PathBuf::from(path),
    }
}

/// The importer: every concrete Host alias becomes a host, with the settings
/// of all blocks that match it (so `Host *` defaults apply).
pub fn import_hosts(text: &str) -> Result<ImportReport, Vec<LineError>> {
    let file = SshConfigFile::parse(text)?;
    let mut report = ImportReport::default();
    for alias in file.concrete_aliases() {
        let resolved = file.resolve(&alias);
        let mut host = Host::new(alias.clone(), resolved.hostname.unwrap_or_else(|| alias.clone()));
        host.port = resolved.port.unwrap_or(22);
        host.username = resolved.user;
        host.jump = resolved.proxy_jump;
        host.identity_file = resolved.identity_files.first().map(|p| p.display().to_string());
        report.hosts.push(host);
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "\
User fallback
Host web01 web02
    HostName %h.example.internal
    Port 2222
    IdentityFile ~/.ssh/web
Host db
    HostName=10.0.0.5
    User dbadmin
    ProxyJump bastion
Host *.internal !secret.internal
    User internal
Host *
    User everyone
    IdentityFile /keys/default
Match host foo
    User ignored
";

    #[test]
    fn first_value_wins_and_identity_files_accumulate() {
        let file = SshConfigFile::parse(SAMPLE).unwrap();
        let web = file.resolve("web01");
        assert_eq!(web.hostname.as_deref(), Some("web01.example.internal"));
        assert_eq!(web.port, Some(2222));
        assert_eq!(web.user.as_deref(), Some("fallback"));
        assert_eq!(web.identity_files.len(), 2);
        let db = file.resolve("db");
        assert_eq!(db.proxy_jump.as_deref(), Some("bastion"));
        assert_eq!(db.hostname.as_deref(), Some("10.0.0.5"));
    }

    #[test]
    fn negated_patterns_exclude() {
        let file =
            SshConfigFile::parse("Host *.internal !secret.internal\n User internal\nHost *\n User other\n").unwrap();
        assert_eq!(file.resolve("a.internal").user.as_deref(), Some("internal"));
        assert_eq!(file.resolve("secret.internal").user.as_deref(), Some("other"));
    }

    #[test]
    fn import_skips_wildcards() {
        let report = import_hosts(SAMPLE).unwrap();
        let names: Vec<&str> = report.hosts.iter().map(|h| h.name.as_str()).collect();
        assert_eq!(names, ["web01", "web02", "db"]);
    }

    #[test]
    fn errors_carry_lines() {
        let errors = SshConfigFile::parse("Host a\n  Port abc\n  User\n").unwrap_err();
        assert_eq!(errors.iter().map(|e| e.line).collect::<Vec<_>>(), [2, 3]);
    }
}
