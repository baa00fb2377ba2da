//! `merlya config path|show|init`.

use clap::Subcommand;
use color_eyre::eyre::{Result, WrapErr, bail, eyre};

use super::EXIT_OK;
use super::lang::{t, tf};
use crate::config::{Config, DEFAULT_CONFIG_YAML};
use crate::home::MerlyaHome;

#[derive(Debug, Subcommand)]
#[command(defer = true)]
pub enum ConfigCommand {
    /// Print the path of config.yaml.
    Path,
    /// Print the effective configuration (file + environment overrides).
    Show,
    /// Set one key, e.g. `merlya config set model.brain openai/gpt-4o` (validated before writing).
    Set {
        /// SECTION.KEY
        key: String,
        value: String,
    },
    /// Write a commented config.yaml with the defaults.
    Init {
        /// Overwrite an existing file.
        #[arg(long)]
        force: bool,
    },
}

pub fn run(home: MerlyaHome, cmd: ConfigCommand) -> Result<u8> {
    let path = home.config_file();
    match cmd {
        ConfigCommand::Path => println!("{}", path.display()),
        ConfigCommand::Show => {
            let config = Config::load(&path)?;
            print!("{}", yaml_serde::to_string(&config).wrap_err_with(|| t("cli.config.cannot_render"))?);
        }
        ConfigCommand::Set { key, value } => {
            // Refuse what the console could not start with, naming what it accepts.
            crate::app::check_ui_setting(&home, &key, &value).map_err(|e| eyre!("{}: {e}", path.display()))?;
            crate::config::set_value(&path, &key, &value)?;
            let path = path.display().to_string();
            println!("{}", tf("cli.config.set", &[("key", &key), ("value", &value), ("path", &path)]));
        }
        ConfigCommand::Init { force } => {
            if path.exists() && !force {
                bail!("{}", tf("cli.config.exists", &[("path", &path.display().to_string())]));
            }
            home.ensure()?;
            std::fs::write(&path, DEFAULT_CONFIG_YAML)
                .wrap_err_with(|| tf("cli.cannot_write", &[("path", &path.display().to_string())]))?;
            println!("{}", tf("cli.config.wrote", &[("path", &path.display().to_string())]));
        }
    }
    Ok(EXIT_OK)
}
