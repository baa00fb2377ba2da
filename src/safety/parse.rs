//! Turning a shell command into the simple commands it would run, with
//! tree-sitter-bash: pipelines, `;`, `&&`, `||`, subshells, `{ }`, `$(...)`,
//! backticks, process substitution, redirections and here-docs. Anything the
//! walker does not understand is reported, never skipped: an allow-list is
//! only as good as its parser's honesty.

use std::collections::HashMap;

use tree_sitter::{Node, Parser};

use super::render::{self, Override, Render, Words};
use super::words::{pattern_parts, plain_variable};

pub use super::words::Word;

/// A redirection such as `> /tmp/x`, `2>&1` or `< input`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redirect {
    /// `>`, `>>`, `<`, `&>`, `>&`, `>|`, ...
    pub op: String,
    /// Where it points, if it is a file.
    pub target: Option<Word>,
}

/// A command with its arguments, as the shell would run it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimpleCommand {
    /// `NAME=value` prefixes.
    pub assignments: Vec<String>,
    /// Command name and arguments.
    pub words: Vec<Word>,
    /// Redirections applied to it.
    pub redirects: Vec<Redirect>,
    /// Which pipeline it belongs to and its position there (for `curl | sh`).
    pub pipeline: Option<(usize, usize)>,
}

/// Everything found in one command line.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Parsed {
    /// Simple commands, in source order (substitutions included).
    pub commands: Vec<SimpleCommand>,
    /// Constructs that make the line impossible to vouch for, with a reason each.
    pub problems: Vec<String>,
    /// Each word's rendering, by [`Word::id`].
    pub renders: Vec<Render>,
    /// The whole line as merlya writes it back (see [`super::render`]).
    pub rendering: Render,
}

impl Parsed {
    /// The line as it will run, with the analysis's changes to its words.
    pub fn render(&self, overrides: &HashMap<usize, Override>) -> Result<String, String> {
        Words { renders: &self.renders, overrides }.expand(&self.rendering)
    }
}

/// Text no node of the tree covers (tree-sitter-bash silently drops some
/// tokens, such as a lone `-` before a here-document): if any, the walk would
/// check a different command than bash runs.
fn skipped_text(root: Node, source: &str) -> Option<String> {
    let mut covered = vec![false; source.len()];
    let mut stack = vec![root];
    while let Some(node) = stack.pop() {
        let data = matches!(
            node.kind(),
            "heredoc_body"
                | "heredoc_content"
                | "string"
                | "raw_string"
                | "ansi_c_string"
                | "comment"
                | "word"
                | "regex"
                | "extglob_pattern"
                | "string_content"
        );
        if node.child_count() == 0 || data {
            covered[node.start_byte().min(source.len())..node.end_byte().min(source.len())].fill(true);
        }
        let mut cursor = node.walk();
        stack.extend(node.children(&mut cursor));
    }
    let bytes = source.as_bytes();
    // A backslash before a new line joins lines (reported on its own); any other one
    // that no node covers is an escaped character tree-sitter dropped (`wc \  x`).
    let skipped: String = (0..bytes.len())
        .filter(|&i| !covered[i] && !bytes[i].is_ascii_whitespace())
        .filter(|&i| !(bytes[i] == b'\\' && bytes.get(i + 1) == Some(&b'\n')))
        .filter_map(|i| source.get(i..=i))
        .collect();
    (!skipped.is_empty()).then_some(skipped)
}

/// Parses `source`.
pub fn parse(source: &str) -> Parsed {
    let mut parser = Parser::new();
    let mut parsed = Parsed::default();
    if parser.set_language(&tree_sitter_bash::LANGUAGE.into()).is_err() {
        parsed.problems.push("the shell parser could not be loaded".into());
        parsed.rendering = Render::unrenderable("a command the parser could not read");
        return parsed;
    }
    let Some(tree) = parser.parse(source, None) else {
        parsed.problems.push("the command could not be parsed".into());
        parsed.rendering = Render::unrenderable("a command the parser could not read");
        return parsed;
    };
    let root = tree.root_node();
    if root.has_error() {
        parsed.problems.push("the command is not valid shell syntax".into());
    }
    if let Some(c) = source.chars().find(|c| c.is_control() && *c != '\t' && *c != '\n') {
        // `\r`, `\f`, `\v` are blanks to tree-sitter and word characters to bash; NUL cuts the line.
        parsed
            .problems
            .push(format!("a control character (U+{:04X}) that bash and merlya may read differently", c as u32));
    }
    // bash joins `\`+newline inside words, comments end at the newline, quotes change
    // both: rather than model it, a line continuation is not vouched for.
    if source.contains("$[") {
        parsed.problems.push("`$[…]` is arithmetic evaluation (array subscripts in it run code)".into());
    }
    if source.contains("\\\n") {
        parsed.problems.push("a line continuation (backslash before a new line); write it on one line".into());
    }
    if let Some(skipped) = skipped_text(root, source) {
        parsed.problems.push(format!("the parser skipped `{skipped}`; the command cannot be vouched for"));
    }
    let mut walker = Walker {
        source: source.as_bytes(),
        parsed,
        pipelines: 0,
        loops: Vec::new(),
        after_redirect: Vec::new(),
        body_args: Vec::new(),
    };
    let rendering = walker.statement(root, &[], None);
    walker.parsed.rendering = rendering;
    walker.parsed
}

struct Walker<'a> {
    source: &'a [u8],
    parsed: Parsed,
    pipelines: usize,
    /// The loop variables of the bodies being walked, innermost last.
    loops: Vec<loop_values::Binding>,
    /// Words tree-sitter hangs on a redirection (`grep x 2>/dev/null FILE`: FILE is the command's
    /// argument to bash); the command being walked takes them, anything else refuses them.
    after_redirect: Vec<(Word, Render)>,
    /// Those words, handed to the simple command a redirected statement wraps.
    body_args: Vec<(Word, Render)>,
}

mod loop_values;
mod word_walk;

/// Whether a here-document delimiter is quoted as a whole (`'EOF'`, `"EOF"`).
fn whole_quoted_delimiter(start: &str) -> bool {
    ['\'', '"'].iter().any(|&q| {
        start.len() >= 2
            && start.starts_with(q)
            && start.ends_with(q)
            && !start[1..start.len() - 1].contains(['\'', '"', '\\'])
    })
}

/// Node kinds that are one word.
const WORD_KINDS: [&str; 10] = [
    "word",
    "number",
    "string",
    "raw_string",
    "concatenation",
    "simple_expansion",
    "expansion",
    "command_substitution",
    "ansi_c_string",
    "translated_string",
];

impl Walker<'_> {
    fn text(&self, node: Node) -> String {
        node.utf8_text(self.source).unwrap_or("").to_string()
    }

    fn background(&mut self, out: &mut Render) {
        self.parsed.problems.push("runs a command in the background, beyond its timeout".into());
        out.poison("a background job");
    }

    /// Walks one statement; returns its rendering.
    fn statement(&mut self, node: Node, redirects: &[Redirect], pipeline: Option<(usize, usize)>) -> Render {
        match node.kind() {
            "program" | "list" | "compound_statement" | "subshell" | "negated_command" | "do_group" | "else_clause"
            | "elif_clause" | "if_statement" | "while_statement" => self.compound(node, redirects),
            "for_statement" => self.headed(node, redirects, "a loop form merlya does not write back"),
            "case_statement" => self.headed(node, redirects, "a case form merlya does not write back"),
            "pipeline" => {
                let id = self.pipelines;
                self.pipelines += 1;
                let mut out = Render::default();
                let mut pos = 0;
                let mut cursor = node.walk();
                for child in node.children(&mut cursor).collect::<Vec<_>>() {
                    if child.is_named() {
                        out.append(self.statement(child, redirects, Some((id, pos))));
                        pos += 1;
                    } else {
                        match self.text(child).as_str() {
                            "|" => out.push(" | "),
                            "|&" => out.push(" |& "),
                            _ => out.poison("an operator in a pipeline"),
                        }
                    }
                }
                out
            }
            "redirected_statement" => {
                let mut own: Vec<Redirect> = redirects.to_vec();
                let mut rendered = Vec::new();
                let mut cursor = node.walk();
                for child in node.children_by_field_name("redirect", &mut cursor).collect::<Vec<_>>() {
                    rendered.push(self.redirect(child, &mut own));
                }
                let extra = std::mem::take(&mut self.after_redirect);
                let body = node.child_by_field_name("body");
                if !extra.is_empty() {
                    if body.is_some_and(|b| b.kind() == "command") {
                        self.body_args = extra;
                    } else {
                        self.parsed.problems.push("words after a redirection that belong to no command".into());
                        rendered.push(Render::unrenderable("words after a redirection"));
                    }
                }
                let mut out = match body {
                    Some(body) => self.statement(body, &own, pipeline),
                    None => {
                        // A bare redirection such as `> file` truncates the file.
                        self.parsed.commands.push(SimpleCommand {
                            assignments: Vec::new(),
                            words: Vec::new(),
                            redirects: own,
                            pipeline,
                        });
                        Render::default()
                    }
                };
                for r in rendered {
                    if !out.is_empty() {
                        out.push(" ");
                    }
                    out.append(r);
                }
                out
            }
            "command" => self.command(node, redirects, pipeline),
            "variable_assignment" | "variable_assignments" => {
                self.parsed.problems.push(format!("sets a shell variable ({})", self.text(node)));
                self.substitutions(node);
                Render::unrenderable("a shell variable assignment")
            }
            "declaration_command" | "unset_command" => {
                self.parsed.problems.push(format!("changes shell state ({})", self.text(node)));
                Render::unrenderable("a declaration")
            }
            "function_definition" => {
                self.parsed.problems.push("defines a shell function".into());
                Render::unrenderable("a function definition")
            }
            "test_command" => self.test(node, redirects, pipeline),
            "c_style_for_statement" | "arithmetic_expansion" => {
                self.parsed.problems.push("arithmetic evaluation (array subscripts in it run code)".into());
                self.substitutions(node);
                Render::unrenderable("arithmetic")
            }
            "heredoc_body" => {
                if self.text(node).contains('`') {
                    self.parsed.problems.push("a here-document with backticks runs commands".into());
                }
                self.substitutions(node);
                Render::unrenderable("a here-document out of place")
            }
            "comment" | "heredoc_start" | "heredoc_end" => Render::default(),
            "file_redirect" | "heredoc_redirect" | "herestring_redirect" => {
                let mut own = redirects.to_vec();
                let mut rendered = self.redirect(node, &mut own);
                if !std::mem::take(&mut self.after_redirect).is_empty() {
                    self.parsed.problems.push("words after a redirection that belong to no command".into());
                    rendered.poison("words after a redirection");
                }
                self.parsed.commands.push(SimpleCommand {
                    assignments: Vec::new(),
                    words: Vec::new(),
                    redirects: own,
                    pipeline,
                });
                rendered
            }
            "ERROR" => {
                self.parsed.problems.push(format!("cannot parse {:?}", self.text(node)));
                Render::unrenderable("a syntax error")
            }
            other => {
                self.parsed.problems.push(format!("unsupported shell construct: {other}"));
                Render::unrenderable("an unsupported construct")
            }
        }
    }

    /// Lists, groups and conditionals: the statements inside, with the
    /// separators bash needs written back (`;` before `then`, `do`, `fi`…).
    fn compound(&mut self, node: Node, redirects: &[Redirect]) -> Render {
        let mut out = Render::default();
        let mut after_statement = false;
        let mut cursor = node.walk();
        for child in node.children(&mut cursor).collect::<Vec<_>>() {
            let kind = child.kind();
            if !child.is_named() {
                let token = self.text(child);
                match token.as_str() {
                    "&" => self.background(&mut out),
                    ";" | "\n" | "" => {}
                    "&&" | "||" => {
                        out.push(format!(" {token}"));
                        after_statement = false;
                    }
                    "then" | "fi" | "else" | "elif" | "do" | "done" | "}" | ")" => {
                        if after_statement {
                            out.push(";");
                        }
                        out.push(format!(" {token}"));
                        after_statement = false;
                    }
                    "if" | "while" | "until" | "{" | "(" | "!" => {
                        out.push(format!(" {token}"));
                        after_statement = false;
                    }
                    _ => out.poison("a shell keyword merlya does not write back"),
                }
                continue;
            }
            match kind {
                "comment" => {}
                "elif_clause" | "else_clause" | "do_group" => {
                    if after_statement {
                        out.push(";");
                    }
                    out.push(" ");
                    out.append(self.statement(child, redirects, None));
                    after_statement = kind != "do_group";
                }
                k if WORD_KINDS.contains(&k) || matches!(k, "variable_name" | "extglob_pattern" | "regex") => {
                    self.checked_word(child);
                    out.poison("a word where a statement belongs");
                }
                _ => {
                    if after_statement {
                        out.push(";");
                    }
                    out.push(" ");
                    out.append(self.statement(child, redirects, None));
                    after_statement = true;
                }
            }
        }
        out.trim_start();
        out
    }

    /// A word of a loop head or a case value: its substitutions count, and it
    /// may not use a construct the classifier does not evaluate.
    fn checked_word(&mut self, node: Node) -> Render {
        self.checked_loop_word(node).1
    }

    /// [`Walker::checked_word`], with the word.
    fn checked_loop_word(&mut self, node: Node) -> (Word, Render) {
        let (word, rendered) = self.word(node);
        if let Some(what) = word.opaque {
            self.parsed.problems.push(format!("`{}` uses {what}", word.text));
        }
        // `for f in /proc/kmsg; do cat "$f"; done`: a loop's words become operands the proof never
        // sees as paths, so they are checked as paths here.
        if let Some(why) = super::paths::side_effect_path(&word, false) {
            self.parsed.problems.push(why);
        }
        (word, rendered)
    }

    /// `for NAME in WORDS; do …; done` and `case WORD in ITEMS esac`: the keywords, the head's
    /// words (their substitutions count) and the body, written back in bash's order.
    fn headed(&mut self, node: Node, redirects: &[Redirect], what: &'static str) -> Render {
        let mut out = Render::default();
        let loop_variable = node.child_by_field_name("variable").map(|v| v.id());
        let (mut variable, mut values) = (None, Vec::new());
        let mut cursor = node.walk();
        for child in node.children(&mut cursor).collect::<Vec<_>>() {
            if Some(child.id()) == loop_variable {
                let name = self.text(child);
                if let Err(reason) = plain_variable(&name) {
                    self.parsed.problems.push(format!("the loop {reason}"));
                }
                out.push(format!(" {name}"));
                variable = Some(name);
                continue;
            }
            if !child.is_named() {
                match self.text(child).as_str() {
                    token @ ("for" | "case") => out.push(token),
                    "in" => out.push(" in"),
                    "esac" => out.push(" esac"),
                    ";" | "\n" | "" => {}
                    "&" => self.background(&mut out),
                    _ => out.poison(what),
                }
                continue;
            }
            match child.kind() {
                "do_group" => {
                    out.push("; ");
                    let body = self.text(child);
                    let bound = variable.as_deref().and_then(|name| loop_values::binding(name, &values, &body));
                    let pushed = bound.map(|b| self.loops.push(b)).is_some();
                    out.append(self.statement(child, redirects, None));
                    if pushed {
                        self.loops.pop();
                    }
                }
                "case_item" => {
                    out.push(" ");
                    out.append(self.case_item(child, redirects));
                }
                "comment" => {}
                k if WORD_KINDS.contains(&k) => {
                    out.push(" ");
                    let (word, rendered) = self.checked_loop_word(child);
                    values.push(word);
                    out.append(rendered);
                }
                _ => {
                    self.statement(child, redirects, None);
                    out.poison(what);
                }
            }
        }
        out
    }

    /// One `PATTERN|PATTERN) STATEMENTS ;;` of a case.
    fn case_item(&mut self, node: Node, redirects: &[Redirect]) -> Render {
        let mut out = Render::default();
        let mut in_body = false;
        let mut after_statement = false;
        let mut cursor = node.walk();
        for child in node.children(&mut cursor).collect::<Vec<_>>() {
            if !child.is_named() {
                match self.text(child).as_str() {
                    "(" if !in_body => out.push("("),
                    "|" if !in_body => out.push("|"),
                    ")" if !in_body => {
                        out.push(")");
                        in_body = true;
                    }
                    ";;" | ";" | "\n" | "" => {}
                    "&" => self.background(&mut out),
                    _ => out.poison("a case fall-through"),
                }
                continue;
            }
            let kind = child.kind();
            if kind == "comment" {
                continue;
            }
            if !in_body {
                if kind == "extglob_pattern" {
                    out.append(render::word(pattern_parts(&self.text(child)), false));
                } else if WORD_KINDS.contains(&kind) {
                    out.append(self.checked_word(child));
                } else {
                    out.poison("a case pattern merlya does not write back");
                }
                continue;
            }
            if after_statement {
                out.push(";");
            }
            out.push(" ");
            out.append(self.statement(child, redirects, None));
            after_statement = true;
        }
        out.push(" ;;");
        out
    }

    fn redirect(&mut self, node: Node, out: &mut Vec<Redirect>) -> Render {
        if self.text(node).starts_with('{') {
            self.parsed.problems.push(format!("`{}` assigns a descriptor to a variable", self.text(node)));
            return Render::unrenderable("a descriptor variable");
        }
        match node.kind() {
            "file_redirect" => {
                let (mut op, mut descriptor) = (String::new(), String::new());
                let mut cursor = node.walk();
                for child in node.children(&mut cursor) {
                    if !child.is_named() {
                        op = self.text(child);
                    } else if child.kind() == "file_descriptor" {
                        descriptor = self.text(child);
                    }
                }
                let mut cursor = node.walk();
                let destinations: Vec<Node> = node.children_by_field_name("destination", &mut cursor).collect();
                let target = destinations.first().map(|d| self.word(*d));
                for extra in destinations.iter().skip(1) {
                    let word = self.word(*extra);
                    self.after_redirect.push(word);
                }
                // `&>F` is bash's `>F 2>&1`; written the POSIX way, so that no shell reads `cmd &` and `>F`.
                let posix_op = match op.as_str() {
                    "&>" => ">",
                    "&>>" => ">>",
                    other => other,
                };
                let mut rendered = Render::text(format!("{descriptor}{posix_op}"));
                if !descriptor.chars().all(|c| c.is_ascii_digit()) {
                    rendered.poison("a redirection descriptor merlya does not write back");
                }
                match &target {
                    Some((word, r)) => {
                        // `< <(cmd)`, never `<<(cmd)` (a here-document).
                        if word.text.starts_with(['<', '>']) {
                            rendered.push(" ");
                        }
                        rendered.append(r.clone());
                    }
                    None => rendered.poison("a redirection without a target"),
                }
                if posix_op != op {
                    if !descriptor.is_empty() {
                        rendered.poison("a descriptor before `&>`");
                    }
                    rendered.push(" 2>&1");
                }
                out.push(Redirect { op, target: target.map(|(w, _)| w) });
                rendered
            }
            "heredoc_redirect" => {
                out.push(Redirect { op: "<<".into(), target: None });
                let (mut quoted, mut strip_tabs) = (false, false);
                let mut rendered = Render::default();
                let mut after = Vec::new();
                let mut cursor = node.walk();
                for child in node.children(&mut cursor).collect::<Vec<_>>() {
                    match child.kind() {
                        "<<-" => strip_tabs = true,
                        "<<" => {}
                        "heredoc_start" => {
                            let start = self.text(child);
                            quoted = start.contains(['\'', '"', '\\']);
                            if quoted && !whole_quoted_delimiter(&start) {
                                // bash removes the quotes (`E'O'F` ends at `EOF`); tree-sitter does not.
                                self.parsed.problems.push(format!(
                                    "the here-document delimiter `{start}` is quoted in part; quote all of it ('EOF')"
                                ));
                                rendered.poison("a here-document delimiter quoted in part");
                            }
                        }
                        "file_redirect" | "herestring_redirect" => {
                            after.push(self.redirect(child, out));
                            if !std::mem::take(&mut self.after_redirect).is_empty() {
                                self.parsed.problems.push("words after a here-document's redirection".into());
                                rendered.poison("words after a redirection");
                            }
                        }
                        "heredoc_body" => {
                            if self.text(child).contains('`') {
                                self.parsed.problems.push("a here-document with backticks runs commands".into());
                            }
                            let poisoned = std::mem::take(&mut rendered);
                            rendered = match self.here_document(child, quoted, strip_tabs) {
                                Some(body) => {
                                    let mut r = Render::text("<<< ");
                                    r.append(body);
                                    r
                                }
                                // An empty document: nothing to read.
                                None => Render::text("</dev/null"),
                            };
                            rendered.append(poisoned);
                        }
                        // `cat <<EOF | sh`: the pipeline after the here-doc start.
                        "pipeline" | "command" | "list" => {
                            self.statement(child, &[], None);
                            rendered.poison("commands after a here-document start");
                        }
                        "heredoc_end" => {}
                        // `cat <<EOF -n FILE`: words after the here-doc belong to the command.
                        _ => {
                            self.parsed.problems.push(format!(
                                "`{}` after a here-document start is not checked; put arguments before `<<`",
                                self.text(child)
                            ));
                            rendered.poison("words after a here-document start");
                        }
                    }
                }
                if rendered.is_empty() {
                    // No body: bash reads an empty document.
                    rendered = Render::text("</dev/null");
                }
                for r in after {
                    rendered.push(" ");
                    rendered.append(r);
                }
                rendered
            }
            "herestring_redirect" => {
                out.push(Redirect { op: "<<<".into(), target: None });
                let mut rendered = Render::text("<<< ");
                let mut cursor = node.walk();
                let words: Vec<Node> = node.named_children(&mut cursor).collect();
                match words.as_slice() {
                    [one] => {
                        let (word, r) = self.word(*one);
                        if let Some(what) = word.opaque {
                            self.parsed.problems.push(format!("`{}` uses {what}", word.text));
                        }
                        // `read -r f <<< /proc/kmsg; cat "$f"`: a path fed as input may become an
                        // operand the proof never sees.
                        if let Some(why) = super::paths::side_effect_path(&word, false) {
                            self.parsed.problems.push(why);
                        }
                        rendered.append(r);
                    }
                    _ => {
                        self.substitutions(node);
                        rendered.poison("a here-string merlya does not write back");
                    }
                }
                rendered
            }
            other => {
                self.parsed.problems.push(format!("unsupported redirection: {other}"));
                Render::unrenderable("an unsupported redirection")
            }
        }
    }

    fn command(&mut self, node: Node, redirects: &[Redirect], pipeline: Option<(usize, usize)>) -> Render {
        let mut cmd =
            SimpleCommand { assignments: Vec::new(), words: Vec::new(), redirects: redirects.to_vec(), pipeline };
        // Taken now: a substitution inside this command's words is a command of its own.
        let body_args = std::mem::take(&mut self.body_args);
        let mut out = Render::default();
        let mut own = Vec::new();
        let mut previous_end = None;
        let mut cursor = node.walk();
        if let Some(stray) = node.children(&mut cursor).find(|c| !c.is_named()) {
            // tree-sitter leaves some escapes (`'a'\$`) outside every word: bash does not.
            self.parsed.problems.push(format!("`{}` is not read as part of a word", self.text(stray)));
        }
        // Each word's source, for a loop variable inside a word (`10.0.0.$h`, loop_values).
        let mut sources = Vec::new();
        let mut cursor = node.walk();
        for child in node.named_children(&mut cursor).collect::<Vec<_>>() {
            // Two words with nothing between them are one word to bash (`'a'\;`): tree-sitter split it.
            if previous_end == Some(child.start_byte()) {
                self.parsed.problems.push(format!("`{}` is read as two words; bash reads one", self.text(node)));
            }
            previous_end = Some(child.end_byte());
            match child.kind() {
                "variable_assignment" => {
                    cmd.assignments.push(self.text(child));
                    out.push(" ");
                    out.append(self.assignment(child));
                }
                "command_name" => {
                    let inner = child.named_child(0).unwrap_or(child);
                    let (word, parts) = self.parts(inner, false);
                    let (word, rendered) = self.register(word, parts, true);
                    cmd.words.push(word);
                    sources.push(Some(self.text(inner)));
                    out.push(" ");
                    out.append(rendered);
                }
                "file_redirect" | "heredoc_redirect" | "herestring_redirect" => {
                    own.push(self.redirect(child, &mut cmd.redirects));
                    // `cmd a 2>/dev/null b`: b is an argument, written back before the redirections.
                    for (word, rendered) in std::mem::take(&mut self.after_redirect) {
                        cmd.words.push(word);
                        sources.push(None);
                        out.push(" ");
                        out.append(rendered);
                    }
                }
                _ => {
                    let (word, rendered) = self.word(child);
                    cmd.words.push(word);
                    sources.push(Some(self.text(child)));
                    out.push(" ");
                    out.append(rendered);
                }
            }
        }
        for (word, rendered) in body_args {
            cmd.words.push(word);
            sources.push(None);
            out.push(" ");
            out.append(rendered);
        }
        for r in own {
            out.push(" ");
            out.append(r);
        }
        // A loop variable over plain literal words is checked as each of them (loop_values).
        self.parsed.commands.extend(loop_values::expand(cmd, &sources, &self.loops));
        out.trim_start();
        out
    }

    /// `NAME=value` before a command, written back with its value re-quoted.
    fn assignment(&mut self, node: Node) -> Render {
        let name = node.child_by_field_name("name").map(|n| self.text(n)).unwrap_or_default();
        let valid = name.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        let mut rendered = Render::text(format!("{name}="));
        let mut cursor = node.walk();
        if !valid || node.children(&mut cursor).any(|c| !c.is_named() && self.text(c) != "=") {
            rendered.poison("an assignment merlya does not write back");
        }
        match node.child_by_field_name("value") {
            Some(value) => rendered.append(render::word(self.parts(value, false).1, false)),
            None => self.substitutions(node),
        }
        rendered
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(p: &Parsed) -> Vec<String> {
        p.commands.iter().map(|c| c.words.iter().map(|w| w.text.clone()).collect::<Vec<_>>().join(" ")).collect()
    }

    #[test]
    fn finds_every_simple_command() {
        let p = parse("find . -name \"*.log\" | xargs grep -l err; echo $(id -u) `hostname` && (cd /tmp || true)");
        assert_eq!(
            names(&p),
            [
                "find . -name *.log",
                "xargs grep -l err",
                "id -u",
                "hostname",
                "echo $(id -u) `hostname`",
                "cd /tmp",
                "true"
            ]
        );
        assert!(p.problems.is_empty(), "{:?}", p.problems);
    }

    #[test]
    fn redirects_and_pipelines_are_recorded() {
        let p = parse("cat /etc/passwd > /tmp/y 2>&1");
        assert_eq!(p.commands[0].redirects.len(), 2);
        assert_eq!(p.commands[0].redirects[0].op, ">");
        assert_eq!(p.commands[0].redirects[0].target.as_ref().map(|t| t.text.as_str()), Some("/tmp/y"));
        let p = parse("curl -s http://x | sh");
        assert_eq!(p.commands[1].pipeline, Some((0, 1)));
    }

    #[test]
    fn quotes_are_removed_and_expansions_marked() {
        let p = parse(r#"bash -c 'systemctl restart nginx' "a b" c\ d $X"#);
        let words = &p.commands[0].words;
        assert_eq!(words[2].text, "systemctl restart nginx");
        assert_eq!(words[3].text, "a b");
        assert_eq!(words[4].text, "c d");
        assert!(words[5].dynamic);
    }

    #[test]
    fn unsupported_constructs_are_problems() {
        assert!(!parse("f(){ :; }; f").problems.is_empty());
        assert!(!parse("X=1").problems.is_empty());
        assert!(!parse("echo 'unterminated").problems.is_empty());
    }
}
