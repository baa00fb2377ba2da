//! Snapshots of the inventory's order (the arrow in its header), its health columns coloured by
//! verdict, the column and order pickers, and headers in another language.

use ratatui::Terminal;
use ratatui::backend::TestBackend;

use super::fixtures::*;
use crate::app::inventory::Picker;
use crate::app::model::Model;

fn render(model: &Model, width: u16, height: u16) -> Terminal<TestBackend> {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    terminal.draw(|f| super::view(model, f)).unwrap();
    terminal
}

/// The style of the first cell showing `text` on screen.
fn style_of(terminal: &Terminal<TestBackend>, text: &str) -> ratatui::style::Style {
    let buffer = terminal.backend().buffer();
    let width = usize::from(buffer.area.width);
    let cells = buffer.content();
    let symbols: Vec<&str> = cells.iter().map(|c| c.symbol()).collect();
    for start in 0..cells.len() {
        if start % width + text.chars().count() <= width
            && symbols[start..].iter().take(text.chars().count()).copied().collect::<String>() == text
        {
            return cells[start].style();
        }
    }
    panic!("{text:?} is not on screen");
}

#[test]
fn inventory_ordered_by_disk_with_health_columns_coloured() {
    let m = fixture_inventory_health();
    let terminal = render(&m, 120, 14);
    let screen = terminal.backend().to_string();
    assert!(screen.contains("disk▼"), "{screen}");
    let rows: Vec<&str> = screen.lines().filter(|l| l.contains("10.20.") || l.contains("local")).collect();
    let order: Vec<&str> = ["web02", "db01", "web01", "localhost", "cache01"].to_vec();
    let found: Vec<&str> =
        rows.iter().filter_map(|r| order.iter().find(|n| r.contains(&format!(" {n} "))).copied()).collect();
    assert_eq!(found, order, "fullest disk first, never read last:\n{screen}");
    assert!(rows.last().is_some_and(|r| r.contains('–')), "a reading never taken is shown as –:\n{screen}");
    // Coloured through the theme's named fields.
    assert_eq!(style_of(&terminal, "97%").fg, m.theme.health_crit.fg);
    assert_eq!(style_of(&terminal, "88%").fg, m.theme.health_warn.fg);
    assert_eq!(style_of(&terminal, "62%").fg, m.theme.health_ok.fg);
    assert_ne!(m.theme.health_crit.fg, m.theme.health_ok.fg);
    insta::assert_snapshot!(terminal.backend());
}

#[test]
fn inventory_column_picker() {
    let mut m = fixture_inventory_health();
    m.inventory.columns.retain(|c| *c != crate::inventory::columns::Column::Tags);
    m.inventory.picker = Some((Picker::Columns, 2));
    insta::assert_snapshot!(render(&m, 120, 20).backend());
}

#[test]
fn inventory_order_picker() {
    let mut m = fixture_inventory_health();
    m.inventory.picker = Some((Picker::Order, 5));
    insta::assert_snapshot!(render(&m, 120, 20).backend());
}

/// The inventory pane's rows as text, borders stripped, on a `width` × 34 screen.
fn inventory_rows(m: &Model, width: u16) -> Vec<String> {
    let terminal = render(m, width, 34);
    let area = m.areas(ratatui::layout::Rect::new(0, 0, width, 34)).inventory;
    let buffer = terminal.backend().buffer();
    (area.y + 1..area.y + area.height - 1)
        .map(|y| (area.x + 1..area.x + area.width - 1).map(|x| buffer[(x, y)].symbol()).collect::<String>())
        .collect()
}

fn french(mut m: Model) -> Model {
    m.set_locale(crate::i18n::Locale::new("fr").unwrap());
    m
}

#[test]
fn the_columns_shown_do_not_change_with_the_language() {
    // db01's row holds no translated word: the same columns give the same row in both languages.
    let row = |m: &Model, width| {
        let rows = inventory_rows(m, width);
        let row = rows.iter().find(|r| r.contains(" db01 ")).cloned().unwrap_or_default();
        row.split_whitespace().map(String::from).collect::<Vec<_>>()
    };
    for width in [90, 110, 120, 160, 200] {
        let en = fixture_detailed_inventory();
        let fr = french(fixture_detailed_inventory());
        assert_eq!(row(&en, width), row(&fr, width), "at {width} columns");
    }
    // At 200 columns every column with a value is there, in both languages, its header whole.
    let en = inventory_rows(&fixture_detailed_inventory(), 200);
    let fr = inventory_rows(&french(fixture_detailed_inventory()), 200);
    for header in ["name", "address", "tags", "user", "elevation", "last check"] {
        assert!(en[0].contains(header), "{header}: {}", en[0]);
    }
    for header in ["nom", "adresse", "étiquettes", "utilisateur", "élévation", "dernière vérif"] {
        assert!(fr[0].contains(header), "{header}: {}", fr[0]);
    }
    assert!(en.iter().any(|r| r.contains("sudo_password 11-22 10:40")), "{en:#?}");
    insta::assert_snapshot!(
        "inventory_at_200_columns_english",
        render(&fixture_detailed_inventory(), 200, 34).backend()
    );
    insta::assert_snapshot!(
        "inventory_at_200_columns_french",
        render(&french(fixture_detailed_inventory()), 200, 34).backend()
    );
}

#[test]
fn a_header_wider_than_its_column_is_cut_not_the_column_left_out() {
    // A narrow pane: French headers longer than their values end in "…"; the English ones fit.
    let fr = inventory_rows(&french(fixture_detailed_inventory()), 110);
    let en = inventory_rows(&fixture_detailed_inventory(), 110);
    assert!(fr[0].contains('…'), "{}", fr[0]);
    assert_eq!(fr[0].split_whitespace().count(), en[0].split_whitespace().count(), "{}\n{}", fr[0], en[0]);
}

#[test]
fn the_ordered_column_is_shown_with_its_arrow_even_when_it_does_not_fit() {
    use crate::app::inventory::{Sort, set_sort};
    use crate::inventory::columns::Column;
    let mut m = fixture_inventory_health();
    m.zoomed = false;
    // Last in the chosen order, and no room for it in a third of 110 columns.
    set_sort(&mut m, Some(Sort { column: Column::LastCheck, descending: true }));
    let rows = inventory_rows(&m, 110);
    assert!(rows[0].contains('▼'), "{}", rows[0]);
    assert!(rows[0].trim_end().ends_with('▼') && rows[0].contains("last"), "{}", rows[0]);
    assert!(rows.iter().any(|r| r.contains(" web02 ") && r.contains("11-22")), "{rows:#?}");
    // Right after the name in priority, not in place: the chosen order stays.
    set_sort(&mut m, Some(Sort { column: Column::Elevation, descending: false }));
    let rows = inventory_rows(&m, 110);
    assert!(rows[0].contains('▲') && rows.iter().any(|r| r.contains("sudo")), "{rows:#?}");
    insta::assert_snapshot!(render(&m, 110, 14).backend());
}

#[test]
fn on_a_wide_screen_the_inventory_takes_the_width_its_columns_need() {
    let m = fixture_detailed_inventory();
    let wide = m.areas(ratatui::layout::Rect::new(0, 0, 200, 34)).inventory.width;
    assert!(wide > 68 && wide <= 100, "{wide}");
    // On a narrow screen, a third as before.
    assert_eq!(m.areas(ratatui::layout::Rect::new(0, 0, 120, 34)).inventory.width, 40);
    let rows = inventory_rows(&m, 200);
    assert!(rows[0].contains("elevation") && rows[0].contains("last check"), "{}", rows[0]);
}

#[test]
fn the_hint_bar_lists_columns_and_mark_all_and_drops_whole_hints() {
    let status = |m: &Model, width| render(m, width, 34).backend().to_string().lines().last().unwrap_or("").to_string();
    let en = status(&fixture_detailed_inventory(), 200);
    assert!(en.contains("a all") && en.contains("C columns") && en.contains("e edit"), "{en}");
    let m = french(fixture_detailed_inventory());
    let fr = status(&m, 200);
    assert!(fr.contains("a tous") && fr.contains("C colonnes"), "{fr}");
    // Too narrow for all of them in French: whole hints, then "…".
    let hints: Vec<String> =
        m.keymap.hints(m.focus).into_iter().map(|(k, a)| format!("{k} {}", m.locale.t(a.hint_key()))).collect();
    let shown = fr.split('│').nth(1).unwrap_or("").trim_matches(|c| c == ' ' || c == '"').to_string();
    let pieces: Vec<&str> = shown.split(" · ").collect();
    assert_eq!(pieces.last(), Some(&"…"), "{fr}");
    for piece in &pieces[..pieces.len() - 1] {
        assert!(hints.iter().any(|h| h == piece), "{piece:?} is a whole hint: {fr}");
    }
}
