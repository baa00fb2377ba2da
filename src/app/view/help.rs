//! The `?` overlay, generated from the active keymap, in two columns.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Wrap};

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

/// Draws it into `area` (the whole screen for overlays): two columns when
/// everything fits, else one column that scrolls (j/k, PgUp/PgDn); long
/// descriptions wrap instead of being cut.
pub fn draw(model: &Model, frame: &mut Frame, area: Rect) {
    let theme = &model.theme;
    let left = section(model, &[KeyContext::Global, KeyContext::Inventory]);
    let right = section(model, &[KeyContext::Output, KeyContext::Chat, KeyContext::Pipeline, KeyContext::Modal]);
    let width = 118u16.min(area.width.saturating_sub(2)).max(20);
    let wrap = Wrap { trim: false };
    let note = model.locale.t("help.footer").to_string();
    let footer_rows = Paragraph::new(note.clone()).wrap(wrap).line_count(width.saturating_sub(2)) + 1;
    let chrome = footer_rows + 2;
    let half = (width.saturating_sub(2)) / 2;
    let two_columns = {
        let (l, r) = (Paragraph::new(left.clone()).wrap(wrap), Paragraph::new(right.clone()).wrap(wrap));
        let rows = l.line_count(half).max(r.line_count(half));
        (rows + chrome <= usize::from(area.height)).then_some(rows)
    };
    let rows = match two_columns {
        Some(rows) => rows,
        None => Paragraph::new([left.clone(), right.clone()].concat()).wrap(wrap).line_count(width.saturating_sub(2)),
    };
    let height = u16::try_from(rows + chrome).unwrap_or(u16::MAX).min(area.height);
    let rect = centered(area, width, height);
    frame.render_widget(Clear, rect);
    let mut block = Block::default()
        .borders(Borders::ALL)
        .border_style(theme.accent)
        .title(format!(" {} ", model.locale.t("help.title")));
    let inner_rows = usize::from(height).saturating_sub(chrome);
    let scroll = model.help_scroll.min(rows.saturating_sub(inner_rows));
    if rows > inner_rows {
        let at = format!(" {}/{} ", scroll + inner_rows.min(rows), rows);
        block = block.title_bottom(Line::styled(format!(" {} ·{at}", model.locale.t("prompt.scroll")), theme.dim));
    }
    let inner = block.inner(rect);
    frame.render_widget(block, rect);
    let footer_height = u16::try_from(footer_rows).unwrap_or(2);
    let [body, footer] = Layout::vertical([Constraint::Min(1), Constraint::Length(footer_height)]).areas(inner);
    let offset = (u16::try_from(scroll).unwrap_or(u16::MAX), 0);
    if two_columns.is_some() {
        let [l, r] = Layout::horizontal([Constraint::Percentage(50), Constraint::Percentage(50)]).areas(body);
        frame.render_widget(Paragraph::new(left).wrap(wrap), l);
        frame.render_widget(Paragraph::new(right).wrap(wrap), r);
    } else {
        frame.render_widget(Paragraph::new([left, right].concat()).wrap(wrap).scroll(offset), body);
    }
    frame.render_widget(Paragraph::new(vec![Line::raw(""), Line::styled(note, theme.dim)]).wrap(wrap), footer);
}
