//! Conversations with the agent: titled threads of operator and agent
//! messages, so `/conv` can list and reopen them and a follow-up question
//! is asked with what came before. Content is stored after redaction.

use super::Backend;
use super::db::{query, recorded_order};
use super::{SqlContext, Store, StoreError, now_rfc3339};

/// A conversation in the `/conv` list.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ConversationSummary {
    pub id: String,
    pub title: String,
    pub updated_at: String,
    pub messages: i64,
    /// Tokens in and out, and cost, over every model.
    pub tokens: i64,
    pub cost_usd: f64,
}

/// What one model cost a conversation.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ModelUsage {
    pub model: String,
    pub calls: i64,
    pub input_tokens: i64,
    pub output_tokens: i64,
    pub cost_usd: f64,
}

impl Store {
    /// Starts a conversation titled from its first message; returns its id.
    /// Counting and inserting share one write transaction, so two processes
    /// starting conversations at once do not pick the same id.
    pub async fn create_conversation(&self, first_message: &str) -> Result<String, StoreError> {
        let now = now_rfc3339();
        let mut tx = self.begin_write("create the conversation").await?;
        // The highest number so far, not the count: a deleted conversation's id is never reused.
        let highest: i64 = query(match tx.backend() {
            Backend::Sqlite => {
                "SELECT COALESCE(MAX(CAST(SUBSTR(id, 2) AS INTEGER)), 0) FROM conversations WHERE id GLOB 'c[0-9]*'"
            }
            Backend::Postgres => {
                "SELECT COALESCE(MAX(CAST(substring(id from '^c([0-9]+)') AS BIGINT)), 0) FROM conversations \
                 WHERE id ~ '^c[0-9]'"
            }
        })
        .scalar(&mut tx)
        .await
        .ctx("cannot number conversations")?;
        let id = format!("c{}", highest + 1);
        let title: String = crate::redact::redact_command(first_message).chars().take(60).collect();
        query("INSERT INTO conversations (id, title, created_at, updated_at) VALUES ($1, $2, $3, $4)")
            .bind(&id)
            .bind(title.replace('\n', " "))
            .bind(&now)
            .bind(&now)
            .execute(&mut tx)
            .await
            .ctx("cannot create conversation")?;
        tx.commit().await.map_err(self.write_error("create the conversation"))?;
        Ok(id)
    }

    /// Appends a message (`user` or `assistant`), redacted.
    pub async fn add_message(
        &self,
        conversation: &str,
        session: &str,
        role: &str,
        content: &str,
    ) -> Result<(), StoreError> {
        let now = now_rfc3339();
        let mut tx = self.begin_write("save the message").await?;
        query(
            "INSERT INTO session_messages (session_id, conversation_id, role, content, created_at) VALUES ($1, $2, $3, $4, $5)",
        )
        .bind(session)
        .bind(conversation)
        .bind(role)
        .bind(crate::redact::redact_command(content))
        .bind(&now)
        .execute(&mut tx)
        .await
        .ctx("cannot save message")?;
        query("UPDATE conversations SET updated_at = $1 WHERE id = $2")
            .bind(&now)
            .bind(conversation)
            .execute(&mut tx)
            .await
            .ctx("cannot update conversation")?;
        tx.commit().await.map_err(self.write_error("save the message"))?;
        Ok(())
    }

    /// The newest conversations first.
    pub async fn list_conversations(&self, limit: i64) -> Result<Vec<ConversationSummary>, StoreError> {
        let rows: Vec<(String, String, String, i64, i64, f64)> = query(format!(
            "SELECT c.id, c.title, c.updated_at,
                    (SELECT COUNT(*) FROM session_messages m WHERE m.conversation_id = c.id AND m.role != 'tool'),
                    (SELECT CAST(COALESCE(SUM(u.input_tokens + u.output_tokens), 0) AS BIGINT) FROM conversation_usage u WHERE u.conversation_id = c.id),
                    (SELECT COALESCE(SUM(u.cost_usd), 0.0) FROM conversation_usage u WHERE u.conversation_id = c.id)
             FROM conversations c ORDER BY c.updated_at DESC, c.{} DESC LIMIT $1",
            recorded_order(self.backend())
        ))
        .bind(limit)
        .fetch_all(self.pool())
        .await
        .ctx("cannot list conversations")?;
        Ok(rows
            .into_iter()
            .map(|(id, title, updated_at, messages, tokens, cost_usd)| ConversationSummary {
                id,
                title,
                updated_at,
                messages,
                tokens,
                cost_usd,
            })
            .collect())
    }

    /// The conversation updated last (what `--resume` without an id reopens).
    pub async fn latest_conversation(&self) -> Result<Option<String>, StoreError> {
        query(format!(
            "SELECT id FROM conversations ORDER BY updated_at DESC, {} DESC LIMIT 1",
            recorded_order(self.backend())
        ))
        .scalar_optional(self.pool())
        .await
        .ctx("cannot read conversations")
    }

    /// Renames a conversation; `false` when there is none with that id.
    pub async fn rename_conversation(&self, id: &str, title: &str) -> Result<bool, StoreError> {
        let title: String = crate::redact::redact_command(title).replace('\n', " ").chars().take(80).collect();
        let mut tx = self.begin_write("rename the conversation").await?;
        let done = query("UPDATE conversations SET title = $1 WHERE id = $2")
            .bind(title)
            .bind(id)
            .execute(&mut tx)
            .await
            .ctx("cannot rename the conversation")?;
        tx.commit().await.map_err(self.write_error("rename the conversation"))?;
        Ok(done > 0)
    }

    /// Deletes a conversation, its messages and its usage; `false` when there is none with that id.
    pub async fn delete_conversation(&self, id: &str) -> Result<bool, StoreError> {
        let mut tx = self.begin_write("delete the conversation").await?;
        query("DELETE FROM session_messages WHERE conversation_id = $1")
            .bind(id)
            .execute(&mut tx)
            .await
            .ctx("cannot delete the conversation's messages")?;
        let done = query("DELETE FROM conversations WHERE id = $1")
            .bind(id)
            .execute(&mut tx)
            .await
            .ctx("cannot delete the conversation")?;
        tx.commit().await.map_err(self.write_error("delete the conversation"))?;
        Ok(done > 0)
    }

    /// Adds what `model` cost a conversation in one turn.
    pub async fn add_usage(&self, id: &str, usage: &ModelUsage) -> Result<(), StoreError> {
        let mut tx = self.begin_write("record the conversation's usage").await?;
        query(
            "INSERT INTO conversation_usage (conversation_id, model, calls, input_tokens, output_tokens, cost_usd)
             VALUES ($1, $2, $3, $4, $5, $6)
             ON CONFLICT (conversation_id, model) DO UPDATE SET calls = conversation_usage.calls + $3,
                 input_tokens = conversation_usage.input_tokens + $4,
                 output_tokens = conversation_usage.output_tokens + $5,
                 cost_usd = conversation_usage.cost_usd + $6",
        )
        .bind(id)
        .bind(&usage.model)
        .bind(usage.calls)
        .bind(usage.input_tokens)
        .bind(usage.output_tokens)
        .bind(usage.cost_usd)
        .execute(&mut tx)
        .await
        .ctx("cannot record the conversation's usage")?;
        tx.commit().await.map_err(self.write_error("record the conversation's usage"))?;
        // Once the registry holds the history, what is recorded now is added to it (before, the
        // seed reads it from the table).
        if crate::metrics::seeded() {
            let count = |n: i64| u64::try_from(n).unwrap_or(0);
            crate::metrics::model_usage(&(
                usage.model.clone(),
                count(usage.calls),
                count(usage.input_tokens),
                count(usage.output_tokens),
                usage.cost_usd,
            ));
        }
        Ok(())
    }

    /// What each model cost a conversation.
    pub async fn conversation_usage(&self, id: &str) -> Result<Vec<ModelUsage>, StoreError> {
        let rows: Vec<(String, i64, i64, i64, f64)> = query(
            "SELECT model, calls, input_tokens, output_tokens, cost_usd FROM conversation_usage
             WHERE conversation_id = $1 ORDER BY model",
        )
        .bind(id)
        .fetch_all(self.pool())
        .await
        .ctx("cannot read the conversation's usage")?;
        Ok(rows
            .into_iter()
            .map(|(model, calls, input_tokens, output_tokens, cost_usd)| ModelUsage {
                model,
                calls,
                input_tokens,
                output_tokens,
                cost_usd,
            })
            .collect())
    }

    /// The summary standing for a conversation's first `turns` turns, if one was made.
    pub async fn conversation_summary(&self, id: &str) -> Result<Option<(String, i64)>, StoreError> {
        let row: Option<(Option<String>, i64)> =
            query("SELECT summary, summary_turns FROM conversations WHERE id = $1")
                .bind(id)
                .fetch_optional(self.pool())
                .await
                .ctx("cannot read the conversation's summary")?;
        Ok(row.and_then(|(summary, turns)| summary.map(|s| (s, turns))))
    }

    /// Keeps the summary of a conversation's first `turns` turns (redacted like every message).
    pub async fn set_conversation_summary(&self, id: &str, summary: &str, turns: i64) -> Result<(), StoreError> {
        let mut tx = self.begin_write("save the conversation's summary").await?;
        query("UPDATE conversations SET summary = $1, summary_turns = $2 WHERE id = $3")
            .bind(crate::redact::redact_command(summary))
            .bind(turns)
            .bind(id)
            .execute(&mut tx)
            .await
            .ctx("cannot save the conversation's summary")?;
        tx.commit().await.map_err(self.write_error("save the conversation's summary"))?;
        Ok(())
    }

    /// A conversation's messages as (role, content), oldest first; `None` when it does not exist.
    pub async fn conversation_messages(&self, id: &str) -> Result<Option<Vec<(String, String)>>, StoreError> {
        let exists: Option<String> = query("SELECT id FROM conversations WHERE id = $1")
            .bind(id)
            .scalar_optional(self.pool())
            .await
            .ctx("cannot read conversation")?;
        if exists.is_none() {
            return Ok(None);
        }
        let rows: Vec<(String, String)> =
            query("SELECT role, content FROM session_messages WHERE conversation_id = $1 ORDER BY id")
                .bind(id)
                .fetch_all(self.pool())
                .await
                .ctx("cannot read conversation")?;
        Ok(Some(rows))
    }

    /// Questions and answers of a session (or since a time), oldest first, as (time, role, content).
    pub async fn session_messages(
        &self,
        session: Option<&str>,
        since: Option<&str>,
    ) -> Result<Vec<(String, String, String)>, StoreError> {
        query(
            "SELECT created_at, role, content FROM session_messages \
             WHERE ($1 IS NULL OR session_id = $1) AND ($2 IS NULL OR created_at >= $2) ORDER BY id",
        )
        .bind(session)
        .bind(since)
        .fetch_all(self.pool())
        .await
        .ctx("cannot read the session's messages")
    }
}
