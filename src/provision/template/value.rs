//! A variable's value, typed: parsed from `--var name=text` or a YAML default by the variable's
//! declared type, checked against its rules, and — for a secret — never shown.
//!
//! A secret is either given (its value, masked as `***` by `Debug` and `Display` and never stored) or
//! a reference to the keyring (`@name`, resolved only at render time through [`crate::secrets`]).
//! Answers are stored so that an update can render again: a stored answer holds the reference,
//! and serializing a given secret is an error rather than a value written to disk.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::schema::{VarType, Variable};

/// What a value a variable was given is (as the template files will see it).
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// A string, number, boolean, list or map (`null` for an optional variable left unset).
    Plain(serde_json::Value),
    /// A secret.
    Secret(Secret),
}

/// A secret's value or where to find it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Secret {
    /// A secret on the keyring, by name (`db:prod:password`, given as `@db:prod:password`).
    Reference(String),
    /// The value itself, given for one render: masked wherever shown, refused when stored.
    Given(Hidden),
}

impl Secret {
    /// The keyring name, for a reference.
    pub fn reference(&self) -> Option<&str> {
        match self {
            Secret::Reference(name) => Some(name),
            Secret::Given(_) => None,
        }
    }
}

/// A secret's value: `***` to `Debug` and `Display`, readable only through [`Hidden::expose`].
#[derive(Clone, PartialEq, Eq)]
pub struct Hidden(String);

impl Hidden {
    /// Wraps a value.
    pub fn new(value: String) -> Self {
        Self(value)
    }

    /// The value: for the rendered files and nowhere else.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Hidden {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

impl fmt::Display for Hidden {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

impl fmt::Display for Answer {
    /// As a person reads it: JSON for plain values, `@name` for a reference, `***` for a secret.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Answer::Plain(value) => write!(f, "{value}"),
            Answer::Secret(Secret::Reference(name)) => write!(f, "@{name}"),
            Answer::Secret(Secret::Given(hidden)) => write!(f, "{hidden}"),
        }
    }
}

/// How an answer is kept: `{"value": …}` or `{"secret": "name"}` (a reference).
#[derive(Serialize)]
#[serde(rename_all = "snake_case")]
enum StoredRef<'a> {
    Value(&'a serde_json::Value),
    Secret(&'a str),
}

#[derive(Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
enum Stored {
    Value(serde_json::Value),
    Secret(String),
}

impl Serialize for Answer {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Answer::Plain(value) => StoredRef::Value(value).serialize(s),
            Answer::Secret(Secret::Reference(name)) => StoredRef::Secret(name).serialize(s),
            Answer::Secret(Secret::Given(_)) => Err(serde::ser::Error::custom(
                "a secret given as a value is never stored: keep it on the keyring (merlya secret set NAME) and give @NAME",
            )),
        }
    }
}

impl<'de> Deserialize<'de> for Answer {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match Stored::deserialize(d)? {
            Stored::Value(value) => Ok(Answer::Plain(value)),
            Stored::Secret(name) => crate::secrets::validate_name(&name)
                .map(|()| Answer::Secret(Secret::Reference(name)))
                .map_err(serde::de::Error::custom),
        }
    }
}

/// A value that is not of the declared type. Never quotes a secret.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("expected {}, got {found}", expected_phrase(*expected))]
pub struct TypeError {
    /// The declared type.
    pub expected: VarType,
    /// What was given, said without revealing a secret.
    pub found: String,
}

fn expected_phrase(kind: VarType) -> &'static str {
    match kind {
        VarType::String => "a string",
        VarType::Number => "a number",
        VarType::Boolean => "a boolean (true or false)",
        VarType::List => "a list (JSON or YAML, like [a, b])",
        VarType::Map => "a map (JSON or YAML, like {env: prod})",
        VarType::Secret => "a secret (a value, or @name for one on the keyring)",
    }
}

/// What a JSON value is, for messages (`a number`, `a map`).
fn kind_of(value: &serde_json::Value) -> &'static str {
    match value {
        serde_json::Value::Null => "nothing (null)",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "a list",
        serde_json::Value::Object(_) => "a map",
    }
}

/// Parses `text` from a command line (`--var name=text`) as `kind`.
pub fn parse_text(kind: VarType, text: &str) -> Result<Answer, TypeError> {
    let wrong = |found: String| TypeError { expected: kind, found };
    let quoted = || format!("`{}`", crate::input::shorten(text));
    match kind {
        VarType::String => Ok(Answer::Plain(serde_json::Value::String(text.to_string()))),
        VarType::Secret => secret_from_text(text).map_err(wrong),
        VarType::Boolean => match text {
            "true" => Ok(Answer::Plain(true.into())),
            "false" => Ok(Answer::Plain(false.into())),
            _ => Err(wrong(quoted())),
        },
        VarType::Number => number_from_text(text).map(Answer::Plain).ok_or_else(|| wrong(quoted())),
        VarType::List | VarType::Map => {
            let parsed: serde_json::Value = crate::input::from_yaml(text)
                .map_err(|e| wrong(format!("{} (not JSON or YAML: {})", quoted(), e.message())))?;
            match (&parsed, kind) {
                (serde_json::Value::Array(_), VarType::List) | (serde_json::Value::Object(_), VarType::Map) => {
                    Ok(Answer::Plain(parsed))
                }
                _ => Err(wrong(format!("{} ({})", quoted(), kind_of(&parsed)))),
            }
        }
    }
}

/// An integer, else a finite decimal.
fn number_from_text(text: &str) -> Option<serde_json::Value> {
    let text = text.trim();
    if let Ok(n) = text.parse::<i64>() {
        return Some(n.into());
    }
    let f = text.parse::<f64>().ok().filter(|f| f.is_finite())?;
    serde_json::Number::from_f64(f).map(serde_json::Value::Number)
}

/// `@name` is a reference to the keyring; anything else is the value.
fn secret_from_text(text: &str) -> Result<Answer, String> {
    match text.strip_prefix('@') {
        Some(name) => crate::secrets::validate_name(name)
            .map(|()| Answer::Secret(Secret::Reference(name.to_string())))
            .map_err(|e| format!("a reference that is not a secret name ({e})")),
        None if text.is_empty() => Err("an empty value".into()),
        None => Ok(Answer::Secret(Secret::Given(Hidden::new(text.to_string())))),
    }
}

/// Reads a value written in YAML (a default, an allowed value) as `kind`: types must match as
/// written (`3` is not a string).
pub fn from_yaml(kind: VarType, value: &serde_json::Value) -> Result<Answer, TypeError> {
    use serde_json::Value as J;
    let fits = matches!(
        (kind, value),
        (VarType::String, J::String(_))
            | (VarType::Number, J::Number(_))
            | (VarType::Boolean, J::Bool(_))
            | (VarType::List, J::Array(_))
            | (VarType::Map, J::Object(_))
    );
    match (kind, value) {
        _ if fits => Ok(Answer::Plain(value.clone())),
        (VarType::Secret, J::String(text)) => {
            secret_from_text(text).map_err(|found| TypeError { expected: kind, found })
        }
        _ => Err(TypeError { expected: kind, found: kind_of(value).to_string() }),
    }
}

/// `pattern` anchored at both ends: a value matches it whole or not at all.
pub fn full_match_regex(pattern: &str) -> Result<regex::Regex, regex::Error> {
    regex::Regex::new(&format!("^(?:{pattern})$"))
}

/// Checks `answer` against the variable's rules. A reference is checked once resolved
/// ([`check_secret`]); `null` (an optional variable left unset) has nothing to check.
pub fn check(variable: &Variable, answer: &Answer) -> Result<(), String> {
    match answer {
        Answer::Plain(serde_json::Value::Null) => Ok(()),
        Answer::Plain(value) => check_plain(variable, value),
        Answer::Secret(Secret::Reference(_)) => Ok(()),
        Answer::Secret(Secret::Given(hidden)) => check_secret(variable, hidden.expose()),
    }
}

/// Checks a secret's value against the variable's rules, never saying it.
pub fn check_secret(variable: &Variable, value: &str) -> Result<(), String> {
    let rules = &variable.validation;
    if let Some(pattern) = &rules.pattern {
        let re = full_match_regex(pattern).map_err(|e| format!("pattern: {e}"))?;
        if !re.is_match(value) {
            return Err(format!("the secret does not match the pattern {pattern}"));
        }
    }
    let length = value.chars().count();
    bounds(rules.min, rules.max, length as f64)
        .map_err(|bound| format!("the secret is {length} characters long, {bound}"))
}

fn check_plain(variable: &Variable, value: &serde_json::Value) -> Result<(), String> {
    use serde_json::Value as J;
    let rules = &variable.validation;
    let shown = || crate::input::shorten(&value.to_string());
    if let (Some(pattern), J::String(text)) = (&rules.pattern, value) {
        let re = full_match_regex(pattern).map_err(|e| format!("pattern: {e}"))?;
        if !re.is_match(text) {
            return Err(format!("{} does not match the pattern {pattern}", shown()));
        }
    }
    let measure = match value {
        J::Number(n) => n.as_f64().map(|n| (n, String::new())),
        J::String(s) => Some((s.chars().count() as f64, format!(" is {} characters long,", s.chars().count()))),
        J::Array(items) => Some((items.len() as f64, format!(" has {} items,", items.len()))),
        J::Object(entries) => Some((entries.len() as f64, format!(" has {} entries,", entries.len()))),
        J::Bool(_) | J::Null => None,
    };
    if let Some((measured, said)) = measure {
        bounds(rules.min, rules.max, measured).map_err(|bound| match said.as_str() {
            "" => format!("{} is {bound}", shown()),
            said => format!("{}{said} {bound}", shown()),
        })?;
    }
    if let Some(allowed) = &rules.allowed
        && !allowed.iter().any(|a| same(a, value))
    {
        let list: Vec<String> = allowed.iter().map(ToString::to_string).collect();
        return Err(format!("{} is not one of the allowed values ({})", shown(), list.join(", ")));
    }
    Ok(())
}

/// Two values equal as a person means it (`2` and `2.0` are the same number).
fn same(a: &serde_json::Value, b: &serde_json::Value) -> bool {
    match (a, b) {
        (serde_json::Value::Number(x), serde_json::Value::Number(y)) => x.as_f64() == y.as_f64(),
        _ => a == b,
    }
}

/// `Err("below the minimum of 3")` or `Err("above the maximum of 9")` when `measured` is out of
/// `[min, max]`.
fn bounds(min: Option<f64>, max: Option<f64>, measured: f64) -> Result<(), String> {
    if let Some(min) = min
        && measured < min
    {
        return Err(format!("below the minimum of {min}"));
    }
    if let Some(max) = max
        && measured > max
    {
        return Err(format!("above the maximum of {max}"));
    }
    Ok(())
}

#[cfg(test)]
mod tests;
