//! `merlya config path|show|init`.

use clap::Subcommand;
use color_eyre::eyre::{Result, WrapErr, bail, eyre};

use super::EXIT_OK;
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
            print!("{}", yaml_serde::to_string(&config).wrap_err("cannot render the configuration")?);
        }
        ConfigCommand::Set { key, value } => {
            // Refuse what the console could not start with, naming what it accepts.
            crate::app::check_ui_setting(&home, &key, &value).map_err(|e| eyre!("{}: {e}", path.display()))?;
            crate::config::set_value(&path, &key, &value)?;
            println!("{key} = {value} in {}", path.display());
        }
        ConfigCommand::Init { force } => {
            if path.exists() && !force {
                bail!("{} already exists (use --force to overwrite)", path.display());
            }
            home.ensure()?;
            std::fs::write(&path, DEFAULT_CONFIG_YAML).wrap_err_with(|| format!("cannot write {}", path.display()))?;
            println!("wrote {}", path.display());
        }
    }
    Ok(EXIT_OK)
}
