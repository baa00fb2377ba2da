//! Aligned plain-text tables for CLI listings (see [`crate::text_table`]).

pub use crate::text_table::render;
