use std::path::Path;

use super::*;

fn parse(text: &str, env: &[(&str, &str)]) -> Result<Config, ConfigError> {
    let env: Vec<(String, String)> = env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    Config::parse(Path::new("/h/config.yaml"), text, &env)
}

#[test]
fn empty_file_gives_defaults() {
    assert_eq!(parse("", &[]).unwrap(), Config::default());
}

#[test]
fn default_config_file_parses_to_defaults() {
    assert_eq!(parse(DEFAULT_CONFIG_YAML, &[]).unwrap(), Config::default());
}

#[test]
fn unknown_key_names_file_line_and_expected_keys() {
    let err = parse("ssh:\n  pool_max: 3\n  colour: red\n", &[]).unwrap_err().to_string();
    assert!(err.starts_with("/h/config.yaml:3:3: "), "{err}");
    assert!(err.contains("unknown field `colour`"), "{err}");
    assert!(err.contains("pool_max"), "lists the expected keys: {err}");
}

#[test]
fn wrong_type_names_line_and_expected_type() {
    let err = parse("policy:\n  max_parallel: lots\n", &[]).unwrap_err().to_string();
    assert!(err.starts_with("/h/config.yaml:2:"), "{err}");
    assert!(err.contains("expected usize"), "{err}");
}

#[test]
fn env_override_changes_value_with_yaml_typing() {
    let c =
        parse("ssh:\n  pool_max: 3\n", &[("MERLYA_SSH_POOL_MAX", "20"), ("MERLYA_SSH_HOST_KEY_POLICY", "accept-new")])
            .unwrap();
    assert_eq!(c.ssh.pool_max, 20);
    assert_eq!(c.ssh.host_key_policy, Some(HostKeyPolicy::AcceptNew));
}

#[test]
fn env_override_unknown_key_or_bad_type_names_variable() {
    let err = parse("", &[("MERLYA_SSH_COLOUR", "red")]).unwrap_err().to_string();
    assert!(err.starts_with("environment variable MERLYA_SSH_COLOUR: ssh has no key colour"), "{err}");
    let err = parse("", &[("MERLYA_POLICY_MAX_PARALLEL", "many")]).unwrap_err().to_string();
    assert!(err.contains("MERLYA_POLICY_MAX_PARALLEL"), "{err}");
}

#[test]
fn non_config_merlya_variables_are_ignored() {
    assert!(parse("", &[("MERLYA_HOME", "/tmp/x"), ("MERLYA_LOG", "debug")]).is_ok());
}

#[test]
fn variables_expand_before_parsing() {
    let c = parse("ssh:\n  default_user: ${OPS_USER}\n  pool_max: ${POOL:-7}\n", &[("OPS_USER", "ops")]).unwrap();
    assert_eq!(c.ssh.default_user.as_deref(), Some("ops"));
    assert_eq!(c.ssh.pool_max, 7);
    let err = parse("ssh:\n  default_user: ${OPS_USER}\n", &[]).unwrap_err().to_string();
    assert!(err.contains("config.yaml:2: environment variable OPS_USER is not set"), "{err}");
}

#[test]
fn invalid_values_name_the_field() {
    let err = parse("policy:\n  max_parallel: 0\n", &[]).unwrap_err().to_string();
    assert!(err.contains("policy.max_parallel"), "{err}");
    let err = parse("model:\n  brain: gpt4\n", &[]).unwrap_err().to_string();
    assert!(err.contains("model.brain: expected provider/model"), "{err}");
}

#[test]
fn settings_that_cannot_work_are_refused_with_file_line_field_and_expectation() {
    let err = parse("ssh:\n  pool_max: 3\nmodel:\n  stream: true\n  timeout_secs: 0\n", &[]).unwrap_err().to_string();
    assert_eq!(err, "/h/config.yaml:5: model.timeout_secs: expected a number of seconds of at least 1");
    let err = parse("model: { max_retry_wait: 0 }\n", &[]).unwrap_err().to_string();
    assert_eq!(err, "/h/config.yaml:1: model.max_retry_wait: expected a number of seconds of at least 1");
    let err = parse("", &[("MERLYA_MODEL_TIMEOUT_SECS", "0")]).unwrap_err().to_string();
    assert!(
        err.starts_with("environment variable MERLYA_MODEL_TIMEOUT_SECS (over /h/config.yaml): model.timeout_secs:"),
        "{err}"
    );
    for (text, field) in [
        ("model:\n  max_tokens: 0\n", "model.max_tokens"),
        ("model:\n  breaker_threshold: 0\n", "model.breaker_threshold"),
        ("ssh:\n  command_timeout_secs: 0\n", "ssh.command_timeout_secs"),
        ("ui:\n  max_fps: 0\n", "ui.max_fps"),
        ("model:\n  prices:\n    m: { input_per_mtok: -1, output_per_mtok: 1 }\n", "model.prices.m"),
    ] {
        let err = parse(text, &[]).unwrap_err().to_string();
        assert!(err.contains(&format!("config.yaml:2: {field}: expected")), "{text}: {err}");
    }
    assert_eq!(parse("model:\n  max_retry_wait: 5\n", &[]).unwrap().model.max_retry_wait, 5);
    // policy.command_timeout wins over ssh.command_timeout_secs; 0 cannot work.
    let c = parse("policy:\n  command_timeout: 15\nssh:\n  command_timeout_secs: 90\n", &[]).unwrap();
    assert_eq!(c.command_timeout(), std::time::Duration::from_secs(15));
    assert_eq!(parse("ssh:\n  command_timeout_secs: 90\n", &[]).unwrap().command_timeout().as_secs(), 90);
    let err = parse("policy:\n  command_timeout: 0\n", &[]).unwrap_err().to_string();
    assert!(err.contains("policy.command_timeout"), "{err}");
}

#[test]
fn inventory_columns_are_checked_against_the_known_names() {
    let err = parse("ui:\n  theme: dark\n  inventory_columns: [name, cpu]\n", &[]).unwrap_err().to_string();
    assert!(
        err.starts_with(
            "/h/config.yaml:3: ui.inventory_columns: unknown column \"cpu\"; expected a list of name, address,"
        ),
        "{err}"
    );
    let c = parse("ui:\n  inventory_columns: [load, disk]\n", &[]).unwrap();
    assert_eq!(c.ui.inventory_columns, ["load", "disk"]);
}

#[test]
fn set_value_validates_and_writes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.yaml");
    std::fs::write(&path, "ssh:\n  pool_max: 3\n").unwrap();
    let c = set_value(&path, "model.brain", "anthropic/claude-x").unwrap();
    assert_eq!(c.model.brain.as_deref(), Some("anthropic/claude-x"));
    assert_eq!(c.ssh.pool_max, 3, "other settings are kept");
    let err = set_value(&path, "model.brain", "nonsense").unwrap_err().to_string();
    assert!(err.contains("model.brain: expected provider/model"), "{err}");
    let err = set_value(&path, "ssh.colour", "red").unwrap_err().to_string();
    assert!(err.contains("unknown field `colour`"), "{err}");
    let reloaded = Config::load_with_env(&path, &[]).unwrap();
    assert_eq!(reloaded.model.brain.as_deref(), Some("anthropic/claude-x"), "a refused value is not written");
}

#[test]
fn the_policy_section_is_validated_with_file_and_line() {
    let e = parse("policy:\n  max_parallel: 4\n  context_teir: minimal\n", &[]).unwrap_err().to_string();
    assert!(e.starts_with("/h/config.yaml:3:") && e.contains("unknown field `context_teir`"), "{e}");
    let e = parse("policy:\n  context_tier: huge\n", &[]).unwrap_err().to_string();
    assert!(e.starts_with("/h/config.yaml:2:") && e.contains("minimal"), "{e}");
    let e = parse("policy:\n  blocked_commands: shutdown\n", &[]).unwrap_err().to_string();
    assert!(e.starts_with("/h/config.yaml:2:") && e.contains("sequence"), "{e}");
    let e =
        parse("policy:\n  max_parallel: 4\n  require_confirmation_for_write: false\n", &[]).unwrap_err().to_string();
    assert!(e.starts_with("/h/config.yaml:3: policy.require_confirmation_for_write: expected true"), "{e}");
    let e = parse("policy:\n  audit_logging: false\n", &[]).unwrap_err().to_string();
    assert!(e.starts_with("/h/config.yaml:2: policy.audit_logging: expected true"), "{e}");
    let e = parse("policy:\n  max_hosts_per_skill: 0\n", &[]).unwrap_err().to_string();
    assert!(e.contains("policy.max_hosts_per_skill: expected a whole number"), "{e}");
    let ok = parse("model:\n  max_tokens: 4096\npolicy:\n  max_tokens_per_call: 512\n  context_tier: extended\n  blocked_commands: [\"iptables -F\"]\n", &[]).unwrap();
    assert_eq!(ok.model.max_tokens, 512, "the policy caps every call");
    assert_eq!(ok.policy.context_tier, ContextTier::Extended);
    assert_eq!(ok.policy.blocked_commands, ["iptables -F"]);
}

#[test]
fn the_egress_allow_list_names_its_bad_entry_with_file_and_line() {
    let e = parse("policy:\n  max_parallel: 4\n  egress_allow: [example.com, com]\n", &[]).unwrap_err().to_string();
    assert!(e.starts_with("/h/config.yaml:3: policy.egress_allow: `com`: a top-level name"), "{e}");
    let e = parse("policy:\n  egress_allow: [0.0.0.0/0]\n", &[]).unwrap_err().to_string();
    assert!(e.contains("policy.egress_allow: `0.0.0.0/0`"), "{e}");
    let e = parse("", &[("MERLYA_POLICY_EGRESS_ALLOW", "[evil.com/x]")]).unwrap_err().to_string();
    assert!(e.starts_with("environment variable MERLYA_POLICY_EGRESS_ALLOW"), "{e}");
    let ok = parse("policy:\n  egress_allow: [example.com, 203.0.113.0/24]\n", &[]).unwrap();
    assert_eq!(ok.policy.egress_allow, ["example.com", "203.0.113.0/24"]);
    let env = parse("", &[("MERLYA_POLICY_EGRESS_ALLOW", "[example.net]")]).unwrap();
    assert_eq!(env.policy.egress_allow, ["example.net"]);
}

#[test]
fn the_audit_witness_is_a_file_journald_or_syslog() {
    let c = parse("audit:\n  witness: file:/var/log/merlya-witness.log\n", &[]).unwrap();
    assert_eq!(c.audit.witness.as_deref(), Some("file:/var/log/merlya-witness.log"));
    for ok in ["journald", "journald:audit", "syslog", "syslog:/run/log.sock"] {
        assert!(parse(&format!("audit:\n  witness: {ok}\n"), &[]).is_ok(), "{ok}");
    }
    let err = parse("audit:\n  witness: file:relative.log\n", &[]).unwrap_err().to_string();
    assert!(err.contains("audit.witness") && err.contains("file:/absolute/path"), "{err}");
    let c = parse("", &[("MERLYA_AUDIT_WITNESS", "file:/srv/w.log")]).unwrap();
    assert_eq!(c.audit.witness.as_deref(), Some("file:/srv/w.log"));
}

#[test]
fn a_deep_huge_or_non_utf8_config_is_refused_with_its_place() {
    // 200 000 levels: the parser would take minutes; refused at the line that passes the limit.
    let deep = format!("ssh:\n  default_user: {}\n", "[".repeat(200_000));
    let e = parse(&deep, &[]).unwrap_err().to_string();
    assert!(e.starts_with("/h/config.yaml:2:") && e.contains("nested deeper than 100 levels"), "{e}");

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.yaml");
    // A 10 MB value: refused by size, in one short line, never quoted back.
    std::fs::write(&path, format!("ssh:\n  default_user: {}\n", "A".repeat(10 * 1024 * 1024))).unwrap();
    let e = Config::load(&path).unwrap_err().to_string();
    assert!(e.starts_with(&path.display().to_string()) && e.contains("merlya reads at most 1.0 MiB"), "{e}");
    assert!(e.len() < 300 && !e.contains("AAAA"), "{e}");
    // Under the size limit, a long value quoted back by the parser is cut.
    std::fs::write(&path, format!("policy:\n  max_parallel: {}\n", "9".repeat(500_000))).unwrap();
    let e = Config::load(&path).unwrap_err().to_string();
    assert!(e.contains("config.yaml:2:") && e.contains("characters cut") && e.len() < 500, "{e}");

    std::fs::write(&path, b"ssh:\n  default_user: ren\xe9\n").unwrap();
    let e = Config::load(&path).unwrap_err().to_string();
    assert!(e.contains("config.yaml:2: column 20: byte 0xe9 is not UTF-8"), "{e}");
    std::fs::remove_file(&path).unwrap();
    std::fs::create_dir(&path).unwrap();
    assert!(Config::load(&path).unwrap_err().to_string().contains("is a folder, expected a file"));
}

#[test]
fn the_two_person_list_names_its_bad_entry_with_file_and_line() {
    let e =
        parse("policy:\n  max_parallel: 4\n  two_person_approval_for: ['@prod', prod]\n", &[]).unwrap_err().to_string();
    assert!(e.starts_with("/h/config.yaml:3: policy.two_person_approval_for: `prod`: expected @TAG"), "{e}");
    let e = parse("policy:\n  two_person_expiry_minutes: 5000000\n", &[]).unwrap_err().to_string();
    assert!(e.contains("policy.two_person_expiry_minutes: 5000000: expected 1 to 1440 minutes"), "{e}");
    let ok = parse("policy:\n  two_person_approval_for: ['@prod', terraform]\n", &[]).unwrap();
    assert_eq!(ok.policy.two_person_approval_for, ["@prod", "terraform"]);
}
