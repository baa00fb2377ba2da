//! Notifications (a run finished, a pipeline ended, a drift check found something): the newest
//! three in rows of their own above the input line — a place that hides no pane's text — with how
//! many others wait; they fade on their own.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use crate::app::model::{Model, NOTICES, ToastLevel};

/// Draws the newest notifications into `area` (one row each, the newest last).
pub fn draw(model: &Model, frame: &mut Frame, area: Rect) {
    if area.height == 0 {
        return;
    }
    let theme = &model.theme;
    let waiting = model.toasts.len().saturating_sub(NOTICES);
    let shown: Vec<_> = model.toasts.iter().skip(waiting).collect();
    let lines: Vec<Line> = shown
        .iter()
        .enumerate()
        .map(|(i, toast)| {
            let (mark, style) = match toast.level {
                ToastLevel::Info => ("•", theme.accent),
                ToastLevel::Success => ("✓", theme.ok),
                ToastLevel::Error => ("✗", theme.error),
            };
            let text = crate::term_safe::visible(&toast.text).replace('\n', " ");
            let mut spans = vec![Span::styled(format!("{mark} {text}"), style)];
            if i == 0 && waiting > 0 {
                let more = model.locale.tf("toast.more", &[("count", &waiting.to_string())]);
                spans.push(Span::styled(format!("  ({more})"), theme.dim));
            }
            Line::from(spans)
        })
        .collect();
    frame.render_widget(Paragraph::new(lines), area);
}
