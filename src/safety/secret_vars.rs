//! Variables named like secrets. `echo "$AWS_SECRET_ACCESS_KEY"` or `printenv GITHUB_TOKEN` is a
//! read that changes nothing, yet its whole output is the secret, which would then reach the model:
//! like `/proc/PID/environ`, it needs an approval. The names are the ones the masking of command
//! lines already treats as secrets (`redact::is_secret_name`), so what is asked about here is what
//! would be masked there.

use super::words::Word;

/// Why `word` expands a variable named like a secret (`$DB_PASSWORD`, `${API_TOKEN:-x}`), or names
/// one in a program's own text (awk's `ENVIRON["X"]`, jq's `env.X` and `$ENV.X`, `getenv("X")`,
/// perl's `$ENV{X}`), if it does.
pub fn expands_a_secret(word: &Word) -> Option<String> {
    let expanded = if word.dynamic { variables_in(&word.text) } else { Vec::new() };
    expanded
        .into_iter()
        .chain(named_in_program_text(&word.text))
        .find(|name| crate::redact::is_secret_name(name))
        .map(|name| format!("reads `{name}`, a variable named like a secret (its value would reach the model)"))
}

/// Variables a program's text reads from its environment by name.
fn named_in_program_text(text: &str) -> Vec<&str> {
    static READS: std::sync::LazyLock<Option<regex::Regex>> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r#"(?:ENVIRON\[\s*["']|\benv\.|\$ENV\.|\$ENV\{\s*["']?|getenv\(\s*["']|\benv\[\s*["'])([A-Za-z_][A-Za-z0-9_]*)"#)
            .ok()
    });
    match READS.as_ref() {
        Some(reads) => reads.captures_iter(text).filter_map(|c| c.get(1)).map(|m| m.as_str()).collect(),
        // The pattern is a constant; were it ever broken, every program text would be asked about.
        None => vec!["unreadable_secret_pattern"],
    }
}

/// Why `printenv NAME…` prints a variable named like a secret, if it does.
pub fn prints_a_secret(program: &str, args: &[Word]) -> Option<String> {
    if program != "printenv" {
        return None;
    }
    args.iter()
        .map(|a| a.text.as_str())
        .filter(|a| !a.starts_with('-'))
        .find(|name| crate::redact::is_secret_name(name))
        .map(|name| format!("prints `{name}`, a variable named like a secret (its value would reach the model)"))
}

/// The names of the variables `$NAME` and `${NAME…}` in `text` (the word's text, expansions kept).
fn variables_in(text: &str) -> Vec<&str> {
    let bytes = text.as_bytes();
    let mut names = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'$' {
            i += 1;
            continue;
        }
        let start = if bytes.get(i + 1) == Some(&b'{') { i + 2 } else { i + 1 };
        // `${!NAME}` and `${#NAME}` name a variable too.
        let start = if matches!(bytes.get(start), Some(b'!' | b'#')) && start == i + 2 { start + 1 } else { start };
        let end = start + bytes[start..].iter().take_while(|b| b.is_ascii_alphanumeric() || **b == b'_').count();
        if end > start {
            names.push(&text[start..end]);
        }
        i = end.max(i + 1);
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dynamic(text: &str) -> Word {
        Word { text: text.into(), dynamic: true, ..Word::default() }
    }

    #[test]
    fn secret_names_are_found_in_every_expansion_form() {
        for text in
            ["$AWS_SECRET_ACCESS_KEY", "x${DB_PASSWORD}y", "${GITHUB_TOKEN:-none}", "${#API_KEY}", "${!VAULT_TOKEN}"]
        {
            assert!(expands_a_secret(&dynamic(text)).is_some(), "{text}");
        }
        for text in ["$HOME", "${PATH}", "$USER-$HOSTNAME", "$1", "cost$"] {
            assert!(expands_a_secret(&dynamic(text)).is_none(), "{text}");
        }
        // A literal word that merely shows a dollar sign expands nothing.
        assert!(expands_a_secret(&Word::literal("$DB_PASSWORD")).is_none());
        // A program's text that reads a secret-named variable by name.
        for text in [
            r#"BEGIN { print ENVIRON["AWS_SECRET_ACCESS_KEY"] }"#,
            "env.GITHUB_TOKEN",
            "$ENV.VAULT_TOKEN",
            r#"print $ENV{'DB_PASSWORD'}"#,
            r#"getenv("API_KEY")"#,
        ] {
            assert!(expands_a_secret(&Word::literal(text)).is_some(), "{text}");
        }
        assert!(expands_a_secret(&Word::literal(r#"BEGIN { print ENVIRON["HOME"] }"#)).is_none());
    }

    #[test]
    fn printenv_of_a_secret_name_needs_approval_and_of_others_does_not() {
        let args = |names: &[&str]| names.iter().map(|n| Word::literal(*n)).collect::<Vec<_>>();
        assert!(prints_a_secret("printenv", &args(&["GITHUB_TOKEN"])).is_some());
        assert!(prints_a_secret("printenv", &args(&["LANG", "HOME"])).is_none());
        assert!(prints_a_secret("echo", &args(&["GITHUB_TOKEN"])).is_none());
    }
}
