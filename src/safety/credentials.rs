//! Reads that hand a credential to the model (issue 24, red team 6 §G): the
//! output of a proven read goes to the model and its provider, so reading a
//! password hash, a private key or a cloud or database credential is not a
//! plain read. Such a command needs an approval, with the reason; listing,
//! `stat` and other reads of metadata stay reads. Together with the rule that
//! a command using a secret reference never shows its output to the model,
//! this is what keeps a prompt-injected model from reading a secret in one
//! step and sending it to a host it names in the next.
//!
//! A literal path is matched against the patterns below; a glob is matched
//! against concrete examples of them, so `cat /etc/sh*` and
//! `cat /home/*/.ssh/*` are caught as bash would expand them.

use super::credential_table::{BACKUP_SUFFIXES, PUBLIC, TABLE};
use super::paths::{glob_match, matches_pattern, normal_path, parameter_defaults, private_home};
use super::words::Word;
use super::workdir::Workdirs;

/// Programs that read a file's metadata or name, never its contents.
pub const METADATA_ONLY: &[&str] = &[
    "ls", "stat", "du", "file", "namei", "getfacl", "lsattr", "test", "[", "[[", "find", "realpath", "readlink",
    "dirname", "basename", "wc",
];

/// Why the absolute, normalised `path` is a credential, if it is: a row of the table, a backup of
/// one (`shadow.bak`, `.shadow.swp`), or merlya's own home.
pub fn credential_path(path: &str) -> Option<&'static str> {
    if let Some(home) = private_home()
        && (path == home || path.starts_with(&format!("{home}/")))
    {
        return Some("merlya's own files");
    }
    if PUBLIC.iter().any(|p| matches_pattern(p, path)) {
        return None;
    }
    let mut candidates = vec![path.to_string()];
    for suffix in BACKUP_SUFFIXES {
        if let Some(stem) = path.strip_suffix(suffix).filter(|s| !s.ends_with('/')) {
            candidates.push(stem.to_string());
        }
    }
    // vim's swap file of `/etc/shadow` is `/etc/.shadow.swp`.
    let hidden: Vec<String> = candidates
        .iter()
        .filter_map(|c| {
            let (dir, name) = c.rsplit_once('/')?;
            let name = name.strip_prefix('.')?;
            (!name.is_empty()).then(|| format!("{dir}/{name}"))
        })
        .collect();
    candidates.extend(hidden);
    candidates.iter().find_map(|c| TABLE.iter().find(|e| matches_pattern(e.pattern, c)).map(|e| e.why))
}

/// Whether a glob (absolute, or relative when `relative`) could expand to a credential: it is
/// tried against every example of the table.
fn glob_credential(glob: &str) -> Option<&'static str> {
    TABLE.iter().find(|e| glob_may_match(glob, e.example)).map(|e| e.why)
}

/// Why `text`, a path relative to a folder only known at run time, may name a credential: its
/// tail is the tail of a credential (`.ssh/id_rsa`, `shadow`, `private/server.key`).
fn tail_credential(text: &str, glob: bool) -> Option<&'static str> {
    let parts: Vec<&str> = text.split('/').filter(|p| !matches!(*p, "" | "." | "..")).collect();
    if parts.is_empty() {
        return None;
    }
    let tail = parts.join("/");
    if glob {
        return glob_credential(&tail);
    }
    // Anywhere-patterns (`*/*.key`) and the examples' ends.
    credential_path(&format!("/{tail}")).or_else(|| {
        TABLE
            .iter()
            .find(|e| e.example.ends_with(&format!("/{tail}")) && credential_path(e.example).is_some())
            .map(|e| e.why)
    })
}

/// The texts `word` may name a file by: itself, a `NAME=FILE` value (`dd if=FILE`), `$HOME` as
/// `~`, the defaults of `${X:-FILE}`. `None` when the word is only known at run time otherwise.
fn file_texts(word: &Word) -> Option<Vec<String>> {
    let text = word.text.as_str();
    let mut texts = Vec::new();
    let home = ["$HOME", "${HOME}"].iter().find_map(|h| text.strip_prefix(h));
    if let Some(rest) = home.filter(|r| r.is_empty() || r.starts_with('/')) {
        if rest.contains(['$', '`']) {
            return None;
        }
        texts.push(format!("~{rest}"));
    } else if text.starts_with('~') && !text.contains(['$', '`']) {
        // A home folder (`~/.aws/credentials`) is the only expansion: its rest is literal.
        texts.push(text.to_string());
    } else if word.dynamic {
        let defaults: Vec<String> = parameter_defaults(text).iter().map(|d| d.to_string()).collect();
        return (!defaults.is_empty()).then_some(defaults);
    } else {
        texts.push(text.to_string());
    }
    if let Some((name, value)) = text.split_once('=')
        && !name.contains('/')
        && !name.starts_with('-')
        && !value.is_empty()
        && !word.dynamic
    {
        texts.push(value.to_string());
    }
    Some(texts)
}

/// Why reading `word` hands a credential to the model, if it does. A relative word is tried
/// against every folder of `dirs` (the login home, a `cd`'s), or by its tail when a folder is
/// unknown; `~` and `$HOME` are the homes.
pub fn credential_read(word: &Word, dirs: &Workdirs) -> Option<String> {
    let texts = file_texts(word)?;
    let glob = word.glob && !word.text.contains(['$', '`']);
    let reason = texts.iter().find_map(|text| {
        let relative = !text.starts_with(['/', '~']);
        let paths = dirs.resolve(text);
        let known = paths.iter().find_map(|p| if glob { glob_credential(p) } else { credential_path(p) });
        // A relative glob may also match deeper than its folder says (`*/.aws/cred*`): by its tail.
        known.or_else(|| (relative && (dirs.unknown || glob)).then(|| tail_credential(text, glob)).flatten())
    })?;
    let text = &word.text;
    Some(format!(
        "reads `{text}`, a credential ({reason}): its contents would reach the model (approve it to run it, or read it yourself)"
    ))
}

/// Why searching the folder `text` (recursively when `recursive`, else the files directly in it)
/// may read a credential: a credential's usual place is under it, or it is inside a folder of
/// credentials (`/etc/ssl/private/old`). Only files whose name matches `names` (find's `-name`)
/// count, when given.
pub fn folder_credential(text: &str, dirs: &Workdirs, recursive: bool, names: Option<&str>) -> Option<String> {
    let text = if text.is_empty() { "." } else { text };
    let named = |example: &str| names.is_none_or(|n| glob_match(n, example.rsplit('/').next().unwrap_or(example)));
    let mut folders = dirs.resolve(text);
    if dirs.unknown && !text.starts_with(['/', '~']) {
        folders.push("/".into());
    }
    for folder in folders {
        let folder = folder.trim_end_matches('/').to_string();
        let prefix = format!("{folder}/");
        let private = private_home()
            .is_some_and(|h| h == folder || h.starts_with(&prefix) || folder.starts_with(&format!("{h}/")));
        if private {
            return Some(format!("searches `{text}`, which holds merlya's own files"));
        }
        let inside = |path: &str| if recursive { path.starts_with(&prefix) || folder == "/" } else { path == folder };
        let under = TABLE.iter().find(|e| {
            let parent = e.example.rsplit_once('/').map_or("", |(p, _)| p);
            let here = inside(if recursive { e.example } else { parent });
            // A file of that name beside a credential (`/home/user/.ssh/id_rsa` for `-name id_rsa`), or
            // in a home's dot-folder anywhere under it (`/srv/x/.aws/credentials`).
            let probe = names.map(|n| n.replace(['*', '?', '['], "x"));
            let beside = probe
                .as_ref()
                .is_some_and(|p| (here || parent == folder) && credential_path(&format!("{parent}/{p}")).is_some());
            let dot_folder = parent.rsplit('/').next().filter(|d| d.starts_with('.'));
            // (Only for a literal name: `-name '*.pem'` does not say a dot-folder is there.)
            let deeper = recursive
                && names.is_some_and(|n| !n.contains(['*', '?', '[']))
                && named(e.example)
                && dot_folder
                    .zip(probe.as_ref())
                    .is_some_and(|(d, p)| credential_path(&format!("{folder}/x/{d}/{p}")).is_some());
            (here && named(e.example) && credential_path(e.example).is_some()) || beside || deeper
        });
        // A folder inside a credential folder: any file in it is one (`*/private/*`).
        let within = names.is_none_or(|n| !n.contains('/')) && credential_path(&format!("{folder}/x")).is_some() && {
            let probe = names.map_or("x".to_string(), |n| n.replace(['*', '?', '['], "x"));
            credential_path(&format!("{folder}/{probe}")).is_some()
        };
        if let Some(e) = under {
            return Some(format!(
                "searches `{text}`, which may hold credentials ({}, e.g. {}): their contents would reach the model (approve it to run it)",
                e.why, e.example
            ));
        }
        if within {
            return Some(format!(
                "searches `{text}`, a folder of credentials: their contents would reach the model (approve it to run it)"
            ));
        }
    }
    None
}

/// Disks and partitions under `/dev` (as `paths` allows them): read raw, they hold every file of
/// their filesystems, `/etc/shadow` and private keys included.
const DISK_PREFIXES: &[&str] = &["sd", "vd", "xvd", "hd", "nvme", "mmcblk", "dm-", "md", "loop", "nbd"];

/// What a glob of a disk is tried against.
const DISK_EXAMPLES: &[&str] = &[
    "/dev/sda",
    "/dev/sda1",
    "/dev/vda1",
    "/dev/xvda1",
    "/dev/hda1",
    "/dev/nvme0n1",
    "/dev/nvme0n1p1",
    "/dev/mmcblk0p1",
    "/dev/dm-0",
    "/dev/md0",
    "/dev/loop0",
    "/dev/nbd0",
    "/dev/mapper/root",
    "/dev/disk/by-uuid/0",
];

/// Programs that read a disk's partition table, superblock, signatures or health, never the files
/// on it (their output is metadata), or only a digest of it.
pub const DISK_METADATA: &[&str] = &[
    "blkid",
    "fdisk",
    "sfdisk",
    "parted",
    "smartctl",
    "hdparm",
    "tune2fs",
    "dumpe2fs",
    "xfs_info",
    "lsblk",
    "udevadm",
    "nvme",
    "mdadm",
    "findmnt",
    "mount",
    "df",
    "btrfs",
    "multipath",
    "iostat",
    "lvs",
    "pvs",
    "vgs",
    "lvdisplay",
    "pvdisplay",
    "vgdisplay",
    "md5sum",
    "sha1sum",
    "sha224sum",
    "sha256sum",
    "sha384sum",
    "sha512sum",
    "b2sum",
    "cksum",
    "sum",
    "lsof",
    "fuser",
];

/// Why `program` reading `word` hands a raw disk's contents to the model, if it does (`dd`'s
/// `if=DISK` too; with `bare_names`, a disk's name after a `cd`).
pub fn raw_disk_read(program: &str, word: &Word, bare_names: bool) -> Option<String> {
    if word.dynamic || METADATA_ONLY.contains(&program) || DISK_METADATA.contains(&program) {
        return None;
    }
    let text = if program == "dd" { word.text.strip_prefix("if=").unwrap_or(&word.text) } else { &word.text };
    let path = if text.starts_with('/') {
        normal_path(text)
    } else if bare_names && !text.contains('/') {
        format!("/dev/{text}")
    } else {
        return None;
    };
    let hit = if word.glob { DISK_EXAMPLES.iter().any(|e| glob_may_match(&path, e)) } else { is_disk(&path) };
    hit.then(|| {
        format!(
            "reads the disk `{text}` raw: every file on it (password hashes, private keys) would reach the model \
             (approve it to run it; blkid, fdisk -l, smartctl read only its metadata)"
        )
    })
}

fn is_disk(path: &str) -> bool {
    let Some(rest) = path.strip_prefix("/dev/") else { return false };
    let parts: Vec<&str> = rest.split('/').collect();
    match parts.as_slice() {
        ["mapper", name] => *name != "control",
        ["disk", kind, _] => kind.starts_with("by-"),
        [name] => DISK_PREFIXES.iter().any(|d| {
            name.strip_prefix(d)
                .is_some_and(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '-'))
        }),
        _ => false,
    }
}

/// Whether the folder `text` (kubectl's `-f DIR`, which reads the files in it) holds a
/// credential: directly, or anywhere under it when `recursive`.
pub fn folder_holds_credentials(text: &str, recursive: bool) -> bool {
    folder_credential(text, &Workdirs::default(), recursive, None).is_some()
}

/// Whether a glob could expand to `example` (part by part, as bash matches a path).
fn glob_may_match(glob: &str, example: &str) -> bool {
    if example.ends_with(".pub") {
        return false;
    }
    let (g, e): (Vec<&str>, Vec<&str>) = (glob.split('/').collect(), example.split('/').collect());
    if !glob.starts_with('/') {
        // A relative glob: its last parts against the example's last parts.
        return g.len() <= e.len() && g.iter().rev().zip(e.iter().rev()).all(|(g, e)| glob_match(g, e));
    }
    g.len() == e.len() && g.iter().zip(&e).all(|(g, e)| glob_match(g, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn word(text: &str, glob: bool) -> Word {
        Word { text: text.into(), glob, ..Word::default() }
    }

    fn after_cd(dir: &str) -> Workdirs {
        let mut w = Workdirs::default();
        w.dirs.push(dir.into());
        w.changed = true;
        w
    }

    #[test]
    fn credentials_are_found_literal_relative_and_by_glob() {
        let home = Workdirs::default();
        for (text, glob) in [
            ("/etc/shadow", false),
            ("/etc//shadow", false),
            ("/etc/shadow-", false),
            ("/etc/shadow.bak", false),
            ("/etc/.shadow.swp", false),
            ("/var/backups/gshadow.bak", false),
            ("/root/.ssh/id_rsa", false),
            ("~/.aws/credentials", false),
            ("~ops/.pgpass", false),
            ("/home/ops/.kube/config", false),
            ("/root/.kube/config.bak", false),
            ("/etc/ssl/private/web.key", false),
            ("/etc/nginx/ssl/server.key", false),
            ("/etc/wireguard/wg0.conf", false),
            ("/etc/krb5.keytab", false),
            ("/srv/app/.env", false),
            (".ssh/id_rsa", false),
            (".ssh/./id_rsa", false),
            (".mysql_history", false),
            ("../../etc/shadow", false),
            ("if=/etc/shadow", false),
            ("/etc/sh*", true),
            ("/etc/*.conf", true),
            ("/etc/*", true),
            ("/home/*/.ssh/*", true),
            ("/root/.ssh/id_*", true),
            ("*/.aws/cred*", true),
            ("/etc/wireguard/*.conf", true),
        ] {
            assert!(credential_read(&word(text, glob), &home).is_some(), "{text}");
        }
        for (text, glob) in [
            ("/etc/passwd", false),
            ("/root/.ssh/id_rsa.pub", false),
            ("/root/.ssh/authorized_keys", false),
            ("/root/.ssh/known_hosts", false),
            ("/etc/ssh/ssh_host_rsa_key.pub", false),
            ("/etc/ssl/certs/ca.crt", false),
            ("/var/log/*.log", true),
            ("/etc/nginx/*.conf", true),
            ("/root/.ssh/*.pub", true),
            ("/etc/ssh/sshd_config", false),
            ("/etc/nginx/nginx.conf", false),
            ("config", false),
            ("shadow", false),
        ] {
            assert_eq!(credential_read(&word(text, glob), &home), None, "{text}");
        }
        assert!(credential_read(&word("shadow", false), &after_cd("/etc")).is_some(), "cd /etc; cat shadow");
        assert!(credential_read(&word("shadow", false), &Workdirs::unknown()).is_some(), "cd $D; cat shadow");
        assert!(credential_read(&word("private/a.key", false), &Workdirs::unknown()).is_some());
        assert_eq!(credential_read(&word("app.log", false), &Workdirs::unknown()), None);
    }

    #[test]
    fn run_time_names_resolve_home_and_defaults() {
        let home = Workdirs::default();
        let dynamic = |t: &str| Word { text: t.into(), dynamic: true, ..Word::default() };
        for text in ["$HOME/.ssh/id_rsa", "${HOME}/.aws/credentials", "${x:-/etc/shadow}", "${x-/root/.ssh/id_rsa}"] {
            assert!(credential_read(&dynamic(text), &home).is_some(), "{text}");
        }
        assert_eq!(credential_read(&dynamic("$HOME/app.log"), &home), None);
    }

    #[test]
    fn folders_that_hold_credentials() {
        let home = Workdirs::default();
        for (folder, names) in [
            ("/", None),
            ("/etc", None),
            ("/root/", None),
            (".", None),
            (".ssh", None),
            ("/etc/ssl/private/old", None),
            ("/etc", Some("*.key")),
            ("/srv", None),
        ] {
            assert!(folder_credential(folder, &home, true, names).is_some(), "{folder}");
        }
        for (folder, names) in [
            ("/var/log", None),
            ("/etc/nginx", None),
            ("/etc/nginx/sites-enabled", None),
            ("/etc/nginx", Some("*.conf")),
            ("/etc/sudoers.d", None),
            ("/etc/postgresql", None),
        ] {
            assert_eq!(folder_credential(folder, &home, true, names), None, "{folder}");
        }
    }
}
