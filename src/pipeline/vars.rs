//! Variables given with a change (Terraform `--var`, Ansible `--extra-vars`).
//!
//! A value may be a secret (a token, a password), so the run's record in the
//! database keeps only the names; the values live in the run's private folder
//! (`vars.json`, 0600 in a 0700 folder) for as long as `resume` and `rollback`
//! may need them.

use std::path::Path;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::{Env, PipelineError, PipelineRun};
use crate::home::write_private;

/// The file in a run's private folder that holds the values.
const FILE: &str = "vars.json";

/// Name/value pairs, in the order given. Serialized as the names alone.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Vars {
    pairs: Vec<(String, String)>,
    /// Whether the values are known (false when read back from a stored record).
    known: bool,
}

impl Vars {
    /// Variables with their values, as the person or the model gave them.
    pub fn new(pairs: Vec<(String, String)>) -> Self {
        Self { pairs, known: true }
    }

    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.pairs.is_empty()
    }

    /// The pairs (values empty until [`Vars::restore`] when read back from a record).
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.pairs.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// Values of variables with a secret-like name (`db_password`, `api_token`): masked wherever a
    /// tool's output is shown or kept.
    pub fn secret_values(&self) -> Vec<String> {
        self.pairs
            .iter()
            .filter(|(k, v)| crate::redact::is_secret_name(k) && v.len() >= 3)
            .map(|(_, v)| v.clone())
            .collect()
    }

    /// The names, in order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.pairs.iter().map(|(k, _)| k.as_str())
    }

    /// Reads the values back from the private folder of `run` (or of the run it resumes) when they
    /// are not known yet; an error names the variables and what to do.
    pub fn restore(&mut self, env: &Env, run: &PipelineRun) -> Result<(), PipelineError> {
        if self.known || self.pairs.is_empty() {
            return Ok(());
        }
        let root = env.store.pipelines_dir();
        let kept = [run.id.as_str(), run.resumed_from.as_str()]
            .into_iter()
            .filter(|id| !id.is_empty())
            .find_map(|id| read(&root.join(id).join(FILE)));
        let Some(values) = kept else {
            let names: Vec<&str> = self.names().collect();
            return Err(PipelineError::Invalid(format!(
                "the values of {} given with change {} are no longer kept ({} is gone); start the change again",
                names.join(", "),
                run.id,
                root.join(&run.id).join(FILE).display()
            )));
        };
        for (name, value) in &mut self.pairs {
            match values.iter().find(|(k, _)| k == name) {
                Some((_, kept)) => value.clone_from(kept),
                None => {
                    return Err(PipelineError::Invalid(format!(
                        "the value of `{name}` given with change {} is not in its private folder",
                        run.id
                    )));
                }
            }
        }
        self.known = true;
        Ok(())
    }

    /// Keeps the values in `dir` (the run's private folder), readable by merlya's user only.
    pub fn save(&self, dir: &Path) -> std::io::Result<()> {
        let text = serde_json::to_string(&self.pairs).map_err(std::io::Error::other)?;
        write_private(&dir.join(FILE), text.as_bytes())
    }
}

fn read(path: &Path) -> Option<Vec<(String, String)>> {
    serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()
}

impl Serialize for Vars {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.names())
    }
}

impl<'de> Deserialize<'de> for Vars {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let names = Vec::<String>::deserialize(deserializer)?;
        Ok(Self { pairs: names.into_iter().map(|n| (n, String::new())).collect(), known: false })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stored_record_holds_the_names_and_never_the_values() {
        let vars = Vars::new(vec![("token".into(), "s3cr3t-value".into()), ("region".into(), "eu".into())]);
        let json = serde_json::to_string(&vars).unwrap();
        assert_eq!(json, r#"["token","region"]"#);
        let back: Vars = serde_json::from_str(&json).unwrap();
        assert_eq!(back.names().collect::<Vec<_>>(), ["token", "region"]);
        assert!(back.iter().all(|(_, v)| v.is_empty()));
        assert!(!back.known);
    }

    #[test]
    fn values_are_written_readable_by_the_owner_only() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let vars = Vars::new(vec![("token".into(), "s3cr3t".into())]);
        vars.save(dir.path()).unwrap();
        let mode = std::fs::metadata(dir.path().join(FILE)).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        assert_eq!(read(&dir.path().join(FILE)).unwrap(), [("token".to_string(), "s3cr3t".to_string())]);
    }
}
