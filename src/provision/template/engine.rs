//! The minijinja environment every template file is checked and rendered in, set up once here so
//! that loading and rendering see the same rules:
//!
//! - strict undefined: a name no one set is an error, never an empty string in a `.tf` file;
//! - a fuel budget ([`FUEL`]): a loop that would run for minutes or fill memory is stopped;
//! - no loader: `{% include %}` reaches the template's own files, never the disk;
//! - no debug dump: an error never prints the render's variables (a secret among them);
//! - values written for the file they land in, by its name: in `*.tf.j2` / `*.tfvars.j2` /
//!   `*.hcl.j2` a string is escaped for an HCL quoted string (`"`, `\`, newlines, `${` and `%{`,
//!   which Terraform would otherwise interpolate) and a number, boolean, list, map or none is
//!   written as an HCL literal; in `*.json.j2` the same for JSON. A value from a variable cannot
//!   close its string and add a resource (a `local-exec` provisioner runs on this machine).
//!   The `hcl` and `json` filters write any value as a whole literal, quotes included.

use std::collections::BTreeMap;
use std::fmt::Write;

use minijinja::value::ValueKind;
use minijinja::{AutoEscape, Environment, Error, ErrorKind, Output, State, UndefinedBehavior, Value};

/// The fuel of one render: about 250 000 instructions and at most ~16 MB (minijinja charges about
/// 64 bytes a unit). The built-in templates use a few thousand.
pub const FUEL: u64 = 250_000;

/// How values are written into a file, chosen from its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// Terraform's HCL.
    Hcl,
    /// JSON (an MCP request).
    Json,
    /// As minijinja writes them, for any other file.
    Plain,
}

impl Dialect {
    /// The dialect of the template file named `name` (`main.tf.j2` is HCL).
    pub fn of(name: &str) -> Self {
        let stem = name.strip_suffix(".j2").unwrap_or(name);
        if [".tf", ".tfvars", ".hcl"].iter().any(|ext| stem.ends_with(ext)) {
            Dialect::Hcl
        } else if stem.ends_with(".json") {
            Dialect::Json
        } else {
            Dialect::Plain
        }
    }

    fn escape(self) -> AutoEscape {
        match self {
            Dialect::Hcl => AutoEscape::Custom("hcl".into()),
            Dialect::Json => AutoEscape::Custom("json".into()),
            Dialect::Plain => AutoEscape::None,
        }
    }
}

/// A template file that does not parse.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyntaxError {
    /// The file, relative to the template's folder.
    pub file: String,
    /// 1-based line, 0 when minijinja did not say.
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

/// An environment holding `files` (relative path → source), with the rules above.
pub fn environment(files: &BTreeMap<String, String>) -> Result<Environment<'static>, SyntaxError> {
    let mut env = Environment::new();
    env.set_undefined_behavior(UndefinedBehavior::Strict);
    env.set_fuel(Some(FUEL));
    env.set_debug(false);
    // Block tags on lines of their own leave no blank lines in the rendered files, and a file keeps
    // its final newline (terraform fmt wants both).
    if let Ok(syntax) = minijinja::syntax::SyntaxConfig::builder()
        .trim_blocks(true)
        .lstrip_blocks(true)
        .keep_trailing_newline(true)
        .build()
    {
        env.set_syntax(syntax);
    }
    env.set_auto_escape_callback(|name| Dialect::of(name).escape());
    env.set_formatter(format_value);
    env.add_filter("hcl", |value: Value| to_literal(Dialect::Hcl, &value).map(Value::from_safe_string));
    env.add_filter("json", |value: Value| to_literal(Dialect::Json, &value).map(Value::from_safe_string));
    for (name, source) in files {
        env.add_template_owned(name.clone(), source.clone()).map_err(|e| SyntaxError {
            file: name.clone(),
            line: e.line().unwrap_or(0),
            message: describe(&e),
        })?;
    }
    Ok(env)
}

/// What went wrong, without the file and line (the caller names them): `syntax error: unexpected…`.
pub fn describe(e: &Error) -> String {
    match e.detail() {
        Some(detail) => format!("{}: {detail}", e.kind()),
        None => e.kind().to_string(),
    }
}

/// The names the environment defines for every template (`range`, `dict`, `namespace`…): a file
/// using them uses no variable.
pub fn global_names(env: &Environment<'_>) -> Vec<String> {
    env.globals().map(|(name, _)| name.to_string()).collect()
}

/// Writes `{{ value }}` for the file being rendered (see the module's notes).
fn format_value(out: &mut Output, state: &mut State, value: &Value) -> Result<(), Error> {
    let dialect = match state.auto_escape() {
        AutoEscape::Custom(name) if name == "hcl" => Dialect::Hcl,
        AutoEscape::Custom(name) if name == "json" => Dialect::Json,
        _ => return minijinja::escape_formatter(out, state, value),
    };
    let text = match (value.kind(), value.as_str()) {
        (ValueKind::String, Some(text)) if value.is_safe() => text.to_string(),
        (ValueKind::String, Some(text)) => escape_string(dialect, text),
        _ => to_literal(dialect, value)?,
    };
    out.write_str(&text).map_err(|_| Error::new(ErrorKind::WriteFailure, "cannot write the rendered file"))
}

/// `value` as a literal of `dialect`: a quoted string, a number, `true`, `null`, `[…]`, `{…}`.
pub fn to_literal(dialect: Dialect, value: &Value) -> Result<String, Error> {
    let mut out = String::new();
    write_literal(dialect, value, &mut out)?;
    Ok(out)
}

fn write_literal(dialect: Dialect, value: &Value, out: &mut String) -> Result<(), Error> {
    let language = match dialect {
        Dialect::Hcl => "HCL",
        Dialect::Json => "JSON",
        Dialect::Plain => "text",
    };
    let cannot =
        |what: &str| Error::new(ErrorKind::InvalidOperation, format!("{what} cannot be written as {language}"));
    match value.kind() {
        ValueKind::Undefined => return Err(Error::new(ErrorKind::UndefinedError, "an undefined value")),
        ValueKind::None => out.push_str("null"),
        ValueKind::Bool => out.push_str(if value.is_true() { "true" } else { "false" }),
        ValueKind::Number => match value.as_i64() {
            Some(n) => out.push_str(&n.to_string()),
            None => {
                let f = f64::try_from(value.clone()).map_err(|_| cannot("this number"))?;
                if !f.is_finite() {
                    return Err(cannot("an infinite or NaN number"));
                }
                let _ = write!(out, "{f}");
            }
        },
        ValueKind::String => {
            let text = value.as_str().unwrap_or_default();
            out.push('"');
            out.push_str(&escape_string(dialect, text));
            out.push('"');
        }
        ValueKind::Seq | ValueKind::Iterable => {
            out.push('[');
            for (i, item) in value.try_iter()?.enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_literal(dialect, &item, out)?;
            }
            out.push(']');
        }
        ValueKind::Map => {
            let keys: Vec<Value> = value.try_iter()?.collect();
            if keys.is_empty() {
                out.push_str("{}");
                return Ok(());
            }
            out.push_str(if dialect == Dialect::Hcl { "{ " } else { "{" });
            for (i, k) in keys.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                let name = k.as_str().map_or_else(|| k.to_string(), str::to_string);
                out.push('"');
                out.push_str(&escape_string(dialect, &name));
                out.push_str(if dialect == Dialect::Hcl { "\" = " } else { "\": " });
                write_literal(dialect, &value.get_item(k)?, out)?;
            }
            out.push_str(if dialect == Dialect::Hcl { " }" } else { "}" });
        }
        // Bytes, objects without a literal form, invalid values.
        _ => return Err(cannot("this value")),
    }
    Ok(())
}

/// `text` escaped to sit between the double quotes of a `dialect` string.
pub fn escape_string(dialect: Dialect, text: &str) -> String {
    match dialect {
        Dialect::Hcl => escape_hcl(text),
        Dialect::Json => {
            let quoted = serde_json::Value::String(text.to_string()).to_string();
            quoted[1..quoted.len() - 1].to_string()
        }
        Dialect::Plain => text.to_string(),
    }
}

/// HCL's quoted-string escapes, and `${` / `%{` doubled so Terraform reads them as text.
fn escape_hcl(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '$' | '%' if chars.peek() == Some(&'{') => {
                out.push(c);
                out.push(c);
            }
            c if c.is_control() => {
                let _ = write!(out, "\\u{:04X}", c as u32);
            }
            c => out.push(c),
        }
    }
    out
}

/// A JSON value (an answer) as a minijinja value.
pub fn from_json(value: &serde_json::Value) -> Value {
    use serde_json::Value as J;
    match value {
        J::Null => Value::from(()),
        J::Bool(b) => Value::from(*b),
        J::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => Value::from(i),
            (None, Some(u)) => Value::from(u),
            _ => Value::from(n.as_f64().unwrap_or(f64::NAN)),
        },
        J::String(s) => Value::from(s.as_str()),
        J::Array(items) => items.iter().map(from_json).collect(),
        J::Object(entries) => Value::from_pairs(entries.iter().map(|(k, v)| (Value::from(k.as_str()), from_json(v)))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render(name: &str, source: &str, ctx: Value) -> Result<String, Error> {
        let files = BTreeMap::from([(name.to_string(), source.to_string())]);
        let env = environment(&files).map_err(|e| Error::new(ErrorKind::SyntaxError, e.message))?;
        env.get_template(name)?.render(ctx)
    }

    #[test]
    fn values_are_written_for_hcl_and_json_and_cannot_break_out_of_their_string() {
        let hostile = "x\" }\nresource \"terraform_data\" \"evil\" { input = \"${file(\"/etc/shadow\")}%{if true}";
        let ctx = minijinja::context! { s => hostile, n => 3, f => 2.5, b => true, none => (),
        l => vec![Value::from("a"), Value::from(1)],
        m => Value::from_pairs([("env", "prod"), ("a\"b", "c")]) };
        let hcl = render(
            "main.tf.j2",
            "a = \"{{ s }}\"\nn = {{ n }} {{ f }} {{ b }} {{ none }}\nl = {{ l }}\nm = {{ m }}\nq = {{ s | hcl }}\n",
            ctx.clone(),
        )
        .unwrap();
        let escaped = "x\\\" }\\nresource \\\"terraform_data\\\" \\\"evil\\\" { input = \\\"$${file(\\\"/etc/shadow\\\")}%%{if true}";
        assert_eq!(
            hcl,
            format!(
                "a = \"{escaped}\"\nn = 3 2.5 true null\nl = [\"a\", 1]\nm = {{ \"a\\\"b\" = \"c\", \"env\" = \"prod\" }}\nq = \"{escaped}\"\n"
            )
        );
        let json =
            render("req.json.j2", "{\"s\": \"{{ s }}\", \"m\": {{ m }}, \"l\": {{ l | json }}}", ctx.clone()).unwrap();
        let parsed: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(parsed["s"], hostile);
        assert_eq!(parsed["m"]["env"], "prod");
        assert_eq!(parsed["l"], serde_json::json!(["a", 1]));
        // Other files are written as minijinja writes them.
        assert_eq!(render("notes.txt.j2", "{{ s }}", ctx).unwrap(), hostile);
    }

    #[test]
    fn undefined_names_are_errors_and_fuel_stops_a_runaway_loop() {
        let e = render("main.tf.j2", "a = {{ missing }}", Value::from(())).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::UndefinedError, "{e}");
        let e = render("main.tf.j2", "{{ m.nokey }}", minijinja::context! { m => Value::from_pairs([("a", 1)]) })
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::UndefinedError, "{e}");
        let looping = "{% for i in range(10000) %}{% for j in range(10000) %}{{ i }}{% endfor %}{% endfor %}";
        let e = render("main.tf.j2", looping, Value::from(())).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::OutOfFuel, "{e}");
    }

    #[test]
    fn a_file_that_does_not_parse_is_named_with_its_line() {
        let files = BTreeMap::from([("main.tf.j2".to_string(), "a\nb {% if %}\n".to_string())]);
        let e = environment(&files).unwrap_err();
        assert_eq!((e.file.as_str(), e.line), ("main.tf.j2", 2), "{e:?}");
    }
}
