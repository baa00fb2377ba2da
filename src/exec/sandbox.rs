//! Defence in depth for proven reads (issue 24 §7): where the host allows it,
//! a command cleared as read-only runs in a private mount namespace whose every
//! mount is remounted read-only, so a write that slipped past the proof fails
//! with "Read-only file system" instead of happening.
//!
//! The wrapper is POSIX sh (it runs in any login shell) and decides on the host:
//! root gets `unshare -m`; another user `unshare -r -m` (a user namespace, needed
//! to mount), then a nested user namespace maps it back to its own uid, so `id`
//! and file permissions still say who it is. A host without `unshare` or with
//! user namespaces disabled runs the command as before under
//! `policy.readonly_sandbox: prefer`, and not at all under `require`. A command
//! that elevates (`sudo`, `doas`, `su`) is never wrapped: a user namespace
//! cannot become root (`require` refuses it).

pub use crate::config::SandboxMode;
use crate::safety::render::quote;

/// The exit status of a read refused because the host has no sandbox (`require`).
pub const UNAVAILABLE: i32 = 125;

/// Remounts every mount read-only, then runs `$1` with bash, as uid `$2` (gid `$3`) when not root.
/// (All at once: one `mount` after another costs ~5 ms each.)
/// (A user who is not root keeps /proc writable: its own uid map is written there, and the kernel
/// still refuses it /proc/sys.)
/// Mounts already read-only, and kernel interfaces that hold no files (cgroup, devpts, mqueue, bpf…),
/// are left as they are: one `mount` each for 20 mounts cost ~1 s for a 50-host fan-out on 2 cores.
const READ_ONLY: &str = r#"for m in $(awk '$4 !~ /^ro(,|$)/ && $3 !~ /^(cgroup2?|devpts|mqueue|debugfs|tracefs|securityfs|pstore|bpf|configfs|fusectl|hugetlbfs|binfmt_misc|nsfs|autofs|rpc_pipefs)$/ {print $2}' /proc/self/mounts); do if [ "$m" != /proc ] || [ "$2" = 0 ]; then mount -o remount,bind,ro "$m" 2>/dev/null & fi; done; wait
if [ "$2" != 0 ] && unshare -U --map-user="$2" --map-group="$3" true 2>/dev/null; then exec unshare -U --map-user="$2" --map-group="$3" /bin/bash -c "$1"; fi
exec /bin/bash -c "$1""#;

/// Programs that change who runs: a user namespace cannot give them root.
const ELEVATORS: [&str; 5] = ["sudo", "doas", "su", "runuser", "pkexec"];

/// Whether `command` may be wrapped: it does not elevate.
pub fn wrappable(command: &str) -> bool {
    !command.split(|c: char| c.is_whitespace() || "';|&()`\"".contains(c)).any(|w| ELEVATORS.contains(&w))
}

/// `command` (merlya's rendering of a proven read) as it runs under `mode`, or why it cannot run.
pub fn wrap(command: &str, mode: SandboxMode) -> Result<String, String> {
    if mode == SandboxMode::Off {
        return Ok(command.to_string());
    }
    if !wrappable(command) {
        return match mode {
            SandboxMode::Require => {
                Err("policy.readonly_sandbox is `require` and this command elevates (sudo, doas, su): a read-only \
                 namespace cannot become root; run it as a user that needs no elevation, or set `prefer`"
                    .into())
            }
            _ => Ok(command.to_string()),
        };
    }
    let unavailable = match mode {
        SandboxMode::Require => format!(
            "echo 'merlya: no read-only sandbox on this host (unshare with a mount namespace); not run (policy.readonly_sandbox: require)' >&2; exit {UNAVAILABLE}"
        ),
        _ => "if [ -x /bin/bash ]; then exec /bin/bash -c \"$merlya_cmd\"; fi; eval \"$merlya_cmd\"".into(),
    };
    Ok(format!(
        "merlya_cmd={cmd}; merlya_ro={ro}; if [ \"$(id -u)\" = 0 ]; then merlya_ns=-m; else merlya_ns='-r -m'; fi; \
         if [ -x /bin/bash ] && command -v unshare >/dev/null 2>&1 && unshare $merlya_ns --propagation private true 2>/dev/null; \
         then exec unshare $merlya_ns --propagation private /bin/sh -c \"$merlya_ro\" merlya \"$merlya_cmd\" \"$(id -u)\" \"$(id -g)\"; fi; \
         {unavailable}",
        cmd = quote(command),
        ro = quote(READ_ONLY),
    ))
}

#[cfg(test)]
mod tests {
    use std::process::Command;

    use super::*;

    fn run(script: &str, cwd: &std::path::Path) -> std::process::Output {
        Command::new("/bin/sh").arg("-c").arg(script).current_dir(cwd).output().unwrap()
    }

    #[test]
    fn elevating_commands_are_not_wrapped_and_require_refuses_them() {
        assert!(!wrappable("sudo cat /var/log/syslog"));
        assert!(!wrappable("cat x | sudo grep y"));
        assert!(wrappable("cat /etc/sudoers.d/readme"));
        assert_eq!(wrap("sudo id", SandboxMode::Prefer).as_deref(), Ok("sudo id"));
        assert!(wrap("sudo id", SandboxMode::Require).unwrap_err().contains("elevates"));
        assert_eq!(wrap("df -h", SandboxMode::Off).as_deref(), Ok("df -h"));
    }

    /// On a machine that offers it (root with mount namespaces here): a write fails, reads work.
    #[test]
    fn a_write_inside_fails_and_reads_still_work() {
        let dir = tempfile::tempdir().unwrap();
        let probe =
            run("unshare -m --propagation private true || unshare -r -m --propagation private true", dir.path());
        if !probe.status.success() {
            eprintln!("skipped: no mount namespaces here");
            return;
        }
        let target = dir.path().join("written");
        let write = format!("echo x > {} ; cat /etc/hostname", target.display());
        let out = run(&wrap(&write, SandboxMode::Require).unwrap(), dir.path());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!target.exists(), "the write went through the sandbox");
        assert!(stderr.contains("Read-only file system"), "{stderr}");
        assert!(!String::from_utf8_lossy(&out.stdout).trim().is_empty(), "the read still works");
        // Who runs is unchanged.
        let out = run(&wrap("id -u", SandboxMode::Require).unwrap(), dir.path());
        let me = run("id -u", dir.path());
        assert_eq!(out.stdout, me.stdout, "{}", String::from_utf8_lossy(&out.stderr));
    }
}
