//! Turning an inventory host into everything needed to connect: address,
//! port, login, keys and the chain of jump hosts.
//!
//! Precedence for each setting: the inventory host, then ~/.ssh/config (for
//! hosts not in the inventory it also supplies HostName), then merlya's
//! config, then the local user name.

use std::path::PathBuf;

use crate::inventory::Host;

use crate::inventory::import::ssh_config::SshConfigFile;

/// Everything needed to open one SSH connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SshTarget {
    /// Inventory name (for messages).
    pub name: String,
    /// Address to connect to (also the known_hosts name).
    pub hostname: String,
    /// TCP port.
    pub port: u16,
    /// Login name.
    pub user: String,
    /// Keys to try after the agent, in order.
    pub identity_files: Vec<PathBuf>,
    /// Bastions to go through, outermost first.
    pub jumps: Vec<SshTarget>,
}

impl SshTarget {
    /// A key identifying the connection in the pool.
    pub fn pool_key(&self) -> String {
        let mut key = format!("{}@{}:{}", self.user, self.hostname, self.port);
        for jump in &self.jumps {
            key.push_str(&format!(" via {}", jump.pool_key()));
        }
        key
    }
}

/// Inputs for resolution that do not change per host.
#[derive(Debug, Clone, Default)]
pub struct ResolveContext {
    /// The inventory, to resolve jump hosts by name: shared with the console,
    /// which holds a whole fleet once (not a copy per holder).
    pub inventory: std::sync::Arc<Vec<Host>>,
    /// Parsed ~/.ssh/config (empty when disabled).
    pub ssh_config: SshConfigFile,
    /// `ssh.default_user`.
    pub default_user: Option<String>,
    /// `ssh.identity_files`.
    pub identity_files: Vec<PathBuf>,
}

impl ResolveContext {
    /// Resolves `host`, following jump hosts up to a depth of 8.
    pub fn resolve(&self, host: &Host) -> Result<SshTarget, String> {
        self.resolve_depth(host, 0)
    }

    fn resolve_depth(&self, host: &Host, depth: usize) -> Result<SshTarget, String> {
        if depth > 8 {
            return Err(format!("jump host chain for {} is longer than 8 (a loop?)", host.name));
        }
        let in_inventory = self.inventory.iter().any(|h| h.name == host.name);
        let from_config = self.ssh_config.resolve(&host.name);
        let hostname = if in_inventory || from_config.hostname.is_none() {
            host.hostname.clone()
        } else {
            from_config.hostname.clone().unwrap_or_else(|| host.hostname.clone())
        };
        let port = if host.port == 22 { from_config.port.unwrap_or(22) } else { host.port };
        let user =
            host.username.clone().or(from_config.user.clone()).or(self.default_user.clone()).unwrap_or_else(local_user);
        let mut identity_files: Vec<PathBuf> = Vec::new();
        if let Some(file) = &host.identity_file {
            identity_files.push(crate::inventory::import::ssh_config::expand_tilde(file));
        }
        identity_files.extend(from_config.identity_files.iter().cloned());
        identity_files.extend(self.identity_files.iter().cloned());
        let jump_spec = host.jump.clone().or(from_config.proxy_jump.clone());
        let mut jumps = Vec::new();
        if let Some(spec) = jump_spec {
            for part in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
                let jump_host = self.jump_host(part)?;
                let resolved = self.resolve_depth(&jump_host, depth + 1)?;
                // A jump host with its own jumps comes after them.
                jumps.extend(resolved.jumps.iter().cloned());
                jumps.push(SshTarget { jumps: Vec::new(), ..resolved });
            }
        }
        Ok(SshTarget { name: host.name.clone(), hostname, port, user, identity_files, jumps })
    }

    /// A jump given as an inventory name or as `[user@]host[:port]`.
    fn jump_host(&self, spec: &str) -> Result<Host, String> {
        if let Some(h) = self.inventory.iter().find(|h| h.name == spec) {
            return Ok(h.clone());
        }
        crate::inventory::resolve_targets(spec, &[], &self.ssh_config.concrete_aliases())
            .map_err(|e| format!("jump host {spec:?}: {e}"))?
            .into_iter()
            .next()
            .ok_or_else(|| format!("jump host {spec:?} is empty"))
    }
}

/// The name of the local user, for logins and the audit log.
pub fn local_user() -> String {
    std::env::var("USER")
        .or_else(|_| std::env::var("LOGNAME"))
        .ok()
        .filter(|u| !u.is_empty())
        .unwrap_or_else(|| "root".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inventory_wins_then_ssh_config_then_defaults() {
        let config = SshConfigFile::parse("Host adhoc\n HostName 10.1.1.1\n User cfguser\n Port 2200\n").unwrap();
        let mut bastion = Host::new("bastion", "10.0.0.1");
        bastion.username = Some("jump".into());
        let mut web = Host::new("web", "10.0.0.2");
        web.jump = Some("bastion".into());
        let ctx = ResolveContext {
            inventory: vec![bastion, web.clone()].into(),
            ssh_config: config,
            default_user: Some("ops".into()),
            identity_files: vec![],
        };
        let t = ctx.resolve(&web).unwrap();
        assert_eq!((t.hostname.as_str(), t.user.as_str()), ("10.0.0.2", "ops"));
        assert_eq!(t.jumps.len(), 1);
        assert_eq!(t.jumps[0].user, "jump");
        let adhoc = ctx.resolve(&Host::new("adhoc", "adhoc")).unwrap();
        assert_eq!((adhoc.hostname.as_str(), adhoc.port, adhoc.user.as_str()), ("10.1.1.1", 2200, "cfguser"));
    }

    #[test]
    fn chained_jumps_are_flattened_outermost_first() {
        let outer = Host::new("outer", "10.0.0.1");
        let mut inner = Host::new("inner", "10.0.0.2");
        inner.jump = Some("outer".into());
        let mut target = Host::new("target", "10.0.0.3");
        target.jump = Some("inner".into());
        let ctx = ResolveContext { inventory: vec![outer, inner, target.clone()].into(), ..Default::default() };
        let t = ctx.resolve(&target).unwrap();
        let chain: Vec<&str> = t.jumps.iter().map(|j| j.name.as_str()).collect();
        assert_eq!(chain, ["outer", "inner"]);
    }

    #[test]
    fn jump_loops_are_errors() {
        let mut a = Host::new("a", "a");
        a.jump = Some("b".into());
        let mut b = Host::new("b", "b");
        b.jump = Some("a".into());
        let ctx = ResolveContext { inventory: vec![a.clone(), b].into(), ..Default::default() };
        assert!(ctx.resolve(&a).unwrap_err().contains("loop"));
    }
}
