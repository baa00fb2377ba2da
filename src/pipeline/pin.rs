//! What a change applies is what was planned: the folders a change runs (a playbook's folder with
//! its roles, templates, vars and plugins; a Terraform configuration with the scripts its
//! provisioners run) are copied into the run's private folder when the change is planned, and the
//! dry run, the apply and the post-check run from that copy. A file swapped in the original while
//! the approval waits (or while the apply runs) is never read. The copy's fingerprint (SHA-256 over
//! every file's relative path and content, in order) is checked again right before the apply, so a
//! process of merlya's own user that edits the private copy is caught too.
//!
//! What cannot be copied is linked to the original and said so: files a tool writes itself
//! (Terraform's `.terraform/` and state, which other runs share), linked folders, and the folder's
//! siblings (for `../roles`, `../modules`), which the approval lists as not pinned.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// Most files and bytes a folder may hold to be pinned (a playbook belongs in a folder of its own).
const MAX_FILES: usize = 20_000;
const MAX_BYTES: u64 = 200 * 1024 * 1024;

/// A folder's planned copy.
#[derive(Debug, Clone)]
pub struct Pinned {
    /// The fingerprint of what was copied.
    pub fingerprint: String,
    /// Where each folder was copied, in the order given.
    pub copies: Vec<PathBuf>,
}

/// What a pin leaves out of the copy: folders by path (merlya's own home), and files or folders by
/// name (what a tool writes there itself), which the copy links to the original.
pub struct Leave<'a> {
    /// Folders neither copied nor linked (merlya's home: it writes there while the run goes on).
    pub folders: &'a [PathBuf],
    /// Names linked to the original instead of copied (and left out of the fingerprint).
    pub linked: &'a dyn Fn(&str) -> bool,
}

impl Leave<'_> {
    /// Nothing left out but `folders`.
    pub fn folders(folders: &[PathBuf]) -> Leave<'_> {
        Leave { folders, linked: &|_| false }
    }
}

/// The fingerprint of `folders` as they are now (what [`copy`] pinned, when nothing changed).
pub fn fingerprint(folders: &[PathBuf], leave: &Leave<'_>) -> Result<String, String> {
    pin(folders, leave, None).map(|p| p.fingerprint)
}

/// Copies `folders` under `dest` (`dest/N/NAME` for the Nth folder named NAME, with links to its
/// siblings beside it) and gives their fingerprint; an error when one is too large or unreadable.
pub fn copy(folders: &[PathBuf], leave: &Leave<'_>, dest: &Path) -> Result<Pinned, String> {
    pin(folders, leave, Some(dest))
}

/// One walk for both: what is hashed is what is copied.
fn pin(folders: &[PathBuf], leave: &Leave<'_>, dest: Option<&Path>) -> Result<Pinned, String> {
    let mut hasher = Sha256::new();
    let (mut files, mut bytes) = (0usize, 0u64);
    let skip: Vec<PathBuf> =
        leave.folders.iter().map(|s| std::fs::canonicalize(s).unwrap_or_else(|_| s.clone())).collect();
    let mut copies = Vec::new();
    for (index, folder) in folders.iter().enumerate() {
        let mut found = Vec::new();
        walk(folder, &mut found, &mut files, (&skip, leave.linked))?;
        found.sort_by(|a, b| a.path().cmp(b.path()));
        // The folder's place in the list, not its path: a copy has the fingerprint of its original.
        hasher.update((index as u64).to_le_bytes());
        let copy = dest.map(|d| copy_root(d, index, folder)).transpose()?;
        for entry in found {
            let relative = entry.path().strip_prefix(folder).unwrap_or(entry.path());
            let Found::File(path) = &entry else {
                if let Some(copy) = &copy {
                    link(entry.path(), &copy.join(relative), copy)?;
                }
                continue;
            };
            let content = std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
            bytes += content.len() as u64;
            if bytes > MAX_BYTES {
                return Err(format!(
                    "{} holds more than {} MiB: move the playbook to a folder of its own",
                    folder.display(),
                    MAX_BYTES >> 20
                ));
            }
            hasher.update((relative.display().to_string().len() as u64).to_le_bytes());
            hasher.update(relative.display().to_string().as_bytes());
            hasher.update((content.len() as u64).to_le_bytes());
            hasher.update(&content);
            if let Some(copy) = &copy {
                write_copy(path, &copy.join(relative), &content)?;
            }
        }
        copies.extend(copy);
    }
    Ok(Pinned { fingerprint: hex::encode(hasher.finalize()), copies })
}

/// `dest/INDEX/NAME`, made private, with a link to each of the folder's siblings beside it.
fn copy_root(dest: &Path, index: usize, folder: &Path) -> Result<PathBuf, String> {
    let parent = dest.join(index.to_string());
    let name = folder.file_name().map_or_else(|| "folder".into(), |n| n.to_os_string());
    let root = parent.join(&name);
    super::private_dir(&root).map_err(|e| format!("cannot make {}: {e}", root.display()))?;
    if let Some(siblings) = folder.parent().and_then(|p| std::fs::read_dir(p).ok()) {
        for sibling in siblings.flatten().filter(|s| s.file_name() != name) {
            link(&sibling.path(), &parent.join(sibling.file_name()), &root)?;
        }
    }
    Ok(root)
}

/// A link at `at` to `original` (its absolute path) — unless `original` holds the copy itself
/// (`/tmp` holding the home that holds the copy): that link would be a loop that every tool
/// following links (`find -L`, a backup) walks forever.
fn link(original: &Path, at: &Path, copy: &Path) -> Result<(), String> {
    let target = std::fs::canonicalize(original).unwrap_or_else(|_| original.to_path_buf());
    if std::fs::canonicalize(copy).is_ok_and(|copy| copy.starts_with(&target)) {
        return Ok(());
    }
    if let Some(parent) = at.parent() {
        super::private_dir(parent).map_err(|e| format!("cannot make {}: {e}", parent.display()))?;
    }
    std::os::unix::fs::symlink(&target, at).map_err(|e| format!("cannot link {}: {e}", at.display()))
}

/// Writes `content` at `to` with the permissions of `from` (a script stays executable).
fn write_copy(from: &Path, to: &Path, content: &[u8]) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    let failed = |e: std::io::Error| format!("cannot copy {} to {}: {e}", from.display(), to.display());
    if let Some(parent) = to.parent() {
        super::private_dir(parent).map_err(failed)?;
    }
    std::fs::write(to, content).map_err(failed)?;
    let mode = std::fs::metadata(from).map(|m| m.permissions().mode() & 0o700).unwrap_or(0o600);
    std::fs::set_permissions(to, std::fs::Permissions::from_mode(mode | 0o600)).map_err(failed)
}

/// What a walk finds: a file to hash and copy, or something to link (a linked folder, a name the
/// tool owns).
enum Found {
    File(PathBuf),
    Link(PathBuf),
}

impl Found {
    fn path(&self) -> &Path {
        match self {
            Found::File(p) | Found::Link(p) => p,
        }
    }
}

/// What a walk leaves out: folders by path, and names it links.
type Skip<'a> = (&'a [PathBuf], &'a dyn Fn(&str) -> bool);

/// Regular files under `dir` (symbolic links to files are read through; linked folders are linked,
/// `.git` and the skipped folders are left out).
fn walk(dir: &Path, out: &mut Vec<Found>, files: &mut usize, (skip, linked): Skip<'_>) -> Result<(), String> {
    let entries = std::fs::read_dir(dir).map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
    for entry in entries.flatten() {
        let path = entry.path();
        let Ok(kind) = entry.file_type() else { continue };
        if linked(&entry.file_name().to_string_lossy()) {
            out.push(Found::Link(path));
        } else if kind.is_dir() {
            let skipped = std::fs::canonicalize(&path).is_ok_and(|real| skip.contains(&real));
            if entry.file_name() != ".git" && !skipped {
                walk(&path, out, files, (skip, linked))?;
            }
        } else if kind.is_file() || (kind.is_symlink() && path.is_file()) {
            *files += 1;
            if *files > MAX_FILES {
                return Err(format!(
                    "{} holds more than {MAX_FILES} files: move the playbook to a folder of its own",
                    dir.display()
                ));
            }
            out.push(Found::File(path));
        } else if kind.is_symlink() && path.is_dir() {
            out.push(Found::Link(path));
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
        let none = Leave::folders(&[]);
        let first = fingerprint(&folders, &none).unwrap();
        assert_eq!(fingerprint(&folders, &none).unwrap(), first, "stable");
        std::fs::write(dir.path().join("roles/web/templates/motd.j2"), "hell0\n").unwrap();
        let swapped = fingerprint(&folders, &none).unwrap();
        assert_ne!(swapped, first, "a template swapped after planning");
        std::fs::create_dir_all(dir.path().join("callback_plugins")).unwrap();
        std::fs::write(dir.path().join("callback_plugins/fake.py"), "x").unwrap();
        assert_ne!(fingerprint(&folders, &none).unwrap(), swapped, "a plugin added beside the playbook");
    }

    #[test]
    fn the_copy_holds_what_was_fingerprinted_and_links_what_it_cannot_pin() {
        use std::os::unix::fs::PermissionsExt;
        let top = tempfile::tempdir().unwrap();
        let folder = top.path().join("play");
        std::fs::create_dir_all(folder.join("roles/web")).unwrap();
        std::fs::create_dir_all(top.path().join("shared")).unwrap();
        std::fs::write(folder.join("site.yml"), "- hosts: all\n").unwrap();
        std::fs::write(folder.join("roles/web/run.sh"), "echo planned\n").unwrap();
        std::fs::set_permissions(folder.join("roles/web/run.sh"), std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::create_dir_all(folder.join(".terraform")).unwrap();
        std::fs::write(folder.join("terraform.tfstate"), "{}").unwrap();
        let home = folder.join("home");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::write(home.join("merlya.db"), "db").unwrap();
        std::os::unix::fs::symlink(top.path().join("shared"), folder.join("common")).unwrap();

        let dest = top.path().join("private");
        let skip = [home.clone()];
        let owned = |n: &str| n == ".terraform" || n.ends_with(".tfstate");
        let leave = Leave { folders: &skip, linked: &owned };
        let pinned = copy(std::slice::from_ref(&folder), &leave, &dest).unwrap();
        let copy = &pinned.copies[0];
        assert_eq!(copy, &dest.join("0/play"));
        assert_eq!(pinned.fingerprint, fingerprint(std::slice::from_ref(&folder), &leave).unwrap());
        assert_eq!(
            fingerprint(std::slice::from_ref(copy), &leave).unwrap(),
            pinned.fingerprint,
            "the copy is the original"
        );
        assert_eq!(std::fs::read_to_string(copy.join("roles/web/run.sh")).unwrap(), "echo planned\n");
        let mode = std::fs::metadata(copy.join("roles/web/run.sh")).unwrap().permissions().mode();
        assert_eq!(mode & 0o100, 0o100, "a script stays executable");
        // What a tool owns, linked folders and siblings are links to the originals; merlya's home is left out.
        for linked in
            [copy.join(".terraform"), copy.join("terraform.tfstate"), copy.join("common"), dest.join("0/shared")]
        {
            assert!(std::fs::symlink_metadata(&linked).unwrap().file_type().is_symlink(), "{}", linked.display());
        }
        assert!(!copy.join("home").exists(), "merlya's home is not copied");
        // A copy kept in a sibling of the folder (`/tmp/B/merlya/…` for a playbook in `/tmp/A`): no
        // link leads from the copy back up to the folder that holds it.
        let elsewhere = top.path().join("other/home/planned");
        let again = super::copy(std::slice::from_ref(&folder), &leave, &elsewhere).unwrap();
        assert!(std::fs::symlink_metadata(elsewhere.join("0/other")).is_err(), "a loop back to the copy");
        assert!(std::fs::symlink_metadata(elsewhere.join("0/shared")).unwrap().file_type().is_symlink());
        assert_eq!(again.fingerprint, pinned.fingerprint);
        // A file swapped in the original does not reach the copy.
        std::fs::write(folder.join("roles/web/run.sh"), "echo swapped\n").unwrap();
        assert_eq!(std::fs::read_to_string(copy.join("roles/web/run.sh")).unwrap(), "echo planned\n");
        assert_ne!(fingerprint(std::slice::from_ref(&folder), &leave).unwrap(), pinned.fingerprint);
    }
}
