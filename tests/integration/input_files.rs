//! Broken input files through the real binary: each is refused with the file and the line named,
//! quickly, and nothing is imported or started from it (issue 25).

use crate::support;

use support::{TestEnv, text};

/// `merlya hosts import PATH`: the exit code and what stderr said.
fn import(env: &TestEnv, path: &std::path::Path) -> (Option<i32>, String) {
    let out = env.run(&["hosts", "import", path.to_str().unwrap()]);
    (out.status.code(), text(&out.stderr))
}

/// Only localhost is in the inventory.
fn nothing_imported(env: &TestEnv) {
    let listed: Vec<serde_json::Value> = serde_json::from_str(&env.ok(&["hosts", "list", "--format", "json"])).unwrap();
    assert_eq!(listed.len(), 1, "nothing imported: {listed:?}");
}

#[test]
fn a_host_range_past_every_number_is_refused_not_read_as_no_host() {
    let env = TestEnv::new();
    for (name, body) in [
        ("inventory.ini", "[web]\nn[0:18446744073709551615]\n"),
        ("inventory.yml", "all:\n  hosts:\n    n[0:18446744073709551615]:\n"),
    ] {
        let path = env.dir.path().join(name);
        std::fs::write(&path, body).unwrap();
        let (code, err) = import(&env, &path);
        assert_eq!(code, Some(1), "{name}: {err}");
        assert!(err.contains("n[0:18446744073709551615]") && err.contains("18446744073709551616 hosts"), "{err}");
        assert!(err.contains("more than the 10000 one import may hold"), "names the limit: {err}");
        nothing_imported(&env);
    }
}

/// 200 000 levels of nesting (the parser alone took minutes on it) after `prefix`.
fn deep(prefix: &str) -> String {
    format!("{prefix}{}\n", "[".repeat(200_000))
}

#[test]
fn a_deeply_nested_config_inventory_skill_or_task_list_is_refused_naming_the_file_and_line() {
    let env = TestEnv::new();
    let home = env.merlya_home();
    // config.yaml: every command stops, naming the line.
    let config = home.join("config.yaml");
    std::fs::write(&config, deep("ssh:\n  default_user: ")).unwrap();
    let out = env.run(&["hosts", "list"]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(
        err.contains(&format!("{}:2:", config.display())) && err.contains("nested deeper than 100 levels"),
        "{err}"
    );
    std::fs::remove_file(&config).unwrap();

    // An inventory, in either YAML flavour.
    for (name, body) in [("inventory.yml", deep("all:\n  hosts: ")), ("hosts.yaml", deep("- "))] {
        let path = env.dir.path().join(name);
        std::fs::write(&path, body).unwrap();
        let (code, err) = import(&env, &path);
        assert_eq!(code, Some(1), "{name}: {err}");
        assert!(err.contains(&path.display().to_string()) && err.contains("nested deeper than 100 levels"), "{err}");
        assert!(err.contains("line "), "{name}: names the line: {err}");
        nothing_imported(&env);
    }

    // A skill of the user's: listed as invalid, the others still there.
    let skills = home.join("skills");
    std::fs::create_dir_all(&skills).unwrap();
    std::fs::write(skills.join("deep.yaml"), deep("name: deep\nsteps: ")).unwrap();
    let out = env.run(&["skill", "list"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("deep.yaml:2: (file): nested deeper than 100 levels"), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("incident_triage"), "built-in skills still listed");
    std::fs::remove_file(skills.join("deep.yaml")).unwrap();

    // A task list for `merlya run -f`.
    let tasks = env.dir.path().join("tasks.yml");
    std::fs::write(&tasks, deep("- ")).unwrap();
    let out = env.run(&["run", "-f", tasks.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(err.contains(&format!("{}:1: nested deeper than 100 levels", tasks.display())), "{err}");
}

#[test]
fn a_theme_or_keymap_that_is_deep_not_utf8_or_a_folder_is_an_error_not_ignored() {
    let env = TestEnv::new();
    let home = env.merlya_home();
    for (key, dir, file) in [("ui.theme", "themes", "light.yaml"), ("ui.keymap", "keymaps", "vim.yaml")] {
        let path = home.join(dir).join(file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let value = file.trim_end_matches(".yaml");
        let broken = [
            "nested deeper than 100 levels",
            "line 1: column 8: byte 0xff is not UTF-8",
            "is a folder, expected a file",
        ];
        for said in broken {
            match said {
                "is a folder, expected a file" => {
                    std::fs::remove_file(&path).unwrap();
                    std::fs::create_dir(&path).unwrap();
                }
                s if s.contains("UTF-8") => std::fs::write(&path, b"global:\xff\n").unwrap(),
                _ => std::fs::write(&path, deep("global: ")).unwrap(),
            }
            let out = env.run(&["config", "set", key, value]);
            assert_eq!(out.status.code(), Some(1), "{key}: {said}: {}", text(&out.stdout));
            let err = text(&out.stderr);
            assert!(err.contains(&path.display().to_string()) && err.contains(said), "{key}: {err}");
        }
        std::fs::remove_dir(&path).unwrap();
        env.ok(&["config", "set", key, value]);
    }
}

#[test]
fn a_huge_or_non_utf8_file_is_refused_with_a_short_message_naming_its_line() {
    let env = TestEnv::new();
    // A 10 MB value: refused by its size, in a message that does not repeat it.
    let path = env.dir.path().join("hosts.yaml");
    std::fs::write(&path, format!("- name: web01\n  hostname: {}\n", "a".repeat(10 * 1024 * 1024))).unwrap();
    let (code, err) = import(&env, &path);
    assert_eq!(code, Some(1));
    assert!(err.contains(&path.display().to_string()) && err.contains("merlya reads at most 8.0 MiB"), "{err}");
    assert!(err.len() < 500, "a short message: {} bytes", err.len());
    nothing_imported(&env);
    // A long value under the limit is refused by its length, and only its start is quoted back.
    std::fs::write(&path, format!("- name: web{}!\n  hostname: h\n", "0".repeat(1024 * 1024))).unwrap();
    let (code, err) = import(&env, &path);
    assert_eq!(code, Some(1));
    assert!(
        err.contains("characters long; at most 253 are allowed") && err.len() < 1000,
        "{} bytes: {}",
        err.len(),
        &err[..err.len().min(600)]
    );

    let config = env.merlya_home().join("config.yaml");
    std::fs::write(&config, format!("ssh:\n  default_user: {}\n", "A".repeat(10 * 1024 * 1024))).unwrap();
    let out = env.run(&["hosts", "list"]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(err.contains("config.yaml") && err.contains("merlya reads at most 1.0 MiB") && err.len() < 500, "{err}");
    std::fs::remove_file(&config).unwrap();

    // Not UTF-8: the line and column of the first bad byte.
    for (name, body) in
        [("inventory.ini", &b"[web]\nweb01\ncaf\xe9\n"[..]), ("hosts.csv", b"name,hostname\nweb\xff,h\n")]
    {
        let path = env.dir.path().join(name);
        std::fs::write(&path, body).unwrap();
        let (code, err) = import(&env, &path);
        assert_eq!(code, Some(1), "{name}");
        assert!(err.contains(&format!("{}:", path.display())) && err.contains("is not UTF-8"), "{name}: {err}");
        let line = if name.ends_with(".ini") { ":3: column 4" } else { ":2: column 4" };
        assert!(err.contains(line), "{name}: {err}");
    }
    std::fs::write(&config, b"ssh:\n  default_user: ren\xe9\n").unwrap();
    let err = text(&env.run(&["hosts", "list"]).stderr);
    assert!(err.contains("config.yaml:2: column 20: byte 0xe9 is not UTF-8"), "{err}");
}
