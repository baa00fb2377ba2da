//! Where each pane sits for a given terminal size. Pure, so `view` draws with
//! it and `update` uses it to turn a mouse click into a focus change.

use ratatui::layout::{Constraint, Layout, Position, Rect};

use super::pane::Pane;

/// From this many columns, the inventory may take up to half the screen for its columns.
pub const WIDE: u16 = 160;

/// The screen's regions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Areas {
    pub inventory: Rect,
    /// The top-right tabs: output, pipeline, metrics, drift.
    pub view: Rect,
    pub chat: Rect,
    pub input: Rect,
    pub status: Rect,
}

impl Areas {
    /// The layout of a screen of `area` with an input `input_rows` high;
    /// `zoomed` gives the whole body to that pane (the others get no room).
    /// `inventory_wants` is the width the inventory's columns would like: on a
    /// [`WIDE`] screen the inventory grows to it, up to half the screen.
    pub fn of(area: Rect, input_rows: u16, zoomed: Option<Pane>, inventory_wants: u16) -> Self {
        let [body, input, status] =
            Layout::vertical([Constraint::Min(3), Constraint::Length(input_rows.max(1)), Constraint::Length(1)])
                .areas(area);
        let hidden = Rect::new(body.x, body.y, 0, 0);
        match zoomed {
            Some(Pane::Inventory) => return Self { inventory: body, view: hidden, chat: hidden, input, status },
            Some(Pane::Chat) => return Self { inventory: hidden, view: hidden, chat: body, input, status },
            Some(_) => return Self { inventory: hidden, view: body, chat: hidden, input, status },
            None => {}
        }
        // A third of the screen for the inventory (up to 84 columns); on a wide screen, as much as
        // its columns would like, up to half of it.
        let third = (area.width * 34 / 100).clamp(24.min(area.width), 84);
        let left_width = if area.width >= WIDE { third.max(inventory_wants.min(area.width / 2)) } else { third };
        let [inventory, right] = Layout::horizontal([Constraint::Length(left_width), Constraint::Min(10)]).areas(body);
        let [view, chat] = Layout::vertical([Constraint::Percentage(62), Constraint::Percentage(38)]).areas(right);
        Self { inventory, view, chat, input, status }
    }

    /// The pane under a click; the top-right area is whichever tab is shown.
    pub fn pane_at(&self, column: u16, row: u16, shown: Pane) -> Option<Pane> {
        let p = Position::new(column, row);
        if self.inventory.contains(p) {
            Some(Pane::Inventory)
        } else if self.view.contains(p) {
            Some(shown)
        } else if self.chat.contains(p) {
            Some(Pane::Chat)
        } else {
            None
        }
    }
}

impl Areas {
    /// The tab whose label (`labels`, in [`Pane::VIEWS`] order) is under a
    /// click on the top border of the top-right area (drawn as ` A │ B │ …`).
    pub fn tab_at(&self, column: u16, row: u16, labels: &[(Pane, usize)]) -> Option<Pane> {
        if row != self.view.y || self.view.width == 0 {
            return None;
        }
        let mut x = usize::from(self.view.x) + 3;
        for (pane, width) in labels {
            if (x..x + width).contains(&usize::from(column)) {
                return Some(*pane);
            }
            x += width + 3;
        }
        None
    }

    /// The index (among the shown hosts) of the inventory row under a click,
    /// given the table's rows on screen and the selected row (the table
    /// scrolls just enough to keep it visible).
    pub fn inventory_row(&self, row: u16, visible_rows: usize, cursor: usize) -> Option<usize> {
        let first = self.inventory.y + 2; // border, header
        if row < first || row >= first + u16::try_from(visible_rows).unwrap_or(u16::MAX) {
            return None;
        }
        let offset = (cursor + 1).saturating_sub(visible_rows);
        Some(offset + usize::from(row - first))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clicks_land_on_panes() {
        let a = Areas::of(Rect::new(0, 0, 120, 40), 1, None, 0);
        assert_eq!(a.pane_at(2, 2, Pane::Output), Some(Pane::Inventory));
        assert_eq!(a.pane_at(100, 3, Pane::Metrics), Some(Pane::Metrics));
        assert_eq!(a.pane_at(100, 35, Pane::Output), Some(Pane::Chat));
        assert_eq!(a.pane_at(100, 39, Pane::Output), None, "the status bar is not a pane");
        let zoomed = Areas::of(Rect::new(0, 0, 120, 40), 1, Some(Pane::Output), 0);
        assert_eq!((zoomed.view.width, zoomed.inventory.width, zoomed.chat.height), (120, 0, 0));
        assert_eq!(zoomed.pane_at(2, 2, Pane::Output), Some(Pane::Output), "a zoomed pane takes every click");
    }

    #[test]
    fn a_wide_screen_gives_the_inventory_what_it_wants_up_to_half() {
        let width = |w, wants| Areas::of(Rect::new(0, 0, w, 40), 1, None, wants).inventory.width;
        assert_eq!(width(200, 0), 68, "a third when the columns need less");
        assert_eq!(width(200, 90), 90);
        assert_eq!(width(200, 300), 100, "never more than half");
        assert_eq!(width(120, 90), 40, "a narrow screen keeps a third");
    }
}
