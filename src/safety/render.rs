//! What runs is what was proved: a command cleared as read-only is sent to
//! the host as merlya *renders* it from its own parse, never as the text that
//! was checked (ADR 0026).
//!
//! Every word is re-quoted from the value the classifier saw (single quotes
//! around literal text, `"${NAME}"` and `"$(…)"` around expansions, glob
//! characters left bare), only the operators and redirections the walker
//! understood are written back, comments are dropped, here-documents become
//! here-strings, and a nested shell's script (`sh -c`, `watch`) is replaced by
//! the rendering of its own analysis. So a difference between tree-sitter's
//! reading and bash's can only make a command fail, or do what was proved.

use std::collections::HashMap;

/// One piece of a rendering: text, a reference to a word (so the analysis can
/// replace a nested shell's script by its own rendering), or a construct that
/// cannot be written back faithfully.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Seg {
    Text(String),
    Word(usize),
    Unrenderable(&'static str),
}

/// A command (or part of one) as merlya will write it back.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Render(Vec<Seg>);

impl Render {
    /// A rendering of plain text.
    pub fn text(s: impl Into<String>) -> Self {
        let mut r = Self::default();
        r.push(s);
        r
    }

    /// A construct merlya does not write back: the whole line then has no rendering.
    pub fn unrenderable(what: &'static str) -> Self {
        Self(vec![Seg::Unrenderable(what)])
    }

    /// A reference to the word with this id.
    pub fn word(id: usize) -> Self {
        Self(vec![Seg::Word(id)])
    }

    /// Appends text.
    pub fn push(&mut self, s: impl Into<String>) {
        let s = s.into();
        if s.is_empty() {
            return;
        }
        match self.0.last_mut() {
            Some(Seg::Text(t)) => t.push_str(&s),
            _ => self.0.push(Seg::Text(s)),
        }
    }

    /// Appends another rendering.
    pub fn append(&mut self, other: Render) {
        for seg in other.0 {
            match seg {
                Seg::Text(t) => self.push(t),
                other => self.0.push(other),
            }
        }
    }

    /// Whether nothing would be written.
    pub fn is_empty(&self) -> bool {
        self.0.iter().all(|s| matches!(s, Seg::Text(t) if t.is_empty()))
    }

    /// Drops leading spaces (a list renders each part with the space before it).
    pub fn trim_start(&mut self) {
        if let Some(Seg::Text(t)) = self.0.first_mut() {
            let trimmed = t.trim_start_matches(' ').to_string();
            *t = trimmed;
        }
    }

    /// Whether the rendering starts with `c`.
    pub fn starts_with(&self, c: char) -> bool {
        matches!(self.0.first(), Some(Seg::Text(t)) if t.starts_with(c))
    }

    /// Marks the rendering as impossible (a construct found by a check).
    pub fn poison(&mut self, what: &'static str) {
        self.0.push(Seg::Unrenderable(what));
    }
}

/// How the analysis changes one word of the rendering.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Override {
    /// Written as this text instead (a nested shell's rendered script, quoted).
    Replace(String),
    /// Left out (the rest of a `watch` command, now inside the first word).
    Drop,
    /// Preceded by `--`: a word only known at run time is never read as an option.
    EndOptions,
    /// Followed by `--` (the arguments xargs appends come after it).
    EndOptionsAfter,
    /// Followed by these words, already quoted: options the proof added (`blkid -c /dev/null`).
    Append(String),
}

/// The words of a parse and the analysis's changes to them.
pub struct Words<'a> {
    /// Each word's own rendering, by id.
    pub renders: &'a [Render],
    /// The analysis's changes, by word id.
    pub overrides: &'a HashMap<usize, Override>,
}

impl Words<'_> {
    /// The final text of `render`, or why there is none.
    pub fn expand(&self, render: &Render) -> Result<String, String> {
        let mut out = String::new();
        self.expand_into(render, &mut out, 0)?;
        Ok(out)
    }

    fn expand_into(&self, render: &Render, out: &mut String, depth: usize) -> Result<(), String> {
        if depth > 64 {
            return Err("the command nests too deeply to be rendered".into());
        }
        for seg in &render.0 {
            match seg {
                Seg::Text(t) => out.push_str(t),
                Seg::Unrenderable(what) => return Err(format!("{what} cannot be rendered")),
                Seg::Word(id) => {
                    let own = self.renders.get(*id).ok_or("a word of the command was lost")?;
                    match self.overrides.get(id) {
                        Some(Override::Replace(text)) => out.push_str(text),
                        Some(Override::Drop) => {
                            // The separator written before the dropped word goes too.
                            if out.ends_with(' ') {
                                out.pop();
                            }
                        }
                        Some(Override::EndOptions) => {
                            out.push_str("-- ");
                            self.expand_into(own, out, depth + 1)?;
                        }
                        Some(Override::EndOptionsAfter) => {
                            self.expand_into(own, out, depth + 1)?;
                            out.push_str(" --");
                        }
                        Some(Override::Append(words)) => {
                            self.expand_into(own, out, depth + 1)?;
                            out.push(' ');
                            out.push_str(words);
                        }
                        None => self.expand_into(own, out, depth + 1)?,
                    }
                }
            }
        }
        Ok(())
    }
}

/// One piece of a word as bash reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Part {
    /// Text the program sees as is (quoted in the rendering).
    Literal(String),
    /// Unquoted pattern characters (`*`, `?`, `[`) or a leading `~`: written bare.
    Bare(String),
    /// An expansion or substitution, already rendered, and whether it stood in double quotes.
    Dynamic { render: Render, quoted: bool },
    /// A construct merlya does not write back.
    Opaque(&'static str),
}

/// The rendering of a word from its parts: adjacent literal text is merged and
/// quoted once, so the rendering of a rendering is itself (a fixed point).
pub fn word(parts: Vec<Part>, command_name: bool) -> Render {
    let mut out = Render::default();
    let mut literal = String::new();
    let mut first = true;
    let flush = |literal: &mut String, out: &mut Render, first: &mut bool| {
        if !literal.is_empty() {
            let quoted = if *first && command_name { quote_command_name(literal) } else { quote(literal) };
            out.push(quoted);
            literal.clear();
            *first = false;
        }
    };
    let empty = parts.is_empty();
    for part in parts {
        match part {
            Part::Literal(t) => literal.push_str(&t),
            Part::Bare(t) => {
                flush(&mut literal, &mut out, &mut first);
                out.push(t);
                first = false;
            }
            Part::Dynamic { render, quoted } => {
                flush(&mut literal, &mut out, &mut first);
                if quoted {
                    out.push("\"");
                    out.append(render);
                    out.push("\"");
                } else {
                    out.append(render);
                }
                first = false;
            }
            Part::Opaque(what) => {
                flush(&mut literal, &mut out, &mut first);
                out.poison(what);
            }
        }
    }
    flush(&mut literal, &mut out, &mut first);
    if empty || out.is_empty() {
        // An empty word is still a word: `''`.
        out.push("''");
    }
    out
}

/// `s` as one shell word: bare when it holds only characters no shell treats
/// specially, else in single quotes.
pub fn quote(s: &str) -> String {
    let plain = !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || "-_./:=@%+,".contains(c));
    // A lone `[` or `]` is never a pattern (a bracket needs both).
    if plain || s == "[" || s == "]" { s.to_string() } else { single_quoted(s) }
}

/// `s` in single quotes, with `'` written `'\''` and `\` written `'\\'` outside the quotes: inside
/// single quotes fish reads `\'` and `\\` as escapes where POSIX shells read them literally, so a
/// rendering with a backslash in single quotes would mean something else to a fish login shell
/// (red team 5). Outside quotes, `\'` and `\\` mean the same in both.
pub fn single_quoted(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('\'');
    for c in s.chars() {
        match c {
            '\'' => out.push_str("'\\''"),
            '\\' => out.push_str("'\\\\'"),
            c => out.push(c),
        }
    }
    out.push('\'');
    out
}

/// A command name: also quoted when bash would read it as a reserved word or
/// an assignment.
fn quote_command_name(s: &str) -> String {
    const RESERVED: [&str; 22] = [
        "if", "then", "else", "elif", "fi", "case", "esac", "for", "select", "while", "until", "do", "done", "in",
        "function", "time", "coproc", "{", "}", "!", "[[", "]]",
    ];
    if RESERVED.contains(&s) || s.contains('=') { single_quoted(s) } else { quote(s) }
}

/// The rendering of `$NAME` or `${…}` when merlya can write it back exactly:
/// a plain name, a positional or special parameter, `${#NAME}`, or a default
/// or trimming operator whose argument is plain text.
pub fn parameter(text: &str) -> Option<String> {
    let special = |n: &str| matches!(n, "@" | "*" | "#" | "?" | "$" | "!" | "-" | "0");
    let ident = |n: &str| {
        n.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    };
    let positional = |n: &str| !n.is_empty() && n.len() <= 2 && n.chars().all(|c| c.is_ascii_digit());
    if let Some(name) = text.strip_prefix('$').filter(|t| !t.starts_with('{')) {
        return if special(name) {
            Some(format!("${name}"))
        } else if ident(name) || positional(name) {
            Some(format!("${{{name}}}"))
        } else {
            None
        };
    }
    let inner = text.strip_prefix("${")?.strip_suffix('}')?;
    if special(inner) || ident(inner) || positional(inner) {
        return Some(text.to_string());
    }
    if let Some(name) = inner.strip_prefix('#')
        && ident(name)
    {
        return Some(text.to_string());
    }
    let name_len = inner.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').count();
    let (name, rest) = inner.split_at(name_len);
    if !ident(name) {
        return None;
    }
    let ops = [":-", ":+", "%%", "##", "-", "+", "%", "#"];
    let op = ops.iter().find(|op| rest.starts_with(**op))?;
    let arg = &rest[op.len()..];
    let plain_arg = arg.chars().all(|c| c.is_ascii_alphanumeric() || "_./*?,-".contains(c));
    plain_arg.then(|| text.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(parts: Vec<Part>) -> String {
        Words { renders: &[], overrides: &HashMap::new() }.expand(&word(parts, false)).unwrap()
    }

    #[test]
    fn literal_text_is_quoted_once() {
        assert_eq!(text(vec![Part::Literal("a b".into()), Part::Literal("c".into())]), "'a bc'");
        assert_eq!(text(vec![Part::Literal("it's".into())]), r"'it'\''s'");
        assert_eq!(text(vec![Part::Literal("/var/log".into())]), "/var/log");
        assert_eq!(text(vec![]), "''");
    }

    #[test]
    fn patterns_stay_bare_and_expansions_keep_their_quotes() {
        let parts = vec![Part::Literal("/var/log/".into()), Part::Bare("*".into()), Part::Literal(".log".into())];
        assert_eq!(text(parts), "/var/log/*.log");
        let dynamic = Part::Dynamic { render: Render::text("${HOME}"), quoted: true };
        assert_eq!(text(vec![dynamic, Part::Literal("/x y".into())]), "\"${HOME}\"'/x y'");
    }

    #[test]
    fn command_names_are_never_keywords_or_assignments() {
        let r = word(vec![Part::Literal("if".into())], true);
        assert_eq!(Words { renders: &[], overrides: &HashMap::new() }.expand(&r).unwrap(), "'if'");
        let r = word(vec![Part::Literal("A=b".into())], true);
        assert_eq!(Words { renders: &[], overrides: &HashMap::new() }.expand(&r).unwrap(), "'A=b'");
    }

    #[test]
    fn only_plain_parameters_are_rendered() {
        assert_eq!(parameter("$HOME").as_deref(), Some("${HOME}"));
        assert_eq!(parameter("$1").as_deref(), Some("${1}"));
        assert_eq!(parameter("$@").as_deref(), Some("$@"));
        assert_eq!(parameter("${f%.log}").as_deref(), Some("${f%.log}"));
        assert_eq!(parameter("${x:-$(id)}"), None);
        assert_eq!(parameter("${x:='a b'}"), None);
        assert_eq!(parameter("${!x}"), None);
    }

    #[test]
    fn an_unrenderable_part_poisons_the_line() {
        let r = word(vec![Part::Opaque("ANSI-C quoting")], false);
        assert!(Words { renders: &[], overrides: &HashMap::new() }.expand(&r).is_err());
    }
}
