//! How deep a YAML text nests, found in one pass over its bytes without parsing it.
//!
//! Nesting comes from flow collections (`[`, `{`), block collections (each deeper indentation, and
//! each `- `, `? ` starting a nested collection on one line, as in `- - - x`) and a key's `: `.
//! Quoted scalars, block scalars (`|`, `>`) and comments are skipped, so brackets inside them do not
//! count. The count is an upper bound close to the parser's (a plain scalar continued on ever deeper
//! lines counts each line as a level), which is what a limit far above real files needs.

/// The deepest nesting merlya reads: real files (Kubernetes CRDs with their OpenAPI schemas
/// included) stay under 50; the YAML parser itself stops at 128, but only after reading it all.
pub const MAX_YAML_DEPTH: usize = 100;

/// The line and column (1-based) where `text` nests deeper than `limit`, if it does.
pub(super) fn first_too_deep(text: &str, limit: usize) -> Option<(usize, usize)> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut scan = Scan { limit, ..Scan::default() };
    for (index, line) in text.split('\n').enumerate() {
        let line = line.strip_suffix('\r').unwrap_or(line).as_bytes();
        if let Some(column) = scan.line(line) {
            return Some((index + 1, column + 1));
        }
    }
    None
}

#[derive(Default)]
struct Scan {
    limit: usize,
    /// Indentation of the enclosing block lines, strictly increasing.
    block: Vec<usize>,
    /// Open flow collections, and the block depth they were opened at.
    flow: usize,
    flow_base: usize,
    /// Inside a quoted scalar that goes on to the next line.
    quote: Option<u8>,
    /// Inside a block scalar: its lines are those indented deeper than this.
    block_scalar: Option<usize>,
}

fn is_blank(b: Option<&u8>) -> bool {
    matches!(b, None | Some(b' ' | b'\t'))
}

/// Where the quoted scalar opened by `quote` ends in `line` from `from` (the index after its closing
/// quote), or `None` when it goes on past the line.
fn quote_end(line: &[u8], from: usize, quote: u8) -> Option<usize> {
    let mut i = from;
    while i < line.len() {
        match line[i] {
            b'\\' if quote == b'"' => i += 2,
            b'\'' if quote == b'\'' && line.get(i + 1) == Some(&b'\'') => i += 2,
            c if c == quote => return Some(i + 1),
            _ => i += 1,
        }
    }
    None
}

impl Scan {
    /// Scans one line; the 0-based column where the limit is passed, if it is.
    fn line(&mut self, line: &[u8]) -> Option<usize> {
        let indent = line.iter().take_while(|b| **b == b' ').count();
        if let Some(parent) = self.block_scalar {
            if indent == line.len() || indent > parent {
                return None;
            }
            self.block_scalar = None;
        }
        let mut i = 0;
        let mut token_start = true;
        // The block collections around this line, and those it opens (`- `, `? `, `key: `).
        let mut depth = 0;
        if let Some(quote) = self.quote {
            match quote_end(line, 0, quote) {
                None => return None,
                Some(end) => {
                    self.quote = None;
                    i = end;
                    token_start = false;
                }
            }
            depth = self.block.len();
        } else if self.flow == 0 {
            let rest = &line[indent..];
            if rest.is_empty() || rest[0] == b'#' || (indent == 0 && rest[0] == b'%') {
                return None;
            }
            if indent == 0 && (rest.starts_with(b"---") || rest.starts_with(b"...")) && is_blank(rest.get(3)) {
                self.block.clear();
                i = 3;
            } else {
                while self.block.last().is_some_and(|&top| top >= indent) {
                    self.block.pop();
                }
                depth = self.block.len();
                self.block.push(indent);
                i = indent;
            }
        }
        let mut mapping = false;
        while i < line.len() {
            let c = line[i];
            if c == b'#' && (i == 0 || is_blank(line.get(i - 1))) {
                return None;
            }
            if self.flow > 0 {
                match c {
                    b'[' | b'{' => {
                        self.flow += 1;
                        if self.flow_base + self.flow > self.limit {
                            return Some(i);
                        }
                        token_start = true;
                    }
                    b']' | b'}' => {
                        self.flow -= 1;
                        token_start = false;
                    }
                    b',' => token_start = true,
                    b':' if is_blank(line.get(i + 1))
                        || matches!(line.get(i + 1), Some(b',' | b'[' | b']' | b'{' | b'}' | b'"' | b'\''))
                        || (i > 0 && matches!(line[i - 1], b'"' | b'\'')) =>
                    {
                        token_start = true
                    }
                    b'"' | b'\'' if token_start => match quote_end(line, i + 1, c) {
                        Some(end) => {
                            i = end;
                            token_start = false;
                            continue;
                        }
                        None => {
                            self.quote = Some(c);
                            return None;
                        }
                    },
                    b' ' | b'\t' => {}
                    _ => token_start = false,
                }
                i += 1;
                continue;
            }
            match c {
                b'-' | b'?' if token_start && is_blank(line.get(i + 1)) => {
                    depth += 1;
                    if depth > self.limit {
                        return Some(i);
                    }
                }
                b':' if is_blank(line.get(i + 1)) => {
                    if !mapping {
                        mapping = true;
                        depth += 1;
                        if depth > self.limit {
                            return Some(i);
                        }
                    }
                    token_start = true;
                }
                b'[' | b'{' if token_start => {
                    self.flow = 1;
                    self.flow_base = depth;
                    if depth + 1 > self.limit {
                        return Some(i);
                    }
                }
                b'"' | b'\'' if token_start => match quote_end(line, i + 1, c) {
                    Some(end) => {
                        i = end;
                        token_start = false;
                        continue;
                    }
                    None => {
                        self.quote = Some(c);
                        return None;
                    }
                },
                b'|' | b'>' if token_start => {
                    self.block_scalar = Some(indent);
                    return None;
                }
                // An anchor, a tag or an alias: the node (or nothing) follows it.
                b'&' | b'!' | b'*' if token_start => {
                    while i < line.len() && !is_blank(line.get(i)) {
                        i += 1;
                    }
                    continue;
                }
                b' ' | b'\t' => {}
                _ => token_start = false,
            }
            i += 1;
        }
        None
    }
}
