//! The inventory's order and column pickers, health readings, `s`, and a host's state after a
//! change it never ran.

use crossterm::event::KeyCode;

use super::tests::{key, model, type_text};
use super::*;
use crate::app::inventory::{Picker, Sort};
use crate::exec::HostResult;
use crate::exec::runs::HostState;
use crate::inventory::columns::Column;
use crate::store::host_health::{HealthCheck, HealthLevel, HealthReading};

fn names(m: &Model) -> Vec<String> {
    m.visible_hosts().iter().map(|h| h.name.clone()).collect()
}

fn reading(host: &str, check: HealthCheck, value: f64, level: HealthLevel) -> HealthReading {
    HealthReading { host: host.into(), check, value, level, at: "2026-11-26T10:00:00Z".into() }
}

/// `o`, then to row `n` of the picker, then Enter.
fn order_by_row(m: &mut Model, n: usize) {
    update(m, key(KeyCode::Char('o')));
    update(m, key(KeyCode::Char('g')));
    for _ in 0..n {
        update(m, key(KeyCode::Down));
    }
    update(m, key(KeyCode::Enter));
}

#[test]
fn the_order_picker_sorts_by_name_and_again_reverses_keeping_the_cursor_on_its_host() {
    let mut m = model();
    assert_eq!(names(&m), ["localhost", "web01", "web02", "db01"]);
    update(&mut m, key(KeyCode::Char('G')));
    assert_eq!(m.current_host().map(|h| h.name.as_str()), Some("db01"));
    // Row 0 is the inventory's order; row 1 the name column.
    order_by_row(&mut m, 1);
    assert_eq!(m.inventory.sort, Some(Sort { column: Column::Name, descending: false }));
    assert_eq!(names(&m), ["db01", "localhost", "web01", "web02"]);
    assert_eq!(m.current_host().map(|h| h.name.as_str()), Some("db01"), "the cursor stays on its host");
    assert!(m.inventory.picker.is_none());
    // The picker opens on the current order: Enter again reverses it.
    update(&mut m, key(KeyCode::Char('o')));
    assert_eq!(m.inventory.picker, Some((Picker::Order, 1)));
    update(&mut m, key(KeyCode::Enter));
    assert_eq!(names(&m), ["web02", "web01", "localhost", "db01"]);
    assert_eq!(m.inventory.cursor, 3);
    // The first row goes back to the inventory's order.
    update(&mut m, key(KeyCode::Char('o')));
    update(&mut m, key(KeyCode::Char('g')));
    update(&mut m, key(KeyCode::Enter));
    assert_eq!(m.inventory.sort, None);
    assert_eq!(names(&m), ["localhost", "web01", "web02", "db01"]);
}

#[test]
fn health_orders_worst_first_with_hosts_never_read_last_and_follows_new_readings() {
    let mut m = model();
    update(
        &mut m,
        Msg::Health(vec![
            reading("web01", HealthCheck::Disk, 97.0, HealthLevel::Crit),
            reading("db01", HealthCheck::Disk, 40.0, HealthLevel::Ok),
            reading("web02", HealthCheck::Disk, 88.0, HealthLevel::Warn),
        ]),
    );
    // Disk is the fifth column: descending after a second Enter.
    order_by_row(&mut m, 5);
    assert_eq!(m.inventory.sort.map(|s| s.column), Some(Column::Disk));
    assert_eq!(names(&m), ["db01", "web02", "web01", "localhost"], "ascending, never read last");
    order_by_row(&mut m, 5);
    assert_eq!(names(&m), ["web01", "web02", "db01", "localhost"], "descending, never read still last");
    // The store's readings, db01's newer.
    update(
        &mut m,
        Msg::Health(vec![
            reading("web01", HealthCheck::Disk, 97.0, HealthLevel::Crit),
            reading("db01", HealthCheck::Disk, 99.0, HealthLevel::Crit),
            reading("web02", HealthCheck::Disk, 88.0, HealthLevel::Warn),
        ]),
    );
    assert_eq!(names(&m), ["db01", "web01", "web02", "localhost"]);
    // The filter's answer is ordered too.
    update(&mut m, key(KeyCode::Char('/')));
    type_text(&mut m, "web");
    update(&mut m, key(KeyCode::Enter));
    assert_eq!(names(&m), ["web01", "web02"]);
}

#[test]
fn the_column_picker_toggles_columns_for_the_session() {
    let mut m = model();
    assert_eq!(m.inventory.columns, Column::ALL);
    update(&mut m, key(KeyCode::Char('C')));
    assert_eq!(m.inventory.picker, Some((Picker::Columns, 0)));
    // Row 0 is the address (the name is always shown): hide it, then the state (row 1).
    update(&mut m, key(KeyCode::Enter));
    update(&mut m, key(KeyCode::Down));
    update(&mut m, key(KeyCode::Char(' ')));
    assert!(!m.inventory.columns.contains(&Column::Address) && !m.inventory.columns.contains(&Column::State));
    assert!(m.inventory.picker.is_some(), "several columns are toggled in a row");
    // Shown again: at the end.
    update(&mut m, key(KeyCode::Up));
    update(&mut m, key(KeyCode::Enter));
    assert_eq!(m.inventory.columns.last(), Some(&Column::Address));
    update(&mut m, key(KeyCode::Esc));
    assert!(m.inventory.picker.is_none());
    assert_eq!(m.input_mode(), crate::app::model::InputMode::Panes);
}

#[test]
fn a_denied_change_does_not_leave_its_hosts_pending() {
    let mut m = model();
    // web01 ran something before: it was ok.
    update(&mut m, key(KeyCode::Char('j')));
    update(&mut m, key(KeyCode::Char('!')));
    type_text(&mut m, "uptime");
    update(&mut m, key(KeyCode::Enter));
    let ok = HostResult { host: "web01".into(), exit_code: Some(0), ..Default::default() };
    update(&mut m, Msg::RunDone { run: 1, results: vec![ok] });
    assert_eq!(m.host_run_state("web01"), Some(HostState::Ok));
    // A change is asked on web01 and db01: both are pending while the approval waits.
    update(&mut m, key(KeyCode::Char(' ')));
    update(&mut m, key(KeyCode::Char('G')));
    update(&mut m, key(KeyCode::Char(' ')));
    update(&mut m, key(KeyCode::Char('!')));
    type_text(&mut m, "systemctl restart nginx");
    update(&mut m, key(KeyCode::Enter));
    assert_eq!(m.host_run_state("web01"), Some(HostState::Pending));
    assert_eq!(m.host_run_state("db01"), Some(HostState::Pending));
    // Denied (or stopped with Ctrl-C while asked, which the worker reports the same way).
    update(&mut m, Msg::RunDenied { run: 2, by: "tester (console)".into() });
    assert_eq!(m.host_run_state("web01"), Some(HostState::Ok), "the state it had before");
    assert_eq!(m.host_run_state("db01"), None, "never ran anything");
}

#[test]
fn s_asks_for_an_ssh_session_to_the_host_under_the_cursor_not_localhost() {
    let mut m = model();
    assert!(update(&mut m, key(KeyCode::Char('s'))).is_empty());
    assert!(m.flash.as_deref().is_some_and(|f| f.contains("localhost")), "{:?}", m.flash);
    update(&mut m, key(KeyCode::Char('j')));
    let effects = update(&mut m, key(KeyCode::Char('s')));
    assert!(matches!(&effects[..], [Effect::Ssh(h)] if h.name == "web01"), "{effects:?}");
}
