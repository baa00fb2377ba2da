//! What a `template.yaml` says: a template's name and semver version, what it makes (category),
//! where (providers), how (backends and their entry points), what it asks (variables, typed and
//! validated) and what it gives back (outputs).
//!
//! Unknown keys and wrong types are errors naming the file, the field and the line (through
//! [`crate::input::from_yaml`], like skills and the configuration); so are values that parse but
//! cannot work: a default of the wrong type, a pattern that does not compile, a provider default for
//! a provider the template does not list, a secret written as a value in the file.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde::{Deserialize, Serialize};

use super::value::{self, Answer};
use crate::input::yaml_path::{Seg, key, line_of, render_path, split_field};

/// Names the templates themselves set for every render: not declarable as variables.
pub const RESERVED: [&str; 2] = ["provider", "template"];

/// A template's schema, as written in its `template.yaml`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TemplateSpec {
    /// How people and the registry name it (`basic-vm`): lower-case letters, digits and `-`.
    pub name: String,
    /// Its semver version: the registry keeps several and `name` alone means the highest.
    #[serde(with = "semver_text")]
    pub version: semver::Version,
    /// What kind of thing it makes.
    pub category: Category,
    /// What it makes, in a sentence or two.
    pub description: String,
    /// Where it can make it (`aws`, `proxmox`, `local`); one is chosen at render time.
    pub providers: Vec<ProviderName>,
    /// How it is applied, each with the file that is rendered for it.
    pub backends: Vec<BackendEntry>,
    /// What it asks, in the order shown.
    #[serde(default)]
    pub variables: Vec<Variable>,
    /// What the made thing gives back once applied (Terraform outputs of the same names).
    #[serde(default)]
    pub outputs: Vec<Output>,
}

impl TemplateSpec {
    /// The variable named `name`.
    pub fn variable(&self, name: &str) -> Option<&Variable> {
        self.variables.iter().find(|v| v.name == name)
    }

    /// The entry point of `backend`, when the template has one.
    pub fn entry(&self, backend: Backend) -> Option<&str> {
        self.backends.iter().find(|b| b.backend == backend).map(|b| b.entry.as_str())
    }

    /// `name:version`, the registry's exact key.
    pub fn key(&self) -> String {
        format!("{}:{}", self.name, self.version)
    }
}

/// What kind of thing a template makes (for listing and choosing, not for behaviour).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Category {
    /// Machines: virtual machines, instances.
    Compute,
    /// Networks, subnets, load balancers, DNS.
    Network,
    /// Volumes, buckets, and other kept data.
    Storage,
    /// Managed databases.
    Database,
    /// Container clusters and registries.
    Container,
    /// Keys, identities, firewalls.
    Security,
}

impl fmt::Display for Category {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Category::Compute => "compute",
            Category::Network => "network",
            Category::Storage => "storage",
            Category::Database => "database",
            Category::Container => "container",
            Category::Security => "security",
        })
    }
}

/// How a rendered template is applied: the tool its files are for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Backend {
    /// `.tf` files for a Terraform change (`crate::pipeline::terraform`).
    Terraform,
    /// A request for a provisioning tool of an MCP server (`crate::mcp`).
    Mcp,
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Backend::Terraform => "terraform",
            Backend::Mcp => "mcp",
        })
    }
}

impl std::str::FromStr for Backend {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "terraform" => Ok(Backend::Terraform),
            "mcp" => Ok(Backend::Mcp),
            _ => Err(format!("`{s}` is not a backend (terraform or mcp)")),
        }
    }
}

/// A provider's name (`aws`, `gcp`, `proxmox`). Open-ended — a user's template may target any
/// provider its Terraform code knows — but checked once, here, so every module that holds one holds
/// a word that can go in a file name, a key and a message.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct ProviderName(String);

impl ProviderName {
    /// The name as written.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for ProviderName {
    type Error = String;

    fn try_from(name: String) -> Result<Self, Self::Error> {
        let ok = !name.is_empty()
            && name.len() <= 40
            && name.starts_with(|c: char| c.is_ascii_lowercase())
            && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_');
        if ok {
            Ok(Self(name))
        } else {
            Err(format!("`{name}` is not a provider name (lower-case letters, digits, - and _)"))
        }
    }
}

impl From<ProviderName> for String {
    fn from(name: ProviderName) -> Self {
        name.0
    }
}

impl fmt::Display for ProviderName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A backend and the file rendered for it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BackendEntry {
    /// The tool.
    pub backend: Backend,
    /// The `*.j2` file (relative to the template's folder) whose rendering, named without `.j2`, is
    /// the output; other `*.j2` files are partials it may include.
    pub entry: String,
}

/// The type of a variable: what `--var name=text` is parsed as and what a default must be.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum VarType {
    /// Any text.
    String,
    /// An integer or a decimal number.
    Number,
    /// `true` or `false`.
    Boolean,
    /// A list (JSON or YAML: `[a, b]`).
    List,
    /// A mapping with string keys (JSON or YAML: `{env: prod}`).
    Map,
    /// Text that is masked everywhere but in the rendered files; given as a value or as a
    /// reference (`@name`) to a secret on the keyring, resolved only at render time.
    Secret,
}

impl fmt::Display for VarType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            VarType::String => "string",
            VarType::Number => "number",
            VarType::Boolean => "boolean",
            VarType::List => "list",
            VarType::Map => "map",
            VarType::Secret => "secret",
        })
    }
}

/// One variable a template asks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Variable {
    /// Its name in the template files (`{{ vm_name }}`): lower-case letters, digits and `_`.
    pub name: String,
    /// What a value must be.
    #[serde(rename = "type")]
    pub kind: VarType,
    /// A value must be given (a required variable has no default).
    #[serde(default)]
    pub required: bool,
    /// The value when none is given (and no provider default applies).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<serde_json::Value>,
    /// The value when none is given, for one provider (an instance size, an image): ahead of `default`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub provider_defaults: BTreeMap<ProviderName, serde_json::Value>,
    /// What it means.
    #[serde(default)]
    pub description: String,
    /// What a value must also satisfy.
    #[serde(default, skip_serializing_if = "Validation::is_empty")]
    pub validation: Validation,
}

/// Rules a value must satisfy beyond its type. `min`/`max` bound a number's value, a string's or a
/// secret's length in characters, and a list's or a map's number of items.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Validation {
    /// A regular expression the whole value must match (strings and secrets).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pattern: Option<String>,
    /// The least value, length or count.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min: Option<f64>,
    /// The greatest value, length or count.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<f64>,
    /// The only values accepted (strings, numbers, booleans).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed: Option<Vec<serde_json::Value>>,
}

impl Validation {
    /// Whether there is no rule.
    pub fn is_empty(&self) -> bool {
        self.pattern.is_none() && self.min.is_none() && self.max.is_none() && self.allowed.is_none()
    }
}

/// A value the made thing gives back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Output {
    /// Its name (a Terraform `output` block of the same name).
    pub name: String,
    /// What it is.
    #[serde(default)]
    pub description: String,
}

/// A `template.yaml` that cannot be used, with where and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}:{line}: {field}: {message}")]
pub struct SchemaError {
    /// The file (a path, or `built-in NAME/template.yaml`).
    pub file: String,
    /// 1-based line of the field, 0 when unknown.
    pub line: usize,
    /// Path of the field (`variables[2].default`).
    pub field: String,
    /// What is wrong and what was expected.
    pub message: String,
}

impl SchemaError {
    /// The error for the field at `path` of `text` (its line looked up).
    pub fn at(file: &str, text: &str, path: &[Seg], message: String) -> Self {
        Self { file: file.into(), line: line_of(text, path).unwrap_or(0), field: render_path(path), message }
    }
}

/// Parses and checks one `template.yaml`'s text (`file` names it in errors).
pub fn parse(file: &str, text: &str) -> Result<TemplateSpec, SchemaError> {
    let spec: TemplateSpec = crate::input::from_yaml(text).map_err(|e| {
        let (field, message) = split_field(e.message());
        SchemaError { file: file.into(), line: e.line(), field, message }
    })?;
    validate(&spec).map_err(|(path, message)| SchemaError::at(file, text, &path, message))?;
    Ok(spec)
}

type Invalid = (Vec<Seg>, String);

fn is_template_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

/// Lower-case letters, digits and `_`, not starting with a digit: a name a template file can use.
pub fn is_identifier(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name.starts_with(|c: char| c.is_ascii_lowercase() || c == '_')
        && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

/// What serde cannot check.
fn validate(spec: &TemplateSpec) -> Result<(), Invalid> {
    if !is_template_name(&spec.name) {
        return Err((vec![key("name")], "expected lower-case letters, digits and - (starting with a letter)".into()));
    }
    if spec.description.trim().is_empty() {
        return Err((vec![key("description")], "expected a sentence saying what the template makes".into()));
    }
    if spec.providers.is_empty() {
        return Err((vec![key("providers")], "expected at least one provider".into()));
    }
    if let Some(i) = first_duplicate(spec.providers.iter()) {
        return Err((vec![key("providers"), Seg::Index(i)], format!("{} is listed twice", spec.providers[i])));
    }
    if spec.backends.is_empty() {
        return Err((vec![key("backends")], "expected at least one backend (terraform or mcp)".into()));
    }
    if let Some(i) = first_duplicate(spec.backends.iter().map(|b| b.backend)) {
        return Err((vec![key("backends"), Seg::Index(i)], format!("{} is listed twice", spec.backends[i].backend)));
    }
    for (i, b) in spec.backends.iter().enumerate() {
        check_entry(&b.entry).map_err(|m| (vec![key("backends"), Seg::Index(i), key("entry")], m))?;
    }
    if let Some(i) = first_duplicate(spec.variables.iter().map(|v| &v.name)) {
        let name = &spec.variables[i].name;
        return Err((vec![key("variables"), Seg::Index(i), key("name")], format!("{name} is declared twice")));
    }
    for (i, variable) in spec.variables.iter().enumerate() {
        validate_variable(spec, variable).map_err(|(mut path, m)| {
            path.splice(0..0, [key("variables"), Seg::Index(i)]);
            (path, m)
        })?;
    }
    if let Some(i) = first_duplicate(spec.outputs.iter().map(|o| &o.name)) {
        let name = &spec.outputs[i].name;
        return Err((vec![key("outputs"), Seg::Index(i), key("name")], format!("{name} is declared twice")));
    }
    for (i, output) in spec.outputs.iter().enumerate() {
        if !is_identifier(&output.name) {
            return Err((
                vec![key("outputs"), Seg::Index(i), key("name")],
                "expected lower-case letters, digits and _".into(),
            ));
        }
    }
    Ok(())
}

/// The index of the first item seen before.
fn first_duplicate<T: Ord>(items: impl Iterator<Item = T>) -> Option<usize> {
    let mut seen = BTreeSet::new();
    items.enumerate().find_map(|(i, item)| (!seen.insert(item)).then_some(i))
}

/// An entry point: a relative `*.j2` path inside the template's folder.
fn check_entry(entry: &str) -> Result<(), String> {
    let inside = !entry.starts_with('/') && entry.split('/').all(|part| !part.is_empty() && part != "..");
    if !inside {
        return Err(format!("{entry} is not a path inside the template's folder"));
    }
    if entry.strip_suffix(".j2").is_none_or(|stem| stem.is_empty() || stem.ends_with('/')) {
        return Err(format!("{entry} is not a template file (expected a name ending in .j2, like main.tf.j2)"));
    }
    Ok(())
}

fn validate_variable(spec: &TemplateSpec, variable: &Variable) -> Result<(), Invalid> {
    if !is_identifier(&variable.name) {
        return Err((
            vec![key("name")],
            "expected lower-case letters, digits and _ (not starting with a digit)".into(),
        ));
    }
    if RESERVED.contains(&variable.name.as_str()) {
        return Err((
            vec![key("name")],
            format!("{} is set by merlya for every render; choose another name", variable.name),
        ));
    }
    if variable.required && (variable.default.is_some() || !variable.provider_defaults.is_empty()) {
        let field = if variable.default.is_some() { "default" } else { "provider_defaults" };
        return Err((vec![key(field)], "a required variable has no default (drop one or the other)".into()));
    }
    validate_rules(variable).map_err(|(field, m)| (vec![key("validation"), key(field)], m))?;
    if let Some(default) = &variable.default {
        check_default(variable, default).map_err(|m| (vec![key("default")], m))?;
    }
    for (provider, default) in &variable.provider_defaults {
        let at = vec![key("provider_defaults"), key(provider.as_str())];
        if !spec.providers.contains(provider) {
            let known: Vec<&str> = spec.providers.iter().map(ProviderName::as_str).collect();
            return Err((at, format!("{provider} is not one of this template's providers ({})", known.join(", "))));
        }
        check_default(variable, default).map_err(|m| (at, m))?;
    }
    Ok(())
}

/// Rules that fit the type and each other.
fn validate_rules(variable: &Variable) -> Result<(), (&'static str, String)> {
    let rules = &variable.validation;
    let kind = variable.kind;
    if let Some(pattern) = &rules.pattern {
        if !matches!(kind, VarType::String | VarType::Secret) {
            return Err(("pattern", format!("a pattern applies to a string or a secret, not a {kind}")));
        }
        value::full_match_regex(pattern).map_err(|e| ("pattern", format!("not a regular expression: {e}")))?;
    }
    for (field, bound) in [("min", rules.min), ("max", rules.max)] {
        if let Some(bound) = bound {
            if kind == VarType::Boolean {
                return Err((field, "a boolean has no bounds".into()));
            }
            if !bound.is_finite() || (kind != VarType::Number && (bound < 0.0 || bound.fract() != 0.0)) {
                return Err((field, format!("expected a whole count of at least 0 for a {kind} (its length)")));
            }
        }
    }
    if let (Some(min), Some(max)) = (rules.min, rules.max)
        && min > max
    {
        return Err(("max", format!("expected max at or above min ({min})")));
    }
    if let Some(allowed) = &rules.allowed {
        if !matches!(kind, VarType::String | VarType::Number | VarType::Boolean) {
            return Err(("allowed", format!("allowed values apply to a string, a number or a boolean, not a {kind}")));
        }
        if allowed.is_empty() {
            return Err(("allowed", "expected at least one value".into()));
        }
        for item in allowed {
            value::from_yaml(kind, item).map_err(|e| ("allowed", e.to_string()))?;
        }
    }
    Ok(())
}

/// A default of the variable's type that passes its rules; a secret's only as a reference.
fn check_default(variable: &Variable, default: &serde_json::Value) -> Result<(), String> {
    let answer = value::from_yaml(variable.kind, default).map_err(|e| e.to_string())?;
    if let Answer::Secret(secret) = &answer
        && secret.reference().is_none()
    {
        return Err("a secret's default is a reference to the keyring (@name), never a value in the file".into());
    }
    value::check(variable, &answer)
}

/// semver versions as text in YAML and JSON (`1.2.0`).
mod semver_text {
    use serde::{Deserializer, Serializer};

    pub fn serialize<S: Serializer>(version: &semver::Version, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(version)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<semver::Version, D::Error> {
        d.deserialize_any(Text)
    }

    /// Reads the version where it is written, so an error carries its line.
    struct Text;

    impl serde::de::Visitor<'_> for Text {
        type Value = semver::Version;

        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a semver version like 1.0.0")
        }

        fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<Self::Value, E> {
            semver::Version::parse(text)
                .map_err(|e| E::custom(format!("`{text}` is not a semver version like 1.0.0: {e}")))
        }

        fn visit_f64<E: serde::de::Error>(self, n: f64) -> Result<Self::Value, E> {
            Err(E::custom(format!("`{n}` is not a semver version like 1.0.0 (three numbers: major.minor.patch)")))
        }

        fn visit_u64<E: serde::de::Error>(self, n: u64) -> Result<Self::Value, E> {
            self.visit_f64(n as f64)
        }

        fn visit_i64<E: serde::de::Error>(self, n: i64) -> Result<Self::Value, E> {
            self.visit_f64(n as f64)
        }
    }
}

#[cfg(test)]
mod tests;
