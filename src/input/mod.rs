//! The files people write — configuration, themes, keymaps, skills, task lists, inventories,
//! manifests — read before any parser sees them, so a broken or hostile file costs an error naming
//! it, never minutes or a wrong answer:
//!
//! - a size limit, checked before reading (and while reading: a file may grow or be `/dev/zero`);
//! - a folder where a file is expected is an error, not a file that is silently not there;
//! - text that is not UTF-8 is refused with the line and column of the first bad byte;
//! - YAML nested deeper than [`MAX_YAML_DEPTH`] is refused by a linear scan before parsing (the
//!   parser's cost grows with the square of the nesting: 200 000 levels took minutes), naming the
//!   line where the limit is passed ([`from_yaml`], [`check_yaml_depth`]);
//! - values quoted back in parser errors are cut to a readable length ([`shorten`]).

mod yaml_depth;
pub mod yaml_path;

use std::io::Read;
use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;

pub use yaml_depth::MAX_YAML_DEPTH;

/// The most merlya reads of a file of settings (config.yaml, a theme, a keymap, a skill, a task
/// list): a hundred times what the largest real one needs.
pub const SETTINGS_LIMIT: u64 = 1024 * 1024;

/// The most merlya reads of an inventory to import: 10 000 hosts (the most one import holds) with
/// several hundred bytes of variables each.
pub const DATA_LIMIT: u64 = 8 * 1024 * 1024;

/// A file that cannot be read as text, with where.
#[derive(Debug, thiserror::Error)]
#[error("{}{}: {problem}", path.display(), line.map(|l| format!(":{l}")).unwrap_or_default())]
pub struct InputError {
    /// The file.
    pub path: PathBuf,
    /// 1-based line of the problem, when it has one.
    pub line: Option<usize>,
    /// What is wrong.
    pub problem: Problem,
}

impl InputError {
    /// What is wrong with its line, without the file's name (for errors that name it already).
    pub fn detail(&self) -> String {
        match self.line {
            Some(line) => format!("line {line}: {}", self.problem),
            None => self.problem.to_string(),
        }
    }
}

/// What is wrong with a file, said without its name (callers that name it themselves show this).
#[derive(Debug, thiserror::Error)]
pub enum Problem {
    /// The filesystem refused.
    #[error("cannot read: {0}")]
    Io(std::io::Error),
    /// A folder stands where a file is expected.
    #[error("is a folder, expected a file")]
    Folder,
    /// Larger than merlya reads of such a file.
    #[error("is {} ({size} bytes); merlya reads at most {} of {what}: is it the right file?", human(*size), human(*limit))]
    TooLarge { size: u64, limit: u64, what: &'static str },
    /// Not UTF-8.
    #[error("column {column}: byte 0x{byte:02x} is not UTF-8; save the file as UTF-8")]
    NotUtf8 { column: usize, byte: u8 },
}

/// `8.0 MiB`, `2.0 KiB`, `12 bytes`.
fn human(bytes: u64) -> String {
    match bytes {
        b if b >= 1024 * 1024 => format!("{:.1} MiB", b as f64 / (1024.0 * 1024.0)),
        b if b >= 1024 => format!("{:.1} KiB", b as f64 / 1024.0),
        b => format!("{b} bytes"),
    }
}

/// The text of `path`, at most `limit` bytes of UTF-8 (`what` says what kind of file, for the error).
pub fn read_text(path: &Path, limit: u64, what: &'static str) -> Result<String, InputError> {
    let fail = |line, problem| InputError { path: path.to_path_buf(), line, problem };
    let meta = std::fs::metadata(path).map_err(|e| fail(None, Problem::Io(e)))?;
    if meta.is_dir() {
        return Err(fail(None, Problem::Folder));
    }
    if meta.len() > limit {
        return Err(fail(None, Problem::TooLarge { size: meta.len(), limit, what }));
    }
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|file| file.take(limit + 1).read_to_end(&mut bytes))
        .map_err(|e| fail(None, Problem::Io(e)))?;
    if bytes.len() as u64 > limit {
        return Err(fail(None, Problem::TooLarge { size: bytes.len() as u64, limit, what }));
    }
    String::from_utf8(bytes).map_err(|e| {
        let (line, column, byte) = utf8_place(e.as_bytes(), e.utf8_error().valid_up_to());
        fail(Some(line), Problem::NotUtf8 { column, byte })
    })
}

/// [`read_text`], with a missing file as `None` (an optional file: a user theme, config.yaml).
pub fn read_optional(path: &Path, limit: u64, what: &'static str) -> Result<Option<String>, InputError> {
    match read_text(path, limit, what) {
        Ok(text) => Ok(Some(text)),
        Err(InputError { problem: Problem::Io(e), .. }) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// Line and column (1-based, in bytes) of the byte at `at`, and the byte.
fn utf8_place(bytes: &[u8], at: usize) -> (usize, usize, u8) {
    let before = &bytes[..at.min(bytes.len())];
    let line = before.iter().filter(|b| **b == b'\n').count() + 1;
    let line_start = before.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
    (line, at - line_start + 1, bytes.get(at).copied().unwrap_or(0))
}

/// A YAML file that cannot be read: too deep, or what the parser said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct YamlError {
    line: usize,
    column: usize,
    message: String,
}

impl YamlError {
    /// 1-based line of the problem, 0 when the parser did not say.
    pub fn line(&self) -> usize {
        self.line
    }

    /// 1-based column, 0 when unknown.
    pub fn column(&self) -> usize {
        self.column
    }

    /// What is wrong, without the place, long values cut.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl std::fmt::Display for YamlError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.line {
            0 => f.write_str(&self.message),
            line => write!(f, "{} at line {line} column {}", self.message, self.column),
        }
    }
}

impl std::error::Error for YamlError {}

impl From<yaml_serde::Error> for YamlError {
    fn from(e: yaml_serde::Error) -> Self {
        let (line, column) = e.location().map_or((0, 0), |l| (l.line(), l.column()));
        let message = e.to_string();
        // yaml_serde appends " at line L column C"; the place is kept apart.
        let message = match (line, message.rfind(" at line ")) {
            (1.., Some(i)) => message[..i].to_string(),
            _ => message,
        };
        Self { line, column, message: shorten(&message) }
    }
}

/// Refuses YAML nested deeper than [`MAX_YAML_DEPTH`], naming the line where the limit is passed.
/// Linear in the text; meant to run before the parser (whose cost grows with the square of the depth).
pub fn check_yaml_depth(text: &str) -> Result<(), YamlError> {
    match yaml_depth::first_too_deep(text, MAX_YAML_DEPTH) {
        None => Ok(()),
        Some((line, column)) => Err(YamlError {
            line,
            column,
            message: format!(
                "nested deeper than {MAX_YAML_DEPTH} levels; merlya reads at most {MAX_YAML_DEPTH} (is the file generated or damaged?)"
            ),
        }),
    }
}

/// Parses YAML after [`check_yaml_depth`]: the one way merlya reads a YAML file someone wrote.
pub fn from_yaml<T: DeserializeOwned>(text: &str) -> Result<T, YamlError> {
    check_yaml_depth(text)?;
    Ok(yaml_serde::from_str(text)?)
}

/// `message` cut in the middle when long, so a parser that quotes a 10 MB value back gives one
/// readable line (the start says what was found, the end what was expected).
pub fn shorten(message: &str) -> String {
    const HEAD: usize = 160;
    const TAIL: usize = 120;
    let chars = message.chars().count();
    if chars <= HEAD + TAIL + 40 {
        return message.to_string();
    }
    let head: String = message.chars().take(HEAD).collect();
    let tail: String = message.chars().skip(chars - TAIL).collect();
    format!("{head}… ({} characters cut) …{tail}", chars - HEAD - TAIL)
}

#[cfg(test)]
mod tests;
