//! `/setup`'s questions, over everything: the question, a list to choose from (languages,
//! providers, the provider's models) or the text being typed (a key only as dots), why an answer was
//! refused, and the keys.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Wrap};

use super::centered;
use crate::app::model::Model;
use crate::app::setup::{Listing, SetupFlow, SetupProvider, SetupStep};

/// Most list rows shown at once (the highlighted one is always among them).
const ROWS: usize = 12;

/// Draws it into `area` (the whole screen for overlays).
pub fn draw(model: &Model, flow: &SetupFlow, frame: &mut Frame, area: Rect) {
    let theme = &model.theme;
    let locale = &model.locale;
    let provider = flow.provider.name();
    let mut lines: Vec<Line> = Vec::new();
    let mut text = |s: String| lines.extend(s.split('\n').map(|l| Line::raw(l.to_string())).collect::<Vec<_>>());
    let mut list: Vec<String> = Vec::new();
    let mut typed: Option<String> = None;
    let mut hint = "setup.hint_text";
    match flow.step {
        SetupStep::Language => {
            text(locale.t("setup.step_language").to_string());
            list = crate::i18n::languages().iter().map(|c| c.to_string()).collect();
            hint = "setup.hint_list";
        }
        SetupStep::Provider => {
            text(locale.t("setup.step_provider").to_string());
            list = SetupProvider::ALL.iter().map(|p| locale.t(p.label_key()).to_string()).collect();
            hint = "setup.hint_list";
        }
        SetupStep::BaseUrl => {
            text(locale.tf("setup.step_base_url", &[("provider", provider)]));
            typed = Some(flow.typed.clone());
        }
        SetupStep::Key => {
            let key = if flow.provider.keyless() { "setup.step_key_optional" } else { "setup.step_key" };
            text(locale.tf(key, &[("provider", provider)]));
            // Never the key itself: one dot per character typed.
            typed = Some("•".repeat(flow.typed.chars().count()));
        }
        SetupStep::Model => {
            let url = flow.base_url.as_str();
            match &flow.listing {
                Listing::Waiting => text(locale.tf("setup.models_waiting", &[("url", url)])),
                Listing::Listed(models) => {
                    let count = models.len().to_string();
                    text(locale.tf("setup.models_listed", &[("count", &count), ("url", url)]));
                    list = flow.offered().iter().map(|m| m.to_string()).collect();
                }
                Listing::Failed(reason) if reason.is_empty() => text(locale.tf("setup.models_none", &[("url", url)])),
                Listing::Failed(reason) => {
                    let reason = crate::term_safe::visible_line(reason).into_owned();
                    text(locale.tf("setup.models_failed", &[("reason", &reason)]));
                }
            }
            if flow.listing != Listing::Waiting {
                typed = Some(flow.typed.clone());
            }
        }
        SetupStep::Saving => text(locale.t("setup.saving").to_string()),
    }
    if let Some(typed) = typed {
        lines.push(Line::from(vec![
            Span::styled("> ", theme.accent),
            Span::styled(typed, theme.selected),
            Span::styled("▏", theme.accent),
        ]));
    }
    let first = flow.cursor.saturating_sub(ROWS - 1);
    for (i, row) in list.iter().enumerate().skip(first).take(ROWS) {
        let chosen = i == flow.cursor;
        let marker = if chosen { "▸ " } else { "  " };
        let style = if chosen { theme.selected } else { ratatui::style::Style::default() };
        lines.push(Line::styled(format!("{marker}{row}"), style));
    }
    if list.len() > first + ROWS {
        lines.push(Line::styled(format!("  … {}", list.len() - first - ROWS), theme.dim));
    }
    lines.push(Line::raw(""));
    if let Some(error) = flow.error {
        lines.push(Line::styled(locale.t(error).to_string(), theme.error));
    }
    lines.push(Line::styled(locale.t(hint).to_string(), theme.dim));
    let width = 76u16;
    // Wrapped text takes more rows than lines: a rough count, clamped to the screen by `centered`.
    let rows: usize = lines.iter().map(|l| l.width().div_ceil(usize::from(width - 2)).max(1)).sum::<usize>();
    let rect = centered(area, width, u16::try_from(rows).unwrap_or(20) + 2);
    let title = locale.t("setup.title").to_string();
    let block = Block::default().borders(Borders::ALL).border_style(theme.accent).title(format!(" {title} "));
    frame.render_widget(Clear, rect);
    frame.render_widget(Paragraph::new(lines).wrap(Wrap { trim: false }).block(block), rect);
}
