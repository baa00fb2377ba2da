use serde_json::json;

use super::*;
use crate::provision::template::schema::Validation;

fn var(kind: VarType, validation: Validation) -> Variable {
    Variable {
        name: "v".into(),
        kind,
        required: false,
        default: None,
        provider_defaults: Default::default(),
        description: String::new(),
        validation,
    }
}

#[test]
fn command_line_text_is_parsed_by_the_declared_type() {
    use VarType::*;
    assert_eq!(parse_text(String, "42").unwrap(), Answer::Plain(json!("42")));
    assert_eq!(parse_text(Number, "42").unwrap(), Answer::Plain(json!(42)));
    assert_eq!(parse_text(Number, "-2.5").unwrap(), Answer::Plain(json!(-2.5)));
    assert_eq!(parse_text(Boolean, "true").unwrap(), Answer::Plain(json!(true)));
    assert_eq!(parse_text(Boolean, "false").unwrap(), Answer::Plain(json!(false)));
    assert_eq!(parse_text(List, r#"["a", 1]"#).unwrap(), Answer::Plain(json!(["a", 1])));
    assert_eq!(parse_text(List, "[a, b]").unwrap(), Answer::Plain(json!(["a", "b"])));
    assert_eq!(parse_text(Map, r#"{"env": "prod"}"#).unwrap(), Answer::Plain(json!({"env": "prod"})));
    assert_eq!(parse_text(Map, "{env: prod, n: 2}").unwrap(), Answer::Plain(json!({"env": "prod", "n": 2})));
    assert_eq!(
        parse_text(Secret, "@db:prod:password").unwrap(),
        Answer::Secret(super::Secret::Reference("db:prod:password".into()))
    );
    assert!(matches!(parse_text(Secret, "hunter2").unwrap(), Answer::Secret(super::Secret::Given(_))));
}

#[test]
fn text_of_the_wrong_type_is_refused_saying_what_was_expected() {
    use VarType::*;
    for (kind, text, says) in [
        (Number, "ten", "expected a number, got `ten`"),
        (Number, "NaN", "expected a number, got `NaN`"),
        (Number, "inf", "expected a number, got `inf`"),
        (Boolean, "yes", "expected a boolean (true or false), got `yes`"),
        (Boolean, "True", "expected a boolean (true or false), got `True`"),
        (List, "{a: 1}", "expected a list (JSON or YAML, like [a, b]), got `{a: 1}` (a map)"),
        (List, "[a", "expected a list (JSON or YAML, like [a, b]), got `[a` (not JSON or YAML"),
        (Map, "[1, 2]", "got `[1, 2]` (a list)"),
        (Map, "plain", "got `plain` (a string)"),
        (Secret, "", "an empty value"),
        (Secret, "@bad name", "a reference that is not a secret name"),
    ] {
        let e = parse_text(kind, text).unwrap_err();
        assert!(e.to_string().contains(says), "{kind} {text:?}: {e}");
    }
}

#[test]
fn yaml_values_must_be_of_the_type_as_written() {
    assert!(from_yaml(VarType::String, &json!(3)).is_err());
    assert!(from_yaml(VarType::Number, &json!("3")).is_err());
    assert!(from_yaml(VarType::Boolean, &json!("true")).is_err());
    assert!(from_yaml(VarType::List, &json!({})).is_err());
    assert_eq!(from_yaml(VarType::Map, &json!({"a": [1]})).unwrap(), Answer::Plain(json!({"a": [1]})));
    assert_eq!(
        from_yaml(VarType::Secret, &json!("@x:y:z")).unwrap(),
        Answer::Secret(Secret::Reference("x:y:z".into()))
    );
    assert!(from_yaml(VarType::Secret, &json!(3)).is_err());
}

#[test]
fn validation_rules_check_values_lengths_counts_and_allowed_values() {
    let pattern = var(VarType::String, Validation { pattern: Some("[a-z]+".into()), ..Default::default() });
    assert!(check(&pattern, &Answer::Plain(json!("web"))).is_ok());
    let e = check(&pattern, &Answer::Plain(json!("web01"))).unwrap_err();
    assert_eq!(e, "\"web01\" does not match the pattern [a-z]+");
    // The whole value must match, not a part of it.
    assert!(check(&pattern, &Answer::Plain(json!("web-x"))).is_err());

    let number = var(VarType::Number, Validation { min: Some(1.0), max: Some(4.0), ..Default::default() });
    assert!(check(&number, &Answer::Plain(json!(4))).is_ok());
    assert_eq!(check(&number, &Answer::Plain(json!(0))).unwrap_err(), "0 is below the minimum of 1");
    assert_eq!(check(&number, &Answer::Plain(json!(4.5))).unwrap_err(), "4.5 is above the maximum of 4");

    let length = var(VarType::String, Validation { min: Some(3.0), ..Default::default() });
    assert_eq!(
        check(&length, &Answer::Plain(json!("ab"))).unwrap_err(),
        "\"ab\" is 2 characters long, below the minimum of 3"
    );
    let list = var(VarType::List, Validation { max: Some(1.0), ..Default::default() });
    assert_eq!(check(&list, &Answer::Plain(json!([1, 2]))).unwrap_err(), "[1,2] has 2 items, above the maximum of 1");
    let map = var(VarType::Map, Validation { min: Some(1.0), ..Default::default() });
    assert_eq!(check(&map, &Answer::Plain(json!({}))).unwrap_err(), "{} has 0 entries, below the minimum of 1");

    let allowed = var(VarType::Number, Validation { allowed: Some(vec![json!(1), json!(2.0)]), ..Default::default() });
    assert!(check(&allowed, &Answer::Plain(json!(2))).is_ok(), "2 and 2.0 are the same number");
    assert_eq!(check(&allowed, &Answer::Plain(json!(3))).unwrap_err(), "3 is not one of the allowed values (1, 2.0)");
    // An optional variable left unset has nothing to check.
    assert!(check(&number, &Answer::Plain(json!(null))).is_ok());
}

#[test]
fn a_secret_is_masked_in_debug_display_errors_and_refused_when_stored() {
    let secret = parse_text(VarType::Secret, "hunter2-Sup3r").unwrap();
    assert_eq!(format!("{secret:?}"), "Secret(Given(***))");
    assert_eq!(secret.to_string(), "***");
    let e = serde_json::to_string(&secret).unwrap_err().to_string();
    assert!(e.contains("never stored") && !e.contains("hunter2"), "{e}");

    let rules =
        var(VarType::Secret, Validation { pattern: Some("[0-9]+".into()), min: Some(20.0), ..Default::default() });
    let e = check(&rules, &secret).unwrap_err();
    assert_eq!(e, "the secret does not match the pattern [0-9]+");
    let e = check_secret(&var(VarType::Secret, Validation { min: Some(20.0), ..Default::default() }), "hunter2-Sup3r")
        .unwrap_err();
    assert_eq!(e, "the secret is 13 characters long, below the minimum of 20");

    // A reference is kept, and read back, as the reference.
    let reference = parse_text(VarType::Secret, "@db:prod:password").unwrap();
    assert_eq!(reference.to_string(), "@db:prod:password");
    let stored = serde_json::to_string(&reference).unwrap();
    assert_eq!(stored, r#"{"secret":"db:prod:password"}"#);
    assert_eq!(serde_json::from_str::<Answer>(&stored).unwrap(), reference);
    assert!(serde_json::from_str::<Answer>(r#"{"secret":"bad name"}"#).is_err());
    let plain = Answer::Plain(json!({"a": 1}));
    assert_eq!(serde_json::from_str::<Answer>(&serde_json::to_string(&plain).unwrap()).unwrap(), plain);
}
