//! The input (a text area with a `❯` prompt), its completion popup, and the
//! status bar (focus, counts, key hints, notices).

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, List, ListItem, ListState, Paragraph};

use crate::app::model::Model;
use crate::app::update::popup;

/// The input line: the editor while typing, else the last notice or a hint.
pub fn draw_input(model: &Model, frame: &mut Frame, area: Rect) {
    let theme = &model.theme;
    if model.input.active {
        let [prompt, text] = Layout::horizontal([Constraint::Length(2), Constraint::Min(1)]).areas(area);
        frame.render_widget(Paragraph::new(Span::styled("❯ ", theme.accent)), prompt);
        let mut editor = model.input.editor.clone();
        editor.set_cursor_line_style(ratatui::style::Style::default());
        editor.set_cursor_style(theme.selected);
        frame.render_widget(&editor, text);
        return;
    }
    let line = if let Some(flash) = &model.flash {
        Line::from(Span::styled(flash.clone(), theme.warn))
    } else {
        Line::styled(model.locale.t("input.placeholder").to_string(), theme.dim)
    };
    frame.render_widget(Paragraph::new(line), area);
}

/// The completion popup, just above the input.
pub fn draw_popup(model: &Model, frame: &mut Frame, input: Rect) {
    let suggestions = popup(model);
    if suggestions.is_empty() {
        return;
    }
    let theme = &model.theme;
    let label_width = suggestions.iter().map(|s| s.label.chars().count()).max().unwrap_or(0);
    let items: Vec<ListItem> = suggestions
        .iter()
        .map(|s| {
            let help = if s.help.is_empty() { String::new() } else { model.locale.t(&s.help).to_string() };
            ListItem::new(Line::from(vec![
                Span::styled(format!(" {:<label_width$}  ", s.label), theme.accent),
                Span::styled(help, theme.dim),
            ]))
        })
        .collect();
    let width = items.iter().map(|i| i.width()).max().unwrap_or(10) + 3;
    let height = u16::try_from(items.len().min(crate::app::completion::ROWS)).unwrap_or(10) + 2;
    let rect = Rect {
        x: input.x + 1,
        y: input.y.saturating_sub(height),
        width: u16::try_from(width).unwrap_or(u16::MAX).min(input.width.saturating_sub(1)),
        height: height.min(input.y),
    };
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(theme.dim)
        .title_bottom(Line::styled(format!(" {} ", model.locale.t("popup.hint")), theme.dim));
    let selected = model.input.completion.min(suggestions.len() - 1);
    let mut state = ListState::default().with_selected(Some(selected));
    frame.render_widget(Clear, rect);
    frame.render_stateful_widget(List::new(items).block(block).highlight_style(theme.selected), rect, &mut state);
}

/// The status bar: focused pane, counts, and key hints from the keymap.
pub fn draw_status(model: &Model, frame: &mut Frame, area: Rect) {
    let theme = &model.theme;
    let running: usize = model.active_runs().iter().map(|r| r.progress().running).sum();
    let mut spans = vec![
        Span::styled(format!(" {} ", model.locale.t(model.focus.key()).to_uppercase()), theme.selected),
        Span::raw(format!(
            " {} {}",
            model.hosts.len(),
            model.locale.t(if model.hosts.len() == 1 { "status.host" } else { "status.hosts" })
        )),
    ];
    if model.store_down.is_some() {
        spans.push(Span::styled(format!(" · {}", model.locale.t("status.store_down")), theme.error));
    }
    if running > 0 {
        spans.push(Span::styled(format!(" · {running} {}", model.locale.t("status.running")), theme.warn));
    }
    if model.awaiting_approval() {
        spans.push(Span::styled(format!(" · {}", model.locale.t("status.awaiting_approval")), theme.warn));
    }
    if !model.prompts.is_empty() {
        spans
            .push(Span::styled(format!(" · {} {}", model.prompts.len(), model.locale.t("status.waiting")), theme.warn));
    }
    spans.push(Span::styled(" │ ", theme.dim));
    let hints: Vec<String> = model
        .keymap
        .hints(model.focus)
        .into_iter()
        .map(|(keys, action)| format!("{keys} {}", model.locale.t(action.hint_key())))
        .collect();
    let room = usize::from(area.width).saturating_sub(Line::from(spans.clone()).width());
    spans.push(Span::styled(fit_hints(&hints, room), theme.dim));
    frame.render_widget(Paragraph::new(Line::from(spans)), area);
}

/// As many of `hints` (most important first) as fit whole in `room` cells, joined by ` · `; when
/// some are left out, a `…` says so (`?` lists every key). A hint is never cut in the middle.
pub fn fit_hints(hints: &[String], room: usize) -> String {
    const SEP: &str = " · ";
    let all = hints.join(SEP);
    if all.chars().count() <= room {
        return all;
    }
    let more = SEP.chars().count() + 1;
    let mut out = String::new();
    for hint in hints {
        let sep = if out.is_empty() { 0 } else { SEP.chars().count() };
        if out.chars().count() + sep + hint.chars().count() + more > room {
            break;
        }
        if !out.is_empty() {
            out.push_str(SEP);
        }
        out.push_str(hint);
    }
    if out.is_empty() { "…".to_string() } else { format!("{out}{SEP}…") }
}

#[cfg(test)]
mod tests {
    use super::fit_hints;

    #[test]
    fn hints_that_do_not_fit_are_left_out_whole() {
        let hints: Vec<String> = ["q quit", "? help", "Tab pane", "C columns"].map(String::from).to_vec();
        assert_eq!(fit_hints(&hints, 100), "q quit · ? help · Tab pane · C columns");
        assert_eq!(fit_hints(&hints, 37), "q quit · ? help · Tab pane · …");
        assert_eq!(fit_hints(&hints, 30), "q quit · ? help · Tab pane · …");
        assert_eq!(fit_hints(&hints, 29), "q quit · ? help · …");
        assert_eq!(fit_hints(&hints, 3), "…");
    }
}
