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

#[test]
fn a_huge_range_is_refused_before_expanding_naming_its_line() {
    let started = std::time::Instant::now();
    let errors = parse(ImportFormat::AnsibleIni, "[web]\nweb01\n[nodes]\nnode[0:2000000]\n").unwrap_err();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(errors[0].line, 4, "{errors:?}");
    assert!(errors[0].message.contains("2000001 hosts") && errors[0].message.contains("10000"), "{errors:?}");
    let yaml = "all:\n  children:\n    nodes:\n      hosts:\n        node[0:2000000]:\n";
    let errors = parse(ImportFormat::AnsibleYaml, yaml).unwrap_err();
    assert_eq!((errors.len(), errors[0].line), (1, 5), "{errors:?}");
    assert!(started.elapsed() < std::time::Duration::from_secs(2), "counted, not expanded: {:?}", started.elapsed());
    // The limit is per import: ranges that are fine alone add up.
    let errors = parse(ImportFormat::AnsibleIni, "a[1:6000]\nb[1:6000]\n").unwrap_err();
    assert_eq!(errors[0].line, 2, "{errors:?}");
    assert!(errors[0].message.contains("after the 6000 before it"), "{errors:?}");
    // Up to the limit is fine, and fast.
    let report = parse(ImportFormat::AnsibleIni, "n[1:10000]\n").unwrap();
    assert_eq!(report.hosts.len(), 10_000);
}

#[test]
fn duplicate_names_are_reported_with_their_lines() {
    let csv = "name,hostname\nweb01,10.0.0.1\ndb01,10.0.0.2\nweb01,10.0.0.3\n";
    let errors = parse(ImportFormat::Csv, csv).unwrap_err();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(errors[0].line, 4);
    assert!(errors[0].message.contains("web01 appears twice (first on line 2)"), "{errors:?}");

    let json = r#"[{"name":"a","hostname":"h"},{"name":"b","hostname":"h"},{"name":"a","hostname":"h"}]"#;
    let errors = parse(ImportFormat::Json, json).unwrap_err();
    assert!(errors[0].message.contains("entry 3: host a appears twice (first as entry 1)"), "{errors:?}");

    // Same name, different addresses in /etc/hosts: both lines named.
    let errors = parse(ImportFormat::EtcHosts, "10.0.0.1 web01\n10.0.0.9 other\n10.0.0.2 web01\n").unwrap_err();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(errors[0].line, 3);
    assert!(errors[0].message.contains("address 10.0.0.2, but line 1 gives 10.0.0.1"), "{errors:?}");

    // An Ansible host in several groups is merged, and the report says where.
    let ini = "[web]\nweb01 ansible_host=10.0.0.1\n[prod]\nweb01\ndb01\n[eu]\nweb01 ansible_user=ops\n";
    let report = parse(ImportFormat::AnsibleIni, ini).unwrap();
    assert_eq!(names(&report), ["web01", "db01"]);
    assert_eq!(report.hosts[0].tags, ["eu", "prod", "web"]);
    assert_eq!((report.hosts[0].hostname.as_str(), report.hosts[0].username.as_deref()), ("10.0.0.1", Some("ops")));
    assert_eq!(report.merged, ["web01 is listed on lines 2, 4, 7; merged into one host"]);
    // ... unless two of its lines disagree.
    let ini = "[web]\nweb01 ansible_port=2201\n[prod]\nweb01 ansible_port=2202\n";
    let errors = parse(ImportFormat::AnsibleIni, ini).unwrap_err();
    assert_eq!(errors[0].line, 4, "{errors:?}");
    assert!(errors[0].message.contains("port 2202, but line 2 gives 2201"), "{errors:?}");
    let yaml = "all:\n  children:\n    web:\n      hosts:\n        web01:\n    prod:\n      hosts:\n        web01:\n";
    let report = parse(ImportFormat::AnsibleYaml, yaml).unwrap();
    assert_eq!(report.merged, ["web01 is listed on lines 5, 8; merged into one host"]);
}

/// Ansible's become variables set the elevation (a become password set means a stored password
/// is needed; its value is not imported); a method merlya does not run is named with its line.
#[test]
fn ansible_become_sets_the_elevation() {
    use crate::inventory::Elevation;
    let ini = "[web]\nweb01 ansible_become=true\nweb02 ansible_become=yes ansible_become_method=doas\n\
               web03 ansible_become_method=su\nweb04 ansible_become=yes ansible_become_password=s3cret\n\
               web05 ansible_become=no ansible_become_method=sudo\nweb06\n";
    let report = parse(ImportFormat::AnsibleIni, ini).unwrap();
    let elevations: Vec<Elevation> = report.hosts.iter().map(|h| h.elevation).collect();
    assert_eq!(
        elevations,
        [Elevation::Sudo, Elevation::Doas, Elevation::Su, Elevation::SudoPassword, Elevation::None, Elevation::None]
    );
    let errors =
        parse(ImportFormat::AnsibleIni, "[web]\nweb01 ansible_become=yes ansible_become_method=pbrun\n").unwrap_err();
    assert!(errors[0].line == 2 && errors[0].message.contains("pbrun"), "{errors:?}");
    let yaml = "all:\n  hosts:\n    db01:\n      ansible_become: true\n      ansible_become_method: doas\n      ansible_become_pass: x\n";
    let report = parse(ImportFormat::AnsibleYaml, yaml).unwrap();
    assert_eq!(report.hosts[0].elevation, Elevation::DoasPassword);
}

/// TOML in its two forms: `[hosts.NAME]` tables and `[[hosts]]` with a name each; a missing name is
/// named by its place.
#[test]
fn toml_hosts_as_tables_or_an_array() {
    let tables = "[hosts.web01]\nhostname = \"10.0.0.1\"\ntags = [\"web\"]\n";
    assert_eq!(names(&parse(ImportFormat::Toml, tables).unwrap()), ["web01"]);
    let array = "[[hosts]]\nname = \"web01\"\nhostname = \"10.0.0.1\"\nport = 2222\n\n[[hosts]]\nname = \"db01\"\nhostname = \"10.0.0.2\"\nelevation = \"sudo\"\n";
    let report = parse(ImportFormat::Toml, array).unwrap();
    assert_eq!(names(&report), ["web01", "db01"]);
    assert_eq!(report.hosts[0].port, 2222);
    assert_eq!(report.hosts[1].elevation, crate::inventory::Elevation::Sudo);
    let errors = parse(ImportFormat::Toml, "[[hosts]]\nhostname = \"10.0.0.1\"\n").unwrap_err();
    assert!(errors[0].message.contains("hosts[0]") && errors[0].message.contains("name"), "{errors:?}");
    let errors = parse(ImportFormat::Toml, "[[hosts]]\nname = \"a\"\nhostnam = \"x\"\n").unwrap_err();
    assert_eq!(errors[0].line, 3, "{errors:?}");
}

/// Group variables reach the group's hosts as Ansible layers them: `all`, then outer groups, then
/// inner ones, then the host's own line; a wrong value is named with the host's line.
#[test]
fn ansible_group_vars_set_user_port_and_elevation_under_the_hosts_own() {
    use crate::inventory::Elevation;
    let ini = "[all:vars]\nansible_user=ops\n\n[db]\ndb01\ndb02 ansible_become=no\n\n[db:vars]\nansible_become=true\n\
               ansible_become_method=doas\nansible_port=2200\n\n[pg]\ndb03 ansible_user=pg\n\n[pg:vars]\n\
               ansible_become_method=sudo\n\n[db:children]\npg\n";
    let report = parse(ImportFormat::AnsibleIni, ini).unwrap();
    let by_name = |n: &str| report.hosts.iter().find(|h| h.name == n).unwrap();
    assert_eq!((by_name("db01").elevation, by_name("db01").port), (Elevation::Doas, 2200));
    assert_eq!(by_name("db01").username.as_deref(), Some("ops"), "all's vars");
    assert_eq!(by_name("db02").elevation, Elevation::None, "the host's own ansible_become=no wins");
    // pg is a child of db: its method wins over db's, db's become still applies; the host's user wins.
    assert_eq!((by_name("db03").elevation, by_name("db03").port), (Elevation::Sudo, 2200));
    assert_eq!(by_name("db03").username.as_deref(), Some("pg"));
    let errors = parse(ImportFormat::AnsibleIni, "[web]\nweb01\n[web:vars]\nansible_port=nope\n").unwrap_err();
    assert!(errors[0].line == 2 && errors[0].message.contains("ansible_port"), "{errors:?}");
    let errors = parse(ImportFormat::AnsibleIni, "[web:vars]\njunk\n").unwrap_err();
    assert!(errors[0].line == 2 && errors[0].message.contains("key=value"), "{errors:?}");

    let yaml = "all:\n  vars:\n    ansible_user: ops\n  children:\n    db:\n      vars:\n        ansible_become: true\n\
                \x20       ansible_port: 2200\n      hosts:\n        db01:\n        db02:\n          ansible_become: false\n";
    let report = parse(ImportFormat::AnsibleYaml, yaml).unwrap();
    let by_name = |n: &str| report.hosts.iter().find(|h| h.name == n).unwrap();
    assert_eq!((by_name("db01").elevation, by_name("db01").port), (Elevation::Sudo, 2200));
    assert_eq!(by_name("db01").username.as_deref(), Some("ops"));
    assert_eq!(by_name("db02").elevation, Elevation::None);
}
