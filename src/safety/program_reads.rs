//! Reads that reach a credential or a side-effect file by a way the word-by-word checks miss
//! (ADR 0026, "Credential reads need an approval"): a recursive search or `find -exec` over a
//! folder that holds credentials, names an `xargs` reader gets from its input, files named only
//! at run time, options that read a file (`dd if=`, binutils' `@FILE`, `git config -f`, yq's
//! `load`), and programs that print secrets by themselves (`getent shadow`,
//! `named-checkconf -p`) or touch hardware (`lspci -xxx`).

use super::credentials::{DISK_METADATA, METADATA_ONLY, credential_read, folder_credential};
use super::invocation::{FoundCommand, Invocation};
use super::parse::SimpleCommand;
use super::paths::{normal_path, side_effect_path};
use super::words::Word;
use super::workdir::Workdirs;

/// Programs that print what the files they are given hold (so a file named only at run time, or
/// handed over by `find` or `xargs`, may put a credential in front of the model).
pub const CONTENT_READERS: &[&str] = &[
    "cat", "tac", "head", "tail", "less", "more", "most", "nl", "grep", "egrep", "fgrep", "rgrep", "zgrep", "zegrep",
    "zfgrep", "zcat", "zless", "zmore", "bzcat", "xzcat", "lzcat", "zstdcat", "sed", "awk", "gawk", "mawk", "cut",
    "paste", "sort", "uniq", "column", "fold", "fmt", "pr", "rev", "expand", "unexpand", "tsort", "comm", "join",
    "diff", "cmp", "sdiff", "xxd", "od", "hexdump", "hd", "base64", "base32", "basenc", "strings", "jq", "yq",
    "openssl", "dd", "iconv", "look", "tr", "vis", "bat", "batcat", "view", "split", "csplit", "shuf", "ccat",
];

/// binutils programs that read more options from `@FILE` (and print an unreadable option back).
const RESPONSE_FILE_READERS: &[&str] = &[
    "strings",
    "objdump",
    "readelf",
    "nm",
    "size",
    "ar",
    "addr2line",
    "c++filt",
    "elfedit",
    "ranlib",
    "strip",
    "objcopy",
    "gprof",
    "ld",
    "as",
];

/// Why opening `word` has a side effect: its text as it is, then resolved against each folder the
/// line may be in (`cd /dev && cat ./port`), and the file of `if=FILE`.
pub fn side_effect(word: &Word, dirs: &Workdirs) -> Option<String> {
    if let Some(why) = side_effect_path(word, dirs.changed) {
        return Some(why);
    }
    let text = word.text.strip_prefix("if=").unwrap_or(&word.text);
    if word.dynamic || text.is_empty() {
        return None;
    }
    let direct = Word { text: text.to_string(), ..word.clone() };
    if text.len() != word.text.len()
        && let Some(why) = side_effect_path(&direct, dirs.changed)
    {
        return Some(why);
    }
    if text.starts_with(['/', '~']) || !(text.contains('/') || dirs.changed) {
        return None;
    }
    dirs.resolve(text).into_iter().find_map(|path| {
        side_effect_path(&Word { text: path, ..word.clone() }, false).map(|why| format!("{why} (from `{text}`)"))
    })
}

/// Whether `name args` reads a key but prints none of it: `openssl rsa|pkey|ec|x509|req -noout`
/// without `-text` prints only what it is asked (`-modulus`, `-dates`, `-check`), all public.
pub fn prints_no_secret(name: &str, args: &[Word]) -> bool {
    let texts: Vec<&str> = args.iter().map(|w| w.text.as_str()).collect();
    name == "openssl"
        && texts.first().is_some_and(|sub| matches!(*sub, "rsa" | "pkey" | "ec" | "x509" | "req"))
        && texts.contains(&"-noout")
        && !texts.iter().any(|t| matches!(*t, "-text" | "-out" | "-pubout" | "-traditional") || t.starts_with("-out"))
}

/// Where the names a command reads on its input come from (for `xargs READER`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Feeder {
    /// Not fed by a pipe.
    #[default]
    None,
    /// Fed by a pipe: why those names may be credentials, if they may.
    Pipe(Option<String>),
}

impl Feeder {
    /// What feeds `cmd` in its pipeline: `find ROOT…` and `ls PATH…` are judged by their folders,
    /// anything else gives names only known at run time.
    pub fn of(cmd: &SimpleCommand, commands: &[SimpleCommand], dirs: &Workdirs) -> Self {
        let Some((id, pos)) = cmd.pipeline.filter(|(_, pos)| *pos > 0) else { return Feeder::None };
        let Some(producer) = commands.iter().find(|c| c.pipeline == Some((id, pos - 1))) else {
            return Feeder::Pipe(Some("the names it reads are only known at run time".into()));
        };
        let words: Vec<&Word> = producer.words.iter().skip_while(|w| w.text == "sudo").collect();
        let Some((first, args)) = words.split_first() else { return Feeder::Pipe(Some("no producer".into())) };
        let why = match first.text.as_str() {
            "find" => {
                let roots: Vec<&Word> =
                    args.iter().copied().take_while(|w| !w.text.starts_with(['-', '(', '!'])).collect();
                let names = single_name(args.iter().map(|w| w.text.as_str()));
                find_roots(&roots, names.as_deref(), dirs)
            }
            "ls" => args.iter().filter(|w| !w.text.starts_with('-')).find_map(|w| {
                if w.dynamic {
                    return Some(format!("`{}` is only known at run time", w.text));
                }
                credential_read(w, dirs).or_else(|| folder_credential(&w.text, dirs, false, None))
            }),
            _ => Some(format!("the names it reads come from `{}`, only known at run time", first.text)),
        };
        Feeder::Pipe(why)
    }
}

/// find's single `-name`/`-iname` test when its expression has no alternative or negation: every
/// file it hands on has such a name.
fn single_name<'a>(words: impl Iterator<Item = &'a str>) -> Option<String> {
    let words: Vec<&str> = words.collect();
    if words.iter().any(|w| matches!(*w, "-o" | "-or" | "!" | "-not" | ",")) {
        return None;
    }
    let names: Vec<&str> = words.windows(2).filter(|p| matches!(p[0], "-name" | "-iname")).map(|p| p[1]).collect();
    // -iname: a pattern's case does not narrow it; only a single, case-exact test narrows.
    (names.len() == 1 && !words.contains(&"-iname")).then(|| names[0].to_string())
}

/// Why the files under find's starting points (`.` when none) may be credentials.
fn find_roots(roots: &[&Word], names: Option<&str>, dirs: &Workdirs) -> Option<String> {
    let dot = Word::literal(".");
    let roots: Vec<&Word> = if roots.is_empty() { vec![&dot] } else { roots.to_vec() };
    roots.iter().find_map(|root| {
        if root.dynamic || root.glob {
            return Some(format!("find starts in `{}`, only known at run time", root.text));
        }
        folder_credential(&root.text, dirs, true, names)
    })
}

/// Why find's `-exec READER {}` may hand a credential to its command.
pub fn found_files(find: &Invocation, command: &FoundCommand, dirs: &Workdirs) -> Option<String> {
    let program = command.words.iter().map(|w| w.text.as_str()).find(|w| *w != "sudo")?;
    let program = program.rsplit('/').next().unwrap_or(program);
    // Metadata and digests (`ls -l`, `sha256sum`) print none of a file's contents.
    if !command.takes_files() || METADATA_ONLY.contains(&program) || DISK_METADATA.contains(&program) {
        return None;
    }
    let roots: Vec<&Word> = find.operands.iter().collect();
    let names: Vec<&str> = find.values("-name").collect();
    let narrowing = find.values("-iname").next().is_none()
        && !["-o", "-or", "!", "-not"].iter().any(|o| find.has(o))
        && names.len() == 1;
    let name = narrowing.then(|| names[0]);
    find_roots(&roots, name, dirs).map(|why| format!("find hands `{program}` files it finds: {why}"))
}

/// Why the files find hands a command (`{}`) may include one whose opening has side effects
/// (`/proc/kmsg`, `/dev/watchdog`, trace pipes): a starting point in `/proc`, `/sys` or `/dev`,
/// `/` without `-xdev`, a relative one after a `cd`, or symbolic links followed (`-L`, `-H`).
pub fn found_files_reach_special(find: &Invocation, after_cd: bool) -> Option<String> {
    if let Some(follow) = ["-L", "-H", "-follow"].into_iter().find(|o| find.has(o)) {
        return Some(format!("find {follow} follows symbolic links: the files it hands its command could be anywhere"));
    }
    let same_device = find.has("-xdev") || find.has("-mount");
    let starts: Vec<&Word> = find.operands.iter().collect();
    if starts.is_empty() && after_cd {
        return Some(
            "find starts in a directory chosen by an earlier `cd`; its command could be handed /proc/kmsg".into(),
        );
    }
    for start in starts {
        let path = normal_path(&start.text);
        let special =
            ["/proc", "/sys", "/dev", "/net"].iter().any(|p| path == *p || path.starts_with(&format!("{p}/")));
        if special || (path == "/" && !same_device) || (!path.starts_with('/') && after_cd) {
            return Some(format!(
                "find hands its command the files under `{}`, which may include /proc/kmsg or /dev/watchdog \
                 (opening them has side effects); start elsewhere, or add -xdev to `/`",
                start.text
            ));
        }
    }
    None
}

/// Why a program's own options make it read a credential or touch hardware (checked on the words
/// as typed).
pub fn check(name: &str, args: &[Word], feeder: &Feeder) -> Option<String> {
    let texts: Vec<&str> = args.iter().map(|w| w.text.as_str()).collect();
    let short = |letter: char| {
        texts
            .iter()
            .filter(|t| t.starts_with('-') && !t.starts_with("--"))
            .map(|t| t.matches(letter).count())
            .sum::<usize>()
    };
    if CONTENT_READERS.contains(&name)
        && let Some(word) = args.iter().find(|w| !w.text.starts_with('-') && run_time_file(w))
    {
        return Some(format!(
            "`{name}` reads `{}`, a file named only at run time (it could be a credential); approve it to run it",
            word.text
        ));
    }
    match name {
        "getent" => {
            texts.iter().find(|t| !t.starts_with('-')).filter(|db| matches!(**db, "shadow" | "gshadow")).map(|db| {
                format!("`getent {db}` prints password hashes: they would reach the model (approve it to run it)")
            })
        }
        "named-checkconf" if short('p') > 0 && short('x') == 0 && !texts.contains(&"--") => Some(
            "`named-checkconf -p` prints the configuration with its keys (add -x to hide them, or approve it)".into(),
        ),
        "yq" => texts
            .iter()
            .find(|t| yq_reads_outside(t))
            .map(|t| format!("the yq expression `{t}` reads a file or the environment (approve it to run it)")),
        "lspci" if short('x') >= 3 => {
            Some("`lspci -xxx` reads all of a device's configuration space, which can hang some devices".into())
        }
        "xargs" => xargs_reader(args).and_then(|reader| {
            let why = match feeder {
                Feeder::Pipe(why) => why.clone(),
                Feeder::None => Some("the names it reads are only known at run time".into()),
            };
            why.map(|why| format!("xargs hands `{reader}` file names: {why}"))
        }),
        _ if RESPONSE_FILE_READERS.contains(&name) => texts.iter().find(|t| t.starts_with('@')).map(|t| {
            format!(
                "`{name} {t}` reads its options from a file, and prints what it cannot parse (approve it to run it)"
            )
        }),
        _ => None,
    }
}

/// Whether `word` names its file only at run time in a way merlya cannot follow: a command
/// substitution or a parameter expansion with an operator (`$HOME` is resolved as `~`).
fn run_time_file(word: &Word) -> bool {
    if !word.dynamic {
        return false;
    }
    let t = word.text.as_str();
    if !t.contains(['$', '`']) {
        return false; // `~/x`: a home, resolved by the credential check
    }
    // `/proc/$(pgrep -o sshd)/status`: a literal last name after the expansions decides the file's
    // name, and a credential by that name is caught as a relative path is.
    let last = [t.rfind("$("), t.rfind('`'), t.rfind("${"), t.rfind('$')].into_iter().flatten().max().unwrap_or(0);
    if let Some(slash) = t[last..].rfind('/') {
        let name = &t[last + slash + 1..];
        if !name.is_empty() && !name.contains([')', '}', '`', '*', '?', '[']) {
            return super::credentials::credential_read(&Word::literal(name), &Workdirs::unknown()).is_some();
        }
    }
    if t.contains("$(") || t.contains('`') {
        return true;
    }
    let mut rest = t;
    while let Some(start) = rest.find("${") {
        let inner = &rest[start + 2..];
        let name_end = inner.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(inner.len());
        if name_end == 0 || !inner[name_end..].starts_with('}') {
            return true;
        }
        rest = &inner[name_end..];
    }
    false
}

/// The program an `xargs` runs, when it prints the contents of the files it is given.
fn xargs_reader(args: &[Word]) -> Option<String> {
    const VALUED: &[&str] = &["-I", "-n", "-L", "-P", "-d", "-E", "-s", "-a", "-i", "-l", "-e"];
    let mut words = args.iter().map(|w| w.text.as_str());
    while let Some(w) = words.next() {
        if w == "--" {
            return words.next().map(str::to_string).filter(|p| reader(p));
        }
        if w.starts_with('-') {
            if VALUED.contains(&w) || (w.starts_with("--") && !w.contains('=') && w != "--null" && w != "--verbose") {
                if [
                    "--arg-file",
                    "--delimiter",
                    "--max-args",
                    "--max-lines",
                    "--max-procs",
                    "--replace",
                    "--eof",
                    "--max-chars",
                ]
                .contains(&w)
                {
                    words.next();
                }
                if VALUED.contains(&w) {
                    words.next();
                }
            }
            continue;
        }
        let program = if w == "sudo" { words.next()? } else { w };
        return reader(program).then(|| program.to_string());
    }
    None
}

fn reader(program: &str) -> bool {
    CONTENT_READERS.contains(&program.rsplit('/').next().unwrap_or(program))
}

/// Whether a yq expression calls a function that reads a file or the environment.
fn yq_reads_outside(text: &str) -> bool {
    let compact: String = text.chars().filter(|c| !c.is_whitespace()).collect();
    ["load(", "load_", "env(", "strenv(", "envsubst", "$ENV"].iter().any(|f| compact.contains(f))
}

/// Why a recursive search (`grep -r`, `diff -r`) or git's reads outside a repository
/// (`grep --no-index`, `diff --no-index`, `config -f FILE`) may reach a credential.
pub fn check_reading(inv: &Invocation, dirs: &Workdirs) -> Option<String> {
    let program = inv.program.as_str();
    if program == "git" {
        return git_reads(inv, dirs);
    }
    let grep = matches!(program, "grep" | "egrep" | "fgrep" | "rgrep" | "zgrep" | "zegrep" | "zfgrep");
    let recursive = ["-r", "-R", "--recursive", "--dereference-recursive"].iter().any(|o| inv.has(o))
        || inv.values("-d").chain(inv.values("--directories")).any(|v| v == "recurse")
        || program == "rgrep";
    if !(grep || program == "diff") || !recursive {
        return None;
    }
    let pattern_given = !grep || ["-e", "--regexp", "-f", "--file"].iter().any(|o| inv.has(o));
    let starts: Vec<&Word> = inv.operands.iter().skip(usize::from(!pattern_given)).collect();
    let dot = Word::literal(".");
    let starts = if starts.is_empty() { vec![&dot] } else { starts };
    starts.iter().find_map(|start| {
        if start.dynamic {
            return Some(format!("{program} -r from `{}`, a folder only known at run time", start.text));
        }
        let text = if start.glob { glob_parent(&start.text) } else { start.text.clone() };
        folder_credential(&text, dirs, true, None).map(|why| format!("{program} -r {why}"))
    })
}

/// The folder every expansion of a glob stays in (`/var/log/app/*.log` → `/var/log/app`).
fn glob_parent(text: &str) -> String {
    let literal = &text[..text.find(['*', '?', '[']).unwrap_or(text.len())];
    literal.rsplit_once('/').map_or(".".to_string(), |(dir, _)| if dir.is_empty() { "/".into() } else { dir.into() })
}

/// git reading files that are not a repository's: `grep`/`diff --no-index` read any file or
/// folder named (`-C DIR` moves where relative names point), `config -f FILE` a file.
fn git_reads(inv: &Invocation, dirs: &Workdirs) -> Option<String> {
    let mut dirs = dirs.clone();
    for dir in inv.values("-C") {
        let resolved = dirs.resolve(dir);
        dirs = Workdirs { dirs: resolved, unknown: dirs.unknown || dir.contains(['$', '`']), changed: true };
    }
    let sub = inv.path.first().map(String::as_str);
    let files: Vec<String> = inv.values("-f").chain(inv.values("--file")).map(str::to_string).collect();
    if sub == Some("config") {
        return files
            .iter()
            .find_map(|f| credential_read(&Word::literal(f.as_str()), &dirs))
            .map(|why| format!("git config -f {why}"));
    }
    if !inv.has("--no-index") || !matches!(sub, Some("grep" | "diff")) {
        return None;
    }
    let recursive = sub == Some("grep");
    let operands: Vec<&Word> = inv.operands.iter().collect();
    if recursive
        && let Some(why) = folder_credential(".", &dirs, true, None).filter(|_| operands.iter().all(|o| o.text != "--"))
    {
        // No path named: git grep searches the whole folder.
        if operands.len() <= 1 {
            return Some(format!("git grep --no-index {why}"));
        }
    }
    operands.iter().find_map(|word| {
        if word.dynamic {
            return Some(format!("git {} --no-index reads `{}`, only known at run time", sub.unwrap_or(""), word.text));
        }
        credential_read(word, &dirs)
            .or_else(|| recursive.then(|| folder_credential(&word.text, &dirs, true, None)).flatten())
    })
}

#[cfg(test)]
mod tests {
    use crate::safety::analyze;

    fn refused(cmd: &str) -> bool {
        !analyze(cmd).is_read_only()
    }

    #[test]
    fn recursive_reads_over_credential_folders_need_approval() {
        for cmd in [
            "grep -r . /root/.ssh",
            "grep -rn password /etc/",
            "grep -r token .kube",
            "grep -rn password .",
            "rgrep x /root",
            "diff -r .ssh /tmp",
            "find /etc -name shadow -exec cat {} \\;",
            "find /home -name id_rsa -exec cat {} \\;",
            "find . -maxdepth 3 -name credentials -exec cat {} +",
            "find /root/.ssh -name 'id*' | xargs cat",
            "ls /etc/ssl/private/* | xargs head",
            "cat list | xargs cat",
            "git -C /etc grep --no-index -h root -- shadow",
            "git -C /root/.ssh grep --no-index -h .",
            "git diff --no-index /dev/null .ssh/id_rsa",
            "git config -f /etc/wireguard/wg0.conf --list",
        ] {
            assert!(refused(cmd), "{cmd}");
        }
        for cmd in [
            "grep -r PATTERN /var/log",
            "grep -rn server_name /etc/nginx/sites-enabled",
            "find /var/log -name '*.log' -exec tail -n1 {} \\;",
            "find /etc/nginx -name '*.conf' | xargs grep -l server_name",
            "find /etc/ssl/certs -name '*.pem' -exec sha256sum {} +",
            "find /etc -name '*.conf' -exec ls -l {} +",
            "git config --list",
        ] {
            assert!(!refused(cmd), "{cmd}: {:?}", analyze(cmd).reasons);
        }
    }

    #[test]
    fn options_and_programs_that_read_secrets_need_approval() {
        for cmd in [
            "dd if=/etc/shadow",
            "dd if=/dev/port bs=1 count=1",
            "cd /dev && dd if=watchdog count=0",
            "cd /dev && cat ./port",
            "getent shadow root",
            "getent -i gshadow",
            "strings @/etc/hostname",
            "named-checkconf -p",
            "named-checkconf -pz /etc/named.conf",
            "yq 'load_str(\"/etc/shadow\")' /etc/netplan/a.yaml",
            "yq '.a = strenv(AWS_SECRET)' /etc/netplan/a.yaml",
            "lspci -xxx",
            "lspci -vvv -xxxx",
            "cat \"$(printf /etc/sha%s dow)\"",
            "cat ${x:-/etc/shadow}",
            "cat $HOME/.aws/credentials",
            "head ${f/x/y}",
        ] {
            assert!(refused(cmd), "{cmd}");
        }
        for cmd in [
            "dd if=/dev/zero bs=1 count=1",
            "getent passwd root",
            "strings /usr/bin/ls",
            "named-checkconf /etc/bind/named.conf",
            "yq '.network' /etc/netplan/a.yaml",
            "lspci -x",
            "cat /proc/$(pgrep -o sshd)/status",
            "cat $HOME/app.log",
            "openssl rsa -noout -modulus -in key.pem",
        ] {
            assert!(!refused(cmd), "{cmd}: {:?}", analyze(cmd).reasons);
        }
    }
}
