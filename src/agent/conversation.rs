//! A turn kept with its conversation, the same way for the console and `merlya run`: the tool calls
//! it made (host, command, how it ended — outputs are in the command history of the session), the
//! answer, and what each model cost.

use std::collections::BTreeMap;

use super::RunReport;
use crate::llm::client::Spend;
use crate::store::Store;
use crate::store::conversations::ModelUsage;

/// Records `text` as the operator's next message in conversation `id` (a new one, titled by it, when
/// `None`); returns the id and the turns before it as (operator, agent) pairs.
pub async fn begin_turn(
    store: &Store,
    id: Option<&str>,
    session: &str,
    text: &str,
) -> Result<(String, Vec<(String, String)>), crate::store::StoreError> {
    let id = match id {
        Some(id) => id.to_string(),
        None => store.create_conversation(text).await?,
    };
    let messages = store.conversation_messages(&id).await?.unwrap_or_default();
    store.add_message(&id, session, "user", text).await?;
    Ok((id, pair_turns(&messages)))
}

/// (operator, agent) pairs from stored messages; an unanswered question and tool rows are dropped.
pub fn pair_turns(messages: &[(String, String)]) -> Vec<(String, String)> {
    let mut turns = Vec::new();
    let mut question: Option<&str> = None;
    for (role, content) in messages {
        match (role.as_str(), question) {
            ("user", _) => question = Some(content),
            ("assistant", Some(q)) => {
                turns.push((q.to_string(), content.clone()));
                question = None;
            }
            _ => {}
        }
    }
    turns
}

/// Stores `report` as the answer of the turn just asked in conversation `id`; `before` and `after`
/// are the client's spend around the turn (their difference is this turn's cost per model).
pub async fn save_turn(
    store: &Store,
    id: &str,
    session: &str,
    report: &RunReport,
    answer: Option<&str>,
    before: &BTreeMap<String, Spend>,
    after: &BTreeMap<String, Spend>,
) -> Result<(), crate::store::StoreError> {
    for c in &report.commands {
        let ended = match (&c.refused, c.exit_code) {
            (Some(why), _) => format!("refused: {why}"),
            (None, Some(code)) => format!("exit {code}"),
            (None, None) => "did not complete".to_string(),
        };
        let line = format!("{} on {}: {} → {ended}", c.specialist, c.host, c.command);
        store.add_message(id, session, "tool", &line).await?;
    }
    if let Some(answer) = answer {
        store.add_message(id, session, "assistant", answer).await?;
    }
    for (model, spent) in after {
        let earlier = before.get(model);
        let usage = ModelUsage {
            model: model.clone(),
            calls: (spent.calls - earlier.map_or(0, |e| e.calls)) as i64,
            input_tokens: (spent.usage.input_tokens - earlier.map_or(0, |e| e.usage.input_tokens)) as i64,
            output_tokens: (spent.usage.output_tokens - earlier.map_or(0, |e| e.usage.output_tokens)) as i64,
            cost_usd: spent.cost_usd - earlier.map_or(0.0, |e| e.cost_usd),
        };
        if usage.calls > 0 {
            store.add_usage(id, &usage).await?;
        }
    }
    Ok(())
}

/// Conversation `id` as Markdown (questions, tool calls, answers, and cost per model); `None` when
/// there is no such conversation. What is stored was redacted when written.
pub async fn markdown(store: &Store, id: &str) -> Result<Option<String>, crate::store::StoreError> {
    let Some(messages) = store.conversation_messages(id).await? else { return Ok(None) };
    let title = store.list_conversations(i64::MAX).await?.into_iter().find(|c| c.id == id).map(|c| c.title);
    let mut out = format!("# Conversation {id}: {}\n\n", title.unwrap_or_default());
    for (role, content) in messages {
        match role.as_str() {
            "user" => out.push_str(&format!("## Operator\n\n{content}\n\n")),
            "tool" => out.push_str(&format!("- `{content}`\n")),
            _ => out.push_str(&format!("\n## merlya\n\n{content}\n\n")),
        }
    }
    let usage = store.conversation_usage(id).await?;
    if !usage.is_empty() {
        out.push_str("## Cost\n\n| model | calls | tokens in | tokens out | USD |\n|---|---:|---:|---:|---:|\n");
        for u in usage {
            out.push_str(&format!(
                "| {} | {} | {} | {} | {:.4} |\n",
                u.model, u.calls, u.input_tokens, u.output_tokens, u.cost_usd
            ));
        }
    }
    Ok(Some(out))
}

#[cfg(test)]
mod tests {
    #[test]
    fn stored_messages_pair_into_turns() {
        let m = |r: &str, c: &str| (r.to_string(), c.to_string());
        let turns = super::pair_turns(&[
            m("user", "q1"),
            m("tool", "diagnostic on web01: uptime → exit 0"),
            m("assistant", "a1"),
            m("user", "q2"),
            m("user", "q3"),
            m("assistant", "a3"),
        ]);
        assert_eq!(turns, [("q1".into(), "a1".into()), ("q3".into(), "a3".into())]);
    }
}
