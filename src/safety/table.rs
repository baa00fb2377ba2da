//! The loaded spec table: parsed once per process from the embedded
//! `specs.yaml`, looked up by program name. A table that fails to load makes
//! every command "not proven read-only" (fail closed), with the reason.

use std::collections::HashMap;
use std::sync::OnceLock;

use super::spec::{self, CommandSpec, ProgramSpec};

struct Table {
    programs: Vec<ProgramSpec>,
    by_name: HashMap<String, usize>,
}

fn table() -> &'static Result<Table, String> {
    static TABLE: OnceLock<Result<Table, String>> = OnceLock::new();
    TABLE.get_or_init(|| {
        let programs = spec::load(spec::SPECS_YAML)?;
        let mut by_name = HashMap::new();
        for (i, program) in programs.iter().enumerate() {
            for name in &program.names {
                if by_name.insert(name.clone(), i).is_some() {
                    return Err(format!("specs.yaml: program {name} is listed twice"));
                }
            }
        }
        Ok(Table { programs, by_name })
    })
}

/// The spec of `name`: `Ok(None)` for a program with no spec, `Err` when the table is broken.
pub fn lookup(name: &str) -> Result<Option<&'static CommandSpec>, &'static str> {
    match table() {
        Ok(t) => Ok(t.by_name.get(name).map(|&i| &t.programs[i].spec)),
        Err(e) => Err(e.as_str()),
    }
}

/// Every program spec with its examples (for the self-check and `merlya policy`).
pub fn programs() -> Result<&'static [ProgramSpec], &'static str> {
    match table() {
        Ok(t) => Ok(&t.programs),
        Err(e) => Err(e.as_str()),
    }
}
