//! The CLI speaks the console's language (`ui.language`, or `MERLYA_UI_LANGUAGE`): doctor, policy
//! check, hosts list, exec's summary and errors in French; JSON and exit codes stay as they are.

use crate::support;

use support::{TestEnv, text};

fn french(env: &TestEnv) {
    std::fs::write(env.merlya_home().join("config.yaml"), "ui:\n  language: fr\n").unwrap();
}

#[test]
fn the_cli_speaks_french_when_the_console_does() {
    let env = TestEnv::new();
    french(&env);
    env.ok(&["hosts", "add", "web01", "--hostname", "192.0.2.7", "--tag", "web"]);
    let listed = env.ok(&["hosts", "list"]);
    let header = listed.lines().next().unwrap_or_default();
    for word in ["NOM", "ADRESSE", "UTILISATEUR", "ÉTIQUETTES", "JOIGNABLE", "DERNIÈRE ERREUR"] {
        assert!(header.contains(word), "{listed}");
    }
    assert!(listed.contains("web01") && listed.contains("192.0.2.7:22"), "values stay as they are: {listed}");
    // Machine output is not translated.
    let json: serde_json::Value = serde_json::from_str(&env.ok(&["hosts", "list", "--format", "json"])).unwrap();
    assert!(json.as_array().unwrap().iter().any(|h| h["name"] == "web01"), "{json}");

    let out = env.run(&["policy", "check", "--", "rm", "-rf", "/var/tmp/x"]);
    assert_eq!(out.status.code(), Some(3), "the exit code is the same in every language");
    assert!(text(&out.stdout).starts_with("APPROBATION REQUISE: rm -rf /var/tmp/x"), "{}", text(&out.stdout));
    assert!(text(&out.stdout).contains("ne lance que des lectures prouvées"), "{}", text(&out.stdout));
    assert!(env.ok(&["policy", "check", "--", "uptime"]).starts_with("AUTORISÉ: uptime"));

    let out = env.run(&["doctor"]);
    let shown = text(&out.stdout);
    assert!(shown.lines().any(|l| l.starts_with("OK         database")), "{shown}");
    assert!(shown.lines().any(|l| l.starts_with("ATTENTION  model")), "{shown}");
    assert!(shown.contains("à regarder : chacune dit comment corriger"), "{shown}");
    assert!(shown.contains("aucun modèle configuré") && shown.contains("→ tapez /setup dans la console"), "{shown}");
    assert!(shown.contains("Mio libres sur") && shown.contains("schéma version"), "{shown}");
    let out = env.run(&["doctor", "--format", "json"]);
    let json = text(&out.stdout);
    assert!(
        json.contains("\"status\": \"WARN\"") && json.contains("no model configured"),
        "JSON keeps English: {json}"
    );

    let ran = env.ok(&["exec", "localhost", "--", "true"]);
    assert!(ran.contains("HÔTE") && ran.contains("DURÉE") && ran.contains("1/1 hôtes réussis"), "{ran}");

    let out = env.run(&["hosts", "show", "nosuch"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).starts_with("Erreur: "), "{}", text(&out.stderr));
}

#[test]
fn english_stays_the_default_and_the_environment_override_switches_it() {
    let env = TestEnv::new();
    let listed = env.ok(&["hosts", "list"]);
    assert!(listed.starts_with("NAME") && listed.contains("REACHABLE"), "{listed}");
    let out = env.merlya(&["policy", "check", "--", "uptime"]).env("MERLYA_UI_LANGUAGE", "fr").output().unwrap();
    assert!(text(&out.stdout).starts_with("AUTORISÉ: uptime"), "{}", text(&out.stdout));
    assert!(env.ok(&["policy", "check", "--", "uptime"]).starts_with("ALLOWED: uptime"));
}
