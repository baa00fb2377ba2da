//! Where merlya keeps its files: `MERLYA_HOME` (default `~/.merlya`).
//!
//! Every other module asks this one for a path, so tests can point the whole
//! program at a temporary directory with one environment variable.

use std::path::{Path, PathBuf};

use color_eyre::eyre::{Result, WrapErr, eyre};

/// The root folder of one merlya installation and the files inside it.
#[derive(Debug, Clone)]
pub struct MerlyaHome {
    root: PathBuf,
}

impl MerlyaHome {
    /// Uses `MERLYA_HOME` if set, otherwise `~/.merlya`.
    pub fn from_env() -> Result<Self> {
        if let Some(dir) = std::env::var_os("MERLYA_HOME").filter(|v| !v.is_empty()) {
            return Ok(Self::at(PathBuf::from(dir)));
        }
        let home = dirs::home_dir().ok_or_else(|| eyre!("cannot find the home directory; set MERLYA_HOME"))?;
        Ok(Self::at(home.join(".merlya")))
    }

    /// A home rooted at `root` (used by `--home` and by tests).
    pub fn at(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    /// Creates the folders merlya writes to, if missing.
    pub fn ensure(&self) -> Result<()> {
        for dir in [self.root.clone(), self.logs_dir()] {
            std::fs::create_dir_all(&dir).wrap_err_with(|| format!("cannot create {}", dir.display()))?;
        }
        Ok(())
    }

    /// The root folder.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `config.yaml`.
    pub fn config_file(&self) -> PathBuf {
        self.root.join("config.yaml")
    }

    /// The SQLite database.
    pub fn database(&self) -> PathBuf {
        self.root.join("merlya.db")
    }

    /// Rolling log files.
    pub fn logs_dir(&self) -> PathBuf {
        self.root.join("logs")
    }

    /// merlya's own known_hosts, consulted after `~/.ssh/known_hosts` and
    /// written by `accept-new` and by decisions taken in the console.
    pub fn known_hosts(&self) -> PathBuf {
        self.root.join("known_hosts")
    }

    /// User keymap overrides.
    pub fn keymaps_dir(&self) -> PathBuf {
        self.root.join("keymaps")
    }

    /// User theme overrides.
    pub fn themes_dir(&self) -> PathBuf {
        self.root.join("themes")
    }

    /// The console's input history.
    pub fn history_file(&self) -> PathBuf {
        self.root.join("history")
    }
}
