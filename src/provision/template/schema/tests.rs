use super::*;

const GOOD: &str = "\
name: probe
version: 1.2.0
category: compute
description: A probe.
providers: [aws, proxmox]
backends:
  - backend: terraform
    entry: main.tf.j2
  - backend: mcp
    entry: request.json.j2
variables:
  - name: vm_name
    type: string
    required: true
    description: Its name.
    validation:
      pattern: '[a-z]+'
  - name: size
    type: string
    provider_defaults:
      aws: t3.micro
  - name: disks
    type: number
    default: 2
    validation: { min: 1, max: 4 }
  - name: tags
    type: map
    default: {env: prod}
  - name: zones
    type: list
    default: [a, b]
  - name: public
    type: boolean
    default: false
  - name: password
    type: secret
    default: '@db:prod:password'
    validation: { min: 12 }
  - name: tier
    type: string
    default: small
    validation:
      allowed: [small, large]
outputs:
  - name: id
    description: The id.
";

#[test]
fn a_good_schema_parses_with_its_types_and_defaults() {
    let spec = parse("probe/template.yaml", GOOD).unwrap();
    assert_eq!(spec.key(), "probe:1.2.0");
    assert_eq!(spec.category, Category::Compute);
    assert_eq!(spec.entry(Backend::Mcp), Some("request.json.j2"));
    let kinds: Vec<VarType> = spec.variables.iter().map(|v| v.kind).collect();
    use VarType::*;
    assert_eq!(kinds, [String, String, Number, Map, List, Boolean, Secret, String]);
    let size = spec.variable("size").unwrap();
    assert_eq!(
        size.provider_defaults.get(&ProviderName::try_from("aws".to_string()).unwrap()),
        Some(&"t3.micro".into())
    );
    assert_eq!(spec.variable("disks").unwrap().validation.max, Some(4.0));
    assert_eq!(spec.outputs[0].name, "id");
    // It goes back to YAML and JSON as written (the version as text).
    let json = serde_json::to_value(&spec).unwrap();
    assert_eq!(json["version"], "1.2.0");
    assert_eq!(json["backends"][0]["backend"], "terraform");
}

fn error(text: &str) -> SchemaError {
    parse("probe/template.yaml", text).unwrap_err()
}

#[track_caller]
fn assert_error(text: &str, line: usize, field: &str, says: &str) {
    let e = error(text);
    assert_eq!((e.line, e.field.as_str()), (line, field), "{e}");
    assert!(e.message.contains(says), "{e}");
    assert!(e.to_string().starts_with(&format!("probe/template.yaml:{line}: {field}: ")), "{e}");
}

#[test]
fn malformed_schemas_name_the_file_the_field_and_the_line() {
    // What serde finds.
    assert_error(&GOOD.replace("category: compute", "category: cloud"), 3, "category", "unknown variant `cloud`");
    assert_error(&GOOD.replace("    type: map", "    type: dict"), 27, "variables[3].type", "unknown variant `dict`");
    assert_error(
        &GOOD.replace("    description: Its name.", "    colour: red"),
        15,
        "variables[0]",
        "unknown field `colour`",
    );
    assert_error(&GOOD.replace("version: 1.2.0", "version: 1.2"), 2, "version", "not a semver version");
    assert_error(
        &GOOD.replace("backend: mcp", "backend: ansible"),
        9,
        "backends[1].backend",
        "unknown variant `ansible`",
    );
    assert_error(&GOOD.replace("[aws, proxmox]", "[aws, Bad Name]"), 5, "providers", "not a provider name");
    // What the checks after it find.
    assert_error(&GOOD.replace("name: probe", "name: Probe_1"), 1, "name", "lower-case letters");
    assert_error(&GOOD.replace("[aws, proxmox]", "[aws, aws]"), 5, "providers[1]", "aws is listed twice");
    assert_error(
        &GOOD.replace("entry: main.tf.j2", "entry: ../main.tf.j2"),
        8,
        "backends[0].entry",
        "not a path inside",
    );
    assert_error(&GOOD.replace("entry: main.tf.j2", "entry: main.tf"), 8, "backends[0].entry", "ending in .j2");
    assert_error(
        &GOOD.replace("- name: size", "- name: vm_name"),
        18,
        "variables[1].name",
        "vm_name is declared twice",
    );
    assert_error(&GOOD.replace("- name: size", "- name: provider"), 18, "variables[1].name", "set by merlya");
    assert_error(&GOOD.replace("- name: size", "- name: Size"), 18, "variables[1].name", "lower-case letters");
    assert_error(
        &GOOD.replace("    default: 2\n", "    default: two\n"),
        24,
        "variables[2].default",
        "expected a number, got a string",
    );
    assert_error(
        &GOOD.replace("default: {env: prod}", "default: [prod]"),
        28,
        "variables[3].default",
        "expected a map",
    );
    assert_error(&GOOD.replace("default: false", "default: 'no'"), 34, "variables[5].default", "expected a boolean");
    assert_error(
        &GOOD.replace("default: 2\n", "default: 5\n"),
        24,
        "variables[2].default",
        "5 is above the maximum of 4",
    );
    assert_error(
        &GOOD.replace("default: small", "default: medium"),
        41,
        "variables[7].default",
        "not one of the allowed values",
    );
    assert_error(
        &GOOD.replace("      aws: t3.micro", "      gcp: e2"),
        21,
        "variables[1].provider_defaults.gcp",
        "not one of this template's providers (aws, proxmox)",
    );
    assert_error(
        &GOOD.replace("'@db:prod:password'", "hunter2hunter2"),
        37,
        "variables[6].default",
        "never a value in the file",
    );
    assert_error(
        &GOOD.replace("    required: true\n", "    required: true\n    default: x\n"),
        15,
        "variables[0].default",
        "required variable has no default",
    );
    assert_error(
        &GOOD.replace("pattern: '[a-z]+'", "pattern: '[a-z'"),
        17,
        "variables[0].validation.pattern",
        "not a regular expression",
    );
    assert_error(
        &GOOD.replace("validation: { min: 1, max: 4 }", "validation: { min: 5, max: 4 }"),
        25,
        "variables[2].validation.max",
        "at or above min",
    );
    assert_error(
        &GOOD.replace("    default: false\n", "    default: false\n    validation: { max: 1 }\n"),
        35,
        "variables[5].validation.max",
        "a boolean has no bounds",
    );
    assert_error(
        &GOOD.replace("    default: [a, b]\n", "    default: [a, b]\n    validation: { pattern: a }\n"),
        32,
        "variables[4].validation.pattern",
        "not a list",
    );
    assert_error(
        &GOOD.replace("    default: [a, b]\n", "    default: [a, b]\n    validation: { allowed: [a] }\n"),
        32,
        "variables[4].validation.allowed",
        "not a list",
    );
    assert_error(
        &GOOD.replace("allowed: [small, large]", "allowed: [small, 3]"),
        43,
        "variables[7].validation.allowed",
        "expected a string, got a number",
    );
    assert_error(
        &GOOD.replace("  - name: id\n", "  - name: id\n  - name: id\n"),
        46,
        "outputs[1].name",
        "id is declared twice",
    );
    assert_error(&GOOD.replace("description: A probe.", "description: ''"), 4, "description", "expected a sentence");
    assert_error(&GOOD.replace("providers: [aws, proxmox]", "providers: []"), 5, "providers", "at least one provider");
    // A file that is not YAML, or too deep, says so with its line.
    let e = error("name: probe\nversion: 'unclosed\n");
    assert_eq!((e.field.as_str(), e.line), ("(file)", 3), "{e}");
    assert!(e.message.contains("while scanning a quoted scalar"), "{e}");
    let e = error(&format!("name: {}\n", "[".repeat(500)));
    assert!(e.message.contains("nested deeper than 100"), "{e}");
}
