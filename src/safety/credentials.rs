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

use super::paths::{glob_match, matches_pattern, normal_path};
use super::words::Word;

/// Credential files, as patterns where `*` is any run of characters (`/` included).
const PATTERNS: &[&str] = &[
    "/etc/shadow",
    "/etc/shadow-",
    "/etc/gshadow",
    "/etc/gshadow-",
    "*/.ssh/id_*",
    "/etc/ssh/ssh_host_*_key",
    "*/.aws/credentials",
    "*/.kube/config",
    "/etc/kubernetes/*.conf",
    "/etc/kubernetes/pki/*.key",
    "/var/lib/kubelet/pki/*.key",
    "*/.pgpass",
    "*/.my.cnf",
    "/etc/mysql/debian.cnf",
    "*/.netrc",
    "*/.git-credentials",
    "*/.docker/config.json",
    "*/.vault-token",
    "/etc/ssl/private/*",
    "/etc/pki/tls/private/*",
    "/etc/letsencrypt/live/*/privkey*.pem",
    "/etc/letsencrypt/archive/*/privkey*.pem",
    "/etc/ceph/*.keyring",
    "/etc/rancher/k3s/k3s.yaml",
    "/etc/rancher/rke2/rke2.yaml",
];

/// One concrete path for each pattern: what a glob is tried against.
const EXAMPLES: &[&str] = &[
    "/etc/shadow",
    "/etc/shadow-",
    "/etc/gshadow",
    "/root/.ssh/id_rsa",
    "/root/.ssh/id_ed25519",
    "/home/user/.ssh/id_rsa",
    "/home/user/.ssh/id_ed25519",
    "/etc/ssh/ssh_host_rsa_key",
    "/etc/ssh/ssh_host_ed25519_key",
    "/root/.aws/credentials",
    "/home/user/.aws/credentials",
    "/root/.kube/config",
    "/home/user/.kube/config",
    "/etc/kubernetes/admin.conf",
    "/etc/kubernetes/pki/ca.key",
    "/var/lib/kubelet/pki/kubelet.key",
    "/root/.pgpass",
    "/home/user/.pgpass",
    "/root/.my.cnf",
    "/etc/mysql/debian.cnf",
    "/root/.netrc",
    "/root/.git-credentials",
    "/root/.docker/config.json",
    "/root/.vault-token",
    "/etc/ssl/private/server.key",
    "/etc/pki/tls/private/server.key",
    "/etc/letsencrypt/live/example/privkey.pem",
    "/etc/letsencrypt/archive/example/privkey1.pem",
    "/etc/ceph/ceph.client.admin.keyring",
    "/etc/rancher/k3s/k3s.yaml",
    "/etc/rancher/rke2/rke2.yaml",
];

/// Programs that read a file's metadata or name, never its contents.
pub const METADATA_ONLY: &[&str] = &[
    "ls", "stat", "du", "file", "namei", "getfacl", "lsattr", "test", "[", "[[", "find", "realpath", "readlink",
    "dirname", "basename", "wc",
];

/// Names that are credentials wherever they are: a relative word after a `cd` (`cd /etc; cat shadow`).
const BARE_NAMES: &[&str] = &[
    "shadow",
    "shadow-",
    "gshadow",
    "gshadow-",
    "id_rsa",
    "id_dsa",
    "id_ecdsa",
    "id_ed25519",
    "credentials",
    ".pgpass",
    ".my.cnf",
    ".netrc",
    ".git-credentials",
    ".vault-token",
    "debian.cnf",
    "admin.conf",
];

/// Why reading `word` hands a credential to the model, if it does. `bare_names`: a relative word
/// may name a file of the folder a `cd` went to, so a credential's bare name counts too.
pub fn credential_read(word: &Word, bare_names: bool) -> Option<String> {
    // A home folder (`~/.aws/credentials`) is the only expansion read here: its rest is literal.
    let tilde_only = word.text.starts_with('~') && !word.text.contains(['$', '`']);
    if word.dynamic && !tilde_only {
        return None;
    }
    let text = word.text.as_str();
    let path = if text.starts_with('/') { normal_path(text) } else { text.to_string() };
    let public = path.ends_with(".pub");
    let hit = if word.glob {
        EXAMPLES.iter().any(|example| glob_may_match(&path, example))
    } else {
        !public
            && (PATTERNS.iter().any(|p| matches_pattern(p, &path))
                || (bare_names && !path.contains('/') && BARE_NAMES.contains(&path.as_str())))
    };
    hit.then(|| {
        format!("reads `{text}`, a credential: its contents would reach the model (approve it to run it, or read it yourself)")
    })
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
/// credential: directly, or anywhere under it when `recursive`. A home folder (`~`, `~/.kube`) is
/// tried as root's and a user's; a relative one (`.kube`, `.`) against the ends of the examples,
/// `.` being the home folder commands start in.
pub fn folder_holds_credentials(text: &str, recursive: bool) -> bool {
    let text = text.trim_end_matches('/');
    let text = text.strip_prefix("./").unwrap_or(text);
    let folders: Vec<String> = if let Some(rest) = text.strip_prefix('~') {
        let rest = rest.split_once('/').map_or("", |(_, r)| r);
        ["/root", "/home/user"]
            .iter()
            .map(|h| if rest.is_empty() { h.to_string() } else { format!("{h}/{rest}") })
            .collect()
    } else if text.starts_with('/') {
        vec![normal_path(text).trim_end_matches('/').to_string()]
    } else if text.is_empty() || text == "." {
        vec!["/root".into(), "/home/user".into()]
    } else {
        return EXAMPLES.iter().any(|e| {
            let parent = e.rsplit_once('/').map_or("", |(p, _)| p);
            if recursive { e.contains(&format!("/{text}/")) } else { parent.ends_with(&format!("/{text}")) }
        });
    };
    EXAMPLES.iter().any(|e| {
        let parent = e.rsplit_once('/').map_or("", |(p, _)| p);
        folders.iter().any(|f| if recursive { e.starts_with(&format!("{f}/")) } else { parent == f })
    })
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

    #[test]
    fn credentials_are_found_literal_relative_and_by_glob() {
        for (text, glob) in [
            ("/etc/shadow", false),
            ("/etc//shadow", false),
            ("/root/.ssh/id_rsa", false),
            ("~/.aws/credentials", false),
            ("~ops/.pgpass", false),
            ("/home/ops/.kube/config", false),
            ("/etc/ssl/private/web.key", false),
            ("shadow", false),
            (".pgpass", false),
            ("/etc/sh*", true),
            ("/etc/*", true),
            ("/home/*/.ssh/*", true),
            ("/root/.ssh/id_*", true),
            ("*/.aws/cred*", true),
        ] {
            assert!(credential_read(&word(text, glob), true).is_some(), "{text}");
        }
        for (text, glob) in [
            ("/etc/passwd", false),
            ("/root/.ssh/id_rsa.pub", false),
            ("/root/.ssh/authorized_keys", false),
            ("/etc/ssh/ssh_host_rsa_key.pub", false),
            ("/var/log/*.log", true),
            ("/etc/*.conf", true),
            ("/root/.ssh/*.pub", true),
            ("/etc/ssh/sshd_config", false),
            ("config", false),
        ] {
            assert_eq!(credential_read(&word(text, glob), true), None, "{text}");
        }
        assert_eq!(credential_read(&word("shadow", false), false), None, "a word, not a file, without a cd");
    }
}
