//! Where a field is written in a YAML file someone wrote: a check that runs after the parser (a
//! regex that does not compile, a default of the wrong type) still names the line, like the
//! parser's own errors do. Shared by every file format that is checked beyond its types (skills,
//! templates).

/// A step of a field path: a key, or an index in a list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Seg {
    /// A mapping key (`steps`, `parse`).
    Key(String),
    /// A position in a sequence, from 0.
    Index(usize),
}

/// A key segment (shorthand for building paths).
pub fn key(k: &str) -> Seg {
    Seg::Key(k.to_string())
}

/// The path as people read it: `steps[2].parse.regex`.
pub fn render_path(path: &[Seg]) -> String {
    let mut out = String::new();
    for seg in path {
        match seg {
            Seg::Key(k) if out.is_empty() => out.push_str(k),
            Seg::Key(k) => out.push_str(&format!(".{k}")),
            Seg::Index(i) => out.push_str(&format!("[{i}]")),
        }
    }
    out
}

/// The field and the rest of a parser message (`steps[0].parse.kind: unknown variant …` gives
/// `steps[0].parse.kind` and `unknown variant …`); `(file)` when the message names no field.
pub fn split_field(message: &str) -> (String, String) {
    match message.split_once(": ") {
        Some((field, rest)) if !field.contains(' ') => (field.to_string(), rest.to_string()),
        _ => ("(file)".to_string(), message.to_string()),
    }
}

/// The line where `path` is written in block-style YAML `text`: best effort, the deepest part of
/// the path that is found (`None` when not even its first key is).
pub fn line_of(text: &str, path: &[Seg]) -> Option<usize> {
    let lines: Vec<&str> = text.lines().collect();
    let (mut from, mut parent_indent, mut found) = (0usize, -1i64, None);
    for seg in path {
        let mut hit = None;
        let mut index = 0usize;
        for (n, line) in lines.iter().enumerate().skip(from) {
            let trimmed = line.trim_start();
            if trimmed.is_empty() || trimmed.starts_with('#') {
                continue;
            }
            let indent = (line.len() - trimmed.len()) as i64;
            if n > from && indent <= parent_indent && found.is_some() {
                break;
            }
            match seg {
                Seg::Key(k) => {
                    let body = trimmed.strip_prefix("- ").unwrap_or(trimmed);
                    if indent > parent_indent && body.strip_prefix(k.as_str()).is_some_and(|rest| rest.starts_with(':'))
                    {
                        let extra = (trimmed.len() - body.len()) as i64;
                        hit = Some((n, indent + extra));
                        break;
                    }
                }
                Seg::Index(i) => {
                    if indent > parent_indent - 1 && trimmed.starts_with("- ") {
                        if index == *i {
                            hit = Some((n, indent + 1));
                            break;
                        }
                        index += 1;
                    }
                }
            }
        }
        // A field inside a flow collection (`[a, b]`, `{ min: 1 }`) is not on a line of its own:
        // the line of the collection stands for it.
        let Some((n, indent)) = hit else { break };
        found = Some(n);
        from = n;
        parent_indent = indent;
    }
    found.map(|n| n + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_is_found_in_block_yaml_and_said_as_people_read_it() {
        let text = "name: x\nvariables:\n  - name: a\n    type: string\n  - name: b\n    validation:\n      min: 3\n";
        let path = [key("variables"), Seg::Index(1), key("validation"), key("min")];
        assert_eq!(line_of(text, &path), Some(7));
        assert_eq!(render_path(&path), "variables[1].validation.min");
        assert_eq!(line_of(text, &[key("variables"), Seg::Index(0), key("type")]), Some(4));
        assert_eq!(line_of(text, &[key("outputs")]), None);
        let flow = "a: 1\nv: { min: 1, max: 2 }\nl: [x, y]\n";
        assert_eq!(line_of(flow, &[key("v"), key("max")]), Some(2));
        assert_eq!(line_of(flow, &[key("l"), Seg::Index(1)]), Some(3));
        assert_eq!(split_field("a.b: unknown field `c`"), ("a.b".into(), "unknown field `c`".into()));
        assert_eq!(split_field("missing field `name`").0, "(file)");
    }
}
