//! The Ansible inventory generated from merlya's: address, port, login,
//! keys, jump hosts and host-key checking against the same known_hosts files
//! merlya trusts; the become method from the host's elevation. Become
//! passwords go to `host_vars/NAME.yml` files readable only by merlya, written
//! just before a run and removed after it — never to a command line.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use crate::exec::Executor;
use crate::inventory::{Elevation, Host};
use crate::secrets::SecretSource;
use crate::ssh::target::SshTarget;

/// The generated inventory of a run.
pub struct Inventory {
    /// `inventory.yml`, in the run's private folder.
    pub file: PathBuf,
    /// The `host_vars` folder beside it (become passwords while a run lasts).
    host_vars: PathBuf,
    /// Become passwords per host, written by [`Inventory::with_passwords`].
    passwords: Vec<(String, String)>,
}

fn quote(path: &Path) -> String {
    format!("'{}'", path.display().to_string().replace('\'', "'\\''"))
}

/// The become method and the secret holding its password, for an elevation.
fn become_of(elevation: Elevation, host: &str) -> Option<(&'static str, Option<String>)> {
    match elevation {
        Elevation::None => None,
        Elevation::Sudo => Some(("sudo", None)),
        Elevation::SudoPassword => Some(("sudo", Some(format!("sudo:{host}:password")))),
        Elevation::Su => Some(("su", Some(format!("su:{host}:password")))),
        Elevation::Doas => Some(("doas", None)),
        Elevation::DoasPassword => Some(("doas", Some(format!("doas:{host}:password")))),
    }
}

/// A `Host` block of the run's ssh_config: OpenSSH reads keys and known_hosts from the passwd home,
/// not `$HOME`, and a jump's ssh gets only `-F`, so everything merlya would use is written here.
fn ssh_block(alias: &str, target: &SshTarget, known: &str, jump: Option<&str>) -> Result<String, String> {
    // Values come from the inventory (maybe imported from someone else's file): one that could end the
    // line or start a new directive (`\n  ProxyCommand …`) is refused, not written.
    for (what, value) in [("address", target.hostname.as_str()), ("login", target.user.as_str())] {
        if !plain_word(value) {
            return Err(format!("{}: the {what} {value:?} cannot be written to an ssh_config", target.name));
        }
    }
    let mut block = format!(
        "Host {alias}\n  HostName {}\n  Port {}\n  User {}\n  UserKnownHostsFile {known}\n  StrictHostKeyChecking yes\n  BatchMode yes\n",
        target.hostname, target.port, target.user
    );
    let mut keys = target.identity_files.clone();
    for key in crate::ssh::auth::default_keys() {
        if !keys.contains(&key) {
            keys.push(key);
        }
    }
    for key in keys.iter().filter(|k| k.is_file()) {
        let path = key.display().to_string();
        if path.contains(['"', '\n', '\r', '%']) {
            return Err(format!("{}: the key path {path:?} cannot be written to an ssh_config", target.name));
        }
        block.push_str(&format!("  IdentityFile \"{path}\"\n"));
    }
    if let Some(jump) = jump {
        block.push_str(&format!("  ProxyJump {jump}\n"));
    }
    Ok(block)
}

/// A value that stays one word in an ssh_config line: no space, quote, control character or `%` token,
/// and not an option.
fn plain_word(value: &str) -> bool {
    !value.is_empty()
        && !value.starts_with('-')
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-@:[]".contains(c) || (!c.is_ascii() && !c.is_control()))
}

/// Builds the inventory of `hosts` in `dir`, with an ssh_config beside it. A host that cannot be
/// resolved, or whose become password is needed and not stored, is an error naming it and the fix.
pub fn build(
    dir: &Path,
    hosts: &[Host],
    executor: &Executor,
    known_hosts: &[PathBuf],
    secrets: &dyn SecretSource,
) -> Result<Inventory, String> {
    if let Some(bad) = known_hosts.iter().find(|p| p.display().to_string().contains(['"', '\n', '\r', '%'])) {
        return Err(format!("the known_hosts path {} cannot be written to an ssh_config", bad.display()));
    }
    let known = known_hosts.iter().map(|p| format!("\"{}\"", p.display())).collect::<Vec<_>>().join(" ");
    let ssh_config = dir.join("ssh_config");
    let mut config = String::from("# Written by merlya for one pipeline run.\n");
    let mut entries = Map::new();
    let mut passwords = Vec::new();
    for (index, host) in hosts.iter().enumerate() {
        let mut vars = Map::new();
        if host.is_local() {
            vars.insert("ansible_connection".into(), json!("local"));
        } else {
            let target = executor.target_of(host).map_err(|e| format!("{}: {e}", host.name))?;
            let alias = format!("merlya-{index}");
            let mut previous: Option<String> = None;
            for (j, jump) in target.jumps.iter().enumerate() {
                let jump_alias = format!("{alias}-jump{j}");
                config.push_str(&ssh_block(&jump_alias, jump, &known, previous.as_deref())?);
                previous = Some(jump_alias);
            }
            config.push_str(&ssh_block(&alias, &target, &known, previous.as_deref())?);
            vars.insert("ansible_host".into(), json!(alias));
            vars.insert("ansible_ssh_common_args".into(), json!(format!("-F {}", quote(&ssh_config))));
        }
        vars.insert("ansible_python_interpreter".into(), json!("auto_silent"));
        if let Some((method, secret)) = become_of(host.elevation, &host.name) {
            vars.insert("ansible_become_method".into(), json!(method));
            if let Some(secret) = secret {
                let password = secrets.lookup(&secret).ok_or_else(|| {
                    format!(
                        "{} becomes root with a password and none is stored; store it with `merlya secret set {secret}`",
                        host.name
                    )
                })?;
                passwords.push((host.name.clone(), password));
            }
        }
        entries.insert(host.name.clone(), Value::Object(vars));
    }
    super::super::private_dir(dir).map_err(|e| format!("cannot make {}: {e}", dir.display()))?;
    std::fs::write(&ssh_config, config).map_err(|e| format!("cannot write {}: {e}", ssh_config.display()))?;
    let file = dir.join("inventory.yml");
    let inventory = json!({"all": {"hosts": entries}});
    // JSON is YAML: no quoting rules to get wrong.
    std::fs::write(&file, serde_json::to_string_pretty(&inventory).unwrap_or_default())
        .map_err(|e| format!("cannot write {}: {e}", file.display()))?;
    Ok(Inventory { file, host_vars: dir.join("host_vars"), passwords })
}

impl Inventory {
    /// Runs `work` with the become passwords written (mode 0600) and removes them after, whatever
    /// happened.
    pub async fn with_passwords<F: std::future::Future<Output = T>, T>(&self, work: F) -> Result<T, String> {
        if !self.passwords.is_empty() {
            super::super::private_dir(&self.host_vars).map_err(|e| e.to_string())?;
        }
        let _cleanup = RemoveOnDrop(self.host_vars.clone());
        for (host, password) in &self.passwords {
            let path = self.host_vars.join(format!("{host}.json"));
            crate::home::write_private(&path, json!({"ansible_become_password": password}).to_string().as_bytes())
                .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        }
        Ok(work.await)
    }

    /// The become passwords, to mask them in anything shown or stored.
    pub fn secrets(&self) -> Vec<String> {
        self.passwords.iter().map(|(_, p)| p.clone()).collect()
    }
}

struct RemoveOnDrop(PathBuf);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(hostname: &str, user: &str) -> SshTarget {
        SshTarget {
            name: "web01".into(),
            hostname: hostname.into(),
            port: 22,
            user: user.into(),
            identity_files: Vec::new(),
            jumps: Vec::new(),
        }
    }

    #[test]
    fn inventory_values_cannot_add_ssh_config_directives() {
        assert!(ssh_block("merlya-0", &target("10.0.0.1", "deploy"), "\"/k\"", None).is_ok());
        assert!(ssh_block("merlya-0", &target("fe80::1%eth0", "deploy"), "\"/k\"", None).is_err());
        for (host, user) in [
            ("x\n  ProxyCommand touch /tmp/pwned", "deploy"),
            ("10.0.0.1", "deploy\n  LocalCommand id"),
            ("10.0.0.1 ProxyCommand=id", "deploy"),
            ("-oProxyCommand=id", "deploy"),
            ("10.0.0.1", "a\"b"),
        ] {
            let err = ssh_block("merlya-0", &target(host, user), "\"/k\"", None).unwrap_err();
            assert!(err.contains("cannot be written to an ssh_config"), "{err}");
        }
    }
}
