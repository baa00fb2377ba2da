use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;

use super::*;
use crate::provision::template::load::{Source, load};
use crate::provision::template::{Registry, TemplateRef, builtin};

/// A keyring holding one secret.
struct Keyring;

impl SecretSource for Keyring {
    fn lookup(&self, name: &str) -> Option<String> {
        (name == "db:prod:password").then(|| "kept-S3cret-value".to_string())
    }
}

const SCHEMA: &str = "\
name: probe
version: 1.0.0
category: database
description: A probe.
providers: [local]
backends:
  - backend: terraform
    entry: main.tf.j2
variables:
  - name: name
    type: string
    required: true
  - name: password
    type: secret
    validation: { min: 8 }
outputs:
  - name: id
";

const MAIN: &str = "\
resource \"terraform_data\" \"p\" {
  input = { name = \"{{ name }}\", password = {{ password | hcl }} }
}

output \"id\" {
  value = terraform_data.p.id
}
";

fn probe(main: &str) -> Template {
    let files = BTreeMap::from([("main.tf.j2".to_string(), main.to_string())]);
    load(Source::BuiltIn, "probe", SCHEMA, files).unwrap()
}

fn answers(template: &Template, pairs: &[(&str, &str)]) -> Answers {
    let given: Vec<(String, String)> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    Answers::resolve(&template.spec, None, None, &given).unwrap()
}

#[test]
fn a_template_renders_its_entry_point_with_secrets_only_in_the_file() {
    let t = probe(MAIN);
    let rendered = render(&t, &answers(&t, &[("name", "db"), ("password", "hunter2-Sup3r")]), &Keyring).unwrap();
    assert_eq!(rendered.files.len(), 1);
    assert_eq!(rendered.files[0].path, "main.tf");
    assert!(rendered.files[0].content().contains("input = { name = \"db\", password = \"hunter2-Sup3r\" }"));
    let debug = format!("{rendered:?}");
    assert!(!debug.contains("hunter2") && debug.contains("main.tf ("), "{debug}");
    assert_eq!(rendered.mask("value hunter2-Sup3r here"), "value *** here");

    // A reference is resolved only now; an unset optional secret is null.
    let rendered = render(&t, &answers(&t, &[("name", "db"), ("password", "@db:prod:password")]), &Keyring).unwrap();
    assert!(rendered.files[0].content().contains("password = \"kept-S3cret-value\""));
    let rendered = render(&t, &answers(&t, &[("name", "db")]), &Keyring).unwrap();
    assert!(rendered.files[0].content().contains("password = null"));
}

#[test]
fn a_reference_to_nothing_or_to_a_secret_failing_its_rules_names_the_variable_not_the_value() {
    let t = probe(MAIN);
    let e = render(&t, &answers(&t, &[("name", "db"), ("password", "@db:prod:other")]), &Keyring).unwrap_err();
    assert_eq!(
        e.to_string(),
        "template probe: variable password: no secret @db:prod:other on the keyring (store it with `merlya secret set db:prod:other`)"
    );
    let strict = probe(MAIN).spec.clone();
    let mut t = probe(MAIN);
    t.spec = strict;
    if let Some(v) = t.spec.variables.iter_mut().find(|v| v.name == "password") {
        v.validation.min = Some(40.0);
    }
    let e =
        render(&t, &answers(&probe(MAIN), &[("name", "db"), ("password", "@db:prod:password")]), &Keyring).unwrap_err();
    assert_eq!(
        e.to_string(),
        "template probe: variable password: @db:prod:password: the secret is 17 characters long, below the minimum of 40"
    );
}

#[test]
fn errors_while_rendering_are_masked_and_named() {
    // minijinja quotes the value it could not use: the secret is masked in what is returned.
    let t = probe(&MAIN.replace("{{ password | hcl }}", "{{ password | hcl }}{% include password %}"));
    let e = render(&t, &answers(&t, &[("name", "db"), ("password", "hunter2-Sup3r")]), &Keyring).unwrap_err();
    let said = e.to_string();
    assert!(said.starts_with("main.tf.j2:2: template probe: "), "{said}");
    assert!(!said.contains("hunter2"), "{said}");
    assert!(said.ends_with("tried to include non-existing template '***'"), "{said}");
}

#[test]
fn a_runaway_loop_is_stopped_by_the_fuel_limit() {
    let looping = format!(
        "{MAIN}{{% for i in range(10000) %}}{{% for j in range(10000) %}}# {{{{ name }}}}\n{{% endfor %}}{{% endfor %}}"
    );
    let t = probe(&looping);
    let e = render(&t, &answers(&t, &[("name", "db")]), &Keyring).unwrap_err();
    assert!(matches!(e, RenderError::OutOfFuel { .. }), "{e}");
    assert!(e.to_string().starts_with("main.tf.j2: template probe: stopped after 250000 units of fuel"), "{e}");
}

#[test]
fn an_undefined_attribute_fails_and_a_declared_output_must_be_rendered() {
    let t = probe(&MAIN.replace("\"{{ name }}\"", "\"{{ template.nothing }}{{ name }}\""));
    let e = render(&t, &answers(&t, &[("name", "db")]), &Keyring).unwrap_err();
    assert!(e.to_string().contains("undefined value"), "{e}");
    let t = probe(&MAIN.replace("output \"id\"", "output \"ident\""));
    let e = render(&t, &answers(&t, &[("name", "db")]), &Keyring).unwrap_err();
    assert_eq!(
        e.to_string(),
        "template probe declares output id, but the rendered main.tf has no `output \"id\"` block"
    );
}

#[test]
fn files_are_written_private_into_an_empty_folder_or_over_one_with_force() {
    let t = probe(MAIN);
    let rendered = render(&t, &answers(&t, &[("name", "db")]), &Keyring).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let written = rendered.write(&out, false).unwrap();
    assert_eq!(written, [out.join("main.tf")]);
    let mode = std::fs::metadata(&written[0]).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let e = rendered.write(&out, false).unwrap_err();
    assert_eq!(e.to_string(), format!("{} is not empty (use --force to write over it)", out.display()));
    assert_eq!(rendered.write(&out, true).unwrap(), written);
    let file = out.join("main.tf");
    assert_eq!(rendered.write(&file, true).unwrap_err().to_string(), format!("{} is not a folder", file.display()));
}

#[test]
fn every_built_in_template_renders_for_every_provider_with_its_outputs() {
    let registry = Registry::from_loaded(builtin::templates(), Vec::new());
    assert!(registry.errors.is_empty(), "{:?}", registry.errors);
    let key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIG9mZ2Zha2VrZXlmb3J0ZXN0c29ubHkxMjM0NTY3OA test@merlya";
    for entry in registry.entries() {
        let spec = &entry.template.spec;
        for provider in &spec.providers {
            let required: Vec<(String, String)> = spec
                .variables
                .iter()
                .filter(|v| v.required)
                .map(|v| {
                    let value = match v.name.as_str() {
                        "ssh_public_key" => key,
                        "message" => "hello",
                        _ => "web-01",
                    };
                    (v.name.clone(), value.to_string())
                })
                .collect();
            let a = Answers::resolve(spec, Some(provider.as_str()), None, &required).unwrap();
            let rendered =
                render(&entry.template, &a, &Keyring).unwrap_or_else(|e| panic!("{} {provider}: {e}", spec.key()));
            let text = rendered.files[0].content();
            assert!(text.ends_with("}\n") && !text.contains("\n\n\n"), "{} {provider}:\n{text}", spec.key());
        }
    }
    let basic = registry.get(&"basic-vm".parse::<TemplateRef>().unwrap()).unwrap();
    assert_eq!(basic.template.spec.providers.len(), 4);
}

#[test]
fn the_mcp_backend_renders_its_own_entry_point_as_json() {
    let schema = SCHEMA.replace(
        "    entry: main.tf.j2\n",
        "    entry: main.tf.j2\n  - backend: mcp\n    entry: mcp/request.json.j2\n",
    );
    let files = BTreeMap::from([
        ("main.tf.j2".to_string(), MAIN.to_string()),
        (
            "mcp/request.json.j2".to_string(),
            "{\"tool\": \"create_db\", \"arguments\": {\"name\": \"{{ name }}\", \"password\": {{ password | json }}}}\n"
                .to_string(),
        ),
    ]);
    let t = load(Source::BuiltIn, "probe", &schema, files).unwrap();
    let given = vec![("name".to_string(), "db \"one\"".to_string())];
    let a = Answers::resolve(&t.spec, None, Some(Backend::Mcp), &given).unwrap();
    let rendered = render(&t, &a, &Keyring).unwrap();
    assert_eq!(rendered.files[0].path, "mcp/request.json");
    let request: serde_json::Value = serde_json::from_str(rendered.files[0].content()).unwrap();
    assert_eq!(request["arguments"], serde_json::json!({"name": "db \"one\"", "password": null}));
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(rendered.write(dir.path(), false).unwrap(), [dir.path().join("mcp/request.json")]);
}
