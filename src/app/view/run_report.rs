//! The output pane's run views: the newest run with identical outputs folded
//! into one block per group (as `dshbak -c` does), its failed hosts only, or a
//! diff of two hosts' outputs; and the progress line of a run in flight.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Wrap};

use super::view_block;
use crate::app::inventory_table::state_text;
use crate::app::model::{Model, OutputMode};
use crate::exec::runs::{Run, compress_names};

/// "37/50 done, 2 failed, 11 running" (or the state before it runs).
pub fn progress_text(model: &Model, run: &crate::exec::runs::Run) -> String {
    let p = run.progress();
    if p.done == 0 && p.running == 0 {
        return format!("#{} {}", run.id, model.locale.t(run.state.key()));
    }
    model.locale.tf(
        "output.progress",
        &[
            ("id", &run.id.to_string()),
            ("done", &p.done.to_string()),
            ("total", &p.total.to_string()),
            ("failed", &p.failed.to_string()),
            ("running", &p.running.to_string()),
        ],
    )
}

/// Draws the view the output pane is in (not the live lines).
pub fn draw(model: &Model, frame: &mut Frame, area: Rect, extra: &str) {
    let Some(run) = model.focused_run() else { return };
    let mode = &model.output_view.mode;
    let label = match mode {
        OutputMode::Grouped => model.locale.t("output.grouped").to_string(),
        OutputMode::Failed => model.locale.t("output.failed_only").to_string(),
        OutputMode::Diff(a, b) => format!("{a} ↔ {b}"),
        OutputMode::Live => String::new(),
    };
    let block = view_block(model, &format!("{extra}· {label} "));
    let lines = match mode {
        OutputMode::Diff(a, b) => diff_lines(model, run, a, b, area.width),
        _ => grouped_lines(model, run, *mode == OutputMode::Failed),
    };
    let paragraph = Paragraph::new(lines).block(block).wrap(Wrap { trim: false });
    let rows = paragraph.line_count(area.width).saturating_sub(usize::from(area.height));
    let scroll = model.output_view.report_scroll.min(rows);
    frame.render_widget(paragraph.scroll((u16::try_from(scroll).unwrap_or(u16::MAX), 0)), area);
}

fn header(model: &Model, run: &Run) -> Line<'static> {
    let state = model.locale.t(run.state.key()).to_string();
    let text = model.locale.tf(
        "output.run_header",
        &[
            ("id", &run.id.to_string()),
            ("command", &run.command),
            ("count", &run.hosts.len().to_string()),
            ("state", &state),
        ],
    );
    Line::styled(format!("── {text}"), model.theme.accent)
}

fn grouped_lines(model: &Model, run: &Run, only_failed: bool) -> Vec<Line<'static>> {
    let theme = &model.theme;
    let mut lines = vec![header(model, run)];
    let groups = run.groups(only_failed);
    if groups.is_empty() {
        lines.push(Line::styled(model.locale.t("output.no_failed").to_string(), theme.dim));
    }
    for group in groups {
        let style = if group.host.state.is_failure() { theme.error } else { theme.ok };
        let who = if group.names.len() > 1 {
            model.locale.tf(
                "output.identical",
                &[("count", &group.names.len().to_string()), ("hosts", &compress_names(&group.names))],
            )
        } else {
            group.names.join("")
        };
        lines.push(Line::from(vec![
            Span::styled(format!("═ {who} "), theme.host),
            Span::styled(state_text(model, group.host.state), style),
        ]));
        if let Some(error) = &group.host.error {
            lines.push(Line::styled(format!("  {}", crate::term_safe::visible_line(error)), theme.error));
        }
        // A group whose hosts are all folded (Space or Z in the Output pane) keeps its header only.
        if group.names.iter().all(|name| model.output.is_folded(name)) {
            let count = group.host.output.len();
            let text = model.locale.tn("output.group_folded_line", "output.group_folded", count, &[]);
            lines.push(Line::styled(format!("  {text}"), theme.dim));
            continue;
        }
        for text in &group.host.output {
            lines.push(Line::from(vec![
                Span::styled("  │ ", theme.dim),
                Span::raw(crate::term_safe::visible_line(text).into_owned()),
            ]));
        }
        if group.host.cut > 0 {
            let cut = model.locale.tf("output.cut", &[("count", &group.host.cut.to_string())]);
            lines.push(Line::styled(format!("  {cut}"), theme.warn));
        }
    }
    lines
}

fn diff_lines(model: &Model, run: &Run, a: &str, b: &str, width: u16) -> Vec<Line<'static>> {
    let text = |h: &str| run.hosts.get(h).map(|h| h.output.join("\n") + "\n").unwrap_or_default();
    let (left, right) = (text(a), text(b));
    let mut lines = vec![header(model, run)];
    if left == right {
        lines.push(Line::styled(model.locale.tf("output.same", &[("a", a), ("b", b)]), model.theme.dim));
        return lines;
    }
    let unified = similar::TextDiff::from_lines(&left, &right).unified_diff().header(a, b).to_string();
    let unified = crate::term_safe::visible(&unified).into_owned();
    let diff = crate::app::diff_view::Diff::parse(&format!("--- {a}\n+++ {b}\n{}", strip_headers(&unified)));
    lines.extend(super::diff::lines(&diff, false, width, &model.theme));
    lines
}

/// `similar` writes its own `---`/`+++` lines; the diff parser wants them once.
fn strip_headers(unified: &str) -> String {
    unified.lines().skip_while(|l| l.starts_with("---") || l.starts_with("+++")).collect::<Vec<_>>().join("\n")
}
