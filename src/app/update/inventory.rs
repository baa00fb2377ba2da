//! The inventory's order and column pickers, and `s`: an interactive SSH session to the host
//! under the cursor (the runtime suspends the console, runs the system `ssh`, and comes back).

use crossterm::event::{KeyCode, KeyEvent};

use crate::app::inventory::{Picker, Sort, set_sort};
use crate::app::keymap::{Action, KeyContext};
use crate::app::model::Model;
use crate::app::msg::Effect;

/// `o` (order by) or `C` (columns): opens the picker on the current choice.
pub(super) fn open_picker(model: &mut Model, picker: Picker) {
    let rows = picker.rows();
    let at = match picker {
        Picker::Order => {
            let current = model.inventory.sort.map(|s| s.column);
            rows.iter().position(|r| *r == current).unwrap_or(0)
        }
        Picker::Columns => 0,
    };
    model.inventory.picker = Some((picker, at));
}

/// A key while a picker is open: move, Enter (or space) chooses, Esc closes.
pub(super) fn on_picker_key(model: &mut Model, key: KeyEvent) {
    let Some((picker, cursor)) = model.inventory.picker else { return };
    let rows = picker.rows();
    let action = model.keymap.action(KeyContext::Inventory, &key);
    match (key.code, action) {
        (KeyCode::Esc, _) => model.inventory.picker = None,
        (KeyCode::Enter | KeyCode::Char(' '), _) => match (picker, rows.get(cursor).copied().flatten()) {
            (Picker::Order, column) => {
                choose_order(model, column);
                model.inventory.picker = None;
            }
            // The picker stays open: several columns are toggled in a row.
            (Picker::Columns, Some(column)) => toggle_column(model, column),
            (Picker::Columns, None) => {}
        },
        (_, Some(Action::Down)) => model.inventory.picker = Some((picker, (cursor + 1).min(rows.len() - 1))),
        (_, Some(Action::Up)) => model.inventory.picker = Some((picker, cursor.saturating_sub(1))),
        (_, Some(Action::Top)) => model.inventory.picker = Some((picker, 0)),
        (_, Some(Action::Bottom)) => model.inventory.picker = Some((picker, rows.len() - 1)),
        // The key that opened a picker closes it.
        (_, Some(Action::Sort)) if picker == Picker::Order => model.inventory.picker = None,
        (_, Some(Action::Columns)) if picker == Picker::Columns => model.inventory.picker = None,
        _ => {}
    }
}

/// Orders by `column` (ascending; descending when it is already the order), or the inventory's
/// own order for `None`.
pub(super) fn choose_order(model: &mut Model, column: Option<crate::inventory::columns::Column>) {
    let sort = column.map(|column| match model.inventory.sort {
        Some(s) if s.column == column => Sort { column, descending: !s.descending },
        _ => Sort { column, descending: false },
    });
    set_sort(model, sort);
}

/// Shows `column` if hidden, hides it if shown (for this session; appended at the end when shown).
pub(super) fn toggle_column(model: &mut Model, column: crate::inventory::columns::Column) {
    let columns = &mut model.inventory.columns;
    match columns.iter().position(|c| *c == column) {
        Some(i) => {
            columns.remove(i);
        }
        None => columns.push(column),
    }
}

/// `s`: an interactive SSH session to the host under the cursor (not localhost: it is this machine).
pub(super) fn ssh(model: &mut Model) -> Vec<Effect> {
    match model.current_host() {
        Some(h) if h.is_local() => {
            model.flash = Some(model.locale.t("flash.ssh_local").to_string());
            Vec::new()
        }
        Some(h) => vec![Effect::Ssh(Box::new(h.clone()))],
        None => Vec::new(),
    }
}
