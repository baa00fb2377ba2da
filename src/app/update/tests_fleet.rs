//! A fleet too large to filter between two frames: jobs for a worker, the
//! newest winning, narrowing, reloads and reachability beside a shared fleet.

use std::sync::Arc;

use crossterm::event::KeyCode;

use super::tests::{key, type_text};
use super::*;
use crate::app::fleet::{FilterJob, Fleet, tests::generated};
use crate::app::theme::Theme;

/// More hosts than the loop filters itself.
fn large() -> Model {
    Model::new(generated(SYNC_LIMIT + 2_000), false, 100, Theme::plain())
}

/// So many that "we" still keeps more hosts than the loop filters itself.
fn larger() -> Model {
    Model::new(generated(SYNC_LIMIT * 4), false, 100, Theme::plain())
}

fn jobs(effects: Vec<Effect>) -> Vec<FilterJob> {
    effects
        .into_iter()
        .filter_map(|e| match e {
            Effect::Filter(job) => Some(job),
            _ => None,
        })
        .collect()
}

/// What a worker does with a job.
fn answer(m: &mut Model, job: FilterJob) -> Vec<Effect> {
    let id = job.id;
    let shown = job.run(&|| false).expect("not stopped");
    update(m, Msg::Filtered { job: id, shown: Box::new(shown) })
}

fn names(m: &Model) -> Vec<String> {
    m.visible_hosts().iter().map(|h| h.name.clone()).collect()
}

#[test]
fn a_large_fleet_is_filtered_by_a_worker_and_the_newest_query_wins() {
    let mut m = larger();
    let all = m.hosts.len();
    update(&mut m, key(KeyCode::Char('/')));
    let mut w = jobs(type_text(&mut m, "w"));
    assert_eq!(w.len(), 1, "one job for the keystroke");
    assert_eq!(m.visible_count(), all, "the unfiltered list stays until the answer");
    assert_eq!(m.inventory.filter, "w", "the keystroke is shown at once");
    let mut we = jobs(type_text(&mut m, "e"));
    assert_eq!(we.len(), 1);
    // The answer to "w" comes late: a newer query is waited for, so it is not taken.
    answer(&mut m, w.remove(0));
    assert_eq!(m.visible_count(), all);
    answer(&mut m, we.remove(0));
    let after_we = names(&m);
    assert!(after_we.len() > SYNC_LIMIT && after_we.len() < all, "{}", after_we.len());
    assert!(m.inventory.pending.is_none());
    // Typing on narrows the answer on screen: fewer hosts to score, the same result.
    let mut web = jobs(type_text(&mut m, "b"));
    let job = web.remove(0);
    assert_eq!(job.within.as_ref().map(|r| r.len()), Some(after_we.len()), "only the hosts \"we\" kept");
    answer(&mut m, job);
    let narrowed = names(&m);
    let fresh = crate::app::fleet::filter(&m.hosts, "web", None, &|| false).unwrap();
    assert_eq!(narrowed, fresh.iter().map(|&i| m.hosts[i as usize].name.clone()).collect::<Vec<_>>());
    // Once few enough hosts are left, the loop answers keystrokes itself.
    let mut answered_at_once = 0;
    for c in "-eu-w".chars() {
        match jobs(type_text(&mut m, &c.to_string())).pop() {
            Some(job) => drop(answer(&mut m, job)),
            None => answered_at_once += 1,
        }
    }
    assert!(answered_at_once > 0 && m.inventory.pending.is_none());
    let fresh = crate::app::fleet::filter(&m.hosts, "web-eu-w", None, &|| false).unwrap();
    assert_eq!(names(&m), fresh.iter().map(|&i| m.hosts[i as usize].name.clone()).collect::<Vec<_>>());
}

#[test]
fn a_query_back_to_the_one_listed_cancels_the_wait() {
    let mut m = large();
    update(&mut m, key(KeyCode::Char('/')));
    let _ = jobs(type_text(&mut m, "d"));
    assert!(m.inventory.pending.is_some());
    update(&mut m, key(KeyCode::Backspace));
    assert!(m.inventory.pending.is_none(), "an empty filter lists every host without a job");
    assert_eq!(m.visible_count(), SYNC_LIMIT + 2_001);
}

#[test]
fn a_reload_keeps_the_filtered_list_until_the_new_fleet_is_filtered() {
    let mut m = large();
    update(&mut m, key(KeyCode::Char('/')));
    let job = jobs(type_text(&mut m, "cache")).pop().expect("a job");
    answer(&mut m, job);
    let before = m.visible_count();
    assert!(before < m.hosts.len());
    let mut hosts = m.hosts.to_vec();
    hosts.push(crate::inventory::Host::new("cache-new-1", "10.9.9.9"));
    let effects = update(&mut m, Msg::HostsLoaded(Arc::new(Fleet::new(hosts))));
    let job = jobs(effects).remove(0);
    assert!(job.within.is_none(), "a new fleet is filtered whole");
    assert_eq!(m.visible_count(), before, "the old answer stays listed meanwhile");
    answer(&mut m, job);
    assert_eq!(m.visible_count(), before + 1);
    assert!(names(&m).contains(&"cache-new-1".to_string()));
}

#[test]
fn reachability_is_kept_beside_the_shared_fleet_until_the_next_load() {
    let mut m = large();
    let name = m.hosts[1].name.clone();
    let at = "2026-11-26T08:00:00Z".to_string();
    update(&mut m, Msg::HostChecked { host: name.clone(), reachable: true, at: at.clone(), error: None });
    assert_eq!((m.reachable(&m.hosts[1]), m.last_check(&m.hosts[1])), (Some(true), Some(at.as_str())));
    assert_eq!(m.hosts[1].reachable, None, "the shared fleet is not copied to change one host");
    let mut hosts = m.hosts.to_vec();
    hosts[1].reachable = Some(false);
    update(&mut m, Msg::HostsLoaded(Arc::new(Fleet::new(hosts))));
    assert_eq!(m.reachable(&m.hosts[1]), Some(false), "the store's answer, once reloaded");
}

#[test]
fn marks_of_hosts_gone_from_a_reload_are_dropped() {
    let mut m = large();
    let (kept, gone) = (m.hosts[1].name.clone(), m.hosts[2].name.clone());
    m.inventory.marked.extend([kept.clone(), gone.clone()]);
    let hosts: Vec<_> = m.hosts.iter().filter(|h| h.name != gone).cloned().collect();
    update(&mut m, Msg::HostsLoaded(Arc::new(Fleet::new(hosts))));
    assert_eq!(m.inventory.marked.iter().cloned().collect::<Vec<_>>(), [kept]);
}

#[test]
fn erasing_lists_the_answer_typed_before_without_a_job() {
    let mut m = larger();
    update(&mut m, key(KeyCode::Char('/')));
    for c in "web".chars() {
        if let Some(job) = jobs(type_text(&mut m, &c.to_string())).pop() {
            answer(&mut m, job);
        }
    }
    let (we, w) = (
        crate::app::fleet::filter(&m.hosts, "we", None, &|| false).unwrap(),
        crate::app::fleet::filter(&m.hosts, "w", None, &|| false).unwrap(),
    );
    assert!(jobs(update(&mut m, key(KeyCode::Backspace))).is_empty(), "\"we\" was answered before");
    assert_eq!(names(&m), we.iter().map(|&i| m.hosts[i as usize].name.clone()).collect::<Vec<_>>());
    assert!(jobs(update(&mut m, key(KeyCode::Backspace))).is_empty());
    assert_eq!(m.visible_count(), w.len());
    // A reload forgets them: they were answers about the old fleet.
    let hosts = m.hosts.to_vec();
    update(&mut m, Msg::HostsLoaded(Arc::new(Fleet::new(hosts))));
    assert!(m.inventory.answers.is_empty());
}
