//! The CLI speaks the console's language (`ui.language`, or `MERLYA_UI_LANGUAGE`): doctor, policy
//! check, hosts list, exec, pipeline, audit, secret, template, skill, mcp, approvals and state in French;
//! JSON, values and exit codes stay as they are.

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

#[test]
fn every_command_speaks_french_and_keeps_its_values_and_exit_codes() {
    let env = TestEnv::new();
    french(&env);
    let ran = env.run(&["exec", "localhost", "--", "true"]);
    assert_eq!(ran.status.code(), Some(0));
    assert!(text(&ran.stderr).contains("exécution ") && text(&ran.stderr).contains(": merlya audit list --run "));

    // A skill's findings: the words translated, the skill, hosts and verdicts as they are.
    let findings = env.ok(&["skill", "run", "disk_usage", "--targets", "localhost"]);
    assert!(findings.starts_with("disk_usage 1.0 — 1 hôte(s), "), "{findings}");
    assert!(findings.contains("hôte(s) OK : localhost") || findings.contains("en cause :"), "{findings}");

    let runs = env.ok(&["pipeline", "list"]);
    let header = runs.lines().next().unwrap_or_default();
    for word in ["ID", "TYPE", "ÉTAT", "CIBLES", "CRÉÉ", "RÉSUMÉ"] {
        assert!(header.contains(word), "{runs}");
    }
    let out = env.run(&["pipeline", "show", "nosuch"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("Erreur: aucun changement nosuch"), "{}", text(&out.stderr));

    let verified = env.ok(&["audit", "verify"]);
    assert!(verified.starts_with("chaîne d'audit intacte : "), "{verified}");
    let audit = env.ok(&["audit", "list"]);
    assert!(audit.starts_with("ID") && audit.contains("DEMANDÉ PAR") && audit.contains("COMMANDE"), "{audit}");
    assert!(audit.contains("localhost") && audit.contains("true"), "values stay as they are: {audit}");
    let out = env.run(&["audit", "list", "--since", "hier"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("attendu RFC 3339"), "{}", text(&out.stderr));

    let secrets = env.ok(&["secret", "list"]);
    assert!(secrets.starts_with("NOM") && secrets.contains("STOCKAGE") && secrets.contains("MIS À JOUR"), "{secrets}");

    let templates = env.ok(&["template", "list"]);
    assert!(templates.starts_with("NOM") && templates.contains("CATÉGORIE") && templates.contains("FOURNISSEURS"));
    assert!(templates.contains("basic-vm") && templates.contains("intégré"), "{templates}");
    let shown = env.ok(&["template", "show", "basic-vm"]);
    assert!(shown.contains("fournisseurs : aws") && shown.contains("requise") && shown.contains("par défaut : "));
    let json: serde_json::Value = serde_json::from_str(&env.ok(&["template", "list", "--format", "json"])).unwrap();
    assert!(json["templates"].as_array().unwrap().iter().any(|t| t["source"] == "built-in"), "JSON keeps its values");

    assert!(env.ok(&["skill", "list"]).lines().next().unwrap_or_default().contains("VÉRIFICATIONS"));
    assert!(env.ok(&["mcp", "list"]).starts_with("aucun serveur MCP configuré"));
    let out = env.run(&["approvals", "revoke", "99"]);
    assert_eq!(out.status.code(), Some(1), "the exit code is the same in every language");
    assert!(text(&out.stderr).contains("aucune règle n°99"), "{}", text(&out.stderr));
    assert!(env.ok(&["state", "list"]).starts_with("NOM") && env.ok(&["state", "list"]).contains("DÉRIVE"));
}

#[test]
fn every_command_speaks_english_by_default() {
    let env = TestEnv::new();
    let ran = env.run(&["exec", "localhost", "--", "true"]);
    assert!(text(&ran.stderr).starts_with("run ") && text(&ran.stderr).contains(": merlya audit list --run "));
    assert!(env.ok(&["pipeline", "list"]).starts_with("ID  KIND  STATUS  TARGETS  CREATED  SUMMARY"));
    assert!(env.ok(&["audit", "verify"]).starts_with("audit chain intact: "));
    assert!(env.ok(&["audit", "list"]).contains("ASKED BY"));
    assert!(env.ok(&["secret", "list"]).starts_with("NAME  BACKEND  UPDATED"));
    let templates = env.ok(&["template", "list"]);
    assert!(templates.starts_with("NAME") && templates.contains("PROVIDERS") && templates.contains("built-in"));
    assert!(env.ok(&["template", "show", "basic-vm"]).contains("providers: aws"));
    assert!(env.ok(&["mcp", "list"]).starts_with("no MCP server configured"));
    let out = env.run(&["approvals", "revoke", "99"]);
    assert_eq!((out.status.code(), text(&out.stderr).trim()), (Some(1), "no rule #99"));
}
