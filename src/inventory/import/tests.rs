//! Importer tests over good and malformed files of every format.

use std::path::Path;

use super::*;

fn names(report: &ImportReport) -> Vec<&str> {
    report.hosts.iter().map(|h| h.name.as_str()).collect()
}

#[test]
fn detects_formats_by_name_and_content() {
    let cases = [
        ("hosts.csv", "", ImportFormat::Csv),
        ("inv.toml", "", ImportFormat::Toml),
        ("inv.json", "[]", ImportFormat::Json),
        ("inv.yaml", "- name: a\n  hostname: b\n", ImportFormat::Yaml),
        ("inv.yml", "all:\n  hosts:\n    a:\n", ImportFormat::AnsibleYaml),
        ("known_hosts", "a ssh-ed25519 AAAA\n", ImportFormat::KnownHosts),
        ("config", "Host a\n", ImportFormat::SshConfig),
        ("hosts", "127.0.0.1 localhost\n", ImportFormat::EtcHosts),
        ("hosts", "[web]\nweb01\n", ImportFormat::AnsibleIni),
        ("inventory", "web01\n", ImportFormat::AnsibleIni),
    ];
    for (name, text, expected) in cases {
        assert_eq!(detect_format(Path::new(name), text), Some(expected), "{name}");
    }
    assert_eq!(detect_format(Path::new("mystery"), "???"), None);
}

#[test]
fn etc_hosts_skips_local_entries() {
    let text = "127.0.0.1 localhost\n::1 ip6-localhost\n10.0.0.5 web01 web01.lan # app\n10.0.0.6 db01\n";
    let report = parse(ImportFormat::EtcHosts, text).unwrap();
    assert_eq!(names(&report), ["web01", "db01"]);
    assert_eq!(report.hosts[0].hostname, "10.0.0.5");
    assert_eq!(report.skipped.len(), 2);
    let errors = parse(ImportFormat::EtcHosts, "10.0.0.5 ok\nnot-an-ip web\n10.0.0.7\n").unwrap_err();
    assert_eq!(errors.iter().map(|e| e.line).collect::<Vec<_>>(), [2, 3]);
}

#[test]
fn ansible_ini_groups_children_ranges_and_vars() {
    let text = "\
bastion ansible_host=10.0.0.1 ansible_user=jump
[web]
web[01:03] ansible_user=deploy
[db]
db01 ansible_host=10.0.1.1 ansible_port=2222
[prod:children]
web
db
[prod:vars]
ntp=10.0.0.9
";
    let report = parse(ImportFormat::AnsibleIni, text).unwrap();
    assert_eq!(names(&report), ["bastion", "web01", "web02", "web03", "db01"]);
    let web02 = &report.hosts[2];
    assert_eq!(web02.username.as_deref(), Some("deploy"));
    assert_eq!(web02.tags, ["prod", "web"]);
    let db = &report.hosts[4];
    assert_eq!((db.hostname.as_str(), db.port), ("10.0.1.1", 2222));
    assert!(report.hosts[0].tags.is_empty());
}

#[test]
fn ansible_ini_errors_have_lines() {
    let errors = parse(ImportFormat::AnsibleIni, "[web\nweb01 ansible_port=abc\nweb[3:1]\nok junk\n").unwrap_err();
    assert_eq!(errors.iter().map(|e| e.line).collect::<Vec<_>>(), [1, 2, 3, 4]);
}

#[test]
fn ansible_yaml_nested_groups() {
    let text = "\
all:
  hosts:
    bastion:
      ansible_host: 10.0.0.1
  children:
    prod:
      children:
        web:
          hosts:
            web[1:2]:
              ansible_user: deploy
              ansible_port: 2200
";
    let report = parse(ImportFormat::AnsibleYaml, text).unwrap();
    assert_eq!(names(&report), ["bastion", "web1", "web2"]);
    assert_eq!(report.hosts[1].tags, ["prod", "web"]);
    assert_eq!(report.hosts[1].port, 2200);
    let errors = parse(ImportFormat::AnsibleYaml, "all:\n  hosts:\n    a: [\n").unwrap_err();
    assert!(errors[0].line >= 3, "{errors:?}");
    let errors = parse(ImportFormat::AnsibleYaml, "all:\n  hostz: {}\n").unwrap_err();
    assert!(errors[0].message.contains("unknown key"), "{errors:?}");
}

#[test]
fn csv_with_tags_and_line_errors() {
    let text = "name,hostname,port,username,tags\nweb01,10.0.0.1,22,deploy,web;prod\ndb01,10.0.0.2,,,\n";
    let report = parse(ImportFormat::Csv, text).unwrap();
    assert_eq!(names(&report), ["web01", "db01"]);
    assert_eq!(report.hosts[0].tags, ["prod", "web"]);
    let errors =
        parse(ImportFormat::Csv, "name,hostname,port\nok,1.2.3.4,22\nbad,1.2.3.5,abc\n,1.2.3.6,22\n").unwrap_err();
    assert_eq!(errors.iter().map(|e| e.line).collect::<Vec<_>>(), [3, 4]);
    let errors = parse(ImportFormat::Csv, "name,address\na,b\n").unwrap_err();
    assert!(errors.iter().any(|e| e.message.contains("unknown column \"address\"")), "{errors:?}");
}

#[test]
fn toml_hosts_tables() {
    let text = "[hosts.web01]\nhostname = \"10.0.0.1\"\nuser = \"deploy\"\nport = 2222\ntags = [\"web\"]\n";
    let report = parse(ImportFormat::Toml, text).unwrap();
    assert_eq!(report.hosts[0].username.as_deref(), Some("deploy"));
    assert_eq!(report.hosts[0].port, 2222);
    let errors = parse(ImportFormat::Toml, "[hosts.web01]\nhostname = \"a\"\nport = \"x\"\n").unwrap_err();
    assert_eq!(errors[0].line, 3, "{errors:?}");
    let errors = parse(ImportFormat::Toml, "[hosts.web01]\nhostname = \"a\"\ncolour = 1\n").unwrap_err();
    assert!(errors[0].message.contains("colour"), "{errors:?}");
}

#[test]
fn json_and_yaml_lists() {
    let json = r#"[{"name":"a","hostname":"10.0.0.1","tags":["x"]},{"name":"b","hostname":"h","elevation":"sudo"}]"#;
    let report = parse(ImportFormat::Json, json).unwrap();
    assert_eq!(names(&report), ["a", "b"]);
    assert_eq!(report.hosts[1].elevation, crate::inventory::Elevation::Sudo);
    let errors = parse(ImportFormat::Json, "[\n{\"name\":\"a\"}\n]").unwrap_err();
    assert_eq!(errors[0].line, 2, "{errors:?}");
    assert!(errors[0].message.contains("hostname"), "{errors:?}");
    let report = parse(ImportFormat::Yaml, "- name: a\n  hostname: h\n  user: u\n").unwrap();
    assert_eq!(report.hosts[0].username.as_deref(), Some("u"));
    let errors = parse(ImportFormat::Yaml, "- name: a\n  hostname: h\n  port: big\n").unwrap_err();
    assert_eq!(errors[0].line, 3, "{errors:?}");
}

#[test]
fn invalid_names_and_duplicates_import_nothing() {
    let errors = parse(
        ImportFormat::Json,
        r#"[{"name":"a b","hostname":"h"},{"name":"c","hostname":"h"},{"name":"c","hostname":"h"}]"#,
    )
    .unwrap_err();
    assert_eq!(errors.len(), 2, "{errors:?}");
}
