//! Host baselines and drift (issue 26): "what changed on this host, and how
//! does it differ from its siblings?".
//!
//! A capture ([`capture`]) reads a host's facts through the classifier — one
//! proven read-only script, audited like any command — into [`Facts`]: named
//! sections of `key → value`. The accepted capture is the host's baseline
//! (stored by `store::baselines`). [`compare`] finds what differs from the
//! host's own baseline, or from the majority of its group, and folds the same
//! difference on many hosts into one row; [`rules`] tames the noise in three
//! visible layers (built-in volatile rules, ignore rules from the config,
//! accept) and counts what each rule hid.

pub mod capture;
pub mod check;
pub mod compare;
pub mod decide;
pub mod rules;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// What part of a host a fact describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Section {
    /// The distribution and the kernel.
    Os,
    /// Installed packages and their versions.
    Packages,
    /// Units enabled to start.
    UnitsEnabled,
    /// Units in the failed state.
    UnitsFailed,
    /// Listening sockets.
    Ports,
    /// Local users (uid, gid, home, shell).
    Users,
    /// Local groups (gid, members).
    Groups,
    /// Kernel settings.
    Sysctl,
    /// Mounted filesystems (source, type, options).
    Mounts,
    /// Checksums of configuration files under the configured paths.
    Files,
    /// Package-owned files that differ from the package manager's records.
    PackageFiles,
    /// Full contents of the files an operator opted into.
    Contents,
}

impl Section {
    /// Every section, in the order they are shown.
    pub const ALL: [Section; 12] = [
        Section::Os,
        Section::Packages,
        Section::UnitsEnabled,
        Section::UnitsFailed,
        Section::Ports,
        Section::Users,
        Section::Groups,
        Section::Sysctl,
        Section::Mounts,
        Section::Files,
        Section::PackageFiles,
        Section::Contents,
    ];

    /// Its name in the config, the JSON and the output (`units_enabled`).
    pub fn name(self) -> &'static str {
        match self {
            Section::Os => "os",
            Section::Packages => "packages",
            Section::UnitsEnabled => "units_enabled",
            Section::UnitsFailed => "units_failed",
            Section::Ports => "ports",
            Section::Users => "users",
            Section::Groups => "groups",
            Section::Sysctl => "sysctl",
            Section::Mounts => "mounts",
            Section::Files => "files",
            Section::PackageFiles => "package_files",
            Section::Contents => "contents",
        }
    }

    /// The section named `name`.
    pub fn named(name: &str) -> Option<Section> {
        Section::ALL.into_iter().find(|s| s.name() == name)
    }
}

impl std::fmt::Display for Section {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A host's facts: per section, `key → value` (a package → its version, a
/// file → its checksum, a sysctl → its value).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Facts {
    /// The facts by section.
    pub sections: BTreeMap<Section, BTreeMap<String, String>>,
}

impl Facts {
    /// The value of `key` in `section`, if the host has it.
    pub fn get(&self, section: Section, key: &str) -> Option<&str> {
        self.sections.get(&section).and_then(|s| s.get(key)).map(String::as_str)
    }

    /// Sets `key` in `section`.
    pub fn insert(&mut self, section: Section, key: impl Into<String>, value: impl Into<String>) {
        self.sections.entry(section).or_default().insert(key.into(), value.into());
    }

    /// How many facts there are.
    pub fn len(&self) -> usize {
        self.sections.values().map(BTreeMap::len).sum()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
