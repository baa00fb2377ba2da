//! Snapshots of the output pane's marks: a watch's changes, folded hosts, and
//! search matches (the match, not the line). Styles are not in text
//! snapshots, so each also checks which cells carry the mark.

use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::style::Modifier;

use super::fixtures::*;
use crate::app::msg::Msg;
use crate::app::update::update;

fn render(model: &crate::app::model::Model, width: u16, height: u16) -> Terminal<TestBackend> {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    terminal.draw(|f| super::view(model, f)).unwrap();
    terminal
}

/// The runs of neighbouring cells that `keep` picks, as text.
fn marked_cells(terminal: &Terminal<TestBackend>, keep: impl Fn(&ratatui::buffer::Cell) -> bool) -> Vec<String> {
    let buffer = terminal.backend().buffer();
    let mut runs = Vec::new();
    for y in 0..buffer.area.height {
        let mut run = String::new();
        for x in 0..buffer.area.width {
            let cell = &buffer[(x, y)];
            if keep(cell) {
                run.push_str(cell.symbol());
            } else if !run.is_empty() {
                runs.push(std::mem::take(&mut run));
            }
        }
        if !run.is_empty() {
            runs.push(run);
        }
    }
    runs
}

#[test]
fn watch_marks_what_changed_since_the_previous_round() {
    let m = fixture_watch();
    let terminal = render(&m, 110, 30);
    insta::assert_snapshot!(terminal.backend());
    let theme = &m.theme;
    let changed =
        marked_cells(&terminal, |c| c.modifier.contains(Modifier::BOLD) && c.bg == theme.added.bg.unwrap_or_default());
    assert_eq!(changed, ["9", "1", "7"], "only the characters that changed on web01 (16G→19G, 24G→21G, 41%→47%)");
}

#[test]
fn folded_host_leaves_one_line_at_the_top() {
    let mut m = fixture_watch();
    m.output.set_folded("web02", true);
    insta::assert_snapshot!(render(&m, 110, 30).backend());
}

#[test]
fn search_highlights_the_match_not_the_line() {
    let mut m = fixture_with_output();
    update(&mut m, Msg::Key(crossterm::event::KeyEvent::from(crossterm::event::KeyCode::Char('/'))));
    for c in "LOAD".chars() {
        update(&mut m, Msg::Key(crossterm::event::KeyEvent::from(crossterm::event::KeyCode::Char(c))));
    }
    let terminal = render(&m, 110, 24);
    insta::assert_snapshot!(terminal.backend());
    // The theme's selection is reversed video (the status bar's pane name is too).
    let mut hits = marked_cells(&terminal, |c| c.modifier.contains(Modifier::REVERSED) && c.symbol() != " ");
    hits.retain(|h| h != "OUTPUT");
    assert_eq!(hits, ["load", "load"], "each match, whatever its case, and nothing else of its line");
}

#[test]
fn one_line_is_said_in_the_singular() {
    use crate::app::model::Pane;
    use crate::app::output_buffer::LineKind;
    use crate::exec::Stream;
    use crossterm::event::{KeyCode, KeyEvent};
    for (code, one, two) in [
        (
            "en",
            ["1 line folded", "selecting 1 line", "copied 1 line"],
            ["2 lines folded", "selecting 2 lines", "copied 2 lines"],
        ),
        (
            "fr",
            ["1 ligne repliée", "sélection d'une ligne", "1 ligne copiée"],
            ["2 lignes repliées", "sélection de 2 lignes", "2 lignes copiées"],
        ),
    ] {
        for (count, said) in [(1, one), (2, two)] {
            let mut m = fixture_model();
            m.set_locale(crate::i18n::Locale::new(code).unwrap());
            m.set_focus(Pane::Output);
            for i in 0..count {
                let kind = LineKind::Output { host: "web01".into(), stream: Stream::Stdout };
                m.output.push(kind, format!("line {i}"));
            }
            // Folded: the line at the top counts the lines.
            m.output.set_folded("web01", true);
            let screen = render(&m, 110, 30).backend().to_string();
            assert!(screen.contains(said[0]), "{said:?}: {screen}");
            m.output.set_folded("web01", false);
            // Selected, then copied.
            m.output_view.follow = false;
            m.output_view.cursor = 0;
            m.output_view.anchor = Some(count - 1);
            let screen = render(&m, 110, 30).backend().to_string();
            assert!(screen.contains(said[1]), "{said:?}: {screen}");
            update(&mut m, Msg::Key(KeyEvent::from(KeyCode::Char('y'))));
            assert_eq!(m.flash.as_deref(), Some(said[2]));
        }
    }
}
