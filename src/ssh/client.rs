//! Opening authenticated SSH connections, directly or through jump hosts,
//! with the server's key checked against known_hosts under the configured
//! policy.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use russh::client::{self, Handle};
use russh::keys::PublicKeyBase64;
use russh::keys::ssh_key;

use super::auth::authenticate;
use super::known_hosts::{self, KnownHostStatus};
use super::target::SshTarget;
use crate::config::HostKeyPolicy;
use crate::i18n::Text;
use crate::prompt::Prompter;
use crate::secrets::SecretSource;

/// A connection failure, phrased for the person reading it.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum SshError {
    /// TCP connect or handshake did not finish in time.
    #[error("connection to {0} timed out after {1}s")]
    Timeout(String, u64),
    /// TCP-level failure (refused, unreachable, DNS).
    #[error("cannot reach {0}: {1}")]
    Unreachable(String, String),
    /// The server's key was refused; the text says why and what to do.
    #[error("{0}")]
    HostKey(String),
    /// No authentication method worked.
    #[error("authentication failed for {0}: {1}")]
    Auth(String, String),
    /// Protocol trouble after connecting.
    #[error("ssh error with {0}: {1}")]
    Protocol(String, String),
}

/// What every connection needs besides the target.
#[derive(Clone)]
pub struct ConnectContext {
    /// known_hosts files consulted, in order (~/.ssh/known_hosts, merlya's).
    pub known_hosts_files: Vec<PathBuf>,
    /// Where newly trusted keys are written.
    pub own_known_hosts: PathBuf,
    /// What to do with unknown keys.
    pub policy: HostKeyPolicy,
    /// Who answers questions.
    pub prompter: Arc<dyn Prompter>,
    /// Where stored key passphrases are looked up before asking.
    pub secrets: Arc<dyn SecretSource>,
    /// Limit for TCP + handshake + authentication.
    pub connect_timeout: Duration,
}

/// The russh event handler: checks host keys, remembers why one was refused.
pub struct ClientHandler {
    /// The inventory name, for the questions a person answers.
    name: String,
    host: String,
    port: u16,
    ctx: ConnectContext,
    refusal: Arc<Mutex<Option<String>>>,
}

impl client::Handler for ClientHandler {
    type Error = russh::Error;

    async fn check_server_key(&mut self, offered: &russh::keys::PublicKeyOrCertificate) -> Result<bool, Self::Error> {
        let key: &ssh_key::PublicKey = match offered {
            russh::keys::PublicKeyOrCertificate::PublicKey { key, .. } => key,
            russh::keys::PublicKeyOrCertificate::Certificate(_) => {
                self.refuse("the server offered a host certificate; only plain host keys are supported".into());
                return Ok(false);
            }
        };
        let key_type = key.algorithm().as_str().to_string();
        let key_b64 = key.public_key_base64();
        let (name, host) = (self.name.as_str(), self.host.as_str());
        match verify_host_key(&self.ctx, NamedHost { name, host, port: self.port }, &key_type, &key_b64).await {
            Ok(()) => Ok(true),
            Err(reason) => {
                self.refuse(reason);
                Ok(false)
            }
        }
    }
}

impl ClientHandler {
    fn refuse(&self, reason: String) {
        if let Ok(mut slot) = self.refusal.lock() {
            *slot = Some(reason);
        }
    }
}

/// A host being connected to: its inventory name, and the address and port its key is kept under.
#[derive(Debug, Clone, Copy)]
pub struct NamedHost<'a> {
    /// The inventory name.
    pub name: &'a str,
    /// The address connected to.
    pub host: &'a str,
    /// The port.
    pub port: u16,
}

/// Applies the host-key policy to one offered key.
pub async fn verify_host_key(
    ctx: &ConnectContext,
    target: NamedHost<'_>,
    key_type: &str,
    key_b64: &str,
) -> Result<(), String> {
    let NamedHost { name, host, port } = target;
    let fp = known_hosts::fingerprint(key_type, key_b64);
    let shown = known_hosts::host_pattern(host, port);
    // A person reads the inventory name first, then where its key is kept.
    let asked = if name.is_empty() || name == host { shown.clone() } else { format!("{name} ({shown})") };
    match known_hosts::check(&ctx.known_hosts_files, host, port, key_type, key_b64) {
        KnownHostStatus::Known => Ok(()),
        KnownHostStatus::Changed { file, line } => Err(format!(
            "HOST KEY CHANGED for {shown}: it now offers {key_type} {fp}, which differs from {}:{line}. \
             This may be an attack; merlya refuses to connect. If the change is expected, remove that line.",
            file.display()
        )),
        KnownHostStatus::Revoked { file, line } => {
            Err(format!("host key {fp} of {shown} is revoked ({}:{line}); refusing", file.display()))
        }
        status => {
            let other = status == KnownHostStatus::KnownWithOtherTypes;
            let trust = match ctx.policy {
                HostKeyPolicy::Strict => false,
                HostKeyPolicy::AcceptNew => !other,
                HostKeyPolicy::Ask => {
                    let body = if other { "prompt.hostkey_body_other" } else { "prompt.hostkey_body" };
                    let args = [("host", asked.as_str()), ("type", key_type), ("fingerprint", fp.as_str())];
                    let title = Text::key("prompt.hostkey_title", &[]);
                    ctx.prompter.confirm_host_key(&title, &Text::key(body, &args)).await
                }
            };
            if !trust {
                return Err(format!(
                    "unknown host key for {shown} ({key_type} {fp}) refused under host_key_policy {}; \
                     verify the fingerprint, then add it to known_hosts or use accept-new",
                    policy_name(ctx.policy)
                ));
            }
            known_hosts::append(&ctx.own_known_hosts, host, port, key_type, key_b64)
                .map_err(|e| format!("cannot record host key in {}: {e}", ctx.own_known_hosts.display()))?;
            tracing::info!(host = %shown, fingerprint = %fp, "recorded new host key");
            Ok(())
        }
    }
}

fn policy_name(policy: HostKeyPolicy) -> &'static str {
    match policy {
        HostKeyPolicy::Strict => "strict",
        HostKeyPolicy::AcceptNew => "accept-new",
        HostKeyPolicy::Ask => "ask",
    }
}

/// An authenticated connection and the jump connections it rides on (kept
/// alive as long as it is).
pub struct Connection {
    /// The session to open channels on.
    pub handle: Handle<ClientHandler>,
    _jumps: Vec<Handle<ClientHandler>>,
}

fn russh_config() -> Arc<client::Config> {
    Arc::new(client::Config {
        inactivity_timeout: None,
        keepalive_interval: Some(Duration::from_secs(30)),
        keepalive_max: 3,
        nodelay: true,
        ..Default::default()
    })
}

/// Connects to `target` through its jump hosts, within the connect timeout.
pub async fn connect(target: &SshTarget, ctx: &ConnectContext) -> Result<Connection, SshError> {
    let limit = ctx.connect_timeout;
    let hops = target.jumps.len() as u32 + 1;
    // Each hop gets the full budget: a chain of N hops may take N times as long.
    match tokio::time::timeout(limit * hops, connect_inner(target, ctx)).await {
        Ok(result) => result,
        Err(_) => Err(SshError::Timeout(target.name.clone(), (limit * hops).as_secs())),
    }
}

async fn connect_inner(target: &SshTarget, ctx: &ConnectContext) -> Result<Connection, SshError> {
    let mut jumps: Vec<Handle<ClientHandler>> = Vec::new();
    for hop in &target.jumps {
        let handle = match jumps.last() {
            None => dial(hop, ctx).await?,
            Some(previous) => tunnel(previous, hop, ctx).await?,
        };
        jumps.push(handle);
    }
    let handle = match jumps.last() {
        None => dial(target, ctx).await?,
        Some(previous) => tunnel(previous, target, ctx).await?,
    };
    Ok(Connection { handle, _jumps: jumps })
}

fn handler_for(target: &SshTarget, ctx: &ConnectContext) -> (ClientHandler, Arc<Mutex<Option<String>>>) {
    let refusal = Arc::new(Mutex::new(None));
    let handler = ClientHandler {
        name: target.name.clone(),
        host: target.hostname.clone(),
        port: target.port,
        ctx: ctx.clone(),
        refusal: refusal.clone(),
    };
    (handler, refusal)
}

/// Turns a handshake error into an [`SshError`], preferring the host-key refusal reason; a peer
/// whose first words were not an SSH banner is named for what it is (`HTTP answered`).
fn handshake_error(
    target: &SshTarget,
    refusal: &Mutex<Option<String>>,
    first: &FirstBytes,
    e: russh::Error,
) -> SshError {
    if let Some(reason) = refusal.lock().ok().and_then(|mut r| r.take()) {
        return SshError::HostKey(reason);
    }
    if let Some(said) = first.not_ssh() {
        return SshError::Protocol(target.name.clone(), said);
    }
    match e {
        russh::Error::IO(io) => SshError::Unreachable(target.name.clone(), io.to_string()),
        other => SshError::Protocol(target.name.clone(), other.to_string()),
    }
}

/// The first bytes a peer sent, kept so a failed handshake can say what answered instead of SSH.
#[derive(Clone, Default)]
struct FirstBytes(Arc<Mutex<Vec<u8>>>);

impl FirstBytes {
    /// How many bytes are kept: enough for a status line.
    const KEEP: usize = 80;

    /// `stream`, its first bytes copied here as they are read.
    fn watch<S>(&self, stream: S) -> Watched<S> {
        Watched { inner: stream, first: self.clone() }
    }

    /// What answered, when it was not an SSH server: `not an SSH server (HTTP answered: HTTP/1.1 400…)`.
    fn not_ssh(&self) -> Option<String> {
        let bytes = self.0.lock().ok()?.clone();
        if bytes.is_empty() || bytes.starts_with(b"SSH-") {
            return None;
        }
        let line: String = String::from_utf8_lossy(&bytes)
            .lines()
            .next()
            .unwrap_or_default()
            .chars()
            .filter(|c| !c.is_control())
            .take(60)
            .collect();
        let who = if bytes.starts_with(b"HTTP/") { "HTTP answered" } else { "it answered" };
        Some(format!("not an SSH server ({who}: {line})"))
    }
}

/// A stream whose first bytes are kept in a [`FirstBytes`].
struct Watched<S> {
    inner: S,
    first: FirstBytes,
}

impl<S: tokio::io::AsyncRead + Unpin> tokio::io::AsyncRead for Watched<S> {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = std::pin::Pin::new(&mut self.inner).poll_read(cx, buf);
        if let Ok(mut kept) = self.first.0.lock()
            && kept.len() < FirstBytes::KEEP
        {
            let new = &buf.filled()[before..];
            let room = FirstBytes::KEEP - kept.len();
            kept.extend_from_slice(&new[..new.len().min(room)]);
        }
        polled
    }
}

impl<S: tokio::io::AsyncWrite + Unpin> tokio::io::AsyncWrite for Watched<S> {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        data: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        std::pin::Pin::new(&mut self.inner).poll_write(cx, data)
    }

    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

async fn dial(target: &SshTarget, ctx: &ConnectContext) -> Result<Handle<ClientHandler>, SshError> {
    let (handler, refusal) = handler_for(target, ctx);
    let addr = (target.hostname.as_str(), target.port);
    let socket = tokio::net::TcpStream::connect(addr)
        .await
        .map_err(|e| SshError::Unreachable(format!("{}:{}", target.hostname, target.port), e.to_string()))?;
    let _ = socket.set_nodelay(true);
    let first = FirstBytes::default();
    let mut handle = client::connect_stream(russh_config(), first.watch(socket), handler)
        .await
        .map_err(|e| handshake_error(target, &refusal, &first, e))?;
    authenticate(&mut handle, target, ctx).await?;
    Ok(handle)
}

async fn tunnel(
    via: &Handle<ClientHandler>,
    target: &SshTarget,
    ctx: &ConnectContext,
) -> Result<Handle<ClientHandler>, SshError> {
    let channel = via
        .channel_open_direct_tcpip(target.hostname.clone(), u32::from(target.port), "127.0.0.1", 0)
        .await
        .map_err(|e| SshError::Unreachable(target.name.clone(), format!("jump host could not open a tunnel: {e}")))?;
    let (handler, refusal) = handler_for(target, ctx);
    let first = FirstBytes::default();
    let mut handle = client::connect_stream(russh_config(), first.watch(channel.into_stream()), handler)
        .await
        .map_err(|e| handshake_error(target, &refusal, &first, e))?;
    authenticate(&mut handle, target, ctx).await?;
    Ok(handle)
}
