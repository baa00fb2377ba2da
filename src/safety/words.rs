//! How bash reads one word: quote removal, escapes in each quoting context,
//! globs, tilde, and the expansion forms the classifier refuses to evaluate.
//! Each reader gives the word's value (what the analysis checks) and its
//! [`Part`]s (what the rendering writes back), from the same scan.

use super::render::Part;

/// One word of a command, with what the shell would still do to it.
///
/// A read-only verdict needs the words the program will really see: a word
/// is *literal* when it has no expansion, no unquoted glob and nothing the
/// parser only knows by its shape (ANSI-C quoting, brace or arithmetic
/// expansion).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Word {
    /// The literal text with quotes removed (expansions kept verbatim).
    pub text: String,
    /// Whether part of the word is only known at run time (`$VAR`, `$(...)`).
    pub dynamic: bool,
    /// Whether an unquoted expansion may split it into several words.
    pub splits: bool,
    /// Whether it holds an unquoted glob character (`*`, `?`, `[`).
    pub glob: bool,
    /// Whether it starts with an unquoted glob: it may expand to an option.
    pub leading_glob: bool,
    /// A construct whose value the classifier does not compute, by name.
    pub opaque: Option<&'static str>,
    /// Which word of the parse this is (its rendering is `Parsed::renders[id]`);
    /// `None` for words made up by the analysis.
    pub id: Option<usize>,
    /// For a word made up by the analysis (the arguments xargs appends): the
    /// word it follows in the rendering.
    pub appended_to: Option<usize>,
}

impl Word {
    /// A plain literal word (tests, synthetic words).
    pub fn literal(text: impl Into<String>) -> Self {
        Self { text: text.into(), ..Self::default() }
    }

    /// A word only known at run time that may split (`xargs` input).
    pub fn unknown(text: impl Into<String>) -> Self {
        Self { text: text.into(), dynamic: true, splits: true, ..Self::default() }
    }

    /// Whether the program will see exactly `text`, as one word.
    pub fn is_literal(&self) -> bool {
        !self.dynamic && !self.glob && self.opaque.is_none()
    }
}

/// A shell variable a read-only command may set: a plain name with a lower-case
/// letter, so never an environment variable that changes what runs (`PATH`, `IFS`).
pub fn plain_variable(name: &str) -> Result<(), String> {
    let ident = name.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !ident {
        return Err(format!("sets `{name}`, which is not a plain name"));
    }
    if !name.chars().any(|c| c.is_ascii_lowercase()) {
        return Err(format!("sets `{name}`; upper-case names can change what runs (PATH, IFS, …)"));
    }
    // Lower-case names that programs read from the environment.
    let lower = name.to_ascii_lowercase();
    if lower.ends_with("_proxy")
        || lower.starts_with("lc_")
        || matches!(lower.as_str(), "home" | "path" | "ifs" | "cdpath")
    {
        return Err(format!("sets `{name}`, which programs read from the environment"));
    }
    Ok(())
}

/// An unquoted word: backslashes removed, globs and braces noted, with its parts.
pub(super) fn unquoted_word(raw: &str) -> (Word, Vec<Part>) {
    let mut word = Word { text: unescape(raw), ..Word::default() };
    // `{NAME}<file` makes bash assign a descriptor number to NAME (even PATH or IFS); `{}`
    // names nothing, so bash reads it as a plain word (find's file name placeholder).
    if raw.starts_with('{') && raw.contains('}') && raw != "{}" {
        word.opaque = Some("a `{NAME}` word (bash reads it as a descriptor-variable redirection)");
    }
    let mut escaped = false;
    for (i, c) in raw.chars().enumerate() {
        if escaped {
            escaped = false;
            continue;
        }
        match c {
            '\\' => escaped = true,
            '*' | '?' | '[' => {
                word.glob = true;
                word.leading_glob |= i == 0;
            }
            _ => {}
        }
    }
    if has_brace_expansion(raw) {
        word.opaque = Some("brace expansion");
    }
    if let Some(rest) = raw.strip_prefix('~') {
        let name_end = rest.find('/').unwrap_or(rest.len());
        if name_end > 0 {
            // `~sys` is another user's home, which may be /dev (then `~sys/tcp/…` is a connection).
            word.opaque = word.opaque.or(Some("a `~user` home folder (any folder: /dev, /proc…)"));
        } else {
            // `~` is the login user's home, only known on the host.
            word.dynamic = true;
        }
    }
    // `curl http://h:9200/_cluster/health?pretty`: a `?` or `*` in a URL is meant for the server,
    // never a file pattern. The word is read as literal text, and the rendering quotes it, so what
    // runs is that text whatever files exist.
    if word.glob && word.opaque.is_none() && !word.dynamic && raw.contains("://") {
        word.glob = false;
        word.leading_glob = false;
        return (word.clone(), vec![Part::Literal(word.text)]);
    }
    let parts = match word.opaque {
        Some(what) => vec![Part::Opaque(what)],
        None => unquoted_parts(raw),
    };
    (word, parts)
}

/// The parts of an unquoted word: escaped and ordinary characters are literal;
/// `*`, `?`, a simple bracket expression and a leading `~NAME` stay bare, so
/// the shell still expands them as it would have.
fn unquoted_parts(raw: &str) -> Vec<Part> {
    let chars: Vec<char> = raw.chars().collect();
    let mut parts = Vec::new();
    let mut literal = String::new();
    let bare = |parts: &mut Vec<Part>, literal: &mut String, text: String| {
        if !literal.is_empty() {
            parts.push(Part::Literal(std::mem::take(literal)));
        }
        parts.push(Part::Bare(text));
    };
    let mut i = 0;
    if chars.first() == Some(&'~') {
        let name_end = chars[1..]
            .iter()
            .position(|c| !(c.is_ascii_alphanumeric() || "_.-".contains(*c)))
            .map_or(chars.len(), |p| p + 1);
        let name_ok = name_end == 1 || chars[1].is_ascii_alphanumeric() || chars[1] == '_';
        if name_ok && (name_end == chars.len() || chars[name_end] == '/') {
            bare(&mut parts, &mut literal, chars[..name_end].iter().collect());
            i = name_end;
        }
    }
    while i < chars.len() {
        let c = chars[i];
        match c {
            '\\' => {
                // A backslash before a new line joins the lines: both disappear.
                if let Some(&next) = chars.get(i + 1) {
                    if next != '\n' {
                        literal.push(next);
                    }
                    i += 2;
                    continue;
                }
                literal.push('\\');
            }
            '*' | '?' => bare(&mut parts, &mut literal, c.to_string()),
            '[' => {
                let close = chars[i + 1..].iter().position(|&c| c == ']').map(|p| i + 1 + p);
                let simple = close.is_some_and(|end| {
                    end > i + 1 && chars[i + 1..end].iter().all(|c| c.is_ascii_alphanumeric() || "_.-!^".contains(*c))
                });
                match close.filter(|_| simple) {
                    Some(end) => {
                        bare(&mut parts, &mut literal, chars[i..=end].iter().collect());
                        i = end + 1;
                        continue;
                    }
                    None => literal.push('['),
                }
            }
            _ => literal.push(c),
        }
        i += 1;
    }
    if !literal.is_empty() {
        parts.push(Part::Literal(literal));
    }
    parts
}

/// The value of text inside double quotes: a backslash is removed only before
/// `$`, `` ` ``, `"`, `\` and a new line (which it joins away); before
/// anything else it stays.
pub(super) fn double_quoted(s: &str) -> String {
    unescape_before(s, &['$', '`', '"', '\\'])
}

/// The value of the text of a here-document whose delimiter is not quoted:
/// as in double quotes, except that `"` keeps its backslash.
pub(super) fn here_document(s: &str) -> String {
    unescape_before(s, &['$', '`', '\\'])
}

fn unescape_before(s: &str, special: &[char]) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.peek() {
            Some('\n') => {
                chars.next();
            }
            Some(&n) if special.contains(&n) => {
                out.push(n);
                chars.next();
            }
            _ => out.push('\\'),
        }
    }
    out
}

/// The parts of a `case` pattern: plain text and `*`/`?` only; anything else
/// (brackets, extended globs, quotes) is not written back.
pub(super) fn pattern_parts(raw: &str) -> Vec<Part> {
    let mut parts = Vec::new();
    let mut literal = String::new();
    for c in raw.chars() {
        match c {
            '*' | '?' => {
                if !literal.is_empty() {
                    parts.push(Part::Literal(std::mem::take(&mut literal)));
                }
                parts.push(Part::Bare(c.to_string()));
            }
            c if c.is_ascii_alphanumeric() || "_.-/:@%+,".contains(c) => literal.push(c),
            _ => return vec![Part::Opaque("a case pattern with special characters")],
        }
    }
    if !literal.is_empty() {
        parts.push(Part::Literal(literal));
    }
    parts
}

/// Whether unquoted source text holds `{a,b}` or `{1..3}`.
pub(super) fn has_brace_expansion(raw: &str) -> bool {
    let mut depth_start = None;
    let mut escaped = false;
    let mut quote = None;
    for (i, c) in raw.char_indices() {
        if escaped {
            escaped = false;
            continue;
        }
        match (quote, c) {
            (_, '\\') if quote != Some('\'') => escaped = true,
            (None, '\'' | '"') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (None, '{') => depth_start = Some(i),
            (None, '}') => {
                if let Some(start) = depth_start.take() {
                    let inside = &raw[start + 1..i];
                    if inside.contains(',') || inside.contains("..") {
                        return true;
                    }
                }
            }
            _ => {}
        }
    }
    false
}

/// Why a `${…}` expansion evaluates code or assigns, if it does: array
/// subscripts and substring offsets are arithmetic (which runs `$(…)` in a
/// variable's value), and `${x:=v}` assigns.
pub(super) fn expansion_risk(text: &str) -> Option<&'static str> {
    let inner = text.strip_prefix("${").and_then(|t| t.strip_suffix('}'))?;
    if inner.starts_with('!') {
        return Some("an indirect expansion (${!x} evaluates the variable named by x)");
    }
    let inner = inner.strip_prefix('#').unwrap_or(inner);
    let name_len = inner.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').count();
    let rest = &inner[name_len..];
    if text.contains("$((") || rest.starts_with('[') {
        return Some("an array subscript or arithmetic in an expansion");
    }
    if rest.contains('@') {
        return Some("a transforming expansion (${x@P} runs prompt expansion)");
    }
    if rest.starts_with(":=") || rest.starts_with('=') {
        return Some("an assigning expansion (${x:=v})");
    }
    if rest.starts_with(':') && !rest.starts_with(":-") && !rest.starts_with(":+") && !rest.starts_with(":?") {
        return Some("a substring offset (arithmetic) in an expansion");
    }
    None
}

/// A stable name for a node kind the word walker does not compute.
pub(super) fn opaque_kind(kind: &str) -> &'static str {
    match kind {
        "subscript" => "array subscript",
        "extglob_pattern" => "extended glob",
        _ => "a shell construct the classifier does not evaluate",
    }
}

/// Removes backslash escapes from an unquoted word.
pub(super) fn unescape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            // A backslash before a new line joins the lines: both disappear.
            if let Some(next) = chars.next().filter(|n| *n != '\n') {
                out.push(next);
            }
        } else {
            out.push(c);
        }
    }
    out
}
