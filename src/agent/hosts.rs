//! Host extraction: names and `@tags` in the user's text are resolved against
//! the inventory and given to the model as context; when the text names hosts
//! only loosely ("the web servers"), the fast model picks them.

use serde_json::Value;

use super::{Agent, AgentEvent};
use crate::inventory::Host;
use crate::llm::{Message, ModelRole};

/// Hosts and tags named exactly in `text`.
pub fn mentioned<'a>(text: &str, inventory: &'a [Host]) -> Vec<&'a Host> {
    let words: Vec<&str> = text
        .split(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | '@' | ':' | '/')))
        .map(|w| w.trim_end_matches(['.', ':']))
        .filter(|w| !w.is_empty())
        .collect();
    // `@web01` and `deploy@web01:22` name web01 too.
    let names: Vec<&str> = words
        .iter()
        .flat_map(|w| {
            let host = w.rsplit('@').next().unwrap_or(w);
            [*w, host.split(':').next().unwrap_or(host)]
        })
        .collect();
    let mut found: Vec<&Host> = Vec::new();
    for host in inventory {
        let by_name = names.contains(&host.name.as_str());
        let by_tag = host.tags.iter().any(|t| words.contains(&format!("@{t}").as_str()));
        if (by_name || by_tag) && !found.iter().any(|h| h.name == host.name) {
            found.push(host);
        }
    }
    found
}

/// Words that partially match several host names or tags ("web" for web01, web02).
fn loose_matches(text: &str, inventory: &[Host]) -> bool {
    text.split(|c: char| !c.is_ascii_alphanumeric()).filter(|w| w.len() >= 3).any(|w| {
        let w = w.to_lowercase();
        let hits = inventory
            .iter()
            .filter(|h| {
                !h.is_local() && (h.name.to_lowercase().starts_with(&w) || h.tags.iter().any(|t| t.to_lowercase() == w))
            })
            .count();
        hits >= 2
    })
}

fn describe(hosts: &[&Host]) -> String {
    let lines: Vec<String> = hosts
        .iter()
        .map(|h| {
            format!(
                "- {} ({}{}), tags: {}",
                h.name,
                h.hostname,
                if h.port == 22 { String::new() } else { format!(":{}", h.port) },
                h.tags.join(",")
            )
        })
        .collect();
    format!("Hosts the operator refers to:\n{}", lines.join("\n"))
}

/// The context line to prepend to the task, if any hosts are meant.
pub async fn context_for(agent: &Agent, task: &str) -> Option<String> {
    let exact = mentioned(task, &agent.inventory);
    if !exact.is_empty() {
        return Some(describe(&exact));
    }
    if !loose_matches(task, &agent.inventory) {
        return None;
    }
    // Ambiguous: ask the fast model which inventory hosts are meant.
    let names: Vec<String> = agent.inventory.iter().map(|h| format!("{} [{}]", h.name, h.tags.join(","))).collect();
    let prompt = format!(
        "Inventory: {}\nOperator's text: {task}\nWhich hosts does the operator mean? Reply with only a JSON array of host names.",
        names.join("; ")
    );
    let sink = |_: &str| {};
    let observer = agent.observer.clone();
    let notice = move |text: String| observer(AgentEvent::Notice(text));
    let answer = agent.llm.chat(ModelRole::Fast, vec![Message::user(prompt)], Vec::new(), &sink, &notice).await.ok()?;
    let start = answer.content.find('[')?;
    let end = answer.content.rfind(']')?;
    let picked: Vec<String> = serde_json::from_str::<Value>(&answer.content[start..=end])
        .ok()?
        .as_array()?
        .iter()
        .filter_map(|v| v.as_str().map(String::from))
        .collect();
    let hosts: Vec<&Host> = agent.inventory.iter().filter(|h| picked.contains(&h.name)).collect();
    (!hosts.is_empty()).then(|| describe(&hosts))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_names_and_tags_and_spots_loose_references() {
        let mut web1 = Host::new("web01", "10.0.0.1");
        web1.add_tag("web");
        let mut web2 = Host::new("web02", "10.0.0.2");
        web2.add_tag("web");
        let db = Host::new("db01", "10.0.0.3");
        let bastion = Host::new("bastion", "10.0.0.254");
        let inv = vec![web1, web2, db, bastion];
        let names = |t: &str| mentioned(t, &inv).iter().map(|h| h.name.clone()).collect::<Vec<_>>();
        assert_eq!(names("disk full on db01?"), ["db01"]);
        assert_eq!(names("check @web now."), ["web01", "web02"]);
        assert!(names("nothing here").is_empty());
        assert_eq!(names("why is @web01 slow?"), ["web01"]);
        assert_eq!(names("reach db01 via bastion"), ["db01", "bastion"]);
        assert_eq!(names("ssh deploy@web02:22 fails"), ["web02"]);
        assert!(loose_matches("the web servers are slow", &inv));
        assert!(!loose_matches("the database is slow", &inv));
    }
}
