//! The pipeline pane: change runs with their stages (state and timing), and
//! the diff viewer of the selected run: unified or side by side, highlighted,
//! scrollable, with hunk navigation.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{List, ListItem, ListState, Paragraph, Wrap};

use super::view_block;
use crate::app::model::{Model, Pane};
use crate::store::pipelines::{PipelineStatus, StageName, StageStatus};

/// Lines of the post-check's output shown under the stages.
const POST_CHECK_LINES: usize = 3;

fn run_style(model: &Model, status: PipelineStatus) -> ratatui::style::Style {
    use PipelineStatus as S;
    match status {
        S::Succeeded | S::Planned => model.theme.ok,
        S::Failed | S::Denied | S::RolledBack | S::Interrupted => model.theme.error,
        S::AwaitingApproval | S::Stopped | S::Cancelled => model.theme.warn,
        S::Resumed => model.theme.dim,
        S::Planning | S::Applying | S::Checking | S::RollingBack => model.theme.accent,
    }
}

fn stage_style(model: &Model, status: StageStatus) -> ratatui::style::Style {
    match status {
        StageStatus::Done => model.theme.ok,
        StageStatus::Failed | StageStatus::Denied | StageStatus::Interrupted => model.theme.error,
        StageStatus::Running => model.theme.warn,
        StageStatus::Skipped | StageStatus::Cancelled => model.theme.dim,
    }
}

/// Teammates' changes waiting for a second person, above the runs (at most four, then "N more");
/// returns the area left for the runs.
fn draw_reviews(model: &Model, frame: &mut Frame, area: Rect) -> Rect {
    const SHOWN: usize = 4;
    let reviews = &model.dashboard.reviews;
    if reviews.is_empty() {
        return area;
    }
    let mut lines = vec![Line::styled(model.locale.t("pipeline.reviews").to_string(), model.theme.warn)];
    for review in reviews.iter().take(SHOWN) {
        let mine = review.requested_by == model.operator;
        let expires = review.expires_at.get(11..16).unwrap_or(&review.expires_at);
        let hint =
            if mine { model.locale.t("pipeline.review_mine").to_string() } else { format!(":review {}", review.id) };
        lines.push(Line::from(vec![
            Span::styled(format!("  #{} ", review.id), model.theme.accent),
            Span::raw(format!(
                "{} · {} · {} {expires} · ",
                review.requested_by,
                review.why,
                model.locale.t("pipeline.review_until")
            )),
            Span::styled(hint, if mine { model.theme.dim } else { model.theme.accent }),
            Span::raw(format!(" — {}", crate::term_safe::visible_line(&review.summary))),
        ]));
    }
    if reviews.len() > SHOWN {
        let more = model.locale.tf("toast.more", &[("count", &(reviews.len() - SHOWN).to_string())]);
        lines.push(Line::styled(format!("  {more}"), model.theme.dim));
    }
    let height = u16::try_from(lines.len()).unwrap_or(u16::MAX).min(area.height);
    let [top, rest] = Layout::vertical([Constraint::Length(height), Constraint::Min(0)]).areas(area);
    frame.render_widget(Paragraph::new(lines), top);
    rest
}

/// Teammates' runs on a shared store (from the audit log), above the pipeline runs: who, what, and
/// each host's state; returns the area left.
fn draw_team_runs(model: &Model, frame: &mut Frame, area: Rect) -> Rect {
    use crate::store::team_runs::HostRunState;
    const SHOWN: usize = 3;
    const HOSTS: usize = 6;
    let runs = &model.dashboard.team_runs;
    if runs.is_empty() {
        return area;
    }
    let mut lines = vec![Line::styled(model.locale.t("pipeline.team_runs").to_string(), model.theme.accent)];
    for run in runs.iter().take(SHOWN) {
        let (total, running, failed) = (run.hosts.len(), run.running(), run.failed());
        let done = total - running;
        let counts = model.locale.tf(
            "pipeline.team_run_counts",
            &[("done", &done.to_string()), ("total", &total.to_string()), ("failed", &failed.to_string())],
        );
        let mut spans = vec![
            Span::raw(format!("  {} $ {} · ", run.who, crate::term_safe::visible_line(&run.command))),
            Span::styled(counts, if failed > 0 { model.theme.error } else { model.theme.dim }),
        ];
        for (host, state) in run.hosts.iter().take(HOSTS) {
            let (mark, style) = match state {
                HostRunState::Running => ("▶", model.theme.warn),
                HostRunState::Ok => ("✓", model.theme.ok),
                HostRunState::Failed => ("✗", model.theme.error),
            };
            spans.push(Span::styled(format!(" {mark} {host}"), style));
        }
        if total > HOSTS {
            spans.push(Span::styled(format!(" +{}", total - HOSTS), model.theme.dim));
        }
        lines.push(Line::from(spans));
    }
    let height = u16::try_from(lines.len()).unwrap_or(u16::MAX).min(area.height);
    let [top, rest] = Layout::vertical([Constraint::Length(height), Constraint::Min(0)]).areas(area);
    frame.render_widget(Paragraph::new(lines), top);
    rest
}

/// Draws it into `area` (the whole screen for overlays).
pub fn draw(model: &Model, frame: &mut Frame, area: Rect) {
    let runs = &model.dashboard.pipelines;
    let count = model.locale.tf("pipeline.runs", &[("count", &runs.len().to_string())]);
    let block = view_block(model, &format!("· {count} "));
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let inner = draw_reviews(model, frame, inner);
    let inner = draw_team_runs(model, frame, inner);
    if runs.is_empty() {
        let hint = model.locale.t("pipeline.empty").to_string();
        frame.render_widget(Paragraph::new(Line::styled(hint, model.theme.dim)).wrap(Wrap { trim: true }), inner);
        return;
    }
    let list_height = u16::try_from(runs.len().min(6)).unwrap_or(6);
    // What the post-check said (its line and the first lines it printed), under the stages.
    let post_check = runs.get(model.pipeline_cursor).and_then(|r| r.stage(StageName::PostCheck)).map(|s| {
        let mut lines = vec![Line::styled(
            format!(
                "{} {}: {}",
                crate::pipeline::stage_mark(s.status),
                model.locale.word("stage", s.name.as_str()),
                s.detail
            ),
            stage_style(model, s.status),
        )];
        lines.extend(
            s.output
                .lines()
                .filter(|l| !l.trim().is_empty())
                .take(POST_CHECK_LINES)
                .map(|l| Line::styled(format!("  {}", crate::term_safe::visible_line(l)), model.theme.dim)),
        );
        lines
    });
    let post_height = post_check.as_ref().map_or(0, |l| u16::try_from(l.len()).unwrap_or(0));
    let [list_area, stages_area, post_area, diff_area] = Layout::vertical([
        Constraint::Length(list_height),
        Constraint::Length(2),
        Constraint::Length(post_height),
        Constraint::Min(1),
    ])
    .areas(inner);
    // Columns as wide as their widest cell, so a long status never runs into the next one.
    let width = |cells: Vec<usize>| cells.into_iter().max().unwrap_or(0) + 2;
    let statuses: Vec<String> =
        runs.iter().map(|r| model.locale.word("pipeline_status", r.status.as_str()).to_string()).collect();
    let status_width = width(statuses.iter().map(|s| s.chars().count()).collect());
    let kind_width = width(runs.iter().map(|r| r.kind.as_str().len()).collect());
    let target_width = width(runs.iter().map(|r| r.targets.chars().count().min(40)).collect());
    let items: Vec<ListItem> = runs
        .iter()
        .zip(&statuses)
        .map(|(r, status)| {
            let targets: String = r.targets.chars().take(40).collect();
            ListItem::new(Line::from(vec![
                Span::styled(format!("{status:<status_width$}"), run_style(model, r.status)),
                Span::raw(format!("{:<kind_width$}{targets:<target_width$}", r.kind.as_str())),
                Span::styled(r.created_at.get(..19).unwrap_or(&r.created_at).replace('T', " "), model.theme.dim),
                Span::raw(format!(
                    "  {}",
                    if r.summary.is_empty() {
                        r.stages.first().map(|s| s.detail.as_str()).unwrap_or("")
                    } else {
                        r.summary.as_str()
                    }
                )),
            ]))
        })
        .collect();
    let highlight = if model.focus == Pane::Pipeline { model.theme.selected } else { model.theme.dim };
    let mut state = ListState::default().with_selected(Some(model.pipeline_cursor));
    frame.render_stateful_widget(List::new(items).highlight_style(highlight), list_area, &mut state);
    let Some(run) = runs.get(model.pipeline_cursor) else { return };
    let mut spans = Vec::new();
    for (i, stage) in run.stages.iter().enumerate() {
        if i > 0 {
            spans.push(Span::styled(" → ", model.theme.dim));
        }
        let timing =
            if stage.duration_ms > 0 { format!(" {:.1}s", stage.duration_ms as f64 / 1000.0) } else { String::new() };
        spans.push(Span::styled(
            format!(
                "{} {}{timing}",
                crate::pipeline::stage_mark(stage.status),
                model.locale.word("stage", stage.name.as_str())
            ),
            stage_style(model, stage.status),
        ));
    }
    frame.render_widget(Paragraph::new(Line::from(spans)).wrap(Wrap { trim: true }), stages_area);
    if let Some(lines) = post_check {
        frame.render_widget(Paragraph::new(lines), post_area);
    }
    let Some(diff) = model.selected_diff() else {
        let summary = run.stage(StageName::Summary).map(|s| s.detail.clone()).unwrap_or_default();
        let mut lines = vec![Line::styled(format!("$ {summary}"), model.theme.accent)];
        if run.status == PipelineStatus::Interrupted {
            let stage = run.stages.iter().find(|s| s.status == StageStatus::Interrupted);
            let stage = stage.map(|s| model.locale.word("stage", s.name.as_str())).unwrap_or_default();
            let hint = model.locale.tf("pipeline.interrupted", &[("stage", &stage), ("id", &run.id)]);
            lines.push(Line::styled(hint, model.theme.error));
        }
        frame.render_widget(Paragraph::new(lines).wrap(Wrap { trim: true }), diff_area);
        return;
    };
    let [bar, body_area] = Layout::vertical([Constraint::Length(1), Constraint::Min(1)]).areas(diff_area);
    let body = super::diff::lines(&diff, model.diff_view.side_by_side, body_area.width, &model.theme);
    let mode = model.locale.t(if model.diff_view.side_by_side { "pipeline.split" } else { "pipeline.unified" });
    let rows = body.len();
    let scroll = model.diff_view.scroll.min(rows.saturating_sub(1));
    let position =
        model.locale.tf("pipeline.position", &[("row", &(scroll + 1).to_string()), ("rows", &rows.to_string())]);
    let hunks = diff.hunks().len();
    frame.render_widget(
        Paragraph::new(Line::styled(format!("── {} · {mode} · {hunks} @@ · {position}", diff.path), model.theme.dim)),
        bar,
    );
    let shown: Vec<Line> = body.into_iter().skip(scroll).take(usize::from(body_area.height)).collect();
    frame.render_widget(Paragraph::new(shown), body_area);
}
