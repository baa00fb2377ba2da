//! `merlya mcp serve --http ADDR`: the served tools over streamable HTTP
//! (rmcp's tower service on hyper). Loopback by default; any other address
//! needs a bearer token, checked on every request before rmcp sees it.

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
    /// A non-loopback address without a token.
    #[error("{0} is not a loopback address: set a bearer token (--token-env VAR) to serve on it")]
    TokenRequired(SocketAddr),
    /// Binding failed.
    #[error("cannot listen on {addr}: {source}")]
    Bind { addr: SocketAddr, source: std::io::Error },
}

/// Serves `served` on `addr` until `stop` fires; `token` is the bearer token clients must send.
pub async fn serve_http(
    served: Served,
    addr: SocketAddr,
    token: Option<String>,
    stop: CancellationToken,
    bound: impl FnOnce(SocketAddr),
) -> Result<(), ServeError> {
    if !addr.ip().is_loopback() && token.is_none() {
        return Err(ServeError::TokenRequired(addr));
    }
    let listener = tokio::net::TcpListener::bind(addr).await.map_err(|source| ServeError::Bind { addr, source })?;
    let local = listener.local_addr().map_err(|source| ServeError::Bind { addr, source })?;
    bound(local);
    let mut config = StreamableHttpServerConfig::default();
    if !addr.ip().is_loopback() {
        // Behind a token, any Host header is accepted (the default allows loopback names only).
        config.allowed_hosts = Vec::new();
    }
    config.allowed_hosts.push(local.to_string());
    let service =
        StreamableHttpService::new(move || Ok(served.clone()), Arc::new(LocalSessionManager::default()), config);
    let expected = token.map(|t| format!("Bearer {t}"));
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
                    let authorised = expected.as_deref().is_none_or(|want| {
                        let given = request.headers().get(hyper::header::AUTHORIZATION).map(|v| v.as_bytes());
                        given.is_some_and(|given| same_bytes(given, want.as_bytes()))
                    });
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
