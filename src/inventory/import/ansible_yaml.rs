//! Ansible YAML inventories: `all: {hosts: {...}, children: {group: {hosts: ...}}}`.
//! Groups other than `all` and `ungrouped` become tags, inherited by nested groups' hosts; a
//! group's `vars:` give its hosts a user, port, key or elevation, under what a host sets itself.

use yaml_serde::{Mapping, Value};

use super::ansible_vars::{GroupVars, Vars};
use super::{ImportReport, LineError, merge_by_name, range};
use crate::inventory::Host;

pub fn parse(text: &str) -> Result<ImportReport, Vec<LineError>> {
    let root: Value = crate::input::from_yaml(text).map_err(|e| vec![yaml_line_error(&e)])?;
    let Value::Mapping(groups) = root else {
        return Err(vec![LineError::new(1, "expected a mapping of groups (e.g. `all:`)")]);
    };
    let mut walk = Walk { text, hosts: Vec::new(), errors: Vec::new(), met: Default::default(), ..Walk::default() };
    for (name, body) in &groups {
        walk.group(name.as_str().unwrap_or(""), body, &[]);
    }
    let Walk { hosts, mut errors, group_vars, host_vars, .. } = walk;
    let mut report = merge_by_name(hosts, &mut errors);
    if !group_vars.is_empty() {
        for (host, line) in report.hosts.iter_mut().zip(&report.lines) {
            if let Err(e) = group_vars.apply(host, host_vars.get(&host.name)) {
                errors.push(LineError::new(*line, format!("host {}: {e}", host.name)));
            }
        }
    }
    if errors.is_empty() { Ok(report) } else { Err(errors) }
}

/// A line error from a YAML error (shared with other YAML importers).
pub(super) fn yaml_line_error(e: &crate::input::YamlError) -> LineError {
    LineError::new(e.line(), e.message())
}

/// The inventory being read: its text (for lines) and what was found so far.
#[derive(Default)]
struct Walk<'a> {
    text: &'a str,
    hosts: Vec<(Host, usize)>,
    errors: Vec<LineError>,
    /// How many times each host key was met, to find its nth line.
    met: std::collections::HashMap<String, usize>,
    /// Each group's `vars:` and how deep it sits.
    group_vars: GroupVars,
    /// Each host's own variables (every place it is listed, in order).
    host_vars: std::collections::BTreeMap<String, Vars>,
}

/// The line of the `nth` (0-based) line declaring `key` as a mapping key, 0
/// if none; the YAML values carry no positions, so problems are placed this way.
fn line_of_key(text: &str, key: &str, nth: usize) -> usize {
    let quoted = [format!("{key}:"), format!("\"{key}\":"), format!("'{key}':")];
    let declares = |l: &str| quoted.iter().any(|q| l.trim_start().starts_with(q.as_str()));
    text.lines().enumerate().filter(|(_, l)| declares(l)).nth(nth).map_or(0, |(i, _)| i + 1)
}

impl Walk<'_> {
    fn group(&mut self, group: &str, body: &Value, inherited: &[String]) {
        let mut tags = inherited.to_vec();
        if !group.is_empty() && group != "all" && group != "ungrouped" {
            tags.push(group.to_string());
        }
        self.group_vars.met(group, tags.len());
        let Some(body) = body.as_mapping() else {
            if !body.is_null() {
                let line = line_of_key(self.text, group, 0);
                self.errors
                    .push(LineError::new(line, format!("group {group}: expected a mapping with hosts/children/vars")));
            }
            return;
        };
        for (key, value) in body {
            match key.as_str() {
                Some("hosts") => self.hosts(group, value, &tags),
                Some("children") => match value.as_mapping() {
                    Some(children) => {
                        for (child, child_body) in children {
                            self.group(child.as_str().unwrap_or(""), child_body, &tags);
                        }
                    }
                    None if value.is_null() => {}
                    None => self.errors.push(LineError::new(0, format!("group {group}: `children` must be a mapping"))),
                },
                Some("vars") => match value.as_mapping() {
                    Some(vars) => {
                        for (key, value) in vars {
                            if let (Some(key), Some(value)) = (key.as_str(), scalar(value)) {
                                self.group_vars.set(group, key, &value);
                            }
                        }
                    }
                    None if value.is_null() => {}
                    None => self.errors.push(LineError::new(0, format!("group {group}: `vars` must be a mapping"))),
                },
                other => self.errors.push(LineError::new(
                    0,
                    format!("group {group}: unknown key {:?}; expected hosts, children or vars", other.unwrap_or("?")),
                )),
            }
        }
    }

    fn hosts(&mut self, group: &str, value: &Value, tags: &[String]) {
        let empty = Mapping::new();
        let entries = match value {
            Value::Mapping(m) => m,
            Value::Null => &empty,
            _ => {
                self.errors.push(LineError::new(0, format!("group {group}: `hosts` must be a mapping of host names")));
                return;
            }
        };
        for (name, vars) in entries {
            let Some(pattern) = name.as_str() else {
                self.errors.push(LineError::new(0, format!("group {group}: host names must be strings")));
                continue;
            };
            let nth = self.met.entry(pattern.to_string()).or_default();
            let line = line_of_key(self.text, pattern, *nth);
            *nth += 1;
            let names = match range::expand(pattern, self.hosts.len()) {
                Ok(n) => n,
                Err(e) => {
                    self.errors.push(LineError::new(line, format!("group {group}: {e}")));
                    continue;
                }
            };
            for host_name in names {
                let mut host = Host::new(host_name.clone(), host_name.clone());
                if let Some(vars) = vars.as_mapping() {
                    let own = self.host_vars.entry(host_name.clone()).or_default();
                    for (key, value) in vars {
                        if let (Some(key), Some(value)) = (key.as_str(), scalar(value))
                            && super::ansible_vars::is_read(key)
                        {
                            own.insert(key.to_string(), value);
                        }
                    }
                    if let Some(h) = string_var(vars, &["ansible_host", "ansible_ssh_host"]) {
                        host.hostname = h;
                    }
                    if let Some(u) = string_var(vars, &["ansible_user", "ansible_ssh_user"]) {
                        host.username = Some(u);
                    }
                    if let Some(k) = string_var(vars, &["ansible_ssh_private_key_file"]) {
                        host.identity_file = Some(k);
                    }
                    let become_ = match vars.get("ansible_become") {
                        Some(Value::Bool(b)) => Some(b.to_string()),
                        _ => string_var(vars, &["ansible_become"]),
                    };
                    let method = string_var(vars, &["ansible_become_method"]);
                    let password =
                        ["ansible_become_password", "ansible_become_pass"].iter().any(|k| vars.contains_key(*k));
                    match super::ansible_elevation(become_.as_deref(), method.as_deref(), password) {
                        Ok(Some(elevation)) => host.elevation = elevation,
                        Ok(None) => {}
                        Err(e) => self.errors.push(LineError::new(line, format!("host {host_name}: {e}"))),
                    }
                    if let Some(p) = string_var(vars, &["ansible_port", "ansible_ssh_port"]) {
                        match p.parse::<u16>() {
                            Ok(port) if port > 0 => host.port = port,
                            _ => self.errors.push(LineError::new(
                                line,
                                format!("host {host_name}: ansible_port {p:?} is not a port"),
                            )),
                        }
                    }
                }
                for tag in tags {
                    host.add_tag(tag);
                }
                self.hosts.push((host, line));
            }
        }
    }
}

/// A scalar variable's value as Ansible would template it into a string.
fn scalar(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

fn string_var(vars: &Mapping, keys: &[&str]) -> Option<String> {
    keys.iter().find_map(|k| match vars.get(*k)? {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    })
}
