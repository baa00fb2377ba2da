//! `/mcp list|tools NAME|test NAME` in the console: answered as a note by a
//! worker (servers start there, never on the loop thread).

use super::command_line::McpCommand;
use super::msg::Msg;
use super::workers::Services;

/// `/mcp list|tools NAME|test NAME`, answered as a note (servers start on a worker).
pub(super) fn run(services: &Services, command: McpCommand) {
    let (clients, sender, locale) = (services.mcp.clone(), services.sender.clone(), services.locale());
    tokio::spawn(async move {
        let note = match command {
            McpCommand::List if clients.configured().is_empty() => locale.t("mcp.none").to_string(),
            McpCommand::List => {
                let mut lines = vec![locale.tf("mcp.list", &[("count", &clients.configured().len().to_string())])];
                for (name, server) in clients.configured() {
                    let how = server.url.clone().or_else(|| server.command.clone()).unwrap_or_default();
                    let state = match (server.enabled, clients.is_running(name).await) {
                        (false, _) => locale.t("mcp.disabled"),
                        (true, true) => locale.t("mcp.running"),
                        (true, false) => locale.t("mcp.stopped"),
                    };
                    lines.push(format!("  {name}  {how}  ({state})"));
                }
                lines.join("\n")
            }
            McpCommand::Tools(name) => match clients.tools(&name).await {
                Ok(tools) => {
                    let mut lines =
                        vec![locale.tf("mcp.tools", &[("server", &name), ("count", &tools.len().to_string())])];
                    for tool in tools {
                        let risk = if tool.read_only { locale.t("mcp.read_only") } else { locale.t("mcp.change") };
                        // The server's words: control characters made visible before the screen sees them.
                        let about = crate::term_safe::visible_line(tool.description.lines().next().unwrap_or_default());
                        let name = crate::term_safe::visible_line(&tool.qualified()).into_owned();
                        lines.push(format!("  {name}  [{risk}]  {about}"));
                    }
                    lines.join("\n")
                }
                Err(e) => e.to_string(),
            },
            McpCommand::Test(name) => match clients.tools(&name).await {
                Ok(tools) => locale.tf("mcp.test_ok", &[("server", &name), ("count", &tools.len().to_string())]),
                Err(e) => e.to_string(),
            },
        };
        sender.send(Msg::Note(note));
    });
}
