//! The host inventory: what a host is, how target expressions select hosts,
//! and the importers and exporters that move hosts in and out of merlya.

pub mod columns;
pub mod export;
pub mod host;
pub mod import;
pub mod targets;

pub use host::{Elevation, Host, LOCALHOST, check_hostname, check_login_name};
pub use targets::{Scope, TargetError, resolve_inventory_targets, resolve_targets, scope_of};
