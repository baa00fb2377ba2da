//! `/setup`: the first-run setup, re-runnable. Questions in the console's
//! modals, each skippable (Enter on an empty answer, Esc): the language, a
//! model provider with its key (stored in the OS keyring as
//! `llm:PROVIDER:api_key`, never in the configuration), and the hosts of the
//! inventories found on this machine (`~/.ssh/config`, `known_hosts`,
//! `/etc/hosts`, Ansible inventories), each shown as a preview before
//! anything is written; a host already in the inventory is never replaced. Settings go through the same command lines a person
//! would type (`/language`, `/model`), so there is one path for each.

use std::path::PathBuf;
use std::sync::Arc;

use super::msg::Msg;
use super::workers::Services;
use crate::i18n::Text;
use crate::prompt::Prompter;

/// Where inventories are looked for, in order.
fn candidates() -> Vec<PathBuf> {
    let mut paths = Vec::new();
    if let Some(home) = dirs::home_dir() {
        paths.push(home.join(".ssh/config"));
        paths.push(home.join(".ssh/known_hosts"));
    }
    paths.push(PathBuf::from("/etc/hosts"));
    paths.push(PathBuf::from("/etc/ansible/hosts"));
    if let Ok(cwd) = std::env::current_dir() {
        for name in ["inventory", "inventory.ini", "inventory.yml", "inventory.yaml", "hosts.ini"] {
            paths.push(cwd.join(name));
        }
    }
    paths
}

/// The providers offered: (name, brain, fast, needs a key). Each uses its own default endpoint (a
/// `model.base_url` left from before is removed, so a key never goes where it was not meant to).
const PROVIDERS: [(&str, &str, &str, bool); 3] = [
    ("openai", "openai/gpt-4o", "openai/gpt-4o-mini", true),
    ("anthropic", "anthropic/claude-sonnet-4-5", "anthropic/claude-haiku-4-5", true),
    ("ollama", "ollama/llama3.1", "ollama/llama3.1", false),
];

/// Removes `model.base_url` from the configuration file (a provider chosen here uses its own).
fn forget_base_url(path: &std::path::Path) -> Result<(), String> {
    crate::config::edit(path, "model.base_url", |root| {
        let key = |k: &str| yaml_serde::Value::String(k.to_string());
        if let Some(model) = root.get_mut(key("model")).and_then(|m| m.as_mapping_mut()) {
            model.remove(key("base_url"));
        }
        Ok(())
    })
    .map(|_| ())
    .map_err(|e| e.to_string())
}

/// Runs the setup questions on a worker.
pub(super) fn run(services: &Services) {
    let prompter: Arc<dyn Prompter> = services.prompter.clone();
    let (ctx, executor, sender) = (services.ctx.clone(), services.executor.clone(), services.sender.clone());
    let locale = services.locale();
    tokio::spawn(async move {
        let ask =
            |key: &'static str, args: &[(&'static str, &str)]| (Text::key("setup.title", &[]), Text::key(key, args));
        // Language.
        let (title, question) = ask("setup.language", &[("codes", &crate::i18n::languages().join(", "))]);
        if let Some(code) = prompter.ask(&title, &question).await.map(|c| c.trim().to_string())
            && !code.is_empty()
        {
            sender.send(Msg::Typed(format!("/language {code}")));
        }
        // Model provider and key.
        let names: Vec<&str> = PROVIDERS.iter().map(|p| p.0).collect();
        let (title, question) = ask("setup.provider", &[("providers", &names.join(", "))]);
        let provider = prompter.ask(&title, &question).await.map(|p| p.trim().to_ascii_lowercase()).unwrap_or_default();
        match PROVIDERS.iter().find(|p| p.0 == provider) {
            Some((name, brain, fast, needs_key)) => {
                let mut ready = true;
                if *needs_key {
                    let secret = format!("llm:{name}:api_key");
                    let (title, question) = ask("setup.key", &[("name", &secret)]);
                    match prompter.secret(&title, &question).await.filter(|k| !k.trim().is_empty()) {
                        Some(key) => {
                            if let Err(e) = ctx.secrets().set(&secret, key.trim()) {
                                sender.send(Msg::Error(locale.tf("setup.key_not_saved", &[("error", &e.to_string())])));
                                ready = false;
                            }
                        }
                        None => ready = false,
                    }
                }
                let path = ctx.home.config_file();
                if ready && path.exists() {
                    match tokio::task::spawn_blocking(move || forget_base_url(&path)).await {
                        Ok(Ok(())) => {}
                        Ok(Err(e)) => {
                            sender.send(Msg::Error(e));
                            ready = false;
                        }
                        Err(e) => {
                            sender.send(Msg::Error(e.to_string()));
                            ready = false;
                        }
                    }
                }
                if ready {
                    sender.send(Msg::Typed(format!("/model brain {brain}")));
                    sender.send(Msg::Typed(format!("/model fast {fast}")));
                } else {
                    sender.send(Msg::Note(locale.t("setup.model_skipped").to_string()));
                }
            }
            None if provider.is_empty() => {}
            // The answer is not repeated: it could be a key typed at the wrong question.
            None => sender.send(Msg::Note(locale.t("setup.unknown_provider").to_string())),
        }
        // Inventories found here, each previewed before it is written. Hosts already in the inventory
        // are left as they are: a file in the current folder must not move db01 elsewhere.
        let known: Vec<String> =
            ctx.store.list_hosts().await.map(|h| h.into_iter().map(|h| h.name).collect()).unwrap_or_default();
        let mut imported = 0usize;
        for path in candidates().into_iter().filter(|p| p.is_file()) {
            let file = path.clone();
            let read =
                tokio::task::spawn_blocking(move || crate::inventory::import::read_import_file(&file, None)).await;
            let Ok(Ok(report)) = read else { continue };
            let hosts: Vec<_> =
                report.hosts.into_iter().filter(|h| h.name != "localhost" && !known.contains(&h.name)).collect();
            if hosts.is_empty() {
                continue;
            }
            let mut preview: Vec<String> =
                hosts.iter().take(12).map(|h| format!("{} ({})", h.name, h.hostname)).collect();
            if hosts.len() > 12 {
                preview.push(locale.tf("setup.more", &[("count", &(hosts.len() - 12).to_string())]));
            }
            let shown = path.display().to_string();
            let title = Text::key("setup.import_title", &[("count", &hosts.len().to_string()), ("path", &shown)]);
            let body = Text::key("setup.import_preview", &[("hosts", &preview.join(", "))]);
            if !prompter.confirm(&title, &body).await {
                continue;
            }
            match ctx.store.upsert_hosts(&hosts).await {
                Ok((added, _)) => imported += added,
                Err(e) => sender.send(Msg::Error(e.to_string())),
            }
        }
        if imported > 0 {
            super::workers::reload_hosts(&ctx, &executor, &sender).await;
        }
        sender.send(Msg::Note(locale.tf("setup.done", &[("count", &imported.to_string())])));
    });
}
