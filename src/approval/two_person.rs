//! Two-person approval (ADR 0033): a change that `policy.two_person_approval_for` names — a target
//! host carries one of its `@tags`, or the change is of one of its pipeline kinds — is approved by
//! its requester as any change is, then waits as a stored request for another operator's review,
//! bound to the digest of exactly what was planned and shown. The change runs only when a second
//! person approved that digest; a rejection, the expiry or the requester giving up ends it, and a
//! re-plan is a new request. The requester can never review their own request (the store refuses it
//! too), and every review is an audit entry.

use std::time::Duration;

use sha2::{Digest, Sha256};

use super::ApprovalRequest;
pub use crate::config::two_person::{MAX_EXPIRY_MINUTES, Needs};
use crate::store::Store;
use crate::store::change_requests::{ChangeRequest, ReviewRefused, ReviewStatus};
use crate::store::pipelines::Kind;

/// How often a waiting change looks for its review.
const POLL: Duration = Duration::from_millis(300);

/// The team's rule and who this merlya's operator is.
#[derive(Debug, Clone)]
pub struct TwoPerson {
    needs: Vec<Needs>,
    /// `operator.name`: who requests (and who may not review their own request).
    pub operator: String,
    expiry: Duration,
}

/// How a wait for a second person ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Review {
    /// Approved by this operator.
    Approved { id: i64, by: String },
    /// Rejected by this operator.
    Rejected { id: i64, by: String },
    /// Nobody reviewed it in time.
    Expired { id: i64 },
    /// The request could not be stored or read (why).
    Failed(String),
}

impl TwoPerson {
    /// The rule of `config` (none when `policy.two_person_approval_for` is empty or unreadable: the
    /// configuration is refused at load time, so this never drops a rule that was written).
    pub fn of_config(config: &crate::config::Config) -> Option<Self> {
        let needs = Needs::parse_list(&config.policy.two_person_approval_for).ok()?;
        (!needs.is_empty()).then(|| Self {
            needs,
            operator: config.operator.name(),
            expiry: Duration::from_secs(
                u64::from(config.policy.two_person_expiry_minutes.clamp(1, MAX_EXPIRY_MINUTES)) * 60,
            ),
        })
    }

    /// The entry that asks a second person for `request`, if one does.
    pub async fn needed_for(&self, store: &Store, request: &ApprovalRequest) -> Option<String> {
        for need in &self.needs {
            match need {
                // A request no pipeline made is a shell command on hosts: what `bash` names.
                Needs::Kind(kind) if request.kind.unwrap_or(Kind::Bash) == *kind => return Some(need.shown()),
                Needs::Kind(_) => {}
                // Terraform, Kubernetes and MCP changes name a folder, a context or a server, not hosts:
                // a tag cannot describe them (the policy names their kind instead; ADR 0033).
                Needs::Tag(_) if matches!(request.kind, Some(Kind::Terraform | Kind::Kubernetes | Kind::Mcp)) => {}
                Needs::Tag(tag) => {
                    // A target the inventory does not hold (an address, an alias, a name with a trailing
                    // dot) or cannot read counts as carrying the tag: the rule fails closed.
                    for host in &request.hosts {
                        let tagged = match store.get_host(host).await {
                            Ok(found) => found.tags.iter().any(|t| t == tag),
                            Err(_) => true,
                        };
                        if tagged {
                            return Some(need.shown());
                        }
                    }
                }
            }
        }
        None
    }

    /// Stores the request and waits for its review (or its expiry). A wait that is dropped (the run
    /// was cancelled) voids the request, so a late approval cannot start anything.
    pub async fn wait(
        &self,
        store: &Store,
        request: &ApprovalRequest,
        why: &str,
        tell: &(dyn Fn(i64) + Sync),
    ) -> Review {
        let expires_at = chrono::Utc::now()
            + chrono::Duration::from_std(self.expiry).unwrap_or_else(|_| chrono::Duration::minutes(30));
        let expires_at = expires_at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
        let Ok(shown) = serde_json::to_string(request) else {
            return Review::Failed("the request cannot be written as JSON".into());
        };
        let digest = digest_of(&shown);
        // The requester's key is registered first: a reviewer is checked against it.
        if let Err(e) = store.operator_signer().await {
            return Review::Failed(e.to_string());
        }
        let id = match store.add_change_request(&digest, &shown, why, &self.operator, &expires_at).await {
            Ok(id) => id,
            Err(e) => return Review::Failed(e.to_string()),
        };
        let mut guard = VoidOnDrop { store: store.clone(), id: Some(id) };
        tell(id);
        let deadline = tokio::time::Instant::now() + self.expiry;
        let review = loop {
            match store.change_request(id).await {
                Ok(Some(found)) if found.digest != digest => {
                    break Review::Failed(format!("request #{id} was altered"));
                }
                Ok(Some(found)) if found.status == ReviewStatus::Pending => {}
                Ok(Some(found)) => break self.checked(store, &found).await,
                Ok(None) => break Review::Failed(format!("request #{id} disappeared")),
                // A store that went away for a moment is waited for; the deadline still holds.
                Err(_) => {}
            }
            if tokio::time::Instant::now() >= deadline {
                break Review::Expired { id };
            }
            tokio::time::sleep(POLL).await;
        };
        // Whatever was not approved is voided before the answer is given (a late review finds it decided).
        if let Some(id) = guard.id.take()
            && !matches!(review, Review::Approved { .. })
            && let Err(e) = store.void_change_request(id).await
        {
            tracing::warn!(error = %e, id, "cannot void the change request");
        }
        review
    }

    /// A decided request, believed only when its review is signed by a registered operator other
    /// than the requester (another name *and* another key), registered before the request was made:
    /// a name typed into a config file or a row written with the database's password is not a person.
    async fn checked(&self, store: &Store, found: &ChangeRequest) -> Review {
        let id = found.id;
        let (Some(by), Some(signature)) = (found.reviewed_by.clone(), found.review_signature.as_deref()) else {
            return Review::Failed(format!("request #{id} is {} without a signed review", found.status.as_str()));
        };
        let approve = match found.status {
            ReviewStatus::Approved => true,
            ReviewStatus::Rejected => false,
            status => return Review::Failed(format!("request #{id} is {}", status.as_str())),
        };
        let unsigned =
            |why: &str| Review::Failed(format!("the review of request #{id} by {by} is not believed: {why}"));
        let registered =
            (store.operator_registration(&by).await, store.operator_registration(&found.requested_by).await);
        let (reviewer, requester) = match registered {
            (Ok(Some(reviewer)), Ok(Some(requester))) => (reviewer, requester),
            (Ok(None), _) => return unsigned("no such registered operator"),
            _ => return unsigned("the registered operators cannot be read"),
        };
        if by == found.requested_by || reviewer.0 == requester.0 {
            return unsigned("the requester's own key");
        }
        if reviewer.1 > found.created_at {
            return unsigned("registered after the request was made");
        }
        let Some(key) = crate::store::audit::operator::public_key(&reviewer.0) else {
            return unsigned("an unreadable registered key");
        };
        if !crate::store::audit::operator::signature_valid(&key, &review_message(id, &found.digest, approve), signature)
        {
            return unsigned("the signature does not match");
        }
        if approve { Review::Approved { id, by } } else { Review::Rejected { id, by } }
    }
}

/// Voids the request when the wait ends without a decision (a decided one stays as it is).
struct VoidOnDrop {
    store: Store,
    id: Option<i64>,
}

impl Drop for VoidOnDrop {
    fn drop(&mut self) {
        let (Some(id), Ok(runtime)) = (self.id.take(), tokio::runtime::Handle::try_current()) else { return };
        let store = self.store.clone();
        runtime.spawn(async move {
            if let Err(e) = store.void_change_request(id).await {
                tracing::warn!(error = %e, id, "cannot void the change request");
            }
        });
    }
}

/// What a reviewer signs: the request, the digest they were shown and their decision (hashed, as
/// entry hashes are, so the signature is over a fixed-size text).
fn review_message(id: i64, digest: &str, approve: bool) -> String {
    let decision = if approve { "approved" } else { "rejected" };
    hex::encode(Sha256::digest(format!("merlya two-person review\n{id}\n{digest}\n{decision}").as_bytes()))
}

/// SHA-256 of the request's stored JSON: everything the reviewer is shown (command, hosts, diff,
/// post-check, rollback, further lines it clears), so a review approves exactly that text.
pub fn digest_of(json: &str) -> String {
    hex::encode(Sha256::digest(json.as_bytes()))
}

/// A stored request read back for its reviewer: what was planned, checked against its digest (a
/// request edited in the database is refused, not shown).
pub fn shown(stored: &ChangeRequest) -> Result<ApprovalRequest, String> {
    if digest_of(&stored.request) != stored.digest {
        return Err(format!("change request #{} does not match its digest: it was altered in the store", stored.id));
    }
    serde_json::from_str(&stored.request).map_err(|e| format!("change request #{} cannot be read: {e}", stored.id))
}

/// A second person's decision, as the CLI and the console record it: the review lands in the store
/// only on the digest that was shown, by someone other than the requester; then it is audited.
pub async fn record_review(
    store: &Store,
    session_id: &str,
    shown: &ChangeRequest,
    reviewer: &str,
    approve: bool,
    note: &str,
) -> Result<ChangeRequest, ReviewRefused> {
    let request = self::shown(shown).map_err(|e| ReviewRefused::Store(crate::store::StoreError::Invalid(e)))?;
    // Signed with the reviewer's own key, registered under their name (refused if the name is another's).
    let (name, key) = store.operator_signer().await?;
    if name != reviewer {
        return Err(ReviewRefused::Store(crate::store::StoreError::Invalid(format!(
            "this home signs as {name}, not {reviewer}"
        ))));
    }
    let signature = key.sign_hex(&review_message(shown.id, &shown.digest, approve));
    let reviewed = store.review_change_request(shown.id, &shown.digest, reviewer, approve, note, &signature).await?;
    let decision = if approve { "approved" } else { "rejected" };
    let mut entry = crate::store::audit::AuditRequest::local(
        session_id,
        reviewer,
        &request.command,
        if approve { reviewer } else { "" },
        Some(format!("change request #{}", shown.id)),
    );
    entry.host = request.hosts.join(",");
    let reason = format!(
        "{decision} change request #{} of {} ({}): {}{}",
        shown.id,
        shown.requested_by,
        shown.why,
        request.summary,
        if note.is_empty() { String::new() } else { format!(" — {note}") }
    );
    store.audit_review(&entry, approve, &reason).await?;
    Ok(reviewed)
}
