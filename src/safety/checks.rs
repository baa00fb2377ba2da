//! Checkers for what an option table cannot express: the embedded languages
//! (sed scripts, awk programs), URLs, `test` expressions, `dd` operands and
//! `ip` objects. Each proves a form safe or refuses it with the reason; none
//! looks for known-bad patterns only.

use super::invocation::Invocation;
use super::parse::Word;
use super::spec::Check;

/// Runs `check` on a read invocation; `Err` holds the reason it is refused.
pub fn run(check: Check, inv: &Invocation) -> Result<(), String> {
    match check {
        Check::Sed => sed(inv),
        Check::Awk => awk(inv),
        Check::Curl => curl(inv),
        Check::Wget => wget(inv),
        Check::Dd => dd(inv),
        Check::Ip => ip(inv),
        Check::Service => service(inv),
        Check::Nft => match operand_texts(inv).into_iter().find(|o| o.contains([';', '\n', '{', '}'])) {
            Some(op) => Err(format!("nft joins its arguments into one script; `{op}` starts another command")),
            None => Ok(()),
        },
        Check::Tar => match inv.values("-f").chain(inv.values("--file")).find(|f| f.contains(':')) {
            Some(f) => Err(format!("tar -f {f} reaches another host (HOST:FILE)")),
            None => Ok(()),
        },
        Check::Lookup => match operand_texts(inv).as_slice() {
            [] => Err("without a name to look up it reads queries from its input".into()),
            ops if ops.contains(&"-") => Err("`-` reads queries from its input".into()),
            _ => Ok(()),
        },
        Check::Date => match operand_texts(inv).into_iter().find(|o| !o.starts_with('+')) {
            Some(op) => Err(format!("`date {op}` sets the clock (only +FORMAT is read-only)")),
            None => Ok(()),
        },
        Check::Sysctl => match operand_texts(inv).into_iter().find(|o| o.contains('=')) {
            Some(op) => Err(format!("`sysctl {op}` writes a kernel setting")),
            None => Ok(()),
        },
        Check::Rpm => rpm(inv),
        Check::Less => less(inv),
        Check::Zgrep => match words_with_new_line(inv).next() {
            Some(w) => Err(format!(
                "zgrep is a shell script that mishandles a new line in a word (`{}`; CVE-2022-1271 on older gzip)",
                w.escape_debug()
            )),
            None => Ok(()),
        },
        Check::Ps => match inv
            .operands
            .iter()
            .find(|o| !o.text.is_empty() && o.text.chars().all(|c| c.is_ascii_alphabetic()) && o.text.contains('e'))
        {
            Some(o) => Err(format!("`ps {}`: BSD `e` prints every process's environment (keys and tokens)", o.text)),
            None => Ok(()),
        },
        Check::Grep => grep(inv),
        Check::Kubectl => match inv.values("-f").chain(inv.values("--filename")).find(|f| f.contains("://")) {
            Some(url) => Err(format!("kubectl -f {url} fetches a URL from this host")),
            None => kubectl_files(inv).and_then(|()| kubectl_secret_values(inv)),
        },
        Check::Psql => sql(inv, super::sql::Dialect::Postgres, &["-c", "--command"], &["-d", "--dbname"]),
        Check::Mysql => sql(inv, super::sql::Dialect::Mysql, &["-e", "--execute"], &["-D", "--database"]),
        Check::Strace => super::tool_checks::strace(inv),
        Check::Jcmd => super::tool_checks::jcmd(inv),
        Check::Aws => super::tool_checks::aws(inv),
        Check::Docker => super::tool_checks::docker(inv),
        Check::Systemctl => super::tool_checks::systemctl(inv),
        // These read the raw words (test) or recurse (shell): handled by the caller.
        Check::Test | Check::Shell => Ok(()),
    }
}

fn require_any(inv: &Invocation, options: &[&str], reason: &str) -> Result<(), String> {
    if options.iter().any(|o| inv.has(o)) { Ok(()) } else { Err(reason.to_string()) }
}

pub(super) fn operand_texts(inv: &Invocation) -> Vec<&str> {
    inv.operands.iter().map(|w| w.text.as_str()).collect()
}

/// Every operand and option value holding a new line.
fn words_with_new_line(inv: &Invocation) -> impl Iterator<Item = &str> {
    let values = inv.options.iter().filter_map(|(_, v)| v.as_deref());
    operand_texts(inv).into_iter().chain(values).filter(|w| w.contains('\n'))
}

/// `kubectl -f FILE|DIR` reads the files it names (a folder's, recursively with `-R`), and an error
/// prints the text it could not parse: a credential among them would reach the model.
fn kubectl_files(inv: &Invocation) -> Result<(), String> {
    let recursive = inv.has("-R") || inv.has("--recursive");
    for file in inv.values("-f").chain(inv.values("--filename")) {
        let word = Word::literal(file);
        if let Some(why) = super::credentials::credential_read(&word, &super::workdir::Workdirs::unknown()) {
            return Err(format!("kubectl -f {file} {why}"));
        }
        if super::credentials::folder_holds_credentials(file, recursive) {
            return Err(format!(
                "kubectl -f {file}{} reads a folder that holds credentials, whose text an error prints (approve it to run it)",
                if recursive { " -R" } else { "" }
            ));
        }
    }
    Ok(())
}

/// `kubectl get secret … -o yaml|json|jsonpath…` prints the secrets' values (to the model); the
/// table (`kubectl get secrets`) and `describe` show only names and sizes.
fn kubectl_secret_values(inv: &Invocation) -> Result<(), String> {
    let getting = inv.path.first().is_some_and(|v| v == "get");
    let secret = |o: &str| o.split('/').next().unwrap_or_default().split(',').any(kubectl_names_secrets);
    // A template read from a file: an error shows the file's text (`-o go-template-file=/etc/shadow`).
    if let Some(file) = inv.values("-o").chain(inv.values("--output")).find(|o| o.contains("-file=")) {
        return Err(format!("kubectl -o {file} reads a local file, whose text an error prints"));
    }
    let format = inv.values("-o").chain(inv.values("--output")).find(|o| !matches!(*o, "name" | "wide"));
    match format {
        Some(format) if getting && operand_texts(inv).iter().any(|o| secret(o)) => Err(format!(
            "`kubectl get secret -o {format}` prints the secrets' values: they would reach the model (approve it to run it)"
        )),
        _ => Ok(()),
    }
}

/// Whether one resource word of kubectl names Secrets (or everything): kubectl reads
/// `RESOURCE[.VERSION[.GROUP]]` case-insensitively, so `Secret.v1.`, `secrets.v1` and
/// `secret.v1.core` are all the Secret resource; the part before the first `.` decides.
pub(super) fn kubectl_names_secrets(kind: &str) -> bool {
    let resource = kind.split('.').next().unwrap_or_default().to_ascii_lowercase();
    matches!(resource.as_str(), "secret" | "secrets" | "all")
}

// ---------------------------------------------------------------- sql

/// A database client given statements to run: each is proved read-only, and
/// the database is a plain name (a connection string could name another
/// server, which would receive the password from ~/.pgpass or ~/.my.cnf).
fn sql(inv: &Invocation, dialect: super::sql::Dialect, statement: &[&str], database: &[&str]) -> Result<(), String> {
    let statements: Vec<&str> = statement.iter().flat_map(|o| inv.values(o)).collect();
    // `psql -l` lists the databases and exits.
    let lists = inv.has("-l") || inv.has("--list");
    if statements.is_empty() && !lists {
        return Err(format!("`{}` without {} runs the statements read from its input", inv.program, statement[0]));
    }
    for text in statements {
        super::sql::read_only_statement(dialect, text).map_err(|why| format!("`{}`: {why}", text.escape_debug()))?;
    }
    let names = database.iter().flat_map(|o| inv.values(o)).chain(operand_texts(inv));
    for name in names {
        let plain = !name.is_empty()
            && !name.starts_with('-')
            && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
        if !plain {
            return Err(format!("`{name}` is not a plain database name (a connection string can name another server)"));
        }
    }
    Ok(())
}

// ---------------------------------------------------------------- less

/// less with no terminal (merlya's commands have none) copies its files to its output. Its own
/// parser reads an operand `+CMD` as commands to run (`+!id` runs a shell), and goes on reading
/// options after a number or a string value inside a word (`-x4o/tmp/log` is `-x4 -o/tmp/log`),
/// so values must be plain numbers; a new line in a file name reaches LESSOPEN's command line
/// (CVE-2024-32487).
fn less(inv: &Invocation) -> Result<(), String> {
    if let Some(op) = operand_texts(inv).into_iter().find(|o| o.starts_with('+')) {
        return Err(format!("less runs `{op}` as commands"));
    }
    for (name, value) in &inv.options {
        if let Some(v) = value
            && (v.is_empty() || !v.chars().all(|c| c.is_ascii_digit() || c == ','))
        {
            return Err(format!("less reads the rest of `{name}{v}` as more options; give it a plain number"));
        }
    }
    match words_with_new_line(inv).next() {
        Some(w) => Err(format!("a new line in `{}` reaches less's input preprocessor", w.escape_debug())),
        None => Ok(()),
    }
}

// ---------------------------------------------------------------- sed

fn sed(inv: &Invocation) -> Result<(), String> {
    let mut scripts: Vec<&str> = inv.values("-e").chain(inv.values("--expression")).collect();
    if scripts.is_empty() {
        match inv.operands.first() {
            Some(script) => scripts.push(&script.text),
            None => return Err("sed without a script".into()),
        }
    }
    for script in scripts {
        sed_script(script).map_err(|e| format!("sed script `{script}`: {e}"))?;
    }
    Ok(())
}

/// Proves a GNU sed script free of `e`, `w` and `W` (commands and `s` flags).
pub fn sed_script(script: &str) -> Result<(), String> {
    let c: Vec<char> = script.chars().collect();
    let mut i = 0;
    loop {
        while i < c.len() && (c[i].is_whitespace() || c[i] == ';') {
            i += 1;
        }
        if i >= c.len() {
            return Ok(());
        }
        i = sed_address(&c, i)?;
        while i < c.len() && c[i].is_whitespace() {
            i += 1;
        }
        if i < c.len() && c[i] == ',' {
            i = sed_address(&c, i + 1)?;
        }
        while i < c.len() && (c[i].is_whitespace() || c[i] == '!') {
            i += 1;
        }
        let Some(&cmd) = c.get(i) else { return Err("an address without a command".into()) };
        i += 1;
        match cmd {
            '{' | '}' | '=' | 'd' | 'D' | 'g' | 'G' | 'h' | 'H' | 'n' | 'N' | 'p' | 'P' | 'x' | 'z' | 'F' => {}
            'l' | 'L' | 'q' | 'Q' => {
                while i < c.len() && (c[i].is_ascii_digit() || c[i] == ' ') {
                    i += 1;
                }
            }
            // GNU sed ends labels and versions at white space or `;`.
            ':' | 'b' | 't' | 'T' | 'v' => {
                while i < c.len() && (c[i] == ' ' || c[i] == '\t') {
                    i += 1;
                }
                while i < c.len() && !c[i].is_whitespace() && c[i] != ';' {
                    i += 1;
                }
            }
            // A comment or a file name ends at the new line, backslash or not.
            '#' => {
                while i < c.len() && c[i] != '\n' {
                    i += 1;
                }
            }
            // `r FILE` / `R FILE` print FILE's text: the path rules apply to it as to an operand.
            'r' | 'R' => {
                let start = i;
                while i < c.len() && c[i] != '\n' {
                    i += 1;
                }
                let file = Word::literal(c[start..i].iter().collect::<String>().trim_start());
                let why = super::paths::side_effect_path(&file, true)
                    .or_else(|| super::credentials::credential_read(&file, &super::workdir::Workdirs::unknown()))
                    .or_else(|| super::credentials::raw_disk_read("sed", &file, false));
                if let Some(why) = why {
                    return Err(format!("`{cmd}` {why}"));
                }
            }
            // Text to print: to the end of the line, `\` continuing it.
            'a' | 'i' | 'c' => {
                while i < c.len() && c[i] != '\n' {
                    if c[i] == '\\' {
                        i += 1;
                    }
                    i += 1;
                }
            }
            'w' | 'W' => return Err(format!("`{cmd}` writes a file")),
            'e' => return Err("`e` runs a command".into()),
            's' => {
                let delim = sed_delimiter(&c, i)?;
                i = sed_part(&c, i + 1, delim, true)?;
                i = sed_part(&c, i, delim, false)?;
                while i < c.len() && !matches!(c[i], ';' | '\n' | '}') {
                    match c[i] {
                        'g' | 'p' | 'i' | 'I' | 'm' | 'M' | ' ' | '\t' => {}
                        d if d.is_ascii_digit() => {}
                        'e' => return Err("the `e` flag runs the result as a command".into()),
                        'w' => return Err("the `w` flag writes a file".into()),
                        other => return Err(format!("unknown s flag `{other}`")),
                    }
                    i += 1;
                }
            }
            'y' => {
                let delim = sed_delimiter(&c, i)?;
                i = sed_part(&c, i + 1, delim, false)?;
                i = sed_part(&c, i, delim, false)?;
            }
            other => return Err(format!("unknown command `{other}`")),
        }
    }
}

fn sed_delimiter(c: &[char], i: usize) -> Result<char, String> {
    match c.get(i) {
        Some(&d) if d != '\n' && d != '\\' => Ok(d),
        _ => Err("a missing or invalid delimiter".into()),
    }
}

/// Reads up to the unescaped `delim`; returns the index after it. In a regex,
/// a delimiter inside a bracket expression is refused: sed and this reader
/// could disagree on where the part ends.
fn sed_part(c: &[char], mut i: usize, delim: char, regex: bool) -> Result<usize, String> {
    let mut bracket = false;
    while i < c.len() {
        match c[i] {
            '\\' => i += 1,
            '[' if regex && !bracket => bracket = true,
            ']' if bracket => bracket = false,
            d if d == delim && bracket => return Err("the delimiter inside a bracket expression".into()),
            d if d == delim => return Ok(i + 1),
            _ => {}
        }
        i += 1;
    }
    Err("an unterminated s or y command".into())
}

fn sed_address(c: &[char], mut i: usize) -> Result<usize, String> {
    match c.get(i) {
        Some(d) if d.is_ascii_digit() || *d == '+' || *d == '~' => {
            i += 1;
            while i < c.len() && (c[i].is_ascii_digit() || c[i] == '~') {
                i += 1;
            }
        }
        Some('$') => i += 1,
        Some('/') => i = sed_part(c, i + 1, '/', true)?,
        Some('\\') => {
            let delim = sed_delimiter(c, i + 1)?;
            i = sed_part(c, i + 2, delim, true)?;
        }
        _ => return Ok(i),
    }
    while i < c.len() && matches!(c[i], 'I' | 'M') {
        i += 1;
    }
    Ok(i)
}

// ---------------------------------------------------------------- grep

/// A recursive grep reads every file under its start: from `/`, `/proc`, `/sys` or `/dev` that
/// includes `/proc/kmsg` (consumed) and other processes' environments; a start only known at run
/// time could be any of them.
fn grep(inv: &Invocation) -> Result<(), String> {
    let recursive = ["-r", "-R", "--recursive", "--dereference-recursive"].iter().any(|o| inv.has(o))
        || inv.values("-d").chain(inv.values("--directories")).any(|v| v == "recurse");
    if !recursive {
        return Ok(());
    }
    // grep's first operand is its pattern (unless -e or -f gave one); diff's are all folders.
    let pattern_given = inv.program != "grep" || ["-e", "--regexp", "-f", "--file"].iter().any(|o| inv.has(o));
    let starts = inv.operands.iter().skip(usize::from(!pattern_given));
    for start in starts {
        let path = match glob_folder(start) {
            Some(folder) => folder,
            None if start.dynamic || start.glob => {
                return Err(format!("{} -r from `{}`: a folder only known at run time", inv.program, start.text));
            }
            None => super::normal_path(&start.text),
        };
        if path == "/" || ["/proc", "/sys", "/dev"].iter().any(|p| path == *p || path.starts_with(&format!("{p}/"))) {
            return Err(format!(
                "{} -r from `{}` reads kernel files whose reading has effects (/proc/kmsg, environments)",
                inv.program, start.text
            ));
        }
    }
    Ok(())
}

/// The folder every expansion of an absolute glob stays in (`/var/log/app/*.log` →
/// `/var/log/app`): the literal part before the first glob character, with no `..` after it.
fn glob_folder(word: &Word) -> Option<String> {
    if word.dynamic
        || !word.glob
        || !word.text.starts_with('/')
        || word.text.contains("..")
        || super::paths::glob_may_match_dots(&word.text)
    {
        return None;
    }
    let literal = &word.text[..word.text.find(['*', '?', '['])?];
    let folder = &literal[..literal.rfind('/')?];
    Some(super::normal_path(if folder.is_empty() { "/" } else { folder }))
}

// ---------------------------------------------------------------- awk

fn awk(inv: &Invocation) -> Result<(), String> {
    let mut programs: Vec<&str> = inv.values("-e").chain(inv.values("--source")).collect();
    if programs.is_empty() {
        match inv.operands.first() {
            Some(program) => programs.push(&program.text),
            None => return Err("awk without a program".into()),
        }
    }
    programs.into_iter().try_for_each(awk_program)
}

/// Proves an awk program cannot run commands, write files or open sockets.
///
/// Deliberately lexical and strict: strings are not skipped (a mis-read
/// string could hide code), so a `>` anywhere after `print` is refused even
/// when it is a comparison.
pub fn awk_program(program: &str) -> Result<(), String> {
    let lower = program.to_ascii_lowercase();
    if lower.contains("system") {
        return Err("awk `system()` runs a command".into());
    }
    if lower.contains("getline") {
        return Err("awk `getline` reads from commands or sockets (`/in\" \"et/…`)".into());
    }
    let bytes = program.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'|' {
            if bytes.get(i + 1) == Some(&b'|') {
                i += 2;
                continue;
            }
            return Err("awk `|` pipes to or from a command".into());
        }
        i += 1;
    }
    if lower.contains("/inet") {
        return Err("awk `/inet/…` opens a network connection".into());
    }
    // gawk opens what ARGV names as input files: `ARGV[1]="/in" "et/tcp/…"` is a connection.
    if program.contains("ARGV") || program.contains("ARGC") {
        return Err("awk that touches ARGV or ARGC can open files and connections the proof never saw".into());
    }
    if program.contains('@') {
        return Err("awk `@` loads code or calls functions indirectly".into());
    }
    if let Some(at) = lower.find("print")
        && program[at..].contains('>')
    {
        return Err("awk `print … >` writes a file (compare before print, or in a pattern)".into());
    }
    Ok(())
}

// ---------------------------------------------------------------- curl, wget

/// Paths of a container engine's API that list or describe the engine, never a container's
/// environment or files.
const ENGINE_READS: &[&str] =
    &["/_ping", "/version", "/info", "/containers/json", "/images/json", "/networks", "/volumes", "/system/df"];

fn curl(inv: &Invocation) -> Result<(), String> {
    for header in inv.values("-H").chain(inv.values("--header")) {
        if header.starts_with('@') {
            return Err(format!("curl -H {header} sends a local file"));
        }
    }
    for format in inv.values("-w").chain(inv.values("--write-out")) {
        if format.contains("%output") || format.starts_with('@') {
            return Err("curl -w %output{…} or -w @FILE can write files".into());
        }
    }
    // A container engine's API answers GETs with the containers' environment
    // (`/containers/ID/json`) and files (`/containers/ID/archive?path=/etc/shadow`): through its
    // socket only the listings and the engine's own status are proved reads.
    let engine_socket = inv
        .values("--unix-socket")
        .chain(inv.values("--abstract-unix-socket"))
        .find(|s| ["docker", "podman", "containerd", "crio", "kubelet"].iter().any(|e| s.contains(e)));
    if let Some(socket) = engine_socket {
        for url in operand_texts(inv).into_iter().chain(inv.values("--url")) {
            let path =
                super::egress::split_url(url).map(|(_, rest)| rest.split(['?', '#']).next().unwrap_or("").to_string());
            let path = path.unwrap_or_default();
            let unversioned = match path.strip_prefix("/v").and_then(|p| p.split_once('/')) {
                Some((version, rest)) if version.bytes().all(|b| b.is_ascii_digit() || b == b'.') => format!("/{rest}"),
                _ => path.clone(),
            };
            if !ENGINE_READS.contains(&unversioned.trim_end_matches('/')) {
                return Err(format!(
                    "curl --unix-socket {socket} {url}: only the engine's listings and status are proved reads there (a container's details hold its secrets; approve it to run it)"
                ));
            }
        }
    }
    let urls: Vec<&str> = operand_texts(inv).into_iter().chain(inv.values("--url")).collect();
    if urls.is_empty() {
        return Err("curl without a URL".into());
    }
    // With -g curl takes `{}[]` literally (`?ids=[1,2]`): no glob can change the scheme.
    let globbing = !inv.has("-g") && !inv.has("--globoff");
    urls.into_iter().try_for_each(|url| {
        // curl 8.13 and later read `--url @FILE` (and `@-`, stdin) as a list of URLs, each saved
        // to a file named after it (red team 6).
        if url.starts_with('@') {
            return Err(format!("curl reads `{url}` as a file of URLs and saves each download"));
        }
        // curl reads a bracketed IPv6 host as an address, not a glob (`http://[::1]:8080/`).
        let unglobbed = match super::egress::split_url(url) {
            Some((host, _)) if host.starts_with('[') && super::egress::ipv6_in_brackets(&host) => {
                url.replacen(&host, "", 1)
            }
            _ => url.to_string(),
        };
        if globbing && unglobbed.contains(['{', '}', '[', ']']) {
            return Err(format!("`{url}` uses URL globbing, which can change the scheme curl picks (add -g)"));
        }
        http_url(url)
    })
}

fn wget(inv: &Invocation) -> Result<(), String> {
    let to_stdout = inv.values("-O").chain(inv.values("--output-document")).any(|v| v == "-");
    if !to_stdout && !inv.has("--spider") {
        return Err("wget saves a file: use -O - or --spider".into());
    }
    let urls = operand_texts(inv);
    if urls.is_empty() {
        return Err("wget without a URL".into());
    }
    urls.into_iter().try_for_each(|url| {
        if url.contains(['{', '}', '[', ']']) {
            return Err(format!("`{url}` has URL glob characters"));
        }
        http_url(url)
    })
}

/// An http(s) URL, or a bare host that curl will not guess another protocol for.
/// curl reads a scheme from a leading `NAME:/` (NAME of letters, digits, `+-.`); without
/// one it guesses the protocol from the host name (`dict.x` speaks DICT). The host ends at
/// the first `/`, `?` or `#` (a query string may hold `:` and `://`) and follows any
/// `user:password@`.
fn http_url(url: &str) -> Result<(), String> {
    let lower = url.to_ascii_lowercase();
    let name = lower.find(|c: char| !(c.is_ascii_alphanumeric() || "+-.".contains(c))).unwrap_or(lower.len());
    if name > 0 && lower[name..].starts_with(":/") {
        return match &lower[..name] {
            "http" | "https" => Ok(()),
            other => Err(format!("the `{other}:` scheme is not a plain web request")),
        };
    }
    let authority = lower.split(['/', '?', '#']).next().unwrap_or_default();
    let host = authority.rsplit('@').next().unwrap_or_default();
    let port = match host.strip_prefix('[') {
        Some(ipv6) => ipv6.split_once(']').map(|(_, port)| port),
        None => Some(host.find(':').map_or("", |i| &host[i..])),
    };
    let plain_port = port
        .is_some_and(|p| p.is_empty() || p.strip_prefix(':').is_some_and(|n| n.chars().all(|c| c.is_ascii_digit())));
    if !plain_port {
        return Err(format!("`{url}` names a scheme curl would use"));
    }
    let guessed = ["ftp.", "dict.", "ldap.", "imap.", "pop3.", "smtp.", "gopher.", "telnet.", "tftp.", "mqtt."];
    match guessed.iter().find(|g| host.starts_with(**g)) {
        Some(g) => Err(format!("curl guesses a non-web protocol from `{g}`; write http:// or https://")),
        None => Ok(()),
    }
}

// ---------------------------------------------------------------- dd, ip, rpm

fn dd(inv: &Invocation) -> Result<(), String> {
    for op in operand_texts(inv) {
        match op.split_once('=') {
            Some(("if" | "bs" | "ibs" | "count" | "skip" | "iseek" | "status" | "cbs", _)) => {}
            Some((key, _)) => return Err(format!("dd {key}= writes or changes output")),
            None => return Err(format!("dd operand `{op}` is not KEY=VALUE")),
        }
    }
    Ok(())
}

const IP_OBJECTS: &[&str] = &[
    "a",
    "ad",
    "addr",
    "address",
    "l",
    "li",
    "link",
    "r",
    "ro",
    "route",
    "n",
    "neigh",
    "neighbor",
    "neighbour",
    "ru",
    "rule",
    "m",
    "maddr",
    "maddress",
    "netns",
    "monitor",
    "tunnel",
    "ntable",
    "netconf",
];
const IP_VERBS: &[&str] = &["show", "list", "lst", "ls", "get"];

fn ip(inv: &Invocation) -> Result<(), String> {
    let ops = operand_texts(inv);
    let Some(object) = ops.first() else { return Ok(()) };
    if !IP_OBJECTS.contains(object) {
        return Err(format!("`ip {object}` is not an object merlya knows to be read-only"));
    }
    match ops.get(1) {
        None => Ok(()),
        Some(verb) if IP_VERBS.contains(verb) => Ok(()),
        // `ip monitor all`, `ip route get` are read-only with any filter words.
        Some(_) if *object == "monitor" => Ok(()),
        // `ip -s link dev eth0`: filter words without a verb mean show.
        Some(word) if matches!(*word, "dev" | "up" | "scope" | "table" | "type" | "to" | "from") => Ok(()),
        Some(verb) => Err(format!("`ip {object} {verb}` changes the network (only show, list and get are read-only)")),
    }
}

fn service(inv: &Invocation) -> Result<(), String> {
    match operand_texts(inv).as_slice() {
        [] if inv.has("--status-all") => Ok(()),
        [name, "status"] if !name.contains('/') && !name.starts_with('.') => Ok(()),
        other => Err(format!("`service {}` controls a service (only NAME status is read-only)", other.join(" "))),
    }
}

fn rpm(inv: &Invocation) -> Result<(), String> {
    require_any(inv, &["-q", "--query", "-V", "--verify"], "rpm without -q or -V installs or removes packages")?;
    // Verify mode runs the packages' %verifyscript (of any .rpm file with -p) unless --noscripts.
    let verifies = inv.has("-V") || inv.has("--verify");
    if verifies && !inv.has("--noscripts") {
        return Err("rpm -V without --noscripts runs the packages' verify scriptlets".into());
    }
    if verifies && (inv.has("-p") || inv.has("--package")) {
        return Err("rpm -V -p verifies a package file, whose scriptlets merlya cannot see".into());
    }
    for format in inv.values("--qf").chain(inv.values("--queryformat")) {
        if format.contains("%(") || format.contains("%{lua") {
            return Err("rpm --queryformat with a macro runs code".into());
        }
    }
    Ok(())
}

// ---------------------------------------------------------------- test

/// `test` and `[`: literal operators, no `-v`/`-R` (array subscripts run code),
/// and no unquoted expansion that could add operators.
pub fn test_expression(name: &str, args: &[Word]) -> Result<(), String> {
    let mut args = args;
    let close = match name {
        "[" => Some("]"),
        "[[" => Some("]]"),
        _ => None,
    };
    if let Some(close) = close {
        match args.split_last() {
            Some((last, rest)) if last.is_literal() && last.text == close => args = rest,
            _ => return Err(format!("`{name}` without a closing `{close}`")),
        }
    }
    if let Some(w) = args.iter().find(|w| w.opaque.is_some()) {
        return Err(format!("`{}` is not checked by the classifier", w.text));
    }
    if let Some(w) = args.iter().find(|w| w.splits || w.glob) {
        return Err(format!("`{}` may expand to several words and change the test; quote it", w.text));
    }
    let is = |w: &Word, ops: &[&str]| w.is_literal() && ops.contains(&w.text.as_str());
    let unsafe_unary = ["-v", "-R"];
    let binary = ["=", "==", "!=", "<", ">", "-eq", "-ne", "-lt", "-le", "-gt", "-ge", "-nt", "-ot", "-ef"];
    let ok = match args {
        [] | [_] => true,
        [op, _] => op.is_literal() && !is(op, &unsafe_unary),
        [a, op, _] => is(op, &binary) || (is(a, &["!"]) && op.is_literal() && !is(op, &unsafe_unary)),
        many => many.iter().all(|w| w.is_literal() && !is(w, &unsafe_unary)),
    };
    if ok { Ok(()) } else { Err(format!("`{name}` expression is not one merlya can prove read-only")) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kubectl_resource_words_name_secrets_however_spelled() {
        for kind in ["secret", "Secrets", "secrets.v1.", "Secret.v1.", "secret.v1", "secrets.v1.core", "all"] {
            assert!(kubectl_names_secrets(kind), "{kind}");
        }
        for kind in ["pods", "secretproviderclasses.secrets-store.csi.x-k8s.io", "configmaps.v1."] {
            assert!(!kubectl_names_secrets(kind), "{kind}");
        }
    }

    #[test]
    fn sed_scripts() {
        for ok in [
            "1,20p",
            "s/a/b/g",
            "/^#/d;s/x/y/2",
            "$!N;P;D",
            "1a hello; w /tmp/x",
            "s|[/]|x|",
            "y/abc/xyz/",
            "/re/I,+3{p;q}",
            ":a;N;$!ba;s/\\n/ /g",
        ] {
            assert!(sed_script(ok).is_ok(), "{ok}: {:?}", sed_script(ok));
        }
        for bad in [
            "w /tmp/x",
            "1w /tmp/x",
            "s/a/b/w /tmp/x",
            "s/a/id/e",
            "e id",
            "1e",
            "s/[/]/x/w /tmp/f",
            "W /tmp/x",
            "/x/{w /tmp/y\n}",
            "s/a/b/gw /tmp/x",
            "s/a/b",
            "k",
        ] {
            assert!(sed_script(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn awk_programs() {
        for ok in ["{print $1}", "$5 > 80 {print $1}", "/MemAvailable/ {print $2}", "NR==1 || NR==2"] {
            assert!(awk_program(ok).is_ok(), "{ok}");
        }
        for bad in [
            "BEGIN{system(\"id\")}",
            "{print > \"/tmp/x\"}",
            "{print | \"sh\"}",
            "BEGIN{\"id\" | getline x}",
            "BEGIN{print |& \"/inet/tcp/0/h/80\"}",
            "@load \"x\"",
            "BEGIN{f=\"sys\"\"tem\"; @f(\"id\")}",
            "{printf \"%s\", $0 >> \"/tmp/y\"}",
        ] {
            assert!(awk_program(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn urls() {
        for ok in [
            "http://x/health",
            "https://example.org",
            "localhost:8080/health",
            "10.0.0.1",
            "http://localhost:9200/_cluster/health?pretty",
            "localhost:9200/_search?q=level:error",
            "localhost/login?next=https://example.org/",
            "[::1]:8080/metrics",
        ] {
            assert!(http_url(ok).is_ok(), "{ok}");
        }
        for bad in [
            "file:///etc/shadow",
            "dict://h:11211/stats",
            "gopher://x",
            "ftp.example.org/x",
            "dict.org",
            "FILE:///etc/passwd",
            "ldap:x",
            "user@dict.example:6379/FLUSHALL",
            "u:p@ftp.example.org/x",
            "dict:/x",
            "localhost:x/y",
        ] {
            assert!(http_url(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn test_expressions() {
        let w = |s: &[&str]| s.iter().map(|t| Word::literal(*t)).collect::<Vec<_>>();
        assert!(test_expression("test", &w(&["-f", "/etc/hosts"])).is_ok());
        assert!(test_expression("[", &w(&["-d", "/srv", "]"])).is_ok());
        assert!(test_expression("[", &w(&["-d", "/srv"])).is_err());
        assert!(test_expression("test", &w(&["-v", "a[$(id)]"])).is_err());
        assert!(test_expression("test", &w(&["!", "-v", "x"])).is_err());
        assert!(test_expression("test", &w(&["1", "-eq", "1"])).is_ok());
        let split = vec![Word::literal("-f"), Word::unknown("$f")];
        assert!(test_expression("test", &split).is_err());
    }
}
