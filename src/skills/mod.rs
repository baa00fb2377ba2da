//! Skills: runbooks that work with or without a model.
//!
//! A skill is a YAML file of checks ([`spec`]): per step a command run on
//! every target host, a rule reading a value from its output and thresholds
//! judging it ([`verdict`]). [`run`] drives the steps through the same
//! classifier, gate and audit log as any command and ranks the findings worst
//! first, naming the culprit hosts and why. Built-in skills ship inside the
//! binary; `MERLYA_HOME/skills/*.yaml` adds more (a file with a built-in's name
//! replaces it). A request whose words match a skill's `intent_patterns` is
//! routed to it, in the console and in `merlya run`.

pub mod batch;
pub mod run;
pub mod spec;
pub mod summary;
pub mod verdict;

use std::collections::BTreeMap;
use std::path::Path;

pub use run::{Limits, SkillOutcome, SkillRunError};
pub use spec::{Origin, Skill, SkillError};

/// The skills shipped with merlya: `(file name, text)`.
const BUILT_IN: [(&str, &str); 3] = [
    ("incident_triage.yaml", include_str!("builtin/incident_triage.yaml")),
    ("disk_usage.yaml", include_str!("builtin/disk_usage.yaml")),
    ("service_status.yaml", include_str!("builtin/service_status.yaml")),
];

/// Every skill this home can run, and the files that could not be read.
#[derive(Debug, Clone, Default)]
pub struct Library {
    /// Skills by name (sorted), each with where it came from.
    pub skills: Vec<(Skill, Origin)>,
    /// Files that are not valid skills (each error names file, field and line).
    pub errors: Vec<SkillError>,
}

impl Library {
    /// The built-in skills and those of `dir` (`MERLYA_HOME/skills`).
    pub fn load(dir: &Path) -> Self {
        let mut library = Self::default();
        for (file, text) in BUILT_IN {
            match spec::parse(&format!("built-in {file}"), text) {
                Ok(skill) => library.add(skill, Origin::BuiltIn),
                Err(e) => library.errors.push(e),
            }
        }
        for (path, text) in spec::read_dir(dir) {
            let file = path.display().to_string();
            match text {
                Ok(text) => match spec::parse(&file, &text) {
                    Ok(skill) => library.add(skill, Origin::File(path)),
                    Err(e) => library.errors.push(e),
                },
                Err(e) => library.errors.push(SkillError {
                    file,
                    line: e.line.unwrap_or(0),
                    field: "(file)".into(),
                    message: e.problem.to_string(),
                }),
            }
        }
        library.skills.sort_by(|a, b| a.0.name.cmp(&b.0.name));
        library
    }

    fn add(&mut self, skill: Skill, origin: Origin) {
        self.skills.retain(|(s, _)| s.name != skill.name);
        self.skills.push((skill, origin));
    }

    /// The skill called `name`.
    pub fn get(&self, name: &str) -> Option<&Skill> {
        self.skills.iter().map(|(s, _)| s).find(|s| s.name == name)
    }

    /// The first skill (by name) one of whose intent patterns matches `request`, with the
    /// parameters the pattern captured by name (`is (?P<service>…) running`).
    pub fn route(&self, request: &str) -> Option<(&Skill, BTreeMap<String, String>)> {
        self.skills.iter().map(|(s, _)| s).find_map(|skill| {
            skill.intent_patterns.iter().find_map(|p| {
                let regex = regex::Regex::new(p).ok()?;
                let captures = regex.captures(request)?;
                let params = regex
                    .capture_names()
                    .flatten()
                    .filter(|name| skill.params.contains_key(*name))
                    .filter_map(|name| captures.name(name).map(|m| (name.to_string(), m.as_str().to_string())))
                    .collect();
                Some((skill, params))
            })
        })
    }
}

/// The targets a request names, as a target expression (`web01,@prod`): words that are inventory
/// host names, and `@tag` words whose tag some host has. `None` when it names none.
pub fn targets_named_in(request: &str, inventory: &[crate::inventory::Host]) -> Option<String> {
    let mut named: Vec<String> = Vec::new();
    for word in request.split(|c: char| c.is_whitespace() || ",;?!()\"'".contains(c)) {
        let word = word.trim_end_matches(['.', ':']);
        let known = match word.strip_prefix('@') {
            Some(tag) => inventory.iter().any(|h| h.tags.iter().any(|t| t == tag)),
            None => inventory.iter().any(|h| h.name == word),
        };
        if known && !word.is_empty() && !named.iter().any(|n| n == word) {
            named.push(word.to_string());
        }
    }
    (!named.is_empty()).then(|| named.join(","))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_ins_load_and_requests_route_to_them() {
        let dir = tempfile::tempdir().unwrap();
        let library = Library::load(dir.path());
        assert!(library.errors.is_empty(), "{:?}", library.errors);
        let names: Vec<&str> = library.skills.iter().map(|(s, _)| s.name.as_str()).collect();
        assert_eq!(names, ["disk_usage", "incident_triage", "service_status"]);
        let routed = |request: &str| library.route(request).map(|(s, p)| (s.name.clone(), p));
        assert_eq!(routed("triage web01 and db01, something is wrong").unwrap().0, "incident_triage");
        assert_eq!(routed("how full are the disks on @web?").unwrap().0, "disk_usage");
        let (name, params) = routed("is nginx running on web01").unwrap();
        assert_eq!((name.as_str(), params["service"].as_str()), ("service_status", "nginx"));
        assert_eq!(routed("write a haiku"), None);
    }

    #[test]
    fn targets_are_the_inventory_names_and_tags_a_request_names() {
        let host = |name: &str, tag: &str| crate::inventory::Host {
            tags: vec![tag.into()],
            ..crate::inventory::Host::new(name, "192.0.2.1")
        };
        let inventory = [host("web01", "web"), host("db01", "db")];
        assert_eq!(targets_named_in("triage web01, db01 and @web.", &inventory).as_deref(), Some("web01,db01,@web"));
        assert_eq!(targets_named_in("triage web02 and @nope", &inventory), None);
    }

    #[test]
    fn every_built_in_step_is_a_proven_read() {
        let dir = tempfile::tempdir().unwrap();
        for (skill, _) in Library::load(dir.path()).skills {
            let given: BTreeMap<String, String> = [("service".to_string(), "nginx".to_string())]
                .into_iter()
                .filter(|(k, _)| skill.params.contains_key(k))
                .collect();
            let params = run::bind(&skill, &given).unwrap();
            for step in &skill.steps {
                let command = run::render(&step.command, &params).unwrap();
                let analysis = crate::safety::analyze(&command);
                assert!(analysis.is_read_only(), "{} {}: `{command}`: {:?}", skill.name, step.check, analysis.reasons);
            }
        }
    }

    #[test]
    fn a_user_file_replaces_a_built_in_and_a_bad_one_is_reported_not_fatal() {
        let dir = tempfile::tempdir().unwrap();
        let mine = BUILT_IN[1].1.replace("version: \"1.0\"", "version: \"9.9\"");
        std::fs::write(dir.path().join("disk.yaml"), mine).unwrap();
        std::fs::write(dir.path().join("broken.yaml"), "name: broken\nversion: '1'\ndescription: d\nsteps:\n  - check: x\n    command: df\n    parse: { kind: nope }\n").unwrap();
        let library = Library::load(dir.path());
        assert_eq!(library.get("disk_usage").map(|s| s.version.as_str()), Some("9.9"));
        assert_eq!(library.errors.len(), 1);
        let e = &library.errors[0];
        assert!(e.file.ends_with("broken.yaml") && e.line == 7, "{e}");
        assert!(library.get("incident_triage").is_some());
    }
}
