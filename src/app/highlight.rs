//! Syntax highlighting with syntect, shared by code blocks in the chat and the
//! diff viewer. The syntax and theme sets load once, on a background thread at
//! start-up ([`warm_up`]), so the first highlighted frame does not stall.

use std::sync::OnceLock;

use ratatui::style::{Modifier, Style};
use ratatui::text::Span;
use syntect::easy::HighlightLines;
use syntect::highlighting::{FontStyle, ThemeSet};
use syntect::parsing::{SyntaxReference, SyntaxSet};

use super::theme::{ColorDepth, Theme, degrade};

struct Assets {
    syntaxes: SyntaxSet,
    themes: ThemeSet,
}

static ASSETS: OnceLock<Assets> = OnceLock::new();

fn assets() -> &'static Assets {
    ASSETS.get_or_init(|| Assets { syntaxes: SyntaxSet::load_defaults_newlines(), themes: ThemeSet::load_defaults() })
}

/// Loads the syntaxes in the background so the first code block draws fast, on a thread at the
/// lowest priority: on a 2-core host it would otherwise take a core from the first frame.
pub fn warm_up() {
    std::thread::spawn(|| {
        // SAFETY: gettid has no preconditions; setpriority on this thread's own id only lowers
        // its priority (Linux keeps the nice value per thread).
        unsafe {
            let tid = libc::gettid();
            libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, 19);
        }
        assets();
    });
}

/// The syntax for a fenced block's language (`bash`, `yaml`, `rs`) or a file
/// path (`/etc/nginx/nginx.conf`, `main.tf`): by token, then extension, then
/// file name.
fn syntax_for(hint: &str) -> Option<&'static SyntaxReference> {
    let set = &assets().syntaxes;
    let hint = hint.trim();
    if hint.is_empty() {
        return None;
    }
    let token = match hint {
        "shell" | "console" | "zsh" => "bash",
        "yml" => "yaml",
        "tf" | "hcl" | "terraform" => "ruby",
        other => other,
    };
    if let Some(s) = set.find_syntax_by_token(token) {
        return Some(s);
    }
    let name = hint.rsplit('/').next().unwrap_or(hint);
    let ext = name.rsplit_once('.').map(|(_, e)| e).unwrap_or(name);
    set.find_syntax_by_extension(ext).or_else(|| set.find_syntax_by_extension(name))
}

/// Highlights code line by line, keeping the parser state between lines.
pub struct Highlighter {
    lines: Option<HighlightLines<'static>>,
    depth: ColorDepth,
}

impl Highlighter {
    /// A highlighter for `hint` (a language or a path) in `theme`'s code
    /// colours; it passes text through unstyled when either is unknown or
    /// colour is off.
    pub fn new(hint: &str, theme: &Theme) -> Self {
        let lines = theme.syntax.as_deref().and_then(|name| {
            let syntax = syntax_for(hint)?;
            let code_theme = assets().themes.themes.get(name)?;
            Some(HighlightLines::new(syntax, code_theme))
        });
        Self { lines, depth: theme.depth }
    }

    /// Whether a syntax was found.
    pub fn is_active(&self) -> bool {
        self.lines.is_some()
    }

    /// The spans of one line (without its newline), on top of `base`.
    pub fn line(&mut self, text: &str, base: Style) -> Vec<Span<'static>> {
        let Some(lines) = self.lines.as_mut() else {
            return vec![Span::styled(text.to_string(), base)];
        };
        let with_newline = format!("{text}\n");
        let Ok(ranges) = lines.highlight_line(&with_newline, &assets().syntaxes) else {
            return vec![Span::styled(text.to_string(), base)];
        };
        ranges
            .into_iter()
            .filter_map(|(style, piece)| {
                let piece = piece.trim_end_matches('\n');
                if piece.is_empty() {
                    return None;
                }
                let mut out = base;
                let c = style.foreground;
                if let Some(fg) = degrade(ratatui::style::Color::Rgb(c.r, c.g, c.b), self.depth) {
                    out = out.fg(fg);
                }
                if style.font_style.contains(FontStyle::BOLD) {
                    out = out.add_modifier(Modifier::BOLD);
                }
                if style.font_style.contains(FontStyle::ITALIC) {
                    out = out.add_modifier(Modifier::ITALIC);
                }
                Some(Span::styled(piece.to_string(), out))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui::style::Color;

    #[test]
    fn languages_and_paths_find_a_syntax() {
        for hint in ["bash", "sh", "yaml", "yml", "rust", "py", "/etc/app/config.json", "deploy.yml", "Makefile"] {
            assert!(syntax_for(hint).is_some(), "{hint}");
        }
        assert!(syntax_for("").is_none());
        assert!(syntax_for("no-such-language").is_none());
        assert!(syntax_for("/etc/nginx/nginx.conf").is_none(), "unknown file types stay plain");
    }

    #[test]
    fn code_is_coloured_by_syntax_and_plain_without_colour() {
        let mut h = Highlighter::new("bash", &Theme::dark());
        assert!(h.is_active());
        let spans = h.line("echo \"hi\" # note", Style::new());
        assert!(spans.len() > 1, "keyword, string and comment are separate spans: {spans:?}");
        assert!(spans.iter().all(|s| matches!(s.style.fg, Some(Color::Rgb(..)))));
        let joined: String = spans.iter().map(|s| s.content.as_ref()).collect();
        assert_eq!(joined, "echo \"hi\" # note");

        let mut plain = Highlighter::new("bash", &Theme::plain());
        assert!(!plain.is_active());
        assert_eq!(plain.line("echo hi", Style::new()).len(), 1);
    }
}
