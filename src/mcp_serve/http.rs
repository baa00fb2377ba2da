//! `merlya mcp serve --http ADDR`: the served tools over streamable HTTP
//! (rmcp's tower service on hyper). Every request carries a bearer token,
//! checked before rmcp sees it, on loopback too: any local process could
//! otherwise run commands as the operator.

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

/// Serves `served` on `addr` until `stop` fires; `token` is the bearer token clients must send.
pub async fn serve_http(
    served: Served,
    addr: SocketAddr,
    token: String,
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
    let service =
        StreamableHttpService::new(move || Ok(served.clone()), Arc::new(LocalSessionManager::default()), config);
    let expected = format!("Bearer {token}");
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
        tokio::spawn(async move {
            let handler = hyper::service::service_fn(move |request: Request<hyper::body::Incoming>| {
                let (mut service, expected) = (service.clone(), expected.clone());
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
                    tower_service::Service::call(&mut service, request).await
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
