//! Colours with meaning, used sparingly: an accent for focus and selection,
//! green and red only for success and failure, dim for secondary text.
//! `NO_COLOR` gives a theme of modifiers only. (Theme files come with the
//! full-console issue; this struct is what they will fill in.)

use ratatui::style::{Color, Modifier, Style};

/// Styles the views use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Theme {
    /// Focused borders, selection.
    pub accent: Style,
    /// Secondary text.
    pub dim: Style,
    /// Success.
    pub ok: Style,
    /// Failure, stderr.
    pub error: Style,
    /// Host prefixes in the output pane.
    pub host: Style,
    /// The selected row.
    pub selected: Style,
    /// Warnings (prompts, unknown host keys).
    pub warn: Style,
}

impl Theme {
    /// The default dark theme, or a colourless one when `NO_COLOR` is set.
    pub fn from_env() -> Self {
        if std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty()) { Self::plain() } else { Self::dark() }
    }

    /// 16-colour palette, safe on every terminal.
    pub fn dark() -> Self {
        Self {
            accent: Style::new().fg(Color::Cyan),
            dim: Style::new().add_modifier(Modifier::DIM),
            ok: Style::new().fg(Color::Green),
            error: Style::new().fg(Color::Red),
            host: Style::new().fg(Color::Blue).add_modifier(Modifier::BOLD),
            selected: Style::new().add_modifier(Modifier::REVERSED),
            warn: Style::new().fg(Color::Yellow),
        }
    }

    /// No colours at all.
    pub fn plain() -> Self {
        Self {
            accent: Style::new().add_modifier(Modifier::BOLD),
            dim: Style::new().add_modifier(Modifier::DIM),
            ok: Style::new(),
            error: Style::new().add_modifier(Modifier::BOLD),
            host: Style::new().add_modifier(Modifier::BOLD),
            selected: Style::new().add_modifier(Modifier::REVERSED),
            warn: Style::new().add_modifier(Modifier::BOLD),
        }
    }
}
