//! The OpenAI Chat Completions wire format (OpenAI, OpenRouter, Ollama and
//! any compatible server), JSON and SSE.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::sse::for_each_event;
use super::{ChatRequest, ChatResponse, DeltaSink, LlmError, Message, Provider, Role, ToolCall, Usage};

/// An OpenAI-compatible endpoint.
pub struct OpenAi {
    pub name: String,
    pub base_url: String,
    pub api_key: Option<String>,
    pub stream: bool,
    pub http: reqwest::Client,
    /// How long a streamed answer may send nothing before it counts as stalled.
    pub idle: std::time::Duration,
}

/// The request body for `request`.
pub fn body(request: &ChatRequest, stream: bool) -> Value {
    let messages: Vec<Value> = request.messages.iter().map(message_json).collect();
    let mut body = json!({
        "model": request.model,
        "messages": messages,
        "max_tokens": request.max_tokens,
        "stream": stream,
    });
    if stream {
        body["stream_options"] = json!({ "include_usage": true });
    }
    if !request.tools.is_empty() {
        body["tools"] = Value::Array(
            request
                .tools
                .iter()
                .map(|t| json!({"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.parameters}}))
                .collect(),
        );
    }
    body
}

fn message_json(m: &Message) -> Value {
    let role = match m.role {
        Role::System => "system",
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::Tool => "tool",
    };
    let mut v = json!({ "role": role, "content": m.content });
    if !m.tool_calls.is_empty() {
        v["tool_calls"] = Value::Array(
            m.tool_calls
                .iter()
                .map(
                    |c| json!({"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}),
                )
                .collect(),
        );
    }
    if let Some(id) = &m.tool_call_id {
        v["tool_call_id"] = json!(id);
    }
    v
}

fn malformed(provider: &str, detail: impl Into<String>) -> LlmError {
    LlmError::Malformed { provider: provider.to_string(), detail: detail.into() }
}

/// Parses a non-streaming answer.
pub fn parse_json(provider: &str, v: &Value) -> Result<ChatResponse, LlmError> {
    let message =
        v.pointer("/choices/0/message").ok_or_else(|| malformed(provider, "no choices[0].message in the answer"))?;
    let content = message.get("content").and_then(Value::as_str).unwrap_or("").to_string();
    let mut tool_calls = Vec::new();
    if let Some(calls) = message.get("tool_calls").and_then(Value::as_array) {
        for c in calls {
            let name = c
                .pointer("/function/name")
                .and_then(Value::as_str)
                .ok_or_else(|| malformed(provider, "tool call without a name"))?;
            let arguments = match c.pointer("/function/arguments") {
                Some(Value::String(s)) => s.clone(),
                Some(other) => other.to_string(),
                None => String::new(),
            };
            let id = c.get("id").and_then(Value::as_str).unwrap_or("").to_string();
            tool_calls.push(ToolCall { id, name: name.to_string(), arguments });
        }
    }
    let usage = usage_of(v.get("usage"));
    Ok(ChatResponse { content, tool_calls, usage: usage.unwrap_or_default() })
}

fn usage_of(v: Option<&Value>) -> Option<Usage> {
    let v = v?;
    Some(Usage {
        input_tokens: v.get("prompt_tokens")?.as_u64()?,
        output_tokens: v.get("completion_tokens").and_then(Value::as_u64).unwrap_or(0),
        approximate: false,
    })
}

/// Accumulates a streamed answer.
#[derive(Default)]
pub struct StreamState {
    content: String,
    calls: BTreeMap<u64, ToolCall>,
    usage: Option<Usage>,
    /// Whether the end of the answer was seen (`finish_reason` or `[DONE]`).
    finished: bool,
}

impl StreamState {
    /// Applies one `data:` payload; returns text to show, if any.
    pub fn apply(&mut self, provider: &str, data: &str) -> Result<Option<String>, LlmError> {
        let v: Value = serde_json::from_str(data).map_err(|e| malformed(provider, format!("bad SSE JSON: {e}")))?;
        if let Some(u) = usage_of(v.get("usage")) {
            self.usage = Some(u);
        }
        if v.pointer("/choices/0/finish_reason").is_some_and(|r| !r.is_null()) {
            self.finished = true;
        }
        let Some(delta) = v.pointer("/choices/0/delta") else { return Ok(None) };
        if let Some(calls) = delta.get("tool_calls").and_then(Value::as_array) {
            for c in calls {
                let index = c.get("index").and_then(Value::as_u64).unwrap_or(0);
                let entry = self.calls.entry(index).or_insert_with(|| ToolCall {
                    id: String::new(),
                    name: String::new(),
                    arguments: String::new(),
                });
                if let Some(id) = c.get("id").and_then(Value::as_str) {
                    entry.id = id.to_string();
                }
                if let Some(name) = c.pointer("/function/name").and_then(Value::as_str) {
                    entry.name.push_str(name);
                }
                if let Some(args) = c.pointer("/function/arguments").and_then(Value::as_str) {
                    entry.arguments.push_str(args);
                }
            }
        }
        match delta.get("content").and_then(Value::as_str) {
            Some(text) if !text.is_empty() => {
                self.content.push_str(text);
                Ok(Some(text.to_string()))
            }
            _ => Ok(None),
        }
    }

    /// Notes the `[DONE]` sentinel.
    pub fn done(&mut self) {
        self.finished = true;
    }

    /// The complete answer, or [`LlmError::Incomplete`] when the stream
    /// ended before its `finish_reason` or `[DONE]`.
    pub fn finish(self, provider: &str, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        if !self.finished {
            return Err(LlmError::Incomplete { provider: provider.to_string(), expected: "a finish_reason or [DONE]" });
        }
        let tool_calls: Vec<ToolCall> = self.calls.into_values().collect();
        let usage = self.usage.unwrap_or_else(|| Usage::estimate(request, &self.content, &tool_calls));
        Ok(ChatResponse { content: self.content, tool_calls, usage })
    }
}

#[async_trait::async_trait]
impl Provider for OpenAi {
    fn name(&self) -> &str {
        &self.name
    }

    async fn models(&self) -> Result<Vec<String>, LlmError> {
        let url = format!("{}/models", self.base_url.trim_end_matches('/'));
        let mut builder = self.http.get(&url);
        if let Some(key) = &self.api_key {
            builder = builder.bearer_auth(key);
        }
        super::client::list_model_ids(&self.name, builder).await
    }

    async fn chat(&self, request: &ChatRequest, on_delta: DeltaSink<'_>) -> Result<ChatResponse, LlmError> {
        let url = format!("{}/chat/completions", self.base_url.trim_end_matches('/'));
        let mut builder = self.http.post(&url).json(&body(request, self.stream));
        if let Some(key) = &self.api_key {
            builder = builder.bearer_auth(key);
        }
        let response = builder.send().await.map_err(|e| super::client::transport(&self.name, e))?;
        let response = super::client::check_status(&self.name, response).await?;
        // Some compatible servers ignore `stream` and answer with JSON: accept it.
        if !self.stream || super::client::is_json(&response) {
            let parse = |v: &Value| parse_json(&self.name, v);
            return super::client::json_answer(&self.name, response, request, parse, on_delta).await;
        }
        let mut state = StreamState::default();
        for_each_event(&self.name, response, self.idle, |event| {
            if event.data == "[DONE]" {
                state.done();
                return Ok(false);
            }
            if let Some(text) = state.apply(&self.name, &event.data)? {
                on_delta(&text);
            }
            Ok(true)
        })
        .await?;
        state.finish(&self.name, request)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request() -> ChatRequest {
        ChatRequest { model: "m".into(), messages: vec![Message::user("12345678")], tools: Vec::new(), max_tokens: 10 }
    }

    #[test]
    fn stream_without_usage_is_estimated_and_flagged() {
        let mut state = StreamState::default();
        state.apply("t", r#"{"choices":[{"delta":{"content":"abcd"}}]}"#).unwrap();
        state.done();
        let answer = state.finish("t", &request()).unwrap();
        assert_eq!(answer.content, "abcd");
        assert_eq!(answer.usage, Usage { input_tokens: 2, output_tokens: 1, approximate: true });
    }

    #[test]
    fn json_answers_and_malformed_bodies() {
        let v: Value = serde_json::from_str(
            r#"{"choices":[{"message":{"content":"hi","tool_calls":[{"id":"c","function":{"name":"x","arguments":"{}"}}]}}],"usage":{"prompt_tokens":3,"completion_tokens":4}}"#,
        )
        .unwrap();
        let a = parse_json("t", &v).unwrap();
        assert_eq!((a.content.as_str(), a.tool_calls[0].name.as_str(), a.usage.output_tokens), ("hi", "x", 4));
        assert!(matches!(parse_json("t", &serde_json::json!({"oops": 1})), Err(LlmError::Malformed { .. })));
        assert!(StreamState::default().apply("t", "not json").is_err());
    }

    #[test]
    fn a_stream_is_complete_only_with_a_finish_reason_or_done() {
        let mut cut = StreamState::default();
        cut.apply("t", r#"{"choices":[{"delta":{"content":"ab"},"finish_reason":null}]}"#).unwrap();
        assert!(matches!(cut.finish("t", &request()), Err(LlmError::Incomplete { .. })));
        let mut stopped = StreamState::default();
        stopped.apply("t", r#"{"choices":[{"delta":{"content":"ab"},"finish_reason":"stop"}]}"#).unwrap();
        assert_eq!(stopped.finish("t", &request()).unwrap().content, "ab");
    }
}
