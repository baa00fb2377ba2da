//! `merlya policy check`: shows why a command is allowed or refused, so the
//! rules the agent lives under can be read and tested by people.

use clap::Subcommand;
use color_eyre::eyre::Result;

use super::{EXIT_OK, EXIT_REFUSED, OutputFormat};
use crate::safety::leaks::find_leaks;
use crate::safety::{Specialist, decide};

#[derive(Debug, Subcommand)]
#[command(defer = true)]
pub enum PolicyCommand {
    /// Classify a command as a specialist would see it (exit 0 runs without asking, 3 needs an
    /// approval or is refused).
    Check {
        /// Which specialist's rule to apply.
        #[arg(long, value_enum, default_value_t = Specialist::Diagnostic)]
        specialist: Specialist,
        /// Host name used in suggested secret references.
        #[arg(long, default_value = "HOST")]
        host: String,
        #[arg(long, value_enum, default_value_t)]
        format: OutputFormat,
        /// The command, after `--` (quote it to keep pipes and redirections).
        #[arg(last = true, required = true)]
        command: Vec<String>,
    },
}

pub fn run(home: &crate::home::MerlyaHome, cmd: PolicyCommand) -> Result<u8> {
    let PolicyCommand::Check { specialist, host, format, command } = cmd;
    // A proven read never opens merlya's own files, as in a session.
    crate::safety::set_private_home(home.root());
    // The home's `policy.egress_allow` decides where a read may send something, as in a session.
    let config = crate::config::Config::load(&home.config_file())?;
    crate::safety::egress::configure(
        crate::safety::egress::EgressAllow::parse(&config.policy.egress_allow).unwrap_or_default(),
    );
    let command = command.join(" ");
    let decision = decide(specialist, &command, false);
    // What a person gets for it (`merlya exec`, `!cmd`): a change is asked about, not refused.
    let person = decide(Specialist::Execution, &command, false);
    let asked = !decision.allowed && person.allowed && person.needs_approval;
    // What would run for a proven read: merlya's rendering, never the text as typed (ADR 0026).
    let runs_as = crate::safety::prove(&command).1.map(|c| c.command().to_string());
    let leaks = find_leaks(&command, &host);
    match format {
        OutputFormat::Json => {
            let out = serde_json::json!({
                "command": command,
                "specialist": specialist,
                "allowed": decision.allowed,
                "needs_approval": decision.needs_approval,
                "asked_when_a_person_runs_it": asked || (decision.allowed && decision.needs_approval),
                "class": decision.analysis.class,
                "reasons": decision.analysis.reasons,
                "commands": decision.analysis.commands,
                "runs_as": runs_as,
                "leaks": leaks,
            });
            println!("{}", serde_json::to_string_pretty(&out)?);
        }
        OutputFormat::Text => {
            use super::lang::{t, tf};
            let verdict = match (decision.allowed, decision.needs_approval) {
                (false, _) if asked => t("cli.policy.needs_approval"),
                (false, _) => t("cli.policy.refused"),
                (true, true) => t("cli.policy.allowed_after_approval"),
                (true, false) => t("cli.policy.allowed"),
            };
            println!("{verdict}: {} ({})", command, decision.analysis.class.as_str());
            if let Some(rendering) = runs_as.as_deref().filter(|r| *r != command) {
                println!("  {}: {}", t("cli.policy.runs_as"), crate::term_safe::visible_line(rendering));
            }
            for reason in &decision.analysis.reasons {
                println!("  - {reason}");
            }
            if asked {
                let who = serde_json::to_value(specialist).ok().and_then(|v| v.as_str().map(str::to_string));
                println!("  = {}", tf("cli.policy.asked", &[("specialist", &who.unwrap_or_default())]));
            }
            for leak in &leaks {
                println!("  ! {}\n    {}: {}", leak.what, t("cli.policy.safer"), leak.rewrite);
            }
        }
    }
    Ok(if decision.allowed { EXIT_OK } else { EXIT_REFUSED })
}
