//! `drift:` in the config: what a host baseline reads, what it ignores, and how
//! often the drift worker checks (issue 26).

use serde::{Deserialize, Serialize};

/// The sections of a host baseline, by name (`baseline::Section` has the same list; a test
/// holds them together, since the config sits below the baseline module).
pub const SECTIONS: [&str; 12] = [
    "os",
    "packages",
    "units_enabled",
    "units_failed",
    "ports",
    "users",
    "groups",
    "sysctl",
    "mounts",
    "files",
    "package_files",
    "contents",
];

/// Host baselines and drift checks.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct DriftConfig {
    /// Seconds between the drift worker's checks; absent (the default) means only on demand.
    pub interval_secs: Option<u64>,
    /// Folders whose files a baseline checksums (configuration, not binaries: package-owned
    /// files are checked against the package manager's records instead).
    pub paths: Vec<String>,
    /// Files whose full contents a baseline keeps (for a line diff), up to 64 KiB each.
    pub contents: Vec<String>,
    /// Findings never shown, each counted under its name.
    pub ignore: Vec<IgnoreRule>,
}

impl Default for DriftConfig {
    fn default() -> Self {
        Self { interval_secs: None, paths: vec!["/etc".into()], contents: Vec::new(), ignore: Vec::new() }
    }
}

/// A finding to ignore: a section, a key pattern (`*`, `?`), and the hosts it holds for.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct IgnoreRule {
    /// Shown with the count of what it hid.
    pub name: String,
    /// The section (`files`, `packages`, `sysctl`…); every section when absent.
    #[serde(default)]
    pub section: Option<String>,
    /// The keys it hides (`/etc/ssl/certs/*`).
    pub key: String,
    /// A target expression (`@web`, `db*`); every host when absent.
    #[serde(default)]
    pub hosts: Option<String>,
}
