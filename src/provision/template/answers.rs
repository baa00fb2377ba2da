//! The answers to a template's questions: every variable's value resolved (given, else the chosen
//! provider's default, else the default), typed and validated, with the provider and backend
//! chosen. Serializable, so a provisioned resource keeps what it was made from and an update renders
//! again from it — a secret kept as its keyring reference, never its value (see [`super::value`]).

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use super::schema::{Backend, ProviderName, TemplateSpec, VarType, Variable};
use super::value::{self, Answer, Secret};

/// What a template is rendered from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Answers {
    /// The template's name.
    pub template: String,
    /// Its version (semver text).
    pub version: String,
    /// The provider chosen.
    pub provider: ProviderName,
    /// The backend chosen.
    pub backend: Backend,
    /// Every declared variable's value, by name (`null` for an optional one left unset).
    pub values: BTreeMap<String, Answer>,
}

/// Answers that cannot be made, naming the variable (or the provider, or the backend).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AnswerError {
    /// A required variable has no value.
    #[error("template {template}: variable {variable} is required{}", hint(description))]
    Missing {
        /// The template.
        template: String,
        /// The variable.
        variable: String,
        /// What it means (to say what to give).
        description: String,
    },
    /// A value given for a variable the template does not declare.
    #[error("template {template} has no variable {variable} (its variables: {known})")]
    Unknown {
        /// The template.
        template: String,
        /// The name given.
        variable: String,
        /// The declared names, comma-separated.
        known: String,
    },
    /// The same variable given twice.
    #[error("template {template}: variable {variable} is given twice")]
    Twice {
        /// The template.
        template: String,
        /// The variable.
        variable: String,
    },
    /// A value not of the variable's type.
    #[error("template {template}: variable {variable} ({kind}): {message}")]
    WrongType {
        /// The template.
        template: String,
        /// The variable.
        variable: String,
        /// Its declared type.
        kind: VarType,
        /// What was expected and found (never a secret's value).
        message: String,
    },
    /// A value that fails the variable's validation.
    #[error("template {template}: variable {variable}: {message}")]
    Invalid {
        /// The template.
        template: String,
        /// The variable.
        variable: String,
        /// Which rule and how (never a secret's value).
        message: String,
    },
    /// A provider the template does not list, or none chosen among several.
    #[error("template {template}: {}", provider_problem(given.as_deref(), known))]
    Provider {
        /// The template.
        template: String,
        /// The provider asked for, if any.
        given: Option<String>,
        /// The template's providers, comma-separated.
        known: String,
    },
    /// A backend the template does not have.
    #[error("template {template} has no {backend} backend (it has: {known})")]
    Backend {
        /// The template.
        template: String,
        /// The backend asked for.
        backend: Backend,
        /// The template's backends, comma-separated.
        known: String,
    },
    /// Stored answers for another template or version.
    #[error("the answers are for {answers}, not {template}")]
    OtherTemplate {
        /// `name:version` of the answers.
        answers: String,
        /// `name:version` of the template.
        template: String,
    },
}

fn hint(description: &str) -> String {
    match description.trim() {
        "" => " (give it with --var NAME=VALUE)".to_string(),
        d => format!(": {d} (give it with --var NAME=VALUE)"),
    }
}

fn provider_problem(given: Option<&str>, known: &str) -> String {
    match given {
        Some(p) => format!("unknown provider {p} (its providers: {known})"),
        None => format!("choose a provider with --provider (its providers: {known})"),
    }
}

impl Answers {
    /// Resolves the answers to `spec` from `given` (`--var name=text`, each parsed by its variable's
    /// type), the provider and the backend asked for (the only provider and the first backend when
    /// not). Every error names the variable.
    pub fn resolve(
        spec: &TemplateSpec,
        provider: Option<&str>,
        backend: Option<Backend>,
        given: &[(String, String)],
    ) -> Result<Self, AnswerError> {
        let template = spec.name.clone();
        let provider = choose_provider(spec, provider)?;
        let backend = choose_backend(spec, backend)?;
        let mut texts: BTreeMap<&str, &str> = BTreeMap::new();
        for (name, text) in given {
            let Some(variable) = spec.variable(name) else {
                let known: Vec<&str> = spec.variables.iter().map(|v| v.name.as_str()).collect();
                return Err(AnswerError::Unknown { template, variable: name.clone(), known: known.join(", ") });
            };
            if texts.insert(variable.name.as_str(), text.as_str()).is_some() {
                return Err(AnswerError::Twice { template, variable: name.clone() });
            }
        }
        let mut values = BTreeMap::new();
        for variable in &spec.variables {
            let wrong = |e: value::TypeError| AnswerError::WrongType {
                template: template.clone(),
                variable: variable.name.clone(),
                kind: variable.kind,
                message: e.to_string(),
            };
            let answer = match (texts.get(variable.name.as_str()), default_of(variable, &provider)) {
                (Some(text), _) => value::parse_text(variable.kind, text).map_err(wrong)?,
                (None, Some(default)) => value::from_yaml(variable.kind, default).map_err(wrong)?,
                (None, None) if variable.required => {
                    return Err(AnswerError::Missing {
                        template,
                        variable: variable.name.clone(),
                        description: variable.description.clone(),
                    });
                }
                (None, None) => Answer::Plain(serde_json::Value::Null),
            };
            values.insert(variable.name.clone(), answer);
        }
        let answers =
            Self { template: spec.name.clone(), version: spec.version.to_string(), provider, backend, values };
        answers.check(spec)?;
        Ok(answers)
    }

    /// Checks stored answers against `spec` again before they are rendered: the same template and
    /// version, a listed provider and backend, every declared variable answered with its type and
    /// rules, and no other.
    pub fn check(&self, spec: &TemplateSpec) -> Result<(), AnswerError> {
        let template = spec.name.clone();
        if self.template != spec.name || self.version != spec.version.to_string() {
            return Err(AnswerError::OtherTemplate {
                answers: format!("{}:{}", self.template, self.version),
                template: spec.key(),
            });
        }
        choose_provider(spec, Some(self.provider.as_str()))?;
        choose_backend(spec, Some(self.backend))?;
        if let Some(name) = self.values.keys().find(|name| spec.variable(name).is_none()) {
            let known: Vec<&str> = spec.variables.iter().map(|v| v.name.as_str()).collect();
            return Err(AnswerError::Unknown { template, variable: name.clone(), known: known.join(", ") });
        }
        for variable in &spec.variables {
            let answer = self.values.get(&variable.name).ok_or_else(|| AnswerError::Missing {
                template: template.clone(),
                variable: variable.name.clone(),
                description: variable.description.clone(),
            })?;
            check_answer(&template, variable, answer)?;
        }
        Ok(())
    }

    /// Every secret answer with its variable's name.
    pub fn secrets(&self) -> impl Iterator<Item = (&str, &Secret)> {
        self.values.iter().filter_map(|(name, answer)| match answer {
            Answer::Secret(secret) => Some((name.as_str(), secret)),
            Answer::Plain(_) => None,
        })
    }

    /// Whether rendering needs the keyring (an answer is a `@name` reference).
    pub fn needs_keyring(&self) -> bool {
        self.secrets().any(|(_, s)| s.reference().is_some())
    }
}

impl fmt::Display for Answers {
    /// One `name = value` line per variable, secrets as `***` (references as `@name`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (name, answer) in &self.values {
            writeln!(f, "{name} = {answer}")?;
        }
        Ok(())
    }
}

/// Type and rules of one answer against its variable.
fn check_answer(template: &str, variable: &Variable, answer: &Answer) -> Result<(), AnswerError> {
    let wrong = |message: String| AnswerError::WrongType {
        template: template.to_string(),
        variable: variable.name.clone(),
        kind: variable.kind,
        message,
    };
    match answer {
        Answer::Plain(serde_json::Value::Null) if variable.required => {
            return Err(AnswerError::Missing {
                template: template.to_string(),
                variable: variable.name.clone(),
                description: variable.description.clone(),
            });
        }
        Answer::Plain(serde_json::Value::Null) => {}
        Answer::Plain(_) if variable.kind == VarType::Secret => {
            return Err(wrong("expected a secret, got a plain value".into()));
        }
        Answer::Plain(plain) => {
            value::from_yaml(variable.kind, plain).map_err(|e| wrong(e.to_string()))?;
        }
        Answer::Secret(_) if variable.kind != VarType::Secret => {
            return Err(wrong("expected a plain value, got a secret".into()));
        }
        Answer::Secret(_) => {}
    }
    value::check(variable, answer).map_err(|message| AnswerError::Invalid {
        template: template.to_string(),
        variable: variable.name.clone(),
        message,
    })
}

/// The default for `provider`, else the default.
fn default_of<'a>(variable: &'a Variable, provider: &ProviderName) -> Option<&'a serde_json::Value> {
    variable.provider_defaults.get(provider).or(variable.default.as_ref())
}

fn choose_provider(spec: &TemplateSpec, asked: Option<&str>) -> Result<ProviderName, AnswerError> {
    let known = || spec.providers.iter().map(ProviderName::as_str).collect::<Vec<_>>().join(", ");
    match asked {
        Some(name) => spec.providers.iter().find(|p| p.as_str() == name).cloned().ok_or_else(|| {
            AnswerError::Provider { template: spec.name.clone(), given: Some(name.to_string()), known: known() }
        }),
        None => match spec.providers.as_slice() {
            [only] => Ok(only.clone()),
            _ => Err(AnswerError::Provider { template: spec.name.clone(), given: None, known: known() }),
        },
    }
}

fn choose_backend(spec: &TemplateSpec, asked: Option<Backend>) -> Result<Backend, AnswerError> {
    match asked {
        None => spec.backends.first().map(|b| b.backend),
        Some(backend) => spec.entry(backend).map(|_| backend),
    }
    .ok_or_else(|| AnswerError::Backend {
        template: spec.name.clone(),
        backend: asked.unwrap_or(Backend::Terraform),
        known: spec.backends.iter().map(|b| b.backend.to_string()).collect::<Vec<_>>().join(", "),
    })
}

#[cfg(test)]
mod tests;
