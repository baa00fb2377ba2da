//! The word half of the walk: a word's value and its parts (quotes, escapes,
//! expansions, substitutions), here-documents, and `[ ]`/`[[ ]]` tests read as
//! the simple commands bash runs.

use tree_sitter::Node;

use super::super::render::{self, Part, Render};
use super::super::words::{
    double_quoted, expansion_risk, has_brace_expansion, here_document, opaque_kind, unquoted_word,
};
use super::{Redirect, SimpleCommand, WORD_KINDS, Walker, Word};

impl Walker<'_> {
    /// A here-document's text as the word of a here-string (which, like the
    /// document, ends with a new line).
    pub(super) fn here_document(&mut self, body: Node, quoted: bool, strip_tabs: bool) -> Option<Render> {
        let mut parts = Vec::new();
        if quoted {
            parts.push(Part::Literal(self.text(body)));
        } else {
            let mut raw: Vec<u8> = Vec::new();
            let flush = |raw: &mut Vec<u8>, parts: &mut Vec<Part>| {
                if !raw.is_empty() {
                    parts.push(Part::Literal(here_document(&String::from_utf8_lossy(raw))));
                    raw.clear();
                }
            };
            let mut at = body.start_byte();
            let mut cursor = body.walk();
            for child in body.named_children(&mut cursor).collect::<Vec<_>>() {
                raw.extend_from_slice(&self.source[at.min(child.start_byte())..child.start_byte()]);
                match child.kind() {
                    "heredoc_content" => raw.extend_from_slice(&self.source[child.start_byte()..child.end_byte()]),
                    "simple_expansion" | "expansion" | "command_substitution" => {
                        let text = self.text(child);
                        raw.extend_from_slice(&text.as_bytes()[..text.len() - text.trim_start().len()]);
                        flush(&mut raw, &mut parts);
                        let (word, inner) = self.parts(child, true);
                        if let Some(what) = word.opaque {
                            self.parsed.problems.push(format!("`{}` uses {what}", word.text));
                        }
                        parts.extend(inner);
                    }
                    _ => {
                        flush(&mut raw, &mut parts);
                        self.substitutions(child);
                        parts.push(Part::Opaque("a here-document construct"));
                    }
                }
                at = child.end_byte().max(at);
            }
            raw.extend_from_slice(&self.source[at.min(body.end_byte())..body.end_byte()]);
            flush(&mut raw, &mut parts);
        }
        parts.retain(|p| !matches!(p, Part::Literal(t) if t.is_empty()));
        if strip_tabs {
            if parts.iter().any(|p| !matches!(p, Part::Literal(_))) {
                return Some(Render::unrenderable("a `<<-` here-document with expansions"));
            }
            let text: String =
                parts.iter().filter_map(|p| if let Part::Literal(t) = p { Some(t.as_str()) } else { None }).collect();
            let mut lines: Vec<&str> = text.split('\n').map(|l| l.trim_start_matches('\t')).collect();
            if lines.last().is_some_and(|l| l.is_empty()) {
                lines.pop();
            }
            parts = vec![Part::Literal(lines.join("\n") + "\n")];
        }
        if parts.is_empty() {
            return None;
        }
        // The here-string adds the final new line back.
        match parts.last_mut() {
            Some(Part::Literal(t)) if t.ends_with('\n') => {
                t.pop();
            }
            _ => return Some(Render::unrenderable("a here-document that does not end with a new line")),
        }
        Some(render::word(parts, false))
    }

    /// `[ … ]` and `[[ … ]]` as the simple command bash runs: every operand
    /// and operator a word (so `[ a > F ]` compares, it never redirects: it is
    /// written back as `test a '>' F`), with the redirections around it checked
    /// like any command's.
    pub(super) fn test(&mut self, node: Node, redirects: &[Redirect], pipeline: Option<(usize, usize)>) -> Render {
        if let Some(problem) = self.test_problem(node) {
            self.parsed.problems.push(problem);
        }
        let text = self.text(node);
        if text.starts_with("((") {
            self.substitutions(node);
            return Render::unrenderable("arithmetic");
        }
        let double = text.starts_with("[[");
        if double {
            // In sh (dash), a login shell that is not bash, or `watch`, `[[` is a command: its `>`
            // redirects and its `||` runs the next one.
            self.parsed
                .problems
                .push("`[[ … ]]` is bash syntax; another shell runs its `>` and `||`: write `[ … ]` or `test`".into());
        }
        // `[ … ]` is the builtin `test …`: written so, tree-sitter reads its quoted operators back.
        let (open, close) = if double { ("[[", " ]]") } else { ("test", "") };
        let mut words = vec![Word::literal(open)];
        let mut out = Render::text(open);
        let mut cursor = node.walk();
        let children: Vec<Node> = node.children(&mut cursor).collect();
        let inner = children.len().saturating_sub(1);
        for (i, child) in children.into_iter().enumerate() {
            let bracket = !child.is_named() && (i == 0 || i == inner);
            if !bracket {
                self.test_words(child, double, &mut words, &mut out);
            }
        }
        if double {
            words.push(Word::literal("]]"));
        }
        out.push(close);
        self.parsed.commands.push(SimpleCommand {
            assignments: Vec::new(),
            words,
            redirects: redirects.to_vec(),
            pipeline,
        });
        out
    }

    pub(super) fn test_words(&mut self, node: Node, double: bool, words: &mut Vec<Word>, out: &mut Render) {
        let kind = node.kind();
        if !node.is_named() || kind == "test_operator" {
            let token = self.text(node);
            out.push(" ");
            let bare = ["&&", "||", "!", "(", ")", "<", ">", "==", "!=", "=", "-a", "-o"];
            match (double, kind == "test_operator") {
                (false, _) => out.push(render::quote(&token)),
                (true, true) => out.push(render::quote(&token)),
                (true, false) if bare.contains(&token.as_str()) => out.push(token.clone()),
                (true, false) => out.poison("a `[[ ]]` operator merlya does not write back"),
            }
            words.push(Word::literal(token));
            return;
        }
        if WORD_KINDS.contains(&kind) {
            let (mut word, rendered) = self.word(node);
            if double {
                // Inside `[[ ]]` nothing splits or globs.
                word.splits = false;
                word.leading_glob = false;
            }
            words.push(word);
            out.push(" ");
            out.append(rendered);
            return;
        }
        match kind {
            "unary_expression" | "binary_expression" | "parenthesized_expression" | "negated_expression" => {
                let mut cursor = node.walk();
                for child in node.children(&mut cursor).collect::<Vec<_>>() {
                    self.test_words(child, double, words, out);
                }
            }
            _ => {
                self.substitutions(node);
                words.push(Word { text: self.text(node), opaque: Some(opaque_kind(kind)), ..Word::default() });
                out.poison("a test expression merlya does not write back");
            }
        }
    }

    /// A word, registered with its rendering.
    pub(super) fn word(&mut self, node: Node) -> (Word, Render) {
        let (word, parts) = self.parts(node, false);
        self.register(word, parts, false)
    }

    pub(super) fn register(&mut self, mut word: Word, parts: Vec<Part>, command_name: bool) -> (Word, Render) {
        let id = self.parsed.renders.len();
        self.parsed.renders.push(render::word(parts, command_name));
        word.id = Some(id);
        (word, Render::word(id))
    }

    /// A word's value and parts (`quoted`: inside double quotes or a
    /// here-document); expansions make it dynamic and substitutions are walked.
    pub(super) fn parts(&mut self, node: Node, quoted: bool) -> (Word, Vec<Part>) {
        match node.kind() {
            "word" => unquoted_word(&self.text(node)),
            "number" => {
                let text = self.text(node);
                (Word::literal(text.clone()), vec![Part::Literal(text)])
            }
            "raw_string" => {
                let t = self.text(node);
                let inner = t.strip_prefix('\'').and_then(|t| t.strip_suffix('\'')).unwrap_or(&t).to_string();
                (Word::literal(inner.clone()), vec![Part::Literal(inner)])
            }
            "ansi_c_string" => (
                Word { text: self.text(node), opaque: Some("ANSI-C quoting ($'…')"), ..Word::default() },
                vec![Part::Opaque("ANSI-C quoting")],
            ),
            "string" | "translated_string" => self.double_quoted(node),
            "concatenation" => {
                let mut word = Word::default();
                let mut parts = Vec::new();
                let mut cursor = node.walk();
                // tree-sitter cuts `sd[a-z]` into the words `sd`, `[`, `a-z`, `]`: adjacent unquoted
                // words are one to bash, and are read as one (so a bracket expression stays a pattern).
                let mut pieces: Vec<(Option<Node>, String)> = Vec::new();
                for child in node.named_children(&mut cursor) {
                    let adjacent = pieces.last().is_some_and(|(n, _)| n.is_none());
                    if child.kind() == "word" && adjacent {
                        if let Some((_, raw)) = pieces.last_mut() {
                            raw.push_str(&self.text(child));
                        }
                    } else if child.kind() == "word" {
                        pieces.push((None, self.text(child)));
                    } else {
                        pieces.push((Some(child), String::new()));
                    }
                }
                for (i, (child, raw)) in pieces.into_iter().enumerate() {
                    let (inner, inner_parts) = match child {
                        Some(child) => self.parts(child, quoted),
                        None => unquoted_word(&raw),
                    };
                    word.dynamic |= inner.dynamic;
                    word.splits |= inner.splits;
                    word.glob |= inner.glob;
                    word.leading_glob |= i == 0 && (inner.leading_glob || inner.splits);
                    word.opaque = word.opaque.or(inner.opaque);
                    word.text.push_str(&inner.text);
                    parts.extend(inner_parts);
                }
                let mut cursor = node.walk();
                if node.children(&mut cursor).any(|c| !c.is_named() && self.text(c).contains('`')) {
                    // `` `a``b` `` is two substitutions to bash, one to tree-sitter.
                    self.parsed.problems.push("backticks inside backticks; write `$(…)` instead".into());
                }
                // `{a,b}` is parsed as punctuation around words: look at the source.
                let source = self.text(node);
                if word.opaque.is_none() && has_brace_expansion(&source) {
                    word.opaque = Some("brace expansion");
                }
                if source.starts_with('{') && source.contains('}') && source != "{}" {
                    word.opaque = Some("a `{NAME}` word (bash reads it as a descriptor-variable redirection)");
                }
                if let Some(what) = word.opaque {
                    parts = vec![Part::Opaque(what)];
                }
                (word, parts)
            }
            "command_substitution" | "process_substitution" => {
                let text = self.text(node).trim_start().to_string();
                let inside = text.strip_prefix('`').and_then(|t| t.strip_suffix('`'));
                if inside.is_some_and(|t| t.contains('`')) {
                    // bash ends a backtick at the next unescaped one, even inside quotes; tree-sitter
                    // respects the quotes, and each level escapes the next: they count differently.
                    self.parsed.problems.push("nested backticks; write `$(…)` instead".into());
                }
                let opener = match node.kind() {
                    "command_substitution" => "$(",
                    _ if text.starts_with(">(") => ">(",
                    _ => "<(",
                };
                let mut inner = Render::default();
                let mut cursor = node.walk();
                for child in node.children(&mut cursor).collect::<Vec<_>>() {
                    if child.is_named() {
                        let r = self.statement(child, &[], None);
                        if !r.is_empty() {
                            if !inner.is_empty() {
                                inner.push("; ");
                            }
                            inner.append(r);
                        }
                    } else if self.text(child) == "&" {
                        self.background(&mut inner);
                    }
                }
                let mut rendered = Render::text(opener);
                // `$( (…) )`, never `$((`, which is arithmetic.
                if inner.starts_with('(') {
                    rendered.push(" ");
                }
                rendered.append(inner);
                rendered.push(")");
                let splits = node.kind() == "command_substitution";
                let word = Word { text, dynamic: true, splits, leading_glob: splits, ..Word::default() };
                (word, vec![Part::Dynamic { render: rendered, quoted }])
            }
            "simple_expansion" | "expansion" => {
                self.substitutions(node);
                let text = self.text(node).trim_start().to_string();
                let mut opaque = expansion_risk(&text);
                let parts = match render::parameter(&text) {
                    Some(p) => vec![Part::Dynamic { render: Render::text(p), quoted }],
                    None => {
                        opaque = opaque.or(Some("an expansion form merlya does not write back"));
                        vec![Part::Opaque("an expansion form")]
                    }
                };
                (Word { text, dynamic: true, splits: true, leading_glob: true, opaque, ..Word::default() }, parts)
            }
            "arithmetic_expansion" => {
                self.substitutions(node);
                let word = Word {
                    text: self.text(node),
                    dynamic: true,
                    opaque: Some("arithmetic expansion"),
                    ..Word::default()
                };
                (word, vec![Part::Opaque("arithmetic expansion")])
            }
            "brace_expression" => (
                Word { text: self.text(node), opaque: Some("brace expansion"), ..Word::default() },
                vec![Part::Opaque("brace expansion")],
            ),
            other => {
                self.substitutions(node);
                let what = opaque_kind(other);
                (
                    Word { text: self.text(node), dynamic: true, opaque: Some(what), ..Word::default() },
                    vec![Part::Opaque(what)],
                )
            }
        }
    }

    /// `"…"`: backslashes removed as bash removes them inside double quotes;
    /// nothing inside splits or globs.
    pub(super) fn double_quoted(&mut self, node: Node) -> (Word, Vec<Part>) {
        let mut word = Word::default();
        let mut parts = Vec::new();
        let open = if node.kind() == "translated_string" { 2 } else { 1 };
        let start = node.start_byte() + open;
        let end = node.end_byte().saturating_sub(1).max(start);
        // Literal text between expansions, unescaped as one piece (an escape may straddle two nodes).
        let mut raw: Vec<u8> = Vec::new();
        let flush = |raw: &mut Vec<u8>, word: &mut Word, parts: &mut Vec<Part>| {
            if !raw.is_empty() {
                let text = double_quoted(&String::from_utf8_lossy(raw));
                word.text.push_str(&text);
                parts.push(Part::Literal(text));
                raw.clear();
            }
        };
        let mut at = start;
        let mut cursor = node.walk();
        for child in node.named_children(&mut cursor).collect::<Vec<_>>() {
            raw.extend_from_slice(&self.source[at.min(child.start_byte())..child.start_byte()]);
            if child.kind() == "string_content" {
                raw.extend_from_slice(&self.source[child.start_byte()..child.end_byte()]);
            } else {
                // tree-sitter starts `" $(x)"`'s substitution at the blank before it: that blank is text.
                let text = self.text(child);
                raw.extend_from_slice(&text.as_bytes()[..text.len() - text.trim_start().len()]);
                flush(&mut raw, &mut word, &mut parts);
                let (inner, inner_parts) = self.parts(child, true);
                word.dynamic |= inner.dynamic;
                word.opaque = word.opaque.or(inner.opaque);
                word.text.push_str(&inner.text);
                parts.extend(inner_parts);
            }
            at = child.end_byte().max(at);
        }
        raw.extend_from_slice(&self.source[at.min(end)..end]);
        flush(&mut raw, &mut word, &mut parts);
        if node.kind() == "translated_string" {
            word.opaque = word.opaque.or(Some("locale-translated string ($\"…\")"));
        }
        if let Some(what) = word.opaque {
            parts = vec![Part::Opaque(what)];
        }
        (word, parts)
    }

    /// Why a `[ ]`, `[[ ]]` or `(( ))` test cannot be vouched for, if it cannot:
    /// `-v`/`-R` and `[[ … -eq … ]]` evaluate array subscripts (code), and an
    /// unquoted expansion inside `[ ]` can split into extra operators.
    pub(super) fn test_problem(&self, node: Node) -> Option<String> {
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
    pub(super) fn substitutions(&mut self, node: Node) {
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
