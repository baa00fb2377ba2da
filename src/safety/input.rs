//! What the line gives a command on its standard input: a program that sends its input off the
//! host runs only when that input is provably an empty line, and a request to an outside host
//! carries nothing only when the line feeds it nothing (ADR 0030).

use super::parse::{self, SimpleCommand};
use super::{Analysis, Class};

/// Whether the line gives a command nothing on its standard input beyond an empty line: no input
/// redirection but `< /dev/null`, and no pipe but from `echo`/`true`/`:` alone (ADR 0030: a
/// request to an outside host then carries nothing read from it).
pub(super) fn line_feeds_nothing(cmd: &SimpleCommand, all: &[SimpleCommand]) -> bool {
    let inputs_null = cmd
        .redirects
        .iter()
        .filter(|r| r.op.starts_with('<'))
        .all(|r| r.op == "<" && r.target.as_ref().is_some_and(|t| t.is_literal() && t.text == "/dev/null"));
    inputs_null && (cmd.pipeline.is_none_or(|(_, pos)| pos == 0) || fed_literally(cmd, all))
}

/// A program that sends its input off the host runs only when that input is
/// provably harmless: `< /dev/null`, or a pipe from `echo`/`printf` of literal
/// text. Anything else — a file, a here-doc, a group or loop fed by a pipe, an
/// earlier `exec <` — is refused, since its stdin cannot be known from syntax.
pub(super) fn check_sent_input(cmd: &SimpleCommand, all: &[SimpleCommand], analysis: &mut Analysis) {
    let name = cmd.words.first().map(|w| w.text.clone()).unwrap_or_default();
    let inputs: Vec<_> = cmd.redirects.iter().filter(|r| r.op.starts_with('<')).collect();
    let from_null = |r: &&parse::Redirect| {
        r.op == "<" && r.target.as_ref().is_some_and(|t| t.is_literal() && t.text == "/dev/null")
    };
    if !inputs.is_empty() {
        if !inputs.iter().all(from_null) {
            analysis
                .raise(Class::Mutating, format!("`{name}` would send local data (a redirected input) off the host"));
        }
        return;
    }
    if !fed_literally(cmd, all) {
        analysis.raise(
            Class::Mutating,
            format!("`{name}` sends its input off the host; give it `< /dev/null` or `echo |` (an empty line)"),
        );
    }
}

/// Whether every earlier stage of `cmd`'s pipeline is one simple command that sends nothing but an
/// empty line. A stage that is a group, a subshell, a loop or an `if` holds no simple command at
/// its position: it is not proved harmless (red team 6: `{ echo; cat /etc/shadow; } | openssl …`).
fn fed_literally(cmd: &SimpleCommand, all: &[SimpleCommand]) -> bool {
    cmd.pipeline.is_some_and(|(id, pos)| {
        pos > 0
            && (0..pos).all(|p| {
                let mut stage = all.iter().filter(|c| c.pipeline == Some((id, p)));
                let (Some(c), None) = (stage.next(), stage.next()) else { return false };
                let Some(first) = c.words.first() else { return false };
                // Even literal text is a request to whatever listens: only an empty line.
                (matches!(first.text.as_str(), "true" | ":") || (first.text == "echo" && c.words.len() == 1))
                    && !c.redirects.iter().any(|r| r.op.starts_with('<'))
            })
    })
}
