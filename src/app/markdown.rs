//! Markdown to terminal lines for the chat pane: headings, emphasis, lists,
//! quotes, tables, links and fenced code blocks highlighted with syntect.
//! Partial Markdown (a reply still streaming) renders as far as it goes, and
//! [`Streamed`] renders it incrementally: what can no longer change once.

use pulldown_cmark::{CodeBlockKind, Event, HeadingLevel, Options, Parser, Tag, TagEnd};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};

use super::highlight::Highlighter;
use super::theme::Theme;

/// The lines of `text` rendered in `theme`.
pub fn render(text: &str, theme: &Theme) -> Vec<Line<'static>> {
    let options = Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS;
    let mut r = Renderer {
        theme,
        lines: Vec::new(),
        spans: Vec::new(),
        styles: Vec::new(),
        lists: Vec::new(),
        bullet: None,
        code: None,
        quote: 0,
        link: None,
    };
    for event in Parser::new_ext(text, options) {
        r.event(event);
    }
    r.flush();
    while r.lines.last().is_some_and(|l| l.spans.is_empty()) {
        r.lines.pop();
    }
    r.lines
}

/// A reply rendered as it streams. Re-rendering the whole answer (Markdown and syntect) for every
/// chunk costs the answer's length each time, quadratic over the reply; here the blocks that can
/// no longer change — up to a blank line outside a code fence, or a closing fence — are rendered
/// once into `stable`, and only the block still growing (`tail`) is rendered again per chunk. A
/// block rendered alone can differ in small ways from the whole (a loose list's spacing), so the
/// finished reply is rendered whole once (`ChatEntry::render_markdown`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Streamed {
    /// Bytes of the text rendered into `stable` (a block boundary).
    stable_len: usize,
    /// Bytes of the text read line by line for boundaries (the end of its last complete line).
    scanned: usize,
    /// The fence (```` ``` ```` or `~~~`) of a code block open at `scanned`.
    fence: Option<&'static str>,
    stable: Vec<Line<'static>>,
    tail: Vec<Line<'static>>,
}

impl Streamed {
    /// Takes the whole text so far (the previous text and what was appended to it).
    pub fn update(&mut self, text: &str, theme: &Theme) {
        if text.len() < self.scanned || !text.is_char_boundary(self.scanned) {
            // Not an extension of what was read: start over.
            *self = Self::default();
        }
        let mut boundary = self.stable_len;
        while let Some(end) = text[self.scanned..].find('\n') {
            let line = &text[self.scanned..self.scanned + end];
            self.scanned += end + 1;
            let trimmed = line.trim_start();
            let marker = ["```", "~~~"].into_iter().find(|m| trimmed.starts_with(m));
            match (self.fence, marker) {
                (None, Some(m)) => self.fence = Some(m),
                (Some(open), Some(m)) if open == m && trimmed.trim_end().trim_start_matches(m).is_empty() => {
                    self.fence = None;
                    boundary = self.scanned;
                }
                (None, None) if line.trim().is_empty() => boundary = self.scanned,
                _ => {}
            }
        }
        if boundary > self.stable_len {
            let block = render(&text[self.stable_len..boundary], theme);
            if !block.is_empty() && !self.stable.is_empty() {
                self.stable.push(Line::default());
            }
            self.stable.extend(block);
            self.stable_len = boundary;
        }
        self.tail = render(&text[self.stable_len..], theme);
        if !self.stable.is_empty() && !self.tail.is_empty() {
            self.tail.insert(0, Line::default());
        }
    }

    /// The lines rendered so far, in order.
    pub fn lines(&self) -> impl Iterator<Item = &Line<'static>> {
        self.stable.iter().chain(&self.tail)
    }
}

struct Renderer<'t> {
    theme: &'t Theme,
    lines: Vec<Line<'static>>,
    spans: Vec<Span<'static>>,
    styles: Vec<Style>,
    /// Open lists: the next number of an ordered one, `None` for bullets.
    lists: Vec<Option<u64>>,
    /// The bullet of an item whose first line is not out yet.
    bullet: Option<String>,
    code: Option<Highlighter>,
    quote: usize,
    link: Option<String>,
}

impl Renderer<'_> {
    fn style(&self) -> Style {
        self.styles.last().copied().unwrap_or_default()
    }

    fn push_style(&mut self, patch: Style) {
        self.styles.push(self.style().patch(patch));
    }

    /// Indentation of nested lists and quote bars in front of a line.
    fn prefix(&mut self) -> Vec<Span<'static>> {
        let mut out = Vec::new();
        if self.quote > 0 {
            out.push(Span::styled("▎ ".repeat(self.quote), self.theme.dim));
        }
        let depth = self.lists.len().saturating_sub(1);
        if let Some(bullet) = self.bullet.take() {
            out.push(Span::raw(format!("{}{bullet}", "  ".repeat(depth))));
        } else if !self.lists.is_empty() {
            out.push(Span::raw("  ".repeat(depth + 1)));
        }
        out
    }

    fn flush(&mut self) {
        if self.spans.is_empty() && self.bullet.is_none() {
            return;
        }
        let mut spans = self.prefix();
        spans.append(&mut self.spans);
        self.lines.push(Line::from(spans));
    }

    fn blank(&mut self) {
        self.flush();
        if self.lines.last().is_some_and(|l| !l.spans.is_empty()) {
            self.lines.push(Line::default());
        }
    }

    fn text(&mut self, text: &str) {
        if self.code.is_some() {
            for line in text.lines() {
                let mut spans = self.prefix();
                spans.push(Span::styled("  ", self.theme.dim));
                let base = self.theme.code;
                if let Some(h) = self.code.as_mut() {
                    if h.is_active() {
                        spans.extend(h.line(line, Style::default()));
                    } else {
                        spans.push(Span::styled(line.to_string(), base));
                    }
                }
                self.lines.push(Line::from(spans));
            }
            return;
        }
        let style = self.style();
        self.spans.push(Span::styled(text.to_string(), style));
    }

    fn event(&mut self, event: Event) {
        match event {
            Event::Start(tag) => self.start(tag),
            Event::End(tag) => self.end(tag),
            Event::Text(t) => self.text(&t),
            Event::Code(t) => self.spans.push(Span::styled(t.to_string(), self.theme.code)),
            Event::SoftBreak | Event::HardBreak => self.flush(),
            Event::Rule => {
                self.blank();
                self.lines.push(Line::styled("─".repeat(24), self.theme.dim));
            }
            Event::TaskListMarker(done) => self.spans.push(Span::raw(if done { "[x] " } else { "[ ] " })),
            Event::Html(t) | Event::InlineHtml(t) | Event::InlineMath(t) | Event::DisplayMath(t) => self.text(&t),
            Event::FootnoteReference(t) => self.text(&format!("[{t}]")),
        }
    }

    fn start(&mut self, tag: Tag) {
        match tag {
            Tag::Heading { level, .. } => {
                self.blank();
                let mut style = self.theme.accent.add_modifier(Modifier::BOLD);
                if level == HeadingLevel::H1 {
                    style = style.add_modifier(Modifier::UNDERLINED);
                }
                self.push_style(style);
            }
            Tag::BlockQuote(_) => {
                self.flush();
                self.quote += 1;
            }
            Tag::CodeBlock(kind) => {
                self.flush();
                let lang = match kind {
                    CodeBlockKind::Fenced(info) => info.split_whitespace().next().unwrap_or("").to_string(),
                    CodeBlockKind::Indented => String::new(),
                };
                self.code = Some(Highlighter::new(&lang, self.theme));
            }
            Tag::List(start) => {
                self.flush();
                self.lists.push(start);
            }
            Tag::Item => {
                self.flush();
                let bullet = match self.lists.last_mut() {
                    Some(Some(n)) => {
                        *n += 1;
                        format!("{}. ", *n - 1)
                    }
                    _ => "• ".to_string(),
                };
                self.bullet = Some(bullet);
            }
            Tag::Emphasis => self.push_style(Style::new().add_modifier(Modifier::ITALIC)),
            Tag::Strong => self.push_style(Style::new().add_modifier(Modifier::BOLD)),
            Tag::Strikethrough => self.push_style(Style::new().add_modifier(Modifier::CROSSED_OUT)),
            Tag::Link { dest_url, .. } => {
                self.push_style(self.theme.accent.add_modifier(Modifier::UNDERLINED));
                self.link = Some(dest_url.to_string());
            }
            Tag::TableHead => self.push_style(Style::new().add_modifier(Modifier::BOLD)),
            _ => {}
        }
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Paragraph => {
                if self.lists.is_empty() {
                    self.blank();
                } else {
                    self.flush();
                }
            }
            TagEnd::Heading(_) => {
                self.styles.pop();
                self.blank();
            }
            TagEnd::BlockQuote(_) => {
                self.flush();
                self.quote = self.quote.saturating_sub(1);
            }
            TagEnd::CodeBlock => {
                self.code = None;
                self.blank();
            }
            TagEnd::List(_) => {
                self.flush();
                self.lists.pop();
                if self.lists.is_empty() {
                    self.blank();
                }
            }
            TagEnd::Item => self.flush(),
            TagEnd::Emphasis | TagEnd::Strong | TagEnd::Strikethrough => {
                self.styles.pop();
            }
            TagEnd::Link => {
                self.styles.pop();
                if let Some(url) = self.link.take() {
                    let shown: String = self.spans.last().map(|s| s.content.to_string()).unwrap_or_default();
                    if shown != url {
                        self.spans.push(Span::styled(format!(" ({url})"), self.theme.dim));
                    }
                }
            }
            TagEnd::TableHead => {
                self.styles.pop();
                self.flush();
            }
            TagEnd::TableCell => self.spans.push(Span::styled(" │ ", self.theme.dim)),
            TagEnd::TableRow => self.flush(),
            TagEnd::Table => self.blank(),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(lines: &[Line]) -> Vec<String> {
        lines.iter().map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect()).collect()
    }

    #[test]
    fn a_streamed_reply_renders_like_the_whole_and_keeps_finished_blocks() {
        let md = "# Disk\n\nRoot is **92%** full, see `df -h`.\n\n```bash\ndf -h /\n\ndu -sh /var\n```\nAfter the fence.\n\n> quoted\n\nLast *words*.";
        let theme = Theme::dark();
        let mut streamed = Streamed::default();
        let mut at = 0;
        for size in [1, 3, 7, 2, 11, 5, 13, 4].into_iter().cycle() {
            let mut end = (at + size).min(md.len());
            while !md.is_char_boundary(end) {
                end += 1;
            }
            streamed.update(&md[..end], &theme);
            at = end;
            if at == md.len() {
                break;
            }
        }
        let streamed_lines: Vec<Line> = streamed.lines().cloned().collect();
        assert_eq!(plain(&streamed_lines), plain(&render(md, &theme)));
        // The blank line inside the fence was not a boundary; the finished blocks were rendered once.
        assert!(streamed.stable_len > md.find("After").unwrap_or(0), "blocks up to the quote are stable");
        assert!(plain(&streamed.tail).iter().any(|l| l.contains("Last words")), "only the last block is re-rendered");
        // Text that does not extend what was read starts over.
        streamed.update("new", &theme);
        assert_eq!(plain(&streamed.lines().cloned().collect::<Vec<_>>()), ["new"]);
    }

    #[test]
    fn structure_renders_as_terminal_lines() {
        let md = "# Disk\n\nRoot is **92%** full, see `df -h`.\n\n- web01\n- web02\n  1. nested\n\n> quoted\n\n```bash\ndf -h /\n```\n";
        let lines = render(md, &Theme::dark());
        assert_eq!(
            plain(&lines),
            [
                "Disk",
                "",
                "Root is 92% full, see df -h.",
                "",
                "• web01",
                "• web02",
                "  1. nested",
                "",
                "▎ quoted",
                "",
                "  df -h /",
            ]
        );
        assert!(lines[0].spans[0].style.add_modifier.contains(Modifier::BOLD), "headings are bold");
        let bold = lines[2].spans.iter().find(|s| s.content == "92%").unwrap();
        assert!(bold.style.add_modifier.contains(Modifier::BOLD));
        let code = lines[10].spans.iter().filter(|s| !s.content.trim().is_empty()).count();
        assert!(code >= 2, "the fenced bash block is highlighted token by token: {:?}", lines[10]);
    }

    #[test]
    fn an_unfinished_stream_still_renders() {
        let lines = render("Checking:\n\n```yaml\nkey: value\n", &Theme::dark());
        assert_eq!(plain(&lines), ["Checking:", "", "  key: value"]);
    }

    #[test]
    fn tables_and_links_stay_readable() {
        let lines = render("| host | use |\n|---|---|\n| web01 | 92% |\n\n[docs](https://x.test)", &Theme::plain());
        assert_eq!(plain(&lines), ["host │ use │ ", "web01 │ 92% │ ", "", "docs (https://x.test)"]);
    }
}
