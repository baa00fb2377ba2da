//! Tool specifications and the main agent's tools.

use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::specialists::{self, Kind};
use super::{Agent, ToolBox};
use crate::i18n::Text;
use crate::llm::ToolSpec;

/// Parses arguments into `T`; a wrong or missing field is a malformed call.
pub fn args<T: DeserializeOwned>(tool: &str, value: Value) -> Result<T, String> {
    serde_json::from_value(value).map_err(|e| format!("bad arguments for `{tool}`: {e}"))
}

/// A tool spec with an object schema of string properties.
pub fn spec(name: &str, description: &str, properties: &[(&str, &str)], required: &[&str]) -> ToolSpec {
    let props: serde_json::Map<String, Value> =
        properties.iter().map(|(k, d)| (k.to_string(), json!({"type": "string", "description": d}))).collect();
    ToolSpec {
        name: name.into(),
        description: description.into(),
        parameters: json!({"type": "object", "properties": props, "required": required, "additionalProperties": false}),
    }
}

/// `list_hosts` and `get_host`, shared by the main agent and the query specialist.
pub fn inventory_specs() -> Vec<ToolSpec> {
    vec![
        spec(
            "list_hosts",
            "List inventory hosts (optionally with a tag).",
            &[("tag", "only hosts with this tag")],
            &[],
        ),
        spec("get_host", "Details of one host.", &[("name", "host name")], &["name"]),
    ]
}

/// Runs an inventory tool, or `None` when `name` is not one.
pub fn inventory_call(agent: &Agent, name: &str, value: &Value) -> Option<Result<String, String>> {
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct ListArgs {
        tag: Option<String>,
    }
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct GetArgs {
        name: String,
    }
    let summary = |h: &crate::inventory::Host| {
        json!({"name": h.name, "address": if h.is_local() { "local".to_string() } else { format!("{}:{}", h.hostname, h.port) },
               "tags": h.tags, "elevation": h.elevation.as_str(), "reachable": h.reachable})
    };
    match name {
        "list_hosts" => Some(args::<ListArgs>(name, value.clone()).map(|a| {
            let hosts: Vec<Value> = agent
                .inventory
                .iter()
                .filter(|h| a.tag.as_ref().is_none_or(|t| h.tags.contains(t)))
                .map(summary)
                .collect();
            Value::Array(hosts).to_string()
        })),
        "get_host" => Some(args::<GetArgs>(name, value.clone()).and_then(|a| {
            agent
                .inventory
                .iter()
                .find(|h| h.name == a.name)
                .map(|h| summary(h).to_string())
                .ok_or_else(|| format!("no host named {}; use list_hosts", a.name))
        })),
        _ => None,
    }
}

/// The main agent's tools.
pub struct MainTools {
    /// External MCP tools offered (read-only ones).
    pub mcp: Vec<crate::mcp::ToolInfo>,
}

#[async_trait::async_trait]
impl ToolBox for MainTools {
    fn specs(&self) -> Vec<ToolSpec> {
        let target = ("target", "host name, @tag, glob or comma list");
        let task = ("task", "what the specialist should do");
        let mut specs = vec![
            spec(
                "delegate_diagnostic",
                "Read-only investigation on target hosts (one specialist per host, in parallel).",
                &[target, task],
                &["target", "task"],
            ),
            spec(
                "delegate_security",
                "Read-only security review on target hosts.",
                &[target, task],
                &["target", "task"],
            ),
            spec(
                "delegate_execution",
                "Make a change on target hosts; each change is approved or denied by a person.",
                &[target, task],
                &["target", "task"],
            ),
            spec(
                "delegate_query",
                "Questions about the inventory and past commands.",
                &[("question", "the question")],
                &["question"],
            ),
            spec(
                "ask_user",
                "Ask the operator a question and wait for the answer.",
                &[("question", "the question")],
                &["question"],
            ),
        ];
        specs.extend(inventory_specs());
        specs.extend(super::mcp_tools::specs(&self.mcp));
        specs.push(super::raw_logs::spec());
        specs
    }

    async fn call(&self, agent: &Agent, name: &str, value: Value) -> Result<String, String> {
        if let Some(result) = super::mcp_tools::call(agent, &self.mcp, name, value.clone(), "agent@main", true).await {
            return result;
        }
        if name == "read_raw_log" {
            return super::raw_logs::read(&agent.store, value);
        }
        #[derive(serde::Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Delegate {
            target: String,
            task: String,
        }
        #[derive(serde::Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Question {
            question: String,
        }
        if let Some(result) = inventory_call(agent, name, &value) {
            return result;
        }
        match name {
            "delegate_diagnostic" | "delegate_security" | "delegate_execution" => {
                let a: Delegate = args(name, value)?;
                let kind = match name {
                    "delegate_diagnostic" => Kind::Diagnostic,
                    "delegate_security" => Kind::Security,
                    _ => Kind::Execution,
                };
                Ok(specialists::delegate(agent, kind, &a.target, &a.task).await)
            }
            "delegate_query" => {
                let a: Question = args(name, value)?;
                Ok(specialists::query(agent, &a.question).await)
            }
            "ask_user" => {
                let a: Question = args(name, value)?;
                Ok(
                    match agent.prompter.ask(&Text::key("prompt.agent_asks", &[]), &Text::Raw(a.question.clone())).await
                    {
                        Some(answer) => format!("The operator answered: {answer}"),
                        None => "No operator is available to answer; decide with what you know, or say what you need."
                            .into(),
                    },
                )
            }
            other => Err(format!("unknown tool `{other}`")),
        }
    }
}
