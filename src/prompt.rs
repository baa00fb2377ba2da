//! Asking a person: host-key decisions, key passphrases, MFA codes.
//!
//! Workers never talk to the terminal directly. They hold an `Arc<dyn
//! Prompter>`: the console implementation turns a question into a modal, the
//! terminal one reads from the TTY, and the non-interactive one answers "no"
//! so that nothing blocks when no person is there.

use async_trait::async_trait;
use tokio::sync::Mutex;

/// Something that can ask a person a question.
#[async_trait]
pub trait Prompter: Send + Sync {
    /// A yes/no decision; `false` when nobody can answer.
    async fn confirm(&self, title: &str, body: &str) -> bool;
    /// A secret (passphrase, one-time code); `None` when nobody can answer.
    async fn secret(&self, title: &str, prompt: &str) -> Option<String>;
    /// A free-text answer (the agent's `ask_user`); `None` when nobody can answer.
    async fn ask(&self, _title: &str, _question: &str) -> Option<String> {
        None
    }
}

/// For runs with no terminal: every question is declined.
pub struct NoPrompter;

#[async_trait]
impl Prompter for NoPrompter {
    async fn confirm(&self, _title: &str, _body: &str) -> bool {
        false
    }
    async fn secret(&self, _title: &str, _prompt: &str) -> Option<String> {
        None
    }
}

/// Asks on the controlling terminal; one question at a time even when many
/// hosts connect in parallel.
#[derive(Default)]
pub struct TerminalPrompter {
    one_at_a_time: Mutex<()>,
}

#[async_trait]
impl Prompter for TerminalPrompter {
    async fn confirm(&self, title: &str, body: &str) -> bool {
        let _turn = self.one_at_a_time.lock().await;
        let question = format!("{title}\n{body}\nContinue? [y/N] ");
        tokio::task::spawn_blocking(move || {
            eprint!("{question}");
            let mut answer = String::new();
            std::io::stdin().read_line(&mut answer).is_ok() && matches!(answer.trim(), "y" | "Y" | "yes" | "YES")
        })
        .await
        .unwrap_or(false)
    }

    async fn secret(&self, title: &str, prompt: &str) -> Option<String> {
        let _turn = self.one_at_a_time.lock().await;
        let prompt = format!("{title}: {prompt}");
        tokio::task::spawn_blocking(move || rpassword::prompt_password(prompt).ok()).await.ok().flatten()
    }

    async fn ask(&self, title: &str, question: &str) -> Option<String> {
        let _turn = self.one_at_a_time.lock().await;
        let question = format!("{title}\n{question}\n> ");
        tokio::task::spawn_blocking(move || {
            eprint!("{question}");
            let mut answer = String::new();
            std::io::stdin().read_line(&mut answer).ok().map(|_| answer.trim().to_string()).filter(|a| !a.is_empty())
        })
        .await
        .ok()
        .flatten()
    }
}
