//! Which changes are **dangerous**: they destroy data, lock people out or
//! stop the machine. This table only raises the risk shown in an approval
//! (and keeps such commands out of "always" rules); whether a command is
//! read-only is decided by the specs, never here.

use super::parse::Word;

/// Directories whose recursive removal or permission change ruins a system.
const CRITICAL_PATHS: &[&str] = &[
    "/", "/*", "/bin", "/boot", "/dev", "/etc", "/home", "/lib", "/lib64", "/opt", "/proc", "/root", "/sbin", "/srv",
    "/sys", "/usr", "/var", "~", "~/", "$HOME", "*", ".", "..",
];

fn is_critical(path: &str) -> bool {
    let trimmed = if path.len() > 1 { path.trim_end_matches('/') } else { path };
    CRITICAL_PATHS.contains(&trimmed) || CRITICAL_PATHS.contains(&path)
}

/// Whether `path` is a system directory as a starting point (`/`, `/etc`, `~`, `$HOME`…).
pub fn system_tree(path: &str) -> bool {
    is_critical(path) && path.starts_with(['/', '~', '$'])
}

/// Whether `args` contain the short option letter `c` (alone or in a cluster like `-rf`) or a long option.
fn has_opt(args: &[Word], short: Option<char>, long: &[&str]) -> bool {
    args.iter().any(|w| {
        let a = w.text.as_str();
        if let Some(l) = a.strip_prefix("--") {
            return long.iter().any(|x| l == *x || l.starts_with(&format!("{x}=")));
        }
        match (short, a.strip_prefix('-')) {
            (Some(c), Some(cluster)) if !cluster.is_empty() => {
                cluster.chars().all(|ch| ch.is_ascii_alphanumeric()) && cluster.contains(c)
            }
            _ => false,
        }
    })
}

fn positional(args: &[Word]) -> Vec<&str> {
    args.iter().map(|w| w.text.as_str()).filter(|a| !a.starts_with('-')).collect()
}

fn dangerous(reason: impl Into<String>) -> String {
    reason.into()
}

/// Why `name` with `args` (wrappers already stripped) is dangerous, if it is.
pub fn judge(name: &str, args: &[Word]) -> Option<String> {
    let texts: Vec<&str> = args.iter().map(|w| w.text.as_str()).collect();
    let recursive = has_opt(args, Some('r'), &["recursive"]) || has_opt(args, Some('R'), &[]);
    let d = match name {
        "rm" if texts.contains(&"--no-preserve-root") => dangerous("rm --no-preserve-root"),
        "rm" if recursive && positional(args).iter().any(|p| is_critical(p)) => {
            dangerous(format!("recursive rm of {}", positional(args).join(" ")))
        }
        // `fdisk -l`, `sfdisk -l`, `parted -l` only list (the spec table reads the rest).
        "fdisk" | "sfdisk" | "parted" if has_opt(args, Some('l'), &["list"]) => return None,
        n if n.starts_with("mkfs")
            || matches!(
                n,
                "mke2fs"
                    | "mkswap"
                    | "wipefs"
                    | "fdisk"
                    | "sfdisk"
                    | "parted"
                    | "sgdisk"
                    | "gdisk"
                    | "blkdiscard"
                    | "shred"
                    | "cryptsetup"
            ) =>
        {
            dangerous(format!("`{n}` rewrites disks"))
        }
        "dd" if texts.iter().any(|a| a.starts_with("of=/dev/")) => dangerous("dd onto a device"),
        "shutdown" | "reboot" | "halt" | "poweroff" => dangerous(format!("`{name}` stops the machine")),
        "init" | "telinit" if texts.iter().any(|a| matches!(*a, "0" | "6" | "1" | "S" | "s")) => {
            dangerous("changes the runlevel")
        }
        "systemctl"
            if texts.iter().any(|a| {
                matches!(*a, "reboot" | "poweroff" | "halt" | "kexec" | "emergency" | "rescue" | "isolate")
            }) =>
        {
            dangerous("stops or isolates the machine")
        }
        "systemctl"
            if texts.iter().any(|a| matches!(*a, "stop" | "disable" | "mask" | "kill"))
                && texts.iter().any(|a| a.starts_with("ssh") || a.starts_with("sshd")) =>
        {
            dangerous("stops SSH: it would lock everyone out")
        }
        "kill" | "pkill" if texts.iter().any(|a| matches!(*a, "1" | "-1")) && name == "kill" => {
            dangerous("kills init or every process")
        }
        "killall5" => dangerous("kills every process"),
        "chmod" | "chown" | "chgrp" if recursive && positional(args).iter().skip(1).any(|p| is_critical(p)) => {
            dangerous(format!("recursive {name} of a system directory"))
        }
        "iptables" | "ip6tables"
            if has_opt(args, Some('F'), &["flush"])
                || (has_opt(args, Some('P'), &["policy"]) && texts.contains(&"DROP")) =>
        {
            dangerous("flushes or closes the firewall: it may lock everyone out")
        }
        "nft" if texts.windows(2).any(|w| w == ["flush", "ruleset"]) => dangerous("flushes the firewall ruleset"),
        "crontab" if has_opt(args, Some('r'), &[]) => dangerous("deletes the whole crontab"),
        "userdel" | "deluser" if texts.contains(&"root") => dangerous("deletes root"),
        // A command run by -exec is judged where it is analysed (`system_tree`).
        "find" if texts.contains(&"-delete") && positional(args).first().is_some_and(|p| system_tree(p)) => {
            dangerous("find over a system tree with -delete")
        }
        "mv" if positional(args).iter().any(|p| matches!(*p, "/" | "/etc" | "/usr" | "/bin" | "/boot" | "/lib")) => {
            dangerous("moves a system directory")
        }
        _ => return None,
    };
    Some(d)
}
