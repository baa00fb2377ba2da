//! Provisioning (issue 26): making infrastructure from templates and keeping track of it.
//!
//! - [`template`]: what is made — a folder of minijinja files and a typed schema, rendered from
//!   checked answers into Terraform files (or an MCP request).
//!
//! The provisioner (rendered files through the one change path, [`crate::pipeline::terraform`]) and
//! the state tracker (what was made from which answers, and its drift) join here as siblings.

pub mod check;
pub mod credentials;
pub mod mcp_backend;
pub mod ops;
pub mod template;
pub mod tracker;
