//! `merlya audit verify`: walks the chain with the key and compares its head
//! with the signed checkpoint outside the database.
//!
//! What each tampering looks like here:
//! - an edited row: its keyed hash no longer matches;
//! - a deleted middle row: the next row's `prev_hash` names a hash that is not its predecessor's;
//! - a forged appended row: its hash is not the key's (or it claims to be unkeyed after keyed rows);
//! - a chain recomputed with plain SHA-256 or another key: the first row's hash is not the key's,
//!   or, relabelled as unkeyed, its head differs from the checkpoint;
//! - wiped tables or truncated newest rows: the checkpoint names an entry the database lacks.
//!
//! On a team's store (ADR 0032) each signed entry's hash and signature are checked against its
//! signer's registered key, and the chain must still hold the head this home verified last:
//! - an entry edited, or re-hashed, after it was signed: its hash or its signature does not match;
//! - an entry signed by a name no one registered, or with another key: the signature is not theirs;
//! - the chain replaced or truncated from an earlier entry (re-signed by whoever did it): the entry
//!   this home verified last is gone or has another hash ("audit rewritten").

use std::collections::{BTreeSet, HashMap};

use crate::store::Backend;
use crate::store::db::query;
use ed25519_dalek::VerifyingKey;
use serde::Serialize;

use super::keys::{AuditKey, Checkpoint};
use super::seen::{SeenHead, SeenHeads};
use super::{AuditEntry, AuditEvent, CHAIN_ED25519, CHAIN_HMAC, CHAIN_SHA256, GENESIS, entry_from_row, merge};
use crate::store::{SqlContext, Store, StoreError};

/// The result of `merlya audit verify`: what could be proven, and the first break.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Default)]
pub struct ChainReport {
    /// Rows checked.
    pub entries: usize,
    /// Rows under the key.
    pub keyed: usize,
    /// Unkeyed rows written before the log was keyed.
    pub legacy: usize,
    /// The re-base entry that pinned the unkeyed rows under the key, if any.
    pub rebased_at: Option<i64>,
    /// The checkpoint the chain was compared with.
    pub checkpoint: Option<CheckpointSeen>,
    /// Valid keyed rows newer than the checkpoint (a writer died before updating it).
    pub beyond_checkpoint: usize,
    /// Executions started with no outcome written.
    pub unfinished: Vec<i64>,
    /// Whether `audit.key` exists.
    pub key_present: bool,
    /// The witness the chain was compared with: where, and how many heads it holds.
    pub witness: Option<(String, usize)>,
    /// The first problem found, if any.
    pub broken: Option<BrokenLink>,
    /// Entries signed by their operator's own key (a team's store).
    pub signed: usize,
    /// The operators whose signatures were checked, by name.
    pub signers: BTreeSet<String>,
    /// Keyed entries this home's key cannot check (another home's, copied from its SQLite store).
    pub foreign: Option<ForeignRun>,
    /// The head this home verified before, still in the chain.
    pub seen: Option<SeenHead>,
    /// The store no longer extends the head this home verified before ("audit rewritten").
    pub rewritten: bool,
}

/// Keyed (HMAC) entries of a team's store written under another home's key: this home cannot
/// check them, only that a signed entry pins their head.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ForeignRun {
    /// The first of them.
    pub first: i64,
    /// The last of them.
    pub last: i64,
    /// How many.
    pub count: usize,
    /// The first signed entry after them: from then on they cannot be changed unnoticed.
    pub pinned_by: Option<i64>,
}

/// The checkpoint as found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CheckpointSeen {
    pub last_id: i64,
    pub count: i64,
    pub written_at: String,
}

/// Where the chain breaks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BrokenLink {
    /// The entry at which verification failed (0 when no single entry is to blame).
    pub id: i64,
    /// What does not match.
    pub reason: String,
}

impl ChainReport {
    fn broken(mut self, id: i64, reason: impl Into<String>) -> Self {
        self.broken = Some(BrokenLink { id, reason: reason.into() });
        self
    }

    /// What a person reads, in English: what is proven, or what is broken.
    pub fn describe(&self) -> String {
        self.describe_in(&crate::i18n::Locale::default())
    }

    /// [`ChainReport::describe`] in `locale` (the CLI speaks the console's language); the reason of a
    /// break is kept as found.
    pub fn describe_in(&self, locale: &crate::i18n::Locale) -> String {
        let n = |v: usize| v.to_string();
        if let Some(b) = &self.broken {
            let at = if b.id > 0 {
                locale.tf("cli.audit.at_entry", &[("id", &b.id.to_string())])
            } else {
                locale.t("cli.audit.at_head").to_string()
            };
            let args = [("at", at.as_str()), ("reason", &b.reason), ("entries", &n(self.entries))];
            return locale.tf("cli.audit.broken", &args);
        }
        let mut lines = Vec::new();
        let signers = self.signers.iter().cloned().collect::<Vec<_>>().join(", ");
        match (&self.checkpoint, self.key_present) {
            _ if self.signed > 0 => lines.push(locale.tf(
                "cli.audit.intact_signed",
                &[("entries", &n(self.entries)), ("signed", &n(self.signed)), ("signers", &signers)],
            )),
            (Some(c), true) => lines.push(locale.tf(
                "cli.audit.intact_keyed",
                &[
                    ("entries", &n(self.entries)),
                    ("written_at", &c.written_at),
                    ("last_id", &c.last_id.to_string()),
                    ("count", &c.count.to_string()),
                ],
            )),
            _ if self.entries == 0 => lines.push(locale.t("cli.audit.intact_empty").to_string()),
            _ if self.keyed > 0 => {
                lines.push(locale.tf("cli.audit.intact_keyed_here", &[("entries", &n(self.entries))]))
            }
            _ => lines.push(locale.tf("cli.audit.intact_unkeyed", &[("entries", &n(self.entries))])),
        }
        if let Some(f) = &self.foreign {
            let pin = f.pinned_by.map(|id| id.to_string()).unwrap_or_default();
            let args =
                [("first", f.first.to_string()), ("last", f.last.to_string()), ("count", n(f.count)), ("pin", pin)];
            lines.push(locale.tf("cli.audit.foreign", &args.each_ref().map(|(k, v)| (*k, v.as_str()))));
        }
        if let Some(seen) = &self.seen {
            let args = [("id", seen.id.to_string()), ("verified_at", seen.verified_at.clone())];
            lines.push(locale.tf("cli.audit.extends", &args.each_ref().map(|(k, v)| (*k, v.as_str()))));
        }
        if let Some(id) = self.rebased_at {
            lines.push(locale.tf("cli.audit.rebased", &[("id", &id.to_string()), ("legacy", &n(self.legacy))]));
        }
        if let Some((path, heads)) = &self.witness {
            lines.push(match heads {
                0 => locale.tf("cli.audit.witness_empty", &[("path", path)]),
                _ => locale.tf("cli.audit.witness_holds", &[("path", path), ("heads", &n(*heads))]),
            });
        }
        if self.beyond_checkpoint > 0 {
            lines.push(locale.tf("cli.audit.beyond", &[("count", &n(self.beyond_checkpoint))]));
        }
        if !self.unfinished.is_empty() {
            let ids: Vec<String> = self.unfinished.iter().map(|id| format!("#{id}")).collect();
            lines.push(locale.tf("cli.audit.unfinished", &[("count", &n(ids.len())), ("ids", &ids.join(", "))]));
        }
        lines.join("\n")
    }
}

impl Store {
    /// Walks the whole chain with the key and checks it against the checkpoint and the witness.
    pub async fn verify_audit(&self) -> Result<ChainReport, StoreError> {
        self.verify_audit_with(None).await
    }

    /// [`Store::verify_audit`], the witnessed heads read from `witness_log` when given (the file a
    /// log server keeps for a syslog witness, or a saved `journalctl -t merlya-audit -o cat`).
    pub async fn verify_audit_with(&self, witness_log: Option<&std::path::Path>) -> Result<ChainReport, StoreError> {
        self.settle_audit().await;
        let entries = self.audit_entries().await?;
        let head: Option<(i64, String, i64)> = query("SELECT last_id, hash, count FROM audit_head WHERE id = 1")
            .fetch_optional(self.pool())
            .await
            .ctx("cannot read the audit head")?;
        let mut report = ChainReport { entries: entries.len(), ..Default::default() };
        let key = match self.audit.load_key() {
            Ok(key) => key,
            Err(e) => return Ok(report.broken(0, format!("the audit key is unusable: {e}"))),
        };
        report.key_present = key.is_some();
        let checkpoint = match self.audit.read_checkpoint() {
            Ok(c) => c,
            Err(e) => return Ok(report.broken(0, format!("the checkpoint is unreadable: {e}"))),
        };
        report.unfinished =
            merge(&entries).iter().filter(|r| r.outcome == super::AuditOutcome::Unfinished).map(|r| r.id).collect();
        let seen_heads = SeenHeads::beside(self.path());
        let report = match check_seen(report, &seen_heads, self.location(), &entries, entries.last().map(|e| e.id)) {
            report if report.broken.is_some() => return Ok(report),
            report => report,
        };
        let operators = self.operator_keys().await?;
        let keys = Keys { hmac: key.as_ref(), operators: &operators, team: self.backend() == Backend::Postgres };
        let report = walk(report, &entries, &keys, GENESIS);
        if report.broken.is_some() {
            return Ok(report);
        }
        let report = check_head(report, &entries, head);
        if report.broken.is_some() {
            return Ok(report);
        }
        // A team's store has no checkpoint or witness of this home's: the head each console verified
        // stands in for them (ADR 0032). The files in MERLYA_HOME belong to its SQLite store.
        if keys.team {
            return Ok(self.remember_verified(report, &seen_heads, entries.last()));
        }
        let report = check_checkpoint(report, &entries, key.as_ref(), checkpoint, self.audit.checkpoint_path());
        if report.broken.is_some() {
            return Ok(report);
        }
        let report = match self.audit.witness() {
            Some((witness, database)) => check_witness(report, &entries, (&witness, witness_log), &database),
            None => report,
        };
        Ok(self.remember_verified(report, &seen_heads, entries.last()))
    }

    /// The console's start-up check: the entries since the head this home verified last (the whole
    /// chain the first time), that head still in the store, and each newer entry's link, hash and
    /// signature. An intact chain moves the verified head to the newest entry.
    pub async fn audit_since_verified(&self) -> Result<ChainReport, StoreError> {
        let seen_heads = SeenHeads::beside(self.path());
        let seen = match seen_heads.get(self.location()) {
            Ok(Some(seen)) => seen,
            Ok(None) => return self.verify_audit().await,
            Err(e) => return Ok(ChainReport::default().broken(0, format!("the verified head is unreadable: {e}"))),
        };
        self.settle_audit().await;
        let rows = query("SELECT * FROM audit_log WHERE id >= $1 ORDER BY id")
            .bind(seen.id)
            .fetch_all(self.pool())
            .await
            .ctx("cannot read the audit log")?;
        let entries: Vec<AuditEntry> =
            rows.iter().map(entry_from_row).collect::<Result<_, _>>().ctx("cannot read an audit row")?;
        let newest = match entries.last() {
            Some(e) => Some(e.id),
            None => {
                query("SELECT MAX(id) FROM audit_log").scalar(self.pool()).await.ctx("cannot read the audit log")?
            }
        };
        let report = ChainReport { entries: entries.len(), ..Default::default() };
        let report = check_seen(report, &seen_heads, self.location(), &entries, newest);
        if report.broken.is_some() {
            return Ok(report);
        }
        let key = match self.audit.load_key() {
            Ok(key) => key,
            Err(e) => return Ok(report.broken(0, format!("the audit key is unusable: {e}"))),
        };
        let operators = self.operator_keys().await?;
        let keys = Keys { hmac: key.as_ref(), operators: &operators, team: self.backend() == Backend::Postgres };
        // The link into the verified head was proven when it was verified.
        let start = entries.first().map_or(GENESIS, |e| e.prev_hash.as_str());
        let report = walk(report, &entries, &keys, start);
        if report.broken.is_some() {
            return Ok(report);
        }
        Ok(self.remember_verified(report, &seen_heads, entries.last()))
    }

    /// The registered operators' keys; a key that is not one is left out (its entries then fail).
    async fn operator_keys(&self) -> Result<HashMap<String, VerifyingKey>, StoreError> {
        Ok(self
            .registered_operators()
            .await?
            .into_iter()
            .filter_map(|(name, key)| super::operator::public_key(&key).map(|k| (name, k)))
            .collect())
    }

    /// An intact chain's newest entry becomes the head this home verified (a failure to write it is
    /// logged: the next check starts from the older head).
    fn remember_verified(&self, report: ChainReport, heads: &SeenHeads, newest: Option<&AuditEntry>) -> ChainReport {
        if report.broken.is_none()
            && let Some(newest) = newest
            && let Err(e) = heads.advance(self.location(), newest.id, &newest.hash)
        {
            tracing::warn!(error = %e, "cannot remember the verified audit head");
        }
        report
    }
}

/// The head this home verified last must still be in the chain with its hash.
fn check_seen(
    mut report: ChainReport,
    heads: &SeenHeads,
    location: &str,
    entries: &[AuditEntry],
    newest: Option<i64>,
) -> ChainReport {
    let seen = match heads.get(location) {
        Ok(Some(seen)) => seen,
        Ok(None) => return report,
        Err(e) => return report.broken(0, format!("the verified head is unreadable: {e}")),
    };
    let at = entries.iter().find(|e| e.id == seen.id).map(|e| e.hash.as_str());
    if let Some(why) = super::seen::rewritten(&seen, at, newest) {
        report.rewritten = true;
        return report.broken(seen.id, why);
    }
    report.seen = Some(seen);
    report
}

/// Every head the witness saw must still be in the chain, with its hash and count: a
/// re-chain with the real key, a new key, a wipe with key and checkpoint, or an older copy of
/// the database put back (with its checkpoint) each leave a witnessed head behind.
fn check_witness(
    mut report: ChainReport,
    entries: &[AuditEntry],
    (witness, log): (&super::witness::Witness, Option<&std::path::Path>),
    database: &str,
) -> ChainReport {
    let path = match log {
        Some(log) => format!("{} (read from {})", witness.describe(), log.display()),
        None => witness.describe(),
    };
    let heads = match super::witness::read(witness, database, log) {
        Ok(heads) => heads,
        Err(e) => return report.broken(0, format!("the audit witness is unreadable: {e}")),
    };
    for head in heads.iter().filter(|h| h.count > 0) {
        let position = entries.iter().position(|e| e.id == head.last_id);
        let holds =
            position.is_some_and(|p| entries[p].hash == head.hash && i64::try_from(p + 1).ok() == Some(head.count));
        if !holds {
            let now = match position {
                Some(_) => "has another entry there",
                None => "lacks it",
            };
            return report.broken(
                head.last_id,
                format!(
                    "the witness {path} saw entry {} as the head of {} entries at {}; the log {now}: it was rewritten, truncated, wiped or an older copy was put back",
                    head.last_id, head.count, head.written_at
                ),
            );
        }
    }
    report.witness = Some((path, heads.len()));
    report
}

/// What entries are checked with.
struct Keys<'a> {
    /// This home's HMAC key.
    hmac: Option<&'a AuditKey>,
    /// The registered operators' public keys.
    operators: &'a HashMap<String, VerifyingKey>,
    /// A team's store: keyed entries of other homes are accepted unchecked once a signed entry pins them.
    team: bool,
}

/// The links, hashes and signatures, oldest first, from the hash `start` before the first entry.
fn walk(mut report: ChainReport, entries: &[AuditEntry], keys: &Keys, start: &str) -> ChainReport {
    let key = keys.hmac;
    let mut prev = start.to_string();
    for entry in entries {
        if entry.prev_hash != prev {
            return report.broken(entry.id, "the entry before it was removed or altered (its link does not match)");
        }
        match entry.chain.as_str() {
            CHAIN_SHA256 => {
                if report.keyed > 0 || report.signed > 0 || report.foreign.is_some() {
                    return report.broken(
                        entry.id,
                        "an unkeyed entry after the keyed chain began: forged, or the chain was recomputed without the key",
                    );
                }
                if entry.legacy_hash(&prev) != entry.hash {
                    return report.broken(entry.id, "its content was altered after it was written");
                }
                report.legacy += 1;
            }
            CHAIN_HMAC if report.signed > 0 => {
                return report.broken(
                    entry.id,
                    "a keyed (HMAC) entry after the signed chain began: merlya signs every entry of a team's store, so it was forged or copied in afterwards",
                );
            }
            CHAIN_HMAC if keys.team && !key.is_some_and(|k| entry.keyed_hash_matches(k)) => {
                let run = report.foreign.get_or_insert(ForeignRun {
                    first: entry.id,
                    last: entry.id,
                    count: 0,
                    pinned_by: None,
                });
                run.last = entry.id;
                run.count += 1;
            }
            CHAIN_ED25519 => {
                if let Err(why) = check_signed(entry, &prev, keys.operators) {
                    return report.broken(entry.id, why);
                }
                if let Some(run) = report.foreign.as_mut() {
                    run.pinned_by.get_or_insert(entry.id);
                }
                report.signed += 1;
                report.signers.insert(entry.signer.clone().unwrap_or_default());
            }
            CHAIN_HMAC => {
                let Some(key) = key else {
                    return report.broken(
                        entry.id,
                        "audit.key is missing, so keyed entries cannot be checked (restore the key file)",
                    );
                };
                if !entry.keyed_hash_matches(key) {
                    return report.broken(
                        entry.id,
                        "its keyed hash does not match: the entry was altered, forged, or the chain was recomputed without the key (plain SHA-256 or another key)",
                    );
                }
                if entry.event == AuditEvent::Rebase {
                    if report.keyed > 0 {
                        return report.broken(entry.id, "a re-base entry in the middle of the keyed chain");
                    }
                    report.rebased_at = Some(entry.id);
                }
                report.keyed += 1;
            }
            other => return report.broken(entry.id, format!("unknown chain kind {other:?}")),
        }
        prev = entry.hash.clone();
    }
    if report.legacy > 0 && report.keyed > 0 && report.rebased_at.is_none() {
        return report.broken(0, "keyed entries follow unkeyed ones without a re-base entry");
    }
    if let Some(run) = report.foreign.clone().filter(|r| r.pinned_by.is_none()) {
        return report.broken(
            run.last,
            format!(
                "entries {}-{} are keyed by another home's audit key, which this home does not hold, and no signed entry follows them: nothing proves they were not changed (the next recorded command pins them)",
                run.first, run.last
            ),
        );
    }
    report
}

/// A signed entry: its hash over its content and link, and its signer's registered key's signature.
fn check_signed(entry: &AuditEntry, prev: &str, operators: &HashMap<String, VerifyingKey>) -> Result<(), String> {
    let Some(signer) = entry.signer.as_deref() else {
        return Err("a signed entry that names no signer: forged".into());
    };
    if entry.signed_hash(prev) != entry.hash {
        return Err(format!("its hash does not match its content: the entry was altered after {signer:?} signed it"));
    }
    let Some(key) = operators.get(signer) else {
        return Err(format!("signed as operator {signer:?}, who is not registered in this store: forged"));
    };
    let signature = entry.signature.as_deref().unwrap_or_default();
    if !super::operator::signature_valid(key, &entry.hash, signature) {
        return Err(format!(
            "its signature is not operator {signer:?}'s: the entry was forged or re-hashed after it was signed"
        ));
    }
    Ok(())
}

/// The head kept in the database, in the same transaction as each append.
fn check_head(report: ChainReport, entries: &[AuditEntry], head: Option<(i64, String, i64)>) -> ChainReport {
    let count = i64::try_from(entries.len()).unwrap_or(i64::MAX);
    let last = entries.last().map(|e| (e.id, e.hash.as_str()));
    match head {
        None if entries.is_empty() => report,
        None => report.broken(0, "the chain head in the database is missing"),
        Some((last_id, hash, head_count)) => {
            let matches = match last {
                None => head_count == 0,
                Some((id, h)) => id == last_id && h == hash,
            };
            if matches && head_count == count {
                report
            } else {
                report.broken(
                    last_id,
                    format!("the chain head names entry {last_id} of {head_count}; newest entries were removed"),
                )
            }
        }
    }
}

/// The signed head outside the database.
fn check_checkpoint(
    mut report: ChainReport,
    entries: &[AuditEntry],
    key: Option<&AuditKey>,
    checkpoint: Option<Checkpoint>,
    path: &std::path::Path,
) -> ChainReport {
    let (key, checkpoint) = match (key, checkpoint) {
        // An unkeyed log from an older merlya (or nothing yet): nothing outside the database to compare.
        (None, None) => return report,
        (None, Some(_)) => {
            return report.broken(0, "audit.key is missing while a checkpoint exists; the key was removed");
        }
        (Some(_), None) => {
            return report.broken(
                0,
                format!(
                    "{} is missing: the log was keyed, so the newest entries cannot be proven complete",
                    path.display()
                ),
            );
        }
        (Some(k), Some(c)) => (k, c),
    };
    if !checkpoint.signature_valid(key) {
        return report
            .broken(0, "the checkpoint's signature does not match the key: it was forged or written with another key");
    }
    report.checkpoint = Some(CheckpointSeen {
        last_id: checkpoint.last_id,
        count: checkpoint.count,
        written_at: checkpoint.written_at.clone(),
    });
    let written = &checkpoint.written_at;
    if checkpoint.count == 0 {
        report.beyond_checkpoint = entries.len();
        return report;
    }
    if entries.is_empty() {
        return report.broken(
            0,
            format!(
                "the log was wiped: the checkpoint written at {written} names {} entries ending at entry {}, the database has none",
                checkpoint.count, checkpoint.last_id
            ),
        );
    }
    let Some(position) = entries.iter().position(|e| e.id == checkpoint.last_id) else {
        let newest = entries.last().map(|e| e.id).unwrap_or(0);
        return report.broken(
            checkpoint.last_id,
            format!(
                "newest entries were removed: the checkpoint written at {written} names entry {} ({} entries), the database ends at entry {newest} ({} entries)",
                checkpoint.last_id,
                checkpoint.count,
                entries.len()
            ),
        );
    };
    let at = &entries[position];
    if at.hash != checkpoint.hash || i64::try_from(position + 1).ok() != Some(checkpoint.count) {
        return report.broken(
            at.id,
            format!(
                "differs from the checkpoint written at {written}: the chain up to it was rewritten or rows before it were removed"
            ),
        );
    }
    report.beyond_checkpoint = entries.len() - position - 1;
    report
}
