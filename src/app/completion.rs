//! Suggestions for the completion popup of the input line: slash commands
//! after `/`, the command palette after `:`, and arguments (languages, model
//! roles, host names and `@tags`, secret sub-commands). Pure: a function of
//! the text typed and the inventory.

use super::command_line::{PALETTE, PALETTE_COMMANDS, SLASH};
use super::fleet::Fleet;

/// One line of the popup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Suggestion {
    /// The whole input after accepting it.
    pub replacement: String,
    /// What the popup shows on the left.
    pub label: String,
    /// A locale key describing it (empty for plain values such as host names).
    pub help: String,
}

/// Rows the popup shows at once (it scrolls through the rest).
pub const ROWS: usize = 10;

/// Targets offered at most: the popup is built every frame, and 200,000 host
/// names are typed further, not scrolled through.
pub const MAX_TARGETS: usize = 200;

/// The suggestions for `text`; targets come from `hosts`' names and its tags (counted once per load).
pub fn suggest(text: &str, hosts: &Fleet) -> Vec<Suggestion> {
    if text.contains('\n') {
        return Vec::new();
    }
    match text.split_once(' ') {
        None if text.starts_with('/') => words(text, SLASH.iter().map(|(w, args, help)| (*w, *args, *help))),
        None if text.starts_with(':') => words(
            text,
            PALETTE_COMMANDS
                .iter()
                .map(|(w, args, help)| (*w, *args, *help))
                .chain(PALETTE.iter().map(|(w, a)| (*w, false, a.help_key()))),
        ),
        Some((command, _)) => arguments(command, text, hosts),
        None => Vec::new(),
    }
}

/// Commands starting with `text`, then those merely containing it.
fn words<'a>(text: &str, table: impl Iterator<Item = (&'a str, bool, &'a str)>) -> Vec<Suggestion> {
    let table: Vec<_> = table.collect();
    let typed = &text[1..];
    let starts = table.iter().filter(|(w, _, _)| w[1..].starts_with(typed));
    let contains = table.iter().filter(|(w, _, _)| !w[1..].starts_with(typed) && w[1..].contains(typed));
    starts
        .chain(contains)
        .map(|(w, args, help)| Suggestion {
            replacement: if *args { format!("{w} ") } else { w.to_string() },
            label: w.to_string(),
            help: help.to_string(),
        })
        .collect()
}

/// Values for the word being typed after `command`.
fn arguments(command: &str, text: &str, hosts: &Fleet) -> Vec<Suggestion> {
    let (before, last) = text.rsplit_once(' ').unwrap_or((text, ""));
    let values: Vec<String> = match command {
        "/language" if !before.contains(' ') => crate::i18n::languages().iter().map(|s| s.to_string()).collect(),
        "/model" if !before.contains(' ') => vec!["brain".into(), "fast".into()],
        "/secret" if !before.contains(' ') => vec!["list".into(), "set".into(), "rm".into()],
        "/hosts" => targets(hosts, last),
        ":exec" if !text.contains(" -- ") => targets(hosts, last),
        _ => return Vec::new(),
    };
    values
        .into_iter()
        .filter(|v| v.starts_with(last) && v != last)
        .map(|v| Suggestion { replacement: format!("{before} {v}"), label: v, help: String::new() })
        .collect()
}

/// `@tags` then host names that start with `typed` (the first [`MAX_TARGETS`]).
fn targets(hosts: &Fleet, typed: &str) -> Vec<String> {
    let tags = hosts.tags().iter().map(|(t, _)| format!("@{t}"));
    let names = hosts.iter().filter(|h| h.name.starts_with(typed)).map(|h| h.name.clone());
    tags.filter(|t| t.starts_with(typed)).chain(names).take(MAX_TARGETS).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::inventory::Host;

    fn labels(text: &str, hosts: &[Host]) -> Vec<String> {
        suggest(text, &Fleet::new(hosts.to_vec())).into_iter().map(|s| s.label).collect()
    }

    #[test]
    fn slash_and_palette_words_complete() {
        assert_eq!(labels("/", &[]).len(), 16, "every slash command is offered");
        assert_eq!(labels(":", &[]).len(), 36, "every palette word is offered");
        assert_eq!(labels("/h", &[]), ["/hosts", "/help"]);
        assert_eq!(labels("/la", &[]), ["/language"]);
        assert_eq!(
            suggest("/la", &Fleet::default())[0].replacement,
            "/language ",
            "commands with arguments leave a space"
        );
        assert_eq!(
            labels(":ch", &[]),
            [":change", ":chat", ":check", ":watch", ":search"],
            "prefix matches first, then the rest"
        );
        assert_eq!(labels(":ex", &[])[0], ":exec");
        assert!(labels("hello", &[]).is_empty(), "chat text gets no popup");
    }

    #[test]
    fn arguments_complete_from_the_inventory() {
        let mut web = Host::new("web01", "10.0.0.1");
        web.add_tag("web");
        let hosts = [web, Host::localhost()];
        assert_eq!(labels("/language ", &hosts), ["en", "fr"]);
        assert_eq!(labels(":exec @", &hosts), ["@web"]);
        assert_eq!(labels(":exec w", &hosts), ["web01"]);
        assert_eq!(suggest(":exec w", &Fleet::new(hosts.to_vec()))[0].replacement, ":exec web01");
        assert!(labels(":exec web01 -- up", &hosts).is_empty(), "the command itself is not completed");
        assert_eq!(labels("/model f", &hosts), ["fast"]);
    }

    #[test]
    fn a_large_fleet_offers_a_bounded_list_of_targets() {
        let hosts: Vec<Host> = (0..5_000).map(|i| Host::new(format!("web{i:05}"), "10.0.0.1")).collect();
        assert_eq!(labels(":exec ", &hosts).len(), MAX_TARGETS);
        assert_eq!(labels(":exec web0499", &hosts).len(), 10, "typing narrows it");
    }
}
