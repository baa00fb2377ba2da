//! What an Ansible change runs is what was approved: a fingerprint (SHA-256
//! over every file's relative path and content, in order) of the playbook's
//! folder — its roles, templates, vars and any plugins beside it — taken when
//! the change is planned and compared again right before it is applied. A
//! file swapped in between (by another process, or a second tool call) stops
//! the apply. Terraform pins its saved plan file the same way.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// Most files and bytes a folder may hold to be pinned (a playbook belongs in a folder of its own).
const MAX_FILES: usize = 20_000;
const MAX_BYTES: u64 = 200 * 1024 * 1024;

/// The fingerprint of `folders`, leaving out the folders in `skip` (merlya's own home, which it
/// writes while the run goes on: a playbook kept in `~` beside `~/.merlya` is still pinned, and
/// its apply is not refused by merlya's own writes); an error when one is too large or unreadable.
pub fn fingerprint(folders: &[PathBuf], skip: &[PathBuf]) -> Result<String, String> {
    fingerprint_except(folders, skip, &|_| false)
}

/// [`fingerprint`], also leaving out the files and folders whose name `skip_name` accepts (what a
/// tool writes there itself: Terraform's `.terraform/` and state files).
pub fn fingerprint_except(
    folders: &[PathBuf],
    skip: &[PathBuf],
    skip_name: &dyn Fn(&str) -> bool,
) -> Result<String, String> {
    let mut hasher = Sha256::new();
    let (mut files, mut bytes) = (0usize, 0u64);
    let skip: Vec<PathBuf> = skip.iter().map(|s| std::fs::canonicalize(s).unwrap_or_else(|_| s.clone())).collect();
    for folder in folders {
        let mut paths = Vec::new();
        walk(folder, &mut paths, &mut files, (&skip, skip_name))?;
        paths.sort();
        hasher.update(folder.display().to_string().as_bytes());
        for path in paths {
            let content = std::fs::read(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
            bytes += content.len() as u64;
            if bytes > MAX_BYTES {
                return Err(format!(
                    "{} holds more than {} MiB: move the playbook to a folder of its own",
                    folder.display(),
                    MAX_BYTES >> 20
                ));
            }
            let relative = path.strip_prefix(folder).unwrap_or(&path);
            hasher.update((relative.display().to_string().len() as u64).to_le_bytes());
            hasher.update(relative.display().to_string().as_bytes());
            hasher.update((content.len() as u64).to_le_bytes());
            hasher.update(&content);
        }
    }
    Ok(hex::encode(hasher.finalize()))
}

/// Regular files under `dir` (symbolic links to files are read through; linked folders and `.git`
/// are not entered).
/// What a walk leaves out: folders by path, and files or folders by name.
type Skip<'a> = (&'a [PathBuf], &'a dyn Fn(&str) -> bool);

fn walk(dir: &Path, out: &mut Vec<PathBuf>, files: &mut usize, (skip, skip_name): Skip<'_>) -> Result<(), String> {
    let entries = std::fs::read_dir(dir).map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
    for entry in entries.flatten() {
        let path = entry.path();
        let Ok(kind) = entry.file_type() else { continue };
        if skip_name(&entry.file_name().to_string_lossy()) {
            continue;
        }
        if kind.is_dir() {
            let skipped = std::fs::canonicalize(&path).is_ok_and(|real| skip.contains(&real));
            if entry.file_name() != ".git" && !skipped {
                walk(&path, out, files, (skip, skip_name))?;
            }
        } else if kind.is_file() || (kind.is_symlink() && path.is_file()) {
            *files += 1;
            if *files > MAX_FILES {
                return Err(format!(
                    "{} holds more than {MAX_FILES} files: move the playbook to a folder of its own",
                    dir.display()
                ));
            }
            out.push(path);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn any_change_under_the_folder_changes_the_fingerprint() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("roles/web/templates")).unwrap();
        std::fs::write(dir.path().join("site.yml"), "- hosts: all\n").unwrap();
        std::fs::write(dir.path().join("roles/web/templates/motd.j2"), "hello\n").unwrap();
        let folders = [dir.path().to_path_buf()];
        let first = fingerprint(&folders, &[]).unwrap();
        assert_eq!(fingerprint(&folders, &[]).unwrap(), first, "stable");
        std::fs::write(dir.path().join("roles/web/templates/motd.j2"), "hell0\n").unwrap();
        let swapped = fingerprint(&folders, &[]).unwrap();
        assert_ne!(swapped, first, "a template swapped after planning");
        std::fs::create_dir_all(dir.path().join("callback_plugins")).unwrap();
        std::fs::write(dir.path().join("callback_plugins/fake.py"), "x").unwrap();
        assert_ne!(fingerprint(&folders, &[]).unwrap(), swapped, "a plugin added beside the playbook");
    }
}
