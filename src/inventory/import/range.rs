//! Ansible host ranges: `web[01:03]`, `db[a:c]`, `node[0:10:2]`.
//!
//! A pattern is parsed and its host count computed before anything is
//! expanded, so `node[0:2000000]` is refused at once instead of filling memory;
//! expansion then costs time linear in the hosts it yields.

/// The most hosts one import may hold (ranges included); a range that would
/// take an import past it is refused, naming its line.
pub const MAX_IMPORT_HOSTS: usize = 10_000;

/// One piece of a pattern: literal text or a range.
enum Part<'a> {
    Literal(&'a str),
    Numbers { start: usize, end: usize, step: usize, width: usize },
    Letters { start: u8, end: u8, step: usize },
}

impl Part<'_> {
    /// How many values the piece yields: counted in 128 bits, so `n[0:18446744073709551615]`
    /// (2^64 values) is not wrapped round to 0 hosts.
    fn len(&self) -> u128 {
        match *self {
            Part::Literal(_) => 1,
            Part::Numbers { start, end, step, .. } => ((end - start) / step) as u128 + 1,
            Part::Letters { start, end, step } => (usize::from(end - start) / step) as u128 + 1,
        }
    }

    /// The piece's `index`th value, appended to `out`.
    fn push(&self, index: usize, out: &mut String) {
        use std::fmt::Write;
        match *self {
            Part::Literal(text) => out.push_str(text),
            Part::Numbers { start, step, width, .. } => {
                let _ = write!(out, "{:0width$}", start + index * step);
            }
            Part::Letters { start, step, .. } => {
                // index * step <= end - start, so this stays within the letters.
                out.push(char::from(start + u8::try_from(index * step).unwrap_or(0)))
            }
        }
    }
}

/// How many names the parts make; saturates on overflow.
fn count(parts: &[Part<'_>]) -> u128 {
    parts.iter().fold(1u128, |n, part| n.saturating_mul(part.len()))
}

/// Expands every `[start:end(:step)]` in `pattern`; a name without a range is
/// returned as is. `already` hosts are in the import so far: a pattern that
/// would take it past [`MAX_IMPORT_HOSTS`] is an error, found before expanding.
pub fn expand(pattern: &str, already: usize) -> Result<Vec<String>, String> {
    let parts = parse(pattern)?;
    let counted = count(&parts);
    let total = match usize::try_from(counted) {
        Ok(total) if total.saturating_add(already) <= MAX_IMPORT_HOSTS => total,
        _ => {
            let before = if already > 0 { format!(" after the {already} before it") } else { String::new() };
            let many = if counted == u128::MAX { "more than 10^38".to_string() } else { counted.to_string() };
            return Err(format!(
                "{pattern:?} would expand to {many} hosts{before}, more than the {MAX_IMPORT_HOSTS} one import may hold; split the range"
            ));
        }
    };
    let mut out = Vec::with_capacity(total);
    for n in 0..total {
        let mut name = String::with_capacity(pattern.len());
        // Mixed radix: the last range varies fastest, as Ansible orders them.
        let mut rest = n;
        let mut indices = vec![0; parts.len()];
        for (slot, part) in indices.iter_mut().zip(&parts).rev() {
            // Every part's length divides into `total`, which fits a usize.
            let len = usize::try_from(part.len()).unwrap_or(usize::MAX);
            *slot = rest % len;
            rest /= len;
        }
        for (part, index) in parts.iter().zip(indices) {
            part.push(index, &mut name);
        }
        out.push(name);
    }
    Ok(out)
}

fn parse(pattern: &str) -> Result<Vec<Part<'_>>, String> {
    let mut parts = Vec::new();
    let mut rest = pattern;
    while let Some(open) = rest.find('[') {
        let close = rest[open..].find(']').map(|i| open + i).ok_or_else(|| format!("{pattern:?}: `[` without `]`"))?;
        if open > 0 {
            parts.push(Part::Literal(&rest[..open]));
        }
        parts.push(parse_range(pattern, &rest[open + 1..close])?);
        rest = &rest[close + 1..];
    }
    if !rest.is_empty() {
        parts.push(Part::Literal(rest));
    }
    Ok(parts)
}

fn parse_range<'a>(pattern: &str, inner: &str) -> Result<Part<'a>, String> {
    let fields: Vec<&str> = inner.split(':').collect();
    let (start, end, step) = match fields.as_slice() {
        [s, e] => (*s, *e, 1usize),
        [s, e, st] => (*s, *e, st.parse::<usize>().map_err(|_| format!("{pattern:?}: bad step {st:?}"))?),
        _ => return Err(format!("{pattern:?}: expected [start:end] or [start:end:step]")),
    };
    if step == 0 {
        return Err(format!("{pattern:?}: step cannot be 0"));
    }
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if digits(start) && digits(end) {
        let number = |s: &str| s.parse::<usize>().map_err(|_| format!("{pattern:?}: bound {s} is too large"));
        let (a, b) = (number(start)?, number(end)?);
        if a > b {
            return Err(format!("{pattern:?}: range start {a} is after end {b}"));
        }
        // Leading zeros in the start set the width: web[01:10] → web01 … web10.
        let width = if start.starts_with('0') { start.len() } else { 0 };
        Ok(Part::Numbers { start: a, end: b, step, width })
    } else if let (Some(a), Some(b)) = (single_letter(start), single_letter(end)) {
        if a > b {
            return Err(format!("{pattern:?}: range start {} is after end {}", char::from(a), char::from(b)));
        }
        Ok(Part::Letters { start: a, end: b, step })
    } else {
        Err(format!("{pattern:?}: range bounds must be numbers or single letters"))
    }
}

fn single_letter(s: &str) -> Option<u8> {
    match s.as_bytes() {
        [c] if c.is_ascii_alphabetic() => Some(*c),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::{MAX_IMPORT_HOSTS, count, expand, parse};

    #[test]
    fn numeric_alpha_step_and_nested() {
        assert_eq!(expand("web[01:03]", 0).unwrap(), ["web01", "web02", "web03"]);
        assert_eq!(expand("db-[a:c].lan", 0).unwrap(), ["db-a.lan", "db-b.lan", "db-c.lan"]);
        assert_eq!(expand("n[0:4:2]", 0).unwrap(), ["n0", "n2", "n4"]);
        assert_eq!(expand("n[0:5:2]", 0).unwrap(), ["n0", "n2", "n4"]);
        assert_eq!(expand("x[a:e:2]", 0).unwrap(), ["xa", "xc", "xe"]);
        assert_eq!(expand("r[1:2]c[1:2]", 0).unwrap(), ["r1c1", "r1c2", "r2c1", "r2c2"]);
        assert_eq!(expand("[8:10]x", 0).unwrap(), ["8x", "9x", "10x"]);
        assert_eq!(expand("plain", 0).unwrap(), ["plain"]);
    }

    #[test]
    fn bad_ranges_are_errors() {
        assert!(expand("web[03:01]", 0).is_err());
        assert!(expand("web[1:x]", 0).is_err());
        assert!(expand("web[1:3", 0).is_err());
        assert!(expand("web[1:3:0]", 0).is_err());
        assert!(expand("web[1:3]x[2", 0).is_err());
        assert!(expand("web[0:99999999999999999999999]", 0).unwrap_err().contains("too large"));
    }

    #[test]
    fn huge_ranges_are_counted_not_expanded() {
        let started = std::time::Instant::now();
        assert_eq!(count(&parse("node[0:2000000]").unwrap()), 2_000_001);
        assert_eq!(count(&parse("a[0:4294967295]b[0:4294967295]c[0:4294967295]").unwrap()), 1 << 96);
        let err = expand("node[0:2000000]", 0).unwrap_err();
        assert!(err.contains("2000001 hosts") && err.contains(&MAX_IMPORT_HOSTS.to_string()), "{err}");
        assert!(expand("a[0:4294967295]b[0:4294967295]c[0:4294967295]", 0).is_err());
        assert!(started.elapsed() < std::time::Duration::from_secs(1), "{:?}", started.elapsed());
        // The limit counts the hosts already in the import.
        assert_eq!(expand("n[1:10000]", 0).unwrap().len(), MAX_IMPORT_HOSTS);
        let err = expand("n[1:10]", MAX_IMPORT_HOSTS - 5).unwrap_err();
        assert!(err.contains("after the 9995 before it"), "{err}");
    }

    #[test]
    fn a_range_of_every_usize_is_refused_not_read_as_no_host() {
        // (2^64 - 1 - 0) / 1 + 1 wrapped round to 0 in a usize: zero hosts, no error.
        let err = expand("n[0:18446744073709551615]", 0).unwrap_err();
        assert!(err.contains("n[0:18446744073709551615]"), "names the range: {err}");
        assert!(err.contains("18446744073709551616 hosts"), "counts it: {err}");
        assert!(err.contains(&MAX_IMPORT_HOSTS.to_string()), "names the limit: {err}");
        let err = expand("a[0:18446744073709551615]b[0:18446744073709551615]", 0).unwrap_err();
        assert!(err.contains("hosts") && err.contains(&MAX_IMPORT_HOSTS.to_string()), "{err}");
    }
}
