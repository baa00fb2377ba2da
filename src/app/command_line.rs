//! What the bottom command line understands. Parsing is pure; `update` turns
//! the result into effects. The tables here also feed the completion popup,
//! so what is suggested is exactly what is understood.
//!
//! - `!CMD` runs CMD on the marked hosts (or the one under the cursor).
//! - `:exec TARGETS -- CMD` runs CMD on targets (names, @tags, globs, lists, all).
//! - `:` palette words ([`PALETTE`]): panes, host actions, `:reload`, `:clear`, `:q`.
//! - `/` slash commands ([`SLASH`]): `/hosts`, `/model`, `/metrics`, `/secret`, `/mcp`, `/skill`,
//!   `/conv`, `/audit`, `/language`, `/help`, `/new`, `/exit`.
//! - Anything else is a message to the agent.

use super::keymap::Action;
use crate::i18n::Text;

/// Slash commands: the word, whether it takes arguments, and its locale help key.
pub const SLASH: [(&str, bool, &str); 16] = [
    ("/hosts", true, "slash.hosts"),
    ("/model", true, "slash.model"),
    ("/metrics", false, "slash.metrics"),
    ("/secret", true, "slash.secret"),
    ("/mcp", false, "slash.mcp"),
    ("/skill", true, "slash.skill"),
    ("/report", true, "slash.report"),
    ("/setup", false, "slash.setup"),
    ("/conv", true, "slash.conv"),
    ("/audit", true, "slash.audit"),
    ("/language", true, "slash.language"),
    ("/help", false, "slash.help"),
    ("/new", false, "slash.new"),
    ("/retry", false, "slash.retry"),
    ("/edit", false, "slash.edit"),
    ("/exit", false, "slash.exit"),
];

/// Palette words that do what a key does, anywhere.
pub const PALETTE: [(&str, Action); 26] = [
    (":group", Action::Group),
    (":failed", Action::FailedOnly),
    (":rerun", Action::Rerun),
    (":zoom", Action::Zoom),
    (":inventory", Action::FocusInventory),
    (":output", Action::FocusOutput),
    (":chat", Action::FocusChat),
    (":pipeline", Action::FocusPipeline),
    (":metrics", Action::FocusMetrics),
    (":drift", Action::FocusDrift),
    (":add", Action::Add),
    (":edit", Action::Edit),
    (":delete", Action::Delete),
    (":check", Action::Check),
    (":details", Action::Details),
    (":tags", Action::Tags),
    (":order", Action::Sort),
    (":columns", Action::Columns),
    (":ssh", Action::Ssh),
    (":follow", Action::Follow),
    (":search", Action::Search),
    (":copy", Action::Copy),
    (":split", Action::SideBySide),
    (":help", Action::Help),
    (":suspend", Action::Suspend),
    (":quit", Action::Quit),
];

/// Palette words with their own syntax, and their locale help keys.
pub const PALETTE_COMMANDS: [(&str, bool, &str); 10] = [
    (":exec", true, "palette.exec"),
    (":watch", true, "palette.watch"),
    (":change", true, "palette.change"),
    (":plan", true, "palette.plan"),
    (":reload", false, "palette.reload"),
    (":clear", false, "palette.clear"),
    (":cancel", true, "palette.cancel"),
    (":export", true, "palette.export"),
    (":diff", true, "palette.diff"),
    (":review", true, "palette.review"),
];

/// `/secret` sub-commands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SecretCommand {
    /// Names of stored secrets (never values).
    List,
    /// Ask for a value (hidden) and store it.
    Set(String),
    /// Delete one.
    Remove(String),
}

/// `/mcp list | tools NAME | test NAME`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum McpCommand {
    /// The configured servers (none started).
    List,
    /// Start one and list its tools.
    Tools(String),
    /// Start one and check its handshake.
    Test(String),
}

/// `/skill` (the list) or `/skill NAME [VALUE|KEY=VALUE…] TARGETS`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SkillLine {
    /// The skills this home has.
    List,
    /// Run one on targets (the last word); the words between are its parameters.
    Run { name: String, values: Vec<String>, targets: String },
}

/// `/conv` sub-commands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConvCommand {
    /// The newest conversations, with tokens and cost.
    List,
    /// Its messages in the chat, without continuing it.
    Show(String),
    /// Continue it (`/conv ID` too).
    Load(String),
    /// Give it a title.
    Rename(String, String),
    /// Delete it and its messages.
    Delete(String),
    /// Write it as Markdown to a file.
    Export(String, String),
}

/// A parsed command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommandLine {
    /// `!CMD`.
    RunOnSelection(String),
    /// `:exec TARGETS -- CMD`.
    Exec { targets: String, command: String },
    /// `:watch N -- CMD`: CMD every N seconds on the marked hosts (or the one under the cursor).
    Watch { every: u64, command: String },
    /// `:watch off`: stop the watch.
    WatchOff,
    /// `/retry`: send the last question again.
    Retry,
    /// `/edit`: the last question back in the input line.
    EditLast,
    /// `:q`, `/exit`.
    Quit,
    /// `/help`.
    Help,
    /// A palette word that does what a key does.
    Action(Action),
    /// `/hosts [FILTER]`: focus the inventory, filtered.
    Hosts(String),
    /// `/hosts import PATH`: add the hosts of a file (format detected).
    ImportHosts(String),
    /// `/secret list|set NAME|rm NAME`.
    Secret(SecretCommand),
    /// `/mcp list|tools NAME|test NAME`: the external MCP servers.
    Mcp(McpCommand),
    /// `/skill [NAME [VALUE…] TARGETS]`: a runbook.
    Skill(SkillLine),
    /// `/report [FILE.md]`: this session's incident report, written to a file.
    Report(Option<String>),
    /// `/setup`: language, model and key, inventories found on this machine.
    Setup,
    /// `/conv list|show|load|rename|delete|export`.
    Conv(ConvCommand),
    /// `/audit [N]`: the last N audit entries.
    Audit(usize),
    /// `/new`: start a new conversation.
    New,
    /// `:reload`.
    Reload,
    /// `:review ID`: review a teammate's change that waits for a second person.
    Review(i64),
    /// `:clear`.
    Clear,
    /// `:cancel [ID]`: stop run ID, or the newest in flight.
    Cancel(Option<u64>),
    /// `:export [ID] FILE`: write a run (default: the newest) to FILE (.md or .json).
    Export { run: Option<u64>, path: String },
    /// `:change terraform DIR`, `:change kubernetes PATH`, `:change ansible PLAYBOOK TARGETS`: a change
    /// pipeline (plan and dry run at once, then the approval modal).
    Change { kind: crate::pipeline::Kind, path: String, targets: Option<String>, plan_only: bool },
    /// `:diff HOST HOST`: the two hosts' outputs in the newest run, as a diff.
    Diff(String, String),
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
pub fn parse(input: &str) -> Result<CommandLine, Text> {
    let input = input.trim();
    if input.is_empty() {
        return Ok(CommandLine::Nothing);
    }
    if let Some(cmd) = input.strip_prefix('!') {
        let cmd = cmd.trim();
        if cmd.is_empty() {
            return Err(Text::key("cmd.bang_needs_command", &[]));
        }
        return Ok(CommandLine::RunOnSelection(cmd.to_string()));
    }
    if input.starts_with('/') {
        return parse_slash(input);
    }
    let Some(rest) = input.strip_prefix(':') else { return Ok(CommandLine::Chat(input.to_string())) };
    let (word, args) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
    if let Some((_, action)) = PALETTE.iter().find(|(w, _)| w[1..] == *word) {
        return Ok(CommandLine::Action(*action));
    }
    match word {
        "q" | "exit" => Ok(CommandLine::Quit),
        "h" => Ok(CommandLine::Action(Action::Help)),
        "reload" => Ok(CommandLine::Reload),
        "clear" => Ok(CommandLine::Clear),
        "review" => match args.trim().trim_start_matches('#').parse() {
            Ok(id) => Ok(CommandLine::Review(id)),
            Err(_) => Err(Text::key("cmd.review_usage", &[])),
        },
        "cancel" => match args.split_whitespace().collect::<Vec<_>>().as_slice() {
            [] => Ok(CommandLine::Cancel(None)),
            [id] => run_id(id).map(|id| CommandLine::Cancel(Some(id))),
            _ => Err(Text::key("cmd.cancel_usage", &[])),
        },
        "export" => match args.split_whitespace().collect::<Vec<_>>().as_slice() {
            [path] => Ok(CommandLine::Export { run: None, path: path.to_string() }),
            [id, path] => Ok(CommandLine::Export { run: Some(run_id(id)?), path: path.to_string() }),
            _ => Err(Text::key("cmd.export_usage", &[])),
        },
        "diff" => match args.split_whitespace().collect::<Vec<_>>().as_slice() {
            [a, b] => Ok(CommandLine::Diff(a.to_string(), b.to_string())),
            _ => Err(Text::key("cmd.diff_usage", &[])),
        },
        "change" | "plan" => {
            use crate::pipeline::Kind;
            let words: Vec<&str> = args.split_whitespace().collect();
            // `:plan` stops after the diff and its summary: nothing is asked, nothing applied.
            let plan_only = word == "plan";
            let change = |kind, path: &str, targets: Option<&str>| CommandLine::Change {
                kind,
                path: path.to_string(),
                targets: targets.map(str::to_string),
                plan_only,
            };
            match words.as_slice() {
                ["terraform", dir] => Ok(change(Kind::Terraform, dir, None)),
                ["kubernetes", path] => Ok(change(Kind::Kubernetes, path, None)),
                ["ansible", playbook, targets] => Ok(change(Kind::Ansible, playbook, Some(targets))),
                _ => Err(Text::key("cmd.change_usage", &[])),
            }
        }
        "watch" => parse_watch(args),
        "exec" => {
            let (targets, command) = args.split_once(" -- ").ok_or_else(|| Text::key("cmd.exec_usage", &[]))?;
            let (targets, command) = (targets.trim(), command.trim());
            if targets.is_empty() || command.is_empty() {
                return Err(Text::key("cmd.exec_usage", &[]));
            }
            Ok(CommandLine::Exec { targets: targets.into(), command: command.into() })
        }
        other => Err(Text::key("cmd.unknown_palette", &[("word", other)])),
    }
}

/// Longest pause between two rounds of a watch (a day).
const WATCH_MAX_SECONDS: u64 = 86_400;

/// `N -- CMD` or `off`.
fn parse_watch(args: &str) -> Result<CommandLine, Text> {
    if args.trim() == "off" {
        return Ok(CommandLine::WatchOff);
    }
    let usage = || Text::key("cmd.watch_usage", &[]);
    let (every, command) = args.split_once("--").ok_or_else(usage)?;
    let (every, command) = (every.trim(), command.trim());
    if command.is_empty() {
        return Err(usage());
    }
    match every.trim_end_matches('s').parse::<u64>() {
        Ok(every) if (1..=WATCH_MAX_SECONDS).contains(&every) => {
            Ok(CommandLine::Watch { every, command: command.to_string() })
        }
        _ => Err(Text::key("cmd.watch_seconds", &[("value", every)])),
    }
}

/// A run number, written `7` or `#7`.
fn run_id(word: &str) -> Result<u64, Text> {
    word.trim_start_matches('#').parse().map_err(|_| Text::key("cmd.run_id", &[("value", word)]))
}

fn parse_slash(input: &str) -> Result<CommandLine, Text> {
    let (word, rest) = input.split_once(char::is_whitespace).unwrap_or((input, ""));
    let args: Vec<&str> = rest.split_whitespace().collect();
    match word {
        "/hosts" => {
            return match args.as_slice() {
                ["import", path] => Ok(CommandLine::ImportHosts(path.to_string())),
                ["import", ..] => Err(Text::key("cmd.import_usage", &[])),
                _ => Ok(CommandLine::Hosts(args.join(" "))),
            };
        }
        "/metrics" => return Ok(CommandLine::Action(Action::FocusMetrics)),
        "/help" => return Ok(CommandLine::Help),
        "/exit" | "/quit" => return Ok(CommandLine::Quit),
        "/new" => return Ok(CommandLine::New),
        "/retry" => return Ok(CommandLine::Retry),
        "/edit" => return Ok(CommandLine::EditLast),
        "/mcp" => {
            return match args.as_slice() {
                [] | ["list"] => Ok(CommandLine::Mcp(McpCommand::List)),
                ["tools", name] => Ok(CommandLine::Mcp(McpCommand::Tools(name.to_string()))),
                ["test", name] => Ok(CommandLine::Mcp(McpCommand::Test(name.to_string()))),
                _ => Err(Text::key("cmd.mcp_usage", &[])),
            };
        }
        "/setup" => return Ok(CommandLine::Setup),
        "/report" => {
            return match args.as_slice() {
                [] => Ok(CommandLine::Report(None)),
                [path] => Ok(CommandLine::Report(Some(path.to_string()))),
                _ => Err(Text::key("cmd.report_usage", &[])),
            };
        }
        "/skill" => {
            return match args.as_slice() {
                [] => Ok(CommandLine::Skill(SkillLine::List)),
                [name, values @ .., targets] => Ok(CommandLine::Skill(SkillLine::Run {
                    name: name.to_string(),
                    values: values.iter().map(|v| v.to_string()).collect(),
                    targets: targets.to_string(),
                })),
                [_] => Err(Text::key("cmd.skill_usage", &[])),
            };
        }
        "/conv" => {
            let conv = match args.as_slice() {
                [] | ["list"] => ConvCommand::List,
                ["show", id] => ConvCommand::Show(id.to_string()),
                ["load", id] => ConvCommand::Load(id.to_string()),
                ["rename", id, title @ ..] if !title.is_empty() => ConvCommand::Rename(id.to_string(), title.join(" ")),
                ["delete", id] => ConvCommand::Delete(id.to_string()),
                ["export", id, path] => ConvCommand::Export(id.to_string(), path.to_string()),
                [id] if !["show", "load", "rename", "delete", "export"].contains(id) => {
                    ConvCommand::Load(id.to_string())
                }
                _ => return Err(Text::key("cmd.conv_usage", &[])),
            };
            return Ok(CommandLine::Conv(conv));
        }
        "/audit" => {
            return match args.as_slice() {
                [] => Ok(CommandLine::Audit(20)),
                [n] => n.parse().map(CommandLine::Audit).map_err(|_| Text::key("cmd.audit_number", &[("value", n)])),
                _ => Err(Text::key("cmd.audit_usage", &[])),
            };
        }
        "/secret" => {
            return match args.as_slice() {
                [] | ["list"] => Ok(CommandLine::Secret(SecretCommand::List)),
                ["set", name] => Ok(CommandLine::Secret(SecretCommand::Set(name.to_string()))),
                ["rm", name] => Ok(CommandLine::Secret(SecretCommand::Remove(name.to_string()))),
                _ => Err(Text::key("cmd.secret_usage", &[])),
            };
        }
        _ => {}
    }
    if let Some(rest) = input.strip_prefix("/language") {
        return match rest.split_whitespace().collect::<Vec<_>>().as_slice() {
            [] => Ok(CommandLine::Language(String::new())),
            [code] => Ok(CommandLine::Language(code.to_string())),
            _ => Err(Text::key("cmd.language_usage", &[])),
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
                    other => return Err(Text::key("cmd.model_role", &[("role", other)])),
                };
                Ok(CommandLine::Model(Some((role, spec.to_string()))))
            }
            _ => Err(Text::key("cmd.model_usage", &[])),
        };
    }
    Err(Text::key("cmd.unknown_slash", &[("word", word)]))
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
        assert_eq!(parse(":watch 5 -- df -h"), Ok(CommandLine::Watch { every: 5, command: "df -h".into() }));
        assert_eq!(parse(":watch 2s -- cat /tmp/f"), Ok(CommandLine::Watch { every: 2, command: "cat /tmp/f".into() }));
        assert_eq!(parse(":watch off"), Ok(CommandLine::WatchOff));
        assert_eq!(parse("/retry"), Ok(CommandLine::Retry));
        assert_eq!(parse("/edit"), Ok(CommandLine::EditLast));
        use crate::pipeline::Kind;
        assert_eq!(
            parse(":change terraform ./infra"),
            Ok(CommandLine::Change { kind: Kind::Terraform, path: "./infra".into(), targets: None, plan_only: false })
        );
        assert_eq!(
            parse(":plan terraform ./infra"),
            Ok(CommandLine::Change { kind: Kind::Terraform, path: "./infra".into(), targets: None, plan_only: true })
        );
        assert_eq!(
            parse(":change ansible site.yml @web"),
            Ok(CommandLine::Change {
                kind: Kind::Ansible,
                path: "site.yml".into(),
                targets: Some("@web".into()),
                plan_only: false
            })
        );
        assert_eq!(parse(":change ansible site.yml"), Err(Text::key("cmd.change_usage", &[])));
        assert_eq!(parse(":quit"), Ok(CommandLine::Action(Action::Quit)));
        assert_eq!(parse(":check"), Ok(CommandLine::Action(Action::Check)));
        assert_eq!(parse(":cancel"), Ok(CommandLine::Cancel(None)));
        assert_eq!(parse(":cancel #3"), Ok(CommandLine::Cancel(Some(3))));
        assert_eq!(parse(":export 2 run.md"), Ok(CommandLine::Export { run: Some(2), path: "run.md".into() }));
        assert_eq!(parse(":export out.json"), Ok(CommandLine::Export { run: None, path: "out.json".into() }));
        assert_eq!(parse(":diff web01 web02"), Ok(CommandLine::Diff("web01".into(), "web02".into())));
        assert_eq!(parse(":group"), Ok(CommandLine::Action(Action::Group)));
        assert_eq!(parse("/hosts @web"), Ok(CommandLine::Hosts("@web".into())));
        assert_eq!(parse("/hosts import ~/inv.ini"), Ok(CommandLine::ImportHosts("~/inv.ini".into())));
        assert_eq!(parse("/secret set db_pw"), Ok(CommandLine::Secret(SecretCommand::Set("db_pw".into()))));
        assert_eq!(parse("/audit 5"), Ok(CommandLine::Audit(5)));
        assert_eq!(parse(":review 12"), Ok(CommandLine::Review(12)));
        assert_eq!(parse(":review #3"), Ok(CommandLine::Review(3)));
        assert!(parse(":review").is_err());
        assert_eq!(parse("/exit"), Ok(CommandLine::Quit));
        assert_eq!(parse("/new"), Ok(CommandLine::New));
        assert_eq!(parse("/metrics"), Ok(CommandLine::Action(Action::FocusMetrics)));
        for (word, _, _) in SLASH {
            assert!(parse(word).is_ok(), "{word} alone is understood");
        }
        for (word, _) in PALETTE {
            assert!(parse(word).is_ok(), "{word} is understood");
        }
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
        assert!(parse("!").unwrap_err().english().contains("needs a command"));
        assert!(parse(":exec web01 uptime").unwrap_err().english().contains("usage"));
        assert!(parse(":frobnicate").unwrap_err().english().contains("unknown command"));
        assert!(parse("/frobnicate").unwrap_err().english().contains("unknown command /frobnicate"));
        assert!(parse("/secret set").unwrap_err().english().contains("usage"));
        assert!(parse("/audit many").unwrap_err().english().contains("expected a number"));
        assert!(parse(":cancel x").unwrap_err().english().contains("run number"));
        assert!(parse(":diff web01").unwrap_err().english().contains("usage"));
        assert!(parse(":watch df -h").unwrap_err().english().contains("usage"));
        assert!(parse(":watch 5 --").unwrap_err().english().contains("usage"));
        assert!(parse(":watch 0 -- uptime").unwrap_err().english().contains("seconds"));
        assert!(parse(":watch soon -- uptime").unwrap_err().english().contains("seconds"));
    }
}
