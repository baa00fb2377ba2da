//! Every template this home can render: the built-in ones (compiled into merlya) and the user's
//! (`MERLYA_HOME/templates`), keyed `name:version`, with `name` alone meaning the highest version.
//!
//! A user template of the same `name:version` as a built-in one replaces it (and is marked as
//! doing so); a new version of a built-in name sits beside it. A folder that cannot be used is
//! kept as an error naming its file, field and line, and does not hide the others.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use semver::Version;

use super::builtin;
use super::load::{SCHEMA_FILE, Source, Template, TemplateError, load};

/// The most `*.j2` files one template folder may hold.
const MAX_FILES: usize = 100;
/// How deep `*.j2` files are looked for under a template folder (`providers/aws.tf.j2` is 1).
const MAX_DEPTH: usize = 3;

/// `name` or `name:version`, as people ask for a template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TemplateRef {
    /// The template's name.
    pub name: String,
    /// An exact version, or the highest when `None`.
    pub version: Option<Version>,
}

impl FromStr for TemplateRef {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text.split_once(':') {
            None if !text.is_empty() => Ok(Self { name: text.to_string(), version: None }),
            Some((name, version)) if !name.is_empty() => Version::parse(version)
                .map(|v| Self { name: name.to_string(), version: Some(v) })
                .map_err(|e| format!("`{version}` is not a semver version like 1.0.0: {e}")),
            _ => Err(format!("`{text}` is not NAME or NAME:VERSION")),
        }
    }
}

impl std::fmt::Display for TemplateRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.version {
            Some(v) => write!(f, "{}:{v}", self.name),
            None => f.write_str(&self.name),
        }
    }
}

/// One template in the registry.
#[derive(Debug, Clone)]
pub struct Entry {
    /// The template.
    pub template: Template,
    /// A user template that replaces the built-in one of the same `name:version`.
    pub overrides: bool,
}

/// A template that is not in the registry.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LookupError {
    /// No template of that name.
    #[error("no template named {name} (known: {known}){}", not_loaded(invalid))]
    NotFound {
        /// The name asked for.
        name: String,
        /// The names there are, comma-separated.
        known: String,
        /// Folders that could not be loaded (one may be the one asked for).
        invalid: Vec<String>,
    },
    /// The name exists, not that version.
    #[error("template {name} has no version {version} (it has: {available})")]
    NoVersion {
        /// The name.
        name: String,
        /// The version asked for.
        version: Version,
        /// The versions there are, comma-separated.
        available: String,
    },
}

fn not_loaded(invalid: &[String]) -> String {
    match invalid {
        [] => String::new(),
        _ => format!("; not loaded: {}", invalid.join("; ")),
    }
}

/// The templates by name and version, and the folders that could not be loaded.
#[derive(Debug, Default)]
pub struct Registry {
    templates: BTreeMap<String, BTreeMap<Version, Entry>>,
    /// Template folders that cannot be used, each with where and why.
    pub errors: Vec<TemplateError>,
}

impl Registry {
    /// The built-in templates and those under `user_dir` (`MERLYA_HOME/templates`; a missing folder
    /// has none).
    pub fn load(user_dir: &Path) -> Self {
        Self::from_loaded(builtin::templates(), read_user_dir(user_dir))
    }

    /// A registry of templates already loaded (or not): `user` ones replace `built_in` ones of the
    /// same `name:version`.
    pub fn from_loaded(
        built_in: Vec<Result<Template, TemplateError>>,
        user: Vec<Result<Template, TemplateError>>,
    ) -> Self {
        let mut registry = Self::default();
        for (is_user, loaded) in built_in.into_iter().map(|t| (false, t)).chain(user.into_iter().map(|t| (true, t))) {
            let template = match loaded {
                Ok(template) => template,
                Err(e) => {
                    registry.errors.push(e);
                    continue;
                }
            };
            let versions = registry.templates.entry(template.spec.name.clone()).or_default();
            let version = template.spec.version.clone();
            match versions.get(&version) {
                Some(existing) if is_user && existing.template.source == Source::BuiltIn => {
                    versions.insert(version, Entry { template, overrides: true });
                }
                Some(existing) => registry.errors.push(TemplateError::Unreadable {
                    file: template.source.file_name(&template.spec.name, SCHEMA_FILE),
                    message: format!("{} is defined twice (also by {})", template.spec.key(), existing.template.source),
                }),
                None => {
                    versions.insert(version, Entry { template, overrides: false });
                }
            }
        }
        registry
    }

    /// The template `reference` names: that exact version, or the highest (the highest release
    /// when there is one, else the highest pre-release).
    pub fn get(&self, reference: &TemplateRef) -> Result<&Entry, LookupError> {
        let Some(versions) = self.templates.get(&reference.name) else {
            return Err(LookupError::NotFound {
                name: reference.name.clone(),
                known: self.templates.keys().cloned().collect::<Vec<_>>().join(", "),
                invalid: self.errors.iter().map(ToString::to_string).collect(),
            });
        };
        match &reference.version {
            Some(version) => versions.get(version).ok_or_else(|| LookupError::NoVersion {
                name: reference.name.clone(),
                version: version.clone(),
                available: versions.keys().map(ToString::to_string).collect::<Vec<_>>().join(", "),
            }),
            None => latest(versions).ok_or_else(|| LookupError::NotFound {
                name: reference.name.clone(),
                known: String::new(),
                invalid: Vec::new(),
            }),
        }
    }

    /// Each name's highest version, with all its versions (highest first), by name.
    pub fn latest(&self) -> impl Iterator<Item = (&Entry, Vec<&Version>)> {
        self.templates.values().filter_map(|versions| {
            let all: Vec<&Version> = versions.keys().rev().collect();
            latest(versions).map(|entry| (entry, all))
        })
    }

    /// Every `name:version` there is, overrides included.
    pub fn entries(&self) -> impl Iterator<Item = &Entry> {
        self.templates.values().flat_map(BTreeMap::values)
    }
}

fn latest(versions: &BTreeMap<Version, Entry>) -> Option<&Entry> {
    versions.iter().rev().find(|(v, _)| v.pre.is_empty()).or_else(|| versions.iter().next_back()).map(|(_, e)| e)
}

/// The templates under `dir`: each folder holding a `template.yaml`, or one level further down
/// (`NAME/VERSION/template.yaml`, to keep versions side by side). Hidden folders are skipped.
pub fn read_user_dir(dir: &Path) -> Vec<Result<Template, TemplateError>> {
    let unreadable =
        |path: &Path, message: String| TemplateError::Unreadable { file: path.display().to_string(), message };
    let mut out = Vec::new();
    let Ok(folders) = sorted_folders(dir) else {
        if dir.exists() && !dir.is_dir() {
            out.push(Err(unreadable(dir, "is not a folder (expected one folder per template)".into())));
        }
        return out;
    };
    for folder in folders {
        if folder.join(SCHEMA_FILE).exists() {
            out.push(read_folder(&folder));
            continue;
        }
        let inner: Vec<PathBuf> =
            sorted_folders(&folder).unwrap_or_default().into_iter().filter(|f| f.join(SCHEMA_FILE).exists()).collect();
        if inner.is_empty() {
            out.push(Err(unreadable(&folder, format!("no {SCHEMA_FILE} here or in its folders"))));
        }
        out.extend(inner.iter().map(|f| read_folder(f)));
    }
    out
}

/// The folders in `dir`, sorted, hidden ones left out.
fn sorted_folders(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut folders: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir() && !p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with('.')))
        .collect();
    folders.sort();
    Ok(folders)
}

/// Loads the template in `folder`: its `template.yaml` and every `*.j2` under it.
fn read_folder(folder: &Path) -> Result<Template, TemplateError> {
    let unreadable = |e: crate::input::InputError| TemplateError::Unreadable {
        file: e.path.display().to_string(),
        message: e.detail(),
    };
    let schema = crate::input::read_text(&folder.join(SCHEMA_FILE), crate::input::SETTINGS_LIMIT, "a template")
        .map_err(unreadable)?;
    let mut files = BTreeMap::new();
    collect_j2(folder, "", 0, &mut files)
        .map_err(|message| TemplateError::Unreadable { file: folder.display().to_string(), message })?;
    let files = files
        .into_iter()
        .map(|(name, path)| {
            crate::input::read_text(&path, crate::input::SETTINGS_LIMIT, "a template file").map(|t| (name, t))
        })
        .collect::<Result<BTreeMap<_, _>, _>>()
        .map_err(unreadable)?;
    let name = folder.file_name().and_then(|n| n.to_str()).unwrap_or("template");
    load(Source::User(folder.to_path_buf()), name, &schema, files)
}

/// Finds `*.j2` files under `dir` (relative names with `/`), at most [`MAX_DEPTH`] folders down
/// and [`MAX_FILES`] in all.
fn collect_j2(dir: &Path, prefix: &str, depth: usize, out: &mut BTreeMap<String, PathBuf>) -> Result<(), String> {
    let entries = std::fs::read_dir(dir).map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
    for entry in entries.filter_map(Result::ok) {
        let path = entry.path();
        let Some(name) = path.file_name().and_then(|n| n.to_str()).map(str::to_string) else { continue };
        if name.starts_with('.') {
            continue;
        }
        let relative = format!("{prefix}{name}");
        if path.is_dir() {
            if depth < MAX_DEPTH {
                collect_j2(&path, &format!("{relative}/"), depth + 1, out)?;
            }
        } else if name.ends_with(".j2") {
            if out.len() >= MAX_FILES {
                return Err(format!("more than {MAX_FILES} .j2 files; is it the right folder?"));
            }
            out.insert(relative, path);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
