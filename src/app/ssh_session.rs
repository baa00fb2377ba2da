//! `s` on a host: the operator's own interactive SSH session. The console gives the terminal back
//! (as Ctrl-Z does), runs the system `ssh` with what merlya resolved for the host (address, port,
//! login, keys, jump hosts) and merlya's known_hosts files and host-key policy, waits for it, then
//! takes the screen back. The argument vector is built here, word by word: no shell reads it.
//!
//! The start is written to the audit log ("interactive ssh session to HOST") before `ssh` runs,
//! and its end with ssh's exit status; what is typed in the session is the operator's and is not
//! recorded. A jump host's own key is checked by the `ssh` that `-J` starts, with OpenSSH's
//! defaults (`-o` options do not reach it).

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use color_eyre::eyre::Result;
use ratatui::DefaultTerminal;

use super::model::ToastLevel;
use super::msg::Msg;
use super::workers::Services;
use crate::config::HostKeyPolicy;
use crate::inventory::Host;
use crate::ssh::SshTarget;
use crate::store::audit::AuditOutcome;

/// What `ssh` needs besides the target: where host keys are known, how unknown ones are treated,
/// and the keys merlya would try when the host names none.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SshOptions {
    /// merlya's own known_hosts first (where `accept-new` records), then the others it reads.
    pub known_hosts: Vec<PathBuf>,
    /// merlya's host-key policy.
    pub policy: HostKeyPolicy,
    /// Default keys (`~/.ssh/id_ed25519`, …) that exist: OpenSSH looks in the account's home, not
    /// in `$HOME`, so they are named.
    pub default_keys: Vec<PathBuf>,
}

/// A `known_hosts` file list as `UserKnownHostsFile` reads it (paths with spaces quoted).
fn file_list(files: &[PathBuf]) -> String {
    files
        .iter()
        .map(|f| {
            let text = f.display().to_string();
            if text.contains([' ', '\t']) { format!("\"{text}\"") } else { text }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// `[user@]host[:port]` as `-J` reads it (IPv6 addresses in brackets).
fn jump_spec(jump: &SshTarget) -> String {
    let host = if jump.hostname.contains(':') { format!("[{}]", jump.hostname) } else { jump.hostname.clone() };
    format!("{}@{host}:{}", jump.user, jump.port)
}

/// The arguments of `ssh` (after the program name) for an interactive session to `target`, or why
/// there is none: every login name and host, the jumps' included, must be one OpenSSH can put in
/// the shell command it builds for `-J` (rows stored before the door checked them, and
/// `~/.ssh/config` values, reach this point too).
pub fn argv(target: &SshTarget, options: &SshOptions) -> Result<Vec<OsString>, String> {
    for hop in target.jumps.iter().chain(std::iter::once(target)) {
        crate::inventory::check_login_name(&hop.user).map_err(|e| format!("{}: {e}", hop.name))?;
        crate::inventory::check_hostname(&hop.hostname).map_err(|e| format!("{}: {e}", hop.name))?;
        if target.jumps.iter().any(|j| j.hostname.contains('%')) {
            return Err(format!("{}: a jump host's address holds '%', which OpenSSH expands", hop.name));
        }
    }
    Ok(argv_checked(target, options))
}

fn argv_checked(target: &SshTarget, options: &SshOptions) -> Vec<OsString> {
    let mut args: Vec<OsString> = Vec::new();
    let mut push = |a: &str| args.push(OsString::from(a));
    push("-p");
    push(&target.port.to_string());
    push("-l");
    push(&target.user);
    if !options.known_hosts.is_empty() {
        push("-o");
        push(&format!("UserKnownHostsFile={}", file_list(&options.known_hosts)));
    }
    let strict = match options.policy {
        HostKeyPolicy::Strict => "yes",
        HostKeyPolicy::AcceptNew => "accept-new",
        HostKeyPolicy::Ask => "ask",
    };
    push("-o");
    push(&format!("StrictHostKeyChecking={strict}"));
    let mut keys: Vec<&Path> = target.identity_files.iter().map(PathBuf::as_path).collect();
    keys.extend(options.default_keys.iter().map(PathBuf::as_path));
    let mut seen = Vec::new();
    for key in keys {
        if !seen.contains(&key) {
            seen.push(key);
            args.push("-i".into());
            args.push(key.as_os_str().to_owned());
        }
    }
    if !target.jumps.is_empty() {
        args.push("-J".into());
        args.push(target.jumps.iter().map(jump_spec).collect::<Vec<_>>().join(",").into());
    }
    // The host after `--`: a name is never read as an option.
    args.push("--".into());
    args.push(target.hostname.clone().into());
    args
}

/// The audit log's words for the session's start.
pub fn audit_command(host: &str) -> String {
    format!("interactive ssh session to {host}")
}

/// The options for `ssh` from merlya's connection settings.
fn options(services: &Services) -> SshOptions {
    let context = services.executor.pool().context();
    let mut known_hosts = vec![context.own_known_hosts.clone()];
    known_hosts.extend(context.known_hosts_files.iter().filter(|f| **f != context.own_known_hosts).cloned());
    let default_keys = crate::ssh::auth::default_keys().into_iter().filter(|k| k.is_file()).collect();
    SshOptions { known_hosts, policy: context.policy, default_keys }
}

/// Runs the session: audited start, the terminal given to `ssh`, then taken back and redrawn. What
/// went wrong before `ssh` ran (no target, no audit entry, no `ssh` program) comes back as a toast.
pub(super) async fn run(terminal: &mut DefaultTerminal, services: &Services, host: &Host) -> Result<()> {
    let (ctx, locale) = (&services.ctx, services.locale());
    let failed = |error: String| {
        services.sender.send(Msg::Error(locale.tf("ssh.failed", &[("host", &host.name), ("error", &error)])));
    };
    let target = match services.executor.target_of(host) {
        Ok(target) => target,
        Err(e) => {
            failed(e);
            return Ok(());
        }
    };
    let args = match argv(&target, &options(services)) {
        Ok(args) => args,
        Err(e) => {
            failed(e);
            return Ok(());
        }
    };
    let request = ctx.audit_request(
        &services.executor,
        &crate::ssh::target::local_user(),
        host,
        &audit_command(&host.name),
        "not required (the operator's own session)",
    );
    // Written before the session starts: without the entry, no session.
    let ticket = match ctx.store.audit_start(request).await {
        Ok(ticket) => ticket,
        Err(e) => {
            failed(e.to_string());
            return Ok(());
        }
    };
    super::terminal_handover::give_back_terminal();
    let via: Vec<String> = target.jumps.iter().map(|j| format!(" via {}@{}:{}", j.user, j.hostname, j.port)).collect();
    println!(
        "merlya: ssh {} ({}@{}:{}{}); exit to come back to the console",
        host.name,
        target.user,
        target.hostname,
        target.port,
        via.concat()
    );
    let status = tokio::process::Command::new("ssh").args(&args).kill_on_drop(true).status().await;
    let resumed = super::terminal_handover::take_back_terminal(terminal);
    let (outcome, code, reason, shown) = match &status {
        Ok(s) if s.success() => (AuditOutcome::Ok, s.code(), None, "exit 0".to_string()),
        Ok(s) => (AuditOutcome::Failed, s.code(), None, s.to_string()),
        Err(e) => (AuditOutcome::Failed, None, Some(format!("ssh did not start: {e}")), e.to_string()),
    };
    if let Err(e) = ticket.finish(outcome, code, reason).await {
        tracing::warn!(error = %e, "cannot record the end of the ssh session");
    }
    match status {
        Ok(_) => services.sender.send(Msg::Toast {
            level: ToastLevel::Info,
            text: locale.tf("ssh.ended", &[("host", &host.name), ("status", &shown)]),
        }),
        Err(e) => failed(e.to_string()),
    }
    resumed
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(name: &str, host: &str, port: u16, user: &str) -> SshTarget {
        SshTarget {
            name: name.into(),
            hostname: host.into(),
            port,
            user: user.into(),
            identity_files: Vec::new(),
            jumps: Vec::new(),
        }
    }

    fn words(args: &[OsString]) -> Vec<String> {
        args.iter().map(|a| a.to_string_lossy().into_owned()).collect()
    }

    #[test]
    fn the_inventory_settings_become_ssh_arguments_word_by_word() {
        let mut web = target("web", "10.0.0.5", 2222, "ops");
        web.identity_files = vec![PathBuf::from("/keys/web key"), PathBuf::from("/home/me/.ssh/id_ed25519")];
        web.jumps = vec![target("bastion", "bastion.example", 22, "jump"), target("v6", "fd00::1", 2200, "j")];
        let options = SshOptions {
            known_hosts: vec![PathBuf::from("/m/known_hosts"), PathBuf::from("/home/me/my hosts")],
            policy: HostKeyPolicy::Strict,
            default_keys: vec![PathBuf::from("/home/me/.ssh/id_ed25519")],
        };
        assert_eq!(
            words(&argv(&web, &options).unwrap_or_default()),
            [
                "-p",
                "2222",
                "-l",
                "ops",
                "-o",
                "UserKnownHostsFile=/m/known_hosts \"/home/me/my hosts\"",
                "-o",
                "StrictHostKeyChecking=yes",
                "-i",
                "/keys/web key",
                "-i",
                "/home/me/.ssh/id_ed25519",
                "-J",
                "jump@bastion.example:22,j@[fd00::1]:2200",
                "--",
                "10.0.0.5",
            ]
        );
    }

    #[test]
    fn a_hostile_name_stays_one_word_after_the_options() {
        let options = SshOptions { known_hosts: vec![], policy: HostKeyPolicy::Ask, default_keys: vec![] };
        let args = words(&argv_checked(&target("x", "-oProxyCommand=touch /tmp/p; h", 22, "u"), &options));
        assert_eq!(args[args.len() - 2..], ["--", "-oProxyCommand=touch /tmp/p; h"]);
        assert!(args.contains(&"StrictHostKeyChecking=ask".to_string()));
    }

    #[test]
    fn names_a_shell_would_read_are_refused_before_ssh_runs() {
        let options = SshOptions { known_hosts: vec![], policy: HostKeyPolicy::Ask, default_keys: vec![] };
        let with_jump = |user: &str, host: &str| {
            let mut web = target("web", "10.0.0.5", 22, "ops");
            web.jumps = vec![target("bastion", host, 22, user)];
            argv(&web, &options)
        };
        for (user, host) in [
            ("$OPENAI_API_KEY", "10.255.0.1"),
            ("$(touch${IFS}/tmp/p)", "10.255.0.1"),
            ("`id`", "10.255.0.1"),
            ("j'x", "10.255.0.1"),
            ("jump", "a,b.example"),
            ("jump", "x$(id)"),
            ("jump", "-oProxyCommand=x"),
            ("jump", "fe80::1%eth0"),
        ] {
            assert!(with_jump(user, host).is_err(), "{user}@{host}");
        }
        assert!(with_jump("deploy", "bastion.example").is_ok());
        assert!(argv(&target("web", "-oProxyCommand=x", 22, "u"), &options).is_err());
        assert!(argv(&target("web", "fe80::1%eth0", 22, "first.last@corp"), &options).is_ok());
    }
}
