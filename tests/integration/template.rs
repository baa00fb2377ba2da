//! `merlya template` with the real binary: listing, showing and rendering the built-in templates, a
//! user's templates in MERLYA_HOME/templates (overriding a built-in one, a newer version, malformed
//! ones), secrets on the terminal and in the files, and the rendered files handed to real Terraform —
//! `init`, `validate` and `plan` for the `terraform_data` templates (no provider to download), `fmt`
//! for basic-vm on each provider (whose providers cannot be downloaded offline).

use crate::support;

use std::path::{Path, PathBuf};

use serde_json::Value;
use support::terraform::Terraform;
use support::{TestEnv, text};

const KEY: &str = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIKm5bR2ExampleKeyForTestsOnly0123456789abc test@merlya";

/// The repository's copy of a built-in template file (to make a user's variant of it).
fn built_in(path: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("templates").join(path)).unwrap()
}

/// Writes `files` (relative path, text) into MERLYA_HOME/templates/`folder`.
fn user_template(env: &TestEnv, folder: &str, files: &[(&str, &str)]) -> PathBuf {
    let dir = env.merlya_home().join("templates").join(folder);
    for (path, text) in files {
        let path = dir.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    dir
}

fn out_dir(env: &TestEnv, name: &str) -> PathBuf {
    env.dir.path().join("rendered").join(name)
}

/// Runs merlya expecting it to fail; returns stderr.
#[track_caller]
fn fails(env: &TestEnv, args: &[&str]) -> String {
    let out = env.run(args);
    assert_eq!(out.status.code(), Some(1), "merlya {args:?}: {}\n{}", text(&out.stdout), text(&out.stderr));
    text(&out.stderr)
}

#[test]
fn list_show_and_render_the_built_in_templates() {
    let env = TestEnv::new();
    let list = env.ok(&["template", "list"]);
    let lines: Vec<&str> = list.lines().collect();
    assert_eq!(lines[0].split_whitespace().collect::<Vec<_>>(), ["NAME", "VERSION", "CATEGORY", "PROVIDERS", "SOURCE"]);
    assert!(
        lines[1].starts_with("basic-vm")
            && lines[1].contains("compute")
            && lines[1].contains("aws, gcp, azure, proxmox")
    );
    assert!(lines[2].starts_with("data-marker") && lines[2].ends_with("built-in"), "{list}");
    assert!(lines[3].starts_with("data-pair") && lines[3].contains("database"), "{list}");

    let json: Value = serde_json::from_str(&env.ok(&["template", "list", "--format", "json"])).unwrap();
    let names: Vec<&str> = json["templates"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["basic-vm", "data-marker", "data-pair", "file-marker"]);
    assert_eq!(json["templates"][0]["versions"], serde_json::json!(["1.0.0"]));
    assert_eq!(json["templates"][0]["source"], "built-in");
    assert_eq!(json["errors"], serde_json::json!([]));

    let show = env.ok(&["template", "show", "data-pair:1.0.0"]);
    assert!(show.starts_with("data-pair 1.0.0 (database, built-in)\n"), "{show}");
    assert!(
        show.contains("\n  replicas (number)\n      How many replicas.\n      default: 1\n      rules: 0..9\n"),
        "{show}"
    );
    assert!(show.contains("\n  name (string, required)\n"), "{show}");
    assert!(show.contains("backends:  terraform (main.tf.j2)"), "{show}");
    assert!(show.contains("replica_ids  The replicas' ids, in order."), "{show}");
    let json: Value = serde_json::from_str(&env.ok(&["template", "show", "basic-vm", "--format", "json"])).unwrap();
    let size = json["variables"].as_array().unwrap().iter().find(|v| v["name"] == "size").unwrap();
    assert_eq!(size["type"], "string");
    assert_eq!(size["provider_defaults"]["gcp"], "e2-small");
    assert_eq!(json["outputs"][0]["name"], "id");

    let out = out_dir(&env, "marker");
    let dir = out.display().to_string();
    let said = env.ok(&[
        "template",
        "render",
        "data-marker",
        "--var",
        "message=hello",
        "--var",
        "tags={env: prod}",
        "--out",
        &dir,
    ]);
    assert_eq!(
        said,
        format!(
            "rendered data-marker 1.0.0 for local (terraform) into {dir}:\n  {dir}/main.tf ({} bytes)\nanswers:\n  message = \"hello\"\n  tags = {{\"env\":\"prod\"}}\n",
            std::fs::metadata(out.join("main.tf")).unwrap().len()
        )
    );
    let main = std::fs::read_to_string(out.join("main.tf")).unwrap();
    assert!(main.contains("    message = \"hello\"\n    tags    = { \"env\" = \"prod\" }\n"), "{main}");
    // Nothing else was made: no database, no log.
    assert!(!env.merlya_home().join("merlya.db").exists());

    let e = fails(&env, &["template", "show", "no-such"]);
    assert!(e.contains("no template named no-such (known: basic-vm, data-marker, data-pair, file-marker)"), "{e}");
    let e = fails(&env, &["template", "show", "data-pair:2.0.0"]);
    assert!(e.contains("template data-pair has no version 2.0.0 (it has: 1.0.0)"), "{e}");
}

#[test]
fn render_refuses_a_folder_in_use_and_answers_that_do_not_fit_naming_the_variable() {
    let env = TestEnv::new();
    let dir = out_dir(&env, "pair").display().to_string();
    let render = |extra: &[&str]| {
        let args = [&["template", "render", "data-pair", "--out", dir.as_str()][..], extra].concat();
        env.run(&args)
    };
    let said = |extra: &[&str]| {
        let out = render(extra);
        assert_eq!(out.status.code(), Some(1), "{extra:?}: {}", text(&out.stdout));
        text(&out.stderr)
    };
    let e = said(&[]);
    assert!(e.contains("template data-pair: variable name is required: The primary's name"), "{e}");
    let e = said(&["--var", "name=db", "--var", "replicas=two"]);
    assert!(e.contains("variable replicas (number): expected a number, got `two`"), "{e}");
    let e = said(&["--var", "name=db", "--var", "protected=yes"]);
    assert!(e.contains("variable protected (boolean): expected a boolean (true or false), got `yes`"), "{e}");
    let e = said(&["--var", "name=db", "--var", "replicas=12"]);
    assert!(e.contains("variable replicas: 12 is above the maximum of 9"), "{e}");
    let e = said(&["--var", "name=Primary DB"]);
    assert!(e.contains("variable name: \"Primary DB\" does not match the pattern [a-z][a-z0-9-]{0,39}"), "{e}");
    let e = said(&["--var", "name=db", "--var", "colour=red"]);
    assert!(
        e.contains("template data-pair has no variable colour (its variables: name, replicas, protected, password)"),
        "{e}"
    );
    let e = said(&["--var", "name=db", "--provider", "aws"]);
    assert!(e.contains("template data-pair: unknown provider aws (its providers: local)"), "{e}");
    let e = said(&["--var", "name=db", "--backend", "mcp"]);
    assert!(e.contains("template data-pair has no mcp backend (it has: terraform)"), "{e}");
    assert!(!Path::new(&dir).exists(), "nothing written before the answers fit");

    env.ok(&["template", "render", "data-pair", "--out", &dir, "--var", "name=db"]);
    let e = said(&["--var", "name=db"]);
    assert!(e.contains(&format!("{dir} is not empty (use --force to write over it)")), "{e}");
    env.ok(&["template", "render", "data-pair", "--out", &dir, "--var", "name=db2", "--force"]);
    let main = std::fs::read_to_string(Path::new(&dir).join("main.tf")).unwrap();
    assert!(main.contains("name     = \"db2\""), "{main}");

    let e = fails(&env, &["template", "render", "basic-vm", "--out", &out_dir(&env, "vm").display().to_string()]);
    assert!(e.contains("choose a provider with --provider (its providers: aws, gcp, azure, proxmox)"), "{e}");
}

#[test]
fn a_secret_reaches_the_rendered_file_and_nothing_on_the_terminal() {
    let env = TestEnv::new();
    let secret = "Tr0ub4dor-and-3";
    let dir = out_dir(&env, "pair").display().to_string();
    let pass = format!("password={secret}");
    let out = env.ok(&["template", "render", "data-pair", "--out", &dir, "--var", "name=db", "--var", &pass]);
    assert!(out.contains("  password = ***\n") && !out.contains(secret), "{out}");
    let main = std::fs::read_to_string(Path::new(&dir).join("main.tf")).unwrap();
    assert!(main.contains(&format!("password = sensitive(\"{secret}\")")), "{main}");

    // A value failing its rule is refused without being said.
    let short = env.run(&[
        "template",
        "render",
        "data-pair",
        "--out",
        &dir,
        "--force",
        "--var",
        "name=db",
        "--var",
        "password=abc12",
    ]);
    let e = text(&short.stderr);
    assert!(
        e.contains("variable password: the secret is 5 characters long, below the minimum of 8")
            && !e.contains("abc12"),
        "{e}"
    );

    // A reference to nothing on the keyring names the variable and the reference.
    let e = fails(
        &env,
        &[
            "template",
            "render",
            "data-pair",
            "--out",
            &dir,
            "--force",
            "--var",
            "name=db",
            "--var",
            "password=@db:prod:password",
        ],
    );
    assert!(e.contains("variable password: no secret @db:prod:password on the keyring"), "{e}");

    // A reference to the real kernel keyring is resolved only into the file.
    let m = env!("CARGO_BIN_EXE_merlya");
    let script = format!(
        "printf '{secret}\\n' | '{m}' secret set db:prod:password >/dev/null && \
         '{m}' template render data-pair --out '{dir}' --force --var name=db --var password=@db:prod:password"
    );
    let out = env.keyring_session(&script).env("MERLYA_SECRETS_BACKEND", "keyring").output().unwrap();
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(stdout.contains("  password = @db:prod:password\n") && !stdout.contains(secret), "{stdout}");
    let main = std::fs::read_to_string(Path::new(&dir).join("main.tf")).unwrap();
    assert!(main.contains(&format!("password = sensitive(\"{secret}\")")), "{main}");
}

#[test]
fn a_user_template_overrides_the_built_in_one_and_a_newer_version_is_the_default() {
    let env = TestEnv::new();
    let schema = built_in("data-marker/template.yaml");
    let main = built_in("data-marker/main.tf.j2");
    let mine = schema.replace("description: A marker kept", "description: My marker kept");
    let main_mine =
        main.replace("resource \"terraform_data\" \"marker\"", "# mine\nresource \"terraform_data\" \"marker\"");
    let folder = user_template(&env, "data-marker", &[("template.yaml", &mine), ("main.tf.j2", &main_mine)]);

    let list = env.ok(&["template", "list"]);
    let row = list.lines().find(|l| l.starts_with("data-marker")).unwrap();
    assert!(row.ends_with("user, overrides built-in"), "{list}");
    let show = env.ok(&["template", "show", "data-marker"]);
    assert!(show.starts_with("data-marker 1.0.0 (storage, user, overrides built-in)\nMy marker kept"), "{show}");
    assert!(show.contains(&format!("folder:    {}", folder.display())), "{show}");
    let dir = out_dir(&env, "mine").display().to_string();
    env.ok(&["template", "render", "data-marker", "--var", "message=m", "--out", &dir]);
    assert!(std::fs::read_to_string(Path::new(&dir).join("main.tf")).unwrap().contains("# mine\n"));

    // A newer version, kept as NAME/VERSION, becomes what the name means; the older stays reachable.
    let newer = schema.replace("version: 1.0.0", "version: 1.1.0");
    let main_newer =
        main.replace("resource \"terraform_data\" \"marker\"", "# newer\nresource \"terraform_data\" \"marker\"");
    user_template(&env, "marker-versions/1.1.0", &[("template.yaml", &newer), ("main.tf.j2", &main_newer)]);
    let list = env.ok(&["template", "list"]);
    let row = list.lines().find(|l| l.starts_with("data-marker")).unwrap();
    assert!(row.contains("1.1.0 (+1 older)") && row.ends_with("user"), "{list}");
    let json: Value = serde_json::from_str(&env.ok(&["template", "list", "--format", "json"])).unwrap();
    let marker = json["templates"].as_array().unwrap().iter().find(|t| t["name"] == "data-marker").unwrap().clone();
    assert_eq!(marker["versions"], serde_json::json!(["1.1.0", "1.0.0"]));
    let dir = out_dir(&env, "newer").display().to_string();
    env.ok(&["template", "render", "data-marker", "--var", "message=m", "--out", &dir]);
    assert!(std::fs::read_to_string(Path::new(&dir).join("main.tf")).unwrap().contains("# newer\n"));
    let show = env.ok(&["template", "show", "data-marker:1.0.0"]);
    assert!(show.contains("user, overrides built-in"), "{show}");
}

#[test]
fn a_malformed_user_template_is_an_error_naming_the_file_the_field_and_the_line() {
    let env = TestEnv::new();
    let schema = built_in("data-marker/template.yaml");
    let main = built_in("data-marker/main.tf.j2");
    let line = schema.lines().position(|l| l.contains("type: map")).unwrap() + 1;
    let broken = schema.replace("name: data-marker", "name: broken").replace("type: map", "type: dictionary");
    let folder = user_template(&env, "broken", &[("template.yaml", &broken), ("main.tf.j2", &main)]);
    let undeclared = schema.replace("name: data-marker", "name: sloppy");
    let sloppy_main = main.replace("\"{{ message }}\"", "\"{{ mesage }}\"");
    let sloppy = user_template(&env, "sloppy", &[("template.yaml", &undeclared), ("main.tf.j2", &sloppy_main)]);

    let out = env.run(&["template", "list"]);
    assert_eq!(out.status.code(), Some(1));
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(stdout.contains("data-marker") && !stdout.contains("broken"), "the valid ones are still listed: {stdout}");
    let expected = format!(
        "invalid template: {}:{line}: variables[1].type: unknown variant `dictionary`, expected one of",
        folder.join("template.yaml").display()
    );
    assert!(stderr.contains(&expected), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "invalid template: {}: template sloppy: uses variable mesage, which its variables do not declare",
            sloppy.join("main.tf.j2").display()
        )),
        "{stderr}"
    );
    let e = fails(&env, &["template", "show", "broken"]);
    assert!(e.contains(&format!("{}:{line}: variables[1].type", folder.join("template.yaml").display())), "{e}");
    let json: Value = serde_json::from_str(&text(&env.run(&["template", "list", "--format", "json"]).stdout)).unwrap();
    assert_eq!(json["errors"].as_array().unwrap().len(), 2, "{json}");
}

#[test]
fn terraform_data_templates_init_validate_and_plan_with_real_terraform() {
    let env = TestEnv::new();
    let tf = Terraform::new(env.dir.path());
    for (template, vars, adds) in [
        ("data-marker", vec!["message=hello \"world\" ${path.cwd}", "tags={env: prod, team: sre}"], 1),
        ("data-pair", vec!["name=db", "replicas=2", "password=s3cret-value-9"], 3),
        ("data-pair", vec!["name=solo", "replicas=0", "protected=true"], 1),
    ] {
        let out = out_dir(&env, &format!("{template}-{adds}"));
        let dir = out.display().to_string();
        let mut args = vec!["template", "render", template, "--out", dir.as_str()];
        for var in &vars {
            args.extend(["--var", var]);
        }
        env.ok(&args);
        tf.expect(&out, &["init", "-input=false", "-no-color"], 0);
        let valid = tf.expect(&out, &["validate", "-no-color"], 0);
        assert!(valid.contains("The configuration is valid"), "{valid}");
        tf.expect(&out, &["fmt", "-check", "-diff"], 0);
        // -detailed-exitcode: 2 is "there are changes".
        let plan = tf.expect(&out, &["plan", "-input=false", "-no-color", "-detailed-exitcode"], 2);
        assert!(plan.contains(&format!("Plan: {adds} to add, 0 to change, 0 to destroy.")), "{plan}");
        if template == "data-marker" {
            // A value is text to Terraform, never an expression it evaluates.
            assert!(plan.contains(r#"+ message = "hello \"world\" ${path.cwd}""#), "{plan}");
        } else if vars.iter().any(|v| v.starts_with("password=")) {
            assert!(!plan.contains("s3cret-value-9") && plan.contains("(sensitive value)"), "{plan}");
        }
    }
}

#[test]
fn basic_vm_renders_terraform_that_parses_and_is_formatted_for_every_provider() {
    let env = TestEnv::new();
    let tf = Terraform::new(env.dir.path());
    let key = format!("ssh_public_key={KEY}");
    for provider in ["aws", "gcp", "azure", "proxmox"] {
        for public in ["true", "false"] {
            let out = out_dir(&env, &format!("{provider}-{public}"));
            let dir = out.display().to_string();
            let public_ip = format!("public_ip={public}");
            env.ok(&[
                "template",
                "render",
                "basic-vm",
                "--provider",
                provider,
                "--out",
                &dir,
                "--var",
                "vm_name=web-01",
                "--var",
                &key,
                "--var",
                &public_ip,
                "--var",
                "tags={env: prod}",
                "--var",
                "password=long-enough-pass",
            ]);
            // fmt parses every file (a syntax error fails it) and says whether it is formatted.
            let diff = tf.expect(&out, &["fmt", "-check", "-diff", "-no-color"], 0);
            assert_eq!(diff, "", "{provider} public_ip={public}");
            let main = std::fs::read_to_string(out.join("main.tf")).unwrap();
            for output in ["id", "private_ip", "public_ip"] {
                assert!(main.contains(&format!("output \"{output}\" {{")), "{provider}: {main}");
            }
        }
    }
    // The provider's defaults are in its file.
    let aws = std::fs::read_to_string(out_dir(&env, "aws-true").join("main.tf")).unwrap();
    assert!(
        aws.contains("instance_type               = \"t3.micro\"") && aws.contains("region = \"eu-west-3\""),
        "{aws}"
    );
    let proxmox = std::fs::read_to_string(out_dir(&env, "proxmox-false").join("main.tf")).unwrap();
    assert!(proxmox.contains("cores = 2") && proxmox.contains("password = \"long-enough-pass\""), "{proxmox}");
}
