//! Notifications (a run finished, a pipeline ended, a drift check found something): the newest is
//! shown on the input line while it lives — a place that hides no pane's text — with how many
//! others are waiting; they fade on their own.

use ratatui::text::{Line, Span};

use crate::app::model::{Model, ToastLevel};

/// The newest notification as one line, with the count of the others; `None` when there is none.
pub fn line(model: &Model) -> Option<Line<'static>> {
    let theme = &model.theme;
    let toast = model.toasts.back()?;
    let (mark, style) = match toast.level {
        ToastLevel::Info => ("•", theme.accent),
        ToastLevel::Success => ("✓", theme.ok),
        ToastLevel::Error => ("✗", theme.error),
    };
    let text = crate::term_safe::visible(&toast.text).replace('\n', " ");
    let mut spans = vec![Span::styled(format!("{mark} {text}"), style)];
    let others = model.toasts.len() - 1;
    if others > 0 {
        let more = model.locale.tf("toast.more", &[("count", &others.to_string())]);
        spans.push(Span::styled(format!("  ({more})"), theme.dim));
    }
    Some(Line::from(spans))
}
