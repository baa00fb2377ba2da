//! Ansible's connection variables, layered as Ansible layers them: `all`'s vars, then each group's
//! from the outermost to the innermost (groups at one depth in name order), then the host's own.
//! Both inventory forms (INI `[group:vars]`, YAML `vars:`) read a host's address, port, user, key
//! and elevation through this one place.

use std::collections::BTreeMap;

use crate::inventory::Host;

/// The `ansible_*` variables of one group or host, by name (values as written, quotes removed).
pub(crate) type Vars = BTreeMap<String, String>;

/// Group variables and the depth of each group (`all` is 0, a top-level group 1, its children 2…).
#[derive(Debug, Default)]
pub(crate) struct GroupVars {
    vars: BTreeMap<String, Vars>,
    depth: BTreeMap<String, usize>,
}

impl GroupVars {
    /// Records `key=value` of `group`'s vars; keys merlya does not read are kept out.
    pub(crate) fn set(&mut self, group: &str, key: &str, value: &str) {
        if READ.contains(&key) {
            self.vars.entry(group.to_string()).or_default().insert(key.to_string(), value.to_string());
        }
    }

    /// Records how deep `group` sits; a group met at several places keeps its deepest place.
    pub(crate) fn met(&mut self, group: &str, depth: usize) {
        let d = self.depth.entry(group.to_string()).or_default();
        *d = (*d).max(depth);
    }

    /// Whether any group sets a variable merlya reads.
    pub(crate) fn is_empty(&self) -> bool {
        self.vars.is_empty()
    }

    /// Sets `host`'s connection fields from `all`, its groups (its tags) and `own` (its host
    /// variables, highest). A value merlya cannot use is an error naming it.
    pub(crate) fn apply(&self, host: &mut Host, own: Option<&Vars>) -> Result<(), String> {
        let mut groups: Vec<&String> = host.tags.iter().filter(|t| self.vars.contains_key(*t)).collect();
        groups.sort_by_key(|g| (self.depth.get(*g).copied().unwrap_or(1), *g));
        let mut merged = Vars::new();
        for layer in self.vars.get("all").into_iter().chain(groups.into_iter().filter_map(|g| self.vars.get(g))) {
            merged.extend(layer.iter().map(|(k, v)| (k.clone(), v.clone())));
        }
        merged.extend(own.into_iter().flatten().map(|(k, v)| (k.clone(), v.clone())));
        apply(host, &merged)
    }
}

/// The variables merlya reads; every other `ansible_*` variable is left to Ansible.
const READ: [&str; 11] = [
    "ansible_host",
    "ansible_ssh_host",
    "ansible_port",
    "ansible_ssh_port",
    "ansible_user",
    "ansible_ssh_user",
    "ansible_ssh_private_key_file",
    "ansible_become",
    "ansible_become_method",
    "ansible_become_password",
    "ansible_become_pass",
];

/// Whether `key` is one of the variables merlya reads.
pub(crate) fn is_read(key: &str) -> bool {
    READ.contains(&key)
}

/// Sets `host`'s fields from `vars` (already layered).
fn apply(host: &mut Host, vars: &Vars) -> Result<(), String> {
    let get = |keys: &[&str]| keys.iter().find_map(|k| vars.get(*k)).map(String::as_str);
    if let Some(address) = get(&["ansible_host", "ansible_ssh_host"]) {
        host.hostname = address.to_string();
    }
    if let Some(port) = get(&["ansible_port", "ansible_ssh_port"]) {
        host.port = port
            .trim()
            .parse::<u16>()
            .ok()
            .filter(|p| *p != 0)
            .ok_or_else(|| format!("ansible_port {port:?} is not a number from 1 to 65535"))?;
    }
    if let Some(user) = get(&["ansible_user", "ansible_ssh_user"]) {
        host.username = Some(user.to_string());
    }
    if let Some(key) = get(&["ansible_ssh_private_key_file"]) {
        host.identity_file = Some(key.to_string());
    }
    let password = get(&["ansible_become_password", "ansible_become_pass"]).is_some();
    match super::ansible_elevation(get(&["ansible_become"]), get(&["ansible_become_method"]), password)? {
        Some(elevation) => host.elevation = elevation,
        None => host.elevation = crate::inventory::Elevation::None,
    }
    Ok(())
}
