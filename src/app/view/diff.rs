//! Draws a diff: unified (old and new line numbers, a coloured sign, tinted
//! lines) or side by side, code highlighted with syntect by the file's type.

use ratatui::style::Style;
use ratatui::text::{Line, Span};

use crate::app::diff_view::{Diff, Row, RowKind, SideRow};
use crate::app::highlight::Highlighter;
use crate::app::theme::Theme;

/// The lines of `diff` for a pane `width` columns wide.
pub fn lines(diff: &Diff, side_by_side: bool, width: u16, theme: &Theme) -> Vec<Line<'static>> {
    let mut old = Highlighter::new(&diff.path, theme);
    let mut new = Highlighter::new(&diff.path, theme);
    if side_by_side {
        let half = usize::from(width.saturating_sub(3) / 2);
        diff.side_by_side()
            .iter()
            .map(|row| match row {
                SideRow::Full(r) => banner(r, theme),
                SideRow::Pair(left, right) => {
                    let mut spans = half_row(left.as_ref(), half, &mut old, theme);
                    spans.push(Span::styled(" │ ", theme.dim));
                    spans.extend(half_row(right.as_ref(), half, &mut new, theme));
                    Line::from(spans)
                }
            })
            .collect()
    } else {
        diff.rows
            .iter()
            .map(|r| match r.kind {
                RowKind::Header | RowKind::Hunk => banner(r, theme),
                kind => {
                    let number = |n: Option<u32>| n.map(|n| format!("{n:>4}")).unwrap_or_else(|| "    ".into());
                    let (sign, sign_style, tint) = sign(kind, theme);
                    let mut spans = vec![
                        Span::styled(format!("{} {} ", number(r.old), number(r.new)), theme.dim),
                        Span::styled(sign, sign_style.patch(tint)),
                    ];
                    // Context feeds both highlighters so each keeps its parse state.
                    if kind == RowKind::Context {
                        old.line(&r.text, tint);
                    }
                    let h = if kind == RowKind::Removed { &mut old } else { &mut new };
                    spans.extend(h.line(&r.text, tint));
                    Line::from(spans).style(tint)
                }
            })
            .collect()
    }
}

fn banner(row: &Row, theme: &Theme) -> Line<'static> {
    let style = if row.kind == RowKind::Hunk { theme.accent } else { theme.dim };
    Line::styled(row.text.clone(), style)
}

fn sign(kind: RowKind, theme: &Theme) -> (&'static str, Style, Style) {
    match kind {
        RowKind::Added => ("+", theme.ok, theme.added),
        RowKind::Removed => ("-", theme.error, theme.removed),
        _ => (" ", theme.dim, Style::default()),
    }
}

/// One half of a side-by-side row, exactly `width` columns.
fn half_row(row: Option<&Row>, width: usize, h: &mut Highlighter, theme: &Theme) -> Vec<Span<'static>> {
    let Some(row) = row else { return vec![Span::raw(" ".repeat(width))] };
    let (sign, sign_style, tint) = sign(row.kind, theme);
    let number = row.old.or(row.new).map(|n| format!("{n:>4}")).unwrap_or_default();
    let mut spans = vec![Span::styled(format!("{number} "), theme.dim), Span::styled(sign, sign_style.patch(tint))];
    spans.extend(h.line(&row.text, tint));
    fit(spans, width, tint)
}

/// Cuts `spans` to `width` characters, padding with `pad` style.
fn fit(spans: Vec<Span<'static>>, width: usize, pad: Style) -> Vec<Span<'static>> {
    if width == 0 {
        return Vec::new();
    }
    let mut out = Vec::new();
    let mut used = 0;
    for span in spans {
        let n = span.content.chars().count();
        if used + n <= width {
            used += n;
            out.push(span);
        } else {
            let keep: String = span.content.chars().take(width.saturating_sub(used + 1)).collect();
            used += keep.chars().count();
            out.push(Span::styled(keep, span.style));
            out.push(Span::styled("…", span.style));
            used += 1;
            break;
        }
    }
    if used < width {
        out.push(Span::styled(" ".repeat(width - used), pad));
    }
    out
}
