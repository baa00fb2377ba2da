//! Turning a shell command into the simple commands it would run, with
//! tree-sitter-bash: pipelines, `;`, `&&`, `||`, subshells, `{ }`, `$(...)`,
//! backticks, process substitution, redirections and here-docs. Anything the
//! walker does not understand is reported, never skipped: an allow-list is
//! only as good as its parser's honesty.

use tree_sitter::{Node, Parser};

/// One word of a command. `dynamic` words contain expansions whose value is
/// not known before the shell runs (`$VAR`, `$(...)`, globs are literal).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Word {
    /// The literal text with quotes removed (expansions kept verbatim).
    pub text: String,
    /// Whether part of the word is only known at run time.
    pub dynamic: bool,
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
            "program"
            | "list"
            | "compound_statement"
            | "subshell"
            | "negated_command"
            | "do_group"
            | "else_clause"
            | "elif_clause"
            | "if_statement"
            | "while_statement"
            | "for_statement"
            | "c_style_for_statement"
            | "case_statement"
            | "case_item" => {
                let mut cursor = node.walk();
                for child in node.named_children(&mut cursor) {
                    // Loop heads and conditions hold words and tests; their substitutions still count.
                    if child.kind() == "word" || child.kind() == "variable_name" {
                        continue;
                    }
                    self.statement(child, redirects, None);
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
            "test_command" | "comment" | "heredoc_body" | "heredoc_start" | "heredoc_end" => self.substitutions(node),
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
                        "heredoc_body" => self.substitutions(child),
                        // `cat <<EOF | sh`: the pipeline after the here-doc start.
                        "pipeline" | "command" | "list" => self.statement(child, &[], None),
                        _ => {}
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
            "word" | "number" => Word { text: unescape(&self.text(node)), dynamic: false },
            "raw_string" => {
                let t = self.text(node);
                Word { text: t.trim_start_matches('\'').trim_end_matches('\'').to_string(), dynamic: false }
            }
            "ansi_c_string" => {
                let t = self.text(node);
                Word { text: t.trim_start_matches("$'").trim_end_matches('\'').to_string(), dynamic: false }
            }
            "string" | "translated_string" | "concatenation" => {
                let mut text = String::new();
                let mut dynamic = false;
                let mut cursor = node.walk();
                let children: Vec<Node> = node.named_children(&mut cursor).collect();
                if node.kind() == "string" && children.is_empty() {
                    return Word { text: String::new(), dynamic: false };
                }
                for child in children {
                    if child.kind() == "string_content" {
                        text.push_str(&self.text(child));
                    } else {
                        let w = self.word(child);
                        dynamic |= w.dynamic;
                        text.push_str(&w.text);
                    }
                }
                Word { text, dynamic }
            }
            "command_substitution" | "process_substitution" => {
                let mut cursor = node.walk();
                for child in node.named_children(&mut cursor) {
                    self.statement(child, &[], None);
                }
                Word { text: self.text(node), dynamic: true }
            }
            "simple_expansion" | "expansion" | "arithmetic_expansion" => {
                self.substitutions(node);
                Word { text: self.text(node), dynamic: true }
            }
            _ => {
                self.substitutions(node);
                Word { text: self.text(node), dynamic: true }
            }
        }
    }

    /// Walks `$(...)`, backticks and `<(...)` anywhere below `node`.
    fn substitutions(&mut self, node: Node) {
        let mut cursor = node.walk();
        for child in node.named_children(&mut cursor) {
            if matches!(child.kind(), "command_substitution" | "process_substitution") {
                self.word(child);
            } else {
                self.substitutions(child);
            }
        }
    }
}

/// Removes backslash escapes from an unquoted word.
fn unescape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            if let Some(next) = chars.next() {
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
