//! `for h in web1 web2; do ping -c1 "$h"; done`: a loop over plain literal words gives its
//! variable exactly those values, so a command of the body that uses the variable as a whole word
//! is checked once per value, as if each had been typed. Without this, `$h` is "only known at run
//! time" and every program that could send it somewhere (ping, dig) refuses it.
//!
//! The rendering is unchanged (the loop and `"${h}"` are written back as they are): bash assigns
//! the same literal words merlya checked. A value is plain (letters, digits, `-_./:=@%+,`), so
//! splitting and globbing cannot change it whether or not the expansion is quoted, and a value
//! that starts with `-` is checked as the option it becomes. The body may not name the variable
//! anywhere else (`h=x`, `read h`, `${h:=x}`, an option `-h` too: a conservative refusal), so
//! nothing in it can give the variable another value.

use super::{SimpleCommand, Word};
use crate::safety::render;

/// At most this many values, and this many copies of one command.
const MAX_COPIES: usize = 64;

/// The values a loop variable takes in the body being walked.
#[derive(Debug, Clone)]
pub(super) struct Binding {
    name: String,
    values: Vec<String>,
}

/// The binding `for NAME in WORDS; do BODY; done` gives, when every word is a plain literal and
/// `body` (its text) names NAME only as `$NAME` or `${NAME}`.
pub(super) fn binding(name: &str, words: &[Word], body: &str) -> Option<Binding> {
    let plain = |w: &Word| w.is_literal() && !w.text.is_empty() && render::quote(&w.text) == w.text;
    if words.is_empty() || words.len() > MAX_COPIES || !words.iter().all(plain) {
        return None;
    }
    if names_otherwise(name, body) {
        return None;
    }
    Some(Binding { name: name.to_string(), values: words.iter().map(|w| w.text.clone()).collect() })
}

/// Whether `text` names `name` other than in `$name` / `${name}`.
fn names_otherwise(name: &str, text: &str) -> bool {
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let braced = format!("${{{name}}}");
    let bare = format!("${name}");
    let mut rest = text.replace(&braced, " ");
    // `$name` followed by a character that is not part of a name.
    let mut cleaned = String::with_capacity(rest.len());
    while let Some(at) = rest.find(&bare) {
        let after = &rest[at + bare.len()..];
        cleaned.push_str(&rest[..at]);
        if after.starts_with(ident) {
            cleaned.push_str(&bare);
        } else {
            cleaned.push(' ');
        }
        rest = after.to_string();
    }
    cleaned.push_str(&rest);
    cleaned.match_indices(name).any(|(at, _)| {
        let before = cleaned[..at].chars().next_back();
        let after = cleaned[at + name.len()..].chars().next();
        !before.is_some_and(ident) && !after.is_some_and(ident)
    })
}

/// The value-set of `word`, when it is exactly a bound variable (`$h`, `"${h}"`).
fn bound<'b>(word: &Word, bindings: &'b [Binding]) -> Option<&'b [String]> {
    if !word.dynamic || word.glob || word.opaque.is_some() {
        return None;
    }
    bindings
        .iter()
        .rev()
        .find(|b| word.text == format!("${}", b.name) || word.text == format!("${{{}}}", b.name))
        .map(|b| b.values.as_slice())
}

/// Characters that mean nothing to bash outside quotes (a value made of them and of plain loop
/// values neither splits, globs, expands a tilde or braces, nor quotes anything).
fn plain_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || "-_./:=@%+,".contains(c)
}

/// The values of a word whose source (`10.0.0.$h`, `"web-${n}.lan"`) is plain characters and
/// bound variables only, wholly double-quoted or not: each value is the text with every variable
/// replaced by each of its values (a superset when one variable appears twice). `None` for any
/// other shape (a single-quoted `$h` stays the text `$h`, so only the source can tell).
fn spelled_values(source: &str, bindings: &[Binding]) -> Option<Vec<String>> {
    let inner = source.strip_prefix('"').and_then(|s| s.strip_suffix('"')).unwrap_or(source);
    let chars: Vec<char> = inner.chars().collect();
    let mut values = vec![String::new()];
    let mut any = false;
    let mut i = 0;
    while i < chars.len() {
        if plain_char(chars[i]) {
            values.iter_mut().for_each(|v| v.push(chars[i]));
            i += 1;
            continue;
        }
        if chars[i] != '$' {
            return None;
        }
        let braced = chars.get(i + 1) == Some(&'{');
        let start = i + 1 + usize::from(braced);
        let mut end = start;
        while end < chars.len() && (chars[end].is_ascii_alphanumeric() || chars[end] == '_') {
            end += 1;
        }
        let name: String = chars[start..end].iter().collect();
        if braced && chars.get(end) != Some(&'}') {
            return None;
        }
        let binding = bindings.iter().rev().find(|b| b.name == name)?;
        if values.len() * binding.values.len() > MAX_COPIES {
            return None;
        }
        values = values.iter().flat_map(|v| binding.values.iter().map(move |b| format!("{v}{b}"))).collect();
        any = true;
        i = end + usize::from(braced);
    }
    any.then_some(values)
}

/// `cmd` once per combination of values of the bound variables it uses as whole words or inside
/// plain words (`sources`: each word's source text, when it is one node of the line), each such
/// word made the literal value, keeping its id so the rendering still writes the variable; or
/// `cmd` itself when it uses none or the combinations would be too many.
pub(super) fn expand(cmd: SimpleCommand, sources: &[Option<String>], bindings: &[Binding]) -> Vec<SimpleCommand> {
    if bindings.is_empty() {
        return vec![cmd];
    }
    let mut copies = vec![cmd.clone()];
    for (i, word) in cmd.words.iter().enumerate() {
        let spelled = || {
            let source = sources.get(i)?.as_deref()?;
            (word.dynamic && word.opaque.is_none()).then(|| spelled_values(source, bindings))?
        };
        let owned;
        let values = match bound(word, bindings) {
            Some(values) => values,
            None => match spelled() {
                Some(v) => {
                    owned = v;
                    owned.as_slice()
                }
                None => continue,
            },
        };
        if copies.len() * values.len() > MAX_COPIES {
            return vec![cmd];
        }
        copies = copies
            .into_iter()
            .flat_map(|copy| {
                values.iter().map(move |value| {
                    let mut copy = copy.clone();
                    copy.words[i] = Word { text: value.clone(), id: word.id, ..Word::default() };
                    copy
                })
            })
            .collect();
    }
    copies
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(list: &[&str]) -> Vec<Word> {
        list.iter().map(|w| Word::literal(*w)).collect()
    }

    #[test]
    fn a_binding_needs_plain_literal_values_and_a_body_that_never_renames_the_variable() {
        assert!(binding("h", &words(&["web1", "db-2.example"]), "ping -c1 \"$h\"; echo ${h}").is_some());
        assert!(binding("h", &words(&["a b"]), "ping $h").is_none(), "a value that splits");
        assert!(binding("h", &words(&["web*"]), "ping $h").is_none(), "a value that globs");
        assert!(binding("h", &[], "ping $h").is_none());
        assert!(binding("h", &[Word::unknown("$(cat /etc/hostname)")], "ping $h").is_none());
        for body in ["h=evil; ping $h", "read h; ping $h", "ping ${h:=x}", "ping -h $h", "for h in x; do :; done"] {
            assert!(binding("h", &words(&["web1"]), body).is_none(), "{body}");
        }
        assert!(binding("h", &words(&["web1"]), "echo $host $h").is_some(), "`$host` is another variable");
        assert!(binding("h", &words(&["web1"]), "echo ${#h}").is_none());
        assert!(binding("host", &words(&["web1"]), "ping -c1 $host; dig +short ${host}").is_some());
    }

    #[test]
    fn a_bound_variable_inside_a_plain_word_gives_each_value() {
        let b = vec![binding("h", &words(&["1", "2"]), "ping 10.0.0.$h").unwrap_or_else(|| panic!("binding"))];
        assert_eq!(spelled_values("10.0.0.$h", &b), Some(vec!["10.0.0.1".to_string(), "10.0.0.2".to_string()]));
        assert_eq!(
            spelled_values("\"web-${h}.lan\"", &b),
            Some(vec!["web-1.lan".to_string(), "web-2.lan".to_string()])
        );
        for source in ["'$h'$h", "x$other", "x$h*", "~/$h", "x${h:-y}", "a\\$h", "\"$h\"x$h", "plain", "{a,b}$h"] {
            assert_eq!(spelled_values(source, &b), None, "{source}");
        }
    }
}
