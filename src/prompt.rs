//! Asking a person: host-key decisions, key passphrases, MFA codes.
//!
//! Workers never talk to the terminal directly. They hold an `Arc<dyn
//! Prompter>`: the console implementation turns a question into a modal, the
//! terminal one reads from the TTY, and the non-interactive one answers "no"
//! so that nothing blocks when no person is there.

use async_trait::async_trait;
use tokio::sync::Mutex;

use crate::i18n::Text;

/// Something that can ask a person a question.
#[async_trait]
pub trait Prompter: Send + Sync {
    /// A yes/no decision; `false` when nobody can answer.
    async fn confirm(&self, title: &Text, body: &Text) -> bool;
    /// Whether to trust a host key never seen (the console gathers the ones that wait into one
    /// list that can be trusted at once); `false` when nobody can answer.
    async fn confirm_host_key(&self, title: &Text, body: &Text) -> bool {
        self.confirm(title, body).await
    }
    /// A secret (passphrase, one-time code); `None` when nobody can answer.
    async fn secret(&self, title: &Text, prompt: &Text) -> Option<String>;
    /// A free-text answer (the agent's `ask_user`); `None` when nobody can answer.
    async fn ask(&self, _title: &Text, _question: &Text) -> Option<String> {
        None
    }
}

/// For runs with no terminal: every question is declined.
pub struct NoPrompter;

#[async_trait]
impl Prompter for NoPrompter {
    async fn confirm(&self, _title: &Text, _body: &Text) -> bool {
        false
    }
    async fn secret(&self, _title: &Text, _prompt: &Text) -> Option<String> {
        None
    }
}

/// Asks on the controlling terminal, in the CLI's language; one question at a time even when many
/// hosts connect in parallel.
#[derive(Default)]
pub struct TerminalPrompter {
    one_at_a_time: Mutex<()>,
    locale: crate::i18n::Locale,
}

impl TerminalPrompter {
    /// Asks in `locale`'s words.
    pub fn in_locale(locale: crate::i18n::Locale) -> Self {
        Self { one_at_a_time: Mutex::new(()), locale }
    }
}

#[async_trait]
impl Prompter for TerminalPrompter {
    async fn confirm(&self, title: &Text, body: &Text) -> bool {
        let _turn = self.one_at_a_time.lock().await;
        let (title, body) = (title.render(&self.locale), body.render(&self.locale));
        let question = format!("{title}\n{body}\n{}", self.locale.t("prompt.continue"));
        tokio::task::spawn_blocking(move || {
            eprint!("{question}");
            let mut answer = String::new();
            std::io::stdin().read_line(&mut answer).is_ok()
                && matches!(answer.trim(), "y" | "Y" | "yes" | "YES" | "o" | "O" | "oui" | "OUI")
        })
        .await
        .unwrap_or(false)
    }

    async fn secret(&self, title: &Text, prompt: &Text) -> Option<String> {
        let _turn = self.one_at_a_time.lock().await;
        let prompt = format!("{}: {}", title.render(&self.locale), prompt.render(&self.locale));
        tokio::task::spawn_blocking(move || rpassword::prompt_password(prompt).ok()).await.ok().flatten()
    }

    async fn ask(&self, title: &Text, question: &Text) -> Option<String> {
        let _turn = self.one_at_a_time.lock().await;
        let question = format!("{}\n{}\n> ", title.render(&self.locale), question.render(&self.locale));
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
