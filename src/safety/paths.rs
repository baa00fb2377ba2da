//! Paths whose mere opening has an effect (a watchdog armed, kernel messages
//! consumed, a connection, another process's secrets), matched after the path
//! is normalised as the kernel would resolve it (ADR 0026).

use super::parse::Word;

/// Files whose mere reading changes the machine (a watchdog armed, kernel
/// messages consumed) or reaches the network (autofs `/net`). Paths are
/// normalised first (`/proc//kmsg`, `/dev/./watchdog`, `/proc/self/root/…`),
/// and the device names are refused wherever they are (`cd /proc; cat kmsg`).
pub fn side_effect_path(word: &Word, bare_names: bool) -> Option<String> {
    let t = word.text.as_str();
    let path = normal_path(t);
    // `/dev/char/10:130` is the watchdog by number; `/dev/block/` the same for disks.
    let risky = [
        "/dev/watchdog",
        "/proc/kmsg",
        "/proc/sysrq-trigger",
        "/net/",
        "/dev/tcp/",
        "/dev/udp/",
        "/dev/char/",
        "/dev/block/",
    ];
    let name = path.rsplit('/').next().unwrap_or(&path);
    // environ/mem/kcore hold other programs' secrets (merlya's own key in /proc/$PPID/environ).
    let risky_name = name == "kmsg"
        || name == "sysrq-trigger"
        || name == "environ"
        || name == "mem"
        || name == "kmem"
        || name == "kcore"
        || name.starts_with("watchdog")
        || name.starts_with("trace_pipe")
        || path.contains("/tracing/trace_pipe");
    // A bare name is a file only where it is a redirection target or after a `cd`
    // (elsewhere `grep watchdog` is a pattern); a relative path is anywhere.
    let relative = !path.starts_with('/') && (bare_names || t.contains('/'));
    let special = path.starts_with("/dev/") || path.starts_with("/proc/") || path.starts_with("/sys/") || relative;
    (risky.iter().any(|p| path.starts_with(p)) || (risky_name && special))
        .then(|| format!("opening `{t}` has side effects"))
}

/// `path` with `//`, `/./` and `..` resolved as text, and `/proc/PID/root/`
/// (a link to `/`) taken away, so a rule sees the file the kernel opens.
pub fn normal_path(path: &str) -> String {
    let absolute = path.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
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
        if absolute && parts.len() >= 3 && parts[0] == "proc" && matches!(parts[2], "root" | "cwd") {
            let pid = parts[1];
            if pid == "self" || pid == "thread-self" || pid.chars().all(|c| c.is_ascii_digit()) {
                parts.clear();
            }
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
