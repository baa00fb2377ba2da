//! Masking of secrets in command lines before they reach the audit log, the
//! history table, logs or the screen.
//!
//! This is a last line of defence for commands typed by people; the agent
//! works with `@service:host:field` references that never hold values.

use std::sync::LazyLock;

use regex::Regex;

/// What replaces a secret.
pub const MASK: &str = "***";

static RULES: LazyLock<Vec<(Regex, &'static str)>> = LazyLock::new(|| {
    let rules: [(&str, &str); 11] = [
        // A private key block (PEM), whole.
        (r#"(-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----)[\s\S]*?(-----END [A-Z0-9 ]*PRIVATE KEY-----)"#, "${1}***${2}"),
        // password: x / "api_key": "x" (YAML, JSON, logs an answer quotes)
        (
            r#"(?i)((?:^|[\s{,"'])"?(?:password|passwd|secret|token|api_key|apikey|access_key|client_secret)"?\s*:\s*)("[^"]*"|'[^']*'|[^\s,}]+)"#,
            "${1}***",
        ),
        // --password=x, --token x, --api-key=x, --secret x
        (
            r#"(?i)(--[a-z0-9-]*(?:password|passwd|token|secret|api-key|apikey)[= ])("[^"]*"|'[^']*'|[^\s;&|]+)"#,
            "${1}***",
        ),
        // PASSWORD=x, DB_TOKEN=x, AWS_SECRET_ACCESS_KEY=x as assignments
        (
            r#"(?i)\b([a-z0-9_]*(?:password|passwd|token|secret|api_key|apikey|access_key)[a-z0-9_]*=)("[^"]*"|'[^']*'|[^\s;&|]+)"#,
            "${1}***",
        ),
        // mysql -pSECRET / -p'SECRET'
        (r#"(\bmysql(?:dump|admin)?\b[^|;&]*?\s-p)("[^"]*"|'[^']*'|[^\s"']+)"#, "${1}***"),
        // echo secret | sudo -S
        (r#"(\b(?:echo|printf)\s+)("[^"]*"|'[^']*'|\S+)(\s*\|\s*sudo\s+(?:-\S+\s+)*-S)"#, "${1}***${3}"),
        // scheme://user:password@host
        (r#"(://[^/\s:@]+:)([^@\s/]+)(@)"#, "${1}***${3}"),
        // Authorization: Bearer x / token x
        (r#"(?i)(authorization:\s*(?:bearer|token|basic)\s+)([^\s"']+)"#, "${1}***"),
        // X-API-Key: x, PRIVATE-TOKEN: x, X-Vault-Token: x
        (
            r#"(?i)((?:x-api-key|api-key|apikey|x-auth-token|private-token|x-vault-token|x-access-token)\s*:\s*)([^\s"']+)"#,
            "${1}***",
        ),
        // curl -u user:password, --user=user:password
        (r#"((?:\s-u|\s--user)[= ]?\s*['"]?[^\s:'"]+:)([^\s'"]+)"#, "${1}***"),
        // sshpass -p password
        (r#"(\bsshpass\s+-p\s*)("[^"]*"|'[^']*'|\S+)"#, "${1}***"),
    ];
    rules.into_iter().filter_map(|(pattern, replacement)| Regex::new(pattern).ok().map(|r| (r, replacement))).collect()
});

static SECRET_NAME: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(r"(?i)passw|passphrase|token|secret|api[_-]?key|access[_-]?key|private[_-]?key|credential|authori[sz]ation|(^|[_-])auth([_-]|$)|cookie|session[_-]?id|bearer").ok()
});

/// Whether a variable, header, field or argument called `name` usually holds a secret
/// (`DB_PASSWORD`, `Authorization`, `api_key`, `x-auth-token`): its value is masked.
pub fn is_secret_name(name: &str) -> bool {
    SECRET_NAME.as_ref().is_none_or(|r| r.is_match(name))
}

/// Words, in ASCII lower case, of which every rule in [`RULES`] needs one: ASCII text holding
/// none of them matches no rule, so it is returned as it is without running (or compiling, a few
/// milliseconds of a short-lived process) the rules. Other text always runs them: case folding maps
/// some other characters onto these letters (the Kelvin sign is a `k`).
const NEEDLES: [&str; 14] = [
    "private key",
    "passw",
    "secret",
    "token",
    "api_key",
    "apikey",
    "access_key",
    "api-key",
    "mysql",
    "sudo",
    "://",
    "authorization",
    "-u",
    "sshpass",
];

/// Whether `command` can match a rule at all (see [`NEEDLES`]).
fn may_hold_a_secret(command: &str) -> bool {
    if !command.is_ascii() {
        return true;
    }
    let lower = command.to_ascii_lowercase();
    NEEDLES.iter().any(|needle| lower.contains(needle))
}

/// A secret reference (`@service:host:field`) names a secret without holding it.
fn is_reference(value: &str) -> bool {
    let v = value.trim_matches(|c| c == '"' || c == '\'');
    v.starts_with('@') && v.matches(':').count() == 2 && !v.contains(char::is_whitespace)
}

/// Returns `command` with every recognised secret replaced by `***`;
/// secret references are kept, since they are what logs should show.
pub fn redact_command(command: &str) -> String {
    let mut out = command.to_string();
    if !may_hold_a_secret(command) {
        return out;
    }
    for (rule, replacement) in RULES.iter() {
        out = rule
            .replace_all(&out, |caps: &regex::Captures| {
                if caps.get(2).is_some_and(|v| is_reference(v.as_str())) {
                    return caps[0].to_string();
                }
                let mut expanded = String::new();
                caps.expand(replacement, &mut expanded);
                expanded
            })
            .into_owned();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::redact_command;

    #[test]
    fn masks_common_secret_shapes() {
        let cases = [
            ("mysql -u root -phunter2 -e 'show databases'", "mysql -u root -p*** -e 'show databases'"),
            ("curl --password=hunter2 https://x", "curl --password=*** https://x"),
            ("tool --api-key 'abc def' run", "tool --api-key *** run"),
            ("PGPASSWORD=s3cret psql -h db", "PGPASSWORD=*** psql -h db"),
            ("echo hunter2 | sudo -S systemctl restart nginx", "echo *** | sudo -S systemctl restart nginx"),
            ("git clone https://bob:tok123@git.example/repo", "git clone https://bob:***@git.example/repo"),
            ("curl -H 'Authorization: Bearer abc.def' x", "curl -H 'Authorization: Bearer ***' x"),
            ("curl -u admin:hunter2 https://x", "curl -u admin:*** https://x"),
            ("curl --user='admin:hunter2' https://x", "curl --user='admin:***' https://x"),
            ("curl -u admin https://x", "curl -u admin https://x"),
            ("sshpass -p 'hunter2' ssh db01", "sshpass -p *** ssh db01"),
            ("curl -H 'X-API-Key: abc123' x", "curl -H 'X-API-Key: ***' x"),
            ("curl -H 'PRIVATE-TOKEN: glpat-xyz' x", "curl -H 'PRIVATE-TOKEN: ***' x"),
            ("db:\n  password: hunter2\n  host: db01", "db:\n  password: ***\n  host: db01"),
            (r#"{"api_key": "sk-abc", "region": "eu"}"#, r#"{"api_key": ***, "region": "eu"}"#),
            (
                "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk\n-----END OPENSSH PRIVATE KEY-----",
                "-----BEGIN OPENSSH PRIVATE KEY-----***-----END OPENSSH PRIVATE KEY-----",
            ),
        ];
        for (input, expected) in cases {
            assert_eq!(redact_command(input), expected, "input: {input}");
            assert!(super::may_hold_a_secret(input), "the pre-check passes over {input}");
        }
    }

    #[test]
    fn the_pre_check_skips_only_text_no_rule_can_match() {
        // Each rule's own words, in any case, reach the rules.
        for input in [
            "X PaSsWd: y",
            "--ToKeN=y",
            "A_Access_Key=y",
            "MYSQL -py",
            "echo y | SUDO -S x",
            "x://a:b@c",
            "x -U a:b",
            "SSHPASS -p y",
            "-----BEGIN RSA PRIVATE KEY-----",
            "apiKey: y",
        ] {
            assert!(super::may_hold_a_secret(input), "{input}");
        }
        // Text with other characters always runs the rules: `toKen` with the Kelvin sign folds to a rule's word.
        assert!(super::may_hold_a_secret("--to\u{212a}en=hunter2"));
        assert_eq!(redact_command("--to\u{212a}en=hunter2"), "--to\u{212a}en=***");
        for plain in
            ["terraform apply -input=false -no-color /tmp/p/change.tfplan", "systemctl restart nginx", "ls -la /srv"]
        {
            assert!(!super::may_hold_a_secret(plain), "{plain}");
            assert_eq!(redact_command(plain), plain);
        }
    }

    #[test]
    fn keeps_references_and_shell_separators() {
        assert_eq!(redact_command("echo token=@api:web:token; id"), "echo token=@api:web:token; id");
        assert_eq!(redact_command("tool --password=@db:h:password"), "tool --password=@db:h:password");
        assert_eq!(redact_command("TOKEN=abc; id && X_SECRET=y|cat"), "TOKEN=***; id && X_SECRET=***|cat");
    }

    #[test]
    fn secret_names_are_recognised_and_ordinary_ones_are_not() {
        for name in ["DB_PASSWORD", "Authorization", "api_key", "x-auth-token", "GITHUB_TOKEN", "client_secret", "AUTH"]
        {
            assert!(super::is_secret_name(name), "{name}");
        }
        for name in ["REGION", "Accept", "path", "author", "LOG_LEVEL", "keyboard"] {
            assert!(!super::is_secret_name(name), "{name}");
        }
    }

    #[test]
    fn leaves_ordinary_commands_alone() {
        for cmd in ["df -h", "mkdir -p /var/tmp/x", "ssh -p 2222 host uptime", "grep -r token_count src/"] {
            assert_eq!(redact_command(cmd), cmd);
        }
    }
}
