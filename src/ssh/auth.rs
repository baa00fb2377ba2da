//! Client authentication, in the order OpenSSH users expect: the agent, the
//! host's own key and configured keys, the default keys in ~/.ssh, then
//! keyboard-interactive (MFA) when the server offers it. An encrypted key's
//! passphrase comes from the keyring (`ssh-key:<path>:passphrase`) or, failing
//! that, from a person through the [`Prompter`].

use std::path::PathBuf;
use std::sync::Arc;

use russh::MethodKind;
use russh::client::{AuthResult, Handle, KeyboardInteractiveAuthResponse};
use russh::keys::agent::AgentIdentity;
use russh::keys::agent::client::AgentClient;
use russh::keys::{HashAlg, PrivateKeyWithHashAlg};

use super::client::{ClientHandler, ConnectContext, SshError};
use super::target::SshTarget;
use crate::i18n::Text;
use crate::prompt::Prompter;
use crate::secrets::key_passphrase_name;

/// The keys OpenSSH tries by default, in its order.
pub fn default_keys() -> Vec<PathBuf> {
    let Some(home) = dirs::home_dir() else { return Vec::new() };
    ["id_ed25519", "id_ecdsa", "id_rsa"].iter().map(|k| home.join(".ssh").join(k)).collect()
}

/// Authenticates `handle` as `target.user`, or says what was tried.
pub async fn authenticate(
    handle: &mut Handle<ClientHandler>,
    target: &SshTarget,
    ctx: &ConnectContext,
) -> Result<(), SshError> {
    let prompter = ctx.prompter.as_ref();
    let mut tried: Vec<String> = Vec::new();
    let rsa_hash = handle.best_supported_rsa_hash().await.ok().flatten().flatten();
    let mut remaining_kbd = false;

    match try_agent(handle, &target.user, rsa_hash).await {
        AgentOutcome::Success => return Ok(()),
        AgentOutcome::Tried(n, kbd) => {
            tried.push(format!("agent ({n} keys)"));
            remaining_kbd |= kbd;
        }
        AgentOutcome::NoAgent => {}
    }

    let mut files = target.identity_files.clone();
    for key in default_keys() {
        if !files.contains(&key) {
            files.push(key);
        }
    }
    for path in files.iter().filter(|p| p.exists()) {
        let key = match russh::keys::load_secret_key(path, None) {
            Ok(k) => k,
            Err(russh::keys::Error::KeyIsEncrypted) => {
                let stored = ctx.secrets.lookup(&key_passphrase_name(path));
                let pass = match stored {
                    Some(p) => Some(p),
                    None => {
                        let shown = path.display().to_string();
                        let title = Text::key("prompt.key_title", &[("host", &target.name)]);
                        prompter.secret(&title, &Text::key("prompt.key_body", &[("path", &shown)])).await
                    }
                };
                let Some(pass) = pass else {
                    tried.push(format!("{} (encrypted, no passphrase given)", path.display()));
                    continue;
                };
                match russh::keys::load_secret_key(path, Some(&pass)) {
                    Ok(k) => k,
                    Err(_) => {
                        tried.push(format!("{} (wrong passphrase)", path.display()));
                        continue;
                    }
                }
            }
            Err(e) => {
                tried.push(format!("{} (unreadable: {e})", path.display()));
                continue;
            }
        };
        let hash = if key.algorithm().is_rsa() { Some(rsa_hash) } else { None };
        let with_hash = PrivateKeyWithHashAlg::new(Arc::new(key), hash.flatten());
        match handle.authenticate_publickey(target.user.clone(), with_hash).await {
            Ok(AuthResult::Success) => return Ok(()),
            Ok(AuthResult::Failure { remaining_methods, .. }) => {
                remaining_kbd |= remaining_methods.contains(&MethodKind::KeyboardInteractive);
                tried.push(path.display().to_string());
            }
            Err(e) => return Err(SshError::Protocol(target.name.clone(), e.to_string())),
        }
    }

    if remaining_kbd || tried.is_empty() {
        match keyboard_interactive(handle, target, prompter).await? {
            true => return Ok(()),
            false => tried.push("keyboard-interactive".into()),
        }
    }
    let what =
        if tried.is_empty() { "no key was available".to_string() } else { format!("tried {}", tried.join(", ")) };
    Err(SshError::Auth(format!("{}@{}", target.user, target.name), what))
}

enum AgentOutcome {
    Success,
    Tried(usize, bool),
    NoAgent,
}

async fn try_agent(handle: &mut Handle<ClientHandler>, user: &str, rsa_hash: Option<HashAlg>) -> AgentOutcome {
    if std::env::var_os("SSH_AUTH_SOCK").is_none() {
        return AgentOutcome::NoAgent;
    }
    let Ok(mut agent) = AgentClient::connect_env().await else { return AgentOutcome::NoAgent };
    let Ok(identities) = agent.request_identities().await else { return AgentOutcome::NoAgent };
    let mut kbd = false;
    let mut count = 0;
    for identity in identities {
        let AgentIdentity::PublicKey { key, .. } = identity else { continue };
        count += 1;
        let hash = if key.algorithm().is_rsa() { rsa_hash } else { None };
        match handle.authenticate_publickey_with(user.to_string(), key, hash, &mut agent).await {
            Ok(AuthResult::Success) => return AgentOutcome::Success,
            Ok(AuthResult::Failure { remaining_methods, .. }) => {
                kbd |= remaining_methods.contains(&MethodKind::KeyboardInteractive)
            }
            Err(e) => tracing::debug!(error = ?e, "agent signing failed"),
        }
    }
    AgentOutcome::Tried(count, kbd)
}

/// Answers the server's prompts (one-time codes, passwords) through the prompter.
async fn keyboard_interactive(
    handle: &mut Handle<ClientHandler>,
    target: &SshTarget,
    prompter: &dyn Prompter,
) -> Result<bool, SshError> {
    let protocol = |e: russh::Error| SshError::Protocol(target.name.clone(), e.to_string());
    let mut reply =
        handle.authenticate_keyboard_interactive_start(target.user.clone(), None).await.map_err(protocol)?;
    // Servers may send several rounds; bound them so a hostile server cannot loop forever.
    for _ in 0..8 {
        match reply {
            KeyboardInteractiveAuthResponse::Success => return Ok(true),
            KeyboardInteractiveAuthResponse::Failure { .. } => return Ok(false),
            KeyboardInteractiveAuthResponse::InfoRequest { name, instructions, prompts } => {
                let mut answers = Vec::with_capacity(prompts.len());
                for p in &prompts {
                    // The server's own words are shown as they are.
                    let title = if name.is_empty() {
                        Text::key("prompt.login_title", &[("host", &target.name)])
                    } else {
                        Text::Raw(name.clone())
                    };
                    let text =
                        if instructions.is_empty() { p.prompt.clone() } else { format!("{instructions} {}", p.prompt) };
                    match prompter.secret(&title, &Text::Raw(text)).await {
                        Some(answer) => answers.push(answer),
                        None => return Ok(false),
                    }
                }
                reply = handle.authenticate_keyboard_interactive_respond(answers).await.map_err(protocol)?;
            }
        }
    }
    Ok(false)
}
