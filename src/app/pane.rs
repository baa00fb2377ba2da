//! The panes that take focus, their tab order and their names.

/// The panes that take focus. Output, Pipeline, Metrics and Drift share the
/// top-right area as tabs; the last one focused is shown there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pane {
    Inventory,
    Output,
    Pipeline,
    Metrics,
    Drift,
    Chat,
}

impl Pane {
    /// Tab order.
    pub const ALL: [Pane; 6] = [Pane::Inventory, Pane::Output, Pane::Pipeline, Pane::Metrics, Pane::Drift, Pane::Chat];

    /// The tabs of the top-right area.
    pub const VIEWS: [Pane; 4] = [Pane::Output, Pane::Pipeline, Pane::Metrics, Pane::Drift];

    /// The pane after this one (Tab).
    pub fn next(self) -> Self {
        let i = Self::ALL.iter().position(|p| *p == self).unwrap_or(0);
        Self::ALL[(i + 1) % Self::ALL.len()]
    }

    /// The pane before this one (Shift-Tab).
    pub fn previous(self) -> Self {
        let i = Self::ALL.iter().position(|p| *p == self).unwrap_or(0);
        Self::ALL[(i + Self::ALL.len() - 1) % Self::ALL.len()]
    }

    /// Whether it is one of the top-right tabs.
    pub fn is_view(self) -> bool {
        Self::VIEWS.contains(&self)
    }

    /// Name in titles.
    pub fn title(self) -> &'static str {
        match self {
            Pane::Inventory => "Inventory",
            Pane::Output => "Output",
            Pane::Pipeline => "Pipeline",
            Pane::Metrics => "Metrics",
            Pane::Drift => "Drift",
            Pane::Chat => "Chat",
        }
    }

    /// The locale key of its title.
    pub fn key(self) -> &'static str {
        match self {
            Pane::Inventory => "pane.inventory",
            Pane::Output => "pane.output",
            Pane::Pipeline => "pane.pipeline",
            Pane::Metrics => "pane.metrics",
            Pane::Drift => "pane.drift",
            Pane::Chat => "pane.chat",
        }
    }
}
