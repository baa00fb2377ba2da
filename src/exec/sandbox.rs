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
//! that elevates (`sudo`, `doas`, `su`, as the proof parsed it:
//! [`Clearance::elevates`](crate::safety::clearance::Clearance::elevates)) cannot
//! be wrapped from outside (a user namespace cannot become root): when it is
//! `sudo … COMMAND`, [`super::prepare`] puts the wrapper inside the elevation
//! ([`ElevatedRead`]), so it runs as root (or the `-u` user); where sudoers or
//! doas.conf allow no shell, it runs as it is under `prefer` and not under `require`.
//!
//! Inside, files whose mere opening does something (a destructive read of
//! `/proc/kmsg`, an armed watchdog, a line injected into the kernel log,
//! physical memory) are `/dev/null`, whatever path or glob reaches them, and
//! `/dev/char`, `/dev/block` (aliases of every device) are empty; on localhost
//! so are merlya's own home and `/proc/<merlya>` (ADR 0026 §12).

pub use crate::config::SandboxMode;
use crate::safety::render::quote;

/// The exit status of a read refused because the host has no sandbox (`require`).
pub const UNAVAILABLE: i32 = 125;

/// Masks side-effect files, hides `$5…`, remounts every mount read-only, then runs `$1` with bash, as
/// uid `$2` (gid `$3`) when not root; `$4` is the mode.
/// (All at once, in the background: one `mount` after another costs ~5 ms each.)
/// (A user who is not root keeps /proc writable: its own uid map is written there, and the kernel
/// still refuses it /proc/sys.)
/// Mounts already read-only, and kernel interfaces that hold no files (cgroup, devpts, mqueue, bpf…),
/// are left as they are: one `mount` each for 20 mounts cost ~1 s for a 50-host fan-out on 2 cores.
/// Masks: a file becomes `/dev/null` (a bind mount: reads end at once, writes go nowhere), a folder an
/// empty read-only tmpfs. Both work for root and in a user-owned mount namespace. The list of mounts is
/// read before any mask is made, so the masks are not remounted again. A mask that fails while its path
/// still exists refuses the command under `require` (the sandbox it promises is incomplete); `prefer`
/// runs it anyway, as it runs a command where there is no sandbox at all.
const READ_ONLY: &str = r#"c=$1 u=$2 g=$3 r=$4; shift 4
ms=$(awk '$4 !~ /^ro(,|$)/ && $3 !~ /^(cgroup2?|devpts|mqueue|debugfs|tracefs|securityfs|pstore|bpf|configfs|fusectl|hugetlbfs|binfmt_misc|nsfs|autofs|rpc_pipefs)$/ {print $2}' /proc/self/mounts)
p=
for f in /proc/kmsg /proc/sysrq-trigger /proc/kcore /dev/mem /dev/kmem /dev/port /dev/kmsg /dev/watchdog* /dev/char /dev/block "$@"; do
if [ -d "$f" ]; then { mount -t tmpfs -o ro,size=4k,mode=0555 merlya "$f" 2>/dev/null || ! [ -e "$f" ]; } & p="$p $!"
elif [ -e "$f" ]; then { mount --bind /dev/null "$f" 2>/dev/null || ! [ -e "$f" ]; } & p="$p $!"; fi; done
for m in $ms; do if [ "$m" != /proc ] || [ "$u" = 0 ]; then mount -o remount,bind,ro "$m" 2>/dev/null & fi; done
x=0; for q in $p; do wait "$q" || x=1; done; wait
if [ "$x" = 1 ] && [ "$r" = require ]; then echo 'merlya: a side-effect file or merlya'"'"'s own files could not be masked in the read-only sandbox; not run (policy.readonly_sandbox: require)' >&2; exit 125; fi
if [ "$u" != 0 ] && unshare -U --map-user="$u" --map-group="$g" true 2>/dev/null; then exec unshare -U --map-user="$u" --map-group="$g" /bin/bash -c "$c"; fi
exec /bin/bash -c "$c""#;

/// What a command on this machine must not see of merlya: its home (the database, the audit key,
/// logs) and its `/proc` entries (`root`, `cwd`, `fd`, `environ`, `mem` lead back to all of it),
/// those of its threads included. Threads started after this call are not listed.
pub fn merlya_itself(home: Option<&std::path::Path>) -> Vec<String> {
    let mut hidden: Vec<String> = Vec::new();
    if let Some(home) = home {
        let home = std::fs::canonicalize(home).unwrap_or_else(|_| home.to_path_buf());
        hidden.push(home.to_string_lossy().into_owned());
    }
    let pid = std::process::id().to_string();
    hidden.push(format!("/proc/{pid}"));
    if let Ok(tasks) = std::fs::read_dir("/proc/self/task") {
        for task in tasks.flatten() {
            let tid = task.file_name().to_string_lossy().into_owned();
            if tid != pid {
                hidden.push(format!("/proc/{tid}"));
            }
        }
    }
    hidden
}

/// The sandbox a proven read that elevates asks of [`super::prepare`]: there the wrapper runs as
/// the user sudo (su, doas) switches to, so root gets a plain mount namespace.
#[derive(Debug, Clone)]
pub struct ElevatedRead {
    /// `policy.readonly_sandbox`.
    pub mode: SandboxMode,
    /// Files and folders to mask besides the side-effect files.
    pub hide: Vec<String>,
}

impl ElevatedRead {
    /// `sh -c WRAPPED`: the elevated `command` inside the sandbox, as the word list an elevation
    /// method runs (the wrapper decides on the host, as the target user).
    pub fn shell(&self, command: &str) -> Result<String, String> {
        Ok(format!("sh -c {}", quote(&wrap(command, self.mode, false, &self.hide)?)))
    }

    /// What runs when the method may not start a shell (sudoers or doas.conf allow only some
    /// programs): the command as it is under `prefer`, nothing under `require`.
    pub fn without(&self, command: &str) -> String {
        match self.mode {
            SandboxMode::Require => format!(
                "echo 'merlya: elevation here may not start the read-only sandbox (a shell); not run (policy.readonly_sandbox: require)' >&2; exit {UNAVAILABLE}"
            ),
            _ => format!("exec {command}"),
        }
    }
}

/// `command` (merlya's rendering of a proven read) as it runs under `mode`, or why it cannot run.
/// `elevates`: the proof found `sudo`, `su`… (never wrapped); `hide`: files and folders to mask
/// besides the side-effect files (merlya's own, on localhost).
pub fn wrap(command: &str, mode: SandboxMode, elevates: bool, hide: &[String]) -> Result<String, String> {
    if mode == SandboxMode::Off {
        return Ok(command.to_string());
    }
    if elevates {
        return match mode {
            SandboxMode::Require => {
                Err("policy.readonly_sandbox is `require` and this command elevates (sudo, doas, su): a read-only \
                 namespace cannot become root; run it as a user that needs no elevation, or set `prefer`"
                    .into())
            }
            _ => Ok(command.to_string()),
        };
    }
    let (unavailable, mode_word) = match mode {
        SandboxMode::Require => (
            format!(
                "echo 'merlya: no read-only sandbox on this host (unshare with a mount namespace); not run (policy.readonly_sandbox: require)' >&2; exit {UNAVAILABLE}"
            ),
            "require",
        ),
        _ => ("if [ -x /bin/bash ]; then exec /bin/bash -c \"$merlya_cmd\"; fi; eval \"$merlya_cmd\"".into(), "prefer"),
    };
    let hidden: String = hide.iter().map(|path| format!(" {}", quote(path))).collect();
    Ok(format!(
        "merlya_cmd={cmd}; merlya_ro={ro}; if [ \"$(id -u)\" = 0 ]; then merlya_ns=-m; else merlya_ns='-r -m'; fi; \
         if [ -x /bin/bash ] && command -v unshare >/dev/null 2>&1 && unshare $merlya_ns --propagation private true 2>/dev/null; \
         then exec unshare $merlya_ns --propagation private /bin/sh -c \"$merlya_ro\" merlya \"$merlya_cmd\" \"$(id -u)\" \"$(id -g)\" {mode_word}{hidden}; fi; \
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

    /// Whether this machine gives the sandbox (root with mount namespaces here).
    fn sandbox_here(cwd: &std::path::Path) -> bool {
        let probe = run("unshare -m --propagation private true || unshare -r -m --propagation private true", cwd);
        if !probe.status.success() {
            eprintln!("skipped: no mount namespaces here");
        }
        probe.status.success()
    }

    fn text(bytes: &[u8]) -> String {
        String::from_utf8_lossy(bytes).into_owned()
    }

    #[test]
    fn elevating_commands_are_not_wrapped_and_require_refuses_them() {
        assert_eq!(wrap("sudo id", SandboxMode::Prefer, true, &[]).as_deref(), Ok("sudo id"));
        assert!(wrap("sudo id", SandboxMode::Require, true, &[]).unwrap_err().contains("elevates"));
        assert_eq!(wrap("df -h", SandboxMode::Off, false, &[]).as_deref(), Ok("df -h"));
    }

    /// On a machine that offers it (root with mount namespaces here): a write fails, reads work.
    /// A word `su` that elevates nothing (`echo su`) no longer turns the sandbox off: whether a
    /// command elevates is the proof's answer, not a search of its text.
    #[test]
    fn a_write_inside_fails_and_reads_still_work() {
        let dir = tempfile::tempdir().unwrap();
        if !sandbox_here(dir.path()) {
            return;
        }
        let target = dir.path().join("written");
        let write = format!("echo su; echo x > {} ; cat /etc/hostname", target.display());
        let elevates =
            crate::safety::clearance::Clearance::read_only("echo su; cat /etc/hostname").is_some_and(|c| c.elevates());
        let out = run(&wrap(&write, SandboxMode::Require, elevates, &[]).unwrap(), dir.path());
        let stderr = text(&out.stderr);
        assert!(
            !target.exists(),
            "the write went through the sandbox (elevates: {elevates}, {}): {stderr}{}",
            out.status,
            text(&out.stdout)
        );
        assert!(stderr.contains("Read-only file system"), "{stderr}");
        assert!(text(&out.stdout).lines().nth(1).is_some_and(|l| !l.is_empty()), "the read still works");
        // Who runs is unchanged.
        let out = run(&wrap("id -u", SandboxMode::Require, false, &[]).unwrap(), dir.path());
        let me = run("id -u", dir.path());
        assert_eq!(out.stdout, me.stdout, "{}", text(&out.stderr));
    }

    /// Kernel files whose opening does something are `/dev/null` inside: `/proc/kmsg` (a read takes
    /// messages away from the host's log reader) and `/dev/kmsg` (a write puts a line in the kernel
    /// log). Checked without taking anything: the device numbers, then a read that ends at once, and
    /// a line written to `/dev/kmsg` that must not reach the kernel log (read back without consuming).
    #[test]
    fn side_effect_files_are_dev_null_inside() {
        let dir = tempfile::tempdir().unwrap();
        if !sandbox_here(dir.path()) {
            return;
        }
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.subsec_nanos());
        let marker = format!("merlya-sandbox-test-{}-{}", std::process::id(), nanos.unwrap_or_default());
        let script = format!(
            "stat -L -c %t:%T /proc/kmsg /dev/kmsg; timeout 2 head -c1 /proc/kmsg | wc -c; echo {marker} > /dev/kmsg; echo done"
        );
        let out = run(&wrap(&script, SandboxMode::Require, false, &[]).unwrap(), dir.path());
        assert_eq!(text(&out.stdout), "1:3\n1:3\n0\ndone\n", "{}", text(&out.stderr));
        if let Some(log) = kernel_log() {
            assert!(!log.contains(&marker), "the sandboxed write reached the kernel log");
        }
    }

    /// The kernel log as /dev/kmsg gives it to a new reader (nothing is consumed), when readable.
    fn kernel_log() -> Option<String> {
        use std::io::Read;
        use std::os::unix::fs::OpenOptionsExt;
        let mut file = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open("/dev/kmsg").ok()?;
        let (mut log, mut record) = (String::new(), vec![0u8; 8192]);
        loop {
            match file.read(&mut record) {
                Ok(0) => break,
                Ok(n) => log.push_str(&String::from_utf8_lossy(&record[..n])),
                // EPIPE: records overwritten while reading; the rest is still there.
                Err(e) if e.raw_os_error() == Some(libc::EPIPE) => continue,
                Err(_) => break,
            }
        }
        Some(log)
    }

    /// A listed file (a stand-in for a watchdog device) reads as empty and keeps its content when
    /// written; a listed folder (merlya's home) is empty. The real files are untouched outside.
    #[test]
    fn hidden_files_and_folders_read_as_nothing() {
        let dir = tempfile::tempdir().unwrap();
        if !sandbox_here(dir.path()) {
            return;
        }
        let watchdog = dir.path().join("watchdog0");
        std::fs::write(&watchdog, "armed\n").unwrap();
        let home = dir.path().join("merlya home");
        std::fs::create_dir(&home).unwrap();
        std::fs::write(home.join("audit.key"), "KEY-BYTES\n").unwrap();
        let hide = [watchdog.display().to_string(), home.display().to_string(), "/no/such/file".into()];
        let script = format!(
            "cat {w}; echo V > {w}; ls -A {h}; cat {h}/audit.key; echo end",
            w = quote(&hide[0]),
            h = quote(&hide[1])
        );
        let out = run(&wrap(&script, SandboxMode::Require, false, &hide).unwrap(), dir.path());
        assert_eq!(text(&out.stdout), "end\n", "{}", text(&out.stderr));
        assert!(text(&out.stderr).contains("No such file"), "{}", text(&out.stderr));
        assert_eq!(std::fs::read_to_string(&watchdog).unwrap(), "armed\n");
        // merlya's own /proc entry is hidden too (its threads' as well).
        let me = merlya_itself(Some(&home));
        assert!(me.len() >= 2 && me[1] == format!("/proc/{}", std::process::id()), "{me:?}");
        let script = format!("ls {}/ | wc -l; ls {} | wc -l", me[1], me.last().map(|p| quote(p)).unwrap_or_default());
        let out = run(&wrap(&script, SandboxMode::Require, false, &me).unwrap(), dir.path());
        assert_eq!(text(&out.stdout), "0\n0\n", "{}", text(&out.stderr));
    }
}
