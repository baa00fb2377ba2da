//! Ansible host ranges: `web[01:03]`, `db[a:c]`, `node[0:10:2]`.

/// Expands every `[start:end(:step)]` in `pattern`; a name without a range is returned as is.
pub fn expand(pattern: &str) -> Result<Vec<String>, String> {
    let Some(open) = pattern.find('[') else { return Ok(vec![pattern.to_string()]) };
    let close = pattern[open..].find(']').map(|i| open + i).ok_or_else(|| format!("{pattern:?}: `[` without `]`"))?;
    let (prefix, inner, suffix) = (&pattern[..open], &pattern[open + 1..close], &pattern[close + 1..]);
    let parts: Vec<&str> = inner.split(':').collect();
    let (start, end, step) = match parts.as_slice() {
        [s, e] => (*s, *e, 1usize),
        [s, e, st] => (*s, *e, st.parse::<usize>().map_err(|_| format!("{pattern:?}: bad step {st:?}"))?),
        _ => return Err(format!("{pattern:?}: expected [start:end] or [start:end:step]")),
    };
    if step == 0 {
        return Err(format!("{pattern:?}: step cannot be 0"));
    }
    let items: Vec<String> = if let (Ok(a), Ok(b)) = (start.parse::<usize>(), end.parse::<usize>()) {
        if a > b {
            return Err(format!("{pattern:?}: range start {a} is after end {b}"));
        }
        // Leading zeros in the start set the width: web[01:10] → web01 … web10.
        let width = if start.starts_with('0') { start.len() } else { 0 };
        (a..=b).step_by(step).map(|n| format!("{n:0width$}")).collect()
    } else if let (Some(a), Some(b)) = (single_letter(start), single_letter(end)) {
        if a > b {
            return Err(format!("{pattern:?}: range start {a} is after end {b}"));
        }
        (a..=b).step_by(step).map(String::from).collect()
    } else {
        return Err(format!("{pattern:?}: range bounds must be numbers or single letters"));
    };
    let mut out = Vec::new();
    for item in items {
        for rest in expand(suffix)? {
            out.push(format!("{prefix}{item}{rest}"));
        }
    }
    Ok(out)
}

fn single_letter(s: &str) -> Option<char> {
    let mut chars = s.chars();
    match (chars.next(), chars.next()) {
        (Some(c), None) if c.is_ascii_alphabetic() => Some(c),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::expand;

    #[test]
    fn numeric_alpha_step_and_nested() {
        assert_eq!(expand("web[01:03]").unwrap(), ["web01", "web02", "web03"]);
        assert_eq!(expand("db-[a:c].lan").unwrap(), ["db-a.lan", "db-b.lan", "db-c.lan"]);
        assert_eq!(expand("n[0:4:2]").unwrap(), ["n0", "n2", "n4"]);
        assert_eq!(expand("r[1:2]c[1:2]").unwrap(), ["r1c1", "r1c2", "r2c1", "r2c2"]);
        assert_eq!(expand("plain").unwrap(), ["plain"]);
    }

    #[test]
    fn bad_ranges_are_errors() {
        assert!(expand("web[03:01]").is_err());
        assert!(expand("web[1:x]").is_err());
        assert!(expand("web[1:3").is_err());
        assert!(expand("web[1:3:0]").is_err());
    }
}
