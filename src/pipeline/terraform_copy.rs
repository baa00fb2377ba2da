//! The planned copy of a Terraform folder (ADR 0026 §13): copied into the run's private folder
//! after `init`, so the dry run, the apply and the post-check never read a file swapped in the
//! original while the approval waits. What Terraform writes itself — `.terraform/`, the lock file,
//! state — is linked to the original: the apply updates the folder's own state, under its own lock.

use std::path::{Path, PathBuf};

use super::pin::{self, Pinned};
use super::private_dir;
use super::terraform::Snapshot;

/// A folder copied for a run, with its links to what Terraform writes in the original.
pub struct PlannedCopy {
    pinned: Pinned,
    links: Vec<StateLink>,
}

/// A link from the planned copy to a file Terraform writes in the folder (state, `.terraform`).
struct StateLink {
    at: PathBuf,
    original: PathBuf,
    /// Whether the original was there when the folder was copied.
    existed: bool,
}

impl PlannedCopy {
    /// Copies `dir` to `dest` (replacing an earlier copy), linking what Terraform owns; `config`
    /// (the folder's files) names a `backend "local"` path whose state a first apply creates.
    pub fn make(dir: &Path, dest: &Path, config: Option<&Snapshot>) -> Result<Self, String> {
        if dest.exists() {
            std::fs::remove_dir_all(dest).map_err(|e| e.to_string())?;
        }
        let pinned = pin::copy(std::slice::from_ref(&dir.to_path_buf()), &tool_owned(), dest)?;
        let copy = pinned.copies.first().cloned().ok_or("nothing was copied")?;
        // The state a first apply creates, and `.terraform*` when init made none, go to the folder.
        let local = config.map(local_state_paths).unwrap_or_default();
        let wanted = [".terraform", ".terraform.lock.hcl", "terraform.tfstate", "terraform.tfstate.backup"];
        let mut links = Vec::new();
        for name in wanted.iter().map(|n| n.to_string()).chain(local) {
            let at = copy.join(&name);
            if std::fs::symlink_metadata(&at).is_err() {
                let original = std::path::absolute(dir.join(&name)).map_err(|e| e.to_string())?;
                links.push(StateLink { existed: original.exists(), at, original });
            }
        }
        let planned = Self { pinned, links };
        planned.relink()?;
        Ok(planned)
    }

    /// Where the copy is.
    pub fn dir(&self) -> PathBuf {
        self.pinned.copies.first().cloned().unwrap_or_default()
    }

    /// Whether the copy still holds what was planned (its fingerprint, checked before the apply).
    pub fn unchanged(&self) -> bool {
        pin::fingerprint(&self.pinned.copies, &tool_owned()).is_ok_and(|now| now == self.pinned.fingerprint)
    }

    /// Makes the links again: Terraform removes a state file it left empty (the link, in the copy),
    /// and the next command would then write its state into the copy.
    pub fn relink(&self) -> Result<(), String> {
        for link in &self.links {
            if std::fs::symlink_metadata(&link.at).is_err() {
                if let Some(parent) = link.at.parent() {
                    private_dir(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
                }
                std::os::unix::fs::symlink(&link.original, &link.at)
                    .map_err(|e| format!("cannot link {}: {e}", link.at.display()))?;
            }
        }
        Ok(())
    }

    /// Removes the empty files Terraform created in the folder through a link where none were (it
    /// removes them itself when it runs in the folder).
    pub fn tidy(&self) {
        for link in self.links.iter().filter(|l| !l.existed) {
            if std::fs::metadata(&link.original).is_ok_and(|m| m.is_file() && m.len() == 0) {
                let _ = std::fs::remove_file(&link.original);
            }
        }
    }
}

/// What Terraform writes in a folder itself: linked from the planned copy to the original, and left
/// out of its fingerprint (`.terraform/`, the lock file, state and its backups, workspaces' states).
fn tool_owned() -> pin::Leave<'static> {
    pin::Leave {
        folders: &[],
        linked: &|name: &str| {
            matches!(name, ".terraform" | ".terraform.lock.hcl" | "terraform.tfstate.d" | "crash.log")
                || name.starts_with("terraform.tfstate")
                || name.starts_with(".terraform.tfstate")
                || name.ends_with(".tfstate")
                || name.ends_with(".tfstate.backup")
        },
    }
}

/// Relative `path`s of `backend "local"` blocks (where the state a first apply creates must go).
fn local_state_paths(config: &Snapshot) -> Vec<String> {
    let mut paths = Vec::new();
    for text in config.values() {
        let mut in_local = false;
        for line in text.lines().map(str::trim) {
            if line.starts_with("backend \"local\"") {
                in_local = true;
            } else if in_local && line.starts_with('}') {
                in_local = false;
            } else if in_local && let Some(value) = line.strip_prefix("path").filter(|v| v.starts_with([' ', '='])) {
                let value = value.trim_start().trim_start_matches('=').trim().trim_matches('"');
                if !value.is_empty() && !value.starts_with('/') && !value.contains("..") && !value.contains('$') {
                    paths.push(value.to_string());
                }
            }
        }
    }
    paths
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_local_backend_path_is_read_and_unsafe_ones_are_not() {
        let config: Snapshot = [(
            "main.tf".to_string(),
            "terraform {\n  backend \"local\" {\n    path = \"state/prod.tfstate\"\n  }\n}\n".to_string(),
        )]
        .into_iter()
        .collect();
        assert_eq!(local_state_paths(&config), ["state/prod.tfstate"]);
        let odd: Snapshot =
            [("main.tf".to_string(), "backend \"local\" {\n path = \"../x\"\n}\n".to_string())].into_iter().collect();
        assert!(local_state_paths(&odd).is_empty());
    }
}
