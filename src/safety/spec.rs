//! Program specs: what a read-only invocation of each known program looks
//! like, as data (`specs.yaml`), in the manner of Codex's execpolicy.
//!
//! A spec lists the options a program accepts in read-only use — with their
//! arity, as the program's own parser sees it — the options it knows but
//! refuses (so abbreviations and values are recognised), its read-only verbs
//! or subcommands, what its operands may be, and an optional checker for an
//! embedded language (sed scripts, awk programs, find expressions, URLs).
//! Each spec carries `allow` and `refuse` examples that are checked when the
//! table is loaded by the tests, so the table tests itself.

use std::collections::BTreeMap;

use serde::Deserialize;

/// How an option takes its value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arity {
    /// No value (`-a`, `--all`).
    Flag,
    /// A value, attached (`-n5`, `--lines=5`) or the next word (`-n 5`).
    Value,
    /// A value only when attached (`--color=auto`, `-n5`); never the next word.
    Optional,
}

/// One option a spec knows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OptionDef {
    /// How it takes a value.
    pub arity: Arity,
    /// The only values allowed, when restricted (`-o /dev/null`).
    pub values: Option<Vec<String>>,
    /// Why it is refused, for options known only to be refused.
    pub refused: Option<String>,
}

/// What a command's operands may be.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Operands {
    /// Anything literal.
    #[default]
    Any,
    /// None at all.
    None,
    /// At most this many.
    Max(usize),
    /// Shell identifiers only (`read NAME`).
    Identifiers,
}

/// A checker for something the option table cannot express.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Check {
    /// sed scripts: no `e`, `w`, `W` commands or flags.
    Sed,
    /// awk programs: no `system`, pipes, output redirection, sockets.
    Awk,
    /// curl: GET to a named http(s) URL, output to stdout or /dev/null.
    Curl,
    /// wget: output to stdout or `--spider`, http(s) only.
    Wget,
    /// test and `[`: no `-v`, literal operators.
    Test,
    /// `sh -c SCRIPT`: the script is analysed in full.
    Shell,
    /// dd: `if=` and sizes only, never `of=`.
    Dd,
    /// ip: OBJECT and a show/list/get verb only.
    Ip,
    /// service: `--status-all` or `NAME status` only.
    Service,
    /// date: operands are `+FORMAT` only (anything else sets the clock).
    Date,
    /// sysctl: no `key=value` operand (that writes).
    Sysctl,
    /// nft: no operand that starts another nft command (it joins its arguments).
    Nft,
    /// host, nslookup: a name to look up, never queries read from stdin.
    Lookup,
    /// tar: listing a local archive only (`host:file` runs rsh).
    Tar,
    /// rpm: query and verify only, no macros.
    Rpm,
    /// less: no `+` command operands, option values are numbers, no new line in a file name.
    Less,
    /// zgrep: no new line in any word (the script's sed step, CVE-2022-1271).
    Zgrep,
    /// ps: no BSD `e` (it prints every process's environment).
    Ps,
    /// grep: a recursive search never starts at `/`, `/proc`, `/sys`, `/dev` or a run-time folder.
    Grep,
    /// kubectl: `-f` names local files, never a URL (kubectl fetches it).
    Kubectl,
    /// psql: each `-c` is one SQL statement proved read-only (safety::sql); databases are names.
    Psql,
    /// mysql: each `-e` is one SQL statement proved read-only (safety::sql); databases are names.
    Mysql,
    /// strace: attaches to numbered processes, and `-e` only chooses what is shown (never
    /// `inject=`, `fault=` or `delay=`, which change what the traced calls do).
    Strace,
    /// jcmd: a process and one diagnostic command that only reads.
    Jcmd,
    /// aws: `SERVICE describe-*|list-*` (and `sts get-caller-identity`, `s3 ls`), no other
    /// endpoint, no parameter read from a file or a URL.
    Aws,
    /// docker, podman: no format template that prints the containers' environment.
    Docker,
    /// systemctl: never the manager's environment, nor a unit's `Environment` property.
    Systemctl,
}

/// The spec of a command or subcommand.
#[derive(Debug, Clone, Default)]
pub struct CommandSpec {
    /// Options by their full spelling (`-a`, `--all`, `-name`).
    pub options: BTreeMap<String, OptionDef>,
    /// `-5` style numeric options (`head -5`, `nice -5`).
    pub numeric: bool,
    /// Options end at the first operand (POSIX), instead of GNU permutation.
    pub posix: bool,
    /// `-name` is one option (find, openssl), not the cluster `-n -a -m -e`.
    pub single_dash_long: bool,
    /// Operand rule.
    pub operands: Operands,
    /// Read-only verbs: the first operand must be one of them; options are shared.
    pub verbs: Option<Vec<String>>,
    /// Subcommands with their own specs (after global options).
    pub subcommands: Option<BTreeMap<String, CommandSpec>>,
    /// Whether the command may run with no verb or subcommand.
    pub bare: bool,
    /// A checker for an embedded language.
    pub check: Option<Check>,
    /// Every option and operand is harmless, so words only known at run time are fine.
    pub dynamic: bool,
    /// Operands after the first are only printed (printf's arguments after a literal format), so
    /// words only known at run time are fine there when they cannot split.
    pub printed_operands: bool,
    /// Sends its standard input off the host (nc, openssl s_client).
    pub sends_stdin: bool,
    /// A wrapper: the command to run follows this many operands.
    pub wraps_after: Option<usize>,
    /// Every option of this program only changes what is shown (a claim the
    /// spec's author makes for programs with no writing option at all).
    pub any_options: bool,
    /// At least one of these options must be given (`nginx -t`).
    pub require: Vec<String>,
    /// cobra's parser (kubectl): every flag before the verb takes a value.
    pub cobra: bool,
    /// A known program that changes something, with what it changes: never
    /// read-only, but read completely, so an "always" rule gets a precise key.
    pub changes: Option<String>,
    /// Options and an expression mix (find): `--` ends only the leading
    /// options, so `-delete` after it is still an action, never an operand.
    pub expression: bool,
    /// The program has no `--` (so an expansion cannot be kept from becoming an option).
    pub no_end_of_options: bool,
    /// An unquoted `?`, `*` or `[` in its words is meant for the program (a URL's query),
    /// not the shell: such a word is proved, and runs, quoted (`curl host/_cat/nodes?v`).
    pub literal_globs: bool,
    /// Options read differently after a verb (`kubectl logs -f` follows; elsewhere `-f` names a
    /// file): after the verb they replace the shared options of the same name.
    pub verb_options: BTreeMap<String, BTreeMap<String, OptionDef>>,
    /// Words that, as the command's only word, print its version and exit (`python3 --version`).
    pub version: Vec<String>,
    /// Options that run the command that follows them, up to a `;` word (or `{} +`): find's
    /// `-exec`. The command is analysed as a simple command of its own, `{}` standing for a
    /// file name only known at run time.
    pub runs: Vec<String>,
    /// Options merlya writes after the program name when none of `require` is given, as
    /// `(option, value)`: `blkid` is proved, and runs, as `blkid -c /dev/null` (no cache write).
    /// With no `require`, each of them the command lacks is written (`npm` needs both of its own).
    pub adds: Vec<(String, Option<String>)>,
}

/// A program's spec with its examples.
#[derive(Debug, Clone)]
pub struct ProgramSpec {
    /// The names it answers to (`grep`, `egrep`).
    pub names: Vec<String>,
    /// The spec.
    pub spec: CommandSpec,
    /// Commands this spec must class read-only.
    pub allow: Vec<String>,
    /// Commands this spec must refuse.
    pub refuse: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawProgram {
    name: String,
    #[serde(flatten)]
    spec: RawCommand,
    #[serde(default)]
    allow: Vec<String>,
    #[serde(default)]
    refuse: Vec<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCommand {
    #[serde(default)]
    options: String,
    #[serde(default)]
    refused: BTreeMap<String, String>,
    #[serde(default)]
    operands: Option<String>,
    #[serde(default)]
    posix: bool,
    #[serde(default)]
    single_dash_long: bool,
    #[serde(default)]
    verbs: Option<String>,
    #[serde(default)]
    subcommands: Option<BTreeMap<String, RawCommand>>,
    #[serde(default)]
    bare: bool,
    #[serde(default)]
    check: Option<Check>,
    #[serde(default)]
    dynamic: bool,
    #[serde(default)]
    printed_operands: bool,
    #[serde(default)]
    sends_stdin: bool,
    #[serde(default)]
    wraps_after: Option<usize>,
    #[serde(default)]
    any_options: bool,
    #[serde(default)]
    require: String,
    #[serde(default)]
    changes: Option<String>,
    #[serde(default)]
    cobra: bool,
    #[serde(default)]
    expression: bool,
    #[serde(default)]
    no_end_of_options: bool,
    #[serde(default)]
    literal_globs: bool,
    #[serde(default)]
    verb_options: BTreeMap<String, String>,
    #[serde(default)]
    version: String,
    #[serde(default)]
    runs: String,
    #[serde(default)]
    adds: String,
}

/// The table shipped with merlya.
pub const SPECS_YAML: &str = include_str!("specs.yaml");

/// Parses a spec table; errors name the program and what is wrong.
pub fn load(yaml: &str) -> Result<Vec<ProgramSpec>, String> {
    let raw: Vec<RawProgram> = crate::input::from_yaml(yaml).map_err(|e| format!("specs.yaml: {e}"))?;
    raw.into_iter()
        .map(|p| {
            let spec = compile(p.spec).map_err(|e| format!("specs.yaml: program {}: {e}", p.name))?;
            let names = p.name.split('|').map(str::to_string).collect();
            Ok(ProgramSpec { names, spec, allow: p.allow, refuse: p.refuse })
        })
        .collect()
}

fn compile(raw: RawCommand) -> Result<CommandSpec, String> {
    let mut spec = CommandSpec {
        posix: raw.posix,
        single_dash_long: raw.single_dash_long,
        bare: raw.bare,
        check: raw.check,
        dynamic: raw.dynamic,
        printed_operands: raw.printed_operands,
        sends_stdin: raw.sends_stdin,
        wraps_after: raw.wraps_after,
        any_options: raw.any_options,
        require: raw.require.split_whitespace().map(str::to_string).collect(),
        changes: raw.changes,
        cobra: raw.cobra,
        expression: raw.expression,
        no_end_of_options: raw.no_end_of_options,
        literal_globs: raw.literal_globs,
        version: raw.version.split_whitespace().map(str::to_string).collect(),
        runs: raw.runs.split_whitespace().map(str::to_string).collect(),
        adds: raw
            .adds
            .split_whitespace()
            .map(|t| match t.split_once('=') {
                Some((option, value)) => (option.to_string(), Some(value.to_string())),
                None => (t.to_string(), None),
            })
            .collect(),
        ..CommandSpec::default()
    };
    for token in raw.options.split_whitespace() {
        if token == "-NUM" {
            spec.numeric = true;
            continue;
        }
        let (name, def) = option_token(token)?;
        spec.options.insert(name, def);
    }
    if raw.dynamic && !raw.refused.is_empty() {
        return Err("a dynamic spec cannot refuse options: a word only known at run time could become one".into());
    }
    for (token, reason) in raw.refused {
        let (name, mut def) = option_token(&token)?;
        def.refused = Some(reason);
        if spec.options.insert(name.clone(), def).is_some() {
            return Err(format!("option {name} is both allowed and refused"));
        }
    }
    spec.operands = match raw.operands.as_deref() {
        None | Some("any") => Operands::Any,
        Some("none") => Operands::None,
        Some("identifiers") => Operands::Identifiers,
        Some(other) => match other.strip_prefix("max ").map(str::parse) {
            Some(Ok(n)) => Operands::Max(n),
            _ => return Err(format!("operands: expected any, none, identifiers or `max N`, found {other:?}")),
        },
    };
    spec.verbs = raw.verbs.map(|v| v.split_whitespace().map(str::to_string).collect());
    for (verb, options) in raw.verb_options {
        let known = spec.verbs.iter().flatten().any(|v| v.split(':').next() == Some(verb.as_str()));
        if !known {
            return Err(format!("verb_options names `{verb}`, which is not one of the verbs"));
        }
        let mut defs = BTreeMap::new();
        for token in options.split_whitespace() {
            let (name, def) = option_token(token)?;
            defs.insert(name, def);
        }
        spec.verb_options.insert(verb, defs);
    }
    if !spec.runs.is_empty() && !spec.single_dash_long {
        return Err("runs: only for programs whose options are whole words (single_dash_long)".into());
    }
    if let Some(subs) = raw.subcommands {
        let mut compiled = BTreeMap::new();
        for (names, sub) in subs {
            let sub = compile(sub).map_err(|e| format!("subcommand {names}: {e}"))?;
            for name in names.split('|') {
                compiled.insert(name.to_string(), sub.clone());
            }
        }
        spec.subcommands = Some(compiled);
    }
    Ok(spec)
}

/// `-n`, `-n=`, `--color=?`, `-o=/dev/null|-` → the option's name and definition.
fn option_token(token: &str) -> Result<(String, OptionDef), String> {
    if !token.starts_with('-') || token.len() < 2 {
        return Err(format!("option {token:?} must start with -"));
    }
    let (name, rest) = match token[1..].find('=') {
        Some(i) => (&token[..i + 1], Some(&token[i + 2..])),
        None => (token, None),
    };
    let def = match rest {
        None => OptionDef { arity: Arity::Flag, values: None, refused: None },
        Some("") => OptionDef { arity: Arity::Value, values: None, refused: None },
        Some("?") => OptionDef { arity: Arity::Optional, values: None, refused: None },
        Some(values) => OptionDef {
            arity: Arity::Value,
            values: Some(values.split('|').map(str::to_string).collect()),
            refused: None,
        },
    };
    Ok((name.to_string(), def))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn option_tokens() {
        assert_eq!(option_token("-a").unwrap().1.arity, Arity::Flag);
        assert_eq!(
            option_token("--lines=").unwrap(),
            ("--lines".into(), OptionDef { arity: Arity::Value, values: None, refused: None })
        );
        assert_eq!(option_token("--color=?").unwrap().1.arity, Arity::Optional);
        let (name, def) = option_token("-o=/dev/null|-").unwrap();
        assert_eq!(name, "-o");
        assert_eq!(def.values, Some(vec!["/dev/null".to_string(), "-".to_string()]));
        assert!(option_token("x").is_err());
    }

    #[test]
    fn malformed_tables_are_errors_naming_the_program() {
        let e = load("- name: ls\n  options: '-a'\n  refused: {'-a': 'x'}\n").unwrap_err();
        assert!(e.contains("program ls") && e.contains("both allowed and refused"), "{e}");
        let e = load("- name: ls\n  operands: some\n").unwrap_err();
        assert!(e.contains("operands"), "{e}");
        let e = load("- name: ls\n  optoins: '-a'\n").unwrap_err();
        assert!(e.contains("optoins"), "{e}");
    }
}
