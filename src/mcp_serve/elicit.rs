//! Approvals for `merlya mcp serve` through MCP elicitation: the served agent's
//! change is shown to the person behind the MCP client (`elicitation/create`
//! with the rendered approval) and runs only if they accept it. A client that
//! cannot be asked (no elicitation capability) approves nothing; `--yes`
//! approves without asking.

use async_trait::async_trait;
use rmcp::RoleServer;
use rmcp::service::Peer;
use serde::Deserialize;

use crate::approval::{ApprovalRequest, Approver, Decision, render_request};

/// What the client's person answers.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct ApprovalAnswer {
    /// true to run this change once, false to refuse it.
    pub approve: bool,
}

rmcp::elicit_safe!(ApprovalAnswer);

/// Asks the MCP client's person, or approves everything (`--yes`).
pub struct ElicitingApprover {
    peer: Peer<RoleServer>,
    yes: bool,
}

impl ElicitingApprover {
    /// An approver for requests made while serving `peer`.
    pub fn new(peer: Peer<RoleServer>, yes: bool) -> Self {
        Self { peer, yes }
    }

    /// Whether the client declared it can be asked.
    fn can_ask(&self) -> bool {
        self.peer.peer_info().is_some_and(|info| info.capabilities.elicitation.is_some())
    }
}

#[async_trait]
impl Approver for ElicitingApprover {
    async fn decide(&self, request: &ApprovalRequest) -> Decision {
        if self.yes {
            return Decision::Once;
        }
        if !self.can_ask() {
            return Decision::Deny;
        }
        let message = format!("{}\nApprove this change once?", render_request(request));
        match self.peer.elicit::<ApprovalAnswer>(message).await {
            Ok(Some(answer)) if answer.approve => Decision::Once,
            Ok(_) => Decision::Deny,
            Err(e) => {
                tracing::info!(error = %e, "the MCP client did not approve through elicitation");
                Decision::Deny
            }
        }
    }

    fn who(&self) -> String {
        match (self.yes, self.can_ask()) {
            (true, _) => "mcp serve (--yes)".into(),
            (false, true) => "the MCP client's user (elicitation)".into(),
            (false, false) => "nobody (the MCP client cannot be asked and the server has no --yes)".into(),
        }
    }
}
