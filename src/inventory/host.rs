//! One managed host and its privilege-elevation method.

use serde::{Deserialize, Serialize};

/// The name of the host that is always present and runs commands locally.
pub const LOCALHOST: &str = "localhost";

/// How commands get root on a host.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum Elevation {
    /// Commands run as the login user.
    #[default]
    None,
    /// `sudo` without a password.
    Sudo,
    /// `sudo` with a password written to stdin.
    #[value(name = "sudo_password")]
    SudoPassword,
    /// `doas` without a password.
    Doas,
    /// `doas` with a password.
    #[value(name = "doas_password")]
    DoasPassword,
    /// `su` with the root password.
    Su,
}

impl Elevation {
    /// The stable name stored in the database and shown to users.
    pub fn as_str(self) -> &'static str {
        match self {
            Elevation::None => "none",
            Elevation::Sudo => "sudo",
            Elevation::SudoPassword => "sudo_password",
            Elevation::Doas => "doas",
            Elevation::DoasPassword => "doas_password",
            Elevation::Su => "su",
        }
    }
}

impl std::str::FromStr for Elevation {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(match s {
            "none" | "" => Elevation::None,
            "sudo" => Elevation::Sudo,
            "sudo_password" => Elevation::SudoPassword,
            "doas" => Elevation::Doas,
            "doas_password" => Elevation::DoasPassword,
            "su" => Elevation::Su,
            other => {
                return Err(format!(
                    "unknown elevation {other:?}: expected none, sudo, sudo_password, doas, doas_password or su"
                ));
            }
        })
    }
}

/// A host as the inventory knows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Host {
    /// Unique name used in targets (`web01`).
    pub name: String,
    /// Address or DNS name to connect to.
    pub hostname: String,
    /// SSH port.
    #[serde(default = "default_port")]
    pub port: u16,
    /// Login name; `None` falls back to ~/.ssh/config, then `ssh.default_user`, then the local user.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub username: Option<String>,
    /// Tags, used as `@tag` in targets.
    #[serde(default)]
    pub tags: Vec<String>,
    /// Name (or `user@host:port`) of a bastion to reach this host through; comma-separated for a chain.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jump: Option<String>,
    /// A private key tried before the default ones.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity_file: Option<String>,
    /// How to become root.
    #[serde(default)]
    pub elevation: Elevation,
    /// Result of the last reachability check, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reachable: Option<bool>,
    /// When reachability was last checked (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_check: Option<String>,
}

fn default_port() -> u16 {
    22
}

impl Host {
    /// A host with only a name and an address; everything else defaulted.
    pub fn new(name: impl Into<String>, hostname: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            hostname: hostname.into(),
            port: 22,
            username: None,
            tags: Vec::new(),
            jump: None,
            identity_file: None,
            elevation: Elevation::None,
            reachable: None,
            last_check: None,
        }
    }

    /// The built-in local host.
    pub fn localhost() -> Self {
        Self::new(LOCALHOST, LOCALHOST)
    }

    /// Whether commands for this host run locally instead of over SSH.
    pub fn is_local(&self) -> bool {
        self.name == LOCALHOST
    }

    /// Adds a tag once, keeping the list sorted.
    pub fn add_tag(&mut self, tag: &str) {
        if !self.tags.iter().any(|t| t == tag) {
            self.tags.push(tag.to_string());
            self.tags.sort();
        }
    }
}

/// Longest host name, tag, address, login user and key path merlya stores: a DNS name's limit,
/// and sizes no real value reaches (a longer one is a mistake or an attack on every listing).
pub const MAX_NAME: usize = 253;
/// See [`MAX_NAME`].
pub const MAX_TAG: usize = 128;
/// Most tags on one host.
pub const MAX_TAGS: usize = 64;
/// See [`MAX_NAME`].
pub const MAX_USER: usize = 64;
/// See [`MAX_NAME`].
pub const MAX_PATH: usize = 4096;

/// `what` is at most `max` characters.
fn within(what: &str, value: &str, max: usize) -> Result<(), String> {
    let len = value.chars().count();
    if len > max {
        let start: String = value.chars().take(24).collect();
        return Err(format!("{what} \"{start}…\" is {len} characters long; at most {max} are allowed"));
    }
    Ok(())
}

/// Checks a host name: letters, digits, `.`, `-`, `_`, at most [`MAX_NAME`] characters; used for
/// names given on the command line and in imports so targets stay unambiguous.
pub fn validate_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("a host name cannot be empty".into());
    }
    within("host name", name, MAX_NAME)?;
    if name == "all" {
        return Err("`all` is reserved for targeting every host".into());
    }
    if let Some(c) = name.chars().find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'))) {
        return Err(format!("host name {name:?} contains {c:?}; use letters, digits, '.', '-' and '_'"));
    }
    Ok(())
}

/// Whether `user` is a login name OpenSSH may pass to a shell unharmed: it builds a jump host's
/// `ProxyCommand` from `-J user@host:port` and runs it with `$SHELL -c`, so `$VAR`, `$(…)`, quotes or
/// `%` tokens in a name would be expanded on the operator's machine.
pub fn check_login_name(user: &str) -> Result<(), String> {
    match user.chars().find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '@' | '+'))) {
        Some(c) => Err(format!("the user {user:?} contains {c:?}; use letters, digits, '.', '_', '-', '@' and '+'")),
        None if user.starts_with('-') => Err(format!("the user {user:?} starts with '-'")),
        None => Ok(()),
    }
}

/// Whether `hostname` is a name or an address (`web01.example`, `10.0.0.5`, `fd00::1`,
/// `fe80::1%eth0`) and nothing a shell or OpenSSH's `-J` list would read otherwise (`,` adds a hop,
/// `$` expands, a leading `-` is an option).
pub fn check_hostname(hostname: &str) -> Result<(), String> {
    let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | ':' | '[' | ']' | '%');
    match hostname.chars().find(|c| !allowed(*c)) {
        Some(c) => Err(format!(
            "the hostname {hostname:?} contains {c:?}; use a DNS name or an IP address (letters, digits, '.', '-', '_', ':')"
        )),
        None if hostname.starts_with('-') => Err(format!("the hostname {hostname:?} starts with '-'")),
        None => Ok(()),
    }
}

/// Checks every field of `host` before it is stored: the name, tags, address, login user, jump
/// host and key path (lengths, and no control characters or blanks where a command line or a
/// listing would misread them).
pub fn validate_host(host: &Host) -> Result<(), String> {
    validate_name(&host.name)?;
    if host.tags.len() > MAX_TAGS {
        return Err(format!("host {}: {} tags; at most {MAX_TAGS} are allowed", host.name, host.tags.len()));
    }
    for tag in &host.tags {
        validate_tag(tag).map_err(|e| format!("host {}: {e}", host.name))?;
    }
    let plain = |what: &str, value: &str, max: usize| -> Result<(), String> {
        within(what, value, max).map_err(|e| format!("host {}: {e}", host.name))?;
        if let Some(c) = value.chars().find(|c| c.is_control() || c.is_whitespace()) {
            return Err(format!("host {}: the {what} contains {c:?}", host.name));
        }
        Ok(())
    };
    if host.hostname.trim().is_empty() {
        return Err(format!("host {}: empty hostname", host.name));
    }
    plain("hostname", &host.hostname, MAX_NAME)?;
    check_hostname(&host.hostname).map_err(|e| format!("host {}: {e}", host.name))?;
    if let Some(user) = &host.username {
        plain("user", user, MAX_USER)?;
        check_login_name(user).map_err(|e| format!("host {}: {e}", host.name))?;
    }
    if let Some(jump) = &host.jump {
        validate_name(jump).map_err(|e| format!("host {}: jump host: {e}", host.name))?;
    }
    if let Some(key) = &host.identity_file {
        within("identity file", key, MAX_PATH).map_err(|e| format!("host {}: {e}", host.name))?;
        if key.chars().any(char::is_control) {
            return Err(format!("host {}: the identity file's path contains a control character", host.name));
        }
    }
    Ok(())
}

/// Checks a tag: same alphabet as names, plus `:` and `/` for namespaced tags.
pub fn validate_tag(tag: &str) -> Result<(), String> {
    if tag.is_empty() {
        return Err("a tag cannot be empty".into());
    }
    within("tag", tag, MAX_TAG)?;
    if let Some(c) = tag.chars().find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | ':' | '/'))) {
        return Err(format!("tag {tag:?} contains {c:?}; use letters, digits, '.', '-', '_', ':' and '/'"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_door_refuses_names_a_shell_or_ssh_would_read() {
        let host = |hostname: &str, user: &str| {
            let mut h = Host::new("web01", hostname);
            h.username = Some(user.into());
            validate_host(&h)
        };
        assert!(host("10.0.0.5", "deploy").is_ok());
        assert!(host("fe80::1%eth0", "first.last@corp").is_ok());
        for (hostname, user) in [
            ("10.255.0.1", "$OPENAI_API_KEY"),
            ("10.255.0.1", "$(id)"),
            ("10.255.0.1", "-oProxyCommand=x"),
            ("a,b", "deploy"),
            ("-oProxyCommand=x", "deploy"),
            ("x$(id)", "deploy"),
        ] {
            assert!(host(hostname, user).is_err(), "{hostname} {user}");
        }
    }
}
