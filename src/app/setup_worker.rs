//! `/setup`'s work, on workers: asking a provider for its models, saving the answers (the key in the
//! keyring as the model client will look for it, the model in config.yaml, the client swapped in at
//! once), and the inventories found on this machine (`~/.ssh/config`, `known_hosts`, `/etc/hosts`,
//! Ansible inventories), each shown as a preview before anything is written; a host already in the
//! inventory is never replaced. The questions themselves are [`super::setup::SetupFlow`], in the update.

use std::path::PathBuf;
use std::sync::Arc;

use super::msg::Msg;
use super::setup::{KeyPlace, SecretText, SetupChoice, SetupProvider, SetupSaved};
use super::workers::Services;
use crate::i18n::Text;
use crate::llm::LlmClient;
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

/// Asks the provider at `base_url` for its models; the answer (or why there is none) comes back as
/// [`Msg::SetupModels`].
pub(super) fn list_models(services: &Services, provider: SetupProvider, base_url: String, key: Option<SecretText>) {
    let sender = services.sender.clone();
    tokio::spawn(async move {
        let key = key.map(|k| k.0);
        let result = crate::llm::client::list_models(provider.name(), &base_url, key.as_deref())
            .await
            .map_err(|e| e.to_string().chars().take(300).collect::<String>());
        sender.send(Msg::SetupModels { base_url, result });
    });
}

/// Stores the key, checks the model client builds, writes the model to config.yaml and puts the client
/// in use; reports where the key went as the keyring layer says ([`Msg::SetupSaved`]).
pub(super) fn save(services: &Services, choice: SetupChoice) {
    let (ctx, sender) = (services.ctx.clone(), services.sender.clone());
    let (model_config, llm) = (services.model_config.clone(), services.llm.clone());
    tokio::task::spawn_blocking(move || {
        let saved = save_now(&ctx, &model_config, &llm, &choice);
        sender.send(Msg::SetupSaved(saved));
    });
}

fn save_now(
    ctx: &crate::context::Context,
    model_config: &std::sync::RwLock<crate::config::ModelConfig>,
    llm: &std::sync::RwLock<Option<Arc<LlmClient>>>,
    choice: &SetupChoice,
) -> Result<SetupSaved, String> {
    let secrets = ctx.secrets();
    let key = match &choice.key {
        Some(key) => {
            let name = crate::llm::client::key_secret_name(choice.provider.name(), choice.base_url.as_deref());
            secrets.set(&name, &key.0).map_err(|e| e.to_string())?;
            // A custom key is kept with the address it was given for: the client sends it nowhere else.
            if let (true, Some(url)) = (name == "llm:custom:api_key", &choice.base_url) {
                secrets.set(crate::llm::client::CUSTOM_KEY_URL, url).map_err(|e| e.to_string())?;
            }
            KeyPlace::Stored { name, store: secrets.store() }
        }
        None => KeyPlace::NotGiven,
    };
    let spec = choice.spec();
    let mut config = model_config.read().map(|c| c.clone()).map_err(|e| e.to_string())?;
    config.brain = Some(spec.clone());
    config.fast = Some(spec.clone());
    config.base_url = choice.base_url.clone();
    // Setup decides where the key comes from: a variable named earlier (model.api_key_env) would win
    // over the key just typed and be sent to the address just chosen.
    config.api_key_env = None;
    // The client first: nothing is written for a model that cannot be used.
    let client = LlmClient::from_config(&config, secrets.as_ref()).map_err(|e| e.to_string())?;
    let base_url = choice.base_url.clone();
    crate::config::edit(&ctx.home.config_file(), "model.brain", |root| {
        let key = |k: &str| yaml_serde::Value::String(k.to_string());
        let section = root.entry(key("model")).or_insert_with(|| yaml_serde::Value::Mapping(Default::default()));
        let model = section.as_mapping_mut().ok_or("model is not a mapping")?;
        model.insert(key("brain"), key(&spec));
        model.insert(key("fast"), key(&spec));
        match &base_url {
            Some(url) => model.insert(key("base_url"), key(url)),
            None => model.remove(key("base_url")),
        };
        model.remove(key("api_key_env"));
        Ok(())
    })
    .map_err(|e| e.to_string())?;
    if let Ok(mut current) = model_config.write() {
        *current = config;
    }
    if let Ok(mut llm) = llm.write() {
        *llm = Some(Arc::new(client));
    }
    Ok(SetupSaved { spec, key })
}

/// The inventories found here, each previewed before it is written; then the setup is done.
pub(super) fn import(services: &Services) {
    let prompter: Arc<dyn Prompter> = services.prompter.clone();
    let (ctx, executor, sender) = (services.ctx.clone(), services.executor.clone(), services.sender.clone());
    let locale = services.locale();
    tokio::spawn(async move {
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
