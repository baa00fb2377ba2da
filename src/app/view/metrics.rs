//! The metrics pane: commands by outcome, SSH command latency histogram, LLM
//! calls, tokens and cost per model, the circuit breaker, pipeline runs.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::view_block;
use crate::app::model::Model;
use crate::store::metrics::LATENCY_BUCKETS_MS;

pub fn draw(model: &Model, frame: &mut Frame, area: Rect) {
    let theme = &model.theme;
    let d = &model.dashboard;
    let s = &d.stats;
    let mut lines = vec![
        Line::styled("Commands", theme.accent),
        Line::from(vec![
            Span::styled(format!("  ✓ {} succeeded", s.succeeded), theme.ok),
            Span::styled(format!("   ✗ {} failed", s.failed), theme.error),
            Span::styled(format!("   ⊘ {} unreachable", s.unreachable), theme.warn),
        ]),
        Line::styled("Latency", theme.accent),
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
    lines.push(Line::styled("Models", theme.accent));
    if d.spend.is_empty() {
        lines.push(Line::styled("  no LLM calls yet", theme.dim));
    }
    for (model_name, spend) in &d.spend {
        let approx = if spend.usage.approximate { "~" } else { "" };
        let (input, output) =
            (format!("{approx}{}", spend.usage.input_tokens), format!("{approx}{}", spend.usage.output_tokens));
        lines.push(Line::raw(format!(
            "  {model_name:<20} {:>4} calls  {input:>8} in  {output:>7} out  ${:.4}",
            spend.calls, spend.cost_usd
        )));
    }
    let (breaker, style) = if d.breaker_open { ("open: calls refused", theme.error) } else { ("closed", theme.ok) };
    lines.push(Line::from(vec![Span::styled("Circuit breaker ", theme.accent), Span::styled(breaker, style)]));
    lines.push(Line::from(vec![
        Span::styled("Pipeline runs ", theme.accent),
        Span::raw(format!("{} ({} failed, denied or rolled back)", s.pipeline_runs, s.pipelines_failed)),
    ]));
    frame.render_widget(Paragraph::new(lines).block(view_block(model, "")), area);
}
