//! Rendering a template from its answers: secrets resolved from the keyring only now, the chosen
//! backend's entry point rendered under the engine's rules (strict, fuelled, values escaped for
//! the file), the Terraform outputs the template declares found in what was rendered, and the
//! files written into a folder.
//!
//! The rendered files are the one place a secret's value is written: [`Rendered`]'s `Debug` shows
//! names and sizes, and every error is masked with the secret values before it is returned.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use minijinja::{ErrorKind, Value};

use super::answers::{AnswerError, Answers};
use super::engine;
use super::load::Template;
use super::schema::Backend;
use super::value::{self, Answer, Secret};
use crate::secrets::SecretSource;
use crate::secrets::reference::mask_values;

/// One rendered file.
#[derive(Clone)]
pub struct RenderedFile {
    /// Its path relative to the output folder (the entry point's, without `.j2`).
    pub path: String,
    content: String,
}

impl RenderedFile {
    /// What it holds (secret values included: for the file, not for a screen).
    pub fn content(&self) -> &str {
        &self.content
    }
}

impl fmt::Debug for RenderedFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({} bytes)", self.path, self.content.len())
    }
}

/// What a render made.
#[derive(Clone)]
pub struct Rendered {
    /// The files.
    pub files: Vec<RenderedFile>,
    secret_values: Vec<String>,
}

impl fmt::Debug for Rendered {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Rendered").field("files", &self.files).field("secrets", &self.secret_values.len()).finish()
    }
}

impl Rendered {
    /// `text` with every secret value of this render (and its usual encodings) as `***`.
    pub fn mask(&self, text: &str) -> String {
        mask_values(text, &self.secret_values)
    }

    /// Writes the files into `dir` (created when missing; 0600 files, since they may hold a secret).
    /// A folder with anything in it is refused unless `force`, which writes over same-named files.
    /// Returns the paths written.
    pub fn write(&self, dir: &Path, force: bool) -> Result<Vec<PathBuf>, WriteError> {
        let io = |path: &Path, e: std::io::Error| WriteError::Io { path: path.to_path_buf(), message: e.to_string() };
        match std::fs::read_dir(dir) {
            Ok(mut entries) => {
                if entries.next().is_some() && !force {
                    return Err(WriteError::NotEmpty { dir: dir.to_path_buf() });
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                crate::home::create_private_dir(dir).map_err(|e| io(dir, e))?;
            }
            Err(_) if dir.exists() => return Err(WriteError::NotAFolder { dir: dir.to_path_buf() }),
            Err(e) => return Err(io(dir, e)),
        }
        let mut written = Vec::new();
        for file in &self.files {
            let path = dir.join(&file.path);
            if let Some(parent) = path.parent() {
                crate::home::create_private_dir(parent).map_err(|e| io(parent, e))?;
            }
            crate::home::write_private(&path, file.content.as_bytes()).map_err(|e| io(&path, e))?;
            written.push(path);
        }
        Ok(written)
    }
}

/// A render that failed. Never holds a secret's value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RenderError {
    /// The answers do not fit the template.
    #[error(transparent)]
    Answers(#[from] AnswerError),
    /// A secret reference names nothing on the keyring.
    #[error(
        "template {template}: variable {variable}: no secret @{reference} on the keyring (store it with `merlya secret set {reference}`)"
    )]
    SecretMissing {
        /// The template.
        template: String,
        /// The variable.
        variable: String,
        /// The secret's name.
        reference: String,
    },
    /// The render used more than its fuel: a loop that would not end, or output too large.
    #[error(
        "{file}: template {template}: stopped after {} units of fuel (a loop that does not end, or output too large)",
        engine::FUEL
    )]
    OutOfFuel {
        /// The template.
        template: String,
        /// The file being rendered.
        file: String,
    },
    /// minijinja failed (an undefined attribute, a filter on the wrong value…).
    #[error("{file}:{line}: template {template}: {message}")]
    Failed {
        /// The template.
        template: String,
        /// The file.
        file: String,
        /// 1-based line, 0 when unknown.
        line: usize,
        /// What went wrong, secrets masked.
        message: String,
    },
    /// A declared output that the rendered Terraform does not define.
    #[error("template {template} declares output {output}, but the rendered {file} has no `output \"{output}\"` block")]
    MissingOutput {
        /// The template.
        template: String,
        /// The output.
        output: String,
        /// The rendered file.
        file: String,
    },
}

/// A folder the rendered files cannot be written into.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WriteError {
    /// It has files already.
    #[error("{} is not empty (use --force to write over it)", dir.display())]
    NotEmpty {
        /// The folder.
        dir: PathBuf,
    },
    /// It is not a folder.
    #[error("{} is not a folder", dir.display())]
    NotAFolder {
        /// The path.
        dir: PathBuf,
    },
    /// The filesystem refused.
    #[error("cannot write {}: {message}", path.display())]
    Io {
        /// The path.
        path: PathBuf,
        /// Why.
        message: String,
    },
}

/// Renders `template` from `answers`, resolving `@name` secrets through `keyring`.
pub fn render(template: &Template, answers: &Answers, keyring: &dyn SecretSource) -> Result<Rendered, RenderError> {
    let spec = &template.spec;
    answers.check(spec)?;
    let name = spec.name.clone();
    let mut secret_values = Vec::new();
    let mut context: BTreeMap<String, Value> = BTreeMap::new();
    for (variable, answer) in &answers.values {
        let value = match answer {
            Answer::Plain(plain) => engine::from_json(plain),
            Answer::Secret(Secret::Given(hidden)) => {
                secret_values.push(hidden.expose().to_string());
                Value::from(hidden.expose())
            }
            Answer::Secret(Secret::Reference(reference)) => {
                let missing = || RenderError::SecretMissing {
                    template: name.clone(),
                    variable: variable.clone(),
                    reference: reference.clone(),
                };
                let resolved = keyring.lookup(reference).ok_or_else(missing)?;
                if let Some(declared) = spec.variable(variable) {
                    value::check_secret(declared, &resolved).map_err(|message| AnswerError::Invalid {
                        template: name.clone(),
                        variable: variable.clone(),
                        message: format!("@{reference}: {message}"),
                    })?;
                }
                secret_values.push(resolved.clone());
                Value::from(resolved)
            }
        };
        context.insert(variable.clone(), value);
    }
    context.insert("provider".into(), Value::from(answers.provider.as_str()));
    context.insert(
        "template".into(),
        Value::from_pairs([
            ("name", Value::from(spec.name.as_str())),
            ("version", Value::from(answers.version.as_str())),
        ]),
    );
    let masked = |text: &str| mask_values(text, &secret_values);
    let entry = spec.entry(answers.backend).ok_or_else(|| AnswerError::Backend {
        template: name.clone(),
        backend: answers.backend,
        known: spec.backends.iter().map(|b| b.backend.to_string()).collect::<Vec<_>>().join(", "),
    })?;
    let env = engine::environment(template.files()).map_err(|e| RenderError::Failed {
        template: name.clone(),
        file: e.file,
        line: e.line,
        message: masked(&e.message),
    })?;
    let content = env.get_template(entry).and_then(|t| t.render(Value::from(context))).map_err(|e| {
        let file = e.name().unwrap_or(entry).to_string();
        match e.kind() {
            ErrorKind::OutOfFuel => RenderError::OutOfFuel { template: name.clone(), file },
            _ => RenderError::Failed {
                template: name.clone(),
                file,
                line: e.line().unwrap_or(0),
                message: masked(&engine::describe(&e)),
            },
        }
    })?;
    let path = entry.strip_suffix(".j2").unwrap_or(entry).to_string();
    if answers.backend == Backend::Terraform {
        for output in &spec.outputs {
            let block = regex::Regex::new(&format!(r#"(?m)^\s*output\s+"{}"\s*\{{"#, regex::escape(&output.name)));
            if block.is_ok_and(|re| !re.is_match(&content)) {
                return Err(RenderError::MissingOutput { template: name, output: output.name.clone(), file: path });
            }
        }
    }
    Ok(Rendered { files: vec![RenderedFile { path, content }], secret_values })
}

#[cfg(test)]
mod tests;
