//! The three visible layers that tame drift noise: built-in volatile rules
//! (logs, caches, machine ids, kernel counters, ephemeral ports), ignore rules
//! from the config (per group of hosts), and accept (a new baseline, in the
//! store). Every finding a rule hides is counted against that rule's name, so
//! the output always says how much was hidden and by what.

use std::collections::{BTreeMap, BTreeSet};

use super::Section;
pub use crate::safety::paths::matches_pattern;

/// A rule that hides findings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    /// Shown with the count of what it hid (`volatile: kernel counters`, `ignore: web certs`).
    pub name: String,
    /// The section it applies to (every section when `None`).
    pub section: Option<Section>,
    /// Keys it hides: a pattern where `*` is any run of characters and `?` one.
    pub key: String,
    /// The hosts it applies to (every host when `None`), resolved from a target expression.
    pub hosts: Option<BTreeSet<String>>,
}

impl Rule {
    fn builtin(name: &str, section: Section, keys: &[&str]) -> Vec<Rule> {
        keys.iter()
            .map(|key| Rule {
                name: format!("volatile: {name}"),
                section: Some(section),
                key: key.to_string(),
                hosts: None,
            })
            .collect()
    }

    /// Whether it hides `key` of `section` on `host`.
    pub fn hides(&self, host: &str, section: Section, key: &str) -> bool {
        self.section.is_none_or(|s| s == section)
            && self.hosts.as_ref().is_none_or(|h| h.contains(host))
            && matches_pattern(&self.key, key)
    }
}

/// What changes on every healthy host without anyone changing it, or is unique to each host.
pub fn volatile() -> Vec<Rule> {
    let mut rules = Vec::new();
    rules.extend(Rule::builtin(
        "host identity and caches",
        Section::Files,
        &[
            "/etc/machine-id",
            "/etc/hostname",
            "/etc/adjtime",
            "/etc/ld.so.cache",
            "/etc/mtab",
            "/etc/resolv.conf",
            "/etc/.pwd.lock",
            "/etc/*-",
            "/etc/ssh/ssh_host_*",
            "/etc/lvm/archive/*",
            "/etc/lvm/backup/*",
            "/etc/lvm/cache/*",
            "/etc/udev/hwdb.bin",
            "/etc/apparmor.d/cache/*",
            "/etc/cups/subscriptions.conf*",
            "*.log",
            "*.cache",
        ],
    ));
    rules.extend(Rule::builtin(
        "kernel counters and identity",
        Section::Sysctl,
        &[
            "kernel.random.*",
            "kernel.hostname",
            "kernel.ns_last_pid",
            "kernel.pty.nr",
            "kernel.perf_event_max_sample_rate",
            "kernel.tainted",
            "fs.dentry-state",
            "fs.inode-nr",
            "fs.inode-state",
            "fs.file-nr",
            "fs.aio-nr",
            "fs.quota.*",
            "net.netfilter.nf_conntrack_count",
            "net.*.conf.*.stable_secret",
        ],
    ));
    rules.extend(Rule::builtin(
        "kernel and runtime mounts",
        Section::Mounts,
        &[
            "/proc/*",
            "/sys/*",
            "/run/user/*",
            "/run/netns/*",
            "/run/docker/*",
            "/var/lib/docker/*",
            "/var/lib/kubelet/*",
            "/snap/*",
        ],
    ));
    rules
}

/// The first port of the kernel's ephemeral range (`net.ipv4.ip_local_port_range`'s default): a
/// listener there was given a port by the kernel, not by configuration.
pub const EPHEMERAL_FROM: u16 = 32768;

/// The name the ephemeral-port rule is counted under.
pub const EPHEMERAL: &str = "volatile: ephemeral ports";

/// Whether a listening socket key (`tcp 0.0.0.0:41235`) is on an ephemeral port of a host whose
/// range starts at `from`.
pub fn ephemeral(key: &str, from: u16) -> bool {
    key.rsplit(':').next().and_then(|p| p.parse::<u16>().ok()).is_some_and(|p| p >= from)
}

/// Applies rules and counts what each hid.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    rules: Vec<Rule>,
    /// Findings hidden, by rule name.
    pub hidden: BTreeMap<String, usize>,
}

impl Filter {
    /// The built-in volatile rules followed by `extra` (the config's ignore rules).
    pub fn new(extra: Vec<Rule>) -> Self {
        let mut rules = volatile();
        rules.extend(extra);
        Self { rules, hidden: BTreeMap::new() }
    }

    /// Whether a finding of `host` is hidden (and counted); `ephemeral_from` is the host's range.
    pub fn hides(&mut self, host: &str, section: Section, key: &str, ephemeral_from: u16) -> bool {
        let name = if section == Section::Ports && ephemeral(key, ephemeral_from) {
            Some(EPHEMERAL.to_string())
        } else {
            self.rules.iter().find(|r| r.hides(host, section, key)).map(|r| r.name.clone())
        };
        match name {
            Some(name) => {
                *self.hidden.entry(name).or_default() += 1;
                true
            }
            None => false,
        }
    }

    /// How many findings were hidden in all.
    pub fn hidden_total(&self) -> usize {
        self.hidden.values().sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_config_knows_the_same_sections() {
        let names: Vec<&str> = Section::ALL.iter().map(|s| s.name()).collect();
        assert_eq!(names, crate::config::drift::SECTIONS);
    }

    #[test]
    fn patterns_volatile_rules_and_counts() {
        assert!(matches_pattern("/etc/ssh/ssh_host_*", "/etc/ssh/ssh_host_ed25519_key"));
        assert!(matches_pattern("kernel.random.*", "kernel.random.boot_id"));
        assert!(matches_pattern("/etc/*-", "/etc/passwd-"));
        assert!(!matches_pattern("/etc/*-", "/etc/passwd"));
        assert!(matches_pattern("a?c", "abc") && !matches_pattern("a?c", "abbc"));
        let web: BTreeSet<String> = ["web01".to_string()].into();
        let mut filter = Filter::new(vec![Rule {
            name: "ignore: web certs".into(),
            section: Some(Section::Files),
            key: "/etc/ssl/*".into(),
            hosts: Some(web),
        }]);
        assert!(filter.hides("web01", Section::Sysctl, "kernel.random.boot_id", EPHEMERAL_FROM));
        assert!(filter.hides("web01", Section::Files, "/etc/ssl/x.pem", EPHEMERAL_FROM));
        assert!(!filter.hides("db01", Section::Files, "/etc/ssl/x.pem", EPHEMERAL_FROM), "another group");
        assert!(filter.hides("db01", Section::Ports, "tcp 127.0.0.1:41235", EPHEMERAL_FROM));
        assert!(!filter.hides("db01", Section::Ports, "tcp 0.0.0.0:22", EPHEMERAL_FROM));
        assert!(!filter.hides("db01", Section::Packages, "nginx", EPHEMERAL_FROM));
        assert_eq!(filter.hidden_total(), 3);
        assert_eq!(filter.hidden["ignore: web certs"], 1);
        assert_eq!(filter.hidden[EPHEMERAL], 1);
    }
}
