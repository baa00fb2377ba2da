//! The output pane: live lines from every host, prefixed with the host name.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Wrap};

use super::view_block;
use crate::app::model::{Model, OutputMode};
use crate::app::output_buffer::{LineKind, OutputLine};
use crate::exec::Stream;

/// Draws it into `area` (the whole screen for overlays).
pub fn draw(model: &Model, frame: &mut Frame, area: Rect) {
    let theme = &model.theme;
    let view = &model.output_view;
    let mut extra = String::new();
    if let Some(run) = model.newest_active_run() {
        extra = format!("· {} ", super::run_report::progress_text(model, run));
    }
    if view.mode != OutputMode::Live {
        super::run_report::draw(model, frame, area, &extra);
        return;
    }
    if !view.follow {
        extra.push_str(&format!("· ↑{} ", view.scroll));
    }
    if let Some(host) = &view.host {
        extra.push_str(&format!("· {} ", model.locale.tf("output.only", &[("host", host)])));
    }
    if let Some(watch) = &model.watch {
        let (every, rounds) = (watch.every.to_string(), watch.rounds.to_string());
        extra.push_str(&format!("· {} ", model.locale.tf("watch.title", &[("every", &every), ("rounds", &rounds)])));
    }
    let selected = model.output_selection();
    if let Some((low, high)) = selected {
        let selecting = model.locale.tn("output.selecting_line", "output.selecting", high - low + 1, &[]);
        extra.push_str(&format!("· {selecting} "));
    }
    let search = &model.output_view.search;
    let mut block = view_block(model, &extra);
    if model.output_view.searching || !search.is_empty() {
        let cursor = if model.output_view.searching { "▏" } else { "" };
        block = block.title_bottom(Line::from(format!(" /{search}{cursor} ")).style(theme.accent));
    }
    let needle: Vec<char> = search.chars().flat_map(char::to_lowercase).collect();
    // Folded hosts wait in one line at the top; the rest of the pane is the interleaved lines.
    let folded = model.output.folded();
    let folded_line = (!folded.is_empty() && view.host.is_none()).then(|| {
        let names: Vec<String> = folded.iter().map(|(h, _)| h.to_string()).collect();
        let count = folded.iter().map(|(_, n)| n).sum::<usize>();
        let hosts = crate::exec::runs::compress_names(&names);
        Line::styled(model.locale.tn("output.folded_line", "output.folded", count, &[("hosts", &hosts)]), theme.dim)
    });
    let inner_height = usize::from(area.height.saturating_sub(2)).saturating_sub(usize::from(folded_line.is_some()));
    let bottom = model.output_bottom(inner_height);
    // At the oldest lines the page starts at the top; elsewhere the newest line shown sits at the bottom.
    let at_top =
        bottom < view.scroll || bottom == model.output.count(view.host.as_deref()).saturating_sub(inner_height);
    let shown = model.output.window(inner_height, bottom, view.host.as_deref());
    // Lines of the selection, by position from the newest.
    let first_position = bottom + shown.len();
    let in_selection = |i: usize| selected.is_some_and(|(low, high)| (low..=high).contains(&(first_position - 1 - i)));
    let width = shown
        .iter()
        .filter_map(|l| match &l.kind {
            LineKind::Output { host, .. } => Some(host.chars().count()),
            _ => None,
        })
        .max()
        .unwrap_or(0);
    let lines: Vec<Line> = if model.output.is_empty() {
        vec![
            Line::styled(model.locale.t("output.empty").to_string(), theme.dim),
            Line::styled(model.locale.t("output.empty_hint").to_string(), theme.dim),
        ]
    } else {
        shown
            .iter()
            .map(|l| {
                (
                    l,
                    match &l.kind {
                        LineKind::Output { host, stream } => {
                            let (sep, text_style) = match stream {
                                Stream::Stdout => ("│", ratatui::style::Style::default()),
                                Stream::Stderr => ("!", theme.error),
                            };
                            let mut spans = vec![
                                Span::styled(crate::text_table::pad(host, width), theme.host),
                                Span::styled(format!(" {sep} "), theme.dim),
                            ];
                            spans.extend(marked(l, text_style, &needle, theme));
                            Line::from(spans)
                        }
                        LineKind::Header => {
                            let mut spans = vec![Span::styled("── ", theme.accent)];
                            spans.extend(marked(l, theme.accent, &needle, theme));
                            spans.push(Span::styled(" ", theme.accent));
                            Line::from(spans)
                        }
                        LineKind::Outcome { ok: true, .. } => Line::from(marked(l, theme.ok, &needle, theme)),
                        LineKind::Outcome { ok: false, .. } => Line::from(marked(l, theme.error, &needle, theme)),
                        LineKind::Note => Line::from(marked(l, theme.dim, &needle, theme)),
                    },
                )
            })
            .enumerate()
            .map(|(i, (_, line))| if in_selection(i) { line.style(theme.selected) } else { line })
            .collect()
    };
    let lines: Vec<Line> = folded_line.into_iter().chain(lines).collect();
    // Long lines wrap; keep the newest row at the bottom of the pane.
    let paragraph = Paragraph::new(lines).block(block).wrap(Wrap { trim: false });
    let rows = paragraph.line_count(area.width);
    let overflow = rows.saturating_sub(usize::from(area.height));
    let scroll = if at_top && bottom > 0 { 0 } else { u16::try_from(overflow).unwrap_or(u16::MAX) };
    frame.render_widget(paragraph.scroll((scroll, 0)), area);
}

/// A line's text as spans: what changed since a watch's previous round in the changed style, the
/// search matches (the match itself, not the whole line) in the selected style, the rest in `base`.
fn marked(line: &OutputLine, base: Style, needle: &[char], theme: &crate::app::theme::Theme) -> Vec<Span<'static>> {
    let text = line.text.as_str();
    let matches = find_all(text, needle);
    let changed: &[std::ops::Range<usize>] = line.changed.as_deref().unwrap_or_default();
    if matches.is_empty() && changed.is_empty() {
        return vec![Span::styled(line.text.clone(), base)];
    }
    // Every byte offset where the style may change.
    let mut cuts: Vec<usize> = vec![0, text.len()];
    cuts.extend(matches.iter().chain(changed).flat_map(|r| [r.start, r.end]));
    cuts.retain(|c| *c <= text.len() && text.is_char_boundary(*c));
    cuts.sort_unstable();
    cuts.dedup();
    let inside = |ranges: &[std::ops::Range<usize>], at: usize| ranges.iter().any(|r| r.contains(&at));
    cuts.windows(2)
        .map(|w| {
            let style = if inside(&matches, w[0]) {
                theme.selected
            } else if inside(changed, w[0]) {
                // As in a diff's added lines, and bold where there is no colour (`watch -d`).
                base.patch(theme.added).add_modifier(ratatui::style::Modifier::BOLD)
            } else {
                base
            };
            Span::styled(text[w[0]..w[1]].to_string(), style)
        })
        .collect()
}

/// Byte ranges of `text` matching `needle` (already lower case), ignoring case.
fn find_all(text: &str, needle: &[char]) -> Vec<std::ops::Range<usize>> {
    if needle.is_empty() {
        return Vec::new();
    }
    // Each char of `text` with its offset, lowered (a char lowering to several keeps the first).
    let chars: Vec<(usize, char)> =
        text.char_indices().map(|(i, c)| (i, c.to_lowercase().next().unwrap_or(c))).collect();
    let mut found = Vec::new();
    let mut i = 0;
    while i + needle.len() <= chars.len() {
        if chars[i..i + needle.len()].iter().map(|(_, c)| *c).eq(needle.iter().copied()) {
            let end = chars.get(i + needle.len()).map_or(text.len(), |(at, _)| *at);
            found.push(chars[i].0..end);
            i += needle.len();
        } else {
            i += 1;
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::find_all;

    #[test]
    fn finds_every_match_ignoring_case() {
        let needle: Vec<char> = "err".chars().collect();
        assert_eq!(find_all("ERROR: err, Err", &needle), [0..3, 7..10, 12..15]);
        assert_eq!(find_all("é err", &needle), vec![3..6_usize; 1], "offsets are bytes of the original text");
        assert!(find_all("none", &needle).is_empty());
        assert!(find_all("anything", &[]).is_empty());
    }
}
