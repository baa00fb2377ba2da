use serde_json::json;

use super::*;
use crate::provision::template::schema;

const SCHEMA: &str = "\
name: probe
version: 1.0.0
category: compute
description: A probe.
providers: [aws, gcp]
backends:
  - backend: terraform
    entry: main.tf.j2
variables:
  - name: vm_name
    type: string
    required: true
    description: The machine's name.
  - name: size
    type: string
    default: small
    provider_defaults:
      aws: t3.micro
  - name: disks
    type: number
    default: 1
    validation: { min: 1, max: 4 }
  - name: public
    type: boolean
    default: false
  - name: zones
    type: list
    default: []
  - name: tags
    type: map
    default: {}
  - name: password
    type: secret
";

fn spec() -> TemplateSpec {
    schema::parse("probe/template.yaml", SCHEMA).unwrap()
}

fn given(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

fn resolve(provider: Option<&str>, pairs: &[(&str, &str)]) -> Result<Answers, AnswerError> {
    Answers::resolve(&spec(), provider, None, &given(pairs))
}

#[test]
fn answers_come_from_what_is_given_then_the_provider_default_then_the_default() {
    let a = resolve(Some("aws"), &[("vm_name", "web"), ("disks", "3"), ("zones", "[a, b]")]).unwrap();
    assert_eq!(a.values["vm_name"], Answer::Plain(json!("web")));
    assert_eq!(a.values["size"], Answer::Plain(json!("t3.micro")));
    assert_eq!(a.values["disks"], Answer::Plain(json!(3)));
    assert_eq!(a.values["zones"], Answer::Plain(json!(["a", "b"])));
    assert_eq!(a.values["password"], Answer::Plain(json!(null)), "optional and unset");
    assert_eq!((a.provider.as_str(), a.backend), ("aws", Backend::Terraform));
    let gcp = resolve(Some("gcp"), &[("vm_name", "web")]).unwrap();
    assert_eq!(gcp.values["size"], Answer::Plain(json!("small")));
}

#[test]
fn every_mistake_names_the_variable() {
    let says = |provider, pairs: &[(&str, &str)]| resolve(provider, pairs).unwrap_err().to_string();
    assert_eq!(
        says(Some("aws"), &[]),
        "template probe: variable vm_name is required: The machine's name. (give it with --var NAME=VALUE)"
    );
    assert_eq!(
        says(Some("aws"), &[("vm_name", "w"), ("disks", "many")]),
        "template probe: variable disks (number): expected a number, got `many`"
    );
    assert_eq!(
        says(Some("aws"), &[("vm_name", "w"), ("public", "yes")]),
        "template probe: variable public (boolean): expected a boolean (true or false), got `yes`"
    );
    assert_eq!(
        says(Some("aws"), &[("vm_name", "w"), ("tags", "[1]")]),
        "template probe: variable tags (map): expected a map (JSON or YAML, like {env: prod}), got `[1]` (a list)"
    );
    assert_eq!(
        says(Some("aws"), &[("vm_name", "w"), ("disks", "9")]),
        "template probe: variable disks: 9 is above the maximum of 4"
    );
    assert_eq!(
        says(Some("aws"), &[("vm_name", "w"), ("colour", "red")]),
        "template probe has no variable colour (its variables: vm_name, size, disks, public, zones, tags, password)"
    );
    assert_eq!(
        says(Some("aws"), &[("vm_name", "w"), ("vm_name", "x")]),
        "template probe: variable vm_name is given twice"
    );
    assert_eq!(
        says(Some("azure"), &[("vm_name", "w")]),
        "template probe: unknown provider azure (its providers: aws, gcp)"
    );
    assert_eq!(
        says(None, &[("vm_name", "w")]),
        "template probe: choose a provider with --provider (its providers: aws, gcp)"
    );
    let e = Answers::resolve(&spec(), Some("aws"), Some(Backend::Mcp), &given(&[("vm_name", "w")])).unwrap_err();
    assert_eq!(e.to_string(), "template probe has no mcp backend (it has: terraform)");
}

#[test]
fn answers_are_kept_with_secret_references_and_checked_again_before_a_render() {
    let a = resolve(Some("gcp"), &[("vm_name", "web"), ("password", "@db:prod:password")]).unwrap();
    assert!(a.needs_keyring());
    let stored = serde_json::to_string(&a).unwrap();
    assert!(stored.contains(r#""password":{"secret":"db:prod:password"}"#), "{stored}");
    let back: Answers = serde_json::from_str(&stored).unwrap();
    assert_eq!(back, a);
    back.check(&spec()).unwrap();

    // Stored answers a newer schema no longer accepts are refused, naming the variable.
    let mut tampered = back.clone();
    tampered.values.insert("disks".into(), Answer::Plain(json!("three")));
    assert_eq!(
        tampered.check(&spec()).unwrap_err().to_string(),
        "template probe: variable disks (number): expected a number, got a string"
    );
    let mut other = back;
    other.version = "2.0.0".into();
    assert_eq!(other.check(&spec()).unwrap_err().to_string(), "the answers are for probe:2.0.0, not probe:1.0.0");
}

#[test]
fn a_given_secret_is_masked_in_debug_display_and_errors_and_cannot_be_stored() {
    let a = resolve(Some("gcp"), &[("vm_name", "web"), ("password", "hunter2-Sup3r")]).unwrap();
    assert!(!a.needs_keyring());
    let debug = format!("{a:?}");
    assert!(debug.contains("Given(***)") && !debug.contains("hunter2"), "{debug}");
    let shown = a.to_string();
    assert!(shown.contains("password = ***\n") && shown.contains("vm_name = \"web\"\n"), "{shown}");
    assert!(!shown.contains("hunter2"), "{shown}");
    let e = serde_json::to_string(&a).unwrap_err().to_string();
    assert!(e.contains("never stored") && !e.contains("hunter2"), "{e}");
}
