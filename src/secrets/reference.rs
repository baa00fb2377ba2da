//! `@service:host:field` references: what the model, the audit log, the
//! database and the screen see instead of a secret's value.

use std::sync::LazyLock;

use regex::Regex;

use super::SecretSource;

static REFERENCE: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"@([A-Za-z0-9_-]+):([A-Za-z0-9._-]+):([A-Za-z0-9_-]+)").ok());

/// Every reference in `text`, as secret names (`service:host:field`).
pub fn references(text: &str) -> Vec<String> {
    let Some(re) = REFERENCE.as_ref() else { return Vec::new() };
    re.captures_iter(text).map(|c| format!("{}:{}:{}", &c[1], &c[2], &c[3])).collect()
}

/// A command with its references resolved, and the values to mask wherever it is shown.
#[derive(Debug)]
pub struct Resolved {
    /// The text to execute.
    pub text: String,
    /// The values substituted (for [`mask_values`]).
    pub values: Vec<String>,
}

/// Replaces every reference by its value; unknown names are an error listing them.
pub fn resolve(text: &str, source: &dyn SecretSource) -> Result<Resolved, Vec<String>> {
    let Some(re) = REFERENCE.as_ref() else { return Ok(Resolved { text: text.into(), values: Vec::new() }) };
    let mut missing = Vec::new();
    let mut values = Vec::new();
    let resolved = re.replace_all(text, |c: &regex::Captures| {
        let name = format!("{}:{}:{}", &c[1], &c[2], &c[3]);
        match source.lookup(&name) {
            Some(v) => {
                values.push(v.clone());
                v
            }
            None => {
                missing.push(name);
                c[0].to_string()
            }
        }
    });
    if missing.is_empty() { Ok(Resolved { text: resolved.into_owned(), values }) } else { Err(missing) }
}

/// Replaces every occurrence of a secret value in `text` by `***` (for output
/// streams), also in the encodings a command could use to smuggle it past a
/// plain match: base64 (at each of the three alignments), hex, reversed and
/// URL-encoded.
pub fn mask_values(text: &str, values: &[String]) -> String {
    let mut out = text.to_string();
    for v in values.iter().filter(|v| v.len() >= 3) {
        for form in encodings(v) {
            if form.len() >= 3 {
                out = out.replace(form.as_str(), "***");
            }
        }
    }
    out
}

/// `value` and the encoded forms [`mask_values`] hides, longest first.
fn encodings(value: &str) -> Vec<String> {
    use base64::Engine;
    let b64 = base64::engine::general_purpose::STANDARD;
    let bytes = value.as_bytes();
    let mut forms =
        vec![value.to_string(), value.chars().rev().collect(), hex::encode(bytes), hex::encode_upper(bytes)];
    // base64 of a value embedded at any offset: the stable middle of each alignment.
    for pad in 0..3usize {
        let mut padded = vec![b'\0'; pad];
        padded.extend_from_slice(bytes);
        let encoded = b64.encode(&padded);
        let skip = if pad == 0 { 0 } else { 4 };
        let keep = (padded.len() / 3) * 4;
        if keep > skip + 4 {
            forms.push(encoded[skip..keep].trim_end_matches('=').to_string());
        }
    }
    let url: String = bytes
        .iter()
        .map(|&b| {
            if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect();
    forms.push(url.clone());
    forms.push(url.to_lowercase());
    forms.sort_by_key(|f| std::cmp::Reverse(f.len()));
    forms.dedup();
    forms
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Fixed;
    impl SecretSource for Fixed {
        fn lookup(&self, name: &str) -> Option<String> {
            (name == "db:db01:password").then(|| "s3cr3t".to_string())
        }
    }

    #[test]
    fn finds_resolves_and_masks() {
        let cmd = "PGPASSWORD=@db:db01:password psql -h db01 -c 'select 1'";
        assert_eq!(references(cmd), ["db:db01:password"]);
        let r = resolve(cmd, &Fixed).unwrap();
        assert_eq!(r.text, "PGPASSWORD=s3cr3t psql -h db01 -c 'select 1'");
        assert_eq!(mask_values("echo s3cr3t done", &r.values), "echo *** done");
        assert_eq!(resolve("x @api:web:token", &Fixed).unwrap_err(), ["api:web:token"]);
        assert!(references("ssh @web (a tag)").is_empty());
    }

    #[test]
    fn encoded_values_are_masked() {
        use base64::Engine;
        let secret = "hunter2-Sup3r!".to_string();
        let b64 = base64::engine::general_purpose::STANDARD;
        for leaked in [
            b64.encode(secret.as_bytes()),
            b64.encode(format!("x{secret}").as_bytes()),
            b64.encode(format!("xy{secret}\n").as_bytes()),
            hex::encode(secret.as_bytes()),
            secret.chars().rev().collect::<String>(),
            "hunter2-Sup3r%21".to_string(),
        ] {
            let masked = mask_values(&format!("out: {leaked} end"), std::slice::from_ref(&secret));
            assert!(masked.contains("***"), "{leaked} was not masked: {masked}");
            assert!(!masked.contains(&leaked), "{leaked} survived: {masked}");
        }
    }
}
