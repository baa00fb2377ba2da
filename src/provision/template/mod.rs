//! Templates: a folder with a `template.yaml` (the schema: name, semver version, category,
//! providers, backends and their entry points, typed variables, outputs) and `*.j2` files rendered
//! with minijinja (ADR 0028, templates/README.md).
//!
//! The way through: [`Registry::load`] (built-in and `MERLYA_HOME/templates`, each template
//! checked at load: [`load`]), [`Registry::get`] by `name` or `name:version`,
//! [`Answers::resolve`] (typed, validated, secrets kept as keyring references), [`render()`]
//! (strict, fuelled, values escaped for the file) and [`Rendered::write`].
//!
//! - [`schema`]: what `template.yaml` says, checked with file, field and line;
//! - [`value`]: a variable's typed value, parsed per type; secrets masked;
//! - [`engine`]: the minijinja environment (strict undefined, fuel, HCL/JSON escaping);
//! - [`load`]: a folder made into a [`Template`], declared and used variables compared;
//! - [`answers`]: the resolved values, serializable for a resource to keep;
//! - [`render`](mod@render): answers into files;
//! - [`registry`]: every template by `name:version`; [`builtin`]: the ones compiled in.

pub mod answers;
pub mod builtin;
pub mod engine;
pub mod load;
pub mod registry;
pub mod render;
pub mod schema;
pub mod value;

pub use answers::{AnswerError, Answers};
pub use load::{Source, Template, TemplateError};
pub use registry::{Entry, LookupError, Registry, TemplateRef};
pub use render::{RenderError, Rendered, WriteError, render};
pub use schema::{Backend, Category, ProviderName, TemplateSpec, VarType, Variable};
