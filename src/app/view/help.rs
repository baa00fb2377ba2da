//! The `?` overlay, generated from the active keymap, in two columns.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};

use super::centered;
use crate::app::keymap::KeyContext;
use crate::app::model::Model;

fn section<'a>(model: &Model, contexts: &[KeyContext]) -> Vec<Line<'a>> {
    let theme = &model.theme;
    let mut lines = Vec::new();
    for context in contexts {
        let bindings = model.keymap.bindings(*context);
        if bindings.is_empty() {
            continue;
        }
        let title = model.locale.t(&format!("context.{}", context.name())).to_string();
        lines.push(Line::styled(title, theme.accent));
        for (action, keys) in bindings {
            lines.push(Line::from(vec![
                Span::raw(format!("  {keys:<16}")),
                Span::styled(model.locale.t(action.help_key()).to_string(), theme.dim),
            ]));
        }
    }
    lines
}

/// Draws it into `area` (the whole screen for overlays).
pub fn draw(model: &Model, frame: &mut Frame, area: Rect) {
    let theme = &model.theme;
    let left = section(model, &[KeyContext::Global, KeyContext::Inventory]);
    let right = section(model, &[KeyContext::Output, KeyContext::Chat, KeyContext::Pipeline, KeyContext::Modal]);
    let rows = left.len().max(right.len()) + 4;
    let rect = centered(area, 118, u16::try_from(rows).unwrap_or(u16::MAX));
    frame.render_widget(Clear, rect);
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(theme.accent)
        .title(format!(" {} ", model.locale.t("help.title")));
    let inner = block.inner(rect);
    frame.render_widget(block, rect);
    let [body, footer] = Layout::vertical([Constraint::Min(1), Constraint::Length(2)]).areas(inner);
    let [l, r] = Layout::horizontal([Constraint::Percentage(50), Constraint::Percentage(50)]).areas(body);
    frame.render_widget(Paragraph::new(left), l);
    frame.render_widget(Paragraph::new(right), r);
    let note = model.locale.t("help.footer").to_string();
    frame.render_widget(Paragraph::new(vec![Line::raw(""), Line::styled(note, theme.dim)]), footer);
}
