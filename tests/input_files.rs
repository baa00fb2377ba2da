//! Broken input files through the real binary: each is refused with the file and the line named,
//! quickly, and nothing is imported or started from it (issue 25).

mod support;

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
