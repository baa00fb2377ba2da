//! The shared store's news (ADR 0032): a ring re-reads what the console shows; a lost store makes
//! the console read-only (it keeps showing what it has and says so) until the store is back, when
//! everything is read again.

use crate::app::model::{ChatEntry, ChatRole, Model, ToastLevel};
use crate::app::msg::{Effect, Msg};
use crate::store::doorbell::Topic;

/// Another writer committed a change: read again what it touched. The dashboard re-read covers
/// pipelines, drift, health and the audit's counts, and reloads the inventory when its version
/// moved; "always allow" rules are read by the approval gate each time it decides.
pub(super) fn on_changed(model: &mut Model, topic: Topic) -> Vec<Effect> {
    match (topic, model.store_down.is_some()) {
        // A ring proves the connection: the loss was already followed by `StoreBack` or is stale.
        (_, true) => Vec::new(),
        (Topic::Rules, false) => Vec::new(),
        (Topic::Audit, false) => vec![Effect::Refresh, Effect::CheckAudit],
        (_, false) => vec![Effect::Refresh],
    }
}

/// The store went away: said once, in the status bar until it is back.
pub(super) fn on_lost(model: &mut Model, why: String) -> Vec<Effect> {
    if model.store_down.is_none() {
        let text = model.locale.tf("toast.store_lost", &[("error", &why)]);
        model.toast(ToastLevel::Error, text);
    }
    model.store_down = Some(why);
    Vec::new()
}

/// The store answers again: everything shown is read again (rings sent meanwhile were lost).
pub(super) fn on_back(model: &mut Model) -> Vec<Effect> {
    if model.store_down.take().is_none() {
        return Vec::new();
    }
    let text = model.locale.t("toast.store_back").to_string();
    model.toast(ToastLevel::Info, text);
    vec![Effect::ReloadHosts, Effect::Refresh]
}

/// While the store cannot be reached, work that would write to it is not started: a command would
/// run without its audit entry written first, an edit would be lost. The person is told why once per
/// refusal; returns the messages that end what was refused (a run denied, a watch refused, the
/// agent's turn stopped) and the effects kept.
pub(super) fn refuse_writes_while_down(model: &mut Model, effects: Vec<Effect>) -> (Vec<Msg>, Vec<Effect>) {
    let Some(why) = model.store_down.clone() else { return (Vec::new(), effects) };
    let (refused, kept): (Vec<Effect>, Vec<Effect>) = effects.into_iter().partition(Effect::writes_store);
    if refused.is_empty() {
        return (Vec::new(), kept);
    }
    let text = model.locale.tf("note.store_read_only", &[("error", &why)]);
    model.push_chat(ChatEntry::new(ChatRole::System, text));
    model.chat_view.scroll = 0;
    let unreachable = model.locale.t("status.store_down").to_string();
    let endings = refused
        .into_iter()
        .filter_map(|effect| match effect {
            Effect::RunCommand { run, .. } => Some(Msg::RunDenied { run, by: unreachable.clone() }),
            Effect::RunWatchRound { watch, .. } | Effect::StartWatch { watch, .. } => {
                Some(Msg::WatchRefused { watch, why: unreachable.clone() })
            }
            Effect::AgentTurn(_) => Some(Msg::AgentDone { error: Some(unreachable.clone()), summary: String::new() }),
            Effect::CheckDrift => {
                Some(Msg::DriftChecked { resources: 0, findings: 0, failed: vec![unreachable.clone()] })
            }
            _ => None,
        })
        .collect();
    (endings, kept)
}

#[cfg(test)]
mod tests {
    use crossterm::event::KeyCode;

    use super::super::tests::{key, model, type_text};
    use super::super::update;
    use super::*;
    use crate::app::msg::Msg;
    use crate::exec::runs::RunState;

    fn run_uptime(m: &mut Model) -> Vec<Effect> {
        update(m, key(KeyCode::Char('!')));
        type_text(m, "uptime");
        update(m, key(KeyCode::Enter))
    }

    #[test]
    fn a_lost_store_makes_the_console_read_only_until_it_is_back() {
        let mut m = model();
        assert!(update(&mut m, Msg::StoreLost("the store at postgres://ops@db/m cannot be reached".into())).is_empty());
        assert_eq!(m.toasts.len(), 1, "said once");
        update(&mut m, Msg::StoreLost("again".into()));
        assert_eq!(m.toasts.len(), 1, "a second loss is not a second toast");

        // A command is not started: its run ends as denied, the chat says why, nothing runs.
        let effects = run_uptime(&mut m);
        assert!(!effects.iter().any(Effect::writes_store), "{effects:?}");
        assert!(matches!(&effects[..], [Effect::SaveHistory(_)]), "{effects:?}");
        let run = m.runs.values().last().expect("the run is listed");
        assert_eq!(run.state, RunState::Denied);
        let said = &m.chat.last().unwrap().text;
        assert!(said.contains("cannot be reached") && said.contains("again"), "{said}");
        // Rings while lost re-read nothing (the loss is what is shown).
        assert!(update(&mut m, Msg::StoreChanged(Topic::Inventory)).is_empty());

        // Back: everything is read again, and commands run again.
        let effects = update(&mut m, Msg::StoreBack);
        assert!(matches!(&effects[..], [Effect::ReloadHosts, Effect::Refresh]), "{effects:?}");
        assert!(m.store_down.is_none());
        assert!(update(&mut m, Msg::StoreBack).is_empty(), "a second back changes nothing");
        let effects = run_uptime(&mut m);
        assert!(effects.iter().any(|e| matches!(e, Effect::RunCommand { .. })), "{effects:?}");
    }

    #[test]
    fn a_ring_re_reads_what_it_touched() {
        let mut m = model();
        for topic in [Topic::Inventory, Topic::Pipelines, Topic::Drift, Topic::Health, Topic::Reviews, Topic::Unknown] {
            assert!(matches!(&update(&mut m, Msg::StoreChanged(topic))[..], [Effect::Refresh]), "{topic:?}");
        }
        // Another operator appended: the new entries are verified against the head this home verified.
        let effects = update(&mut m, Msg::StoreChanged(Topic::Audit));
        assert!(matches!(&effects[..], [Effect::Refresh, Effect::CheckAudit]), "{effects:?}");
        assert!(update(&mut m, Msg::StoreChanged(Topic::Rules)).is_empty(), "rules are read when deciding");
    }

    #[test]
    fn an_agent_turn_asked_while_lost_ends_at_once() {
        let mut m = model();
        m.model_configured = true;
        update(&mut m, Msg::StoreLost("down".into()));
        let effects = update(&mut m, Msg::Typed("why is web01 slow?".into()));
        assert!(!effects.iter().any(|e| matches!(e, Effect::AgentTurn(_))), "{effects:?}");
        assert!(m.chat.iter().any(|e| e.text == "why is web01 slow?"), "the question was asked");
        assert!(m.chat.iter().any(|e| e.text.contains("cannot be reached")), "and refused, saying why");
        assert!(!m.agent_busy, "the turn ended, the input is free");
    }
}

#[cfg(test)]
mod review_tests {
    use super::super::tests::model;
    use super::super::update;
    use crate::app::boards::{Dashboard, PendingReview};
    use crate::app::msg::Msg;

    fn waiting(id: i64, who: &str) -> PendingReview {
        PendingReview {
            id,
            requested_by: who.into(),
            why: "@prod".into(),
            summary: "restart nginx".into(),
            expires_at: "2026-11-26T23:10:00.000Z".into(),
        }
    }

    #[test]
    fn a_teammates_waiting_change_is_toasted_once_and_ones_own_is_not() {
        let mut m = model();
        m.operator = "bob".into();
        let board = |reviews| Msg::Dashboard(Box::new(Dashboard { reviews, ..Default::default() }));
        update(&mut m, board(vec![waiting(1, "alice"), waiting(2, "bob")]));
        let said: Vec<&str> = m.toasts.iter().map(|t| t.text.as_str()).collect();
        assert_eq!(said, ["Change request #1 from alice waits for a second person (@prod): :review 1"]);
        update(&mut m, board(vec![waiting(1, "alice"), waiting(2, "bob")]));
        assert_eq!(m.toasts.len(), 1, "said once");
        let effects = update(&mut m, Msg::Typed(":review 1".into()));
        assert!(effects.iter().any(|e| matches!(e, crate::app::msg::Effect::Review(1))), "{effects:?}");
    }
}
