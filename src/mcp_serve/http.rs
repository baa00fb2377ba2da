//! `merlya mcp serve --http ADDR`: the served tools over streamable HTTP
//! (rmcp's tower service on hyper). Every request carries a bearer token,
//! checked before rmcp sees it, on loopback too: any local process could
//! otherwise run commands as the operator. Sessions are bounded: at most
//! `mcp.serve.max_sessions` open (503 past it), and one unused for
//! `mcp.serve.session_idle_secs` is closed and its memory freed (a client that
//! never says goodbye no longer costs memory for the server's whole life).

use std::net::SocketAddr;
use std::sync::Arc;

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

use super::server::Served;

/// Why the HTTP server cannot start.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// A token too short to resist guessing.
    #[error("the bearer token has {0} characters; use at least {MIN_TOKEN_LEN}")]
    WeakToken(usize),
    /// Binding failed.
    #[error("cannot listen on {addr}: {source}")]
    Bind { addr: SocketAddr, source: std::io::Error },
}

/// The shortest bearer token accepted.
pub const MIN_TOKEN_LEN: usize = 16;

/// How many sessions may be open, and how long one may go unused.
#[derive(Debug, Clone, Copy)]
pub struct SessionLimits {
    /// Most sessions open at once.
    pub max: usize,
    /// Unused this long, a session is closed.
    pub idle: std::time::Duration,
}

/// When each open session was last used, by its id.
type LastUsed = Arc<std::sync::Mutex<std::collections::HashMap<String, std::time::Instant>>>;

/// Closes sessions unused for `limits.idle` (and forgets ids the client closed itself).
async fn reap(manager: Arc<LocalSessionManager>, last_used: LastUsed, limits: SessionLimits, stop: CancellationToken) {
    use rmcp::transport::streamable_http_server::SessionManager;
    let every = (limits.idle / 4).clamp(std::time::Duration::from_millis(200), std::time::Duration::from_secs(30));
    loop {
        tokio::select! {
            () = tokio::time::sleep(every) => {}
            () = stop.cancelled() => return,
        }
        let idle: Vec<String> = match last_used.lock() {
            Ok(map) => map.iter().filter(|(_, at)| at.elapsed() >= limits.idle).map(|(id, _)| id.clone()).collect(),
            Err(_) => continue,
        };
        for id in idle {
            let session: rmcp::transport::streamable_http_server::session::SessionId = Arc::from(id.as_str());
            if let Err(e) = manager.close_session(&session).await {
                tracing::debug!(error = %e, "cannot close an idle MCP session");
            }
            if let Ok(mut map) = last_used.lock() {
                map.remove(&id);
            }
            tracing::info!(session = %id, "closed an MCP session unused for {:?}", limits.idle);
        }
        let open: std::collections::HashSet<String> =
            manager.sessions.read().await.keys().map(|k| k.to_string()).collect();
        if let Ok(mut map) = last_used.lock() {
            map.retain(|id, _| open.contains(id));
        }
    }
}

/// Serves `served` on `addr` until `stop` fires; `token` is the bearer token clients must send.
pub async fn serve_http(
    served: Served,
    addr: SocketAddr,
    token: String,
    limits: SessionLimits,
    stop: CancellationToken,
    bound: impl FnOnce(SocketAddr),
) -> Result<(), ServeError> {
    if token.chars().count() < MIN_TOKEN_LEN {
        return Err(ServeError::WeakToken(token.chars().count()));
    }
    let listener = tokio::net::TcpListener::bind(addr).await.map_err(|source| ServeError::Bind { addr, source })?;
    let local = listener.local_addr().map_err(|source| ServeError::Bind { addr, source })?;
    bound(local);
    let mut config = StreamableHttpServerConfig::default();
    if addr.ip().is_loopback() {
        config.allowed_hosts.push(local.to_string());
    } else {
        // Off loopback any Host header is accepted (the default allows loopback names only):
        // the token is the guard.
        config.allowed_hosts = Vec::new();
    }
    let manager = Arc::new(LocalSessionManager::default());
    let service = StreamableHttpService::new(move || Ok(served.clone()), manager.clone(), config);
    let expected = format!("Bearer {token}");
    let last_used: LastUsed = Arc::default();
    tokio::spawn(reap(manager.clone(), last_used.clone(), limits, stop.clone()));
    loop {
        let (stream, _) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(pair) => pair,
                Err(e) => {
                    tracing::warn!(error = %e, "cannot accept an MCP connection");
                    continue;
                }
            },
            () = stop.cancelled() => return Ok(()),
        };
        let (service, expected) = (service.clone(), expected.clone());
        let (manager, last_used) = (manager.clone(), last_used.clone());
        tokio::spawn(async move {
            let handler = hyper::service::service_fn(move |request: Request<hyper::body::Incoming>| {
                let (mut service, expected) = (service.clone(), expected.clone());
                let (manager, last_used) = (manager.clone(), last_used.clone());
                async move {
                    let given = request.headers().get(hyper::header::AUTHORIZATION).map(|v| v.as_bytes());
                    let authorised = given.is_some_and(|given| same_bytes(given, expected.as_bytes()));
                    if !authorised {
                        let body = Full::new(Bytes::from_static(b"a bearer token is required\n"))
                            .map_err(|never| match never {})
                            .boxed();
                        let mut response = Response::new(body);
                        *response.status_mut() = StatusCode::UNAUTHORIZED;
                        return Ok::<_, std::convert::Infallible>(response);
                    }
                    let session =
                        request.headers().get("mcp-session-id").and_then(|v| v.to_str().ok()).map(str::to_string);
                    if let Some(id) = &session
                        && let Ok(mut map) = last_used.lock()
                        && let Some(at) = map.get_mut(id)
                    {
                        *at = std::time::Instant::now();
                    }
                    // A request without a session starts one: refused while the limit is reached.
                    if session.is_none() && manager.sessions.read().await.len() >= limits.max {
                        let body = Full::new(Bytes::from(format!(
                            "too many open MCP sessions ({}, mcp.serve.max_sessions); close one, or wait for an idle one to expire\n",
                            limits.max
                        )))
                        .map_err(|never| match never {})
                        .boxed();
                        let mut response = Response::new(body);
                        *response.status_mut() = StatusCode::SERVICE_UNAVAILABLE;
                        return Ok(response);
                    }
                    let response = tower_service::Service::call(&mut service, request).await?;
                    if session.is_none()
                        && let Some(id) = response.headers().get("mcp-session-id").and_then(|v| v.to_str().ok())
                        && let Ok(mut map) = last_used.lock()
                    {
                        map.insert(id.to_string(), std::time::Instant::now());
                    }
                    Ok(response)
                }
            });
            let connection = hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(stream), handler);
            if let Err(e) = connection.await {
                tracing::debug!(error = %e, "MCP HTTP connection ended");
            }
        });
    }
}

/// Compares in time that depends on the length only, not on where the first difference is.
fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |diff, (x, y)| diff | (x ^ y)) == 0
}
