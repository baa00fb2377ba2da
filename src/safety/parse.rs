//! Turning a shell command into the simple commands it would run, with
//! tree-sitter-bash: pipelines, `;`, `&&`, `||`, subshells, `{ }`, `$(...)`,
//! backticks, process substitution, redirections and here-docs. Anything the
//! walker does not understand is reported, never skipped: an allow-list is
//! only as good as its parser's honesty.

use tree_sitter::{Node, Parser};

/// One word of a command, with what the shell would still do to it.
///
/// A read-only verdict needs the words the program will really see: a word
/// is *literal* when it has no expansion, no unquoted glob and nothing the
/// parser only knows by its shape (ANSI-C quoting, brace or arithmetic
/// expansion).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Word {
    /// The literal text with quotes removed (expansions kept verbatim).
    pub text: String,
    /// Whether part of the word is only known at run time (`$VAR`, `$(...)`).
    pub dynamic: bool,
    /// Whether an unquoted expansion may split it into several words.
    pub splits: bool,
    /// Whether it holds an unquoted glob character (`*`, `?`, `[`).
    pub glob: bool,
    /// Whether it starts with an unquoted glob: it may expand to an option.
    pub leading_glob: bool,
    /// A construct whose value the classifier does not compute, by name.
    pub opaque: Option<&'static str>,
}

impl Word {
    /// A plain literal word (tests, synthetic words).
    pub fn literal(text: impl Into<String>) -> Self {
        Self { text: text.into(), ..Self::default() }
    }

    /// A word only known at run time that may split (`xargs` input).
    pub fn unknown(text: impl Into<String>) -> Self {
        Self { text: text.into(), dynamic: true, splits: true, ..Self::default() }
    }

    /// Whether the program will see exactly `text`, as one word.
    pub fn is_literal(&self) -> bool {
        !self.dynamic && !self.glob && self.opaque.is_none()
    }
}

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
    let skipped: String = (0..bytes.len())
        .filter(|&i| !covered[i] && !bytes[i].is_ascii_whitespace() && bytes[i] != b'\\')
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
        return parsed;
    }
    let Some(tree) = parser.parse(source, None) else {
        parsed.problems.push("the command could not be parsed".into());
        return parsed;
    };
    let root = tree.root_node();
    if root.has_error() {
        parsed.problems.push("the command is not valid shell syntax".into());
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
    let mut walker = Walker { source: source.as_bytes(), parsed, pipelines: 0 };
    walker.statement(root, &[], None);
    walker.parsed
}

struct Walker<'a> {
    source: &'a [u8],
    parsed: Parsed,
    pipelines: usize,
}

impl Walker<'_> {
    fn text(&self, node: Node) -> String {
        node.utf8_text(self.source).unwrap_or("").to_string()
    }

    fn statement(&mut self, node: Node, redirects: &[Redirect], pipeline: Option<(usize, usize)>) {
        match node.kind() {
            "program" | "list" | "compound_statement" | "subshell" | "negated_command" | "do_group" | "else_clause"
            | "elif_clause" | "if_statement" | "while_statement" | "for_statement" | "case_statement" | "case_item" => {
                if (0..node.child_count()).filter_map(|i| node.child(i)).any(|c| c.kind() == "&") {
                    self.parsed.problems.push("runs a command in the background, beyond its timeout".into());
                }
                let mut cursor = node.walk();
                let loop_variable = node.child_by_field_name("variable").map(|v| v.id());
                for child in node.named_children(&mut cursor) {
                    // Loop heads and case values hold words: their substitutions still count.
                    if Some(child.id()) == loop_variable {
                        let name = self.text(child);
                        if let Err(reason) = plain_variable(&name) {
                            self.parsed.problems.push(format!("the loop {reason}"));
                        }
                        continue;
                    }
                    match child.kind() {
                        "variable_name" | "extglob_pattern" | "regex" => {}
                        "word"
                        | "number"
                        | "string"
                        | "raw_string"
                        | "concatenation"
                        | "simple_expansion"
                        | "expansion"
                        | "command_substitution"
                        | "ansi_c_string"
                        | "translated_string" => {
                            let word = self.word(child);
                            if let Some(what) = word.opaque {
                                self.parsed.problems.push(format!("`{}` uses {what}", word.text));
                            }
                        }
                        _ => self.statement(child, redirects, None),
                    }
                }
            }
            "pipeline" => {
                let id = self.pipelines;
                self.pipelines += 1;
                let mut cursor = node.walk();
                for (pos, child) in node.named_children(&mut cursor).enumerate() {
                    self.statement(child, redirects, Some((id, pos)));
                }
            }
            "redirected_statement" => {
                let mut own: Vec<Redirect> = redirects.to_vec();
                let mut cursor = node.walk();
                for child in node.children_by_field_name("redirect", &mut cursor) {
                    self.redirect(child, &mut own);
                }
                if let Some(body) = node.child_by_field_name("body") {
                    self.statement(body, &own, pipeline);
                } else {
                    // A bare redirection such as `> file` truncates the file.
                    self.parsed.commands.push(SimpleCommand {
                        assignments: Vec::new(),
                        words: Vec::new(),
                        redirects: own,
                        pipeline,
                    });
                }
            }
            "command" => self.command(node, redirects, pipeline),
            "variable_assignment" | "variable_assignments" => {
                self.parsed.problems.push(format!("sets a shell variable ({})", self.text(node)));
                self.substitutions(node);
            }
            "declaration_command" | "unset_command" => {
                self.parsed.problems.push(format!("changes shell state ({})", self.text(node)));
            }
            "function_definition" => {
                self.parsed.problems.push("defines a shell function".into());
            }
            "test_command" => {
                if let Some(problem) = self.test_problem(node) {
                    self.parsed.problems.push(problem);
                }
                self.substitutions(node);
            }
            "c_style_for_statement" | "arithmetic_expansion" => {
                self.parsed.problems.push("arithmetic evaluation (array subscripts in it run code)".into());
                self.substitutions(node);
            }
            "heredoc_body" => {
                if self.text(node).contains('`') {
                    self.parsed.problems.push("a here-document with backticks runs commands".into());
                }
                self.substitutions(node);
            }
            "comment" | "heredoc_start" | "heredoc_end" => self.substitutions(node),
            "file_redirect" | "heredoc_redirect" | "herestring_redirect" => {
                let mut own = redirects.to_vec();
                self.redirect(node, &mut own);
                self.parsed.commands.push(SimpleCommand {
                    assignments: Vec::new(),
                    words: Vec::new(),
                    redirects: own,
                    pipeline,
                });
            }
            "ERROR" => self.parsed.problems.push(format!("cannot parse {:?}", self.text(node))),
            other => self.parsed.problems.push(format!("unsupported shell construct: {other}")),
        }
    }

    fn redirect(&mut self, node: Node, out: &mut Vec<Redirect>) {
        if self.text(node).starts_with('{') {
            self.parsed.problems.push(format!("`{}` assigns a descriptor to a variable", self.text(node)));
        }
        match node.kind() {
            "file_redirect" => {
                let mut op = String::new();
                let mut cursor = node.walk();
                for child in node.children(&mut cursor) {
                    if !child.is_named() {
                        op = self.text(child);
                    }
                }
                let target = node.child_by_field_name("destination").map(|d| self.word(d));
                out.push(Redirect { op, target });
            }
            "heredoc_redirect" => {
                out.push(Redirect { op: "<<".into(), target: None });
                let mut cursor = node.walk();
                for child in node.named_children(&mut cursor) {
                    match child.kind() {
                        "file_redirect" | "herestring_redirect" => self.redirect(child, out),
                        "heredoc_body" => {
                            if self.text(child).contains('`') {
                                self.parsed.problems.push("a here-document with backticks runs commands".into());
                            }
                            self.substitutions(child);
                        }
                        // `cat <<EOF | sh`: the pipeline after the here-doc start.
                        "pipeline" | "command" | "list" => self.statement(child, &[], None),
                        "heredoc_start" | "heredoc_end" => {}
                        // `cat <<EOF -n FILE`: words after the here-doc belong to the command.
                        _ => self.parsed.problems.push(format!(
                            "`{}` after a here-document start is not checked; put arguments before `<<`",
                            self.text(child)
                        )),
                    }
                }
            }
            "herestring_redirect" => {
                out.push(Redirect { op: "<<<".into(), target: None });
                self.substitutions(node);
            }
            other => self.parsed.problems.push(format!("unsupported redirection: {other}")),
        }
    }

    fn command(&mut self, node: Node, redirects: &[Redirect], pipeline: Option<(usize, usize)>) {
        let mut cmd =
            SimpleCommand { assignments: Vec::new(), words: Vec::new(), redirects: redirects.to_vec(), pipeline };
        let mut cursor = node.walk();
        for child in node.named_children(&mut cursor) {
            match child.kind() {
                "variable_assignment" => {
                    cmd.assignments.push(self.text(child));
                    self.substitutions(child);
                }
                "command_name" => {
                    let inner = child.named_child(0).unwrap_or(child);
                    cmd.words.push(self.word(inner));
                }
                "file_redirect" | "heredoc_redirect" | "herestring_redirect" => {
                    self.redirect(child, &mut cmd.redirects)
                }
                _ => cmd.words.push(self.word(child)),
            }
        }
        self.parsed.commands.push(cmd);
    }

    /// A word's literal text; expansions make it dynamic and substitutions are walked.
    fn word(&mut self, node: Node) -> Word {
        match node.kind() {
            "word" => unquoted_word(&self.text(node)),
            "number" => Word::literal(self.text(node)),
            "raw_string" => {
                let t = self.text(node);
                Word::literal(t.strip_prefix('\'').and_then(|t| t.strip_suffix('\'')).unwrap_or(&t))
            }
            "ansi_c_string" => {
                Word { text: self.text(node), opaque: Some("ANSI-C quoting ($'…')"), ..Word::default() }
            }
            "string" | "translated_string" => {
                let mut word = Word::default();
                let mut cursor = node.walk();
                for child in node.named_children(&mut cursor) {
                    if child.kind() == "string_content" {
                        word.text.push_str(&self.text(child));
                    } else {
                        // Inside double quotes nothing splits or globs.
                        let inner = self.word(child);
                        word.dynamic |= inner.dynamic;
                        word.opaque = word.opaque.or(inner.opaque);
                        word.text.push_str(&inner.text);
                    }
                }
                if node.kind() == "translated_string" {
                    word.opaque = word.opaque.or(Some("locale-translated string ($\"…\")"));
                }
                word
            }
            "concatenation" => {
                let mut word = Word::default();
                let mut cursor = node.walk();
                for (i, child) in node.named_children(&mut cursor).enumerate() {
                    let inner = self.word(child);
                    word.dynamic |= inner.dynamic;
                    word.splits |= inner.splits;
                    word.glob |= inner.glob;
                    word.leading_glob |= i == 0 && (inner.leading_glob || inner.splits);
                    word.opaque = word.opaque.or(inner.opaque);
                    word.text.push_str(&inner.text);
                }
                // `{a,b}` is parsed as punctuation around words: look at the source.
                let source = self.text(node);
                if word.opaque.is_none() && has_brace_expansion(&source) {
                    word.opaque = Some("brace expansion");
                }
                if source.starts_with('{') && source.contains('}') {
                    word.opaque = Some("a `{NAME}` word (bash reads it as a descriptor-variable redirection)");
                }
                word
            }
            "command_substitution" | "process_substitution" => {
                let mut cursor = node.walk();
                for child in node.named_children(&mut cursor) {
                    self.statement(child, &[], None);
                }
                let splits = node.kind() == "command_substitution";
                Word { text: self.text(node), dynamic: true, splits, leading_glob: splits, ..Word::default() }
            }
            "simple_expansion" | "expansion" => {
                self.substitutions(node);
                let text = self.text(node);
                let opaque = expansion_risk(&text);
                Word { text, dynamic: true, splits: true, leading_glob: true, opaque, ..Word::default() }
            }
            "arithmetic_expansion" => {
                self.substitutions(node);
                Word { text: self.text(node), dynamic: true, opaque: Some("arithmetic expansion"), ..Word::default() }
            }
            "brace_expression" => Word { text: self.text(node), opaque: Some("brace expansion"), ..Word::default() },
            other => {
                self.substitutions(node);
                Word { text: self.text(node), dynamic: true, opaque: Some(opaque_kind(other)), ..Word::default() }
            }
        }
    }

    /// Why a `[ ]`, `[[ ]]` or `(( ))` test cannot be vouched for, if it cannot:
    /// `-v`/`-R` and `[[ … -eq … ]]` evaluate array subscripts (code), and an
    /// unquoted expansion inside `[ ]` can split into extra operators.
    fn test_problem(&self, node: Node) -> Option<String> {
        let text = self.text(node);
        if text.starts_with("[[") && ["=~", "<(", ">(", "${", "$["].iter().any(|t| text.contains(t)) {
            return Some("`[[ … ]]` with a regex match, a substitution or an expansion is not vouched for".into());
        }
        let opener = if text.starts_with("((") {
            return Some("arithmetic evaluation (array subscripts in it run code)".into());
        } else if text.starts_with("[[") {
            "[["
        } else {
            "["
        };
        let mut leaves = Vec::new();
        let mut unquoted_expansion = false;
        let mut stack = vec![(node, false)];
        while let Some((n, quoted)) = stack.pop() {
            let kind = n.kind();
            if matches!(kind, "simple_expansion" | "expansion" | "command_substitution") && !quoted {
                unquoted_expansion = true;
            }
            if n.child_count() == 0 {
                leaves.push(self.text(n));
            }
            let inner_quoted = quoted || matches!(kind, "string" | "raw_string");
            let mut cursor = n.walk();
            for child in n.children(&mut cursor) {
                stack.push((child, inner_quoted));
            }
        }
        if leaves.iter().any(|l| l == "-v" || l == "-R") {
            return Some(format!("`{opener} -v …` evaluates an array subscript, which can run code"));
        }
        let arithmetic = ["-eq", "-ne", "-lt", "-le", "-gt", "-ge"];
        if opener == "[[" && leaves.iter().any(|l| arithmetic.contains(&l.as_str())) {
            return Some("`[[ … -eq … ]]` evaluates its operands as arithmetic, which can run code".into());
        }
        if opener == "[" && unquoted_expansion {
            return Some("an unquoted expansion in `[ … ]` may split into extra operators; quote it".into());
        }
        None
    }

    /// Walks `$(...)`, backticks and `<(...)` anywhere below `node`.
    fn substitutions(&mut self, node: Node) {
        let mut cursor = node.walk();
        for child in node.named_children(&mut cursor) {
            if matches!(child.kind(), "command_substitution" | "process_substitution") {
                self.word(child);
            } else if child.kind() == "arithmetic_expansion" {
                self.parsed.problems.push("arithmetic evaluation (array subscripts in it run code)".into());
            } else if let Some(risk) =
                (child.kind() == "expansion").then(|| expansion_risk(&self.text(child))).flatten()
            {
                self.parsed.problems.push(format!("`{}` uses {risk}", self.text(child)));
                self.substitutions(child);
            } else {
                self.substitutions(child);
            }
        }
    }
}

/// A shell variable a read-only command may set: a plain name with a lower-case
/// letter, so never an environment variable that changes what runs (`PATH`, `IFS`).
pub fn plain_variable(name: &str) -> Result<(), String> {
    let ident = name.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !ident {
        return Err(format!("sets `{name}`, which is not a plain name"));
    }
    if !name.chars().any(|c| c.is_ascii_lowercase()) {
        return Err(format!("sets `{name}`; upper-case names can change what runs (PATH, IFS, …)"));
    }
    // Lower-case names that programs read from the environment.
    let lower = name.to_ascii_lowercase();
    if lower.ends_with("_proxy")
        || lower.starts_with("lc_")
        || matches!(lower.as_str(), "home" | "path" | "ifs" | "cdpath")
    {
        return Err(format!("sets `{name}`, which programs read from the environment"));
    }
    Ok(())
}

/// An unquoted word: backslashes removed, globs and braces noted.
fn unquoted_word(raw: &str) -> Word {
    let mut word = Word { text: unescape(raw), ..Word::default() };
    // `{NAME}<file` makes bash assign a descriptor number to NAME (even PATH or IFS).
    if raw.starts_with('{') && raw.contains('}') {
        word.opaque = Some("a `{NAME}` word (bash reads it as a descriptor-variable redirection)");
    }
    let mut escaped = false;
    for (i, c) in raw.chars().enumerate() {
        if escaped {
            escaped = false;
            continue;
        }
        match c {
            '\\' => escaped = true,
            '*' | '?' | '[' => {
                word.glob = true;
                word.leading_glob |= i == 0;
            }
            _ => {}
        }
    }
    if has_brace_expansion(raw) {
        word.opaque = Some("brace expansion");
    }
    word
}

/// Whether unquoted source text holds `{a,b}` or `{1..3}`.
fn has_brace_expansion(raw: &str) -> bool {
    let mut depth_start = None;
    let mut escaped = false;
    let mut quote = None;
    for (i, c) in raw.char_indices() {
        if escaped {
            escaped = false;
            continue;
        }
        match (quote, c) {
            (_, '\\') if quote != Some('\'') => escaped = true,
            (None, '\'' | '"') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (None, '{') => depth_start = Some(i),
            (None, '}') => {
                if let Some(start) = depth_start.take() {
                    let inside = &raw[start + 1..i];
                    if inside.contains(',') || inside.contains("..") {
                        return true;
                    }
                }
            }
            _ => {}
        }
    }
    false
}

/// Why a `${…}` expansion evaluates code or assigns, if it does: array
/// subscripts and substring offsets are arithmetic (which runs `$(…)` in a
/// variable's value), and `${x:=v}` assigns.
fn expansion_risk(text: &str) -> Option<&'static str> {
    let inner = text.strip_prefix("${").and_then(|t| t.strip_suffix('}'))?;
    if inner.starts_with('!') {
        return Some("an indirect expansion (${!x} evaluates the variable named by x)");
    }
    let inner = inner.strip_prefix('#').unwrap_or(inner);
    let name_len = inner.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').count();
    let rest = &inner[name_len..];
    if text.contains("$((") || rest.starts_with('[') {
        return Some("an array subscript or arithmetic in an expansion");
    }
    if rest.contains('@') {
        return Some("a transforming expansion (${x@P} runs prompt expansion)");
    }
    if rest.starts_with(":=") || rest.starts_with('=') {
        return Some("an assigning expansion (${x:=v})");
    }
    if rest.starts_with(':') && !rest.starts_with(":-") && !rest.starts_with(":+") && !rest.starts_with(":?") {
        return Some("a substring offset (arithmetic) in an expansion");
    }
    None
}

/// A stable name for a node kind the word walker does not compute.
fn opaque_kind(kind: &str) -> &'static str {
    match kind {
        "subscript" => "array subscript",
        "extglob_pattern" => "extended glob",
        _ => "a shell construct the classifier does not evaluate",
    }
}

/// Removes backslash escapes from an unquoted word.
fn unescape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            // A backslash before a new line joins the lines: both disappear.
            if let Some(next) = chars.next().filter(|n| *n != '\n') {
                out.push(next);
            }
        } else {
            out.push(c);
        }
    }
    out
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
