//! The chat pane: the conversation with the agent (or how to enable it).

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Wrap};

use super::pane_block;
use crate::app::model::{ChatRole, Model, Pane};

pub fn draw(model: &Model, frame: &mut Frame, area: Rect) {
    let theme = &model.theme;
    let chat = model.locale.t("pane.chat");
    let title = if model.model_configured {
        format!(" {chat} ")
    } else {
        format!(" {chat} · {} ", model.locale.t("chat.no_model"))
    };
    let block = pane_block(model, Pane::Chat, title);
    let mut lines: Vec<Line> = Vec::new();
    for (i, entry) in model.chat.iter().enumerate() {
        if entry.role == ChatRole::Tool {
            // Compact cells: one dim line per delegation or command.
            lines.push(Line::styled(format!("  {}", entry.text), theme.dim));
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
        lines.extend(entry.text.lines().map(|text| Line::raw(format!("  {text}"))));
    }
    if model.agent_busy {
        lines.push(Line::styled(format!("  {}", model.locale.t("chat.working")), theme.dim));
    }
    // Show the end of the conversation: scroll past what does not fit.
    let paragraph = Paragraph::new(lines).block(block).wrap(Wrap { trim: false });
    let height = paragraph.line_count(area.width);
    let scroll = u16::try_from(height.saturating_sub(usize::from(area.height))).unwrap_or(u16::MAX);
    frame.render_widget(paragraph.scroll((scroll, 0)), area);
}
