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

#[test]
fn french_headers_are_whole_and_widths_follow_them() {
    let mut m = fixture_inventory_health();
    m.set_locale(crate::i18n::Locale::new("fr").unwrap());
    let screen = render(&m, 160, 14).backend().to_string();
    for header in ["nom", "adresse", "charge", "disque▼", "mém.", "étiquettes", "utilisateur", "élévation"] {
        assert!(screen.contains(header), "{header}:\n{screen}");
    }
    // In a narrow pane, a column that does not fit whole is left out, never cut to "dernière vé".
    m.zoomed = false;
    let narrow = render(&m, 120, 14).backend().to_string();
    assert!(!narrow.contains("dernière vé ") && !narrow.contains("élévati "), "{narrow}");
}
