//! The credential resolver of the provisioner (issue 26): the variables a provider needs
//! (`AWS_SECRET_ACCESS_KEY`, `GOOGLE_APPLICATION_CREDENTIALS`, `TF_VAR_token`…) read from the
//! sources `provision.credentials` names — the keyring, merlya's environment, a file — at the
//! moment a tool runs. Values go only into that tool's environment: every one is masked in what
//! the tool prints, and none is kept in the database, the audit log or a model request (a run's
//! record keeps no credential at all).

use std::collections::BTreeMap;
use std::sync::Arc;

pub use crate::config::provision::read_credential;
use crate::pipeline::vars::Vars;
use crate::secrets::SecretSource;

/// The configured sources, and the keyring they may name.
#[derive(Clone)]
pub struct Credentials {
    sources: BTreeMap<String, BTreeMap<String, String>>,
    secrets: Arc<dyn SecretSource>,
}

impl Credentials {
    /// `provision.credentials` of `config`, keyring references read through `secrets`.
    pub fn new(config: &crate::config::provision::ProvisionConfig, secrets: Arc<dyn SecretSource>) -> Self {
        Self { sources: config.credentials.clone(), secrets }
    }

    /// The sources of `ctx`'s config, through its keyring.
    pub fn of(ctx: &crate::context::Context) -> Self {
        Self::new(&ctx.config.provision, ctx.secrets())
    }

    /// No credentials (a test, a provider that needs none).
    pub fn none() -> Self {
        Self { sources: BTreeMap::new(), secrets: Arc::new(crate::secrets::Secrets::memory()) }
    }

    /// The variables of `provider`, read now; an error names the config field and what is missing.
    pub fn for_provider(&self, provider: &str) -> Result<Vars, String> {
        let Some(variables) = self.sources.get(provider) else { return Ok(Vars::default()) };
        let mut pairs = Vec::new();
        for (name, text) in variables {
            let field = format!("provision.credentials.{provider}.{name}");
            pairs.push((name.clone(), read_credential(text, &field, self.secrets.as_ref())?));
        }
        Ok(Vars::new(pairs))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Keyring;
    impl SecretSource for Keyring {
        fn lookup(&self, name: &str) -> Option<String> {
            (name == "aws:prod:secret").then(|| "wJalr-keyring-value".to_string())
        }
    }

    #[test]
    fn each_source_is_read_and_a_missing_one_names_its_field() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("token");
        std::fs::write(&file, "from-a-file\n").unwrap();
        // SAFETY: a variable only this test reads.
        unsafe { std::env::set_var("MERLYA_TEST_CREDENTIAL_42", "from-the-env") };
        let config = crate::config::provision::ProvisionConfig {
            credentials: BTreeMap::from([(
                "aws".to_string(),
                BTreeMap::from([
                    ("AWS_SECRET_ACCESS_KEY".to_string(), "@aws:prod:secret".to_string()),
                    ("AWS_ACCESS_KEY_ID".to_string(), "env:MERLYA_TEST_CREDENTIAL_42".to_string()),
                    ("TF_VAR_token".to_string(), format!("file:{}", file.display())),
                ]),
            )]),
        };
        let credentials = Credentials::new(&config, Arc::new(Keyring));
        let vars = credentials.for_provider("aws").unwrap();
        let pairs: Vec<(&str, &str)> = vars.iter().collect();
        assert_eq!(
            pairs,
            [
                ("AWS_ACCESS_KEY_ID", "from-the-env"),
                ("AWS_SECRET_ACCESS_KEY", "wJalr-keyring-value"),
                ("TF_VAR_token", "from-a-file")
            ]
        );
        assert!(credentials.for_provider("gcp").unwrap().is_empty(), "a provider with none needs none");
        let mut broken = config.clone();
        broken.credentials.get_mut("aws").unwrap().insert("X".into(), "@aws:prod:nope".into());
        let e = Credentials::new(&broken, Arc::new(Keyring)).for_provider("aws").unwrap_err();
        assert!(e.contains("provision.credentials.aws.X") && e.contains("aws:prod:nope"), "{e}");
        broken.credentials.get_mut("aws").unwrap().insert("X".into(), "env:MERLYA_TEST_UNSET_42".into());
        let e = Credentials::new(&broken, Arc::new(Keyring)).for_provider("aws").unwrap_err();
        assert!(e.contains("MERLYA_TEST_UNSET_42"), "{e}");
    }
}
