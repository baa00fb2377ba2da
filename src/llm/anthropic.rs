//! The Anthropic Messages wire format, JSON and SSE.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::sse::for_each_event;
use super::{ChatRequest, ChatResponse, DeltaSink, LlmError, Provider, Role, ToolCall, Usage};

/// The API version header value this client speaks.
pub const API_VERSION: &str = "2023-06-01";

/// An Anthropic endpoint.
pub struct Anthropic {
    pub base_url: String,
    pub api_key: Option<String>,
    pub stream: bool,
    pub http: reqwest::Client,
    /// How long a streamed answer may send nothing before it counts as stalled.
    pub idle: std::time::Duration,
}

/// The request body: system prompt apart, tool results as user content blocks.
pub fn body(request: &ChatRequest, stream: bool) -> Value {
    let system: Vec<&str> =
        request.messages.iter().filter(|m| m.role == Role::System).map(|m| m.content.as_str()).collect();
    let mut messages: Vec<Value> = Vec::new();
    for m in request.messages.iter().filter(|m| m.role != Role::System) {
        let (role, blocks) = match m.role {
            Role::Assistant => {
                let mut blocks = Vec::new();
                if !m.content.is_empty() {
                    blocks.push(json!({"type": "text", "text": m.content}));
                }
                for c in &m.tool_calls {
                    let input: Value = serde_json::from_str(&c.arguments).unwrap_or_else(|_| json!({}));
                    blocks.push(json!({"type": "tool_use", "id": c.id, "name": c.name, "input": input}));
                }
                ("assistant", blocks)
            }
            Role::Tool => (
                "user",
                vec![
                    json!({"type": "tool_result", "tool_use_id": m.tool_call_id.clone().unwrap_or_default(), "content": m.content}),
                ],
            ),
            _ => ("user", vec![json!({"type": "text", "text": m.content})]),
        };
        // Consecutive messages of one role are merged, as the API requires alternation.
        match messages.last_mut() {
            Some(last) if last["role"] == role => {
                if let Some(content) = last["content"].as_array_mut() {
                    content.extend(blocks);
                }
            }
            _ => messages.push(json!({"role": role, "content": blocks})),
        }
    }
    let mut body = json!({
        "model": request.model,
        "max_tokens": request.max_tokens,
        "messages": messages,
        "stream": stream,
    });
    if !system.is_empty() {
        body["system"] = json!(system.join("\n\n"));
    }
    if !request.tools.is_empty() {
        body["tools"] = Value::Array(
            request
                .tools
                .iter()
                .map(|t| json!({"name": t.name, "description": t.description, "input_schema": t.parameters}))
                .collect(),
        );
    }
    body
}

fn malformed(detail: impl Into<String>) -> LlmError {
    LlmError::Malformed { provider: "anthropic".into(), detail: detail.into() }
}

/// Parses a non-streaming answer.
pub fn parse_json(v: &Value) -> Result<ChatResponse, LlmError> {
    let blocks =
        v.get("content").and_then(Value::as_array).ok_or_else(|| malformed("no content array in the answer"))?;
    let mut answer = ChatResponse::default();
    for b in blocks {
        match b.get("type").and_then(Value::as_str) {
            Some("text") => answer.content.push_str(b.get("text").and_then(Value::as_str).unwrap_or("")),
            Some("tool_use") => answer.tool_calls.push(ToolCall {
                id: b.get("id").and_then(Value::as_str).unwrap_or("").to_string(),
                name: b
                    .get("name")
                    .and_then(Value::as_str)
                    .ok_or_else(|| malformed("tool_use without a name"))?
                    .to_string(),
                arguments: b.get("input").map(Value::to_string).unwrap_or_else(|| "{}".into()),
            }),
            _ => {}
        }
    }
    if let Some(u) = v.get("usage") {
        answer.usage = Usage {
            input_tokens: u.get("input_tokens").and_then(Value::as_u64).unwrap_or(0),
            output_tokens: u.get("output_tokens").and_then(Value::as_u64).unwrap_or(0),
            approximate: false,
        };
    }
    Ok(answer)
}

/// Accumulates a streamed answer.
#[derive(Default)]
pub struct StreamState {
    content: String,
    calls: BTreeMap<u64, ToolCall>,
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
}

impl StreamState {
    /// Applies one event; returns text to show, if any.
    pub fn apply(&mut self, event: &str, data: &str) -> Result<Option<String>, LlmError> {
        let v: Value = serde_json::from_str(data).map_err(|e| malformed(format!("bad SSE JSON: {e}")))?;
        let kind = v.get("type").and_then(Value::as_str).unwrap_or(event);
        match kind {
            "message_start" => {
                self.input_tokens = v.pointer("/message/usage/input_tokens").and_then(Value::as_u64);
                if let Some(out) = v.pointer("/message/usage/output_tokens").and_then(Value::as_u64) {
                    self.output_tokens = Some(out);
                }
            }
            "content_block_start" => {
                let index = v.get("index").and_then(Value::as_u64).unwrap_or(0);
                if v.pointer("/content_block/type").and_then(Value::as_str) == Some("tool_use") {
                    self.calls.insert(
                        index,
                        ToolCall {
                            id: v.pointer("/content_block/id").and_then(Value::as_str).unwrap_or("").to_string(),
                            name: v.pointer("/content_block/name").and_then(Value::as_str).unwrap_or("").to_string(),
                            arguments: String::new(),
                        },
                    );
                }
            }
            "content_block_delta" => {
                let index = v.get("index").and_then(Value::as_u64).unwrap_or(0);
                match v.pointer("/delta/type").and_then(Value::as_str) {
                    Some("text_delta") => {
                        let text = v.pointer("/delta/text").and_then(Value::as_str).unwrap_or("");
                        self.content.push_str(text);
                        return Ok((!text.is_empty()).then(|| text.to_string()));
                    }
                    Some("input_json_delta") => {
                        let part = v.pointer("/delta/partial_json").and_then(Value::as_str).unwrap_or("");
                        if let Some(call) = self.calls.get_mut(&index) {
                            call.arguments.push_str(part);
                        }
                    }
                    _ => {}
                }
            }
            "message_delta" => {
                if let Some(out) = v.pointer("/usage/output_tokens").and_then(Value::as_u64) {
                    self.output_tokens = Some(out);
                }
            }
            "error" => {
                let message = v.pointer("/error/message").and_then(Value::as_str).unwrap_or("unknown error");
                return Err(LlmError::Status {
                    provider: "anthropic".into(),
                    status: 529,
                    body: message.into(),
                    retry_after: None,
                });
            }
            _ => {}
        }
        Ok(None)
    }

    /// The complete answer.
    pub fn finish(self, request: &ChatRequest) -> ChatResponse {
        let mut tool_calls: Vec<ToolCall> = self.calls.into_values().collect();
        for c in &mut tool_calls {
            if c.arguments.is_empty() {
                c.arguments = "{}".into();
            }
        }
        let usage = match (self.input_tokens, self.output_tokens) {
            (Some(i), Some(o)) => Usage { input_tokens: i, output_tokens: o, approximate: false },
            _ => Usage::estimate(request, &self.content, &tool_calls),
        };
        ChatResponse { content: self.content, tool_calls, usage }
    }
}

#[async_trait::async_trait]
impl Provider for Anthropic {
    fn name(&self) -> &str {
        "anthropic"
    }

    async fn models(&self) -> Result<Vec<String>, LlmError> {
        let url = format!("{}/v1/models", self.base_url.trim_end_matches('/'));
        let mut builder = self.http.get(&url).header("anthropic-version", API_VERSION);
        if let Some(key) = &self.api_key {
            builder = builder.header("x-api-key", key);
        }
        super::client::list_model_ids("anthropic", builder).await
    }

    async fn chat(&self, request: &ChatRequest, on_delta: DeltaSink<'_>) -> Result<ChatResponse, LlmError> {
        let url = format!("{}/v1/messages", self.base_url.trim_end_matches('/'));
        let mut builder =
            self.http.post(&url).header("anthropic-version", API_VERSION).json(&body(request, self.stream));
        if let Some(key) = &self.api_key {
            builder = builder.header("x-api-key", key);
        }
        let response = builder.send().await.map_err(|e| super::client::transport("anthropic", e))?;
        let response = super::client::check_status("anthropic", response).await?;
        // Some compatible servers ignore `stream` and answer with JSON: accept it.
        if !self.stream || super::client::is_json(&response) {
            return super::client::json_answer("anthropic", response, request, parse_json, on_delta).await;
        }
        let mut state = StreamState::default();
        let mut stopped = false;
        for_each_event("anthropic", response, self.idle, |event| {
            let name = event.event.clone().unwrap_or_default();
            if name == "message_stop" {
                stopped = true;
                return Ok(false);
            }
            if name != "ping"
                && !event.data.is_empty()
                && let Some(text) = state.apply(&name, &event.data)?
            {
                on_delta(&text);
            }
            Ok(true)
        })
        .await?;
        if !stopped {
            return Err(LlmError::Incomplete { provider: "anthropic".into(), expected: "message_stop" });
        }
        Ok(state.finish(request))
    }
}
