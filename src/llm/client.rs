//! The client the agent uses: picks the brain or fast model, retries
//! retryable failures with exponential backoff (honouring `Retry-After` up to
//! `model.max_retry_wait`), says what each retry waits for, guards the
//! provider with a circuit breaker and adds up tokens and cost.
//!
//! A streamed answer that fails after some of its text reached the caller is
//! not retried: the text is already on the operator's screen, and a retry
//! would show it a second time (or a different answer after half of the
//! first). The call fails with [`LlmError::AfterPartialAnswer`] instead, and
//! the operator can ask again. Failures before any text (including streams
//! of tool calls only) are retried as usual.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Serialize;

use super::anthropic::Anthropic;
use super::breaker::Breaker;
use super::openai::OpenAi;
use super::{ChatRequest, ChatResponse, DeltaSink, LlmError, Message, NoticeSink, Provider, ToolSpec, Usage};
use crate::config::ModelConfig;
use crate::secrets::SecretSource;

/// Which model to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ModelRole {
    /// Reasoning.
    Brain,
    /// Extraction and summaries.
    Fast,
}

struct Endpoint {
    provider: Arc<dyn Provider>,
    model: String,
}

/// Tokens and cost per model.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Spend {
    pub calls: u64,
    pub usage: Usage,
    pub cost_usd: f64,
}

/// The agent's way to the models.
pub struct LlmClient {
    brain: Endpoint,
    fast: Endpoint,
    config: ModelConfig,
    breaker: Breaker,
    spend: Mutex<BTreeMap<String, Spend>>,
}

pub(crate) fn transport(provider: &str, e: reqwest::Error) -> LlmError {
    LlmError::Transport { provider: provider.to_string(), detail: e.to_string(), timeout: e.is_timeout() }
}

/// Sends a model-list request and returns the `id` of each `data` entry (both wire formats list
/// models there), sorted.
pub(crate) async fn list_model_ids(provider: &str, request: reqwest::RequestBuilder) -> Result<Vec<String>, LlmError> {
    let response = request.send().await.map_err(|e| transport(provider, e))?;
    let response = check_status(provider, response).await?;
    let body: serde_json::Value = response
        .json()
        .await
        .map_err(|e| LlmError::Malformed { provider: provider.to_string(), detail: e.to_string() })?;
    let entries = body["data"].as_array().map(Vec::as_slice).unwrap_or_default();
    let mut ids: Vec<String> =
        entries.iter().filter_map(|m| m["id"].as_str()).filter(|id| !id.is_empty()).map(String::from).collect();
    ids.sort();
    ids.dedup();
    Ok(ids)
}

/// Turns a non-2xx response into [`LlmError::Status`] with its `Retry-After`.
pub(crate) async fn check_status(provider: &str, response: reqwest::Response) -> Result<reqwest::Response, LlmError> {
    let status = response.status();
    if status.is_success() {
        return Ok(response);
    }
    let retry_after =
        response.headers().get(reqwest::header::RETRY_AFTER).and_then(|v| v.to_str().ok()).and_then(retry_after_secs);
    let body: String = response.text().await.unwrap_or_default().chars().take(500).collect();
    Err(LlmError::Status { provider: provider.to_string(), status: status.as_u16(), body, retry_after })
}

/// Reads a whole JSON answer with `parse`, estimating usage when the provider
/// sent none, and shows its text as one delta.
pub(crate) async fn json_answer(
    provider: &str,
    response: reqwest::Response,
    request: &ChatRequest,
    parse: impl Fn(&serde_json::Value) -> Result<ChatResponse, LlmError>,
    on_delta: DeltaSink<'_>,
) -> Result<ChatResponse, LlmError> {
    let v: serde_json::Value = response
        .json()
        .await
        .map_err(|e| LlmError::Malformed { provider: provider.to_string(), detail: format!("bad JSON: {e}") })?;
    let mut answer = parse(&v)?;
    if v.get("usage").is_none() {
        answer.usage = Usage::estimate(request, &answer.content, &answer.tool_calls);
    }
    if !answer.content.is_empty() {
        on_delta(&answer.content);
    }
    Ok(answer)
}

/// Seconds a `Retry-After` value asks for: a number of seconds, or an HTTP
/// date (a date in the past asks for none).
fn retry_after_secs(value: &str) -> Option<u64> {
    let value = value.trim();
    if let Ok(secs) = value.parse::<u64>() {
        return Some(secs);
    }
    let at = chrono::DateTime::parse_from_rfc2822(value).ok()?;
    Some(u64::try_from((at.timestamp() - chrono::Utc::now().timestamp()).max(0)).unwrap_or(0))
}

/// "30 s", "1.5 s" or "250 ms", for notices.
fn show_wait(wait: Duration) -> String {
    if wait < Duration::from_secs(1) {
        format!("{} ms", wait.as_millis())
    } else if wait.subsec_millis() == 0 {
        format!("{} s", wait.as_secs())
    } else {
        format!("{:.1} s", wait.as_secs_f64())
    }
}

/// Whether the response body is JSON (rather than an event stream).
pub(crate) fn is_json(response: &reqwest::Response) -> bool {
    response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"))
}

/// `provider/model` → (provider, model).
pub fn split_model(spec: &str) -> Result<(&str, &str), LlmError> {
    spec.split_once('/')
        .ok_or_else(|| LlmError::Config(format!("model {spec:?}: expected provider/model, e.g. openai/gpt-4o")))
}

/// The provider's default base URL (empty for `openai-compatible`, which has none), for setup.
pub fn default_base_url(provider: &str) -> Result<&'static str, LlmError> {
    defaults(provider).map(|(url, _)| url)
}

/// The keyring entry that holds the key for `provider` at `base_url` (`None`: its default endpoint).
/// A base URL of one's own uses `llm:custom:api_key`, so a provider's key never goes elsewhere; setup
/// stores a key under the name the client will read.
pub fn key_secret_name(provider: &str, base_url: Option<&str>) -> String {
    let default_url = defaults(provider).map(|(url, _)| url).unwrap_or_default();
    let custom = base_url.is_some_and(|u| u.trim_end_matches('/') != default_url.trim_end_matches('/'));
    if custom || default_url.is_empty() { "llm:custom:api_key".to_string() } else { format!("llm:{provider}:api_key") }
}

/// Where the address a custom key was given for is kept, beside the key (`llm:custom:api_key`).
pub const CUSTOM_KEY_URL: &str = "llm:custom:base_url";

/// The key stored under `name` for `base_url`: a custom key kept with another address is not
/// given (keys stored before the address was kept are, as they always were).
fn stored_key(secrets: &dyn SecretSource, name: &str, custom: bool, base_url: &str) -> Option<String> {
    let key = secrets.lookup(name)?;
    let elsewhere = custom && secrets.lookup(CUSTOM_KEY_URL).is_some_and(|url| !same_url(&url, base_url));
    (!elsewhere).then_some(key)
}

/// Whether two base URLs name the same endpoint (a trailing `/` aside).
pub fn same_url(a: &str, b: &str) -> bool {
    a.trim_end_matches('/') == b.trim_end_matches('/')
}

/// The models `provider` offers at `base_url` with `api_key` (`GET {base}/models`, or Anthropic's
/// `GET /v1/models`), sorted; for setup, before anything is configured. Bounded to 15 seconds.
pub async fn list_models(provider: &str, base_url: &str, api_key: Option<&str>) -> Result<Vec<String>, LlmError> {
    crate::tls::ensure_crypto_provider();
    // No redirect is followed: reqwest drops `Authorization` on a redirect to another host, but not
    // Anthropic's `x-api-key`.
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(15))
        .connect_timeout(Duration::from_secs(10))
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| LlmError::Config(format!("cannot build the HTTP client: {e}")))?;
    let (api_key, idle) = (api_key.map(String::from), Duration::from_secs(15));
    let base_url = base_url.to_string();
    let listing: Arc<dyn Provider> = if provider == "anthropic" {
        Arc::new(Anthropic { base_url, api_key, stream: false, http, idle })
    } else {
        Arc::new(OpenAi { name: provider.to_string(), base_url, api_key, stream: false, http, idle })
    };
    // A model name is one visible line of bounded length, and the list is bounded: a hostile server
    // chooses both, and a name chosen is written into config.yaml.
    let mut models: Vec<String> = listing
        .models()
        .await?
        .into_iter()
        .filter(|m| !m.is_empty() && m.len() <= 200 && !m.chars().any(char::is_control))
        .collect();
    models.truncate(5000);
    Ok(models)
}

/// The provider's default base URL and key variable.
fn defaults(provider: &str) -> Result<(&'static str, Option<&'static str>), LlmError> {
    Ok(match provider {
        "openai" => ("https://api.openai.com/v1", Some("OPENAI_API_KEY")),
        "openrouter" => ("https://openrouter.ai/api/v1", Some("OPENROUTER_API_KEY")),
        "ollama" => ("http://127.0.0.1:11434/v1", None),
        "anthropic" => ("https://api.anthropic.com", Some("ANTHROPIC_API_KEY")),
        "openai-compatible" => ("", None),
        other => {
            return Err(LlmError::Config(format!(
                "unknown provider {other:?}: expected openai, openrouter, ollama, anthropic or openai-compatible"
            )));
        }
    })
}

impl LlmClient {
    /// Builds the client from configuration; API keys come from the variable
    /// named in `api_key_env` (or the provider's usual one), then the keyring
    /// entry `llm:<provider>:api_key`.
    pub fn from_config(config: &ModelConfig, secrets: &dyn SecretSource) -> Result<Self, LlmError> {
        let brain_spec =
            config.brain.clone().ok_or_else(|| LlmError::Config("no model configured (model.brain)".into()))?;
        let fast_spec = config.fast.clone().unwrap_or_else(|| brain_spec.clone());
        // Each read, not the whole answer, is bounded: a long answer that keeps streaming is never cut
        // (the turn as a whole has model.turn_timeout_secs); one that goes silent has stalled.
        let idle = Duration::from_secs(config.timeout_secs.max(1));
        crate::tls::ensure_crypto_provider();
        let http = reqwest::Client::builder()
            .read_timeout(idle + Duration::from_secs(5))
            .connect_timeout(Duration::from_secs(10))
            .build()
            .map_err(|e| LlmError::Config(format!("cannot build the HTTP client: {e}")))?;
        let endpoint = |spec: &str| -> Result<Endpoint, LlmError> {
            let (provider, model) = split_model(spec)?;
            let (default_url, default_env) = defaults(provider)?;
            let base_url = config.base_url.clone().unwrap_or_else(|| default_url.to_string());
            if base_url.is_empty() {
                return Err(LlmError::Config(format!("{provider} needs model.base_url")));
            }
            // A base URL of one's own (Ollama, a proxy) never gets the provider's key by default: a key
            // for it is named explicitly (model.api_key_env) or stored as llm:custom:api_key.
            let custom = config
                .base_url
                .as_deref()
                .is_some_and(|u| u.trim_end_matches('/') != default_url.trim_end_matches('/'));
            let env_name = config.api_key_env.clone().or(if custom { None } else { default_env.map(String::from) });
            let secret_name = if custom { "llm:custom:api_key".to_string() } else { format!("llm:{provider}:api_key") };
            // The custom slot is shared by every address of one's own: a key stored with the address it
            // was given for (setup does) is never sent to another one.
            let stored = stored_key(secrets, &secret_name, custom, &base_url);
            let api_key = env_name.as_deref().and_then(|n| std::env::var(n).ok()).filter(|k| !k.is_empty()).or(stored);
            if api_key.is_none() && default_env.is_some() && config.base_url.is_none() {
                return Err(LlmError::NoKey(format!(
                    "no API key for {provider}: set {} or run `merlya secret set llm:{provider}:api_key`",
                    env_name.unwrap_or_default()
                )));
            }
            let provider_impl: Arc<dyn Provider> = if provider == "anthropic" {
                Arc::new(Anthropic { base_url, api_key, stream: config.stream, http: http.clone(), idle })
            } else {
                Arc::new(OpenAi {
                    name: provider.to_string(),
                    base_url,
                    api_key,
                    stream: config.stream,
                    http: http.clone(),
                    idle,
                })
            };
            Ok(Endpoint { provider: provider_impl, model: model.to_string() })
        };
        Ok(Self {
            brain: endpoint(&brain_spec)?,
            fast: endpoint(&fast_spec)?,
            config: config.clone(),
            breaker: Breaker::new(config.breaker_threshold, Duration::from_secs(config.breaker_cooldown_secs)),
            spend: Mutex::new(BTreeMap::new()),
        })
    }

    /// Whether the provider of `role` answers with this key (lists its models; no tokens spent).
    pub async fn probe(&self, role: ModelRole) -> Result<usize, LlmError> {
        self.endpoint(role).provider.models().await.map(|m| m.len())
    }

    /// The provider name of `role` (`openai`, `anthropic`, …).
    pub fn provider_name(&self, role: ModelRole) -> &str {
        self.endpoint(role).provider.name()
    }

    /// The model name used for `role`.
    pub fn model(&self, role: ModelRole) -> &str {
        &self.endpoint(role).model
    }

    fn endpoint(&self, role: ModelRole) -> &Endpoint {
        match role {
            ModelRole::Brain => &self.brain,
            ModelRole::Fast => &self.fast,
        }
    }

    /// One chat turn with retries; `on_notice` hears about each retry (what
    /// failed, how long it waits, which attempt comes next).
    pub async fn chat(
        &self,
        role: ModelRole,
        messages: Vec<Message>,
        tools: Vec<ToolSpec>,
        on_delta: DeltaSink<'_>,
        on_notice: NoticeSink<'_>,
    ) -> Result<ChatResponse, LlmError> {
        let seconds = self.config.turn_timeout_secs.max(1);
        let call = self.chat_with_retries(role, messages, tools, on_delta, on_notice);
        match tokio::time::timeout(std::time::Duration::from_secs(seconds), call).await {
            Ok(answer) => answer,
            Err(_) => Err(LlmError::TurnTimeout { provider: self.endpoint(role).provider.name().to_string(), seconds }),
        }
    }

    async fn chat_with_retries(
        &self,
        role: ModelRole,
        messages: Vec<Message>,
        tools: Vec<ToolSpec>,
        on_delta: DeltaSink<'_>,
        on_notice: NoticeSink<'_>,
    ) -> Result<ChatResponse, LlmError> {
        let endpoint = self.endpoint(role);
        let request =
            ChatRequest { model: endpoint.model.clone(), messages, tools, max_tokens: self.config.max_tokens };
        let name = endpoint.provider.name().to_string();
        let attempts = self.config.max_retries.saturating_add(1);
        let mut attempt: u32 = 0;
        loop {
            if let Err((failures, seconds)) = self.breaker.check() {
                return Err(LlmError::CircuitOpen { provider: name, failures, seconds });
            }
            let shown = AtomicBool::new(false);
            let sink = |text: &str| {
                shown.store(true, Ordering::Relaxed);
                on_delta(text)
            };
            match endpoint.provider.chat(&request, &sink).await {
                Ok(answer) => {
                    crate::metrics::llm_call(&name, "ok");
                    self.breaker.success();
                    self.account(&endpoint.model, answer.usage);
                    return Ok(answer);
                }
                Err(e) if e.retryable() || matches!(e, LlmError::Malformed { .. }) => {
                    crate::metrics::llm_call(&name, e.status_label());
                    self.breaker.failure();
                    tracing::warn!(provider = %name, attempt, error = %e, "LLM call failed");
                    if shown.load(Ordering::Relaxed) {
                        return Err(LlmError::AfterPartialAnswer(Box::new(e)));
                    }
                    if let Err((failures, seconds)) = self.breaker.check() {
                        return Err(LlmError::CircuitOpen { provider: name, failures, seconds });
                    }
                    if attempt >= self.config.max_retries {
                        return Err(e);
                    }
                    crate::metrics::retry();
                    let (wait, capped) = self.retry_wait(&e, attempt);
                    let capped = capped
                        .map(|asked| format!("; Retry-After asked for {asked} s, model.max_retry_wait caps it"))
                        .unwrap_or_default();
                    on_notice(format!(
                        "{}; retrying in {} (attempt {}/{attempts}){capped}",
                        e.short(),
                        show_wait(wait),
                        attempt + 2
                    ));
                    tokio::time::sleep(wait).await;
                    attempt += 1;
                }
                Err(e) => {
                    crate::metrics::llm_call(&name, e.status_label());
                    return Err(e);
                }
            }
        }
    }

    /// How long to wait before retry `attempt` (0-based) after `error`:
    /// `Retry-After` when given, else exponential backoff, never more than
    /// `model.max_retry_wait`; with the seconds asked for when they were capped.
    fn retry_wait(&self, error: &LlmError, attempt: u32) -> (Duration, Option<u64>) {
        let most = Duration::from_secs(self.config.max_retry_wait);
        match error {
            LlmError::Status { retry_after: Some(secs), .. } => {
                let asked = Duration::from_secs(*secs);
                if asked > most { (most, Some(*secs)) } else { (asked, None) }
            }
            _ => {
                let backoff = self.config.retry_base_ms.saturating_mul(1 << attempt.min(10)).min(30_000);
                (Duration::from_millis(backoff).min(most), None)
            }
        }
    }

    fn account(&self, model: &str, usage: Usage) {
        let cost = self.config.prices.get(model).map(|p| {
            (usage.input_tokens as f64 * p.input_per_mtok + usage.output_tokens as f64 * p.output_per_mtok)
                / 1_000_000.0
        });
        if let Ok(mut spend) = self.spend.lock() {
            let entry = spend.entry(model.to_string()).or_default();
            entry.calls += 1;
            entry.usage.add(usage);
            entry.cost_usd += cost.unwrap_or(0.0);
        }
    }

    /// Tokens and cost so far, per model.
    pub fn spend(&self) -> BTreeMap<String, Spend> {
        self.spend.lock().map(|s| s.clone()).unwrap_or_default()
    }

    /// Whether the breaker is refusing calls (for the metrics pane).
    pub fn breaker_open(&self) -> bool {
        self.breaker.is_open()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Setup stores a key under the name the client reads it from: a provider's own at its default
    /// address, `llm:custom:api_key` anywhere else (and for servers with no default).
    #[test]
    fn the_key_name_follows_the_address() {
        assert_eq!(key_secret_name("openai", None), "llm:openai:api_key");
        assert_eq!(key_secret_name("openai", Some("https://api.openai.com/v1/")), "llm:openai:api_key");
        assert_eq!(key_secret_name("openai", Some("http://gateway.local/v1")), "llm:custom:api_key");
        assert_eq!(key_secret_name("openai-compatible", Some("http://gateway.local/v1")), "llm:custom:api_key");
        assert_eq!(default_base_url("ollama").ok(), Some("http://127.0.0.1:11434/v1"));
        let secrets = crate::secrets::Secrets::memory();
        secrets.set("llm:custom:api_key", "k-custom").unwrap();
        let config = ModelConfig {
            brain: Some("openai-compatible/m".into()),
            base_url: Some("http://gateway.local/v1".into()),
            ..ModelConfig::default()
        };
        assert!(LlmClient::from_config(&config, &secrets).is_ok(), "a gateway with the key setup stored is usable");
        // A custom key kept with its address is given to that address only.
        secrets.set(CUSTOM_KEY_URL, "http://gateway.local/v1/").unwrap();
        let name = "llm:custom:api_key";
        assert_eq!(stored_key(&secrets, name, true, "http://gateway.local/v1").as_deref(), Some("k-custom"));
        assert_eq!(stored_key(&secrets, name, true, "https://other.example/v1"), None, "never to another gateway");
    }

    #[test]
    fn retry_after_in_seconds_or_as_a_date_and_waits_shown_plainly() {
        assert_eq!(retry_after_secs(" 30 "), Some(30));
        assert_eq!(retry_after_secs("Sun, 06 Nov 1994 08:49:37 GMT"), Some(0), "a date in the past");
        let soon = (chrono::Utc::now() + chrono::Duration::seconds(90)).to_rfc2822();
        assert!(retry_after_secs(&soon).is_some_and(|s| (88..=90).contains(&s)), "{soon}");
        assert_eq!(retry_after_secs("soon"), None);
        assert_eq!(show_wait(Duration::from_millis(250)), "250 ms");
        assert_eq!(show_wait(Duration::from_secs(30)), "30 s");
        assert_eq!(show_wait(Duration::from_millis(1500)), "1.5 s");
    }
}
