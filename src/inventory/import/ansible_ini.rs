//! Ansible INI inventories: `[group]`, `[group:children]`, `[group:vars]`,
//! host lines with `ansible_host=`, `ansible_port=`, `ansible_user=`, and
//! ranges such as `web[01:03]`. Groups become tags; a child group's hosts
//! also get the parent's tag. `[group:vars]` (and `[all:vars]`) give their
//! hosts a user, port, key or elevation, under what a host line sets itself.

use std::collections::BTreeMap;

use super::ansible_vars::{GroupVars, Vars};
use super::{ImportReport, LineError, merge_by_name, parse_port, range};
use crate::inventory::Host;

#[derive(PartialEq)]
enum Section {
    Hosts(String),
    Children(String),
    Vars(String),
}

pub fn parse(text: &str) -> Result<ImportReport, Vec<LineError>> {
    let mut errors = Vec::new();
    let mut hosts: Vec<(Host, usize)> = Vec::new();
    let mut children: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut group_vars = GroupVars::default();
    let mut host_vars: BTreeMap<String, Vars> = BTreeMap::new();
    let mut section = Section::Hosts("ungrouped".into());
    for (index, raw) in text.lines().enumerate() {
        let line_no = index + 1;
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if let Some(header) = line.strip_prefix('[') {
            let Some(header) = header.strip_suffix(']') else {
                errors.push(LineError::new(line_no, "section header without closing `]`"));
                continue;
            };
            section = match header.split_once(':') {
                None => Section::Hosts(header.to_string()),
                Some((group, "children")) => Section::Children(group.to_string()),
                Some((group, "vars")) => Section::Vars(group.to_string()),
                Some((group, kind)) => {
                    errors.push(LineError::new(
                        line_no,
                        format!("unknown section kind :{kind}; expected :children or :vars"),
                    ));
                    Section::Vars(group.to_string())
                }
            };
            continue;
        }
        match &section {
            Section::Vars(group) => match line.split_once('=') {
                Some((key, value)) => {
                    group_vars.set(group, key.trim(), value.trim().trim_matches(|c| c == '"' || c == '\''));
                }
                None => errors.push(LineError::new(line_no, format!("{line:?}: expected key=value in [{group}:vars]"))),
            },
            Section::Children(group) => children.entry(group.clone()).or_default().push(line.to_string()),
            Section::Hosts(group) => match parse_host_line(line, line_no, group, hosts.len()) {
                Ok(parsed) => {
                    for (host, vars) in parsed {
                        host_vars.entry(host.name.clone()).or_default().extend(vars);
                        hosts.push((host, line_no));
                    }
                }
                Err(e) => errors.push(e),
            },
        }
    }
    let mut report = merge_by_name(hosts, &mut errors);
    apply_children(&mut report.hosts, &children);
    if !group_vars.is_empty() {
        for (group, depth) in depths(&children) {
            group_vars.met(&group, depth);
        }
        for (host, line) in report.hosts.iter_mut().zip(&report.lines) {
            if let Err(e) = group_vars.apply(host, host_vars.get(&host.name)) {
                errors.push(LineError::new(*line, format!("host {}: {e}", host.name)));
            }
        }
    }
    if errors.is_empty() { Ok(report) } else { Err(errors) }
}

/// How deep each group sits under `all`: a group nobody lists as a child is 1, a child one more
/// than its deepest parent (bounded by the group count, so a cycle ends).
fn depths(children: &BTreeMap<String, Vec<String>>) -> BTreeMap<String, usize> {
    let mut depth: BTreeMap<String, usize> = BTreeMap::new();
    for _ in 0..=children.len() {
        let mut changed = false;
        for (parent, kids) in children {
            let below = depth.get(parent).copied().unwrap_or(1) + 1;
            for kid in kids {
                let d = depth.entry(kid.clone()).or_insert(1);
                if *d < below {
                    *d = below;
                    changed = true;
                }
            }
        }
        if !changed {
            break;
        }
    }
    depth
}

/// The hosts of one line, each with the variables the line gives it; `already` hosts came before
/// it in the file.
fn parse_host_line(line: &str, line_no: usize, group: &str, already: usize) -> Result<Vec<(Host, Vars)>, LineError> {
    let mut fields = line.split_whitespace();
    let pattern = fields.next().unwrap_or("");
    let names = range::expand(pattern, already).map_err(|e| LineError::new(line_no, e))?;
    let mut template = Host::new("", "");
    let (mut become_, mut method, mut password) = (None, None, false);
    let mut vars = Vars::new();
    for field in fields {
        let Some((key, value)) = field.split_once('=') else {
            return Err(LineError::new(line_no, format!("{field:?}: expected key=value after the host name")));
        };
        let value = value.trim_matches(|c| c == '"' || c == '\'');
        if super::ansible_vars::is_read(key) {
            vars.insert(key.to_string(), value.to_string());
        }
        match key {
            "ansible_host" | "ansible_ssh_host" => template.hostname = value.to_string(),
            "ansible_port" | "ansible_ssh_port" => template.port = parse_port(value, line_no)?,
            "ansible_user" | "ansible_ssh_user" => template.username = Some(value.to_string()),
            "ansible_ssh_private_key_file" => template.identity_file = Some(value.to_string()),
            "ansible_become" => become_ = Some(value),
            "ansible_become_method" => method = Some(value),
            "ansible_become_password" | "ansible_become_pass" => password = true,
            _ => {}
        }
    }
    if let Some(elevation) =
        super::ansible_elevation(become_, method, password).map_err(|e| LineError::new(line_no, e))?
    {
        template.elevation = elevation;
    }
    // `host:port` shorthand.
    let mut out = Vec::new();
    for name in names {
        let (name, port) = match name.rsplit_once(':') {
            Some((n, p)) => (n.to_string(), Some(parse_port(p, line_no)?)),
            None => (name, None),
        };
        let mut host = template.clone();
        let mut own = vars.clone();
        host.hostname = if template.hostname.is_empty() { name.clone() } else { template.hostname.clone() };
        host.name = name;
        if let Some(p) = port {
            host.port = p;
            own.insert("ansible_port".into(), p.to_string());
        }
        if group != "ungrouped" {
            host.add_tag(group);
        }
        out.push((host, own));
    }
    Ok(out)
}

/// Gives every host of a child group the tags of its ancestors.
fn apply_children(hosts: &mut [Host], children: &BTreeMap<String, Vec<String>>) {
    // Iterate to a fixed point so grandchildren inherit too; bounded by the group count.
    for _ in 0..=children.len() {
        let mut changed = false;
        for (parent, kids) in children {
            for host in hosts.iter_mut() {
                if host.tags.iter().any(|t| kids.contains(t)) && !host.tags.contains(parent) {
                    host.add_tag(parent);
                    changed = true;
                }
            }
        }
        if !changed {
            break;
        }
    }
}
