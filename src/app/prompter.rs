//! The console's [`Prompter`]: a question becomes a queued modal; the worker
//! waits for the answer on a oneshot channel.

use async_trait::async_trait;
use tokio::sync::oneshot;

use super::msg::{Msg, PromptAnswer, PromptKind, PromptRequest};
use super::sender::AppSender;
use crate::approval::{ApprovalRequest, Approver, Decision};
use crate::i18n::Text;
use crate::prompt::Prompter;

/// Asks through the console.
pub struct TuiPrompter {
    sender: AppSender,
}

impl TuiPrompter {
    /// A prompter that reports to the loop behind `sender`.
    pub fn new(sender: AppSender) -> Self {
        Self { sender }
    }

    async fn question(&self, title: &Text, body: &Text, kind: PromptKind) -> PromptAnswer {
        self.ask_with(title, body, kind, None).await
    }

    async fn ask_with(
        &self,
        title: &Text,
        body: &Text,
        kind: PromptKind,
        approval: Option<ApprovalRequest>,
    ) -> PromptAnswer {
        let (tx, rx) = oneshot::channel();
        self.sender.send(Msg::Prompt(PromptRequest {
            title: title.clone(),
            body: body.clone(),
            kind,
            approval,
            reply: Some(tx),
        }));
        // A console that closes without answering declines.
        rx.await.unwrap_or(PromptAnswer::No)
    }
}

#[async_trait]
impl Prompter for TuiPrompter {
    async fn confirm(&self, title: &Text, body: &Text) -> bool {
        self.question(title, body, PromptKind::Confirm).await == PromptAnswer::Yes
    }

    async fn confirm_host_key(&self, title: &Text, body: &Text) -> bool {
        self.question(title, body, PromptKind::HostKey).await == PromptAnswer::Yes
    }

    async fn secret(&self, title: &Text, prompt: &Text) -> Option<String> {
        match self.question(title, prompt, PromptKind::Secret).await {
            PromptAnswer::Secret(s) => Some(s),
            _ => None,
        }
    }

    async fn ask(&self, title: &Text, question: &Text) -> Option<String> {
        match self.ask_with(title, question, PromptKind::Text, None).await {
            PromptAnswer::Secret(s) if !s.is_empty() => Some(s),
            _ => None,
        }
    }
}

#[async_trait]
impl Approver for TuiPrompter {
    async fn decide(&self, request: &ApprovalRequest) -> Decision {
        let title = Text::key("prompt.approve_title", &[("summary", &request.summary)]);
        let body = Text::Raw(request.command.clone());
        match self.ask_with(&title, &body, PromptKind::Approval, Some(request.clone())).await {
            PromptAnswer::Yes => Decision::Once,
            PromptAnswer::Always => Decision::AlwaysPrefix,
            _ => Decision::Deny,
        }
    }

    fn who(&self) -> String {
        format!("{} (console)", crate::ssh::target::local_user())
    }
}
