//! Changes waiting for a second person (two-person approval, ADR 0033). A request holds what its
//! requester planned and approved, as the approval modal shows it, and the digest of exactly that;
//! another operator approves or rejects that digest. The store enforces what matters even against a
//! merlya that skipped its own checks: a review lands only on a pending, unexpired request, with the
//! digest the reviewer saw, by someone other than the requester.

use serde::Serialize;

use super::db::{Row, query};
use super::{SqlContext, Store, StoreError, now_rfc3339};

/// Where a request stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ReviewStatus {
    /// Waiting for a second person.
    Pending,
    /// Approved by `reviewed_by`.
    Approved,
    /// Rejected by `reviewed_by`.
    Rejected,
    /// Its requester stopped waiting (cancelled, denied, re-planned, expired, merlya ended).
    Voided,
}

impl ReviewStatus {
    /// The stored spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Approved => "approved",
            Self::Rejected => "rejected",
            Self::Voided => "voided",
        }
    }

    fn parse(text: &str) -> Self {
        match text {
            "approved" => Self::Approved,
            "rejected" => Self::Rejected,
            "voided" => Self::Voided,
            _ => Self::Pending,
        }
    }
}

/// One stored request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ChangeRequest {
    pub id: i64,
    /// SHA-256 of the request as planned (see [`crate::approval::two_person`]).
    pub digest: String,
    /// The approval request as JSON: what the reviewer is shown.
    pub request: String,
    /// Which `policy.two_person_approval_for` entry asked for a second person.
    pub why: String,
    /// The requester's `operator.name`.
    pub requested_by: String,
    pub created_at: String,
    pub expires_at: String,
    pub status: ReviewStatus,
    pub reviewed_by: Option<String>,
    pub reviewed_at: Option<String>,
    /// The reviewer's words.
    pub note: String,
    /// The reviewer's ed25519 signature of the decision (see [`crate::approval::two_person`]).
    pub review_signature: Option<String>,
}

fn from_row(row: &Row) -> Result<ChangeRequest, sqlx::Error> {
    let status: String = row.try_get("status")?;
    Ok(ChangeRequest {
        id: row.try_get("id")?,
        digest: row.try_get("digest")?,
        request: row.try_get("request")?,
        why: row.try_get("why")?,
        requested_by: row.try_get("requested_by")?,
        created_at: row.try_get("created_at")?,
        expires_at: row.try_get("expires_at")?,
        status: ReviewStatus::parse(&status),
        reviewed_by: row.try_get("reviewed_by")?,
        reviewed_at: row.try_get("reviewed_at")?,
        note: row.try_get("note")?,
        review_signature: row.try_get("review_signature")?,
    })
}

/// Why a review was not recorded.
#[derive(Debug, thiserror::Error)]
pub enum ReviewRefused {
    #[error("no change request #{0}")]
    NotFound(i64),
    #[error("change request #{id} was requested by {who}: another operator must review it")]
    OwnRequest { id: i64, who: String },
    #[error("change request #{id} is {} already", status.as_str())]
    Decided { id: i64, status: ReviewStatus },
    #[error("change request #{id} expired at {at}")]
    Expired { id: i64, at: String },
    #[error("change request #{id} changed since it was shown (re-planned): review it again")]
    Changed { id: i64 },
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl Store {
    /// Stores a pending request; its id.
    pub async fn add_change_request(
        &self,
        digest: &str,
        request: &str,
        why: &str,
        requested_by: &str,
        expires_at: &str,
    ) -> Result<i64, StoreError> {
        query(
            "INSERT INTO change_requests (digest, request, why, requested_by, created_at, expires_at) \
             VALUES ($1, $2, $3, $4, $5, $6) RETURNING id",
        )
        .bind(digest)
        .bind(request)
        .bind(why)
        .bind(requested_by)
        .bind(now_rfc3339())
        .bind(expires_at)
        .scalar::<i64>(self.pool())
        .await
        .map_err(self.write_error("store the change request"))
    }

    /// Requests still waiting for a second person (not expired), oldest first.
    pub async fn pending_change_requests(&self) -> Result<Vec<ChangeRequest>, StoreError> {
        let rows = query("SELECT * FROM change_requests WHERE status = 'pending' AND expires_at > $1 ORDER BY id")
            .bind(now_rfc3339())
            .fetch_all(self.pool())
            .await
            .ctx("cannot read the change requests")?;
        rows.iter().map(from_row).collect::<Result<_, _>>().ctx("cannot read a change request")
    }

    /// One request, whatever its state.
    pub async fn change_request(&self, id: i64) -> Result<Option<ChangeRequest>, StoreError> {
        let row = query("SELECT * FROM change_requests WHERE id = $1")
            .bind(id)
            .fetch_optional(self.pool())
            .await
            .ctx("cannot read the change request")?;
        row.as_ref().map(from_row).transpose().ctx("cannot read a change request")
    }

    /// Records `reviewer`'s decision on request `id` as it was shown (`digest`), with the reviewer's
    /// signature of it. One statement decides, so two reviewers at once cannot both land, and the
    /// conditions hold in the store.
    pub async fn review_change_request(
        &self,
        id: i64,
        digest: &str,
        reviewer: &str,
        approve: bool,
        note: &str,
        signature: &str,
    ) -> Result<ChangeRequest, ReviewRefused> {
        let status = if approve { ReviewStatus::Approved } else { ReviewStatus::Rejected };
        let now = now_rfc3339();
        let updated = query(
            "UPDATE change_requests SET status = $1, reviewed_by = $2, reviewed_at = $3, note = $4, review_signature = $7 \
             WHERE id = $5 AND status = 'pending' AND expires_at > $3 AND digest = $6 AND requested_by != $2",
        )
        .bind(status.as_str())
        .bind(reviewer)
        .bind(now.as_str())
        .bind(note)
        .bind(id)
        .bind(digest)
        .bind(signature)
        .execute(self.pool())
        .await
        .map_err(self.write_error("record the review"))?;
        let found = self.change_request(id).await?.ok_or(ReviewRefused::NotFound(id))?;
        if updated == 1 {
            return Ok(found);
        }
        Err(match found {
            f if f.requested_by == reviewer => ReviewRefused::OwnRequest { id, who: f.requested_by },
            f if f.status != ReviewStatus::Pending => ReviewRefused::Decided { id, status: f.status },
            f if f.digest != digest => ReviewRefused::Changed { id },
            f => ReviewRefused::Expired { id, at: f.expires_at },
        })
    }

    /// An operator's registered public key (hex) and when it was registered.
    pub async fn operator_registration(&self, name: &str) -> Result<Option<(String, String)>, StoreError> {
        query("SELECT public_key, created_at FROM operators WHERE name = $1")
            .bind(name)
            .fetch_optional(self.pool())
            .await
            .ctx("cannot read the registered operators")
    }

    /// The requester stops waiting: a request still pending is voided (a review arriving later
    /// finds it decided).
    pub async fn void_change_request(&self, id: i64) -> Result<(), StoreError> {
        query("UPDATE change_requests SET status = 'voided' WHERE id = $1 AND status = 'pending'")
            .bind(id)
            .execute(self.pool())
            .await
            .map_err(self.write_error("void the change request"))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::test_backend::store_in;

    fn later() -> String {
        (chrono::Utc::now() + chrono::Duration::minutes(30)).to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
    }

    #[tokio::test]
    async fn a_review_lands_once_by_another_operator_on_the_digest_that_was_shown() {
        let dir = tempfile::tempdir().unwrap();
        let store = store_in(dir.path()).await;
        let id = store.add_change_request("d1", "{}", "@prod", "alice@bastion", &later()).await.unwrap();
        let pending = store.pending_change_requests().await.unwrap();
        assert_eq!(pending.iter().map(|r| r.id).collect::<Vec<_>>(), [id]);

        let own = store.review_change_request(id, "d1", "alice@bastion", true, "", "sig").await.unwrap_err();
        assert!(matches!(own, ReviewRefused::OwnRequest { .. }), "{own}");
        let stale = store.review_change_request(id, "d0", "bob@laptop", true, "", "sig").await.unwrap_err();
        assert!(matches!(stale, ReviewRefused::Changed { .. }), "{stale}");
        assert!(matches!(
            store.review_change_request(id + 100, "d1", "bob@laptop", true, "", "sig").await.unwrap_err(),
            ReviewRefused::NotFound(_)
        ));

        let done = store.review_change_request(id, "d1", "bob@laptop", true, "looks right", "sig").await.unwrap();
        assert_eq!((done.status, done.reviewed_by.as_deref()), (ReviewStatus::Approved, Some("bob@laptop")));
        let again = store.review_change_request(id, "d1", "carol@desk", false, "", "sig").await.unwrap_err();
        assert!(matches!(again, ReviewRefused::Decided { status: ReviewStatus::Approved, .. }), "{again}");
        assert!(store.pending_change_requests().await.unwrap().is_empty());
        // Voiding a decided request changes nothing.
        store.void_change_request(id).await.unwrap();
        assert_eq!(store.change_request(id).await.unwrap().unwrap().status, ReviewStatus::Approved);
    }

    #[tokio::test]
    async fn an_expired_or_voided_request_cannot_be_approved() {
        let dir = tempfile::tempdir().unwrap();
        let store = store_in(dir.path()).await;
        let past = "2020-01-01T00:00:00.000Z";
        let expired = store.add_change_request("d", "{}", "terraform", "alice@bastion", past).await.unwrap();
        assert!(store.pending_change_requests().await.unwrap().is_empty(), "an expired request is not listed");
        let refused = store.review_change_request(expired, "d", "bob@laptop", true, "", "sig").await.unwrap_err();
        assert!(matches!(refused, ReviewRefused::Expired { .. }), "{refused}");
        let voided = store.add_change_request("d", "{}", "terraform", "alice@bastion", &later()).await.unwrap();
        store.void_change_request(voided).await.unwrap();
        let refused = store.review_change_request(voided, "d", "bob@laptop", true, "", "sig").await.unwrap_err();
        assert!(matches!(refused, ReviewRefused::Decided { status: ReviewStatus::Voided, .. }), "{refused}");
    }
}
