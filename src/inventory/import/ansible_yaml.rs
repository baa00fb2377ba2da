//! Ansible YAML inventories: `all: {hosts: {...}, children: {group: {hosts: ...}}}`.
//! Groups other than `all` and `ungrouped` become tags, inherited by nested groups' hosts.

use yaml_serde::{Mapping, Value};

use super::{ImportReport, LineError, merge_by_name, range};
use crate::inventory::Host;

pub fn parse(text: &str) -> Result<ImportReport, Vec<LineError>> {
    let root: Value = yaml_serde::from_str(text).map_err(|e| vec![yaml_line_error(&e)])?;
    let Value::Mapping(groups) = root else {
        return Err(vec![LineError::new(1, "expected a mapping of groups (e.g. `all:`)")]);
    };
    let mut hosts = Vec::new();
    let mut errors = Vec::new();
    for (name, body) in &groups {
        walk_group(name.as_str().unwrap_or(""), body, &[], &mut hosts, &mut errors);
    }
    if errors.is_empty() { Ok(ImportReport { hosts: merge_by_name(hosts), skipped: Vec::new() }) } else { Err(errors) }
}

/// A line error from a YAML error (shared with other YAML importers).
pub(super) fn yaml_line_error(e: &yaml_serde::Error) -> LineError {
    let line = e.location().map(|l| l.line()).unwrap_or(0);
    let message = e.to_string();
    let message = message.rfind(" at line ").map(|i| message[..i].to_string()).unwrap_or(message);
    LineError::new(line, message)
}

fn walk_group(group: &str, body: &Value, inherited: &[String], hosts: &mut Vec<Host>, errors: &mut Vec<LineError>) {
    let mut tags = inherited.to_vec();
    if !group.is_empty() && group != "all" && group != "ungrouped" {
        tags.push(group.to_string());
    }
    let Some(body) = body.as_mapping() else {
        if !body.is_null() {
            errors.push(LineError::new(0, format!("group {group}: expected a mapping with hosts/children/vars")));
        }
        return;
    };
    for (key, value) in body {
        match key.as_str() {
            Some("hosts") => read_hosts(group, value, &tags, hosts, errors),
            Some("children") => match value.as_mapping() {
                Some(children) => {
                    for (child, child_body) in children {
                        walk_group(child.as_str().unwrap_or(""), child_body, &tags, hosts, errors);
                    }
                }
                None if value.is_null() => {}
                None => errors.push(LineError::new(0, format!("group {group}: `children` must be a mapping"))),
            },
            Some("vars") => {}
            other => errors.push(LineError::new(
                0,
                format!("group {group}: unknown key {:?}; expected hosts, children or vars", other.unwrap_or("?")),
            )),
        }
    }
}

fn read_hosts(group: &str, value: &Value, tags: &[String], hosts: &mut Vec<Host>, errors: &mut Vec<LineError>) {
    let empty = Mapping::new();
    let entries = match value {
        Value::Mapping(m) => m,
        Value::Null => &empty,
        _ => {
            errors.push(LineError::new(0, format!("group {group}: `hosts` must be a mapping of host names")));
            return;
        }
    };
    for (name, vars) in entries {
        let Some(pattern) = name.as_str() else {
            errors.push(LineError::new(0, format!("group {group}: host names must be strings")));
            continue;
        };
        let names = match range::expand(pattern) {
            Ok(n) => n,
            Err(e) => {
                errors.push(LineError::new(0, format!("group {group}: {e}")));
                continue;
            }
        };
        for host_name in names {
            let mut host = Host::new(host_name.clone(), host_name.clone());
            if let Some(vars) = vars.as_mapping() {
                if let Some(h) = string_var(vars, &["ansible_host", "ansible_ssh_host"]) {
                    host.hostname = h;
                }
                if let Some(u) = string_var(vars, &["ansible_user", "ansible_ssh_user"]) {
                    host.username = Some(u);
                }
                if let Some(k) = string_var(vars, &["ansible_ssh_private_key_file"]) {
                    host.identity_file = Some(k);
                }
                if let Some(p) = string_var(vars, &["ansible_port", "ansible_ssh_port"]) {
                    match p.parse::<u16>() {
                        Ok(port) if port > 0 => host.port = port,
                        _ => errors
                            .push(LineError::new(0, format!("host {host_name}: ansible_port {p:?} is not a port"))),
                    }
                }
            }
            for tag in tags {
                host.add_tag(tag);
            }
            hosts.push(host);
        }
    }
}

fn string_var(vars: &Mapping, keys: &[&str]) -> Option<String> {
    keys.iter().find_map(|k| match vars.get(*k)? {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    })
}
