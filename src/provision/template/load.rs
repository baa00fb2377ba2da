//! A template's folder made into a [`Template`]: its `template.yaml` parsed and checked, every
//! `*.j2` file parsed, each backend's entry point present, and — the check that keeps a template
//! honest — the variables it declares and the variables its files use the same set. A declared
//! variable no file uses is a question asked for nothing; a used variable not declared would be an
//! undefined value at render time. Either is an error at load, naming the template and the variable.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use super::engine;
use super::schema::{self, RESERVED, SchemaError, TemplateSpec};
use crate::input::yaml_path::{Seg, key};

/// The schema file of every template folder.
pub const SCHEMA_FILE: &str = "template.yaml";

/// Where a template came from.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// Shipped inside merlya (the repository's `templates/`).
    BuiltIn,
    /// A folder under `MERLYA_HOME/templates`.
    User(PathBuf),
}

impl Source {
    /// How a file of this template is named in messages (`/home/…/template.yaml`,
    /// `built-in basic-vm/template.yaml`).
    pub fn file_name(&self, folder: &str, file: &str) -> String {
        match self {
            Source::BuiltIn => format!("built-in {folder}/{file}"),
            Source::User(dir) => dir.join(file).display().to_string(),
        }
    }
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::BuiltIn => f.write_str("built-in"),
            Source::User(dir) => write!(f, "user ({})", dir.display()),
        }
    }
}

/// A loaded, checked template: its schema and its files.
#[derive(Debug, Clone)]
pub struct Template {
    /// What its `template.yaml` says.
    pub spec: TemplateSpec,
    /// Where it came from.
    pub source: Source,
    /// Its `*.j2` files, by path relative to its folder (`main.tf.j2`, `providers/aws.tf.j2`).
    files: BTreeMap<String, String>,
}

impl Template {
    /// The `*.j2` files (relative path → source).
    pub fn files(&self) -> &BTreeMap<String, String> {
        &self.files
    }
}

/// A template folder that cannot be used, with where and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TemplateError {
    /// `template.yaml` is malformed.
    #[error(transparent)]
    Schema(#[from] SchemaError),
    /// A file could not be read (a folder, not UTF-8, too large, missing `template.yaml`).
    #[error("{file}: {message}")]
    Unreadable {
        /// The file or folder.
        file: String,
        /// Why.
        message: String,
    },
    /// A `*.j2` file does not parse.
    #[error("{file}:{line}: template {template}: {message}")]
    Syntax {
        /// The template's name.
        template: String,
        /// The file.
        file: String,
        /// 1-based line, 0 when unknown.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// A file uses a variable `variables` does not declare.
    #[error("{file}: template {template}: uses variable {variable}, which its variables do not declare")]
    Undeclared {
        /// The template's name.
        template: String,
        /// The variable.
        variable: String,
        /// The file using it.
        file: String,
    },
    /// A declared variable no file uses.
    #[error("{file}:{line}: template {template}: variable {variable} is declared but no template file uses it")]
    Unused {
        /// The template's name.
        template: String,
        /// The variable.
        variable: String,
        /// The `template.yaml`.
        file: String,
        /// Its line there.
        line: usize,
    },
}

/// Makes a template from its folder's text: `schema_text` (the `template.yaml`) and `files` (each
/// `*.j2` by relative path). `source` and `folder` name the files in errors.
pub fn load(
    source: Source,
    folder: &str,
    schema_text: &str,
    files: BTreeMap<String, String>,
) -> Result<Template, TemplateError> {
    let schema_file = source.file_name(folder, SCHEMA_FILE);
    let spec = schema::parse(&schema_file, schema_text)?;
    let name_file = |file: &str| source.file_name(folder, file);
    for (i, backend) in spec.backends.iter().enumerate() {
        if !files.contains_key(&backend.entry) {
            let path = [key("backends"), Seg::Index(i), key("entry")];
            let have: Vec<&str> = files.keys().map(String::as_str).collect();
            let message =
                format!("{} is not in the template's folder (its .j2 files: {})", backend.entry, have.join(", "));
            return Err(SchemaError::at(&schema_file, schema_text, &path, message).into());
        }
    }
    let env = engine::environment(&files).map_err(|e| TemplateError::Syntax {
        template: spec.name.clone(),
        file: name_file(&e.file),
        line: e.line,
        message: e.message,
    })?;
    let globals = engine::global_names(&env);
    let mut used = BTreeSet::new();
    for name in files.keys() {
        let template = env.get_template(name).map_err(|e| TemplateError::Syntax {
            template: spec.name.clone(),
            file: name_file(name),
            line: e.line().unwrap_or(0),
            message: engine::describe(&e),
        })?;
        let mut names: Vec<String> = template.undeclared_variables(false).into_iter().collect();
        names.sort();
        for variable in names {
            if globals.contains(&variable) || RESERVED.contains(&variable.as_str()) {
                continue;
            }
            if spec.variable(&variable).is_none() {
                return Err(TemplateError::Undeclared { template: spec.name.clone(), variable, file: name_file(name) });
            }
            used.insert(variable);
        }
    }
    if let Some((i, unused)) = spec.variables.iter().enumerate().find(|(_, v)| !used.contains(&v.name)) {
        let line = crate::input::yaml_path::line_of(schema_text, &[key("variables"), Seg::Index(i)]).unwrap_or(0);
        return Err(TemplateError::Unused {
            template: spec.name.clone(),
            variable: unused.name.clone(),
            file: schema_file,
            line,
        });
    }
    Ok(Template { spec, source, files })
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) const SCHEMA: &str = "\
name: probe
version: 1.0.0
category: storage
description: A probe.
providers: [local]
backends:
  - backend: terraform
    entry: main.tf.j2
variables:
  - name: message
    type: string
    required: true
  - name: tags
    type: map
    default: {}
outputs:
  - name: id
";

    const MAIN: &str = "resource \"terraform_data\" \"m\" {\n  input = { message = \"{{ message }}\", tags = {{ tags }} }\n}\n{% for k in tags %}# {{ loop.index }} {{ k }} {{ provider }} {{ template.name }}\n{% endfor %}{% set x = range(2) %}output \"id\" {\n  value = terraform_data.m.id\n}\n";

    fn files(main: &str) -> BTreeMap<String, String> {
        BTreeMap::from([("main.tf.j2".to_string(), main.to_string())])
    }

    fn load_user(schema: &str, main: &str) -> Result<Template, TemplateError> {
        load(Source::User(PathBuf::from("/u/probe")), "probe", schema, files(main))
    }

    #[test]
    fn a_template_whose_files_use_exactly_its_variables_loads() {
        let t = load_user(SCHEMA, MAIN).unwrap();
        assert_eq!(t.spec.key(), "probe:1.0.0");
        assert_eq!(t.files().len(), 1);
    }

    #[test]
    fn a_used_variable_not_declared_fails_to_load_naming_the_template_and_the_variable() {
        let e = load_user(SCHEMA, &MAIN.replace("{{ message }}", "{{ mesage }}")).unwrap_err();
        assert!(
            matches!(&e, TemplateError::Undeclared { variable, template, .. } if variable == "mesage" && template == "probe"),
            "{e}"
        );
        assert_eq!(
            e.to_string(),
            "/u/probe/main.tf.j2: template probe: uses variable mesage, which its variables do not declare"
        );
        // Also when only a partial uses it, and inside a condition that would not run.
        let mut with_partial = files(MAIN);
        with_partial.insert("part.tf.j2".into(), "{% if false %}{{ region }}{% endif %}".into());
        let e = load(Source::BuiltIn, "probe", SCHEMA, with_partial).unwrap_err();
        assert_eq!(
            e.to_string(),
            "built-in probe/part.tf.j2: template probe: uses variable region, which its variables do not declare"
        );
    }

    #[test]
    fn a_declared_variable_no_file_uses_fails_to_load_with_its_line() {
        let e = load_user(
            SCHEMA,
            &MAIN.replace("tags = {{ tags }}", "tags = {}").replace("{% for k in tags %}", "{% for k in [] %}"),
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "/u/probe/template.yaml:13: template probe: variable tags is declared but no template file uses it"
        );
    }

    #[test]
    fn a_missing_entry_or_a_file_that_does_not_parse_is_named() {
        let e = load(Source::BuiltIn, "probe", SCHEMA, BTreeMap::new()).unwrap_err();
        assert!(
            e.to_string().starts_with("built-in probe/template.yaml:8: backends[0].entry: main.tf.j2 is not in"),
            "{e}"
        );
        let e = load_user(SCHEMA, "{{ message }}\n{% for %}").unwrap_err();
        assert!(e.to_string().starts_with("/u/probe/main.tf.j2:2: template probe:"), "{e}");
    }
}
