//! `merlya secret set|get|rm|list`: values are read from the terminal or
//! stdin, never from the command line (argv is visible to every local user).

use std::io::{IsTerminal, Read};

use clap::Subcommand;
use color_eyre::eyre::{Result, WrapErr, bail};

use super::lang::{t, tf};
use super::{EXIT_ERROR, EXIT_OK, ListFormat, table};
use crate::context::Context;

#[derive(Debug, Subcommand)]
#[command(defer = true)]
pub enum SecretCommand {
    /// Store a secret; the value is read from the terminal (hidden) or stdin.
    Set {
        /// Name, e.g. sudo:web01:password (used as @sudo:web01:password in commands).
        name: String,
    },
    /// Print a secret's value.
    Get { name: String },
    /// Delete a secret.
    Rm { name: String },
    /// List secret names (never values).
    List {
        #[arg(long, value_enum, default_value_t)]
        format: ListFormat,
    },
}

pub async fn run(ctx: &Context, cmd: SecretCommand) -> Result<u8> {
    let secrets = ctx.secrets();
    // Before asking for a value that could not be kept.
    if let (Some(e), false) = (secrets.unavailable(), matches!(cmd, SecretCommand::List { .. })) {
        return Err(e.into());
    }
    match cmd {
        SecretCommand::Set { name } => {
            crate::secrets::validate_name(&name)?;
            let value = read_value(&name)?;
            if value.is_empty() {
                bail!("{}", t("cli.secret.empty"));
            }
            secrets.set(&name, &value)?;
            ctx.store.index_secret(&name, secrets.backend_name()).await?;
            if !secrets.is_persistent() {
                eprintln!("{}", tf("cli.secret.not_kept", &[("name", &name)]));
            }
            println!("{}", tf("cli.secret.stored", &[("name", &name), ("backend", secrets.backend_name())]));
        }
        SecretCommand::Get { name } => match secrets.get(&name)? {
            Some(v) => println!("{v}"),
            None => {
                eprintln!("{}", tf("cli.secret.none", &[("name", &name), ("backend", secrets.backend_name())]));
                return Ok(EXIT_ERROR);
            }
        },
        SecretCommand::Rm { name } => {
            let existed = secrets.remove(&name)?;
            ctx.store.unindex_secret(&name).await?;
            println!("{}", tf(if existed { "cli.secret.removed" } else { "cli.secret.no_such" }, &[("name", &name)]));
        }
        SecretCommand::List { format } => {
            let names = ctx.store.secret_names().await?;
            match format {
                ListFormat::Json => println!("{}", serde_json::to_string_pretty(&names)?),
                ListFormat::Table => {
                    let rows: Vec<Vec<String>> =
                        names.iter().map(|n| vec![n.name.clone(), n.backend.clone(), n.updated_at.clone()]).collect();
                    let headers = ["cli.h.name", "cli.h.backend", "cli.h.updated"].map(t);
                    print!("{}", table::render(&headers.each_ref().map(String::as_str), &rows));
                }
            }
        }
    }
    Ok(EXIT_OK)
}

fn read_value(name: &str) -> Result<String> {
    if std::io::stdin().is_terminal() {
        return rpassword::prompt_password(tf("cli.secret.prompt", &[("name", name)]))
            .wrap_err_with(|| t("cli.no_terminal"));
    }
    let mut value = String::new();
    std::io::stdin().read_to_string(&mut value).wrap_err_with(|| t("cli.secret.no_stdin"))?;
    Ok(value.trim_end_matches(['\n', '\r']).to_string())
}
