//! Conversations with the agent: titled threads of operator and agent
//! messages, so `/conv` can list and reopen them and a follow-up question
//! is asked with what came before. Content is stored after redaction.

use super::{SqlContext, Store, StoreError, now_rfc3339};

/// A conversation in the `/conv` list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConversationSummary {
    pub id: String,
    pub title: String,
    pub updated_at: String,
    pub messages: i64,
}

impl Store {
    /// Starts a conversation titled from its first message; returns its id.
    /// Counting and inserting share one write transaction, so two processes
    /// starting conversations at once do not pick the same id.
    pub async fn create_conversation(&self, first_message: &str) -> Result<String, StoreError> {
        let now = now_rfc3339();
        let mut tx = self.begin_write("create the conversation").await?;
        let count: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM conversations")
            .fetch_one(&mut *tx)
            .await
            .ctx("cannot count conversations")?;
        let id = format!("c{}", count + 1);
        let title: String = crate::redact::redact_command(first_message).chars().take(60).collect();
        sqlx::query("INSERT INTO conversations (id, title, created_at, updated_at) VALUES (?, ?, ?, ?)")
            .bind(&id)
            .bind(title.replace('\n', " "))
            .bind(&now)
            .bind(&now)
            .execute(&mut *tx)
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
        sqlx::query(
            "INSERT INTO session_messages (session_id, conversation_id, role, content, created_at) VALUES (?, ?, ?, ?, ?)",
        )
        .bind(session)
        .bind(conversation)
        .bind(role)
        .bind(crate::redact::redact_command(content))
        .bind(&now)
        .execute(&mut *tx)
        .await
        .ctx("cannot save message")?;
        sqlx::query("UPDATE conversations SET updated_at = ? WHERE id = ?")
            .bind(&now)
            .bind(conversation)
            .execute(&mut *tx)
            .await
            .ctx("cannot update conversation")?;
        tx.commit().await.map_err(self.write_error("save the message"))?;
        Ok(())
    }

    /// The newest conversations first.
    pub async fn list_conversations(&self, limit: i64) -> Result<Vec<ConversationSummary>, StoreError> {
        let rows: Vec<(String, String, String, i64)> = sqlx::query_as(
            "SELECT c.id, c.title, c.updated_at, (SELECT COUNT(*) FROM session_messages m WHERE m.conversation_id = c.id)
             FROM conversations c ORDER BY c.updated_at DESC, c.rowid DESC LIMIT ?",
        )
        .bind(limit)
        .fetch_all(self.pool())
        .await
        .ctx("cannot list conversations")?;
        Ok(rows
            .into_iter()
            .map(|(id, title, updated_at, messages)| ConversationSummary { id, title, updated_at, messages })
            .collect())
    }

    /// A conversation's messages as (role, content), oldest first; `None` when it does not exist.
    pub async fn conversation_messages(&self, id: &str) -> Result<Option<Vec<(String, String)>>, StoreError> {
        let exists: Option<String> = sqlx::query_scalar("SELECT id FROM conversations WHERE id = ?")
            .bind(id)
            .fetch_optional(self.pool())
            .await
            .ctx("cannot read conversation")?;
        if exists.is_none() {
            return Ok(None);
        }
        let rows: Vec<(String, String)> =
            sqlx::query_as("SELECT role, content FROM session_messages WHERE conversation_id = ? ORDER BY id")
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
        sqlx::query_as(
            "SELECT created_at, role, content FROM session_messages \
             WHERE (?1 IS NULL OR session_id = ?1) AND (?2 IS NULL OR created_at >= ?2) ORDER BY id",
        )
        .bind(session)
        .bind(since)
        .fetch_all(self.pool())
        .await
        .ctx("cannot read the session's messages")
    }
}
