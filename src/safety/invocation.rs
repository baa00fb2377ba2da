//! Reading a command's words the way the program's own option parser does,
//! against its [`CommandSpec`]: combined short options (`-uoF`), attached
//! values (`-oFILE`, `--out=F`), values in the next word (so `kubectl -n get
//! delete` is a delete), options after operands unless the program stops at
//! the first operand, `--`, verbs and subcommands. Abbreviated long options
//! are never guessed: they are refused, naming what they abbreviate.

use super::parse::Word;
use super::spec::{Arity, Check, CommandSpec, Operands, OptionDef};
use super::words::plain_variable;

/// A command as its program will understand it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Invocation {
    /// The program's name.
    pub program: String,
    /// Verbs and subcommands (`systemctl status`, `git stash list`).
    pub path: Vec<String>,
    /// Options with their values, as spelled in the spec.
    pub options: Vec<(String, Option<String>)>,
    /// Operands (including words only known at run time, in dynamic specs).
    pub operands: Vec<Word>,
    /// The checker of the deepest spec reached.
    pub check: Option<Check>,
    /// For wrappers: the words of the command they run.
    pub wrapped: Option<Vec<Word>>,
    /// Whether the deepest spec sends its input off the host.
    pub sends_stdin: bool,
    /// The commands it runs on the files it finds (find's `-exec`), each to be analysed.
    pub commands: Vec<FoundCommand>,
}

/// A command find runs (`-exec CMD … ;`, `-execdir CMD … {} +`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FoundCommand {
    /// The option that runs it (`-exec`, `-execdir`).
    pub option: String,
    /// Its words; each `{}` is a word only known at run time (one file name, or with `+`
    /// several), which keeps its id so that the rendering can put `--` before it.
    pub words: Vec<Word>,
}

impl FoundCommand {
    /// Whether find hands it the names of the files it found (`{}`).
    pub fn takes_files(&self) -> bool {
        self.words.iter().any(|w| w.text == "{}" && w.dynamic)
    }

    /// Whether it runs in the directory of each file (`-execdir`): bare names are then relative to it.
    pub fn in_file_directory(&self) -> bool {
        self.option.ends_with("dir")
    }
}

impl Invocation {
    /// Whether option `name` was given.
    pub fn has(&self, name: &str) -> bool {
        self.options.iter().any(|(n, _)| n == name)
    }

    /// Every value given to option `name`.
    pub fn values<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.options.iter().filter(move |(n, _)| n == name).filter_map(|(_, v)| v.as_deref())
    }
}

/// An option and its value, as the proof adds it (`("-c", Some("/dev/null"))`).
pub type OptionWord = (String, Option<String>);

/// The result of reading a command against its spec.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Reading {
    /// What the program will do.
    pub invocation: Invocation,
    /// Why it is not read-only (empty when the spec allows it).
    pub refusals: Vec<String>,
    /// Whether every word was understood (unknown options leave it partial).
    pub complete: bool,
    /// The word (by id) before which the rendering writes `--`: the first word
    /// only known at run time where the program still reads options, so that
    /// it can never become one (`zstdcat $(printf -- '-o F')`).
    pub end_options_before: Option<usize>,
    /// For arguments appended at run time (xargs): the word after which the
    /// rendering writes `--`.
    pub end_options_after: Option<usize>,
    /// Options the rendering writes after the program name (the spec's `adds`, when none of
    /// its `require` was given): the invocation was read, and runs, with them.
    pub added: Vec<OptionWord>,
    /// Words with glob characters the spec takes literally (`literal_globs`), by id, with their
    /// text: the rendering quotes them, so the shell never expands what was proved as one word.
    pub literal_globs: Vec<(usize, String)>,
    /// Options a subcommand's spec adds, written after the subcommand's word (by id): `git diff`
    /// runs as `git … diff --no-ext-diff --no-textconv`.
    pub added_after: Vec<(usize, Vec<OptionWord>)>,
}

/// Whether find's expression has begun (an option of it was read): a glob after that is no
/// starting point.
fn options_done_by_expression(inv: &Invocation) -> bool {
    inv.options.iter().any(|(name, _)| !matches!(name.as_str(), "-H" | "-L" | "-P" | "-O1" | "-O2" | "-O3" | "-D"))
}

/// `/etc/cron.*`, `/var/log/sa/sa[0-9]*`: a glob that starts with `/`, whose literal directory is
/// not `/` nor under `/proc`, `/sys`, `/dev`, `/net`, with no `.`/`..` segment and no segment that
/// could match one (a glob segment starting with `.` or `[`). It expands only to paths below that
/// directory: never an option, an expression word, or a special tree.
pub fn glob_under_plain_directory(text: &str) -> bool {
    let first = text.find(['*', '?', '[']).unwrap_or(text.len());
    let Some(slash) = text[..first].rfind('/') else { return false };
    let dir = &text[..slash];
    let segments_plain = text.split('/').skip(1).all(|s| {
        let globbed = s.contains(['*', '?', '[']);
        !s.is_empty() && s != "." && s != ".." && !(globbed && (s.starts_with('.') || s.starts_with('[')))
    });
    let special = ["/proc", "/sys", "/dev", "/net"].iter().any(|p| dir == *p || dir.starts_with(&format!("{p}/")));
    text.starts_with('/') && !dir.is_empty() && segments_plain && !special
}

/// Reads `args` (the words after the program name) against `spec`.
pub fn read(program: &str, spec: &CommandSpec, args: &[Word]) -> Reading {
    let mut reading = Reading {
        invocation: Invocation { program: program.to_string(), ..Invocation::default() },
        complete: true,
        ..Reading::default()
    };
    // `PROG --version` alone prints the version and exits, whatever else the program does.
    if let [only] = args
        && only.is_literal()
        && spec.version.contains(&only.text)
    {
        reading.invocation.options.push((only.text.clone(), None));
        return reading;
    }
    Reader { reading: &mut reading, label: program.to_string() }.walk(spec, args);
    reading
}

struct Reader<'r> {
    reading: &'r mut Reading,
    /// `git stash`: how refusals name the command.
    label: String,
}

impl Reader<'_> {
    fn refuse(&mut self, reason: String) {
        if !self.reading.refusals.contains(&reason) {
            self.reading.refusals.push(reason);
        }
    }

    fn unknown(&mut self, reason: String) {
        self.reading.complete = false;
        self.refuse(reason);
    }

    fn walk(&mut self, spec: &CommandSpec, args: &[Word]) {
        if let Some(what) = &spec.changes {
            self.refuse(format!("`{}` {what}", self.label));
        }
        let inv = &mut self.reading.invocation;
        inv.check = spec.check.or(inv.check);
        inv.sends_stdin |= spec.sends_stdin;
        let stop_at_operand = spec.posix || spec.wraps_after.is_some();
        let mut options_done = false;
        let mut operands = 0usize;
        let mut verb_seen = false;
        let mut sub_seen = false;
        // After a verb with options of its own (`kubectl logs -f`): the shared options, overridden.
        let mut after_verb: Option<CommandSpec> = None;
        let mut i = 0;
        while i < args.len() {
            let spec = after_verb.as_ref().unwrap_or(spec);
            let literal;
            let word = match &args[i] {
                w if spec.literal_globs && w.glob && !w.dynamic && w.opaque.is_none() && w.id.is_some() => {
                    self.reading.literal_globs.extend(w.id.map(|id| (id, w.text.clone())));
                    literal = Word { glob: false, leading_glob: false, ..w.clone() };
                    &literal
                }
                w => w,
            };
            let is_option = !options_done && word.is_literal() && word.text.starts_with('-') && word.text.len() > 1;
            if spec.wraps_after == Some(operands) && !is_option && !(word.is_literal() && word.text == "--") {
                self.reading.invocation.wrapped = Some(args[i..].to_vec());
                return;
            }
            if let Some(what) = word.opaque {
                self.unknown(format!("`{}` uses {what}, whose value is not checked", word.text));
                i += 1;
                continue;
            }
            if !options_done && word.is_literal() && word.text == "--" {
                // find's `--` ends only -H/-L/-P: `find -- . -delete` still deletes.
                options_done = !spec.expression;
                i += 1;
                continue;
            }
            let first_operand = operands == 0 && !verb_seen;
            // `<(cmd)` becomes a /dev/fd path: never an option, and its command is checked on its own.
            if word.dynamic
                && !word.splits
                && word.opaque.is_none()
                && word.text.starts_with("<(")
                && !(first_operand && (spec.verbs.is_some() || spec.subcommands.is_some()))
            {
                self.reading.invocation.operands.push(word.clone());
                operands += 1;
                i += 1;
                continue;
            }
            // find's starting points: an absolute glob under a plain directory expands only to
            // paths there, never to an option or a word of the expression (rendered bare).
            let start_glob = spec.expression
                && !options_done_by_expression(&self.reading.invocation)
                && !word.dynamic
                && word.glob
                && word.opaque.is_none()
                && glob_under_plain_directory(&word.text);
            // printf's arguments after a literal format are only printed.
            let printed =
                spec.printed_operands && operands > 0 && word.dynamic && !word.splits && word.opaque.is_none();
            if start_glob || printed {
                self.reading.invocation.operands.push(word.clone());
                operands += 1;
                i += 1;
                continue;
            }
            if !word.is_literal() {
                let position_matters = first_operand && (spec.verbs.is_some() || spec.subcommands.is_some());
                if !spec.dynamic || position_matters {
                    let what = if word.dynamic { "only known at run time" } else { "a glob the shell expands" };
                    // `curl http://h/_cluster/health?pretty`: the `?` was meant for the server.
                    let hint = if !word.dynamic && word.text.contains("://") {
                        format!(" (quote the URL: '{}')", word.text)
                    } else {
                        String::new()
                    };
                    self.unknown(format!(
                        "`{}` in `{}` is {what}; its effect cannot be checked{hint}",
                        word.text, self.label
                    ));
                } else if !options_done && !spec.any_options {
                    // It could expand to an option: the rendering puts `--` before it.
                    let has_end = !spec.no_end_of_options && !spec.expression;
                    match (word.id, word.appended_to) {
                        (Some(id), _) if has_end => {
                            self.reading.end_options_before.get_or_insert(id);
                            options_done = true;
                        }
                        (None, Some(after)) if has_end => {
                            self.reading.end_options_after.get_or_insert(after);
                            options_done = true;
                        }
                        _ => self.refuse(format!(
                            "`{}` could expand to an option of `{}`, which has no `--` to prevent it",
                            word.text, self.label
                        )),
                    }
                }
                self.reading.invocation.operands.push(word.clone());
                operands += 1;
                i += 1;
                continue;
            }
            if is_option {
                // cobra (kubectl) takes any flag before the verb as taking a value.
                let before_verb = spec.cobra && !verb_seen;
                i += self.option(spec, args, i, before_verb);
                continue;
            }
            if stop_at_operand {
                options_done = true;
            }
            if first_operand && let Some(subs) = &spec.subcommands {
                let name = word.text.clone();
                self.reading.invocation.path.push(name.clone());
                match subs.get(&name) {
                    Some(sub) => {
                        let label = self.label.clone();
                        self.label = format!("{label} {name}");
                        self.walk(sub, &args[i + 1..]);
                        self.label = label;
                        // What the subcommand added goes after its own word.
                        let added = std::mem::take(&mut self.reading.added);
                        match word.id {
                            Some(id) if !added.is_empty() => self.reading.added_after.push((id, added)),
                            None if !added.is_empty() => {
                                self.refuse(format!("merlya cannot add options to `{}` here", self.label))
                            }
                            _ => {}
                        }
                    }
                    None => self.unknown(format!("`{} {name}` is not a read-only subcommand", self.label)),
                }
                // The program's own `require` and `adds` still hold (`npm ls` runs as `npm --no-update-notifier … ls`).
                sub_seen = true;
                break;
            }
            if first_operand && let Some(verbs) = &spec.verbs {
                verb_seen = true;
                let verb = word.text.clone();
                self.reading.invocation.path.push(verb.clone());
                i += 1;
                match verb_rule(verbs, &verb) {
                    None => self.refuse(format!("`{} {verb}` is not a read-only verb", self.label)),
                    Some(None) => {}
                    // `rollout status`: the verb is read-only only before one of these words.
                    Some(Some(next_words)) => {
                        let next = args.get(i).filter(|w| w.is_literal()).map(|w| w.text.clone());
                        match next {
                            Some(n) if next_words.contains(&n.as_str()) => {
                                self.reading.invocation.path.push(n);
                                i += 1;
                            }
                            // `history:,list`: the verb may also stand alone (`yum history`).
                            None if args.len() == i && next_words.contains(&"") => {}
                            other => self.refuse(format!(
                                "`{} {verb} {}` is not read-only (only {})",
                                self.label,
                                other.unwrap_or_default(),
                                next_words.join(", ")
                            )),
                        }
                    }
                }
                if let Some(own) = spec.verb_options.get(&verb) {
                    let mut merged = spec.clone();
                    merged.options.extend(own.iter().map(|(name, def)| (name.clone(), def.clone())));
                    after_verb = Some(merged);
                }
                continue;
            }
            self.operand(spec, word, operands);
            operands += 1;
            i += 1;
        }
        if spec.wraps_after == Some(operands) && !sub_seen {
            self.reading.invocation.wrapped = Some(Vec::new());
        }
        // `adds` with no `require`: each option of it the command lacks is added (npm needs both of its own).
        if spec.require.is_empty() && !spec.adds.is_empty() {
            // By name and value: `git -c A -c B` adds each `-c` it lacks.
            let missing: Vec<(String, Option<String>)> =
                spec.adds.iter().filter(|added| !self.reading.invocation.options.contains(added)).cloned().collect();
            self.reading.invocation.options.extend(missing.iter().cloned());
            self.reading.added = missing;
        }
        // With `bare`, a verb also satisfies `require` (`apachectl configtest` or `apachectl -t`).
        let required_given = spec.require.is_empty()
            || (spec.bare && verb_seen)
            || spec.require.iter().any(|r| self.reading.invocation.has(r));
        if !required_given && !spec.adds.is_empty() {
            // Proved in the form merlya renders: `blkid` runs as `blkid -c /dev/null`.
            self.reading.invocation.options.extend(spec.adds.iter().cloned());
            self.reading.added = spec.adds.clone();
        } else if !required_given {
            let label = self.label.clone();
            self.refuse(format!("`{label}` is read-only only with one of {}", spec.require.join(" ")));
        }
        let needs_verb = spec.verbs.is_some() || spec.subcommands.is_some();
        if needs_verb && !spec.bare && !verb_seen && !sub_seen {
            self.refuse(format!("`{}` without a read-only subcommand", self.label));
        }
    }

    fn operand(&mut self, spec: &CommandSpec, word: &Word, count: usize) {
        let label = self.label.clone();
        match spec.operands {
            Operands::Any => {}
            Operands::None => self.refuse(format!("`{label}` takes no operand here (`{}`)", word.text)),
            Operands::Max(n) if count >= n => {
                self.refuse(format!("`{label}` with more than {n} operand(s) changes something (`{}`)", word.text))
            }
            Operands::Max(_) => {}
            Operands::Identifiers => {
                if let Err(reason) = plain_variable(&word.text) {
                    self.refuse(format!("`{label}` {reason}"));
                }
            }
        }
        self.reading.invocation.operands.push(word.clone());
    }

    /// Reads the option at `args[i]`; returns how many words it used.
    fn option(&mut self, spec: &CommandSpec, args: &[Word], i: usize, values_only: bool) -> usize {
        let text = args[i].text.clone();
        if spec.any_options {
            self.reading.invocation.options.push((text, None));
            return 1;
        }
        if spec.runs.contains(&text) {
            return self.found_command(&text, args, i);
        }
        if text.starts_with("--") || spec.single_dash_long {
            let (name, attached) = match text.strip_prefix("--").and_then(|_| text.split_once('=')) {
                Some((n, v)) => (n.to_string(), Some(v.to_string())),
                None => (text.clone(), None),
            };
            if let Some(def) = spec.options.get(&name) {
                let def = if values_only { valued(def) } else { def.clone() };
                return self.apply(&def, &name, attached, args.get(i + 1), spec);
            }
            if spec.single_dash_long && !text.starts_with("--") && spec.numeric && is_number(&text[1..]) {
                self.reading.invocation.options.push(("-NUM".into(), Some(text[1..].to_string())));
                return 1;
            }
            let expansions: Vec<&String> =
                spec.options.keys().filter(|k| k.len() > name.len() && k.starts_with(&name)).collect();
            let label = self.label.clone();
            match expansions.as_slice() {
                [one] => self.unknown(format!(
                    "`{name}` abbreviates `{one}` in `{label}`; merlya only accepts options spelled out"
                )),
                _ => self.unknown(format!("`{label}` option `{name}` is not known to be read-only")),
            }
            return 1;
        }
        let cluster = &text[1..];
        if spec.numeric && is_number(cluster) {
            self.reading.invocation.options.push(("-NUM".into(), Some(cluster.to_string())));
            return 1;
        }
        for (k, c) in cluster.char_indices() {
            let name = format!("-{c}");
            let Some(def) = spec.options.get(&name).map(|d| if values_only { valued(d) } else { d.clone() }) else {
                let label = self.label.clone();
                let inside = if cluster.len() > 1 { format!(" (in `{text}`)") } else { String::new() };
                self.unknown(format!("`{label}` option `{name}`{inside} is not known to be read-only"));
                return 1;
            };
            let rest = &cluster[k + c.len_utf8()..];
            match def.arity {
                Arity::Flag => {
                    self.record(&def, &name, None);
                }
                Arity::Optional => {
                    let value = (!rest.is_empty()).then(|| rest.to_string());
                    self.record(&def, &name, value);
                    return 1;
                }
                Arity::Value => {
                    let attached = (!rest.is_empty()).then(|| rest.to_string());
                    return self.apply(&def, &name, attached, args.get(i + 1), spec);
                }
            }
        }
        1
    }

    /// `-exec CMD … ;` or `-exec CMD … {} +` at `args[i]`: records the command and returns
    /// how many words it used. The end is found as GNU find finds it (the first `;` word, or a
    /// `+` word right after a word holding `{}`), so every word must be literal: an expansion
    /// could become that end. Only a whole `{}` word is a file name; find also replaces `{}`
    /// inside a word (`sh -c 'cat {}'`), which would put a file name into code, so that is refused.
    fn found_command(&mut self, option: &str, args: &[Word], i: usize) -> usize {
        let label = self.label.clone();
        let start = i + 1;
        let mut end = start;
        let plus = loop {
            let Some(word) = args.get(end) else {
                self.unknown(format!("`{label} {option}` has no `;` or `{{}} +` to end its command"));
                return args.len() - i;
            };
            if !word.is_literal() {
                self.unknown(format!(
                    "`{}` in the command of `{label} {option}` is not literal: it could end the command early",
                    word.text
                ));
                return args.len() - i;
            }
            if word.text == ";" {
                break false;
            }
            if word.text == "+" && end > start && args[end - 1].text.contains("{}") {
                break true;
            }
            end += 1;
        };
        let mut words = Vec::new();
        for word in &args[start..end] {
            if word.text == "{}" {
                // One file name per run with `;`, several with `+`: never an option after `--`.
                words.push(Word { dynamic: true, splits: plus, ..word.clone() });
            } else if word.text.contains("{}") {
                self.refuse(format!(
                    "`{label} {option}` puts a file name inside `{}`; only a whole `{{}}` word is checked",
                    word.text
                ));
                words.push(word.clone());
            } else {
                words.push(word.clone());
            }
        }
        if words.is_empty() {
            self.refuse(format!("`{label} {option}` without a command"));
        }
        let text: Vec<&str> = args[start..=end].iter().map(|w| w.text.as_str()).collect();
        self.reading.invocation.options.push((option.to_string(), Some(text.join(" "))));
        self.reading.invocation.commands.push(FoundCommand { option: option.to_string(), words });
        end + 1 - i
    }

    /// Applies a known option whose value may be attached or in `next`.
    fn apply(
        &mut self,
        def: &OptionDef,
        name: &str,
        attached: Option<String>,
        next: Option<&Word>,
        spec: &CommandSpec,
    ) -> usize {
        let label = self.label.clone();
        match (def.arity, attached) {
            (Arity::Flag, Some(v)) => {
                self.unknown(format!("`{label}` option `{name}` takes no value (`{name}={v}`)"));
                1
            }
            (Arity::Flag, None) | (Arity::Optional, None) => {
                self.record(def, name, None);
                1
            }
            (_, Some(v)) => {
                self.record(def, name, Some(v));
                1
            }
            (Arity::Value, None) => {
                let Some(word) = next else {
                    self.unknown(format!("`{label}` option `{name}` needs a value"));
                    return 1;
                };
                if let Some(what) = word.opaque {
                    self.unknown(format!("the value of `{name}` uses {what}, whose value is not checked"));
                } else if !word.is_literal() && !spec.dynamic {
                    self.unknown(format!("the value of `{name}` (`{}`) is only known at run time", word.text));
                } else if word.splits {
                    // `-T $X` with X='1 -o F' would give the program an option of its own.
                    self.unknown(format!(
                        "the value of `{name}` (`{}`) may split into several words; quote it",
                        word.text
                    ));
                } else if looks_like_option(spec, &word.text) {
                    self.unknown(format!(
                        "the value of `{name}` looks like an option (`{}`); attach it as `{name}=VALUE`",
                        word.text
                    ));
                }
                self.record(def, name, Some(word.text.clone()));
                2
            }
        }
    }

    fn record(&mut self, def: &OptionDef, name: &str, value: Option<String>) {
        let label = self.label.clone();
        if let Some(reason) = &def.refused {
            self.refuse(format!("`{label} {name}` {reason}"));
        }
        if let (Some(allowed), Some(v)) = (&def.values, &value)
            && !allowed.contains(v)
        {
            self.refuse(format!("`{label} {name}` only allows {} here, not `{v}`", allowed.join(" or ")));
        }
        self.reading.invocation.options.push((name.to_string(), value));
    }
}

/// `def` read as taking a value (cobra's rule for flags before the verb).
fn valued(def: &OptionDef) -> OptionDef {
    OptionDef { arity: if def.arity == Arity::Flag { Arity::Value } else { def.arity }, ..def.clone() }
}

/// How `verb` is allowed by a verb list: `None` not at all, `Some(None)` alone,
/// `Some(Some(words))` only before one of `words` (`rollout:status,history`).
fn verb_rule<'v>(verbs: &'v [String], verb: &str) -> Option<Option<Vec<&'v str>>> {
    verbs.iter().find_map(|v| match v.split_once(':') {
        Some((name, next)) if name == verb => Some(Some(next.split(',').collect())),
        None if v == verb => Some(None),
        _ => None,
    })
}

/// Whether a word consumed as a value could be read as an option by the
/// program instead (an optional-value option such as `journalctl -n`).
fn looks_like_option(spec: &CommandSpec, word: &str) -> bool {
    if word.starts_with("--") {
        return true;
    }
    let Some(rest) = word.strip_prefix('-') else { return false };
    if rest.is_empty() || is_number(rest) {
        return false;
    }
    if spec.options.contains_key(word) || spec.runs.iter().any(|r| r == word) {
        return true;
    }
    !spec.single_dash_long && rest.chars().next().is_some_and(|c| spec.options.contains_key(&format!("-{c}")))
}

fn is_number(s: &str) -> bool {
    !s.is_empty() && s.chars().all(|c| c.is_ascii_digit())
}

#[cfg(test)]
mod glob_tests {
    use super::glob_under_plain_directory;

    #[test]
    fn only_absolute_globs_under_a_plain_directory_are_starting_points() {
        for ok in ["/etc/cron.*", "/var/log/sa/sa[0-9]*", "/var/log/*.log", "/srv/*/logs"] {
            assert!(glob_under_plain_directory(ok), "{ok}");
        }
        for no in [
            "/*",
            "/d*",
            "*.log",
            "-*",
            "/etc/..*",
            "/etc/.?",
            "/etc/[.]*",
            "/etc/*/../../dev",
            "/proc/*/environ",
            "/dev/tty*",
            "//etc/*",
            "etc/*",
        ] {
            assert!(!glob_under_plain_directory(no), "{no}");
        }
    }
}
