//! The command line and the status bar (focus, counts, key hints, notices).

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use crate::app::model::Model;

pub fn draw_input(model: &Model, frame: &mut Frame, area: Rect) {
    let theme = &model.theme;
    let line = if model.input.active {
        let text = &model.input.text;
        let at = text.char_indices().nth(model.input.cursor).map(|(i, _)| i).unwrap_or(text.len());
        let (before, after) = text.split_at(at);
        let mut rest = after.chars();
        let under = rest.next().map(String::from).unwrap_or_else(|| " ".into());
        Line::from(vec![
            Span::styled("❯ ", theme.accent),
            Span::raw(before.to_string()),
            Span::styled(under, theme.selected),
            Span::raw(rest.collect::<String>()),
        ])
    } else if let Some(flash) = &model.flash {
        Line::from(Span::styled(flash.clone(), theme.warn))
    } else {
        Line::styled(model.locale.t("input.placeholder").to_string(), theme.dim)
    };
    frame.render_widget(Paragraph::new(line), area);
}

pub fn draw_status(model: &Model, frame: &mut Frame, area: Rect) {
    let theme = &model.theme;
    let running: usize = model.runs.values().map(|r| r.hosts - r.done).sum();
    let mut spans = vec![
        Span::styled(format!(" {} ", model.locale.t(model.focus.key()).to_uppercase()), theme.selected),
        Span::raw(format!(" {} {}", model.hosts.len(), model.locale.t("status.hosts"))),
    ];
    if running > 0 {
        spans.push(Span::styled(format!(" · {running} {}", model.locale.t("status.running")), theme.warn));
    }
    if !model.prompts.is_empty() {
        spans
            .push(Span::styled(format!(" · {} {}", model.prompts.len(), model.locale.t("status.waiting")), theme.warn));
    }
    spans.push(Span::styled(" │ ", theme.dim));
    let hints = model.keymap.hints(model.focus);
    spans.push(Span::styled(hints.join(" · "), theme.dim));
    frame.render_widget(Paragraph::new(Line::from(spans)), area);
}
