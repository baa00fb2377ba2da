//! What the bottom command line understands. Parsing is pure; `update` turns
//! the result into effects.
//!
//! - `!CMD` runs CMD on the marked hosts (or the one under the cursor).
//! - `:exec TARGETS -- CMD` runs CMD on targets (names, @tags, globs, lists, all).
//! - `:q` / `:quit`, `:help`, `:reload`, `:clear`.
//! - Anything else is a message to the agent.

/// A parsed command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommandLine {
    /// `!CMD`.
    RunOnSelection(String),
    /// `:exec TARGETS -- CMD`.
    Exec { targets: String, command: String },
    /// `:q`.
    Quit,
    /// `:help`.
    Help,
    /// `:reload`.
    Reload,
    /// `:clear`.
    Clear,
    /// `/language CODE`: switch the console's language and save it.
    Language(String),
    /// `/model` (show) or `/model brain|fast PROVIDER/MODEL` (switch and save).
    Model(Option<(crate::llm::ModelRole, String)>),
    /// Text for the agent.
    Chat(String),
    /// Empty input.
    Nothing,
}

/// Parses `input` or explains what was expected.
pub fn parse(input: &str) -> Result<CommandLine, String> {
    let input = input.trim();
    if input.is_empty() {
        return Ok(CommandLine::Nothing);
    }
    if let Some(cmd) = input.strip_prefix('!') {
        let cmd = cmd.trim();
        if cmd.is_empty() {
            return Err("`!` needs a command, e.g. !uptime".into());
        }
        return Ok(CommandLine::RunOnSelection(cmd.to_string()));
    }
    if let Some(rest) = input.strip_prefix("/language") {
        return match rest.split_whitespace().collect::<Vec<_>>().as_slice() {
            [code] => Ok(CommandLine::Language(code.to_string())),
            _ => Err("usage: /language en|fr".into()),
        };
    }
    if let Some(rest) = input.strip_prefix("/model") {
        let words: Vec<&str> = rest.split_whitespace().collect();
        return match words.as_slice() {
            [] => Ok(CommandLine::Model(None)),
            [role, spec] if spec.contains('/') => {
                let role = match *role {
                    "brain" => crate::llm::ModelRole::Brain,
                    "fast" => crate::llm::ModelRole::Fast,
                    other => return Err(format!("/model {other}: expected brain or fast")),
                };
                Ok(CommandLine::Model(Some((role, spec.to_string()))))
            }
            _ => Err("usage: /model, or /model brain|fast PROVIDER/MODEL".into()),
        };
    }
    let Some(rest) = input.strip_prefix(':') else { return Ok(CommandLine::Chat(input.to_string())) };
    let (word, args) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
    match word {
        "q" | "quit" | "exit" => Ok(CommandLine::Quit),
        "help" | "h" => Ok(CommandLine::Help),
        "reload" => Ok(CommandLine::Reload),
        "clear" => Ok(CommandLine::Clear),
        "exec" => {
            let (targets, command) =
                args.split_once(" -- ").ok_or("usage: :exec TARGETS -- COMMAND (e.g. :exec @web -- uptime)")?;
            let (targets, command) = (targets.trim(), command.trim());
            if targets.is_empty() || command.is_empty() {
                return Err("usage: :exec TARGETS -- COMMAND (e.g. :exec @web -- uptime)".into());
            }
            Ok(CommandLine::Exec { targets: targets.into(), command: command.into() })
        }
        other => Err(format!("unknown command :{other} (try :exec, :reload, :clear, :help, :q)")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_form() {
        assert_eq!(parse("!uptime"), Ok(CommandLine::RunOnSelection("uptime".into())));
        assert_eq!(
            parse(":exec @web,db1 -- df -h"),
            Ok(CommandLine::Exec { targets: "@web,db1".into(), command: "df -h".into() })
        );
        assert_eq!(parse(":q"), Ok(CommandLine::Quit));
        assert_eq!(parse("why is web01 slow?"), Ok(CommandLine::Chat("why is web01 slow?".into())));
        assert_eq!(parse("   "), Ok(CommandLine::Nothing));
        assert_eq!(parse("/model"), Ok(CommandLine::Model(None)));
        assert_eq!(
            parse("/model fast openai/gpt-4o-mini"),
            Ok(CommandLine::Model(Some((crate::llm::ModelRole::Fast, "openai/gpt-4o-mini".into()))))
        );
        assert!(parse("/model huge x/y").is_err());
    }

    #[test]
    fn explains_mistakes() {
        assert!(parse("!").unwrap_err().contains("needs a command"));
        assert!(parse(":exec web01 uptime").unwrap_err().contains("usage"));
        assert!(parse(":frobnicate").unwrap_err().contains("unknown command"));
    }
}
