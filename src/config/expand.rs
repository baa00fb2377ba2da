//! `${VAR}` and `${VAR:-default}` expansion of configuration text.
//!
//! Done on the raw text, line by line, so that an unset variable is reported
//! with its line. YAML comments are left alone (the default file documents the
//! syntax in comments). `$$` stands for a literal `$`.

use std::path::Path;

use super::ConfigError;

/// Why a text could not be expanded, with the 1-based line.
#[derive(Debug, PartialEq, Eq)]
pub enum ExpandError {
    /// `${VAR}` with VAR unset and no default.
    Unset { line: usize, var: String },
    /// Unclosed `${` or a bad name.
    Malformed { line: usize, detail: String },
}

impl ExpandError {
    /// Attaches the file name.
    pub fn into_config_error(self, path: &Path) -> ConfigError {
        match self {
            ExpandError::Unset { line, var } => ConfigError::UnsetVar { path: path.to_path_buf(), line, var },
            ExpandError::Malformed { line, detail } => ConfigError::BadVar { path: path.to_path_buf(), line, detail },
        }
    }
}

/// Top-level sections whose references are expanded later, by their user: the `mcp:` servers' `env`
/// and `headers` are expanded when a server starts, so that a missing variable names the server and
/// stops that server only.
const DEFERRED_SECTIONS: [&str; 1] = ["mcp:"];

/// Expands every reference in `text` using `lookup` (except in the [`DEFERRED_SECTIONS`]).
pub fn expand_vars(text: &str, lookup: &dyn Fn(&str) -> Option<String>) -> Result<String, ExpandError> {
    let mut out = String::with_capacity(text.len());
    let mut deferred = false;
    for (index, line) in text.split_inclusive('\n').enumerate() {
        let top_level = !line.starts_with([' ', '\t', '#', '\n', '\r']) && !line.trim().is_empty();
        if top_level {
            deferred = DEFERRED_SECTIONS.iter().any(|s| line.starts_with(s));
        }
        if deferred {
            out.push_str(line);
            continue;
        }
        let (body, comment) = split_comment(line);
        out.push_str(&expand_line(body, index + 1, lookup)?);
        out.push_str(comment);
    }
    Ok(out)
}

/// Expands the references in one value (`line` 0: the caller names where it came from).
pub fn expand_value(value: &str, lookup: &dyn Fn(&str) -> Option<String>) -> Result<String, ExpandError> {
    expand_line(value, 0, lookup)
}

/// Splits off a YAML comment: `#` at the start or after whitespace, outside quotes.
fn split_comment(line: &str) -> (&str, &str) {
    let mut quote: Option<char> = None;
    let mut prev_space = true;
    for (i, c) in line.char_indices() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"') => quote = Some(c),
            (None, '#') if prev_space => return line.split_at(i),
            _ => {}
        }
        prev_space = c.is_whitespace();
    }
    (line, "")
}

fn expand_line(line: &str, line_no: usize, lookup: &dyn Fn(&str) -> Option<String>) -> Result<String, ExpandError> {
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    while let Some(pos) = rest.find('$') {
        out.push_str(&rest[..pos]);
        let after = &rest[pos + 1..];
        if let Some(tail) = after.strip_prefix('$') {
            out.push('$');
            rest = tail;
        } else if let Some(inner_start) = after.strip_prefix('{') {
            let close = inner_start
                .find('}')
                .ok_or_else(|| ExpandError::Malformed { line: line_no, detail: "`${` without a closing `}`".into() })?;
            let inner = &inner_start[..close];
            let (name, default) = match inner.split_once(":-") {
                Some((n, d)) => (n, Some(d)),
                None => (inner, None),
            };
            if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                return Err(ExpandError::Malformed {
                    line: line_no,
                    detail: format!("`${{{inner}}}`: expected a variable name of letters, digits and _"),
                });
            }
            match (lookup(name), default) {
                (Some(value), _) => out.push_str(&value),
                (None, Some(d)) => out.push_str(d),
                (None, None) => return Err(ExpandError::Unset { line: line_no, var: name.into() }),
            }
            rest = &inner_start[close + 1..];
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        match name {
            "USER_NAME" => Some("ops".into()),
            "EMPTY" => Some(String::new()),
            _ => None,
        }
    }

    #[test]
    fn expands_set_and_default() {
        let out = expand_vars("a: ${USER_NAME}\nb: ${MISSING:-fallback}\nc: ${EMPTY}\n", &env).unwrap();
        assert_eq!(out, "a: ops\nb: fallback\nc: \n");
    }

    #[test]
    fn unset_without_default_names_line() {
        let err = expand_vars("a: 1\nb: ${NOPE}\n", &env).unwrap_err();
        assert_eq!(err, ExpandError::Unset { line: 2, var: "NOPE".into() });
    }

    #[test]
    fn comments_and_dollar_escape_are_kept() {
        let out = expand_vars("# ${NOPE} here\na: \"x # ${USER_NAME}\" # ${NOPE}\nb: $$HOME $x\n", &env).unwrap();
        assert_eq!(out, "# ${NOPE} here\na: \"x # ops\" # ${NOPE}\nb: $HOME $x\n");
    }

    #[test]
    fn the_mcp_section_is_left_for_its_servers_to_expand() {
        let text = "a: ${USER_NAME}\nmcp:\n  servers:\n    x:\n      env: {T: \"${NOPE}\"}\nb: ${USER_NAME}\n";
        let out = expand_vars(text, &env).unwrap();
        assert_eq!(out, "a: ops\nmcp:\n  servers:\n    x:\n      env: {T: \"${NOPE}\"}\nb: ops\n");
        assert_eq!(expand_value("Bearer ${USER_NAME}", &env).unwrap(), "Bearer ops");
        assert_eq!(expand_value("${NOPE}", &env), Err(ExpandError::Unset { line: 0, var: "NOPE".into() }));
    }

    #[test]
    fn malformed_reference_is_an_error() {
        assert!(matches!(expand_vars("a: ${OPEN\n", &env), Err(ExpandError::Malformed { line: 1, .. })));
        assert!(matches!(expand_vars("a: ${bad-name}\n", &env), Err(ExpandError::Malformed { line: 1, .. })));
    }
}
