//! A unified diff taken apart for the diff viewer: numbered rows, hunk
//! positions for `]`/`[`, and the side-by-side pairing of removed and added
//! lines. Pure, so `update` can find hunks and `view` can draw the same rows.

/// What a row of the diff is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowKind {
    /// `--- a/x`, `+++ b/x` and other header lines.
    Header,
    /// `@@ -1,3 +1,4 @@`.
    Hunk,
    /// Unchanged.
    Context,
    /// `+` line.
    Added,
    /// `-` line.
    Removed,
}

/// One line of the unified diff with its line numbers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    pub kind: RowKind,
    /// Line number in the old file (context and removed lines).
    pub old: Option<u32>,
    /// Line number in the new file (context and added lines).
    pub new: Option<u32>,
    /// The text without its `+`/`-`/` ` marker.
    pub text: String,
}

/// One row of the side-by-side view: old on the left, new on the right.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SideRow {
    /// A header or hunk line across both halves.
    Full(Row),
    /// The two halves; `None` leaves that half blank.
    Pair(Option<Row>, Option<Row>),
}

/// A parsed diff.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Diff {
    /// The new file's path (from `+++`), used to pick the syntax.
    pub path: String,
    pub rows: Vec<Row>,
}

impl Diff {
    /// Parses unified diff text; lines it does not recognise become headers.
    pub fn parse(text: &str) -> Self {
        let mut diff = Diff::default();
        let (mut old, mut new) = (0u32, 0u32);
        for line in text.lines() {
            let row = |kind, old, new, text: &str| Row { kind, old, new, text: text.replace('\t', "    ") };
            let parsed = if let Some(path) = line.strip_prefix("+++ ") {
                let path = path.split('\t').next().unwrap_or(path);
                diff.path = path.strip_prefix("b/").unwrap_or(path).to_string();
                row(RowKind::Header, None, None, line)
            } else if line.starts_with("--- ") {
                row(RowKind::Header, None, None, line)
            } else if line.starts_with("@@") {
                (old, new) = hunk_starts(line);
                row(RowKind::Hunk, None, None, line)
            } else if let Some(t) = line.strip_prefix('+') {
                new += 1;
                row(RowKind::Added, None, Some(new - 1), t)
            } else if let Some(t) = line.strip_prefix('-') {
                old += 1;
                row(RowKind::Removed, Some(old - 1), None, t)
            } else if let Some(t) = line.strip_prefix(' ').or((line.is_empty() && old > 0).then_some("")) {
                old += 1;
                new += 1;
                row(RowKind::Context, Some(old - 1), Some(new - 1), t)
            } else {
                row(RowKind::Header, None, None, line)
            };
            diff.rows.push(parsed);
        }
        diff
    }

    /// Row indexes where hunks start.
    pub fn hunks(&self) -> Vec<usize> {
        self.rows.iter().enumerate().filter(|(_, r)| r.kind == RowKind::Hunk).map(|(i, _)| i).collect()
    }

    /// Rows for the side-by-side view: runs of removed lines face the added
    /// lines that follow them.
    pub fn side_by_side(&self) -> Vec<SideRow> {
        let mut out = Vec::new();
        let mut i = 0;
        while i < self.rows.len() {
            let row = &self.rows[i];
            match row.kind {
                RowKind::Header | RowKind::Hunk => out.push(SideRow::Full(row.clone())),
                RowKind::Context => out.push(SideRow::Pair(Some(row.clone()), Some(row.clone()))),
                RowKind::Added => out.push(SideRow::Pair(None, Some(row.clone()))),
                RowKind::Removed => {
                    let removed: Vec<&Row> = self.rows[i..].iter().take_while(|r| r.kind == RowKind::Removed).collect();
                    let added: Vec<&Row> =
                        self.rows[i + removed.len()..].iter().take_while(|r| r.kind == RowKind::Added).collect();
                    for k in 0..removed.len().max(added.len()) {
                        out.push(SideRow::Pair(
                            removed.get(k).map(|r| (*r).clone()),
                            added.get(k).map(|r| (*r).clone()),
                        ));
                    }
                    i += removed.len() + added.len();
                    continue;
                }
            }
            i += 1;
        }
        out
    }

    /// Where hunks start among the side-by-side rows.
    pub fn side_hunks(rows: &[SideRow]) -> Vec<usize> {
        rows.iter()
            .enumerate()
            .filter(|(_, r)| matches!(r, SideRow::Full(row) if row.kind == RowKind::Hunk))
            .map(|(i, _)| i)
            .collect()
    }
}

/// The first old and new line numbers of `@@ -a,b +c,d @@`.
fn hunk_starts(line: &str) -> (u32, u32) {
    let mut words = line.split_whitespace().skip(1);
    let start = |w: Option<&str>| {
        w.and_then(|w| w.get(1..)).and_then(|w| w.split(',').next()).and_then(|n| n.parse().ok()).unwrap_or(1)
    };
    (start(words.next()), start(words.next()))
}

/// The scroll position of the next (or previous) hunk from `scroll`.
pub fn jump_to_hunk(hunks: &[usize], scroll: usize, forward: bool) -> Option<usize> {
    if forward {
        hunks.iter().copied().find(|h| *h > scroll)
    } else {
        hunks.iter().rev().copied().find(|h| *h < scroll)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DIFF: &str = "--- a/etc/app.conf\n+++ b/etc/app.conf\n@@ -1,3 +1,3 @@\n keep\n-old\n+new\n+more\n@@ -10,2 +11,2 @@\n ten\n-gone\n";

    #[test]
    fn rows_carry_line_numbers_and_hunks() {
        let d = Diff::parse(DIFF);
        assert_eq!(d.path, "etc/app.conf");
        assert_eq!(d.hunks(), [2, 7]);
        assert_eq!(d.rows[3], Row { kind: RowKind::Context, old: Some(1), new: Some(1), text: "keep".into() });
        assert_eq!(d.rows[4], Row { kind: RowKind::Removed, old: Some(2), new: None, text: "old".into() });
        assert_eq!(d.rows[6], Row { kind: RowKind::Added, old: None, new: Some(3), text: "more".into() });
        assert_eq!(d.rows[9].old, Some(11), "numbers restart at each hunk");
    }

    #[test]
    fn side_by_side_faces_removed_with_added() {
        let d = Diff::parse(DIFF);
        let rows = d.side_by_side();
        let pair = |r: &SideRow| match r {
            SideRow::Pair(l, r) => (l.as_ref().map(|x| x.text.clone()), r.as_ref().map(|x| x.text.clone())),
            SideRow::Full(_) => (None, None),
        };
        assert_eq!(pair(&rows[4]), (Some("old".into()), Some("new".into())));
        assert_eq!(pair(&rows[5]), (None, Some("more".into())));
        assert_eq!(pair(&rows[8]), (Some("gone".into()), None));
        assert_eq!(Diff::side_hunks(&rows), [2, 6]);
        assert_eq!(jump_to_hunk(&[2, 6], 0, true), Some(2));
        assert_eq!(jump_to_hunk(&[2, 6], 2, true), Some(6));
        assert_eq!(jump_to_hunk(&[2, 6], 6, false), Some(2));
        assert_eq!(jump_to_hunk(&[2, 6], 6, true), None);
    }
}
