//! User-visible strings of the console, per language (`locales/*.yaml`,
//! embedded). A key missing from a locale falls back to English; a test
//! reports every such key so translations do not silently fall behind.

use std::collections::HashMap;
use std::sync::Arc;

const BUILTIN: [(&str, &str); 2] =
    [("en", include_str!("../locales/en.yaml")), ("fr", include_str!("../locales/fr.yaml"))];

/// A message translated where it is shown: a locale key with its
/// arguments, or literal text (what a server or the model wrote). Workers
/// build these; the console draws them in its language, the terminal in English.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Text {
    /// `locales/*.yaml` key and `{name}` arguments.
    Key(&'static str, Vec<(&'static str, String)>),
    /// Shown as is.
    Raw(String),
}

impl Text {
    /// A translated message.
    pub fn key(key: &'static str, args: &[(&'static str, &str)]) -> Self {
        Text::Key(key, args.iter().map(|(n, v)| (*n, v.to_string())).collect())
    }

    /// The message in `locale`.
    pub fn render(&self, locale: &Locale) -> String {
        match self {
            Text::Raw(text) => text.clone(),
            Text::Key(key, args) => {
                let args: Vec<(&str, &str)> = args.iter().map(|(n, v)| (*n, v.as_str())).collect();
                locale.tf(key, &args)
            }
        }
    }

    /// The message in English (terminals and logs).
    pub fn english(&self) -> String {
        self.render(&Locale::default())
    }
}

impl From<&str> for Text {
    fn from(text: &str) -> Self {
        Text::Raw(text.to_string())
    }
}

impl From<String> for Text {
    fn from(text: String) -> Self {
        Text::Raw(text)
    }
}

/// The strings of one language, with English behind them.
#[derive(Debug, Clone)]
pub struct Locale {
    code: String,
    strings: Arc<HashMap<String, String>>,
    english: Arc<HashMap<String, String>>,
}

impl PartialEq for Locale {
    fn eq(&self, other: &Self) -> bool {
        self.code == other.code
    }
}

/// A language's strings, or why its file does not parse.
type Parsed = Result<Arc<HashMap<String, String>>, String>;

/// The strings of a built-in language, parsed once per process.
fn parse(code: &str) -> Parsed {
    static PARSED: std::sync::OnceLock<Vec<(&'static str, Parsed)>> = std::sync::OnceLock::new();
    let parsed = PARSED.get_or_init(|| {
        BUILTIN
            .iter()
            .map(|(c, text)| {
                (*c, crate::input::from_yaml(text).map(Arc::new).map_err(|e| format!("locales/{c}.yaml: {e}")))
            })
            .collect()
    });
    parsed.iter().find(|(c, _)| *c == code).map(|(_, strings)| strings.clone()).unwrap_or_else(|| Err(code.to_string()))
}

impl Default for Locale {
    fn default() -> Self {
        Self::new("en").unwrap_or_else(|_| Self {
            code: "en".into(),
            strings: Arc::new(HashMap::new()),
            english: Arc::new(HashMap::new()),
        })
    }
}

impl Locale {
    /// The built-in locale `code` (`en`, `fr`).
    pub fn new(code: &str) -> Result<Self, String> {
        let english = parse("en")?;
        let strings = if code == "en" { english.clone() } else { parse(code)? };
        Ok(Self { code: code.to_string(), strings, english })
    }

    /// The language code.
    pub fn code(&self) -> &str {
        &self.code
    }

    /// The text of `key`: this language, else English, else the key itself.
    pub fn t<'a>(&'a self, key: &'a str) -> &'a str {
        self.strings.get(key).or_else(|| self.english.get(key)).map(String::as_str).unwrap_or(key)
    }

    /// A word stored as data (a pipeline stage or status), translated when the
    /// locale has `prefix.word`, else shown as stored.
    pub fn word(&self, prefix: &str, raw: &str) -> String {
        let key = format!("{prefix}.{}", raw.to_lowercase());
        match self.strings.get(&key).or_else(|| self.english.get(&key)) {
            Some(text) => text.clone(),
            None => raw.to_string(),
        }
    }

    /// `t` with `{name}` placeholders filled.
    pub fn tf(&self, key: &str, args: &[(&str, &str)]) -> String {
        let mut out = self.t(key).to_string();
        for (name, value) in args {
            out = out.replace(&format!("{{{name}}}"), value);
        }
        out
    }

    /// `tf` of `one` when `count` is 1, else of `many`, with `{count}` filled too: each counted
    /// text has a singular key of its own ("1 line of output", "2 lines of output").
    pub fn tn(&self, one: &str, many: &str, count: usize, args: &[(&str, &str)]) -> String {
        let count = count.to_string();
        let mut all = vec![("count", count.as_str())];
        all.extend_from_slice(args);
        self.tf(if count == "1" { one } else { many }, &all)
    }

    /// English keys this language lacks.
    pub fn missing_keys(&self) -> Vec<String> {
        let mut missing: Vec<String> =
            self.english.keys().filter(|k| !self.strings.contains_key(*k)).cloned().collect();
        missing.sort();
        missing
    }
}

/// The languages built in.
pub fn languages() -> Vec<&'static str> {
    BUILTIN.iter().map(|(c, _)| *c).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_locale_covers_every_english_key() {
        for code in languages() {
            let locale = Locale::new(code).unwrap();
            assert!(locale.missing_keys().is_empty(), "locales/{code}.yaml lacks {:?}", locale.missing_keys());
        }
    }

    #[test]
    fn lookup_falls_back_to_english_then_the_key() {
        let fr = Locale::new("fr").unwrap();
        assert_eq!(fr.t("pane.output"), "Sortie");
        let mut partial = fr.clone();
        partial.strings = Arc::new(HashMap::new());
        assert_eq!(partial.t("pane.output"), "Output", "missing French falls back to English");
        assert_eq!(partial.t("no.such.key"), "no.such.key");
        assert_eq!(partial.missing_keys().len(), partial.english.len());
        assert_eq!(fr.tf("language.unknown", &[("code", "de")]), "langue inconnue de : en ou fr attendu");
        assert!(Locale::new("de").is_err());
        let text = Text::key("language.unknown", &[("code", "de")]);
        assert_eq!(
            (text.render(&fr), text.english()),
            (fr.tf("language.unknown", &[("code", "de")]), "unknown language de: expected en or fr".to_string())
        );
        assert_eq!(Text::from("as is").render(&fr), "as is");
    }
}
