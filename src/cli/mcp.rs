//! `merlya mcp list|tools|test|call|add|remove`: the external MCP servers.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use clap::Subcommand;
use color_eyre::eyre::{Result, WrapErr, eyre};

use super::lang::{t, tf};
use super::pipeline::key_value;
use super::{EXIT_ERROR, EXIT_OK, ListFormat};
use crate::approval::ApprovalGate;
use crate::config::mcp::{McpServerConfig, set_server};
use crate::context::Context;
use crate::home::MerlyaHome;
use crate::mcp::call::{CallEnv, call};
use crate::mcp::client::McpClients;
use crate::mcp::{McpError, split_qualified};
use crate::mcp_serve::http::serve_http;
use crate::mcp_serve::server::Served;

/// Exit code of a call that was refused (not approved, not read-only for the caller).
const EXIT_REFUSED: u8 = 3;

#[derive(Debug, Subcommand)]
#[command(defer = true)]
pub enum McpCommand {
    /// The configured servers (not started).
    List {
        #[arg(long, value_enum, default_value_t)]
        format: ListFormat,
    },
    /// Start a server and list its tools (read-only ones marked).
    Tools {
        /// Server name.
        server: String,
        #[arg(long, value_enum, default_value_t)]
        format: ListFormat,
    },
    /// Start a server, complete the handshake and count its tools.
    Test {
        /// Server name.
        server: String,
    },
    /// Call SERVER.TOOL: a tool not annotated read-only needs an approval (prompt, or --yes).
    Call {
        /// SERVER.TOOL
        tool: String,
        /// Arguments as a JSON object.
        #[arg(long, default_value = "{}")]
        args: String,
        /// Approve a change without asking.
        #[arg(long)]
        yes: bool,
        #[arg(long, value_enum, default_value_t)]
        format: ListFormat,
    },
    /// Add (or replace) a server in config.yaml: `--command PROG [--arg A]…` or `--url URL`.
    Add {
        /// Server name (letters, digits, -, _).
        name: String,
        /// Program of a stdio server.
        #[arg(long, conflicts_with = "url")]
        command: Option<String>,
        /// One argument of the program (repeat).
        #[arg(long = "arg", allow_hyphen_values = true)]
        args: Vec<String>,
        /// Streamable HTTP endpoint.
        #[arg(long)]
        url: Option<String>,
        /// KEY=VALUE added to the server's environment (`${VAR}`, `@service:host:field` kept as written).
        #[arg(long = "env", value_parser = key_value)]
        env: Vec<(String, String)>,
        /// KEY=VALUE HTTP header (references kept as written).
        #[arg(long = "header", value_parser = key_value)]
        headers: Vec<(String, String)>,
        /// Working folder of a stdio server.
        #[arg(long)]
        cwd: Option<PathBuf>,
        /// Seconds a call may take.
        #[arg(long)]
        timeout: Option<u64>,
    },
    /// Remove a server from config.yaml.
    Remove {
        /// Server name.
        name: String,
    },
    /// Serve merlya's agent to MCP clients: stdio (headless), or streamable HTTP with --http.
    Serve {
        /// Streamable HTTP on this address; clients send a bearer token (--token-env, or one generated into MERLYA_HOME/mcp-http.token).
        #[arg(long)]
        http: Option<std::net::SocketAddr>,
        /// Environment variable holding the bearer token HTTP clients must send.
        #[arg(long)]
        token_env: Option<String>,
        /// Approve the served agent's changes without asking (otherwise they are refused).
        #[arg(long)]
        yes: bool,
    },
}

impl McpCommand {
    /// Whether the command only edits the configuration (no database, no server).
    pub fn edits_config(&self) -> bool {
        matches!(self, McpCommand::Add { .. } | McpCommand::Remove { .. })
    }
}

/// `add` and `remove`: the configuration file only.
pub fn edit(home: &MerlyaHome, cmd: McpCommand) -> Result<u8> {
    let path = home.config_file();
    match cmd {
        McpCommand::Add { name, command, args, url, env, headers, cwd, timeout } => {
            let server = McpServerConfig {
                command,
                args,
                url,
                env: env.into_iter().collect(),
                headers: headers.into_iter().collect(),
                cwd,
                timeout,
                ..McpServerConfig::default()
            };
            home.ensure()?;
            set_server(&path, &name, Some(&server))?;
            println!("{}", tf("cli.mcp.added", &[("name", &name), ("path", &path.display().to_string())]));
        }
        McpCommand::Remove { name } => {
            set_server(&path, &name, None)?;
            println!("{}", tf("cli.mcp.removed", &[("name", &name), ("path", &path.display().to_string())]));
        }
        _ => return Err(eyre!("not a configuration edit")),
    }
    Ok(EXIT_OK)
}

/// The commands that talk to servers.
pub async fn run(ctx: &Context, cmd: McpCommand) -> Result<u8> {
    let clients = Arc::new(McpClients::new(ctx.config.mcp.servers.clone(), ctx.secrets()));
    let code = run_with(ctx, &clients, cmd).await;
    clients.shutdown().await;
    code
}

async fn run_with(ctx: &Context, clients: &Arc<McpClients>, cmd: McpCommand) -> Result<u8> {
    match cmd {
        McpCommand::List { format } => {
            list(clients.configured(), format);
            Ok(EXIT_OK)
        }
        McpCommand::Tools { server, format } => {
            let tools = clients.tools(&server).await?;
            if format == ListFormat::Json {
                println!("{}", serde_json::to_string_pretty(&tools)?);
            } else {
                for tool in &tools {
                    let mark = if tool.read_only { "read-only" } else { "change" };
                    // Names and descriptions are the server's words: shown, never interpreted, by the terminal.
                    let name = crate::term_safe::visible_line(&tool.qualified()).into_owned();
                    println!("{name:<40} {mark:<9} {}", crate::term_safe::visible_line(first_line(&tool.description)));
                }
            }
            Ok(EXIT_OK)
        }
        McpCommand::Test { server } => {
            let tools = clients.tools(&server).await?;
            let read_only = tools.iter().filter(|t| t.read_only).count();
            let (count, read_only) = (tools.len().to_string(), read_only.to_string());
            println!("{}", tf("cli.mcp.test_ok", &[("server", &server), ("count", &count), ("read_only", &read_only)]));
            Ok(EXIT_OK)
        }
        McpCommand::Call { tool, args, yes, format } => {
            let (server, name) =
                split_qualified(&tool).ok_or_else(|| eyre!("{}", tf("cli.mcp.bad_tool", &[("tool", &tool)])))?;
            let arguments = match serde_json::from_str::<serde_json::Value>(&args) {
                Ok(serde_json::Value::Object(map)) => map,
                Ok(_) => return Err(eyre!("{}", t("cli.mcp.args_not_object"))),
                Err(e) => return Err(eyre!("{}", tf("cli.mcp.args_not_json", &[("error", &e.to_string())]))),
            };
            let super::Asking { approver, .. } = super::Asking::detect(yes);
            let gate = ApprovalGate::with_policy(approver, ctx.store.clone(), &ctx.config);
            let user = crate::ssh::target::local_user();
            let env = CallEnv::of_context(ctx, clients.clone(), gate, user, false, super::cancel_on_signals());
            match call(&env, server, name, arguments).await {
                Ok(result) => {
                    if format == ListFormat::Json {
                        println!("{}", serde_json::to_string_pretty(&result)?);
                    } else {
                        println!("{}", crate::term_safe::visible(&result.text));
                    }
                    Ok(if result.is_error { EXIT_ERROR } else { EXIT_OK })
                }
                Err(e @ McpError::Refused { .. }) => {
                    eprintln!("{e}");
                    Ok(EXIT_REFUSED)
                }
                Err(e) => Err(e.into()),
            }
        }
        McpCommand::Serve { http, token_env, yes } => serve(ctx, clients, http, token_env, yes).await,
        McpCommand::Add { .. } | McpCommand::Remove { .. } => Err(eyre!("not a server command")),
    }
}

fn list(servers: &BTreeMap<String, McpServerConfig>, format: ListFormat) {
    if format == ListFormat::Json {
        println!("{}", serde_json::to_string_pretty(servers).unwrap_or_default());
        return;
    }
    if servers.is_empty() {
        println!("{}", t("cli.mcp.none"));
    }
    for (name, server) in servers {
        let how = match (&server.command, &server.url) {
            (Some(c), _) => format!("stdio  {c} {}", server.args.join(" ")),
            (None, Some(u)) => format!("http   {u}"),
            (None, None) => "?".into(),
        };
        let state = if server.enabled { String::new() } else { format!("  ({})", t("cli.mcp.disabled")) };
        println!("{name:<16} {}{state}", how.trim_end());
    }
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or_default()
}

/// A fresh random bearer token, written to `MERLYA_HOME/mcp-http.token` (0600) for
/// the operator's client to read; never printed, so it stays out of terminal logs.
fn generated_token(home: &MerlyaHome) -> Result<String> {
    let token = hex::encode(crate::home::random_bytes(32).wrap_err_with(|| t("cli.mcp.no_random"))?);
    let path = home.mcp_token();
    crate::home::write_private_atomic(&path, format!("{token}\n").as_bytes())
        .wrap_err_with(|| tf("cli.cannot_write", &[("path", &path.display().to_string())]))?;
    eprintln!("{}", tf("cli.mcp.token", &[("path", &path.display().to_string())]));
    Ok(token)
}

/// `merlya mcp serve`: stdio until the client closes it, or HTTP until SIGINT/SIGTERM.
async fn serve(
    ctx: &Context,
    clients: &Arc<McpClients>,
    http: Option<std::net::SocketAddr>,
    token_env: Option<String>,
    yes: bool,
) -> Result<u8> {
    use rmcp::ServiceExt;
    let inventory = ctx.store.list_hosts().await?;
    let executor = Arc::new(ctx.executor(inventory, Arc::new(crate::prompt::NoPrompter), false)?);
    // The served agent may use only the external servers mcp.serve.servers names.
    let allowed = &ctx.config.mcp.serve.servers;
    let servers =
        ctx.config.mcp.servers.iter().filter(|(n, _)| allowed.contains(n)).map(|(n, s)| (n.clone(), s.clone()));
    let served = Served {
        config: Arc::new(ctx.config.clone()),
        store: ctx.store.clone(),
        session_id: ctx.session_id.clone(),
        executor,
        yes,
        secrets: ctx.secrets(),
        clients: if allowed.is_empty() {
            clients.clone()
        } else {
            Arc::new(McpClients::new(servers.collect(), ctx.secrets()))
        },
    };
    match http {
        None => {
            let running = served
                .serve(rmcp::transport::stdio())
                .await
                .map_err(|e| eyre!("{}", tf("cli.mcp.handshake", &[("error", &e.to_string())])))?;
            running
                .waiting()
                .await
                .map_err(|e| eyre!("{}", tf("cli.mcp.session_error", &[("error", &e.to_string())])))?;
        }
        Some(addr) => {
            let token = match token_env {
                Some(var) => {
                    std::env::var(&var).map_err(|_| eyre!("{}", tf("cli.mcp.token_env_unset", &[("var", &var)])))?
                }
                None => generated_token(&ctx.home)?,
            };
            let stop = super::cancel_on_signals();
            let serve = &ctx.config.mcp.serve;
            let limits = crate::mcp_serve::http::SessionLimits {
                max: serve.max_sessions.max(1),
                idle: std::time::Duration::from_secs(serve.session_idle_secs.max(1)),
            };
            serve_http(served, addr, token, limits, stop, |bound| {
                eprintln!("{}", tf("cli.mcp.serving", &[("url", &format!("http://{bound}/mcp"))]))
            })
            .await?;
        }
    }
    Ok(EXIT_OK)
}
