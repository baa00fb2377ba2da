//! Turning the command a person or model wrote into what runs: secret
//! references resolved, `sudo` adapted to the host's elevation, and the values
//! to mask in output. The password for `sudo_password` hosts goes to sudo's
//! stdin after sudo's own prompt (see [`super::sudo`]), never into argv (where
//! `ps` shows it to every local user).

use crate::i18n::Text;
use crate::inventory::{Elevation, Host};
use crate::prompt::Prompter;
use crate::secrets::SecretSource;
use crate::secrets::reference::{references, resolve};

use super::sandbox::ElevatedRead;
use super::sudo::{SudoFeed, command_start, sudo_command};

/// What actually runs.
#[derive(Debug)]
pub struct Prepared {
    /// The command line to execute.
    pub command: String,
    /// The sudo password and this run's prompt marker, for `sudo_password`
    /// hosts: written to stdin only once sudo's prompt shows on stderr.
    pub sudo: Option<SudoFeed>,
    /// Secret values to replace by `***` wherever output is shown or stored.
    pub mask: Vec<String>,
    /// Bytes written to the command's stdin before anything else: the command
    /// text itself when it holds secret values, so that they never appear in
    /// an argv that `ps` shows (the host runs a loader that reads them).
    pub input: Option<String>,
    /// Where output past what a result keeps is written (see `exec::spill`), if anywhere.
    pub spill: Option<super::spill::SpillTarget>,
    /// Run on a pseudo-terminal (doas with a password reads it only from a terminal); stdout
    /// and stderr then arrive as one stream, and the password gate watches it.
    pub pty: bool,
    /// The elevated command runs inside the read-only sandbox (`prepare_read` put it there).
    pub elevated_sandbox: bool,
}

impl Prepared {
    /// Runs `text` through a loader reading it from stdin when it holds secret values.
    fn with_secrets_off_argv(mut self, has_secrets: bool) -> Self {
        if has_secrets {
            let script = std::mem::take(&mut self.command);
            // `dd bs=1` reads exactly the script, leaving stdin for sudo's password.
            self.command = format!("eval \"$(dd bs=1 count={} 2>/dev/null)\"", script.len());
            self.input = Some(script);
        }
        self
    }
}

/// The secret name of a host's sudo password.
pub fn sudo_secret_name(host: &str) -> String {
    format!("sudo:{host}:password")
}

/// Why a host has no sudo password, and the three ways to fix it (ADR-011).
pub fn missing_password_error(host: &str) -> String {
    format!(
        "{host} needs a sudo password and none is available. Fix it one of three ways: \
         (1) store it: `merlya secret set {}`; \
         (2) run interactively (the console or a terminal) to be asked for it; \
         (3) give the login user passwordless sudo and set `merlya hosts add ... --elevation sudo`",
        sudo_secret_name(host)
    )
}

/// Prepares `command` for `host`.
pub async fn prepare(
    host: &Host,
    command: &str,
    secrets: &dyn SecretSource,
    prompter: &dyn Prompter,
) -> Result<Prepared, String> {
    prepare_read(host, command, secrets, prompter, None).await
}

/// [`prepare`] for a proven read that elevates: with `sandbox`, the command sudo (su, doas) runs
/// is the read-only sandbox around it, set up as the user it switches to.
pub async fn prepare_read(
    host: &Host,
    command: &str,
    secrets: &dyn SecretSource,
    prompter: &dyn Prompter,
    sandbox: Option<&ElevatedRead>,
) -> Result<Prepared, String> {
    // A reference resolves only on its own host: `@db:db01:password` never reaches web01.
    if let Some(foreign) = references(command).into_iter().find(|r| r.split(':').nth(1) != Some(host.name.as_str())) {
        return Err(format!(
            "secret @{foreign} belongs to another host; it resolves only on its own host, not on {}",
            host.name
        ));
    }
    let resolved = resolve(command, secrets).map_err(|missing| {
        let names: Vec<String> = missing.iter().map(|m| format!("@{m}")).collect();
        let sets: Vec<String> = missing.iter().map(|m| format!("`merlya secret set {m}`")).collect();
        format!("secret {} is not stored; store it with {}", names.join(", "), sets.join(", "))
    })?;
    let has_secrets = !resolved.values.is_empty();
    let mask = resolved.values;
    let text = resolved.text;
    let Some(rest) = text.trim_start().strip_prefix("sudo ") else {
        return Ok(Prepared {
            command: text,
            sudo: None,
            mask,
            input: None,
            spill: None,
            pty: false,
            elevated_sandbox: false,
        }
        .with_secrets_off_argv(has_secrets));
    };
    let no_password = |method: &str| {
        format!(
            "{} elevates with {method} and no password was given; store it with `merlya secret set {method}:{}:password`",
            host.name, host.name
        )
    };
    // A fed elevation: the password (masked everywhere) goes to the prompt only.
    let fed = |command: String, feed: SudoFeed, mut mask: Vec<String>, pty: bool| {
        mask.push(feed.password.clone());
        Prepared { command, sudo: Some(feed), mask, input: None, spill: None, pty, elevated_sandbox: false }
            .with_secrets_off_argv(has_secrets)
    };
    // A sandboxed read: sudo's options, then `sh -c WRAPPED` in place of the command.
    let sandboxed = match sandbox.filter(|_| !has_secrets) {
        Some(plan) => match command_start(rest)? {
            Some(at) => Some((rest[..at].trim_end().to_string(), plan.shell(rest[at..].trim())?, plan)),
            None => None,
        },
        None => None,
    };
    let with_sandbox = |options: &str, shell: &str| format!("{options} {shell}").trim_start().to_string();
    let rest_sandboxed = sandboxed.as_ref().map(|(options, shell, _)| with_sandbox(options, shell));
    let rest_in = rest_sandboxed.as_deref().unwrap_or(rest);
    // doas with a password runs on a terminal, as it is (never in the sandbox).
    let applied = sandboxed.is_some() && host.elevation != Elevation::DoasPassword;
    let prepared = match host.elevation {
        Elevation::SudoPassword => {
            let rest = rest_in;
            let password = elevation_password(host, "sudo", secrets, prompter)
                .await
                .ok_or_else(|| missing_password_error(&host.name))?;
            let feed = SudoFeed::new(password)?;
            Ok(fed(sudo_command(rest, &feed)?, feed, mask, false))
        }
        Elevation::Doas => {
            // doas.conf may allow only some programs: probe for a shell first (`:` runs as root).
            let command = match &sandboxed {
                Some((options, _, plan)) => format!(
                    "if {} >/dev/null 2>&1; then exec {}; else {}; fi",
                    doas_command(&with_sandbox(options, "sh -c :"))?,
                    doas_command(rest_in)?,
                    plan.without(&doas_command(rest)?)
                ),
                None => doas_command(rest)?,
            };
            Ok(Prepared { command, sudo: None, mask, input: None, spill: None, pty: false, elevated_sandbox: false }
                .with_secrets_off_argv(has_secrets))
        }
        Elevation::Su => {
            let password = elevation_password(host, "su", secrets, prompter).await.ok_or_else(|| no_password("su"))?;
            let feed = SudoFeed::for_su(password)?;
            Ok(fed(su_command(rest_in, &feed)?, feed, mask, false))
        }
        Elevation::DoasPassword => {
            let password =
                elevation_password(host, "doas", secrets, prompter).await.ok_or_else(|| no_password("doas"))?;
            if host.is_local() {
                return Err("doas with a password needs a terminal; on localhost run it yourself".into());
            }
            // On a terminal the loader could not read the command from stdin intact.
            if has_secrets {
                return Err(format!(
                    "{} elevates with doas and a password, which runs on a terminal: a command holding @secrets \
                     cannot be fed to it; use sudo or passwordless doas there",
                    host.name
                ));
            }
            let feed = SudoFeed::for_su(password)?;
            Ok(fed(doas_password_command(rest, &feed)?, feed, mask, true))
        }
        // Never let sudo wait for a password nobody will type. sudoers may allow only some
        // programs: `sudo -l sh` says whether the sandbox's shell may start.
        Elevation::Sudo | Elevation::None => {
            let command = match &sandboxed {
                Some((options, _, plan)) => format!(
                    "if sudo -n {} >/dev/null 2>&1; then exec sudo -n {rest_in}; else {}; fi",
                    with_sandbox(options, "-l sh"),
                    plan.without(&format!("sudo -n {rest}"))
                ),
                None => format!("sudo -n {rest}"),
            };
            Ok(Prepared { command, sudo: None, mask, input: None, spill: None, pty: false, elevated_sandbox: false }
                .with_secrets_off_argv(has_secrets))
        }
    };
    prepared.map(|p| Prepared { elevated_sandbox: applied, ..p })
}

/// The user and command of `sudo [-u USER] COMMAND`, for methods that have
/// no other sudo option (`method` names it in the refusal).
fn user_and_command<'a>(rest: &'a str, method: &str) -> Result<(Option<&'a str>, &'a str), String> {
    let rest = rest.trim_start();
    let (user, command) = match rest.strip_prefix("-u") {
        Some(after) => {
            let after = after.trim_start();
            let end = after.find(char::is_whitespace).unwrap_or(after.len());
            (Some(&after[..end]), after[end..].trim_start())
        }
        None => (None, rest),
    };
    if let Some(option) = command.split_whitespace().next().filter(|w| w.starts_with('-')) {
        return Err(format!(
            "this host elevates with {method}, which has no equivalent of sudo's {option}; write the command without it"
        ));
    }
    match user {
        Some("") => Err("sudo -u is missing its user".into()),
        Some(u) if u.starts_with('-') || !u.chars().all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c)) => {
            Err(format!("sudo -u {u:?}: expected a plain user name"))
        }
        _ => Ok((user, command)),
    }
}

/// `sudo REST` as passwordless doas: `doas -n` never waits for a password.
/// Of sudo's options only `-u USER` has a doas equivalent; others are refused
/// rather than dropped.
fn doas_command(rest: &str) -> Result<String, String> {
    match user_and_command(rest, "doas")? {
        (Some(user), command) => Ok(format!("doas -n -u {user} {command}")),
        (None, command) => Ok(format!("doas -n {command}")),
    }
}

/// `text` as one shell word.
fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// `sudo REST` through su (ADR 0017): the wrapper opens the window in which
/// su's prompt is believed, su runs a shell that closes it and then runs the
/// command with stdin from /dev/null, so only su can read the password.
fn su_command(rest: &str, feed: &SudoFeed) -> Result<String, String> {
    let (user, command) = user_and_command(rest, "su")?;
    // The stored password is root's; another user is reached from root, which su lets through.
    let run = match user.filter(|u| *u != "root") {
        Some(user) => format!("exec su {user} -s /bin/sh -c {}", quote(command)),
        None => format!("exec sh -c {}", quote(command)),
    };
    let inner = format!("printf %s {} >&2; {run} </dev/null", feed.started());
    Ok(format!("printf %s {} >&2; exec su root -c {}", feed.prompt(), quote(&inner)))
}

/// `sudo REST` through doas with a password, on a pty: the same window of
/// markers as su (doas's prompt is believed only between them).
fn doas_password_command(rest: &str, feed: &SudoFeed) -> Result<String, String> {
    let (user, command) = user_and_command(rest, "doas")?;
    let as_user = user.map(|u| format!("-u {u} ")).unwrap_or_default();
    let inner = format!("printf %s {}; exec sh -c {} </dev/null", feed.started(), quote(command));
    Ok(format!("printf %s {}; exec doas {as_user}sh -c {}", feed.prompt(), quote(&inner)))
}

/// The elevation password of `host` for `method` (`sudo`, `su`, `doas`):
/// stored as `METHOD:HOST:password`, else asked for (hidden), else `None`.
async fn elevation_password(
    host: &Host,
    method: &str,
    secrets: &dyn SecretSource,
    prompter: &dyn Prompter,
) -> Option<String> {
    if let Some(password) = secrets.lookup(&format!("{method}:{}:password", host.name)) {
        return Some(password);
    }
    let args = [("host", host.name.as_str())];
    let (title, body) = match method {
        "sudo" => ("prompt.sudo_title", "prompt.sudo_body"),
        "su" => ("prompt.su_title", "prompt.su_body"),
        _ => ("prompt.doas_title", "prompt.doas_body"),
    };
    prompter.secret(&Text::key(title, &args), &Text::key(body, &args)).await
}

/// Where the login user's doas password for `host` is stored.
pub fn doas_secret_name(host: &str) -> String {
    format!("doas:{host}:password")
}

/// Where the root (or target user's) password for su on `host` is stored.
pub fn su_secret_name(host: &str) -> String {
    format!("su:{host}:password")
}

/// A read-only probe printing the elevation method a host offers:
/// passwordless sudo, sudo with a password, doas, su, or none.
pub const ELEVATION_PROBE: &str = "if sudo -n true 2>/dev/null; then echo sudo; \
elif sudo -n true 2>&1 | grep -q 'password is required'; then echo sudo_password; \
elif command -v doas >/dev/null 2>&1; then if doas -n true 2>/dev/null; then echo doas; else echo doas_password; fi; \
elif command -v su >/dev/null 2>&1; then echo su; \
else echo none; fi";

/// What `sudo true`, given the host's password, says about the login user's rights: sudo asks for
/// the password before it says whether the user may use it, so `sudo -n` alone cannot tell a user
/// with rights behind a password from a user with none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SudoRights {
    /// The password was taken and the command ran: sudo with a password.
    Granted,
    /// The password was taken and sudo refused the user: no sudo rights.
    None,
    /// sudo refused the password given.
    WrongPassword,
    /// No answer either way (no password to give, the host failed).
    Unknown,
}

/// Reads the outcome of `sudo true` run with the host's password (the rights check above).
pub fn sudo_rights(succeeded: bool, stderr: &str) -> SudoRights {
    let said = stderr.to_ascii_lowercase();
    if succeeded {
        SudoRights::Granted
    } else if said.contains("is not in the sudoers file")
        || said.contains("may not run sudo")
        || said.contains("is not allowed to execute")
    {
        SudoRights::None
    } else if said.contains("incorrect password") || said.contains("sorry, try again") {
        SudoRights::WrongPassword
    } else {
        SudoRights::Unknown
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prompt::NoPrompter;

    #[test]
    fn sudo_rights_are_read_from_what_sudo_says_after_the_password() {
        assert_eq!(sudo_rights(true, ""), SudoRights::Granted);
        assert_eq!(
            sudo_rights(false, "ops is not in the sudoers file.  This incident will be reported.\n"),
            SudoRights::None
        );
        assert_eq!(sudo_rights(false, "Sorry, user ops may not run sudo on web01.\n"), SudoRights::None);
        assert_eq!(
            sudo_rights(false, "Sorry, try again.\nsudo: 1 incorrect password attempt\n"),
            SudoRights::WrongPassword
        );
        assert_eq!(sudo_rights(false, "timed out"), SudoRights::Unknown);
    }

    #[test]
    fn the_elevation_probe_passes_the_read_only_gate() {
        let analysis = crate::safety::analyze(ELEVATION_PROBE);
        assert!(analysis.is_read_only(), "{:?}", analysis.reasons);
    }

    struct Secrets;
    impl SecretSource for Secrets {
        fn lookup(&self, name: &str) -> Option<String> {
            match name {
                "sudo:web01:password" => Some("pw-web01".into()),
                "db:db01:password" => Some("dbpw".into()),
                _ => None,
            }
        }
    }

    fn host(name: &str, elevation: Elevation) -> Host {
        let mut h = Host::new(name, name);
        h.elevation = elevation;
        h
    }

    #[tokio::test]
    async fn sudo_password_waits_for_the_marker_and_is_masked() {
        let p = prepare(&host("web01", Elevation::SudoPassword), "sudo systemctl restart nginx", &Secrets, &NoPrompter)
            .await
            .unwrap();
        let feed = p.sudo.as_ref().unwrap();
        assert_eq!(feed.password, "pw-web01");
        assert!(p.command.starts_with(&format!("sudo -S -p '{}' sh -c ", feed.prompt())), "{}", p.command);
        assert!(p.command.ends_with(&format!("{} systemctl restart nginx", feed.started())), "{}", p.command);
        assert!(!p.command.contains("pw-web01"));
        assert_eq!(p.mask, ["pw-web01"]);
    }

    #[tokio::test]
    async fn doas_hosts_run_doas_and_unfed_methods_fail_instead_of_sudo() {
        let doas = host("bsd01", Elevation::Doas);
        let p = prepare(&doas, "sudo systemctl restart nginx", &Secrets, &NoPrompter).await.unwrap();
        assert_eq!(p.command, "doas -n systemctl restart nginx");
        let p = prepare(&doas, "sudo -u postgres psql -c 'select 1'", &Secrets, &NoPrompter).await.unwrap();
        assert_eq!(p.command, "doas -n -u postgres psql -c 'select 1'");
        assert!(prepare(&doas, "sudo -E env", &Secrets, &NoPrompter).await.unwrap_err().contains("sudo's -E"));
        // With no password stored and nobody to ask, su and doas-with-password say where to store it.
        for (elevation, secret) in
            [(Elevation::Su, "su:old01:password"), (Elevation::DoasPassword, "doas:old01:password")]
        {
            let e = prepare(&host("old01", elevation), "sudo id", &Secrets, &NoPrompter).await.unwrap_err();
            assert!(e.contains("old01 elevates with") && e.contains(secret), "{e}");
        }
        // su and doas take no sudo option but -u, and never a user name that is not plain.
        let feed = SudoFeed::for_su("pw".into()).unwrap();
        assert!(su_command("-E id", &feed).unwrap_err().contains("sudo's -E"));
        assert!(su_command("-u $(x) id", &feed).is_err());
        assert!(
            su_command("-u - id", &feed).is_err() && su_command("-u -m id", &feed).is_err(),
            "an option, not a user"
        );
        let su = su_command("id -u; echo 'it''s'", &feed).unwrap();
        assert!(su.starts_with(&format!("printf %s {} >&2; exec su root -c '", feed.prompt())), "{su}");
        assert!(!su.contains("pw"), "{su}");
        // Commands without sudo are untouched whatever the elevation.
        assert_eq!(prepare(&host("old01", Elevation::Su), "id", &Secrets, &NoPrompter).await.unwrap().command, "id");
    }

    /// The forms a sandboxed elevated read takes; that they run and hold is shown on real hosts
    /// (tests/integration: exec_safety, local_sandbox).
    #[tokio::test]
    async fn an_elevated_read_runs_its_sandbox_as_the_user_it_becomes() {
        use crate::exec::sandbox::{ElevatedRead, SandboxMode};
        let prefer = ElevatedRead { mode: SandboxMode::Prefer, hide: Vec::new() };
        let require = ElevatedRead { mode: SandboxMode::Require, hide: Vec::new() };
        let shell = prefer.shell("psql -X -c 'select 1'").unwrap();
        let read = |elevation, plan| async move {
            prepare_read(
                &host("db01", elevation),
                "sudo -u postgres psql -X -c 'select 1'",
                &Secrets,
                &NoPrompter,
                plan,
            )
            .await
            .unwrap()
        };
        // Passwordless sudo: the sandbox when sudoers lets a shell start, else the command as it is.
        let p = read(Elevation::Sudo, Some(&prefer)).await;
        assert!(p.elevated_sandbox);
        assert_eq!(
            p.command,
            format!(
                "if sudo -n -u postgres -l sh >/dev/null 2>&1; then exec sudo -n -u postgres {shell}; \
                 else exec sudo -n -u postgres psql -X -c 'select 1'; fi"
            )
        );
        // …and nothing under `require`.
        let p = read(Elevation::Sudo, Some(&require)).await;
        assert!(
            p.command.contains("else echo 'merlya: elevation here may not start") && p.command.contains("exit 125")
        );
        // doas probes for a shell by running `:`.
        let p = read(Elevation::Doas, Some(&prefer)).await;
        assert!(
            p.command
                .starts_with("if doas -n -u postgres sh -c : >/dev/null 2>&1; then exec doas -n -u postgres sh -c ")
        );
        // sudo with a password already runs a shell: the sandbox is that shell's command.
        let host_with_password = host("web01", Elevation::SudoPassword);
        let p = prepare_read(
            &host_with_password,
            "sudo -u postgres psql -X -c 'select 1'",
            &Secrets,
            &NoPrompter,
            Some(&prefer),
        )
        .await
        .unwrap();
        let started = p.sudo.as_ref().map(|f| f.started()).unwrap_or_default();
        assert!(p.elevated_sandbox && p.command.ends_with(&format!("{started} {shell}")), "{}", p.command);
        assert!(p.command.contains(" -u postgres sh -c "), "{}", p.command);
        // doas with a password runs on a terminal, as it is.
        let secrets = Secrets;
        let p =
            prepare_read(&host("db01", Elevation::DoasPassword), "sudo id", &secrets, &NoPrompter, Some(&prefer)).await;
        assert!(p.is_err() || !p.unwrap().elevated_sandbox);
        // Without a plan nothing changes.
        assert_eq!(read(Elevation::Sudo, None).await.command, "sudo -n -u postgres psql -X -c 'select 1'");
    }

    #[tokio::test]
    async fn missing_password_without_a_person_names_three_fixes() {
        let e = prepare(&host("web02", Elevation::SudoPassword), "sudo id", &Secrets, &NoPrompter).await.unwrap_err();
        assert!(e.contains("(1) store it: `merlya secret set sudo:web02:password`"), "{e}");
        assert!(e.contains("(2)") && e.contains("(3)"), "{e}");
    }

    #[tokio::test]
    async fn passwordless_sudo_never_waits_and_references_resolve() {
        let p = prepare(&host("web01", Elevation::Sudo), "sudo id", &Secrets, &NoPrompter).await.unwrap();
        assert_eq!(p.command, "sudo -n id");
        let p = prepare(&host("db01", Elevation::None), "PGPASSWORD=@db:db01:password psql", &Secrets, &NoPrompter)
            .await
            .unwrap();
        // The value travels on stdin to a loader, never in the command line.
        assert_eq!(p.command, "eval \"$(dd bs=1 count=20 2>/dev/null)\"");
        assert_eq!(p.input.as_deref(), Some("PGPASSWORD=dbpw psql"));
        assert_eq!(p.mask, ["dbpw"]);
        let e = prepare(&host("db01", Elevation::None), "x @api:db01:token", &Secrets, &NoPrompter).await.unwrap_err();
        assert!(e.contains("merlya secret set api:db01:token"), "{e}");
        let e = prepare(&host("web01", Elevation::None), "PGPASSWORD=@db:db01:password psql", &Secrets, &NoPrompter)
            .await
            .unwrap_err();
        assert!(e.contains("belongs to another host"), "{e}");
    }
}
