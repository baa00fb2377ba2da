//! The metrics pane: commands by outcome, SSH command latency histogram, LLM
//! calls, tokens and cost per model, the circuit breaker, pipeline runs.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Sparkline};

use super::view_block;
use crate::app::model::Model;
use crate::store::metrics::LATENCY_BUCKETS_MS;

/// Draws it into `area` (the whole screen for overlays).
pub fn draw(model: &Model, frame: &mut Frame, area: Rect) {
    let theme = &model.theme;
    let d = &model.dashboard;
    let s = &d.stats;
    let t = |key: &str| model.locale.t(key).to_string();
    let tf = |key: &str, args: &[(&str, &str)]| model.locale.tf(key, args);
    let mut lines = vec![
        Line::styled(t("metrics.commands"), theme.accent),
        Line::from(vec![
            Span::styled(format!("  ✓ {}", tf("metrics.succeeded", &[("count", &s.succeeded.to_string())])), theme.ok),
            Span::styled(format!("   ✗ {}", tf("metrics.failed", &[("count", &s.failed.to_string())])), theme.error),
            Span::styled(
                format!("   ⊘ {}", tf("metrics.unreachable", &[("count", &s.unreachable.to_string())])),
                theme.warn,
            ),
        ]),
        Line::styled(t("metrics.latency"), theme.accent),
    ];
    let total: u64 = s.latency.iter().sum::<u64>().max(1);
    let width = usize::from(area.width.saturating_sub(24)).max(4);
    for (i, count) in s.latency.iter().enumerate() {
        let label = match LATENCY_BUCKETS_MS.get(i) {
            Some(ms) => format!("≤ {ms} ms"),
            None => format!("> {} ms", LATENCY_BUCKETS_MS.last().copied().unwrap_or(0)),
        };
        let bar = "█".repeat((*count as usize * width).div_ceil(total as usize).min(width));
        lines.push(Line::from(vec![
            Span::raw(format!("  {label:>10} ")),
            Span::styled(bar, theme.host),
            Span::styled(format!(" {count}"), theme.dim),
        ]));
    }
    lines.push(Line::styled(t("metrics.models"), theme.accent));
    if d.spend.is_empty() {
        lines.push(Line::styled(format!("  {}", t("metrics.no_calls")), theme.dim));
    }
    for (model_name, spend) in &d.spend {
        let approx = if spend.usage.approximate { "~" } else { "" };
        let (input, output) =
            (format!("{approx}{}", spend.usage.input_tokens), format!("{approx}{}", spend.usage.output_tokens));
        let numbers = tf(
            "metrics.model_line",
            &[
                ("calls", &format!("{:>4}", spend.calls)),
                ("input", &format!("{input:>8}")),
                ("output", &format!("{output:>7}")),
                ("cost", &format!("{:.4}", spend.cost_usd)),
            ],
        );
        lines.push(Line::raw(format!("  {model_name:<20} {numbers}")));
    }
    let (breaker, style) =
        if d.breaker_open { (t("metrics.breaker_open"), theme.error) } else { (t("metrics.breaker_closed"), theme.ok) };
    lines.push(Line::from(vec![
        Span::styled(format!("{} ", t("metrics.breaker")), theme.accent),
        Span::styled(breaker, style),
    ]));
    let runs = tf(
        "metrics.pipelines_line",
        &[("count", &s.pipeline_runs.to_string()), ("failed", &s.pipelines_failed.to_string())],
    );
    lines.push(Line::from(vec![Span::styled(format!("{} ", t("metrics.pipelines")), theme.accent), Span::raw(runs)]));
    let block = view_block(model, "");
    let inner = block.inner(area);
    frame.render_widget(block, area);
    // Over time: one sparkline per series, newest on the right, under the figures when there is room.
    let h = &model.metric_history;
    let series = [
        (t("metrics.spark_commands"), &h.commands, theme.host),
        (t("metrics.spark_failures"), &h.failures, theme.error),
        (t("metrics.spark_tokens"), &h.tokens, theme.accent),
    ];
    let text_rows = u16::try_from(lines.len()).unwrap_or(u16::MAX);
    let spark_rows = if inner.height >= text_rows + 8 { 7 } else { 0 };
    let [text_area, spark_area, _] =
        Layout::vertical([Constraint::Length(text_rows), Constraint::Length(spark_rows), Constraint::Min(0)])
            .areas(inner);
    frame.render_widget(Paragraph::new(lines), text_area);
    if spark_rows == 0 {
        return;
    }
    let [heading, charts] = Layout::vertical([Constraint::Length(1), Constraint::Length(6)]).areas(spark_area);
    frame.render_widget(Paragraph::new(Line::styled(t("metrics.over_time"), theme.accent)), heading);
    let rows = Layout::vertical([Constraint::Length(2); 3]).split(charts);
    for ((label, values, style), row) in series.iter().zip(rows.iter()) {
        let [name, chart] = Layout::horizontal([Constraint::Length(14), Constraint::Min(4)]).areas(*row);
        let last = values.back().copied().unwrap_or(0);
        frame.render_widget(Paragraph::new(format!("  {label}\n    {last}")).style(theme.dim), name);
        // The newest samples that fit the width.
        let width = usize::from(chart.width);
        let data: Vec<u64> = values.iter().skip(values.len().saturating_sub(width)).copied().collect();
        frame.render_widget(Sparkline::default().data(&data).style(*style), chart);
    }
}
