use super::*;

fn schema(name: &str, version: &str, description: &str) -> String {
    format!(
        "name: {name}\nversion: {version}\ncategory: storage\ndescription: {description}\nproviders: [local]\nbackends:\n  - backend: terraform\n    entry: main.tf.j2\nvariables:\n  - name: message\n    type: string\n    required: true\n"
    )
}

const MAIN: &str = "resource \"terraform_data\" \"m\" {\n  input = \"{{ message }}\"\n}\n";

fn template(source: Source, name: &str, version: &str, description: &str) -> Result<Template, TemplateError> {
    let files = BTreeMap::from([("main.tf.j2".to_string(), MAIN.to_string())]);
    load(source, name, &schema(name, version, description), files)
}

fn user(name: &str, version: &str) -> Result<Template, TemplateError> {
    template(Source::User(PathBuf::from(format!("/u/{name}"))), name, version, "Mine.")
}

fn built_in(name: &str, version: &str) -> Result<Template, TemplateError> {
    template(Source::BuiltIn, name, version, "Shipped.")
}

fn get<'a>(registry: &'a Registry, reference: &str) -> Result<&'a Entry, LookupError> {
    registry.get(&reference.parse().unwrap())
}

#[test]
fn a_name_resolves_to_its_highest_version_and_name_version_to_that_one() {
    let registry = Registry::from_loaded(
        vec![built_in("m", "1.0.0"), built_in("m", "1.10.0"), built_in("m", "1.9.3"), built_in("m", "2.0.0-rc.1")],
        Vec::new(),
    );
    assert_eq!(
        get(&registry, "m").unwrap().template.spec.version.to_string(),
        "1.10.0",
        "a release before a pre-release"
    );
    assert_eq!(get(&registry, "m:1.9.3").unwrap().template.spec.version.to_string(), "1.9.3");
    assert_eq!(get(&registry, "m:2.0.0-rc.1").unwrap().template.spec.version.to_string(), "2.0.0-rc.1");
    assert_eq!(
        get(&registry, "m:3.0.0").unwrap_err().to_string(),
        "template m has no version 3.0.0 (it has: 1.0.0, 1.9.3, 1.10.0, 2.0.0-rc.1)"
    );
    assert_eq!(get(&registry, "x").unwrap_err().to_string(), "no template named x (known: m)");
    let only_pre = Registry::from_loaded(vec![built_in("p", "0.1.0-alpha")], Vec::new());
    assert_eq!(get(&only_pre, "p").unwrap().template.spec.version.to_string(), "0.1.0-alpha");
    let (latest, versions) = registry.latest().next().unwrap();
    assert_eq!(latest.template.spec.version.to_string(), "1.10.0");
    assert_eq!(
        versions.iter().map(ToString::to_string).collect::<Vec<_>>(),
        ["2.0.0-rc.1", "1.10.0", "1.9.3", "1.0.0"]
    );
    assert!("m:1.0".parse::<TemplateRef>().unwrap_err().contains("not a semver version"));
    assert!(":1.0.0".parse::<TemplateRef>().is_err());
}

#[test]
fn a_user_template_overrides_the_built_in_one_of_the_same_name_and_version() {
    let registry = Registry::from_loaded(
        vec![built_in("m", "1.0.0"), built_in("n", "1.0.0")],
        vec![user("m", "1.0.0"), user("n", "1.1.0")],
    );
    let m = get(&registry, "m").unwrap();
    assert!(m.overrides);
    assert_eq!(m.template.spec.description, "Mine.");
    assert_eq!(m.template.source, Source::User(PathBuf::from("/u/m")));
    // A new version of a built-in name sits beside it.
    let n = get(&registry, "n").unwrap();
    assert!(!n.overrides);
    assert_eq!(n.template.spec.version.to_string(), "1.1.0");
    assert_eq!(get(&registry, "n:1.0.0").unwrap().template.source, Source::BuiltIn);
    assert_eq!(registry.entries().count(), 3);
    // Two user folders with the same name:version: the second is an error.
    let twice = Registry::from_loaded(Vec::new(), vec![user("m", "1.0.0"), user("m", "1.0.0")]);
    assert_eq!(twice.errors.len(), 1);
    assert!(
        twice.errors[0].to_string().contains("m:1.0.0 is defined twice (also by user (/u/m))"),
        "{}",
        twice.errors[0]
    );
}

#[test]
fn user_folders_load_beside_broken_ones_which_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let write = |path: &str, text: &str| {
        let path = dir.path().join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write("mine/template.yaml", &schema("mine", "1.0.0", "Mine."));
    write("mine/main.tf.j2", MAIN);
    write("versions/2.0.0/template.yaml", &schema("versioned", "2.0.0", "Two."));
    write("versions/2.0.0/main.tf.j2", MAIN);
    write("broken/template.yaml", &schema("broken", "1.0.0", "Broken.").replace("type: string", "type: text"));
    write("broken/main.tf.j2", MAIN);
    write("empty/readme.txt", "nothing");
    write(".hidden/template.yaml", "not: read");
    let registry = Registry::load(dir.path());
    assert!(get(&registry, "mine").is_ok());
    assert!(get(&registry, "versioned:2.0.0").is_ok());
    assert!(get(&registry, "data-marker").is_ok(), "the built-in ones are there too");
    let errors: Vec<String> = registry.errors.iter().map(ToString::to_string).collect();
    assert_eq!(errors.len(), 2, "{errors:?}");
    let broken = dir.path().join("broken/template.yaml");
    assert!(
        errors[0].starts_with(&format!("{}:11: variables[0].type: unknown variant `text`", broken.display())),
        "{errors:?}"
    );
    assert!(errors[1].ends_with("empty: no template.yaml here or in its folders"), "{errors:?}");
    let e = get(&registry, "broken").unwrap_err().to_string();
    assert!(
        e.starts_with("no template named broken (known: ")
            && e.contains("not loaded: ")
            && e.contains(":11: variables[0].type"),
        "{e}"
    );
}
