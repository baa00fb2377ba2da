//! One metrics registry (prometheus-client) for the process, in the Prometheus
//! text format: `merlya metrics` prints it, `--metrics-addr` serves it while
//! the console or `mcp serve` runs.
//!
//! Counters are incremented where the work happens (an audited command
//! finishing, a model call, a pipeline ending, an MCP call). Before the first
//! render, [`seed`] adds what this `MERLYA_HOME` recorded before the process
//! started (commands and pipeline runs from the store), so a scrape or
//! `merlya metrics` tells the home's totals, not only this process's.

use std::sync::LazyLock;
use std::sync::atomic::{AtomicBool, Ordering};

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

/// `outcome` of a command or MCP call.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Outcome {
    outcome: String,
}

/// A model call: which provider, and how it ended.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct LlmCall {
    provider: String,
    status: String,
}

/// A pipeline's kind and final status.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Pipeline {
    kind: String,
    status: String,
}

/// Tokens of a model, by direction (`input`, `output`).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ModelTokens {
    model: String,
    direction: String,
}

/// A model, for its answered calls and cost.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ModelName {
    model: String,
}

/// What a home's conversations spent on one model: `(model, calls, input tokens, output tokens, cost)`.
pub type ModelTotals = (String, u64, u64, u64, f64);

/// An MCP call: server and outcome.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct McpCall {
    server: String,
    outcome: String,
}

struct Metrics {
    registry: Registry,
    commands: Family<Outcome, Counter>,
    ssh_duration: Histogram,
    llm_calls: Family<LlmCall, Counter>,
    retries: Counter,
    pipelines: Family<Pipeline, Counter>,
    mcp_calls: Family<McpCall, Counter>,
    drift: Counter,
    model_calls: Family<ModelName, Counter>,
    model_tokens: Family<ModelTokens, Counter>,
    model_cost: Family<ModelName, Counter<f64, std::sync::atomic::AtomicU64>>,
}

static METRICS: LazyLock<Metrics> = LazyLock::new(|| {
    let mut registry = Registry::default();
    let commands = Family::<Outcome, Counter>::default();
    registry.register("merlya_commands", "Commands run on hosts, by outcome", commands.clone());
    let ssh_duration = Histogram::new([0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0]);
    registry.register(
        "merlya_ssh_duration_seconds",
        "Wall time of commands on hosts (this process)",
        ssh_duration.clone(),
    );
    let llm_calls = Family::<LlmCall, Counter>::default();
    registry.register("merlya_llm_calls", "Model calls (each attempt), by provider and status", llm_calls.clone());
    let retries = Counter::default();
    registry.register("merlya_retry_attempts", "Model calls retried after a failure", retries.clone());
    let pipelines = Family::<Pipeline, Counter>::default();
    registry.register("merlya_pipeline_executions", "Change pipelines ended, by kind and status", pipelines.clone());
    let mcp_calls = Family::<McpCall, Counter>::default();
    registry.register("merlya_mcp_calls", "External MCP tool calls, by server and outcome", mcp_calls.clone());
    let drift = Counter::default();
    registry.register("merlya_drift_detected", "Resources found drifted outside Terraform", drift.clone());
    let model_calls = Family::<ModelName, Counter>::default();
    registry.register(
        "merlya_model_calls",
        "Model calls answered, by model (every session of this home)",
        model_calls.clone(),
    );
    let model_tokens = Family::<ModelTokens, Counter>::default();
    registry.register("merlya_model_tokens", "Model tokens, by model and direction", model_tokens.clone());
    let model_cost = Family::<ModelName, Counter<f64, std::sync::atomic::AtomicU64>>::default();
    registry.register("merlya_model_cost_usd", "Estimated model cost in US dollars, by model", model_cost.clone());
    Metrics {
        registry,
        commands,
        ssh_duration,
        llm_calls,
        retries,
        pipelines,
        mcp_calls,
        drift,
        model_calls,
        model_tokens,
        model_cost,
    }
});

static SEEDED: AtomicBool = AtomicBool::new(false);

/// An audited command finished on a host.
pub fn command(outcome: &str, seconds: f64) {
    METRICS.commands.get_or_create(&Outcome { outcome: outcome.into() }).inc();
    METRICS.ssh_duration.observe(seconds);
}

/// One model call attempt ended (`ok`, or the HTTP status / `transport`).
pub fn llm_call(provider: &str, status: &str) {
    METRICS.llm_calls.get_or_create(&LlmCall { provider: provider.into(), status: status.into() }).inc();
}

/// A model call is retried.
pub fn retry() {
    METRICS.retries.inc();
}

/// A change pipeline ended.
pub fn pipeline(kind: &str, status: &str) {
    METRICS.pipelines.get_or_create(&Pipeline { kind: kind.into(), status: status.into() }).inc();
}

/// An external MCP call ended.
pub fn mcp_call(server: &str, outcome: &str) {
    METRICS.mcp_calls.get_or_create(&McpCall { server: server.into(), outcome: outcome.into() }).inc();
}

/// Resources found drifted.
pub fn drift(count: u64) {
    METRICS.drift.inc_by(count);
}

/// A model's use was recorded (a conversation's calls, tokens and cost).
pub fn model_usage(totals: &ModelTotals) {
    let (model, calls, input, output, cost) = totals;
    METRICS.model_calls.get_or_create(&ModelName { model: model.clone() }).inc_by(*calls);
    for (direction, n) in [("input", input), ("output", output)] {
        let labels = ModelTokens { model: model.clone(), direction: direction.into() };
        METRICS.model_tokens.get_or_create(&labels).inc_by(*n);
    }
    METRICS.model_cost.get_or_create(&ModelName { model: model.clone() }).inc_by(*cost);
}

/// Adds the home's history once per process: command outcomes and pipeline ends recorded before it
/// started (`commands` as `(outcome, count)`, `pipelines` as `(kind, status, count)`).
pub fn seed(commands: &[(&str, u64)], pipelines: &[(String, String, u64)], models: &[ModelTotals]) {
    if SEEDED.swap(true, Ordering::SeqCst) {
        return;
    }
    for totals in models {
        model_usage(totals);
    }
    for (outcome, count) in commands {
        METRICS.commands.get_or_create(&Outcome { outcome: (*outcome).into() }).inc_by(*count);
    }
    for (kind, status, count) in pipelines {
        METRICS.pipelines.get_or_create(&Pipeline { kind: kind.clone(), status: status.clone() }).inc_by(*count);
    }
}

/// Whether [`seed`] already ran.
pub fn seeded() -> bool {
    SEEDED.load(Ordering::SeqCst)
}

/// The registry in the Prometheus text format.
pub fn render() -> String {
    let mut out = String::new();
    if let Err(e) = prometheus_client::encoding::text::encode(&mut out, &METRICS.registry) {
        tracing::warn!(error = %e, "cannot encode the metrics");
    }
    out
}

/// Serves `GET /metrics` on `addr` until `stop` fires (loopback only: the figures name hosts and servers).
pub async fn serve(
    addr: std::net::SocketAddr,
    stop: tokio_util::sync::CancellationToken,
) -> Result<std::net::SocketAddr, std::io::Error> {
    use http_body_util::Full;
    use hyper::body::Bytes;
    if !addr.ip().is_loopback() {
        return Err(std::io::Error::other(format!("--metrics-addr {addr}: expected a loopback address")));
    }
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let bound = listener.local_addr()?;
    tokio::spawn(async move {
        loop {
            let stream = tokio::select! {
                accepted = listener.accept() => match accepted {
                    Ok((stream, _)) => stream,
                    Err(_) => continue,
                },
                () = stop.cancelled() => return,
            };
            tokio::spawn(async move {
                let service = hyper::service::service_fn(|request: hyper::Request<hyper::body::Incoming>| async move {
                    let mut response = if request.uri().path() == "/metrics" {
                        hyper::Response::new(Full::new(Bytes::from(render())))
                    } else {
                        let mut r = hyper::Response::new(Full::new(Bytes::from_static(b"see /metrics\n")));
                        *r.status_mut() = hyper::StatusCode::NOT_FOUND;
                        r
                    };
                    response.headers_mut().insert(
                        hyper::header::CONTENT_TYPE,
                        hyper::header::HeaderValue::from_static(
                            "application/openmetrics-text; version=1.0.0; charset=utf-8",
                        ),
                    );
                    Ok::<_, std::convert::Infallible>(response)
                });
                let io = hyper_util::rt::TokioIo::new(stream);
                let _ = hyper::server::conn::http1::Builder::new().serve_connection(io, service).await;
            });
        }
    });
    Ok(bound)
}
