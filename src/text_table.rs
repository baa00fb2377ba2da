//! Aligned plain-text tables (CLI listings, runbook findings).

/// Renders rows under a header, columns padded to their widest cell.
pub fn render(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (i, cell) in row.iter().enumerate() {
            if let Some(w) = widths.get_mut(i) {
                *w = (*w).max(cell.chars().count());
            }
        }
    }
    let line = |cells: Vec<&str>| {
        let padded: Vec<String> =
            cells.iter().enumerate().map(|(i, c)| pad(c, widths.get(i).copied().unwrap_or(0))).collect();
        padded.join("  ").trim_end().to_string() + "\n"
    };
    let mut out = line(header.to_vec());
    for row in rows {
        out.push_str(&line(row.iter().map(String::as_str).collect()));
    }
    out
}

/// `text` followed by spaces up to `width` characters. (`format!("{:<w$}")` panics for a width of
/// 65,536 or more, which one long stored value would reach.)
pub fn pad(text: &str, width: usize) -> String {
    let len = text.chars().count();
    let mut out = String::with_capacity(text.len() + width.saturating_sub(len));
    out.push_str(text);
    out.extend(std::iter::repeat_n(' ', width.saturating_sub(len)));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cell_longer_than_any_format_width_is_rendered() {
        let long = "a".repeat(70_000);
        let table = render(&["NAME", "PORT"], &[vec![long.clone(), "22".into()], vec!["b".into(), "2222".into()]]);
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(lines[1], format!("{long}  22"));
        assert_eq!(lines[2].len(), 70_000 + 2 + 4, "b is padded to the long cell");
        assert_eq!(pad("é", 3), "é  ");
    }
}
