//! `/setup`'s model questions as a state machine the update applies: the language, a provider, its
//! base URL (defaulted, editable), its key (hidden, skippable), then a model offered from the
//! provider's own list when it answers (typed by hand when it does not, saying why). Nothing here does
//! I/O: listing the models and saving the answers are effects carried out by `setup_worker`.

use crate::secrets::SecretStore;

/// The kinds of model server `/setup` offers; each is a provider name of `model.brain`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetupProvider {
    /// OpenAI's API.
    OpenAi,
    /// Anthropic's Messages API.
    Anthropic,
    /// OpenRouter (OpenAI-compatible).
    OpenRouter,
    /// A local Ollama (OpenAI-compatible, no key).
    Ollama,
    /// Any other OpenAI-compatible server: a gateway, vLLM, LiteLLM.
    Compatible,
}

impl SetupProvider {
    /// In the order offered.
    pub const ALL: [Self; 5] = [Self::OpenAi, Self::Anthropic, Self::OpenRouter, Self::Ollama, Self::Compatible];

    /// The provider's name in `model.brain` (`openai/gpt-4o`).
    pub fn name(self) -> &'static str {
        match self {
            Self::OpenAi => "openai",
            Self::Anthropic => "anthropic",
            Self::OpenRouter => "openrouter",
            Self::Ollama => "ollama",
            Self::Compatible => "openai-compatible",
        }
    }

    /// The locale key of its one-line description.
    pub fn label_key(self) -> &'static str {
        match self {
            Self::OpenAi => "setup.p_openai",
            Self::Anthropic => "setup.p_anthropic",
            Self::OpenRouter => "setup.p_openrouter",
            Self::Ollama => "setup.p_ollama",
            Self::Compatible => "setup.p_compatible",
        }
    }

    /// Where it answers unless told otherwise (empty: it has no default, the person types one).
    pub fn default_base_url(self) -> &'static str {
        crate::llm::client::default_base_url(self.name()).unwrap_or_default()
    }

    /// Whether a server of this kind usually runs without a key (the key question says it may be skipped).
    pub fn keyless(self) -> bool {
        matches!(self, Self::Ollama | Self::Compatible)
    }
}

/// A key typed at setup: never drawn, never in a debug print.
#[derive(Clone, PartialEq, Eq)]
pub struct SecretText(pub String);

impl std::fmt::Debug for SecretText {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SecretText(***)")
    }
}

/// The question on screen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetupStep {
    /// The console's language, from the list.
    Language,
    /// The kind of model server, from the list.
    Provider,
    /// Its base URL, prefilled with the provider's default.
    BaseUrl,
    /// Its key, hidden; empty skips.
    Key,
    /// The model: picked from the provider's list, or typed.
    Model,
    /// The answers are being saved.
    Saving,
}

/// What is known of the provider's model list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Listing {
    /// Asked, not answered yet.
    Waiting,
    /// The models it offers.
    Listed(Vec<String>),
    /// It could not be listed: why (the model is typed instead).
    Failed(String),
}

/// The answers, for the worker that saves them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SetupChoice {
    /// The kind of server.
    pub provider: SetupProvider,
    /// Its base URL when it is not the provider's default (`None`: the default, not written).
    pub base_url: Option<String>,
    /// The key to store, if one was typed.
    pub key: Option<SecretText>,
    /// The model's name at the provider (`gpt-4o`, `llama3.1`).
    pub model: String,
}

impl SetupChoice {
    /// `provider/model`, as `model.brain` holds it.
    pub fn spec(&self) -> String {
        format!("{}/{}", self.provider.name(), self.model)
    }
}

/// Where the key went, as the keyring layer reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyPlace {
    /// No key typed (Ollama, or one read from the environment).
    NotGiven,
    /// Stored under `name` in `store`.
    Stored { name: String, store: SecretStore },
}

/// A setup saved and in use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SetupSaved {
    /// `provider/model` now in `model.brain` and `model.fast`.
    pub spec: String,
    /// Where the key is kept.
    pub key: KeyPlace,
}

/// The questions being asked, and the answers so far.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SetupFlow {
    /// The question on screen.
    pub step: SetupStep,
    /// The highlighted row of a list (languages, providers, models).
    pub cursor: usize,
    /// The provider chosen.
    pub provider: SetupProvider,
    /// The base URL chosen.
    pub base_url: String,
    /// The key typed, if any.
    pub key: Option<SecretText>,
    /// What is being typed at this step (the base URL, the key, a model name or a filter of the list).
    pub typed: String,
    /// The provider's model list.
    pub listing: Listing,
    /// Why the last answer was refused (locale key).
    pub error: Option<&'static str>,
}

/// What an answer leads to, for the update to turn into effects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Next {
    /// Nothing outside the flow.
    Stay,
    /// Switch the console to this language.
    Language(String),
    /// Ask the provider for its models.
    ListModels { provider: SetupProvider, base_url: String, key: Option<SecretText> },
    /// Save the answers.
    Save(SetupChoice),
    /// The model questions were left (Esc): nothing saved.
    Skipped,
}

impl SetupFlow {
    /// Starts at the language, its cursor on `current`.
    pub fn new(current: &str) -> Self {
        let cursor = crate::i18n::languages().iter().position(|c| *c == current).unwrap_or(0);
        Self {
            step: SetupStep::Language,
            cursor,
            provider: SetupProvider::OpenAi,
            base_url: String::new(),
            key: None,
            typed: String::new(),
            listing: Listing::Waiting,
            error: None,
        }
    }

    /// The models offered: the provider's list, narrowed to those containing what is typed.
    pub fn offered(&self) -> Vec<&str> {
        let Listing::Listed(models) = &self.listing else { return Vec::new() };
        let needle = self.typed.trim().to_lowercase();
        models.iter().map(String::as_str).filter(|m| m.to_lowercase().contains(&needle)).collect()
    }

    /// Rows of the list on screen (0 when the step types text).
    fn rows(&self) -> usize {
        match self.step {
            SetupStep::Language => crate::i18n::languages().len(),
            SetupStep::Provider => SetupProvider::ALL.len(),
            SetupStep::Model => self.offered().len(),
            _ => 0,
        }
    }

    /// Moves the highlighted row by `delta`, within the list.
    pub fn move_cursor(&mut self, delta: isize) {
        let last = self.rows().saturating_sub(1);
        self.cursor = self.cursor.saturating_add_signed(delta).min(last);
    }

    /// A character typed (lists other than the model's ignore it).
    pub fn type_char(&mut self, c: char) {
        if matches!(self.step, SetupStep::BaseUrl | SetupStep::Key | SetupStep::Model) {
            self.typed.push(c);
            self.cursor = 0;
            self.error = None;
        }
    }

    /// Backspace.
    pub fn backspace(&mut self) {
        self.typed.pop();
        self.cursor = 0;
    }

    /// Ctrl-U: clears what is typed.
    pub fn clear(&mut self) {
        self.typed.clear();
        self.cursor = 0;
    }

    /// Esc: the language is kept as it is; any model question leaves the model unchanged.
    pub fn escape(&mut self) -> Next {
        match self.step {
            SetupStep::Language => {
                self.go_to_providers();
                Next::Stay
            }
            SetupStep::Saving => Next::Stay,
            _ => Next::Skipped,
        }
    }

    /// Ctrl-C: leaves the model questions whatever the step (the language already chosen stays).
    pub fn abandon(&mut self) -> Next {
        if self.step == SetupStep::Saving { Next::Stay } else { Next::Skipped }
    }

    /// The provider's models (or why they could not be listed), for the base URL they were asked of.
    pub fn models_listed(&mut self, base_url: &str, result: Result<Vec<String>, String>) {
        if self.step != SetupStep::Model || self.base_url != base_url {
            return;
        }
        self.listing = match result {
            Ok(models) if models.is_empty() => Listing::Failed(String::new()),
            Ok(models) => Listing::Listed(models),
            Err(reason) => Listing::Failed(reason),
        };
        self.cursor = 0;
    }

    fn go_to_providers(&mut self) {
        self.step = SetupStep::Provider;
        self.cursor = 0;
    }

    /// Enter: takes the answer on screen and moves on.
    pub fn submit(&mut self) -> Next {
        self.error = None;
        match self.step {
            SetupStep::Language => {
                let code = crate::i18n::languages().get(self.cursor).map(|c| c.to_string());
                self.go_to_providers();
                code.map_or(Next::Stay, Next::Language)
            }
            SetupStep::Provider => {
                self.provider = SetupProvider::ALL.get(self.cursor).copied().unwrap_or(SetupProvider::OpenAi);
                self.step = SetupStep::BaseUrl;
                self.typed = self.provider.default_base_url().to_string();
                Next::Stay
            }
            SetupStep::BaseUrl => {
                let url = self.typed.trim().trim_end_matches('/').to_string();
                if !(url.starts_with("http://") || url.starts_with("https://")) {
                    self.error = Some("setup.err_url");
                    return Next::Stay;
                }
                self.base_url = url;
                self.step = SetupStep::Key;
                self.typed.clear();
                Next::Stay
            }
            SetupStep::Key => {
                let key = std::mem::take(&mut self.typed);
                self.key = Some(key.trim().to_string()).filter(|k| !k.is_empty()).map(SecretText);
                self.step = SetupStep::Model;
                self.listing = Listing::Waiting;
                self.cursor = 0;
                Next::ListModels { provider: self.provider, base_url: self.base_url.clone(), key: self.key.clone() }
            }
            SetupStep::Model => {
                let picked = match self.offered().get(self.cursor) {
                    Some(model) => model.to_string(),
                    None => self.typed.trim().to_string(),
                };
                if picked.is_empty() || picked.chars().any(char::is_whitespace) {
                    self.error = Some("setup.err_model");
                    return Next::Stay;
                }
                self.step = SetupStep::Saving;
                let default = self.provider.default_base_url();
                let base_url = (self.base_url != default.trim_end_matches('/')).then(|| self.base_url.clone());
                Next::Save(SetupChoice { provider: self.provider, base_url, key: self.key.clone(), model: picked })
            }
            SetupStep::Saving => Next::Stay,
        }
    }
}
