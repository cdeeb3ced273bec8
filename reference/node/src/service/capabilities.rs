//! Capability tokens over the API (v1.1 §16.4, §12): issuing (storing) a token the thread
//! owner signed, listing a thread's tokens, and revoking one through the authoritative
//! `capability.revoked@v1` thread operation (§12.3, §12.4).
//!
//! Tokens are self-contained and verified offline wherever they are presented (§12); the
//! node keeps the ones issued through it so that single-use tokens can be marked spent
//! (§12.5), revocations recorded, holders can list what they hold, and blob downloads can
//! honour a `read` grant (§16.7).
//!
//! Codes: a malformed token is `ENVELOPE_INVALID` (400, "fails schema"); an issuer that is not
//! the caller or not a thread owner, a token signature that does not verify, and a token
//! epoch other than the thread's `cap_epoch` are `CAPABILITY_DENIED` ("missing or invalid
//! capability", §24.2 — the code `loom-protocol` uses for a token whose signature fails). A
//! thread the caller does not participate in is `THREAD_NOT_FOUND`, so existence does not
//! leak (as `GET /v1/threads/{id}` does). The registry has no code for an unknown token;
//! `ENVELOPE_NOT_FOUND` (404) with field `capability_id` stands in.

use super::{Caller, Service};
use crate::error::{ApiError, ApiResult};
use loom_protocol::capability::{Grant, TokenShape};
use loom_protocol::id::{CapabilityId, ThreadId};
use loom_protocol::thread::ThreadState;
use loom_protocol::{Address, ErrorCode, Timestamp};
use rusqlite::{Connection, OptionalExtension, params};
use serde_json::{Value, json};

/// The intent of the revocation operation (§12.3).
pub const REVOKE_INTENT: &str = "capability.revoked@v1";

/// Parses a `thr_` ID from request data, naming the field on failure.
pub(crate) fn thread_id_param(field: &str, s: &str) -> ApiResult<ThreadId> {
    ThreadId::parse(s).map_err(|e| ApiError::bad_request(field, e.to_string(), "v1.1 §8.4"))
}

fn denied(field: &str, reason: impl Into<String>, section: &'static str) -> ApiError {
    ApiError::new(ErrorCode::CapabilityDenied, field, reason, section)
}

/// The lifecycle status of a stored token, as listed.
fn token_status(
    revoked: bool,
    spent: bool,
    epoch: u64,
    state: &ThreadState,
    expires_at: Option<Timestamp>,
    now: Timestamp,
) -> &'static str {
    if revoked {
        "revoked"
    } else if spent {
        "spent"
    } else if epoch != state.cap_epoch {
        "stale_epoch"
    } else if expires_at.is_some_and(|e| e < now) {
        "expired"
    } else {
        "active"
    }
}

/// A stored token row.
struct Row {
    id: String,
    issued_to: String,
    epoch: u64,
    document: String,
    created_at: String,
    spent_at: Option<String>,
    revoked_at: Option<String>,
}

fn rows(conn: &Connection, thread: &ThreadId) -> ApiResult<Vec<Row>> {
    let mut stmt = conn.prepare_cached(
        "SELECT id, issued_to, epoch, document, created_at, spent_at, revoked_at FROM capabilities WHERE thread_id = ?1 ORDER BY rowid",
    )?;
    let out = stmt
        .query_map([thread.to_string()], |r| {
            Ok(Row {
                id: r.get(0)?,
                issued_to: r.get(1)?,
                epoch: u64::try_from(r.get::<_, i64>(2)?).unwrap_or(0),
                document: r.get(3)?,
                created_at: r.get(4)?,
                spent_at: r.get(5)?,
                revoked_at: r.get(6)?,
            })
        })?
        .collect::<Result<_, _>>()?;
    Ok(out)
}

impl Service {
    /// `POST /v1/capabilities` (§16.4): stores a token the caller signed as issuer. The caller
    /// must be a current owner of the token's thread (§12.4: issuers are owners), the token
    /// must have the §12.1 shape, `issued_by` = caller, a signature by one of the caller's
    /// active signing keys over `JCS(token − signature)`, and `epoch` = the thread's
    /// `cap_epoch` (§12.3). Returns the token as stored.
    pub fn issue_capability(&self, caller: &Caller, token: Value) -> ApiResult<Value> {
        let now = self.env.now();
        let t = TokenShape::parse(
            &token,
            now,
            self.quirk(crate::quirks::Quirk::AcceptAnyCapabilityId),
        )?;
        if t.issued_by != caller.identity {
            return Err(denied(
                "issued_by",
                format!(
                    "the authenticated identity is {}; it cannot issue tokens as {}",
                    caller.identity, t.issued_by
                ),
                "v1.1 §12.1, §16.4",
            ));
        }
        let key = self
            .active_signing_key(&caller.identity, &t.key_id)?
            .ok_or_else(|| {
                denied(
                    "signature.key_id",
                    format!("{} is not an active signing key of the issuer", t.key_id),
                    "v1.1 §12.1, §24.2",
                )
            })?;
        if !t.signature_verifies(&token, &key) {
            return Err(denied(
                "signature.value",
                "Ed25519 signature of the issuer does not verify over JCS(token - signature)",
                "v1.1 §12.1, §24.2",
            ));
        }
        let conn = self.store.conn();
        let tx = conn.unchecked_transaction()?;
        let state = self.participant_thread(&tx, caller, &t.thread, "scope.thread_id")?;
        if !state.is_owner(&caller.identity) {
            return Err(denied(
                "issued_by",
                "only a current thread owner may issue capability tokens",
                "v1.1 §12.4",
            ));
        }
        if t.epoch != state.cap_epoch {
            return Err(denied(
                "epoch",
                format!(
                    "token epoch {} does not equal the thread's cap_epoch {}",
                    t.epoch, state.cap_epoch
                ),
                "v1.1 §12.3",
            ));
        }
        let exists = tx
            .query_row(
                "SELECT 1 FROM capabilities WHERE id = ?1",
                [t.id.to_string()],
                |_| Ok(()),
            )
            .optional()?;
        if exists.is_some() {
            return Err(ApiError::new(
                ErrorCode::EnvelopeDuplicate,
                "id",
                format!("{} is already stored", t.id),
                "v1.1 §8.4, §24.2",
            ));
        }
        tx.execute(
            "INSERT INTO capabilities (id, thread_id, issued_by, issued_to, epoch, single_use, document, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            params![
                t.id.to_string(), t.thread.to_string(), t.issued_by.to_string(), t.issued_to.to_string(),
                i64::try_from(t.epoch).map_err(ApiError::internal)?, t.single_use, token.to_string(), now.to_rfc3339()
            ],
        )?;
        self.audit(
            &tx,
            &caller.identity.to_string(),
            "capability.issued",
            &t.id.to_string(),
            json!({"thread_id": t.thread.to_string(), "issued_to": t.issued_to.to_string(), "epoch": t.epoch, "single_use": t.single_use, "expires_at": t.expires_at.map(|e| e.to_rfc3339())}),
        )?;
        tx.commit()?;
        Ok(token)
    }

    /// The state of `thread` if the caller is a current participant; otherwise
    /// `THREAD_NOT_FOUND`, so existence does not leak (§10.5).
    pub(crate) fn participant_thread(
        &self,
        conn: &Connection,
        caller: &Caller,
        thread: &ThreadId,
        field: &str,
    ) -> ApiResult<ThreadState> {
        self.thread_state(conn, thread)?
            .filter(|s| s.is_active_participant(&caller.identity))
            .ok_or_else(|| ApiError::not_found(ErrorCode::ThreadNotFound, field, thread))
    }

    /// `GET /v1/capabilities?thread_id=…` (§16.4): an owner sees every token of the thread,
    /// anyone else only the tokens issued to them; each with its status (`active`,
    /// `revoked`, `spent`, `stale_epoch`, `expired`). A caller who neither participates
    /// nor holds a token gets `THREAD_NOT_FOUND`.
    pub fn list_capabilities(&self, caller: &Caller, thread: Option<&str>) -> ApiResult<Value> {
        let thread = thread.ok_or_else(|| {
            ApiError::bad_request("thread_id", "thread_id is required", "v1.1 §16.4")
        })?;
        let tid = thread_id_param("thread_id", thread)?;
        let conn = self.store.conn();
        let state = self.thread_state(&conn, &tid)?;
        let me = caller.identity.to_string();
        let all = rows(&conn, &tid)?;
        let Some(state) = state.filter(|s| {
            s.is_active_participant(&caller.identity) || all.iter().any(|r| r.issued_to == me)
        }) else {
            return Err(ApiError::not_found(
                ErrorCode::ThreadNotFound,
                "thread_id",
                tid,
            ));
        };
        let owner = state.is_owner(&caller.identity);
        let now = self.env.now();
        let mut out = Vec::new();
        for r in all.into_iter().filter(|r| owner || r.issued_to == me) {
            let token: Value = serde_json::from_str(&r.document).map_err(ApiError::internal)?;
            let expires = token
                .get("expires_at")
                .and_then(Value::as_str)
                .and_then(|s| Timestamp::parse(s).ok());
            let status = token_status(
                r.revoked_at.is_some(),
                r.spent_at.is_some(),
                r.epoch,
                &state,
                expires,
                now,
            );
            out.push(json!({
                "id": r.id,
                "status": status,
                "stored_at": r.created_at,
                "spent_at": r.spent_at,
                "revoked_at": r.revoked_at,
                "token": token,
            }));
        }
        Ok(json!({"thread_id": tid.to_string(), "cap_epoch": state.cap_epoch, "capabilities": out}))
    }

    /// `DELETE /v1/capabilities/{id}` (§16.4 "Revoke (creates thread_op)"). Revocation is the
    /// `capability.revoked@v1` thread operation (§12.3), which only an owner (or an `admin`
    /// token holder) may sign — and a node cannot sign for its users. So the request body is
    /// that operation, signed by the caller, with `parameters.capability_id` = `{id}` and the
    /// token's thread; it goes through [`Service::submit_envelope`] like any envelope, which
    /// marks the token revoked and increments the thread's `cap_epoch` (every older token
    /// then fails the §12.3 epoch check). Then a `capability.revoked` event (§17.3) goes to
    /// the thread's participants and the holder.
    pub async fn revoke_capability(
        &self,
        caller: &Caller,
        id: &str,
        op: Value,
    ) -> ApiResult<Value> {
        let cid = CapabilityId::parse(id)
            .map_err(|e| ApiError::bad_request("capability_id", e.to_string(), "v1.1 §8.4"))?;
        let (thread, issued_to, revoked) = {
            let conn = self.store.conn();
            let row: Option<(String, String, Option<String>)> = conn
                .query_row(
                    "SELECT thread_id, issued_to, revoked_at FROM capabilities WHERE id = ?1",
                    [cid.to_string()],
                    |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
                )
                .optional()?;
            let not_found =
                || ApiError::not_found(ErrorCode::EnvelopeNotFound, "capability_id", cid);
            let (thread, issued_to, revoked) = row.ok_or_else(not_found)?;
            let tid = ThreadId::parse(&thread).map_err(ApiError::internal)?;
            let visible = self
                .thread_state(&conn, &tid)?
                .is_some_and(|s| s.is_active_participant(&caller.identity));
            if !visible && issued_to != caller.identity.to_string() {
                return Err(not_found());
            }
            (tid, issued_to, revoked)
        };
        if revoked.is_some() {
            return Err(ApiError::new(
                ErrorCode::StateTransitionInvalid,
                "capability_id",
                "the token is already revoked",
                "v1.1 §12.3",
            ));
        }
        let bad = |f: &str, r: String| ApiError::bad_request(f, r, "v1.1 §12.3, §16.4");
        if op.get("type").and_then(Value::as_str) != Some("thread_op") {
            return Err(bad(
                "type",
                "the body must be the signed capability.revoked@v1 thread_op".into(),
            ));
        }
        if op
            .pointer("/content/structured/intent")
            .and_then(Value::as_str)
            != Some(REVOKE_INTENT)
        {
            return Err(bad(
                "content.structured.intent",
                format!("must be {REVOKE_INTENT}"),
            ));
        }
        if op.get("thread_id").and_then(Value::as_str) != Some(&thread.to_string()) {
            return Err(bad(
                "thread_id",
                format!("must be {thread}, the token's thread"),
            ));
        }
        if op
            .pointer("/content/structured/parameters/capability_id")
            .and_then(Value::as_str)
            != Some(&cid.to_string())
        {
            return Err(bad(
                "content.structured.parameters.capability_id",
                format!("must be {cid}, the token in the path"),
            ));
        }
        // The pipeline marks the token revoked, bumps cap_epoch and emits the
        // `capability.revoked` event and audit entry in the operation's own transaction.
        let stored = self.submit_envelope(caller, op).await?;
        let conn = self.store.conn();
        let state = self
            .thread_state(&conn, &thread)?
            .ok_or_else(|| ApiError::internal("thread of a stored token"))?;
        let revoked_at: Option<String> = conn.query_row(
            "SELECT revoked_at FROM capabilities WHERE id = ?1",
            [cid.to_string()],
            |r| r.get(0),
        )?;
        Ok(json!({
            "capability_id": cid.to_string(),
            "thread_id": thread.to_string(),
            "issued_to": issued_to,
            "revoked_at": revoked_at,
            "cap_epoch": state.cap_epoch,
            "envelope": stored,
        }))
    }

    /// Whether `who` holds a stored, unrevoked, unspent, unexpired token of the thread's
    /// current epoch that covers `grant` (`admin` covers all, §12.2). Used where a grant is
    /// proven by a token the node holds rather than one presented (§16.7 blob downloads).
    pub(crate) fn holds_grant(
        &self,
        conn: &Connection,
        who: &Address,
        state: &ThreadState,
        grant: Grant,
    ) -> ApiResult<bool> {
        let now = self.env.now();
        let me = who.to_string();
        Ok(rows(conn, &state.id)?
            .into_iter()
            .filter(|r| r.issued_to == me && r.revoked_at.is_none() && r.spent_at.is_none())
            .filter(|r| r.epoch == state.cap_epoch)
            .filter_map(|r| serde_json::from_str::<Value>(&r.document).ok())
            .any(|t| {
                let expired = t
                    .get("expires_at")
                    .and_then(Value::as_str)
                    .and_then(|s| Timestamp::parse(s).ok())
                    .is_some_and(|e| e < now);
                let covers = t
                    .get("grants")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .filter_map(Grant::parse)
                    .any(|g| g.covers(grant));
                !expired && covers
            }))
    }
}
