//! Paths whose mere opening has an effect (a watchdog armed, kernel messages
//! consumed, a connection, another process's secrets, merlya's own keys),
//! matched after the path is normalised as the kernel would resolve it (ADR 0026).
//!
//! Text cannot follow symbolic links, so a path that goes up through `..` after
//! a name (`/var/run/../proc/kmsg`: `/var/run` is a link to `/run`) is refused
//! outright, and a glob is matched against every risky name it could expand to
//! (`/proc/kms?`, `/dev/watchd*`). Words only known at run time cannot be
//! matched at all: the read-only sandbox masks these files (`exec::sandbox`).

use std::sync::OnceLock;

use super::parse::Word;

/// Files and folders whose reading changes the machine (a watchdog armed, kernel messages
/// consumed), reaches the network (autofs `/net`, bash's `/dev/tcp`, gawk's `/inet`), or reads
/// through another name (`/dev/char/10:130` is the watchdog by number, `/dev/fd` another
/// process's open files, `/run/initctl` init's control FIFO, whose messages a reader takes).
const RISKY_PREFIXES: [&str; 13] = [
    "/run/initctl",
    "/dev/watchdog",
    "/proc/kmsg",
    "/proc/sysrq-trigger",
    "/net/",
    "/dev/tcp/",
    "/dev/udp/",
    "/dev/char/",
    "/dev/block/",
    "/dev/fd/",
    "/inet/",
    "/inet4/",
    "/inet6/",
];

/// Names that are risky in `/dev`, `/proc` and `/sys` (or after a `cd`), whatever the folder:
/// environ/mem/kcore hold other programs' secrets (merlya's own key in /proc/$PPID/environ).
const RISKY_NAMES: [&str; 8] = ["kmsg", "sysrq-trigger", "environ", "mem", "kmem", "kcore", "watchdog", "trace_pipe"];

/// What a proven read may open under `/dev`; everything else there does something when opened or
/// read (terminals and consoles take keystrokes, input devices and `/dev/vcs*` show what a person
/// types, tapes rewind on close, `/dev/port` can hang the machine, `/dev/ptmx` makes a terminal,
/// serial lines reset what hangs on them, TPMs, CD trays; red team 6). An allow-list, since
/// /dev's names are the kernel's and the drivers' to choose.
const DEV_FILES: [&str; 8] = ["null", "zero", "full", "random", "urandom", "stdin", "stdout", "stderr"];
/// Folders under `/dev` whose files are ordinary (shared memory, queues) or name disks.
const DEV_FOLDERS: [&str; 4] = ["shm", "mqueue", "disk", "mapper"];
/// Disks and their partitions (`sda1`, `nvme0n1p2`, `dm-0`, `md127`): reading one is a read.
const DEV_DISKS: [&str; 10] = ["sd", "vd", "xvd", "hd", "nvme", "mmcblk", "dm-", "md", "loop", "nbd"];

/// Whether `/dev/PARTS…` is on the allow-list (`parts` are the path's parts, `/dev` first).
fn dev_allowed(parts: &[&str], glob: bool) -> bool {
    let Some(first) = parts.first().copied().filter(|f| !f.is_empty()) else { return true };
    let literal = |s: &str| !glob || !s.contains(['*', '?', '[']);
    if DEV_FILES.contains(&first) && literal(first) {
        return parts.len() == 1;
    }
    if DEV_FOLDERS.contains(&first) && literal(first) {
        return true;
    }
    // A glob is judged by the literal text before its first pattern character.
    let known = if glob { &first[..first.find(['*', '?', '[']).unwrap_or(first.len())] } else { first };
    parts.len() == 1
        && DEV_DISKS
            .iter()
            .any(|d| known.starts_with(d) && known[d.len()..].chars().all(|c| c.is_ascii_alphanumeric() || c == '-'))
}

/// merlya's own home (its audit key, database, spilled output): never read by a proven read.
static PRIVATE_HOME: OnceLock<String> = OnceLock::new();

/// Names merlya's home for the rest of the process (the first call wins): paths under it are
/// refused like the kernel's side-effect files.
pub fn set_private_home(home: &std::path::Path) {
    let home = std::path::absolute(home).unwrap_or_else(|_| home.to_path_buf());
    let _ = PRIVATE_HOME.set(normal_path(&home.display().to_string()));
}

/// merlya's own home, once named: a folder searched recursively must not hold it.
pub fn private_home() -> Option<&'static str> {
    PRIVATE_HOME.get().map(String::as_str)
}

/// Why opening `word` is not read-only, if it is not. Paths are normalised first (`/proc//kmsg`,
/// `/dev/./watchdog`, `/proc/self/root/…`, `/proc/1/task/1/…`), and the device names are refused
/// wherever they are when the word is a path (`cd /proc; cat kmsg` with `bare_names`).
pub fn side_effect_path(word: &Word, bare_names: bool) -> Option<String> {
    let t = word.text.as_str();
    // `${UNSET:-/proc/kmsg}`: the default is a path like any other.
    if word.dynamic {
        for default in parameter_defaults(t) {
            if let Some(why) = side_effect_path(&Word::literal(default), bare_names) {
                return Some(why);
            }
        }
    }
    let refuse = |why: &str| Some(format!("opening `{t}` {why}"));
    if crosses_a_link(t) {
        return refuse("goes up through `..` after a name, which may cross a symbolic link (`/var/run/../proc`)");
    }
    if word.glob && glob_may_match_dots(t) {
        return refuse("has a pattern starting with `.` that bash (before 5.2) expands to `..`, anywhere up the tree");
    }
    let path = normal_path(t);
    if let Some(home) = PRIVATE_HOME.get()
        && (path == *home || path.starts_with(&format!("{home}/")))
    {
        return refuse("reads merlya's own files (its audit key, database and output)");
    }
    let parts: Vec<&str> = path.split('/').collect();
    let name = parts.last().copied().unwrap_or_default();
    let merlyas = matches!(name, "audit.key" | "audit.checkpoint" | "operator.key") || name.starts_with("merlya.db");
    if path.contains("/.merlya/") || path.ends_with("/.merlya") || (merlyas && (t.contains('/') || bare_names)) {
        return refuse("reads merlya's own files (its audit key, database and output)");
    }
    let glob = word.glob;
    let matches = |pattern: &str, literal: &str| if glob { glob_match(pattern, literal) } else { pattern == literal };
    // A prefix is matched part by part, each part a pattern when the word is a glob.
    let under = |prefix: &str| {
        let wanted: Vec<&str> = prefix.trim_end_matches('/').split('/').collect();
        let last = wanted.len() - 1;
        // A file (no trailing `/`) is the whole path; a folder any path under it.
        (if prefix.ends_with('/') { parts.len() >= wanted.len() } else { parts.len() == wanted.len() })
            && wanted.iter().enumerate().all(|(i, w)| {
                // The last part of `/dev/watchdog` also covers `watchdog0`.
                if i == last && !prefix.ends_with('/') {
                    matches(parts[i], w) || (1..=3).any(|n| matches(parts[i], &format!("{w}{}", "0".repeat(n))))
                } else {
                    matches(parts[i], w)
                }
            })
    };
    if RISKY_PREFIXES.iter().any(|p| under(p)) {
        return refuse("has side effects");
    }
    if under("/dev/") && !dev_allowed(&parts[2..], glob) {
        return refuse(
            "opens a device that does something when opened or read (only disks, /dev/null, /dev/zero, /dev/urandom… are read-only)",
        );
    }
    let risky_name = RISKY_NAMES.iter().any(|n| {
        let prefix_named = matches!(*n, "watchdog" | "trace_pipe");
        matches(name, n) || (prefix_named && (name.starts_with(n) || (glob && matches(name, &format!("{n}0")))))
    }) || path.contains("/tracing/trace_pipe");
    // A bare name is a file only where it is a redirection target or after a `cd`
    // (elsewhere `grep watchdog` is a pattern); a relative path is anywhere.
    let relative = !path.starts_with('/') && (bare_names || t.contains('/'));
    let special = ["/dev/", "/proc/", "/sys/"].iter().any(|p| under(p)) || relative;
    (risky_name && special).then(|| format!("opening `{t}` has side effects"))
}

/// The literal values of `${NAME:-VALUE}`-style operators in `text` (`-`, `=`, `+`, `?`, with or
/// without `:`), which a parameter may expand to.
pub(super) fn parameter_defaults(text: &str) -> Vec<&str> {
    let mut values = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        let inner = &rest[start + 2..];
        let Some(end) = inner.find('}') else { break };
        let body = &inner[..end];
        let name_end = body.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(body.len());
        let op = &body[name_end..];
        let op = op.strip_prefix(':').unwrap_or(op);
        if let Some(value) = op.strip_prefix(['-', '=', '+', '?']) {
            values.push(value);
        }
        rest = &inner[end + 1..];
    }
    values
}

/// Whether `path` goes up through `..` after a name (`a/../b`, `/var/run/../proc`): the name may be
/// a symbolic link, so the text does not say where the kernel ends up. A leading `..` (`../x`) is
/// relative to the working folder and is read as it is.
fn crosses_a_link(path: &str) -> bool {
    let mut named = false;
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." if named => return true,
            ".." => {}
            _ => named = true,
        }
    }
    false
}

/// `*` any run of characters (`/` included), `?` one character, anything else itself: the
/// patterns of credential files and of drift rules (not the shell's, see `glob_match`).
pub fn matches_pattern(pattern: &str, text: &str) -> bool {
    let (p, t): (Vec<char>, Vec<char>) = (pattern.chars().collect(), text.chars().collect());
    let (mut pi, mut ti) = (0, 0);
    let (mut star, mut mark) = (None, 0);
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            mark = ti;
            pi += 1;
        } else if let Some(s) = star {
            pi = s + 1;
            mark += 1;
            ti = mark;
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|c| *c == '*')
}

/// Whether a part of a glob starts with `.` and holds a pattern character (`.*`, `.?`): bash
/// matches `.` and `..` with it unless `globskipdots` (5.2 and later) is on.
pub fn glob_may_match_dots(text: &str) -> bool {
    text.split('/').any(|part| part.starts_with('.') && part.contains(['*', '?', '[']))
}

/// Whether the shell pattern `pattern` (`*`, `?`, `[…]`) matches all of `name`.
pub(super) fn glob_match(pattern: &str, name: &str) -> bool {
    fn class(p: &[char], c: char) -> Option<(bool, usize)> {
        // p[0] == '['; returns whether `c` is in the class and the index after `]`.
        let mut i = 1;
        let negate = matches!(p.get(i), Some('!' | '^'));
        if negate {
            i += 1;
        }
        let mut found = false;
        let mut first = true;
        while i < p.len() && (p[i] != ']' || first) {
            if i + 2 < p.len() && p[i + 1] == '-' && p[i + 2] != ']' {
                found |= p[i] <= c && c <= p[i + 2];
                i += 3;
            } else {
                found |= p[i] == c;
                i += 1;
            }
            first = false;
        }
        (i < p.len()).then_some((found != negate, i + 1))
    }
    fn go(p: &[char], n: &[char]) -> bool {
        match p.first() {
            None => n.is_empty(),
            Some('*') => (0..=n.len()).any(|k| go(&p[1..], &n[k..])),
            Some('?') => !n.is_empty() && go(&p[1..], &n[1..]),
            Some('[') => match (class(p, n.first().copied().unwrap_or('\0')), n.is_empty()) {
                (Some((true, next)), false) => go(&p[next..], &n[1..]),
                (Some(_), _) => false,
                // An unclosed `[` is a literal.
                (None, _) => n.first() == Some(&'[') && go(&p[1..], &n[1..]),
            },
            Some(c) => n.first() == Some(c) && go(&p[1..], &n[1..]),
        }
    }
    let (p, n): (Vec<char>, Vec<char>) = (pattern.chars().collect(), name.chars().collect());
    go(&p, &n)
}

/// `path` with `//`, `/./` and `..` resolved as text, `/proc/PID/task/TID/` read as `/proc/PID/`,
/// and `/proc/PID/root/` (a link to `/`) taken away, so a rule sees the file the kernel opens.
pub fn normal_path(path: &str) -> String {
    let absolute = path.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    let pid = |p: &str| p == "self" || p == "thread-self" || p.chars().all(|c| c.is_ascii_digit());
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." if absolute => {
                parts.pop();
            }
            ".." if parts.last().is_some_and(|p| *p != "..") => {
                parts.pop();
            }
            other => parts.push(other),
        }
        if absolute && parts.len() == 4 && parts[0] == "proc" && parts[2] == "task" && pid(parts[1]) {
            parts.truncate(2);
        }
        if absolute && parts.len() >= 3 && parts[0] == "proc" && matches!(parts[2], "root" | "cwd") && pid(parts[1]) {
            parts.clear();
        }
    }
    let mut out = parts.join("/");
    if absolute {
        out.insert(0, '/');
    }
    if path.ends_with('/') && !out.ends_with('/') {
        out.push('/');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(text: &str, glob: bool) -> Word {
        Word { text: text.into(), glob, ..Word::default() }
    }

    #[test]
    fn aliases_globs_and_merlyas_own_files_are_refused() {
        for (text, glob) in [
            ("/var/run/../proc/kmsg", false),
            ("/dev/fd/../../1234/environ", false),
            ("/proc/net/../../kmsg", false),
            ("/proc/1/task/1/root/proc/kmsg", false),
            ("/proc/1/task/1/environ", false),
            ("/proc/kms?", true),
            ("/proc/[k]msg", true),
            ("/dev/watchd*", true),
            ("/dev/w*", true),
            ("/proc/1/env*", true),
            ("/dev/ch*/10:130", true),
            ("/pr*c/kmsg", true),
            ("/dev/fd/3", false),
            ("/inet/tcp/0/127.0.0.1/80", false),
            ("/root/.merlya/audit.key", false),
            ("./audit.key", false),
            ("./operator.key", false),
            ("/srv/backup/merlya.db", false),
            ("/dev/port", false),
            ("/run/initctl", false),
            ("/dev/ttyS0", false),
            ("/dev/tty1", false),
            ("/dev/input/event0", false),
            ("/dev/vcs1", false),
            ("/dev/nst0", false),
            ("/dev/st0", false),
            ("/dev/sr0", false),
            ("/dev/tpm0", false),
            ("/dev/ptmx", false),
            ("/dev//ttyUSB0", false),
            ("/dev/tty*", true),
            ("/dev/*", true),
            ("/d?v/port", true),
            ("/dev/null/x", false),
        ] {
            assert!(side_effect_path(&path(text, glob), false).is_some(), "{text} was allowed");
        }
        for (text, glob) in [
            ("/proc/*/status", true),
            ("/var/log/*.log", true),
            ("/dev/sd*", true),
            ("/dev/nvme0n1p[12]", true),
            ("/dev/sda1", false),
            ("/dev/dm-0", false),
            ("/dev/mapper/vg-root", false),
            ("/dev/disk/by-uuid/0a1b", false),
            ("/dev/null", false),
            ("/dev/urandom", false),
            ("/dev/shm/app.lock", false),
            ("/dev", false),
            ("/dev/", false),
            ("../app/current.log", false),
            ("/proc/meminfo", false),
            ("/var/log/syslog", false),
            ("kmsg", false),
        ] {
            assert_eq!(side_effect_path(&path(text, glob), false), None, "{text}");
        }
    }

    #[test]
    fn globs_match_as_the_shell_does() {
        for (p, n, m) in [
            ("kms?", "kmsg", true),
            ("[k]msg", "kmsg", true),
            ("[!k]msg", "kmsg", false),
            ("[a-l]msg", "kmsg", true),
            ("*", "", true),
            ("w*g", "watchdog", true),
            ("w*g", "watchdog0", false),
            ("[", "[", true),
        ] {
            assert_eq!(glob_match(p, n), m, "{p} {n}");
        }
    }
}
