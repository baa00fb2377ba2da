//! The chat pane: the conversation with the agent, its replies rendered as
//! Markdown (code highlighted), tool calls as compact one-line cells that
//! expand to their output, scrolled to the newest unless the person scrolls.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Wrap};

use super::pane_block;
use crate::app::markdown;
use crate::app::model::{ChatRole, Model, Pane};

/// Output lines an expanded cell shows.
const EXPANDED_LINES: usize = 40;

/// Draws it into `area` (the whole screen for overlays).
pub fn draw(model: &Model, frame: &mut Frame, area: Rect) {
    let theme = &model.theme;
    let chat = model.locale.t("pane.chat");
    let title = if model.model_configured {
        format!(" {chat} ")
    } else {
        format!(" {chat} · {} ", model.locale.t("chat.no_model"))
    };
    let mut block = pane_block(model, Pane::Chat, title);
    if model.focus == Pane::Chat && model.chat.iter().any(|e| e.role == ChatRole::Tool) {
        block = block.title_bottom(Line::styled(format!(" {} ", model.locale.t("chat.tool_hint")), theme.dim));
    }
    if model.chat_view.unseen > 0 {
        let count = model.chat_view.unseen.to_string();
        let text = format!(" {} ", model.locale.tf("chat.unseen", &[("count", &count)]));
        block = block.title_bottom(Line::styled(text, theme.accent).right_aligned());
    }
    let mut lines: Vec<Line> = Vec::new();
    let mut selected_row = None;
    for (i, entry) in model.chat.iter().enumerate() {
        if entry.role == ChatRole::Tool {
            let selected = model.chat_view.selected == Some(i);
            if selected {
                selected_row = Some(lines.len());
            }
            let marker = match (entry.detail.is_empty(), entry.expanded) {
                (true, _) => "  ",
                (false, false) => "▸ ",
                (false, true) => "▾ ",
            };
            let mut spans =
                vec![Span::styled(format!("  {marker}"), theme.dim), Span::styled(entry.text.clone(), theme.dim)];
            if !entry.detail.is_empty() && !entry.expanded {
                let said = model.locale.tn("chat.output_line", "chat.output_lines", entry.detail.len(), &[]);
                spans.push(Span::styled(format!("  ({said})"), theme.dim));
            }
            let line = Line::from(spans);
            lines.push(if selected { line.style(theme.selected) } else { line });
            if entry.expanded {
                for text in entry.detail.iter().take(EXPANDED_LINES) {
                    lines.push(Line::from(vec![Span::styled("      │ ", theme.dim), Span::raw(text.clone())]));
                }
            }
            continue;
        }
        let (who, style) = match entry.role {
            ChatRole::User => (model.locale.t("chat.you").to_string(), theme.accent),
            ChatRole::Assistant => (model.locale.t("chat.merlya").to_string(), theme.ok),
            _ => (model.locale.t("chat.note").to_string(), theme.warn),
        };
        if i > 0 {
            lines.push(Line::raw(""));
        }
        lines.push(Line::from(Span::styled(who, style)));
        if entry.role == ChatRole::Assistant {
            let fresh;
            let rendered = match entry.markdown_lines() {
                Some(lines) => lines,
                None => {
                    fresh = markdown::render(&entry.text, theme);
                    Box::new(fresh.iter())
                }
            };
            for line in rendered.cloned() {
                let mut spans = vec![Span::raw("  ")];
                spans.extend(line.spans);
                lines.push(Line::from(spans).style(line.style));
            }
        } else {
            lines.extend(entry.text.lines().map(|text| Line::raw(format!("  {text}"))));
        }
    }
    if model.agent_busy {
        lines.push(Line::styled(format!("  {}", model.locale.t("chat.working")), theme.dim));
    }
    // Newest at the bottom; scrolled up by the person, or to show the selected cell.
    let inner = block.inner(area);
    let inner_height = usize::from(inner.height);
    // Counted at the width the text wraps to (inside the borders), so the newest line is never cut.
    let paragraph = Paragraph::new(lines).wrap(Wrap { trim: false });
    let height = paragraph.line_count(inner.width);
    let paragraph = paragraph.block(block);
    let bottom = height.saturating_sub(inner_height);
    let mut top = bottom.saturating_sub(model.chat_view.scroll);
    if let Some(row) = selected_row
        && (row < top || row >= top + inner_height)
    {
        top = row.saturating_sub(inner_height / 2).min(bottom);
    }
    let scroll = u16::try_from(top).unwrap_or(u16::MAX);
    frame.render_widget(paragraph.scroll((scroll, 0)), area);
}
