//! What an Ansible check run executes although it is a "dry run" (issue 24 §4):
//! tasks with `check_mode: false`, tasks that run elsewhere (`delegate_to`,
//! `local_action`, `connection: local` — often the controller, as the person
//! running merlya), lookups that run commands or write files on the controller
//! (`pipe`, `lines`, `password`…), the `script` module, plugins beside the
//! playbook or in its roles, and `ansible.cfg` settings that load code or run
//! a program. Found by reading every YAML file and `ansible.cfg` of the
//! playbook's folder (its includes, roles, group and host variables); a plan
//! with any of them is asked about before its dry run, naming each one.

use std::path::{Path, PathBuf};

/// Lookup plugins that only read what Ansible already has: anything else may run
/// a command, write a file or reach the network on the controller.
const PURE_LOOKUPS: [&str; 20] = [
    "file",
    "env",
    "vars",
    "items",
    "dict",
    "first_found",
    "fileglob",
    "template",
    "indexed_items",
    "sequence",
    "subelements",
    "together",
    "nested",
    "flattened",
    "random_choice",
    "ini",
    "csvfile",
    "varnames",
    "list",
    "inventory_hostnames",
];

/// Folders whose Python Ansible loads from beside a playbook or in a role.
const PLUGIN_DIRS: [&str; 12] = [
    "library",
    "module_utils",
    "action_plugins",
    "callback_plugins",
    "connection_plugins",
    "filter_plugins",
    "lookup_plugins",
    "vars_plugins",
    "strategy_plugins",
    "inventory_plugins",
    "test_plugins",
    "cache_plugins",
];

/// `ansible.cfg` keys that load code or run a program.
const CFG_KEYS: [&str; 14] = [
    "library",
    "module_utils",
    "action_plugins",
    "callback_plugins",
    "callbacks_enabled",
    "callback_whitelist",
    "connection_plugins",
    "filter_plugins",
    "lookup_plugins",
    "vars_plugins",
    "strategy_plugins",
    "vault_password_file",
    "vault_identity_list",
    "become_exe",
];

/// Everything in `folder` (the playbook's) that makes its check run more than a dry run.
/// What [`scan`] found.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Found {
    /// What runs for real during the check run (asked about before it).
    pub runs: Vec<String>,
    /// Files outside the playbook's folder, which the pin does not cover (named in the approval).
    pub unpinned: Vec<String>,
}

/// [`everything`], sorted into what runs during the dry run and what the pin does not cover.
pub fn scan(folder: &Path, playbook: &Path, skip: &[PathBuf]) -> Found {
    let (unpinned, runs) = everything(folder, playbook, skip).into_iter().partition(|f| f.contains(NOT_PINNED));
    Found { runs, unpinned }
}

/// The mark of a file the pin does not cover.
const NOT_PINNED: &str = "NOT PINNED:";

/// `skip`: folders left out (merlya's own home).
fn everything(folder: &Path, playbook: &Path, skip: &[PathBuf]) -> Vec<String> {
    let mut found = Vec::new();
    let mut files = Vec::new();
    let skip: Vec<PathBuf> = skip.iter().map(|s| std::fs::canonicalize(s).unwrap_or_else(|_| s.clone())).collect();
    collect(folder, &mut files, &mut found, 0, &skip);
    files.sort();
    if !files.iter().any(|f| f == playbook) {
        files.push(playbook.to_path_buf());
    }
    for file in files {
        let name = file.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_string();
        let Ok(text) = std::fs::read_to_string(&file) else { continue };
        let shown = file.strip_prefix(folder).unwrap_or(&file).display().to_string();
        if name == "ansible.cfg" {
            found.extend(config_hazards(&shown, &text));
        } else {
            found.extend(yaml_hazards(&shown, &text));
        }
    }
    if let Ok(cfg) = std::env::var("ANSIBLE_CONFIG") {
        found.push(format!("ANSIBLE_CONFIG={cfg} is read (it may load plugins); it is not checked"));
    }
    found.dedup();
    found
}

/// YAML files, `ansible.cfg` and plugin folders under `dir` (`.git` and links to folders left out).
fn collect(dir: &Path, files: &mut Vec<PathBuf>, found: &mut Vec<String>, depth: usize, skip: &[PathBuf]) {
    if depth > 12 || std::fs::canonicalize(dir).is_ok_and(|real| skip.contains(&real)) {
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        let Ok(kind) = entry.file_type() else { continue };
        let name = entry.file_name().to_string_lossy().to_string();
        if kind.is_dir() {
            if PLUGIN_DIRS.contains(&name.as_str()) && std::fs::read_dir(&path).is_ok_and(|mut d| d.next().is_some()) {
                found.push(format!("{}: plugins or modules merlya cannot check run on this machine", path.display()));
            }
            if name != ".git" {
                collect(&path, files, found, depth + 1, skip);
            }
        } else if name == "ansible.cfg" || name.ends_with(".yml") || name.ends_with(".yaml") {
            files.push(path);
        }
    }
}

/// Keys of `ansible.cfg` that load code or run a program.
fn config_hazards(file: &str, text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|line| line.split_once('='))
        .map(|(key, value)| (key.trim(), value.trim()))
        .filter(|(key, value)| CFG_KEYS.contains(key) && !value.is_empty())
        .map(|(key, value)| format!("{file}: `{key} = {value}` loads code or runs a program on this machine"))
        .collect()
}

/// Tasks and variables of one YAML file that run code during `--check`.
fn yaml_hazards(file: &str, text: &str) -> Vec<String> {
    let mut found = Vec::new();
    if let Err(e) = crate::input::check_yaml_depth(text) {
        // Ansible may still load it; merlya cannot look inside.
        found.push(format!("{file}: {e}; not checked"));
        return found;
    }
    let Ok(doc) = yaml_serde::from_str::<yaml_serde::Value>(text) else {
        // Not YAML merlya can read: Ansible may still load it.
        if text.contains("check_mode") || text.contains("delegate_to") || text.contains("lookup(") {
            found.push(format!("{file}: cannot be read as YAML and mentions tasks that run code; not checked"));
        }
        return found;
    };
    walk(file, &doc, "", &mut found);
    found
}

fn walk(file: &str, value: &yaml_serde::Value, task: &str, found: &mut Vec<String>) {
    match value {
        yaml_serde::Value::Sequence(items) => {
            for item in items {
                walk(file, item, task, found);
            }
        }
        yaml_serde::Value::Mapping(map) => {
            let name = map.get("name").and_then(|n| n.as_str()).map(str::to_string);
            let here = name.as_deref().unwrap_or(task);
            let label = if here.is_empty() { String::new() } else { format!("task `{here}`: ") };
            for (key, inner) in map {
                let Some(key) = key.as_str() else { continue };
                let scalar = inner.as_str().map(str::to_string).or_else(|| inner.as_bool().map(|b| b.to_string()));
                match (key, scalar.as_deref()) {
                    ("check_mode", Some("false" | "no" | "False" | "off")) | ("always_run", Some("true" | "yes")) => {
                        found.push(format!("{file}: {label}`check_mode: false` runs for real during the dry run"))
                    }
                    ("delegate_to", Some(target)) => found.push(format!(
                        "{file}: {label}runs on `{target}` (delegate_to){}",
                        if is_controller(target) { ", this machine, as the user running merlya" } else { "" }
                    )),
                    ("local_action", _) => found.push(format!("{file}: {label}runs on this machine (local_action)")),
                    ("connection", Some("local")) | ("ansible_connection", Some("local")) => {
                        found.push(format!("{file}: {label}runs on this machine (connection: local)"))
                    }
                    ("script" | "ansible.builtin.script", _) => {
                        found.push(format!("{file}: {label}copies and runs a local script (script)"))
                    }
                    (k, _)
                        if k.starts_with("ansible_") && (k.ends_with("_executable") || k.ends_with("_interpreter")) =>
                    {
                        found.push(format!("{file}: `{k}` chooses the program Ansible runs"))
                    }
                    _ => {}
                }
                if let Some(path) = scalar.as_deref().filter(|p| REFERENCES.contains(&key) && outside(p)) {
                    found.push(format!(
                        "{file}: {label}{NOT_PINNED} `{path}` is outside the playbook's folder; it is read when the playbook runs"
                    ));
                }
                walk(file, inner, here, found);
            }
        }
        yaml_serde::Value::String(text) => {
            for lookup in impure_lookups(text) {
                let label = if task.is_empty() { String::new() } else { format!("task `{task}`: ") };
                found.push(format!("{file}: {label}lookup `{lookup}` runs on this machine while templating"));
            }
        }
        _ => {}
    }
}

/// Names of lookup plugins in `text` (`lookup('pipe', …)`, `query("lines", …)`, `q('x')`) that are not pure.
fn impure_lookups(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for call in ["lookup(", "query(", "q("] {
        let mut rest = text;
        while let Some(at) = rest.find(call) {
            let before = rest[..at].chars().last();
            rest = &rest[at + call.len()..];
            if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
                continue; // `myq(` is not `q(`
            }
            let arg = rest.trim_start();
            let name: String = arg
                .strip_prefix(['\'', '"'])
                .map(|a| a.chars().take_while(|c| c.is_ascii_alphanumeric() || "._".contains(*c)).collect())
                .unwrap_or_else(|| "(computed)".to_string());
            let short = name.rsplit('.').next().unwrap_or(&name).to_string();
            if !PURE_LOOKUPS.contains(&short.as_str()) || name.contains('.') && !name.starts_with("ansible.builtin.") {
                out.push(name);
            }
        }
    }
    out
}

/// Keys whose value names a file Ansible reads on this machine.
const REFERENCES: [&str; 12] = [
    "include_tasks",
    "import_tasks",
    "include_vars",
    "import_playbook",
    "include",
    "src",
    "script",
    "ansible.builtin.script",
    "vars_files",
    "file",
    "template",
    "ansible.builtin.template",
];

/// Whether a path names a file outside the playbook's folder (absolute, or up from it).
fn outside(path: &str) -> bool {
    let first = path.split_whitespace().next().unwrap_or(path);
    (first.starts_with('/') && !first.starts_with("/dev/null")) || first.starts_with("../") || first.contains("/../")
}

/// Whether a delegation target is the controller.
fn is_controller(target: &str) -> bool {
    matches!(target.trim(), "localhost" | "127.0.0.1" | "::1")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hazards(yaml: &str) -> Vec<String> {
        yaml_hazards("site.yml", yaml)
    }

    #[test]
    fn tasks_that_run_during_a_check_are_named() {
        let play = "- hosts: all\n  tasks:\n    - name: probe\n      command: id\n      check_mode: false\n    - name: copy back\n      fetch: {src: /etc/hosts, dest: /tmp}\n      delegate_to: localhost\n    - local_action: command touch /tmp/x\n    - name: ask\n      debug: {msg: \"{{ lookup('pipe', 'id') }}\"}\n    - name: run it\n      script: fix.sh\n";
        let found = hazards(play);
        assert!(found.iter().any(|f| f.contains("task `probe`") && f.contains("check_mode: false")), "{found:?}");
        assert!(found.iter().any(|f| f.contains("task `copy back`") && f.contains("this machine")), "{found:?}");
        assert!(found.iter().any(|f| f.contains("local_action")), "{found:?}");
        assert!(found.iter().any(|f| f.contains("lookup `pipe`")), "{found:?}");
        assert!(found.iter().any(|f| f.contains("task `run it`") && f.contains("script")), "{found:?}");
    }

    #[test]
    fn files_outside_the_folder_are_named_not_pinned() {
        let play = "- hosts: all\n  tasks:\n    - name: fix\n      script: /opt/fix.sh\n    - include_tasks: ../shared/tasks.yml\n    - include_tasks: local.yml\n";
        let found = hazards(play);
        assert!(found.iter().any(|f| f.contains("NOT PINNED: `/opt/fix.sh`")), "{found:?}");
        assert!(found.iter().any(|f| f.contains("NOT PINNED: `../shared/tasks.yml`")), "{found:?}");
        assert!(!found.iter().any(|f| f.contains("local.yml")), "{found:?}");
    }

    #[test]
    fn a_plain_playbook_has_none() {
        let play = "- hosts: all\n  tasks:\n    - name: motd\n      copy: {dest: /etc/motd, content: \"{{ lookup('file', 'motd') }}\"}\n      check_mode: true\n";
        assert_eq!(hazards(play), Vec::<String>::new());
    }

    #[test]
    fn config_keys_and_plugin_folders_are_named() {
        let cfg = "[defaults]\nvault_password_file = ./vault.sh\nforks = 5\ncallbacks_enabled = timer\n";
        let found = config_hazards("ansible.cfg", cfg);
        assert_eq!(found.len(), 2, "{found:?}");
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("roles/web/library")).unwrap();
        std::fs::write(dir.path().join("roles/web/library/mine.py"), "print(1)").unwrap();
        std::fs::write(dir.path().join("site.yml"), "- hosts: all\n  tasks: []\n").unwrap();
        let found = scan(dir.path(), &dir.path().join("site.yml"), &[]).runs;
        assert!(found.iter().any(|f| f.contains("library") && f.contains("plugins or modules")), "{found:?}");
    }

    #[test]
    fn connection_variables_and_collection_lookups_are_named() {
        assert!(!hazards("ansible_connection: local\n").is_empty());
        assert!(!hazards("ansible_python_interpreter: /tmp/evil\n").is_empty());
        assert!(!hazards("x: \"{{ query('community.general.passwordstore', 'a') }}\"\n").is_empty());
        assert!(hazards("x: \"{{ lookup('ansible.builtin.env', 'HOME') }}\"\n").is_empty());
    }
}
