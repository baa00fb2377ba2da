//! The external MCP servers merlya talks to ([`McpClients`]).
//!
//! A server starts on first use: a stdio server as a child process in its own
//! process group (stderr piped and drained line by line into merlya's log,
//! never onto the screen), an HTTP server through rmcp's streamable HTTP
//! client. Notifications are accepted at any time, also before a reply (rmcp
//! reads the stream continuously; [`Notified`] logs them). A server whose
//! connection ended is started again on its next use.

use std::collections::{BTreeMap, HashMap};
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, ContentBlock, Implementation, PaginatedRequestParams,
    ProgressNotificationParam, ProtocolVersion,
};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientHandler, RoleClient, ServiceError, ServiceExt};
use tokio::io::AsyncBufReadExt;
use tokio::sync::Mutex;
use tokio_util::sync::CancellationToken;

use super::launch::{Launch, resolve};
use super::{CallResult, McpError, ToolInfo};
use crate::config::mcp::McpServerConfig;
use crate::secrets::SecretSource;
use crate::secrets::reference::mask_values;

/// How long a server may take to start and answer `initialize` and `tools/list`.
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// After a failed start, how long the failure is given back before trying again (a server that
/// does not start would otherwise cost every host of a run its own 30 s).
const RETRY_AFTER: Duration = Duration::from_secs(15);

/// At most this many `tools/list` pages and tools: a server cannot grow the tool list without end.
const MAX_PAGES: usize = 20;
const MAX_TOOLS: usize = 500;

/// A stderr line longer than this is cut; past [`MAX_STDERR_LINES`] lines the rest is dropped.
const MAX_STDERR_LINE: usize = 4096;
const MAX_STDERR_LINES: usize = 10_000;

/// Receives what a server says on its own: log messages, progress, a changed tool list.
struct Notified {
    server: String,
    tools_changed: Arc<AtomicBool>,
    secrets: Vec<String>,
}

impl ClientHandler for Notified {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(ClientCapabilities::default(), Implementation::new("merlya", env!("CARGO_PKG_VERSION")))
            .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
    }

    // Deprecated by SEP-2577, still sent by servers: logged, never shown.
    #[allow(deprecated)]
    async fn on_logging_message(
        &self,
        params: rmcp::model::LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let data = mask_values(&params.data.to_string(), &self.secrets);
        tracing::info!(target: "merlya::mcp", server = %self.server, level = ?params.level, "{data}");
    }

    async fn on_progress(&self, params: ProgressNotificationParam, _context: NotificationContext<RoleClient>) {
        tracing::debug!(target: "merlya::mcp", server = %self.server, progress = params.progress, total = ?params.total, "progress");
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.tools_changed.store(true, Ordering::Relaxed);
    }
}

/// A started server.
struct Live {
    service: RunningService<RoleClient, Notified>,
    tools: Mutex<Vec<ToolInfo>>,
    tools_changed: Arc<AtomicBool>,
    secrets: Vec<String>,
}

/// One server's state: running, or the last failed start (kept for [`RETRY_AFTER`]).
#[derive(Default)]
struct Slot {
    live: Option<Arc<Live>>,
    failed: Option<(std::time::Instant, McpError)>,
}

/// The configured servers and the ones running; cheap to share behind an `Arc`.
/// Each server has its own lock: one slow to start never holds up the others.
pub struct McpClients {
    servers: BTreeMap<String, McpServerConfig>,
    secrets: Arc<dyn SecretSource>,
    slots: Mutex<HashMap<String, Arc<Mutex<Slot>>>>,
}

impl McpClients {
    /// The servers of `mcp.servers`, none started yet; `secrets` resolves references when one starts.
    pub fn new(servers: BTreeMap<String, McpServerConfig>, secrets: Arc<dyn SecretSource>) -> Self {
        Self { servers, secrets, slots: Mutex::new(HashMap::new()) }
    }

    /// The configured servers, by name.
    pub fn configured(&self) -> &BTreeMap<String, McpServerConfig> {
        &self.servers
    }

    /// Whether `name` is running now.
    pub async fn is_running(&self, name: &str) -> bool {
        let slot = self.slot(name).await;
        let slot = slot.lock().await;
        slot.live.as_ref().is_some_and(|l| !l.service.is_closed())
    }

    /// The tools of `name`, starting it if needed (listed again after a `tools/list_changed`,
    /// within the start timeout; on failure the list held before stays).
    pub async fn tools(&self, name: &str) -> Result<Vec<ToolInfo>, McpError> {
        let live = self.connect(name).await?;
        if live.tools_changed.swap(false, Ordering::Relaxed) {
            match tokio::time::timeout(START_TIMEOUT, list_tools(name, &live.service, &live.secrets)).await {
                Ok(Ok(fresh)) => *live.tools.lock().await = fresh,
                Ok(Err(e)) => {
                    tracing::warn!(target: "merlya::mcp", server = name, error = %e, "cannot list the changed tools")
                }
                Err(_) => {
                    tracing::warn!(target: "merlya::mcp", server = name, "the changed tools were not listed within 30 s")
                }
            }
        }
        Ok(live.tools.lock().await.clone())
    }

    /// The tools of every enabled server that starts; a server that fails is reported beside them.
    pub async fn all_tools(&self) -> (Vec<ToolInfo>, Vec<McpError>) {
        let (mut tools, mut errors) = (Vec::new(), Vec::new());
        for (name, server) in &self.servers {
            if !server.enabled {
                continue;
            }
            match self.tools(name).await {
                Ok(found) => tools.extend(found),
                Err(e) => errors.push(e),
            }
        }
        (tools, errors)
    }

    /// Calls `tool` on `server` with `arguments`, bounded by the server's timeout and by `cancel`;
    /// on either the request is dropped, which tells the server to cancel it. Not gated: callers go
    /// through [`super::call`].
    pub(super) async fn call_raw(
        &self,
        server: &str,
        tool: &str,
        arguments: serde_json::Map<String, serde_json::Value>,
        cancel: &CancellationToken,
    ) -> Result<CallResult, McpError> {
        let live = self.connect(server).await?;
        let timeout = self.servers.get(server).map(McpServerConfig::call_timeout).unwrap_or(Duration::from_secs(60));
        let params = CallToolRequestParams::new(tool.to_string()).with_arguments(arguments);
        let peer = live.service.peer().clone();
        let answer = tokio::select! {
            answer = peer.call_tool(params) => answer,
            () = tokio::time::sleep(timeout) => {
                return Err(McpError::TimedOut { server: server.into(), tool: tool.into(), secs: timeout.as_secs() });
            }
            () = cancel.cancelled() => return Err(McpError::Cancelled { server: server.into(), tool: tool.into() }),
        };
        match answer {
            Ok(result) => {
                let mut text = Vec::new();
                for item in &result.content {
                    text.push(match item {
                        ContentBlock::Text(t) => t.text.clone(),
                        ContentBlock::Image(i) => format!("[image {}]", i.mime_type),
                        ContentBlock::Audio(a) => format!("[audio {}]", a.mime_type),
                        ContentBlock::Resource(_) => "[embedded resource]".to_string(),
                        ContentBlock::ResourceLink(r) => format!("[resource {}]", r.uri),
                        _ => "[content merlya does not show]".to_string(),
                    });
                }
                Ok(CallResult {
                    text: mask_values(&text.join("\n"), &live.secrets),
                    is_error: result.is_error.unwrap_or(false),
                    structured: result.structured_content.as_ref().map(|v| super::mask_json(v, &live.secrets, false)),
                    approved_by: String::new(),
                })
            }
            Err(e) => Err(self.failure(server, tool, e, &live.secrets).await),
        }
    }

    /// Stops every running server and waits (a few seconds at most) until each has closed: a stdio
    /// server's process group is killed when its transport drops.
    pub async fn shutdown(&self) {
        let slots: Vec<Arc<Mutex<Slot>>> = self.slots.lock().await.drain().map(|(_, s)| s).collect();
        for slot in slots {
            let Some(live) = slot.lock().await.live.take() else { continue };
            live.service.cancellation_token().cancel();
            let deadline = tokio::time::Instant::now() + Duration::from_secs(3);
            while !live.service.is_closed() && tokio::time::Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    }

    /// The lock of server `name`'s state.
    async fn slot(&self, name: &str) -> Arc<Mutex<Slot>> {
        self.slots.lock().await.entry(name.to_string()).or_default().clone()
    }

    /// A failed request: a closed transport forgets the server, so that the next use starts it again.
    async fn failure(&self, server: &str, tool: &str, e: ServiceError, secrets: &[String]) -> McpError {
        match e {
            ServiceError::TransportClosed | ServiceError::TransportSend(_) => {
                self.slot(server).await.lock().await.live = None;
                tracing::warn!(target: "merlya::mcp", server, "the server's connection ended during a call");
                McpError::Died { server: server.into(), detail: "its connection closed".into() }
            }
            ServiceError::McpError(data) => McpError::Failed {
                server: server.into(),
                tool: tool.into(),
                detail: crate::term_safe::visible_line(&mask_values(&data.message, secrets)).into_owned(),
            },
            other => McpError::Failed {
                server: server.into(),
                tool: tool.into(),
                detail: crate::term_safe::visible_line(&mask_values(&other.to_string(), secrets)).into_owned(),
            },
        }
    }

    /// The running server `name`, started (again) when it is not.
    async fn connect(&self, name: &str) -> Result<Arc<Live>, McpError> {
        let config = self.servers.get(name).ok_or_else(|| McpError::Unknown(name.into()))?;
        if !config.enabled {
            return Err(McpError::Disabled(name.into()));
        }
        let slot = self.slot(name).await;
        let mut slot = slot.lock().await;
        if let Some(running) = &slot.live {
            if !running.service.is_closed() {
                return Ok(running.clone());
            }
            tracing::warn!(target: "merlya::mcp", server = name, "the server had stopped; starting it again");
            slot.live = None;
        }
        if let Some((when, error)) = &slot.failed
            && when.elapsed() < RETRY_AFTER
        {
            return Err(error.clone());
        }
        let lookup = |var: &str| std::env::var(var).ok();
        let launch = resolve(name, config, &lookup, self.secrets.as_ref())?;
        let started = match tokio::time::timeout(START_TIMEOUT, start(name, config, &launch)).await {
            Ok(Ok(started)) => Arc::new(started),
            Ok(Err(e)) => {
                slot.failed = Some((std::time::Instant::now(), e.clone()));
                return Err(e);
            }
            Err(_) => {
                let e = McpError::Start { server: name.into(), detail: "no answer to initialize within 30 s".into() };
                slot.failed = Some((std::time::Instant::now(), e.clone()));
                return Err(e);
            }
        };
        slot.failed = None;
        slot.live = Some(started.clone());
        Ok(started)
    }
}

/// The variables an MCP server inherits from merlya: where programs are and
/// how text looks, none of which holds a secret. Everything else it gets is
/// named in its `env` (ADR 0026).
pub const INHERITED: [&str; 9] = ["PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR"];

fn inherited_environment() -> impl Iterator<Item = (String, String)> {
    INHERITED.iter().filter_map(|name| std::env::var(name).ok().map(|value| (name.to_string(), value)))
}

/// Starts `name` and lists its tools.
async fn start(name: &str, config: &McpServerConfig, launch: &Launch) -> Result<Live, McpError> {
    let failed =
        |detail: String| McpError::Start { server: name.into(), detail: mask_values(&detail, &launch.secrets) };
    let tools_changed = Arc::new(AtomicBool::new(false));
    let handler =
        Notified { server: name.into(), tools_changed: tools_changed.clone(), secrets: launch.secrets.clone() };
    let service = match (&config.command, &config.url) {
        (Some(program), _) => {
            let mut command = tokio::process::Command::new(program);
            // A clean environment: what a program needs to start and what the config names, never
            // merlya's own (the model's key, tokens, SSH_AUTH_SOCK).
            command.env_clear().envs(inherited_environment()).args(&config.args).envs(&launch.env).kill_on_drop(true);
            if let Some(cwd) = &config.cwd {
                command.current_dir(cwd);
            }
            let mut wrapped = process_wrap::tokio::CommandWrap::from(command);
            wrapped.wrap(process_wrap::tokio::ProcessGroup::leader());
            let (transport, stderr) = TokioChildProcess::builder(wrapped)
                .stderr(Stdio::piped())
                .spawn()
                .map_err(|e| failed(format!("cannot run {program}: {e}")))?;
            if let Some(stderr) = stderr {
                drain_stderr(name.to_string(), stderr, launch.secrets.clone());
            }
            handler.serve(transport).await.map_err(|e| failed(e.to_string()))?
        }
        (None, Some(url)) => {
            let mut headers = HashMap::new();
            for (key, value) in &launch.headers {
                let key = reqwest::header::HeaderName::from_bytes(key.as_bytes())
                    .map_err(|e| failed(format!("header {key}: {e}")))?;
                let value = reqwest::header::HeaderValue::from_str(value)
                    .map_err(|_| failed(format!("header {key}: not a valid header value")))?;
                headers.insert(key, value);
            }
            crate::tls::ensure_crypto_provider();
            let transport = StreamableHttpClientTransport::from_config(
                StreamableHttpClientTransportConfig::with_uri(url.as_str()).custom_headers(headers),
            );
            handler.serve(transport).await.map_err(|e| failed(e.to_string()))?
        }
        (None, None) => return Err(failed("neither command nor url is set".into())),
    };
    let tools = list_tools(name, &service, &launch.secrets).await?;
    tracing::info!(target: "merlya::mcp", server = name, tools = tools.len(), "MCP server started");
    Ok(Live { service, tools: Mutex::new(tools), tools_changed, secrets: launch.secrets.clone() })
}

/// `tools/list`, every page, as merlya describes tools.
async fn list_tools(
    name: &str,
    service: &RunningService<RoleClient, Notified>,
    secrets: &[String],
) -> Result<Vec<ToolInfo>, McpError> {
    let failed = |e: ServiceError| McpError::Start {
        server: name.into(),
        detail: crate::term_safe::visible_line(&mask_values(&format!("tools/list failed: {e}"), secrets)).into_owned(),
    };
    let (mut tools, mut cursor) = (Vec::new(), None);
    for _ in 0..MAX_PAGES {
        let params = PaginatedRequestParams::default().with_cursor(cursor);
        let page = service.peer().list_tools(Some(params)).await.map_err(failed)?;
        tools.extend(page.tools);
        cursor = page.next_cursor;
        if cursor.is_none() || tools.len() >= MAX_TOOLS {
            break;
        }
    }
    if cursor.is_some() || tools.len() > MAX_TOOLS {
        tracing::warn!(target: "merlya::mcp", server = name, "the tool list is cut at {MAX_TOOLS} tools / {MAX_PAGES} pages");
        tools.truncate(MAX_TOOLS);
    }
    Ok(tools
        .into_iter()
        .map(|tool| {
            let read_only = tool
                .annotations
                .as_ref()
                .is_some_and(|a| a.read_only_hint == Some(true) && a.destructive_hint != Some(true));
            ToolInfo {
                server: name.into(),
                name: tool.name.to_string(),
                description: tool.description.as_deref().unwrap_or_default().to_string(),
                input_schema: serde_json::Value::Object((*tool.input_schema).clone()),
                read_only,
            }
        })
        .collect())
}

/// Reads a stdio server's stderr into the log, line by line (bytes that are not UTF-8 replaced,
/// long lines cut, past a count dropped), secrets masked. It keeps reading to the end, so the
/// server never blocks on a full pipe.
fn drain_stderr(server: String, stderr: tokio::process::ChildStderr, secrets: Vec<String>) {
    tokio::spawn(async move {
        let mut reader = tokio::io::BufReader::new(stderr);
        let (mut line, mut logged) = (Vec::new(), 0usize);
        loop {
            line.clear();
            match reader.read_until(b'\n', &mut line).await {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
            logged += 1;
            if logged > MAX_STDERR_LINES {
                if logged == MAX_STDERR_LINES + 1 {
                    tracing::warn!(target: "merlya::mcp::stderr", server = %server, "more stderr than {MAX_STDERR_LINES} lines: the rest is not logged");
                }
                continue;
            }
            let text = String::from_utf8_lossy(&line[..line.len().min(MAX_STDERR_LINE)]);
            let text = text.trim_end_matches(['\n', '\r']);
            tracing::info!(target: "merlya::mcp::stderr", server = %server, "{}", mask_values(text, &secrets));
        }
    });
}
