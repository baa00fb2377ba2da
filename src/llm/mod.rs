//! Talking to language models: one [`Provider`] trait, two wire formats
//! (OpenAI Chat Completions — also OpenRouter, Ollama and any compatible
//! `base_url` — and Anthropic Messages), streaming over SSE, tool calls,
//! token usage and cost, retries with backoff and a circuit breaker.

pub mod anthropic;
pub mod breaker;
pub mod client;
pub mod openai;
pub mod sse;

use serde::{Deserialize, Serialize};

pub use client::{LlmClient, ModelRole};

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    System,
    User,
    Assistant,
    Tool,
}

/// A tool the model asked to call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The provider's id, echoed back with the result.
    pub id: String,
    /// Tool name.
    pub name: String,
    /// Arguments as the raw JSON text the model produced (may be malformed).
    pub arguments: String,
}

/// One message of a conversation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    pub role: Role,
    pub content: String,
    /// Calls made by an assistant message.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// For `Role::Tool`: the call this answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
}

impl Message {
    /// A system message.
    pub fn system(text: impl Into<String>) -> Self {
        Self { role: Role::System, content: text.into(), tool_calls: Vec::new(), tool_call_id: None }
    }
    /// A user message.
    pub fn user(text: impl Into<String>) -> Self {
        Self { role: Role::User, content: text.into(), tool_calls: Vec::new(), tool_call_id: None }
    }
    /// An assistant message with optional tool calls.
    pub fn assistant(text: impl Into<String>, tool_calls: Vec<ToolCall>) -> Self {
        Self { role: Role::Assistant, content: text.into(), tool_calls, tool_call_id: None }
    }
    /// The result of a tool call.
    pub fn tool(call_id: &str, text: impl Into<String>) -> Self {
        Self { role: Role::Tool, content: text.into(), tool_calls: Vec::new(), tool_call_id: Some(call_id.to_string()) }
    }
}

/// A tool offered to the model.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    /// JSON Schema of the arguments object.
    pub parameters: serde_json::Value,
}

/// What is sent.
#[derive(Debug, Clone)]
pub struct ChatRequest {
    pub model: String,
    pub messages: Vec<Message>,
    pub tools: Vec<ToolSpec>,
    pub max_tokens: u32,
}

/// Tokens used by one call.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// True when the provider sent no usage and it was estimated (chars / 4).
    pub approximate: bool,
}

impl Usage {
    /// Adds another call's usage.
    pub fn add(&mut self, other: Usage) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.approximate |= other.approximate;
    }

    /// The chars/4 estimate for a request and its answer.
    pub fn estimate(request: &ChatRequest, answer: &str, calls: &[ToolCall]) -> Self {
        let sent: usize = request.messages.iter().map(|m| m.content.len()).sum::<usize>()
            + request.tools.iter().map(|t| t.description.len() + t.parameters.to_string().len()).sum::<usize>();
        let got = answer.len() + calls.iter().map(|c| c.arguments.len() + c.name.len()).sum::<usize>();
        Usage { input_tokens: sent.div_ceil(4) as u64, output_tokens: got.div_ceil(4) as u64, approximate: true }
    }
}

/// What came back.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChatResponse {
    /// Text of the answer (possibly empty when only tools are called).
    pub content: String,
    pub tool_calls: Vec<ToolCall>,
    pub usage: Usage,
}

/// Why a call failed.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum LlmError {
    /// HTTP status from the provider (429, 5xx are retried).
    #[error("{provider} answered HTTP {status}: {body}")]
    Status { provider: String, status: u16, body: String, retry_after: Option<u64> },
    /// Network or timeout.
    #[error("{provider} could not be reached: {detail}")]
    Transport { provider: String, detail: String, timeout: bool },
    /// A body that does not follow the wire format.
    #[error("{provider} sent a malformed response: {detail}")]
    Malformed { provider: String, detail: String },
    /// The event stream closed before the event that ends an answer, so what
    /// arrived may be cut short.
    #[error("{provider}'s answer stream ended before {expected}: the answer may be cut short")]
    Incomplete { provider: String, expected: &'static str },
    /// The event stream sent nothing for `model.timeout_secs`.
    #[error(
        "{provider}'s answer stream stalled: nothing arrived for {seconds} s after {events} event(s) (model.timeout_secs)"
    )]
    Stalled { provider: String, seconds: u64, events: usize },
    /// A stream that failed after part of its text was shown: not retried, so
    /// the text is never shown twice.
    #[error("{0} (after part of the answer was shown, so it was not retried)")]
    AfterPartialAnswer(Box<LlmError>),
    /// The call, with its retries and waits, went past `model.turn_timeout_secs`.
    #[error("{provider} did not answer within {seconds} s (model.turn_timeout_secs), retries included")]
    TurnTimeout { provider: String, seconds: u64 },
    /// Too many failures in a row; calls are refused for a while.
    #[error("{provider} circuit breaker is open after {failures} consecutive failures; retrying in {seconds}s")]
    CircuitOpen { provider: String, failures: u32, seconds: u64 },
    /// No API key where configuration says it is.
    #[error("{0}")]
    NoKey(String),
    /// Configuration problem.
    #[error("{0}")]
    Config(String),
}

impl LlmError {
    /// Whether another attempt may succeed.
    pub fn retryable(&self) -> bool {
        match self {
            LlmError::Status { status, .. } => *status == 429 || *status >= 500,
            LlmError::Transport { .. } | LlmError::Incomplete { .. } | LlmError::Stalled { .. } => true,
            _ => false,
        }
    }

    /// The `status` label of a failed call in the metrics: the HTTP status, or the kind of failure.
    pub fn status_label(&self) -> &'static str {
        match self {
            LlmError::Status { status, .. } => match status {
                401 | 403 => "unauthorized",
                429 => "rate_limited",
                s if *s >= 500 => "server_error",
                _ => "client_error",
            },
            LlmError::Transport { timeout: true, .. } | LlmError::TurnTimeout { .. } | LlmError::Stalled { .. } => {
                "timeout"
            }
            LlmError::Transport { .. } => "transport",
            LlmError::Malformed { .. } | LlmError::Incomplete { .. } | LlmError::AfterPartialAnswer(_) => "malformed",
            LlmError::CircuitOpen { .. } => "circuit_open",
            LlmError::NoKey(_) | LlmError::Config(_) => "config",
        }
    }

    /// A few words on what went wrong, for retry notices.
    pub fn short(&self) -> String {
        match self {
            LlmError::Status { provider, status, .. } => format!("{provider} answered HTTP {status}"),
            LlmError::Transport { provider, timeout: true, .. } => format!("{provider} timed out"),
            LlmError::Transport { provider, .. } => format!("{provider} could not be reached"),
            LlmError::Malformed { provider, .. } => format!("{provider} sent a malformed response"),
            LlmError::Incomplete { provider, .. } => format!("{provider}'s answer stream ended early"),
            LlmError::Stalled { provider, seconds, .. } => {
                format!("{provider}'s answer stream stalled for {seconds} s")
            }
            other => other.to_string(),
        }
    }
}

/// Receives text as it streams in.
pub type DeltaSink<'a> = &'a (dyn Fn(&str) + Send + Sync);

/// Receives what the client says about its own progress (a retry and what it
/// waits for), so the operator is not left staring at a silent wait.
pub type NoticeSink<'a> = &'a (dyn Fn(String) + Send + Sync);

/// One wire format.
#[async_trait::async_trait]
pub trait Provider: Send + Sync {
    /// For messages: `openai`, `anthropic`, ...
    fn name(&self) -> &str;
    /// One attempt (no retries: [`LlmClient`] adds them).
    async fn chat(&self, request: &ChatRequest, on_delta: DeltaSink<'_>) -> Result<ChatResponse, LlmError>;
    /// Lists the provider's models (`GET …/models`): reachability and key check for `merlya doctor`,
    /// and the choice offered by `/setup`, at no token cost. Returns their ids.
    async fn models(&self) -> Result<Vec<String>, LlmError>;
}
