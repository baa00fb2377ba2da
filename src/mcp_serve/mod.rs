//! `merlya mcp serve`: merlya's agent as an MCP server (the Speelka idea), a
//! layer above the agent (which itself uses [`crate::mcp`] as a client).
//!
//! - [`server`]: the served tools (`ask`, `list_hosts`, `run_readonly`).
//! - [`elicit`]: the served agent's changes approved by the client's person.
//! - [`http`]: the streamable HTTP transport (loopback, or a bearer token).

pub mod elicit;
pub mod http;
pub mod server;
