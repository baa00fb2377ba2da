//! The inventory table's columns by name (`ui.inventory_columns`, the console's column picker and
//! its "order by" picker): one enum, so the config, the picker and the table agree on the names.

/// A column of the console's inventory table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Column {
    /// The host's inventory name (always shown).
    Name,
    /// `hostname:port`.
    Address,
    /// Its state in the newest run that ran there.
    State,
    /// 1-minute load per core, from the last triage.
    Load,
    /// The fullest mount's use in %, from the last triage.
    Disk,
    /// Memory in use in %, from the last triage.
    Mem,
    /// The last failure and when.
    LastError,
    /// Its tags (groups).
    Tags,
    /// The login user.
    User,
    /// How it becomes root.
    Elevation,
    /// When it was last seen (a reachability check).
    LastCheck,
}

impl Column {
    /// Every column, in the order of the default table.
    pub const ALL: [Column; 11] = [
        Column::Name,
        Column::Address,
        Column::State,
        Column::Load,
        Column::Disk,
        Column::Mem,
        Column::LastError,
        Column::Tags,
        Column::User,
        Column::Elevation,
        Column::LastCheck,
    ];

    /// The name in `ui.inventory_columns`.
    pub fn name(self) -> &'static str {
        match self {
            Column::Name => "name",
            Column::Address => "address",
            Column::State => "state",
            Column::Load => "load",
            Column::Disk => "disk",
            Column::Mem => "mem",
            Column::LastError => "last_error",
            Column::Tags => "tags",
            Column::User => "user",
            Column::Elevation => "elevation",
            Column::LastCheck => "last_check",
        }
    }

    /// The column called `name` in the config.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.name() == name)
    }

    /// The locale key of its header.
    pub fn header_key(self) -> &'static str {
        match self {
            Column::Name => "col.name",
            Column::Address => "col.address",
            Column::State => "col.state",
            Column::Load => "col.load",
            Column::Disk => "col.disk",
            Column::Mem => "col.mem",
            Column::LastError => "col.last_error",
            Column::Tags => "col.tags",
            Column::User => "col.user",
            Column::Elevation => "col.elevation",
            Column::LastCheck => "col.last_check",
        }
    }

    /// Every allowed name, for error messages.
    pub fn names() -> String {
        Self::ALL.iter().map(|c| c.name()).collect::<Vec<_>>().join(", ")
    }

    /// The columns `names` lists, or the first name that is not a column. The name column is always
    /// shown (first when not listed); a name listed twice counts once.
    pub fn parse_list(names: &[String]) -> Result<Vec<Column>, String> {
        let mut columns = Vec::new();
        for name in names {
            let column = Self::from_name(name.trim()).ok_or_else(|| name.clone())?;
            if !columns.contains(&column) {
                columns.push(column);
            }
        }
        if !columns.contains(&Column::Name) {
            columns.insert(0, Column::Name);
        }
        Ok(columns)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_the_name_column_is_always_there() {
        for c in Column::ALL {
            assert_eq!(Column::from_name(c.name()), Some(c));
        }
        let list = |names: &[&str]| Column::parse_list(&names.iter().map(|n| n.to_string()).collect::<Vec<_>>());
        assert_eq!(list(&["load", "disk", "load"]), Ok(vec![Column::Name, Column::Load, Column::Disk]));
        assert_eq!(list(&["address", "name"]), Ok(vec![Column::Address, Column::Name]));
        assert_eq!(list(&["name", "cpu"]), Err("cpu".to_string()));
    }
}
