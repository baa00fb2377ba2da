//! A scripted LLM server on loopback: real HTTP, the real OpenAI Chat
//! Completions and Anthropic Messages wire formats (JSON and SSE, tool calls,
//! usage). Each test gives a handler that picks the reply from the request
//! (specialists run in parallel, so order alone is not enough) and asserts on
//! every request received.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

/// A request as received.
#[derive(Debug, Clone)]
pub struct Recorded {
    /// `GET`, `POST`.
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Value,
    pub raw: String,
}

impl Recorded {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    /// The system prompt (OpenAI: first system message; Anthropic: `system`).
    pub fn system(&self) -> String {
        if let Some(s) = self.body.get("system").and_then(Value::as_str) {
            return s.to_string();
        }
        self.body["messages"]
            .as_array()
            .and_then(|m| m.iter().find(|m| m["role"] == "system"))
            .and_then(|m| m["content"].as_str())
            .unwrap_or("")
            .to_string()
    }

    /// Tool results already in the conversation (both formats), in order.
    pub fn tool_results(&self) -> Vec<String> {
        let mut out = Vec::new();
        for m in self.body["messages"].as_array().into_iter().flatten() {
            if m["role"] == "tool" {
                out.push(m["content"].as_str().unwrap_or("").to_string());
            }
            for block in m["content"].as_array().into_iter().flatten() {
                if block["type"] == "tool_result" {
                    out.push(block["content"].as_str().unwrap_or("").to_string());
                }
            }
        }
        out
    }

    /// Offered tool names.
    pub fn tool_names(&self) -> Vec<String> {
        self.body["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|t| {
                t.pointer("/function/name").or_else(|| t.get("name")).and_then(Value::as_str).unwrap_or("").to_string()
            })
            .collect()
    }
}

/// What to answer.
pub enum Reply {
    Json {
        status: u16,
        body: Value,
        headers: Vec<(String, String)>,
    },
    Sse(Vec<String>),
    /// These events, then nothing for this long with the connection open (a stalled stream).
    SseStall(Vec<String>, std::time::Duration),
}

type Handler = dyn Fn(&Recorded) -> Reply + Send + Sync;

/// The running server.
pub struct ScriptedLlm {
    pub url: String,
    pub requests: Arc<Mutex<Vec<Recorded>>>,
}

impl ScriptedLlm {
    pub fn start(handler: impl Fn(&Recorded) -> Reply + Send + Sync + 'static) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://127.0.0.1:{}", listener.local_addr().unwrap().port());
        let requests = Arc::new(Mutex::new(Vec::new()));
        let handler: Arc<Handler> = Arc::new(handler);
        let recorded = requests.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let (handler, recorded) = (handler.clone(), recorded.clone());
                std::thread::spawn(move || serve(stream, &*handler, &recorded));
            }
        });
        Self { url, requests }
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.requests.lock().unwrap().clone()
    }
}

fn serve(mut stream: std::net::TcpStream, handler: &Handler, recorded: &Mutex<Vec<Recorded>>) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut line = String::new();
    if reader.read_line(&mut line).unwrap_or(0) == 0 {
        return;
    }
    let method = line.split_whitespace().next().unwrap_or("").to_string();
    let path = line.split_whitespace().nth(1).unwrap_or("").to_string();
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        reader.read_line(&mut h).unwrap();
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            headers.push((k.trim().to_string(), v.trim().to_string()));
        }
    }
    let length: usize = headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0u8; length];
    reader.read_exact(&mut body).unwrap();
    let raw = String::from_utf8_lossy(&body).into_owned();
    let request = Recorded { method, path, headers, body: serde_json::from_str(&raw).unwrap_or(Value::Null), raw };
    recorded.lock().unwrap().push(request.clone());
    match handler(&request) {
        Reply::Json { status, body, headers } => {
            let text = body.to_string();
            let mut head = format!(
                "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n",
                text.len()
            );
            for (k, v) in headers {
                head.push_str(&format!("{k}: {v}\r\n"));
            }
            let _ = stream.write_all(format!("{head}\r\n{text}").as_bytes());
        }
        Reply::Sse(events) => {
            let _ =
                stream.write_all(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n");
            for event in events {
                let _ = stream.write_all(event.as_bytes());
                let _ = stream.flush();
            }
        }
        Reply::SseStall(events, hold) => {
            let _ =
                stream.write_all(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n");
            for event in events {
                let _ = stream.write_all(event.as_bytes());
                let _ = stream.flush();
            }
            std::thread::sleep(hold);
        }
    }
}

/// Replies in the OpenAI Chat Completions format.
pub mod openai {
    use super::*;

    /// `GET /v1/models`: the model list, as OpenAI and compatible servers (Ollama, OpenRouter) send it.
    pub fn models(ids: &[&str]) -> Reply {
        let data: Vec<Value> = ids
            .iter()
            .map(|id| json!({"id": id, "object": "model", "created": 1700000000, "owned_by": "test"}))
            .collect();
        Reply::Json { status: 200, body: json!({"object": "list", "data": data}), headers: vec![] }
    }

    pub fn text(content: &str) -> Reply {
        Reply::Json {
            status: 200,
            body: json!({"id": "c1", "object": "chat.completion", "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}], "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}}),
            headers: vec![],
        }
    }

    pub fn tool_call(name: &str, args: Value) -> Reply {
        tool_calls(&[(name, args.to_string())])
    }

    /// Several calls, arguments given as raw text (may be malformed on purpose).
    pub fn tool_calls(calls: &[(&str, String)]) -> Reply {
        let calls: Vec<Value> = calls
            .iter()
            .enumerate()
            .map(|(i, (n, a))| json!({"id": format!("call_{i}_{n}"), "type": "function", "function": {"name": n, "arguments": a}}))
            .collect();
        Reply::Json {
            status: 200,
            body: json!({"id": "c2", "object": "chat.completion", "choices": [{"index": 0, "message": {"role": "assistant", "content": null, "tool_calls": calls}, "finish_reason": "tool_calls"}], "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}}),
            headers: vec![],
        }
    }

    fn chunk(delta: Value) -> String {
        format!(
            "data: {}\n\n",
            json!({"id": "s", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta, "finish_reason": null}]})
        )
    }

    pub fn sse_text(parts: &[&str]) -> Reply {
        let mut events = vec![chunk(json!({"role": "assistant", "content": ""}))];
        events.extend(parts.iter().map(|p| chunk(json!({"content": p}))));
        events.push(format!("data: {}\n\n", json!({"id": "s", "choices": [], "usage": {"prompt_tokens": 50, "completion_tokens": 7, "total_tokens": 57}})));
        events.push("data: [DONE]\n\n".into());
        Reply::Sse(events)
    }

    /// A text stream whose connection closes before its end: no
    /// `finish_reason`, no usage, no `[DONE]`.
    pub fn sse_text_cut(parts: &[&str]) -> Reply {
        let mut events = vec![chunk(json!({"role": "assistant", "content": ""}))];
        events.extend(parts.iter().map(|p| chunk(json!({"content": p}))));
        Reply::Sse(events)
    }

    /// A text stream that goes silent after `parts`, its connection held open for `hold`.
    pub fn sse_text_stalled(parts: &[&str], hold: std::time::Duration) -> Reply {
        let mut events = vec![chunk(json!({"role": "assistant", "content": ""}))];
        events.extend(parts.iter().map(|p| chunk(json!({"content": p}))));
        Reply::SseStall(events, hold)
    }

    /// A streamed tool call whose arguments arrive in pieces.
    pub fn sse_tool_call(name: &str, args: Value) -> Reply {
        let text = args.to_string();
        let (a, b) = text.split_at(text.len() / 2);
        Reply::Sse(vec![
            chunk(
                json!({"role": "assistant", "tool_calls": [{"index": 0, "id": "call_s", "type": "function", "function": {"name": name, "arguments": ""}}]}),
            ),
            chunk(json!({"tool_calls": [{"index": 0, "function": {"arguments": a}}]})),
            chunk(json!({"tool_calls": [{"index": 0, "function": {"arguments": b}}]})),
            format!(
                "data: {}\n\n",
                json!({"id": "s", "choices": [], "usage": {"prompt_tokens": 60, "completion_tokens": 9, "total_tokens": 69}})
            ),
            "data: [DONE]\n\n".into(),
        ])
    }

    pub fn status(code: u16, retry_after: Option<&str>) -> Reply {
        Reply::Json {
            status: code,
            body: json!({"error": {"message": "scripted failure", "type": "server_error"}}),
            headers: retry_after.map(|r| vec![("Retry-After".to_string(), r.to_string())]).unwrap_or_default(),
        }
    }
}

/// Replies in the Anthropic Messages format.
pub mod anthropic {
    use super::*;

    /// `GET /v1/models`: the model list in Anthropic's format (paged, with display names).
    pub fn models(ids: &[&str]) -> Reply {
        let data: Vec<Value> = ids
            .iter()
            .map(|id| json!({"id": id, "type": "model", "display_name": id.to_uppercase(), "created_at": "2025-01-01T00:00:00Z"}))
            .collect();
        let (first, last) = (ids.first().copied().unwrap_or(""), ids.last().copied().unwrap_or(""));
        Reply::Json {
            status: 200,
            body: json!({"data": data, "has_more": false, "first_id": first, "last_id": last}),
            headers: vec![],
        }
    }

    pub fn text(content: &str) -> Reply {
        Reply::Json {
            status: 200,
            body: json!({"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test", "content": [{"type": "text", "text": content}], "stop_reason": "end_turn", "usage": {"input_tokens": 80, "output_tokens": 15}}),
            headers: vec![],
        }
    }

    pub fn tool_use(name: &str, input: Value) -> Reply {
        Reply::Json {
            status: 200,
            body: json!({"id": "msg_2", "type": "message", "role": "assistant", "model": "claude-test", "content": [{"type": "text", "text": "Checking."}, {"type": "tool_use", "id": format!("toolu_{name}"), "name": name, "input": input}], "stop_reason": "tool_use", "usage": {"input_tokens": 90, "output_tokens": 12}}),
            headers: vec![],
        }
    }

    fn event(name: &str, data: Value) -> String {
        format!("event: {name}\ndata: {data}\n\n")
    }

    pub fn sse_text(parts: &[&str]) -> Reply {
        let mut events = vec![
            event(
                "message_start",
                json!({"type": "message_start", "message": {"id": "m", "type": "message", "role": "assistant", "content": [], "usage": {"input_tokens": 70, "output_tokens": 1}}}),
            ),
            event(
                "content_block_start",
                json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
            ),
            event("ping", json!({"type": "ping"})),
        ];
        for p in parts {
            events.push(event(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": p}}),
            ));
        }
        events.push(event("content_block_stop", json!({"type": "content_block_stop", "index": 0})));
        events.push(event(
            "message_delta",
            json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 11}}),
        ));
        events.push(event("message_stop", json!({"type": "message_stop"})));
        Reply::Sse(events)
    }

    /// [`sse_text`] whose connection closes before `message_delta` and `message_stop`.
    pub fn sse_text_cut(parts: &[&str]) -> Reply {
        let Reply::Sse(mut events) = sse_text(parts) else { unreachable!() };
        events.truncate(events.len() - 3);
        Reply::Sse(events)
    }

    pub fn sse_tool_use(name: &str, input: Value) -> Reply {
        let text = input.to_string();
        let (a, b) = text.split_at(text.len() / 2);
        Reply::Sse(vec![
            event(
                "message_start",
                json!({"type": "message_start", "message": {"id": "m", "usage": {"input_tokens": 75, "output_tokens": 1}}}),
            ),
            event(
                "content_block_start",
                json!({"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": format!("toolu_{name}"), "name": name, "input": {}}}),
            ),
            event(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": a}}),
            ),
            event(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": b}}),
            ),
            event("content_block_stop", json!({"type": "content_block_stop", "index": 0})),
            event(
                "message_delta",
                json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 14}}),
            ),
            event("message_stop", json!({"type": "message_stop"})),
        ])
    }
}
