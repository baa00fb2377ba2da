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
    CallToolRequestParams, ClientCapabilities, ClientConfig, ContentBlock, Implementation, ProgressNotificationParam,
    ProtocolVersion,
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

/// The configured servers and the ones running; cheap to share behind an `Arc`.
pub struct McpClients {
    servers: BTreeMap<String, McpServerConfig>,
    secrets: Arc<dyn SecretSource>,
    live: Mutex<HashMap<String, Arc<Live>>>,
}

impl McpClients {
    /// The servers of `mcp.servers`, none started yet; `secrets` resolves references when one starts.
    pub fn new(servers: BTreeMap<String, McpServerConfig>, secrets: Arc<dyn SecretSource>) -> Self {
        Self { servers, secrets, live: Mutex::new(HashMap::new()) }
    }

    /// The configured servers, by name.
    pub fn configured(&self) -> &BTreeMap<String, McpServerConfig> {
        &self.servers
    }

    /// Whether `name` is running now.
    pub async fn is_running(&self, name: &str) -> bool {
        self.live.lock().await.get(name).is_some_and(|l| !l.service.is_closed())
    }

    /// The tools of `name`, starting it if needed (listed again after a `tools/list_changed`).
    pub async fn tools(&self, name: &str) -> Result<Vec<ToolInfo>, McpError> {
        let live = self.connect(name).await?;
        if live.tools_changed.swap(false, Ordering::Relaxed) {
            let fresh = list_tools(name, &live.service).await?;
            *live.tools.lock().await = fresh;
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
                    structured: result.structured_content.clone(),
                    approved_by: String::new(),
                })
            }
            Err(e) => Err(self.failure(server, tool, e).await),
        }
    }

    /// Stops every running server.
    pub async fn shutdown(&self) {
        let live: Vec<Arc<Live>> = self.live.lock().await.drain().map(|(_, l)| l).collect();
        for server in live {
            server.service.cancellation_token().cancel();
        }
    }

    /// A failed request: a closed transport forgets the server, so that the next use starts it again.
    async fn failure(&self, server: &str, tool: &str, e: ServiceError) -> McpError {
        match e {
            ServiceError::TransportClosed | ServiceError::TransportSend(_) => {
                self.live.lock().await.remove(server);
                tracing::warn!(target: "merlya::mcp", server, "the server's connection ended during a call");
                McpError::Died { server: server.into(), detail: "its connection closed".into() }
            }
            ServiceError::McpError(data) => McpError::Failed {
                server: server.into(),
                tool: tool.into(),
                detail: crate::term_safe::visible_line(&data.message).into_owned(),
            },
            other => McpError::Failed { server: server.into(), tool: tool.into(), detail: other.to_string() },
        }
    }

    /// The running server `name`, started (again) when it is not.
    async fn connect(&self, name: &str) -> Result<Arc<Live>, McpError> {
        let config = self.servers.get(name).ok_or_else(|| McpError::Unknown(name.into()))?;
        if !config.enabled {
            return Err(McpError::Disabled(name.into()));
        }
        let mut live = self.live.lock().await;
        if let Some(running) = live.get(name) {
            if !running.service.is_closed() {
                return Ok(running.clone());
            }
            tracing::warn!(target: "merlya::mcp", server = name, "the server had stopped; starting it again");
            live.remove(name);
        }
        let lookup = |var: &str| std::env::var(var).ok();
        let launch = resolve(name, config, &lookup, self.secrets.as_ref())?;
        let started = tokio::time::timeout(START_TIMEOUT, start(name, config, &launch)).await.map_err(|_| {
            McpError::Start { server: name.into(), detail: "no answer to initialize within 30 s".into() }
        })??;
        let started = Arc::new(started);
        live.insert(name.to_string(), started.clone());
        Ok(started)
    }
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
            command.args(&config.args).envs(&launch.env).kill_on_drop(true);
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
            let transport = StreamableHttpClientTransport::from_config(
                StreamableHttpClientTransportConfig::with_uri(url.as_str()).custom_headers(headers),
            );
            handler.serve(transport).await.map_err(|e| failed(e.to_string()))?
        }
        (None, None) => return Err(failed("neither command nor url is set".into())),
    };
    let tools = list_tools(name, &service).await?;
    tracing::info!(target: "merlya::mcp", server = name, tools = tools.len(), "MCP server started");
    Ok(Live { service, tools: Mutex::new(tools), tools_changed, secrets: launch.secrets.clone() })
}

/// `tools/list`, every page, as merlya describes tools.
async fn list_tools(name: &str, service: &RunningService<RoleClient, Notified>) -> Result<Vec<ToolInfo>, McpError> {
    let tools = service
        .list_all_tools()
        .await
        .map_err(|e| McpError::Start { server: name.into(), detail: format!("tools/list failed: {e}") })?;
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

/// Reads a stdio server's stderr into the log, line by line, secrets masked.
fn drain_stderr(server: String, stderr: tokio::process::ChildStderr, secrets: Vec<String>) {
    tokio::spawn(async move {
        let mut lines = tokio::io::BufReader::new(stderr).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            tracing::info!(target: "merlya::mcp::stderr", server = %server, "{}", mask_values(&line, &secrets));
        }
    });
}
