//! The language of the CLI's sentences for people: the console's (`ui.language` in config.yaml, or
//! its `MERLYA_UI_LANGUAGE` override), read once per process, so `merlya doctor` speaks as the console
//! does. English when the configuration cannot be read (doctor then reports why). Machine outputs
//! (JSON, exit codes, values a script greps such as host names) are never translated.

use std::sync::OnceLock;

use crate::i18n::Locale;

static LOCALE: OnceLock<Locale> = OnceLock::new();

/// Reads the language of the home at `config` (before any command runs).
pub fn init(config: &std::path::Path) {
    let code = crate::config::Config::load(config).map(|c| c.ui.language).unwrap_or_default();
    let _ = LOCALE.set(Locale::new(&code).unwrap_or_default());
}

/// The CLI's language (English until [`init`]).
pub fn locale() -> &'static Locale {
    LOCALE.get_or_init(Locale::default)
}

/// The text of `key` in the CLI's language.
pub fn t(key: &str) -> String {
    locale().t(key).to_string()
}

/// [`t`] with `{name}` placeholders filled.
pub fn tf(key: &str, args: &[(&str, &str)]) -> String {
    locale().tf(key, args)
}

/// `text` padded with spaces to `width` characters (accented words are wider in bytes than on screen).
pub fn pad(text: &str, width: usize) -> String {
    let shown = text.chars().count();
    format!("{text}{}", " ".repeat(width.saturating_sub(shown)))
}
