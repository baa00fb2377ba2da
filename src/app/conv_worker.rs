//! `/conv list|show|load|rename|delete|export` and `/report` in the console,
//! answered by a worker (the database is never touched on the loop thread).

use super::command_line::ConvCommand;
use super::model::{ChatEntry, ChatRole};
use super::msg::Msg;
use super::workers::Services;

/// Runs a `/conv` sub-command.
pub(super) fn run(services: &Services, command: ConvCommand) {
    let (ctx, sender, current) = (services.ctx.clone(), services.sender.clone(), services.conversation.clone());
    let locale = services.locale();
    tokio::spawn(async move {
        let store = &ctx.store;
        let missing = |id: &str| Msg::Error(locale.tf("conv.missing", &[("id", id)]));
        match command {
            ConvCommand::List => {
                let note = match store.list_conversations(20).await {
                    Err(e) => format!("cannot list conversations: {e}"),
                    Ok(list) if list.is_empty() => locale.t("conv.none").to_string(),
                    Ok(list) => {
                        let rows: Vec<String> = list
                            .iter()
                            .map(|c| {
                                format!(
                                    "  {}  {}  ({} messages, {} tokens, ${:.4}, {})",
                                    c.id, c.title, c.messages, c.tokens, c.cost_usd, c.updated_at
                                )
                            })
                            .collect();
                        format!("{}\n{}", locale.t("conv.header"), rows.join("\n"))
                    }
                };
                sender.send(Msg::Note(note));
            }
            ConvCommand::Show(id) => match crate::agent::conversation::markdown(store, &id).await {
                Ok(Some(text)) => sender.send(Msg::Note(text)),
                Ok(None) => sender.send(missing(&id)),
                Err(e) => sender.send(Msg::Error(e.to_string())),
            },
            ConvCommand::Load(id) => match store.conversation_messages(&id).await {
                Err(e) => sender.send(Msg::Error(format!("cannot read conversation {id}: {e}"))),
                Ok(None) => sender.send(missing(&id)),
                Ok(Some(messages)) => {
                    if let Ok(mut c) = current.lock() {
                        *c = Some(id.clone());
                    }
                    sender
                        .send(Msg::ConversationLoaded(entries(&locale.tf("conv.continued", &[("id", &id)]), messages)));
                }
            },
            ConvCommand::Rename(id, title) => match store.rename_conversation(&id, &title).await {
                Ok(true) => sender.send(Msg::Note(locale.tf("conv.renamed", &[("id", &id), ("title", &title)]))),
                Ok(false) => sender.send(missing(&id)),
                Err(e) => sender.send(Msg::Error(e.to_string())),
            },
            ConvCommand::Delete(id) => match store.delete_conversation(&id).await {
                Ok(true) => {
                    if let Ok(mut c) = current.lock()
                        && c.as_deref() == Some(id.as_str())
                    {
                        *c = None;
                    }
                    sender.send(Msg::Note(locale.tf("conv.deleted", &[("id", &id)])));
                }
                Ok(false) => sender.send(missing(&id)),
                Err(e) => sender.send(Msg::Error(e.to_string())),
            },
            ConvCommand::Export(id, path) => match crate::agent::conversation::markdown(store, &id).await {
                Ok(Some(text)) => match crate::home::write_private(std::path::Path::new(&path), text.as_bytes()) {
                    Ok(()) => sender.send(Msg::Note(locale.tf("conv.exported", &[("id", &id), ("path", &path)]))),
                    Err(e) => sender.send(Msg::Error(format!("cannot write {path}: {e}"))),
                },
                Ok(None) => sender.send(missing(&id)),
                Err(e) => sender.send(Msg::Error(e.to_string())),
            },
        }
    });
}

/// `/report [FILE]`: this console session's incident report as Markdown, written to FILE (default
/// `MERLYA_HOME/reports/SESSION.md`, 0600).
pub(super) fn report(services: &Services, path: Option<String>) {
    let (ctx, sender, locale) = (services.ctx.clone(), services.sender.clone(), services.locale());
    tokio::spawn(async move {
        let scope = crate::report::Scope { session: Some(ctx.session_id.clone()), since: None };
        let report = match crate::report::build(&ctx.store, &scope).await {
            Ok(report) => report,
            Err(e) => return sender.send(Msg::Error(e.to_string())),
        };
        let path = match path {
            Some(path) => std::path::PathBuf::from(path),
            None => {
                let dir = ctx.home.root().join("reports");
                if let Err(e) = crate::home::create_private_dir(&dir) {
                    return sender.send(Msg::Error(format!("cannot create {}: {e}", dir.display())));
                }
                dir.join(format!("{}.md", ctx.session_id))
            }
        };
        match crate::home::write_private(&path, crate::report::markdown(&report).as_bytes()) {
            Ok(()) => sender.send(Msg::Note(locale.tf(
                "report.written",
                &[("path", &path.display().to_string()), ("events", &report.timeline.len().to_string())],
            ))),
            Err(e) => sender.send(Msg::Error(format!("cannot write {}: {e}", path.display()))),
        }
    });
}

/// The chat entries of a stored conversation under a `heading` note (tool calls as notes).
fn entries(heading: &str, messages: Vec<(String, String)>) -> Vec<ChatEntry> {
    let mut entries = vec![ChatEntry::new(ChatRole::System, heading.to_string())];
    entries.extend(messages.into_iter().map(|(role, content)| {
        let role = match role.as_str() {
            "user" => ChatRole::User,
            "tool" => ChatRole::System,
            _ => ChatRole::Assistant,
        };
        ChatEntry::new(role, content)
    }));
    entries
}
