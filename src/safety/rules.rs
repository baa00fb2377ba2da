//! What one command does, judged from its name and literal arguments.
//!
//! Two tables: commands and arguments that are **dangerous** (destroy data,
//! lock people out, stop the machine), and the **read-only allow-list**
//! (each entry checks the arguments that would make it write). A command in
//! neither table is mutating: unknown means "not proven read-only".

use super::parse::Word;

/// The verdict on one command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Judgement {
    /// Proven read-only.
    ReadOnly,
    /// Changes something, with the reason.
    Mutating(String),
    /// Destroys data or availability, with the reason.
    Dangerous(String),
}

/// Directories whose recursive removal or permission change ruins a system.
const CRITICAL_PATHS: &[&str] = &[
    "/", "/*", "/bin", "/boot", "/dev", "/etc", "/home", "/lib", "/lib64", "/opt", "/proc", "/root", "/sbin", "/srv",
    "/sys", "/usr", "/var", "~", "~/", "$HOME", "*", ".", "..",
];

fn is_critical(path: &str) -> bool {
    let trimmed = if path.len() > 1 { path.trim_end_matches('/') } else { path };
    CRITICAL_PATHS.contains(&trimmed) || CRITICAL_PATHS.contains(&path)
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

fn first_positional(args: &[Word]) -> Option<&str> {
    positional(args).into_iter().next()
}

fn mutating(reason: impl Into<String>) -> Judgement {
    Judgement::Mutating(reason.into())
}

fn dangerous(reason: impl Into<String>) -> Judgement {
    Judgement::Dangerous(reason.into())
}

/// Judges `name` with `args` (wrappers already stripped).
pub fn judge(name: &str, args: &[Word]) -> Judgement {
    if let Some(d) = dangerous_rule(name, args) {
        return d;
    }
    match read_only_rule(name, args) {
        Some(Ok(())) => Judgement::ReadOnly,
        Some(Err(reason)) => mutating(reason),
        None => mutating(format!("`{name}` is not a known read-only command")),
    }
}

fn dangerous_rule(name: &str, args: &[Word]) -> Option<Judgement> {
    let texts: Vec<&str> = args.iter().map(|w| w.text.as_str()).collect();
    let recursive = has_opt(args, Some('r'), &["recursive"]) || has_opt(args, Some('R'), &[]);
    let d = match name {
        "rm" if texts.contains(&"--no-preserve-root") => dangerous("rm --no-preserve-root"),
        "rm" if recursive && positional(args).iter().any(|p| is_critical(p)) => {
            dangerous(format!("recursive rm of {}", positional(args).join(" ")))
        }
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
        "find"
            if (texts.contains(&"-delete") || texts.contains(&"-exec") || texts.contains(&"-execdir"))
                && positional(args).first().is_some_and(|p| is_critical(p) && p.starts_with(['/', '~', '$'])) =>
        {
            dangerous("find over a system tree with -delete or -exec")
        }
        "mv" if positional(args).iter().any(|p| matches!(*p, "/" | "/etc" | "/usr" | "/bin" | "/boot" | "/lib")) => {
            dangerous("moves a system directory")
        }
        _ => return None,
    };
    Some(d)
}

/// Whether `name` stays read-only whatever its (possibly dynamic) arguments.
pub fn is_flag_insensitive(name: &str) -> bool {
    FLAG_INSENSITIVE.contains(&name)
}

/// Read-only whatever their arguments (file names, patterns): dynamic arguments are fine.
const FLAG_INSENSITIVE: &[&str] = &[
    "cat",
    "head",
    "wc",
    "grep",
    "egrep",
    "fgrep",
    "zgrep",
    "zcat",
    "bzcat",
    "xzcat",
    "echo",
    "printf",
    "stat",
    "file",
    "ls",
    "ll",
    "du",
    "md5sum",
    "sha1sum",
    "sha256sum",
    "sha512sum",
    "readlink",
    "realpath",
    "basename",
    "dirname",
    "getent",
    "id",
    "groups",
    "ping",
    "dig",
    "host",
    "nslookup",
    "test",
    "[",
    "[[",
    "true",
    "false",
    "pgrep",
    "pidof",
    "namei",
    "getfacl",
    "strings",
    "xxd",
    "od",
    "hexdump",
    "cut",
    "tr",
    "uniq",
    "column",
    "diff",
    "cmp",
    "rev",
    "nl",
    "sleep",
    "tail",
    "which",
    "whereis",
    "type",
];

/// Read-only without further checks, beyond [`FLAG_INSENSITIVE`]: their flags only
/// change what is shown (arguments that change state are caught by the arms above).
const ALSO_READ_ONLY: &[&str] = &[
    "rg",
    "pwd",
    "whoami",
    "uname",
    "uptime",
    "df",
    "free",
    "ps",
    "lsof",
    "ss",
    "netstat",
    "tree",
    "lsblk",
    "blkid",
    "findmnt",
    "lscpu",
    "lsmod",
    "lspci",
    "lsusb",
    "lshw",
    "nproc",
    "vmstat",
    "iostat",
    "mpstat",
    "pidstat",
    "sar",
    "w",
    "who",
    "last",
    "lastlog",
    "lastb",
    "users",
    "printenv",
    "locate",
    "cksum",
    "comm",
    "jq",
    "arch",
    "tty",
    "locale",
    "ulimit",
    "pstree",
    "iotop",
    "sensors",
    "numactl",
    "dmidecode",
    "ethtool",
    "arp",
    "route",
    "tracepath",
    "traceroute",
    "mtr",
    "ping6",
    "nc",
    "ncat",
    "whois",
    "base64",
    "less",
    "more",
    "zless",
    "fold",
    "fmt",
    "expand",
    "seq",
    "systemd-analyze",
    "htop",
    "atop",
    "glances",
    "apt-cache",
    "needrestart",
    "exit",
    "return",
    ":",
];

fn read_only_rule(name: &str, args: &[Word]) -> Option<Result<(), String>> {
    let texts: Vec<&str> = args.iter().map(|w| w.text.as_str()).collect();
    let sub = first_positional(args);
    let refuse = |reason: String| Some(Err(reason));
    let check = |ok: bool, reason: &str| if ok { Some(Ok(())) } else { Some(Err(reason.to_string())) };
    match name {
        "date" => check(!has_opt(args, Some('s'), &["set"]), "date --set changes the clock"),
        "hostname" => check(positional(args).is_empty(), "hostname NAME renames the host"),
        "env" | "printenv" => check(positional(args).is_empty(), "env runs a command"),
        "ethtool" => check(
            !texts.iter().any(|a| a.starts_with("-s") || a.starts_with("-K") || a.starts_with("-G")),
            "ethtool changes interface settings",
        ),
        "arp" | "route" => check(
            !texts.iter().any(|a| matches!(*a, "-d" | "-s" | "add" | "del" | "delete" | "flush")),
            "changes the routing or ARP table",
        ),
        "nc" | "ncat" => check(
            has_opt(args, Some('z'), &[])
                && !has_opt(args, Some('l'), &["listen"])
                && !has_opt(args, Some('e'), &["exec"]),
            "nc without -z sends data or listens",
        ),
        "base64" | "xxd" => check(!has_opt(args, Some('o'), &["output"]), "writes an output file"),
        n if FLAG_INSENSITIVE.contains(&n) || ALSO_READ_ONLY.contains(&n) => Some(Ok(())),
        "find" => {
            let bad = ["-delete", "-exec", "-execdir", "-ok", "-okdir", "-fprint", "-fprint0", "-fprintf", "-fls"];
            match texts.iter().find(|a| bad.contains(a)) {
                Some(a) => refuse(format!("find {a} changes files or runs commands")),
                None => Some(Ok(())),
            }
        }
        "sed" => {
            if has_opt(args, Some('i'), &["in-place"]) || texts.iter().any(|a| a.starts_with("-i")) {
                return refuse("sed -i edits files in place".into());
            }
            let writes = texts.iter().any(|a| {
                a.contains("/w ")
                    || a.ends_with("/w")
                    || a.starts_with("w ")
                    || a.contains(";w ")
                    || a.contains("/e") && a.ends_with("/e")
            });
            check(!writes, "the sed script writes files or runs commands")
        }
        "awk" | "gawk" | "mawk" => {
            let program = texts.iter().find(|a| !a.starts_with('-')).copied().unwrap_or("");
            let risky = ["system", "getline", ">", "|", "fflush", "close("];
            check(
                !risky.iter().any(|r| program.contains(r)) && !has_opt(args, Some('f'), &[]),
                "the awk program may write files or run commands",
            )
        }
        "sort" => check(!has_opt(args, Some('o'), &["output"]), "sort -o writes a file"),
        "tee" => refuse("tee writes files".into()),
        "dd" => check(!texts.iter().any(|a| a.starts_with("of=")), "dd of= writes a file"),
        "top" => check(has_opt(args, Some('b'), &[]), "top without -b is interactive"),
        "uniq" => check(positional(args).len() <= 1, "uniq with two files writes the second"),
        "curl" => {
            let bad_short = ['o', 'O', 'T', 'F', 'd', 'X', 'K', 'c'];
            let bad_long = [
                "output",
                "remote-name",
                "upload-file",
                "data",
                "data-binary",
                "data-raw",
                "data-urlencode",
                "form",
                "request",
                "config",
                "cookie-jar",
                "json",
                "output-dir",
            ];
            let bad = bad_short.iter().any(|c| has_opt(args, Some(*c), &[])) || has_opt(args, None, &bad_long);
            let method_get =
                texts.windows(2).any(|w| (w[0] == "-X" || w[0] == "--request") && matches!(w[1], "GET" | "HEAD"));
            check(!bad || (method_get && !has_opt(args, Some('o'), &["output"])), "curl writes files or sends data")
        }
        "wget" => {
            let to_stdout = texts.windows(2).any(|w| matches!(w[0], "-O" | "--output-document") && w[1] == "-")
                || texts.iter().any(|a| *a == "-O-" || *a == "-qO-" || *a == "--output-document=-");
            check(to_stdout || texts.contains(&"--spider"), "wget saves files (use -O - or --spider)")
        }
        "journalctl" => check(
            !texts.iter().any(|a| {
                a.starts_with("--vacuum")
                    || matches!(
                        *a,
                        "--rotate"
                            | "--flush"
                            | "--sync"
                            | "--relinquish-var"
                            | "--smart-relinquish-var"
                            | "--setup-keys"
                            | "--update-catalog"
                    )
            }),
            "journalctl maintenance changes the journal",
        ),
        "dmesg" => check(
            !has_opt(args, Some('c'), &["clear", "read-clear", "console-off", "console-on", "console-level"])
                && !has_opt(args, Some('C'), &[])
                && !has_opt(args, Some('n'), &[])
                && !has_opt(args, Some('D'), &[])
                && !has_opt(args, Some('E'), &[]),
            "dmesg clears or reconfigures the kernel log",
        ),
        "systemctl" => subcommand(
            sub,
            &[
                "status",
                "show",
                "is-active",
                "is-enabled",
                "is-failed",
                "is-system-running",
                "list-units",
                "list-unit-files",
                "list-timers",
                "list-sockets",
                "list-dependencies",
                "list-jobs",
                "cat",
                "help",
                "get-default",
                "show-environment",
            ],
            "systemctl",
            false,
        ),
        "service" => check(
            texts.len() >= 2 && matches!(texts[1], "status") || texts.contains(&"--status-all"),
            "service other than status changes a service",
        ),
        "ip" => {
            let objects = [
                "addr",
                "address",
                "a",
                "link",
                "l",
                "route",
                "r",
                "neigh",
                "neighbour",
                "n",
                "rule",
                "maddr",
                "tunnel",
                "netns",
                "-s",
                "-br",
                "-j",
                "-4",
                "-6",
            ];
            let verb = positional(args).into_iter().find(|p| !objects.contains(p) && !p.starts_with('-'));
            check(
                verb.is_none_or(|v| matches!(v, "show" | "list" | "ls" | "get" | "lst")),
                "ip with a verb other than show/list changes the network",
            )
        }
        "ifconfig" => check(positional(args).len() <= 1, "ifconfig with settings changes an interface"),
        "mount" => check(positional(args).is_empty(), "mount with arguments mounts a filesystem"),
        "sysctl" => check(
            !has_opt(args, Some('w'), &["write", "load", "system"])
                && !has_opt(args, Some('p'), &[])
                && !texts.iter().any(|a| a.contains('=')),
            "sysctl -w or a=b changes kernel settings",
        ),
        "kubectl" | "oc" => subcommand(
            sub,
            &[
                "get",
                "describe",
                "logs",
                "top",
                "explain",
                "version",
                "cluster-info",
                "api-resources",
                "api-versions",
                "events",
                "auth",
                "config",
            ],
            name,
            texts.contains(&"config")
                && !texts.iter().any(|a| matches!(*a, "view" | "get-contexts" | "current-context" | "get-clusters")),
        ),
        "docker" | "podman" | "nerdctl" => subcommand(
            sub,
            &[
                "ps", "images", "logs", "inspect", "info", "version", "top", "port", "diff", "history", "events",
                "stats",
            ],
            name,
            texts.contains(&"stats") && !texts.contains(&"--no-stream"),
        ),
        "crictl" => subcommand(
            sub,
            &["ps", "pods", "images", "logs", "inspect", "inspectp", "info", "version", "stats"],
            "crictl",
            false,
        ),
        "git" => subcommand(
            git_subcommand(args),
            &[
                "status",
                "log",
                "diff",
                "show",
                "branch",
                "remote",
                "rev-parse",
                "describe",
                "blame",
                "ls-files",
                "grep",
                "shortlog",
                "tag",
            ],
            "git",
            texts
                .iter()
                .any(|a| matches!(*a, "-d" | "-D" | "-m" | "-M" | "add" | "remove" | "rm" | "set-url" | "--delete")),
        ),
        "apt" => {
            subcommand(sub, &["list", "show", "policy", "search", "depends", "rdepends", "changelog"], "apt", false)
        }
        "dpkg" => check(
            texts.iter().any(|a| {
                matches!(
                    *a,
                    "-l" | "-L"
                        | "-s"
                        | "-S"
                        | "-p"
                        | "--list"
                        | "--listfiles"
                        | "--status"
                        | "--search"
                        | "--print-architecture"
                        | "--get-selections"
                        | "--audit"
                        | "-C"
                )
            }),
            "dpkg installs or removes packages",
        ),
        "dpkg-query" => Some(Ok(())),
        "rpm" => check(
            texts.iter().any(|a| a.starts_with("-q") || *a == "--query" || a.starts_with("-V") || *a == "--verify"),
            "rpm without -q installs or removes packages",
        ),
        "yum" | "dnf" => subcommand(
            sub,
            &["list", "info", "repolist", "check-update", "search", "provides", "history", "deplist", "repoquery"],
            name,
            texts.contains(&"undo") || texts.contains(&"rollback"),
        ),
        "snap" => subcommand(sub, &["list", "info", "services", "changes", "version"], "snap", false),
        "timedatectl" | "hostnamectl" | "localectl" | "networkctl" | "resolvectl" | "loginctl" | "busctl"
        | "coredumpctl" => subcommand(
            sub.or(Some("status")),
            &[
                "status",
                "show",
                "list",
                "list-sessions",
                "list-users",
                "show-session",
                "show-user",
                "query",
                "statistics",
                "lldp",
                "timesync-status",
                "show-timesync",
                "list-timezones",
                "tree",
                "info",
                "dump",
                "debug",
            ],
            name,
            false,
        ),
        "nmcli" => check(
            !texts.iter().any(|a| {
                matches!(
                    *a,
                    "up" | "down"
                        | "modify"
                        | "mod"
                        | "add"
                        | "delete"
                        | "del"
                        | "connect"
                        | "disconnect"
                        | "on"
                        | "off"
                        | "reload"
                        | "set"
                        | "edit"
                        | "import"
                )
            }),
            "nmcli changes network settings",
        ),
        "firewall-cmd" => check(
            texts.iter().all(|a| {
                a.starts_with("--list")
                    || a.starts_with("--get")
                    || a.starts_with("--query")
                    || matches!(*a, "--state" | "--zone")
                    || !a.starts_with("--")
            }),
            "firewall-cmd changes the firewall",
        ),
        "ufw" => check(matches!(sub, Some("status") | Some("show")), "ufw changes the firewall"),
        "iptables" | "ip6tables" | "iptables-save" | "ip6tables-save" => check(
            name.ends_with("-save") || has_opt(args, Some('L'), &["list"]) || has_opt(args, Some('S'), &["list-rules"]),
            "iptables without -L/-S changes the firewall",
        ),
        "nft" => check(matches!(sub, Some("list")), "nft other than list changes the firewall"),
        "lvs" | "pvs" | "vgs" | "lvdisplay" | "pvdisplay" | "vgdisplay" | "lvscan" | "pvscan" | "vgscan" => {
            Some(Ok(()))
        }
        "zpool" | "zfs" => subcommand(sub, &["status", "list", "get", "iostat", "history", "events"], name, false),
        "mdadm" => check(
            texts.iter().any(|a| matches!(*a, "--detail" | "-D" | "--examine" | "-E" | "--query" | "-Q")),
            "mdadm changes arrays",
        ),
        "smartctl" => check(
            !texts.iter().any(|a| {
                a.starts_with("-t")
                    || a.starts_with("--test")
                    || a.starts_with("-s")
                    || a.starts_with("--smart")
                    || a.starts_with("-o")
            }),
            "smartctl starts tests or changes settings",
        ),
        "ipmitool" => check(
            texts.iter().any(|a| matches!(*a, "sensor" | "sdr" | "sel" | "fru" | "mc"))
                && !texts.iter().any(|a| matches!(*a, "clear" | "set" | "reset" | "power")),
            "ipmitool changes the BMC or power",
        ),
        "openssl" => subcommand(
            sub,
            &[
                "x509",
                "s_client",
                "version",
                "ciphers",
                "verify",
                "req",
                "crl",
                "asn1parse",
                "dgst",
                "rsa",
                "ec",
                "pkey",
            ],
            "openssl",
            has_opt(args, None, &["out"]) || texts.contains(&"-out"),
        ),
        "nginx" => check(
            texts.iter().any(|a| matches!(*a, "-t" | "-T" | "-v" | "-V")),
            "nginx other than -t/-T starts or signals the server",
        ),
        "apachectl" | "apache2ctl" => check(
            matches!(sub, Some("-t") | Some("configtest") | Some("-S") | Some("-M") | Some("-v"))
                || texts.iter().any(|a| matches!(*a, "-t" | "-S" | "-M" | "-v")),
            "apachectl other than configtest controls the server",
        ),
        "sshd" => check(texts.iter().any(|a| matches!(*a, "-t" | "-T")), "sshd other than -t/-T starts a daemon"),
        "visudo" => check(texts.contains(&"-c"), "visudo edits sudoers"),
        "named-checkconf" | "named-checkzone" | "haproxy" if name != "haproxy" || texts.contains(&"-c") => Some(Ok(())),
        "certbot" => subcommand(sub, &["certificates"], "certbot", false),
        "lsattr" => Some(Ok(())),
        _ => None,
    }
}

/// Read-only when the first positional argument is one of `allowed` (and `extra_refuse` is false).
fn subcommand(sub: Option<&str>, allowed: &[&str], name: &str, extra_refuse: bool) -> Option<Result<(), String>> {
    match sub {
        Some(s) if allowed.contains(&s) && !extra_refuse => Some(Ok(())),
        Some(s) => Some(Err(format!("`{name} {s}` is not a read-only subcommand"))),
        None => Some(Err(format!("`{name}` without a read-only subcommand"))),
    }
}

/// The git subcommand after global options such as `-C DIR` and `-c key=value`.
fn git_subcommand(args: &[Word]) -> Option<&str> {
    let mut i = 0;
    while let Some(w) = args.get(i) {
        match w.text.as_str() {
            "-C" | "-c" | "--git-dir" | "--work-tree" | "--namespace" => i += 2,
            a if a.starts_with('-') => i += 1,
            a => return Some(a),
        }
    }
    None
}
