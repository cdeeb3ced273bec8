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
use crate::store::{Connection, capabilities};
use loom_protocol::capability::{Grant, StoredToken, TokenShape, TokenStatus, check_revocation_op};
use loom_protocol::id::{CapabilityId, ThreadId};
use loom_protocol::thread::ThreadState;
use loom_protocol::{Address, ErrorCode};
use serde_json::{Value, json};

pub use loom_protocol::capability::REVOKE_INTENT;

/// Parses a `thr_` ID from request data, naming the field on failure.
pub(crate) fn thread_id_param(field: &str, s: &str) -> ApiResult<ThreadId> {
    ThreadId::parse(s).map_err(|e| ApiError::bad_request(field, e.to_string(), "v1.1 §8.4"))
}

fn denied(field: &str, reason: impl Into<String>, section: &'static str) -> ApiError {
    ApiError::new(ErrorCode::CapabilityDenied, field, reason, section)
}

impl Service {
    /// `POST /v1/capabilities` (§16.4): stores a token the caller signed as issuer. The caller
    /// must be a current owner of the token's thread (§12.4: issuers are owners), the token
    /// must have the §12.1 shape, `issued_by` = caller, a signature by one of the caller's
    /// active signing keys over `JCS(token − signature)`, and `epoch` = the thread's
    /// `cap_epoch` (§12.3). Returns the token as stored.
    pub fn issue_capability(&self, caller: &Caller, token: Value) -> ApiResult<Value> {
        let id = token
            .get("id")
            .and_then(Value::as_str)
            .unwrap_or("-")
            .to_owned();
        let issued = self.issue_checked(caller, token);
        if let Err(e) = &issued {
            self.security_event("capability", &caller.identity.to_string(), &id, e);
        }
        issued
    }

    fn issue_checked(&self, caller: &Caller, token: Value) -> ApiResult<Value> {
        let now = self.env.now();
        let t = TokenShape::parse(&token, now, self.deviations.api.accept_any_capability_id)?;
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
        let tx = self.store.begin()?;
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
        if capabilities::exists(&tx, &t.id)? {
            return Err(ApiError::new(
                ErrorCode::EnvelopeDuplicate,
                "id",
                format!("{} is already stored", t.id),
                "v1.1 §8.4, §24.2",
            ));
        }
        capabilities::insert(
            &tx,
            &capabilities::NewCapability {
                id: &t.id,
                thread: &t.thread,
                issued_by: &t.issued_by,
                issued_to: &t.issued_to,
                epoch: t.epoch,
                single_use: t.single_use,
                document: &token,
                at: &now.to_rfc3339(),
            },
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
        let conn = self.store.read();
        let state = self.thread_state(&conn, &tid)?;
        let me = caller.identity.to_string();
        let all = capabilities::of_thread(&conn, &tid)?;
        drop(conn);
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
        let out: Vec<Value> = all
            .into_iter()
            .filter(|r| owner || r.issued_to == me)
            .map(|r| {
                let status = StoredToken::read(&r.document).status(
                    r.revoked_at.is_some(),
                    r.spent_at.is_some(),
                    r.epoch,
                    state.cap_epoch,
                    now,
                );
                json!({
                    "id": r.id,
                    "status": status.as_str(),
                    "stored_at": r.created_at,
                    "spent_at": r.spent_at,
                    "revoked_at": r.revoked_at,
                    "token": r.document,
                })
            })
            .collect();
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
            let conn = self.store.read();
            let not_found =
                || ApiError::not_found(ErrorCode::EnvelopeNotFound, "capability_id", cid);
            let head = capabilities::head(&conn, &cid)?.ok_or_else(not_found)?;
            let tid = ThreadId::parse(&head.thread).map_err(ApiError::internal)?;
            let visible = self
                .thread_state(&conn, &tid)?
                .is_some_and(|s| s.is_active_participant(&caller.identity));
            if !visible && head.issued_to != caller.identity.to_string() {
                return Err(not_found());
            }
            (tid, head.issued_to, head.revoked_at)
        };
        if revoked.is_some() {
            return Err(ApiError::new(
                ErrorCode::StateTransitionInvalid,
                "capability_id",
                "the token is already revoked",
                "v1.1 §12.3",
            ));
        }
        check_revocation_op(&op, &thread, &cid)?;
        // The pipeline marks the token revoked, bumps cap_epoch and emits the
        // `capability.revoked` event and audit entry in the operation's own transaction.
        let stored = self.submit_envelope(caller, op).await?.value;
        let conn = self.store.read();
        let state = self
            .thread_state(&conn, &thread)?
            .ok_or_else(|| ApiError::internal("thread of a stored token"))?;
        let revoked_at = capabilities::revoked_at(&conn, &cid)?;
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
        Ok(capabilities::of_thread(conn, &state.id)?
            .into_iter()
            .filter(|r| r.issued_to == me)
            .any(|r| {
                let t = StoredToken::read(&r.document);
                t.status(
                    r.revoked_at.is_some(),
                    r.spent_at.is_some(),
                    r.epoch,
                    state.cap_epoch,
                    now,
                ) == TokenStatus::Active
                    && t.covers(grant)
            }))
    }
}
