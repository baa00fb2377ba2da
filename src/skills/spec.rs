//! What a skill file says: a runbook of checks, each a command per host, a
//! rule that reads a value from its output, and thresholds that judge it.
//!
//! Files are YAML (`MERLYA_HOME/skills/*.yaml`, beside the built-in ones).
//! Unknown keys and wrong types are errors naming the file and line; so are
//! values that parse but cannot work (a regex that does not compile, a
//! template naming a parameter the skill does not declare, a step running a
//! program `tools_allowed` does not list, thresholds in the wrong order).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::input::yaml_path::{Seg, key, line_of, render_path, split_field};

/// A runbook: checks run on every target host, findings ranked worst first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Skill {
    /// Name used to run it (`incident_triage`): letters, digits and `_`.
    pub name: String,
    /// Version of the runbook, shown with it.
    pub version: String,
    /// What it finds, in one or two sentences.
    pub description: String,
    /// Regular expressions: a request matching one is routed to this skill.
    #[serde(default)]
    pub intent_patterns: Vec<String>,
    /// Programs the steps may run; a step running anything else is refused at load. Empty: any.
    #[serde(default)]
    pub tools_allowed: Vec<String>,
    /// Most hosts one run may target (policy.max_hosts_per_skill may lower it).
    #[serde(default = "default_max_hosts")]
    pub max_hosts: usize,
    /// Bound of each step on each host, in seconds.
    #[serde(default = "default_timeout")]
    pub timeout_seconds: u64,
    /// Checks that always ask for an approval before they run, read-only or not.
    #[serde(default)]
    pub require_confirmation_for: Vec<String>,
    /// Parameters the commands use as `{{ name }}` (values are shell-quoted when put in).
    #[serde(default)]
    pub params: BTreeMap<String, Param>,
    /// The checks, run in order; each on every host at once (within policy.max_parallel).
    pub steps: Vec<Step>,
}

fn default_max_hosts() -> usize {
    100
}

fn default_timeout() -> u64 {
    30
}

/// A parameter of a skill (`service_status NAME`, `since=…`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Param {
    /// What it means.
    #[serde(default)]
    pub description: String,
    /// Used when none is given; no default makes the parameter required.
    #[serde(default)]
    pub default: Option<String>,
    /// A regular expression a given value must match in full.
    #[serde(default)]
    pub pattern: Option<String>,
}

/// One check.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Step {
    /// Its name in the findings (`disk`, `memory`).
    pub check: String,
    /// What it looks at.
    #[serde(default)]
    pub description: String,
    /// The command (a template: `{{ param }}`).
    pub command: String,
    /// How the value is read from the output.
    pub parse: Parse,
    /// At or past this value the finding is a warning.
    #[serde(default)]
    pub warn: Option<f64>,
    /// At or past this value the finding is critical.
    #[serde(default)]
    pub crit: Option<f64>,
    /// Lower values are worse (uptime: a recent reboot).
    #[serde(default)]
    pub lower_is_worse: bool,
    /// Unit shown after the value (`%`, `s`, `per core`).
    #[serde(default)]
    pub unit: String,
    /// For `text` and `exit_code` parses: the answers that are fine; anything else is critical.
    #[serde(default)]
    pub ok_values: Vec<String>,
    /// Exit codes that still carry a value (`grep -c` exits 1 when it counts 0).
    #[serde(default = "default_exit_codes")]
    pub ok_exit_codes: Vec<i32>,
}

fn default_exit_codes() -> Vec<i32> {
    vec![0]
}

/// How a step's value is read from its standard output. Regexes name the groups they capture.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Parse {
    /// The first number, or the group `value` (else group 1) of `regex`.
    Number {
        #[serde(default)]
        regex: Option<String>,
    },
    /// `part / whole` from the groups of `regex` (load per core).
    Ratio { regex: String },
    /// `100 * part / whole` from the groups of `regex` (swap used); 0 when whole is 0.
    Percent { regex: String },
    /// `100 * (total - available) / total` from the groups of `regex` (memory in use).
    PercentUsed { regex: String },
    /// The largest `N%` on any line, labelled with that line's last field (`df`: the mount).
    MaxPercent,
    /// Lines of output (matching `regex` when given), the first one as the label.
    Lines {
        #[serde(default)]
        regex: Option<String>,
    },
    /// Seconds between the first number (a Unix time from the host) and this machine's clock.
    Skew,
    /// The first line, judged by `ok_values`.
    Text,
    /// The exit code, judged by `ok_values` (default: `0`).
    ExitCode,
}

impl Parse {
    /// The regex this rule uses, if any.
    pub fn regex(&self) -> Option<&str> {
        match self {
            Parse::Number { regex } | Parse::Lines { regex } => regex.as_deref(),
            Parse::Ratio { regex } | Parse::Percent { regex } | Parse::PercentUsed { regex } => Some(regex),
            Parse::MaxPercent | Parse::Skew | Parse::Text | Parse::ExitCode => None,
        }
    }

    /// Groups the regex must name.
    fn groups(&self) -> &'static [&'static str] {
        match self {
            Parse::Ratio { .. } | Parse::Percent { .. } => &["part", "whole"],
            Parse::PercentUsed { .. } => &["total", "available"],
            _ => &[],
        }
    }
}

/// Where a skill came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Origin {
    /// Shipped with merlya.
    BuiltIn,
    /// A file under `MERLYA_HOME/skills`.
    File(PathBuf),
}

/// A skill file that cannot be used, with where and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}:{line}: {field}: {message}")]
pub struct SkillError {
    /// The file (or `built-in NAME`).
    pub file: String,
    /// 1-based line of the field, 0 when unknown.
    pub line: usize,
    /// Path of the field (`steps[2].parse.regex`).
    pub field: String,
    /// What is wrong and what was expected.
    pub message: String,
}

/// Parses and checks one skill file's text.
pub fn parse(file: &str, text: &str) -> Result<Skill, SkillError> {
    let skill: Skill = crate::input::from_yaml(text).map_err(|e| {
        let (field, message) = split_field(e.message());
        SkillError { file: file.into(), line: e.line(), field, message }
    })?;
    validate(&skill).map_err(|(path, message)| SkillError {
        file: file.into(),
        line: line_of(text, &path).unwrap_or(0),
        field: render_path(&path),
        message,
    })?;
    Ok(skill)
}

type Invalid = (Vec<Seg>, String);

/// What serde cannot check: names, regexes, templates, programs, thresholds.
fn validate(skill: &Skill) -> Result<(), Invalid> {
    let name_ok = !skill.name.is_empty()
        && skill.name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !skill.name.starts_with(|c: char| c.is_ascii_digit());
    if !name_ok {
        return Err((vec![key("name")], "expected letters, digits and _ (not starting with a digit)".into()));
    }
    for (i, pattern) in skill.intent_patterns.iter().enumerate() {
        regex::Regex::new(pattern)
            .map_err(|e| (vec![key("intent_patterns"), Seg::Index(i)], format!("not a regular expression: {e}")))?;
    }
    for (name, param) in &skill.params {
        if let Some(p) = &param.pattern {
            regex::Regex::new(p).map_err(|e| {
                (vec![key("params"), key(name), key("pattern")], format!("not a regular expression: {e}"))
            })?;
        }
    }
    if skill.max_hosts == 0 {
        return Err((vec![key("max_hosts")], "expected at least 1".into()));
    }
    if skill.timeout_seconds == 0 {
        return Err((vec![key("timeout_seconds")], "expected at least 1 second".into()));
    }
    if skill.steps.is_empty() {
        return Err((vec![key("steps")], "expected at least one step".into()));
    }
    for (i, check) in skill.require_confirmation_for.iter().enumerate() {
        if !skill.steps.iter().any(|s| &s.check == check) {
            return Err((vec![key("require_confirmation_for"), Seg::Index(i)], format!("no step checks {check:?}")));
        }
    }
    for (i, step) in skill.steps.iter().enumerate() {
        let at = |field: &str| vec![key("steps"), Seg::Index(i), key(field)];
        validate_step(skill, step).map_err(|(field, message)| (at(field), message))?;
    }
    Ok(())
}

fn validate_step(skill: &Skill, step: &Step) -> Result<(), (&'static str, String)> {
    if step.check.trim().is_empty() {
        return Err(("check", "expected a name".into()));
    }
    // Only bare `{{ name }}` placeholders, never inside quotes: a value is put in shell-quoted, and an
    // expression (`{{ p[1:-1] }}`, a filter) or surrounding quotes would undo that.
    if step.command.contains("{%") || step.command.contains("{#") {
        return Err(("command", "expected only {{ name }} placeholders (no {% %} or {# #})".into()));
    }
    let bare = regex::Regex::new(r"\{\{\s*[A-Za-z_][A-Za-z0-9_]*\s*\}\}").map_err(|e| ("command", e.to_string()))?;
    let stripped = bare.replace_all(&step.command, "");
    if stripped.contains("{{") || stripped.contains("}}") {
        return Err(("command", "expected only bare {{ name }} placeholders (no expressions or filters)".into()));
    }
    for m in bare.find_iter(&step.command) {
        let before = step.command[..m.start()].chars().last();
        let after = step.command[m.end()..].chars().next();
        let quotes = step.command[..m.start()].chars().filter(|c| *c == '\'' || *c == '"').count();
        if matches!(before, Some('\'' | '"')) || matches!(after, Some('\'' | '"')) || quotes % 2 == 1 {
            return Err(("command", "a placeholder may not be inside quotes: its value is quoted for you".into()));
        }
    }
    let env = minijinja::Environment::new();
    let template = env.template_from_str(&step.command).map_err(|e| ("command", format!("not a template: {e}")))?;
    for name in template.undeclared_variables(false) {
        if !skill.params.contains_key(&name) {
            return Err(("command", format!("uses {{{{ {name} }}}} but params declares no {name}")));
        }
    }
    if let Some(pattern) = step.parse.regex() {
        let regex = regex::Regex::new(pattern).map_err(|e| ("parse", format!("regex: {e}")))?;
        let named: Vec<&str> = regex.capture_names().flatten().collect();
        for group in step.parse.groups() {
            if !named.contains(group) {
                return Err(("parse", format!("regex: expected a group named {group} (?P<{group}>…)")));
            }
        }
    }
    if let (Some(warn), Some(crit)) = (step.warn, step.crit) {
        let ordered = if step.lower_is_worse { crit <= warn } else { warn <= crit };
        if !ordered {
            let expected = if step.lower_is_worse { "crit at or below warn" } else { "warn at or below crit" };
            return Err(("crit", format!("expected {expected} (warn {warn}, crit {crit})")));
        }
    }
    if !skill.tools_allowed.is_empty() {
        // The command as it will run, parameters stood in by a plain word.
        let sample: BTreeMap<&str, &str> = skill.params.keys().map(|k| (k.as_str(), "x")).collect();
        let rendered = template.render(sample).map_err(|e| ("command", e.to_string()))?;
        for program in crate::safety::programs(&rendered) {
            let base = program.rsplit('/').next().unwrap_or(&program);
            if !skill.tools_allowed.iter().any(|t| t == base) {
                return Err(("command", format!("runs {base}, which tools_allowed does not list")));
            }
        }
    }
    Ok(())
}

/// Reads every `*.yaml` / `*.yml` file of `dir` (sorted); a missing folder has none. One that cannot
/// be read (a folder, not UTF-8, too large) comes with why.
pub fn read_dir(dir: &Path) -> Vec<(PathBuf, Result<String, crate::input::InputError>)> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut paths: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "yaml" || x == "yml"))
        .collect();
    paths.sort();
    paths
        .into_iter()
        .map(|p| {
            let text = crate::input::read_text(&p, crate::input::SETTINGS_LIMIT, "a skill");
            (p, text)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_deep_or_unreadable_skill_file_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("deep.yaml"), format!("name: deep\nsteps: {}\n", "{a: ".repeat(200_000)))
            .unwrap();
        std::fs::write(dir.path().join("latin1.yaml"), b"name: caf\xe9\n").unwrap();
        std::fs::create_dir(dir.path().join("folder.yaml")).unwrap();
        let library = crate::skills::Library::load(dir.path());
        let said: Vec<String> = library.errors.iter().map(|e| e.to_string()).collect();
        assert_eq!(said.len(), 3, "{said:?}");
        assert!(said[0].contains("deep.yaml:2: (file): nested deeper than 100 levels"), "{said:?}");
        assert!(said[1].contains("folder.yaml:0: (file): is a folder, expected a file"), "{said:?}");
        assert!(said[2].contains("latin1.yaml:1: (file): column 10: byte 0xe9 is not UTF-8"), "{said:?}");
    }

    const GOOD: &str = "\
name: probe
version: '1'
description: d
tools_allowed: [df]
params:
  mount:
    default: /
steps:
  - check: disk
    command: df -P {{ mount }}
    parse:
      kind: max_percent
    warn: 80
    crit: 90
";

    #[test]
    fn a_good_skill_parses() {
        let skill = parse("probe.yaml", GOOD).unwrap();
        assert_eq!(skill.steps[0].parse, Parse::MaxPercent);
        assert_eq!(skill.max_hosts, 100);
    }

    fn error(text: &str) -> SkillError {
        parse("bad.yaml", text).unwrap_err()
    }

    #[test]
    fn malformed_skills_name_file_field_and_line() {
        let e = error(&GOOD.replace("kind: max_percent", "kind: maximum"));
        assert_eq!((e.line, e.field.as_str()), (12, "steps[0].parse.kind"), "{e}");
        assert!(e.message.contains("unknown variant `maximum`"), "{e}");

        let e = error(&GOOD.replace("warn: 80", "warn: 80\n    colour: red"));
        assert!(e.to_string().starts_with("bad.yaml:14:"), "{e}");
        assert!(e.message.contains("unknown field `colour`"), "{e}");

        let e = error(&GOOD.replace("crit: 90", "crit: 70"));
        assert_eq!((e.line, e.field.as_str()), (14, "steps[0].crit"), "{e}");

        let e = error(&GOOD.replace("{{ mount }}", "{{ mountpoint }}"));
        assert_eq!((e.line, e.field.as_str()), (10, "steps[0].command"), "{e}");
        assert!(e.message.contains("declares no mountpoint"), "{e}");

        for bad in ["df -P {{ mount[1:] }}", "df -P '{{ mount }}'", "df -P \"x{{ mount }}\"", "{% if 1 %}df{% endif %}"]
        {
            let e = error(&GOOD.replace("df -P {{ mount }}", bad));
            assert_eq!(e.field, "steps[0].command", "{bad}: {e}");
        }

        let e = error(&GOOD.replace("df -P", "rm -rf"));
        assert!(e.message.contains("runs rm, which tools_allowed does not list"), "{e}");

        let e = error(&GOOD.replace("default: /", "pattern: '(['"));
        assert_eq!((e.line, e.field.as_str()), (7, "params.mount.pattern"), "{e}");

        let e = error(&GOOD.replace("name: probe", "name: 'two words'"));
        assert_eq!((e.line, e.field.as_str()), (1, "name"), "{e}");

        let e = error("name: x\nversion: '1'\ndescription: d\nsteps: []\n");
        assert_eq!((e.line, e.field.as_str()), (4, "steps"), "{e}");

        let ratio = "\
name: r
version: '1'
description: d
steps:
  - check: load
    command: uptime
    parse: { kind: ratio, regex: '([0-9.]+)' }
";
        let e = error(ratio);
        assert_eq!((e.line, e.field.as_str()), (7, "steps[0].parse"), "{e}");
        assert!(e.message.contains("group named part"), "{e}");
    }
}
