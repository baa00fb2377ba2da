//! `merlya template list|show|render`: the IaC templates (built-in and `MERLYA_HOME/templates`)
//! from the command line. Rendering writes files and nothing else: no database, no tool run.

use std::path::PathBuf;

use clap::Subcommand;
use color_eyre::eyre::Result;

use super::lang::{t, tf};
use super::{EXIT_ERROR, EXIT_OK, ListFormat};
use crate::home::MerlyaHome;
use crate::provision::template::{Answers, Backend, Entry, Registry, Source, TemplateRef, VarType, Variable, render};
use crate::secrets::SecretSource;
use crate::term_safe::{visible, visible_line};

#[derive(Debug, Subcommand)]
#[command(defer = true)]
pub enum TemplateCommand {
    /// The templates this home can render (latest version of each), and folders that are not valid.
    List {
        #[arg(long, value_enum, default_value_t)]
        format: ListFormat,
    },
    /// A template's schema: providers, backends, variables (type, required, default, rules), outputs.
    Show {
        /// NAME (its highest version) or NAME:VERSION.
        template: TemplateRef,
        #[arg(long, value_enum, default_value_t)]
        format: ListFormat,
    },
    /// Render a template into a folder (Terraform files, or an MCP request); prints what it wrote.
    Render {
        /// NAME (its highest version) or NAME:VERSION.
        template: TemplateRef,
        /// The provider to render for (needed when the template has more than one).
        #[arg(long)]
        provider: Option<String>,
        /// terraform or mcp (default: the template's first backend).
        #[arg(long)]
        backend: Option<Backend>,
        /// NAME=VALUE for a variable (repeat); lists and maps as JSON or YAML, a secret as @NAME for
        /// one on the keyring.
        #[arg(long = "var", value_parser = super::pipeline::key_value)]
        vars: Vec<(String, String)>,
        /// The folder to write into (created when missing; refused when not empty, unless --force).
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
        /// Write into a folder that is not empty (files of the same names are replaced).
        #[arg(long)]
        force: bool,
    },
}

/// Runs a `template` subcommand.
pub fn run(home: &MerlyaHome, cmd: TemplateCommand) -> Result<u8> {
    let registry = Registry::load(&home.templates_dir());
    match cmd {
        TemplateCommand::List { format } => list(&registry, format),
        TemplateCommand::Show { template, format } => {
            let entry = registry.get(&template)?;
            match format {
                ListFormat::Json => println!("{}", serde_json::to_string_pretty(&entry_json(entry, None)?)?),
                ListFormat::Table => print!("{}", visible(&show_text(entry))),
            }
            Ok(EXIT_OK)
        }
        TemplateCommand::Render { template, provider, backend, vars, out, force } => {
            let entry = registry.get(&template)?;
            let answers = Answers::resolve(&entry.template.spec, provider.as_deref(), backend, &vars)?;
            let keyring: Box<dyn SecretSource> = if answers.needs_keyring() {
                let config = crate::config::Config::load(&home.config_file())?;
                Box::new(crate::secrets::Secrets::open(config.secrets.backend))
            } else {
                Box::new(NoKeyring)
            };
            let rendered = render(&entry.template, &answers, keyring.as_ref())?;
            let written = rendered.write(&out, force)?;
            let spec = &entry.template.spec;
            let (version, provider, backend) =
                (spec.version.to_string(), answers.provider.to_string(), answers.backend.to_string());
            let out = out.display().to_string();
            let args = [
                ("name", spec.name.as_str()),
                ("version", &version),
                ("provider", &provider),
                ("backend", &backend),
                ("path", &out),
            ];
            let mut text = format!("{}\n", tf("cli.template.rendered", &args));
            for (path, file) in written.iter().zip(&rendered.files) {
                let (path, bytes) = (path.display().to_string(), file.content().len().to_string());
                text.push_str(&format!("  {}\n", tf("cli.template.file", &[("path", &path), ("bytes", &bytes)])));
            }
            text.push_str(&format!("{}\n", t("cli.template.answers")));
            for line in answers.to_string().lines() {
                text.push_str(&format!("  {line}\n"));
            }
            // The answers show secrets as *** already; a plain value that holds a secret's text too.
            print!("{}", visible(&rendered.mask(&text)));
            Ok(EXIT_OK)
        }
    }
}

/// The keyring when no answer refers to it: nothing is looked up, nothing is probed.
struct NoKeyring;

impl SecretSource for NoKeyring {
    fn lookup(&self, _name: &str) -> Option<String> {
        None
    }
}

/// `built-in`, `user`, or `user, overrides built-in` (in the CLI's language).
fn source_word(entry: &Entry) -> String {
    t(match (&entry.template.source, entry.overrides) {
        (Source::BuiltIn, _) => "cli.built_in",
        (Source::User(_), false) => "cli.template.user",
        (Source::User(_), true) => "cli.template.user_overrides",
    })
}

fn entry_json(entry: &Entry, versions: Option<Vec<String>>) -> Result<serde_json::Value> {
    let mut value = serde_json::to_value(&entry.template.spec)?;
    if let Some(map) = value.as_object_mut() {
        let source = match &entry.template.source {
            Source::BuiltIn => serde_json::json!("built-in"),
            Source::User(dir) => serde_json::json!(dir.display().to_string()),
        };
        map.insert("source".into(), source);
        map.insert("overrides_built_in".into(), entry.overrides.into());
        if let Some(versions) = versions {
            map.insert("versions".into(), versions.into());
        }
    }
    Ok(value)
}

fn list(registry: &Registry, format: ListFormat) -> Result<u8> {
    match format {
        ListFormat::Json => {
            let templates = registry
                .latest()
                .map(|(entry, versions)| entry_json(entry, Some(versions.iter().map(ToString::to_string).collect())))
                .collect::<Result<Vec<_>>>()?;
            let errors: Vec<String> = registry.errors.iter().map(ToString::to_string).collect();
            let out = serde_json::json!({ "templates": templates, "errors": errors });
            println!("{}", serde_json::to_string_pretty(&out)?);
        }
        ListFormat::Table => {
            let rows: Vec<Vec<String>> = registry
                .latest()
                .map(|(entry, versions)| {
                    let spec = &entry.template.spec;
                    let version = match versions.len() {
                        1 => spec.version.to_string(),
                        n => tf(
                            "cli.template.older",
                            &[("version", &spec.version.to_string()), ("count", &(n - 1).to_string())],
                        ),
                    };
                    vec![
                        spec.name.clone(),
                        version,
                        spec.category.to_string(),
                        join(spec.providers.iter()),
                        source_word(entry),
                    ]
                })
                .collect();
            let headers = ["cli.h.name", "cli.h.version", "cli.h.category", "cli.h.providers", "cli.h.source"].map(t);
            let table = super::table::render(&headers.each_ref().map(String::as_str), &rows);
            print!("{}", visible(&table));
            for e in &registry.errors {
                eprintln!("{}", tf("cli.template.invalid", &[("error", &visible_line(&e.to_string()))]));
            }
        }
    }
    Ok(if registry.errors.is_empty() { EXIT_OK } else { EXIT_ERROR })
}

fn join<T: ToString>(items: impl Iterator<Item = T>) -> String {
    items.map(|i| i.to_string()).collect::<Vec<_>>().join(", ")
}

/// What `show` prints for people.
fn show_text(entry: &Entry) -> String {
    let spec = &entry.template.spec;
    let mut out =
        format!("{} {} ({}, {})\n{}\n\n", spec.name, spec.version, spec.category, source_word(entry), spec.description);
    if let Source::User(dir) = &entry.template.source {
        out.push_str(&format!("{}\n", tf("cli.template.folder", &[("path", &dir.display().to_string())])));
    }
    out.push_str(&format!("{}\n", tf("cli.template.providers", &[("providers", &join(spec.providers.iter()))])));
    let backends = spec.backends.iter().map(|b| format!("{} ({})", b.backend, b.entry));
    out.push_str(&format!("{}\n\n", tf("cli.template.backends", &[("backends", &join(backends))])));
    out.push_str(&format!("{}\n", t("cli.template.variables")));
    for v in &spec.variables {
        let required = if v.required { format!(", {}", t("cli.template.required")) } else { String::new() };
        out.push_str(&format!("  {} ({}{required})\n", v.name, v.kind));
        if !v.description.is_empty() {
            out.push_str(&format!("      {}\n", v.description));
        }
        if let Some(default) = default_text(v) {
            out.push_str(&format!("      {}\n", tf("cli.template.default", &[("default", &default)])));
        }
        if let Some(rules) = rules_text(v) {
            out.push_str(&format!("      {}\n", tf("cli.template.rules", &[("rules", &rules)])));
        }
    }
    out.push_str(&format!("\n{}\n", t("cli.template.outputs")));
    let rows: Vec<Vec<String>> = spec.outputs.iter().map(|o| vec![o.name.clone(), o.description.clone()]).collect();
    let headers = ["cli.h.name", "cli.h.description"].map(t);
    out.push_str(&indent(&super::table::render(&headers.each_ref().map(String::as_str), &rows)));
    out
}

fn indent(text: &str) -> String {
    text.lines().map(|l| format!("  {l}\n")).collect()
}

/// A value as people write it: strings bare, anything else as JSON.
fn plain(value: &serde_json::Value) -> String {
    match value {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// `merlya`, or `aws: t3.micro, gcp: e2-small` (then the default for the others); `None` without.
fn default_text(v: &Variable) -> Option<String> {
    let mut parts: Vec<String> = v.provider_defaults.iter().map(|(p, d)| format!("{p}: {}", plain(d))).collect();
    match (&v.default, parts.is_empty()) {
        (Some(d), true) => return Some(plain(d)),
        (Some(d), false) => parts.push(tf("cli.template.others", &[("default", &plain(d))])),
        (None, true) => return None,
        (None, false) => {}
    }
    Some(parts.join(", "))
}

/// `pattern …`, `1..4`, `one of a|b`; `None` without rules.
fn rules_text(v: &Variable) -> Option<String> {
    let rules = &v.validation;
    let mut parts = Vec::new();
    if let Some(p) = &rules.pattern {
        parts.push(tf("cli.template.pattern", &[("pattern", p)]));
    }
    let bound = |b: Option<f64>| b.map(|b| b.to_string()).unwrap_or_default();
    if rules.min.is_some() || rules.max.is_some() {
        let what = match v.kind {
            VarType::Number => String::new(),
            VarType::List | VarType::Map => format!(" {}", t("cli.template.items")),
            _ => format!(" {}", t("cli.template.chars")),
        };
        parts.push(format!("{}..{}{what}", bound(rules.min), bound(rules.max)));
    }
    if let Some(allowed) = &rules.allowed {
        let allowed = allowed.iter().map(plain).collect::<Vec<_>>().join("|");
        parts.push(tf("cli.template.one_of", &[("values", &allowed)]));
    }
    (!parts.is_empty()).then(|| parts.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn show_lists_variables_with_type_required_default_rules_and_description() {
        let registry = Registry::from_loaded(crate::provision::template::builtin::templates(), Vec::new());
        let entry = registry.get(&"basic-vm".parse().unwrap()).unwrap();
        let text = show_text(entry);
        assert!(text.starts_with("basic-vm 1.0.0 (compute, built-in)\n"), "{text}");
        assert!(text.contains("providers: aws, gcp, azure, proxmox\n"), "{text}");
        assert!(text.contains("backends:  terraform (main.tf.j2)\n"), "{text}");
        assert!(text.contains("\n  size (string)\n      The machine type"), "{text}");
        assert!(text.contains("\n      default: aws: t3.micro, azure: Standard_B1s, gcp: e2-small\n"), "{text}");
        assert!(
            text.contains(
                "\n  disk_gb (number)\n      System disk size in GiB.\n      default: 20\n      rules: 10..16384\n"
            ),
            "{text}"
        );
        assert!(text.contains("\n  vm_name (string, required)\n"), "{text}");
        assert!(text.contains("\n      rules: pattern [a-z][a-z0-9-]{1,40}\n"), "{text}");
        assert!(text.contains("\n  password (secret)\n"), "{text}");
        assert!(text.contains("\noutputs:\n  NAME"), "{text}");
    }
}
