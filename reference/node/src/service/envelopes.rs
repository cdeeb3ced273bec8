//! Envelopes (v1.1 §16.1): submission, retrieval under audience rules (§8.3) and retraction
//! (§20.7, §25.2–§25.3).
//!
//! Submission is loom-protocol's acceptance core ([`loom_protocol::accept`], whose module
//! docs list every rule in order): [`admit`] runs here, in the request's task, with
//! identities read from a read connection; the admitted envelope then goes to the single
//! writer ([`super::write_group`]), which decides it in order, applies its effects through
//! the store and answers once the group's transaction is durable.

use super::{Caller, Document, Service};
use crate::error::{ApiError, ApiResult};
use crate::store::resolvers::local_directory;
use crate::store::{envelopes, events, threads};
use loom_protocol::accept::{Origin, ThreadRuntime, admit};
use loom_protocol::envelope::AudienceMode;
use loom_protocol::id::{EnvelopeId, ThreadId};
use loom_protocol::jcs::to_canonical_bytes;
use loom_protocol::policy::{AudienceOf, check_deletable};
use loom_protocol::thread::ThreadState;
use loom_protocol::{Address, ErrorCode, ProtocolError, Timestamp};
use rusqlite::Connection;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Mutex, MutexGuard};

/// Most thread runtimes kept in memory; beyond it the oldest thread ids (ULIDs sort by
/// creation) are dropped and reloaded from the store on their next envelope.
pub const THREAD_CACHE_CAPACITY: usize = 20_000;

/// Cache of thread runtimes (state + DAG), changed only by the writer after its commit.
#[derive(Debug, Default)]
pub struct ThreadCache(Mutex<BTreeMap<ThreadId, ThreadRuntime>>);

impl ThreadCache {
    pub(crate) fn lock(&self) -> MutexGuard<'_, BTreeMap<ThreadId, ThreadRuntime>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A copy of a cached runtime.
    pub(crate) fn get(&self, id: &ThreadId) -> Option<ThreadRuntime> {
        self.lock().get(id).cloned()
    }

    fn state(&self, id: &ThreadId) -> Option<ThreadState> {
        self.lock().get(id).map(|rt| rt.state.clone())
    }

    /// Keeps the cache within [`THREAD_CACHE_CAPACITY`].
    pub(crate) fn bound(map: &mut BTreeMap<ThreadId, ThreadRuntime>) {
        if map.len() > THREAD_CACHE_CAPACITY {
            let drop_n = map.len() - THREAD_CACHE_CAPACITY * 9 / 10;
            let oldest: Vec<ThreadId> = map.keys().take(drop_n).copied().collect();
            for id in oldest {
                map.remove(&id);
            }
        }
    }
}

fn hash_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

impl Service {
    /// `POST /v1/envelopes` (§16.1): admits the envelope, then commits it through the
    /// writer; returns it as stored (with `meta`).
    pub async fn submit_envelope(&self, caller: &Caller, env: Value) -> ApiResult<Document> {
        self.submit_envelope_claimed(caller, env, None).await
    }

    /// [`Service::submit_envelope`] for a request with an `Idempotency-Key` (`claim`): the
    /// writer remembers the result in the same transaction as the envelope (v1.1 §14.4;
    /// issue 36, item 6), and a concurrent or retried request with the key gets it replayed.
    pub async fn submit_envelope_claimed(
        &self,
        caller: &Caller,
        env: Value,
        claim: Option<super::idempotency::Claim>,
    ) -> ApiResult<Document> {
        let id = env
            .get("id")
            .and_then(Value::as_str)
            .unwrap_or("-")
            .to_owned();
        let submitted = self.submit_checked(caller, env, claim).await;
        if let Err(e) = &submitted {
            self.security_event("envelope", &caller.identity.to_string(), &id, e);
        }
        submitted
    }

    async fn submit_checked(
        &self,
        caller: &Caller,
        env: Value,
        claim: Option<super::idempotency::Claim>,
    ) -> ApiResult<Document> {
        let admitted = {
            // Sender type and keys through the authentication cache (exactly invalidated
            // by the transactions that change them, `store::cache`): the request's bearer
            // token was just resolved the same way.
            let directory = local_directory(&self.store);
            let origin = Origin::Local {
                caller: &caller.identity,
            };
            let limit = &self.config.limits.envelope();
            let now = self.env.now();
            let rules = self.admission(&caller.identity, false);
            admit(env, origin, &directory, &*rules, limit, now)?
        };
        // A token issued on another node: its issuer's keys come from its home node (§12),
        // and the writer's decision needs them. Fetched only for an envelope that admission
        // accepted (within the limits, well formed, signed by the caller), so a client
        // cannot make the node reach out to arbitrary domains with junk.
        self.resolve_token_issuer(&admitted.envelope).await?;
        self.commit_claimed(
            admitted,
            super::write_group::Submitter::Local(caller.clone()),
            claim,
        )
        .await
    }

    /// A fresh event id (`evt_` + ULID).
    pub(crate) fn new_event_id(&self) -> String {
        if self.deviations.api.unprefixed_event_ids {
            self.env.ids().ulid().to_string()
        } else {
            self.env.ids().event().to_string()
        }
    }

    /// Appends to the event log (§16.8, §17.3) with the identities allowed to see it.
    pub(crate) fn append_event(
        &self,
        conn: &Connection,
        kind: &str,
        thread: Option<&ThreadId>,
        envelope: Option<&EnvelopeId>,
        payload: Value,
        readers: &BTreeSet<Address>,
    ) -> ApiResult<String> {
        let id = self.new_event_id();
        let at = self.env.now().to_rfc3339();
        events::append(
            conn,
            &events::NewEvent {
                id: &id,
                kind,
                thread,
                envelope,
                payload: &payload,
                at: &at,
                readers,
            },
        )?;
        Ok(id)
    }

    /// The thread state as cached or stored.
    pub(crate) fn thread_state(
        &self,
        conn: &Connection,
        id: &ThreadId,
    ) -> ApiResult<Option<ThreadState>> {
        if let Some(s) = self.threads.state(id) {
            return Ok(Some(s));
        }
        Ok(threads::stored_state(conn, id)?)
    }

    /// `GET /v1/envelopes/{id}` under the audience rules (§8.3).
    pub fn get_envelope(&self, caller: &Caller, id: &str) -> ApiResult<Value> {
        let eid = EnvelopeId::parse(id)
            .map_err(|e| ApiError::bad_request("id", e.to_string(), "v1.1 §8.4"))?;
        let conn = self.store.read();
        let Some(row) = envelopes::read(&conn, &eid)? else {
            return Err(ApiError::not_found(ErrorCode::EnvelopeNotFound, "id", eid));
        };
        let tid = ThreadId::parse(&row.thread).map_err(ApiError::internal)?;
        let state = self
            .thread_state(&conn, &tid)?
            .ok_or_else(|| ApiError::internal("thread of stored envelope"))?;
        let Some(body) = row.body else {
            return Ok(
                json!({"id": eid.to_string(), "thread_id": row.thread, "erased": true, "erased_at": row.erased_at, "retracted_at": row.retracted_at}),
            );
        };
        let env: Value = serde_json::from_str(&body).map_err(ApiError::internal)?;
        self.check_visible(&env, caller, &state)?;
        Ok(env)
    }

    /// Audience enforcement for one stored envelope ([`AudienceOf`], §8.3).
    pub(crate) fn check_visible(
        &self,
        env: &Value,
        caller: &Caller,
        state: &ThreadState,
    ) -> Result<(), ProtocolError> {
        self.check_visible_as(env, caller, state.is_active_participant(&caller.identity))
    }

    /// [`Service::check_visible`] given whether the caller is an active participant of the
    /// envelope's thread.
    pub(crate) fn check_visible_as(
        &self,
        env: &Value,
        caller: &Caller,
        active_participant: bool,
    ) -> Result<(), ProtocolError> {
        if self.deviations.reads.ignore_audience {
            return Ok(());
        }
        let mut audience = AudienceOf::read(env);
        if self.deviations.reads.omitted_audience_as_recipients
            && audience.mode.is_none()
            && !audience.unknown_mode
        {
            audience.mode = Some(AudienceMode::Recipients);
        }
        audience.check(&caller.identity, active_participant)
    }

    /// `DELETE /v1/envelopes/{id}` (§20.7 retract, §25.2 erasure): only the sender, within
    /// the retract window, never under legal hold (§25.3). The content is erased; an audit
    /// skeleton (id, hashes, actor, time) stays.
    pub fn retract_envelope(&self, caller: &Caller, id: &str) -> ApiResult<Value> {
        let eid = EnvelopeId::parse(id)
            .map_err(|e| ApiError::bad_request("id", e.to_string(), "v1.1 §8.4"))?;
        let conn = self.store.conn();
        let tx = conn.unchecked_transaction()?;
        let Some(row) = envelopes::read_for_retract(&tx, &eid)? else {
            return Err(ApiError::not_found(ErrorCode::EnvelopeNotFound, "id", eid));
        };
        let Some(body) = row.body else {
            return Err(ApiError::new(
                ErrorCode::StateTransitionInvalid,
                "id",
                "the envelope was already retracted or erased",
                "v1.1 §20.7",
            ));
        };
        if row.sender != caller.identity.to_string() {
            return Err(ApiError::new(
                ErrorCode::CapabilityDenied,
                "id",
                "only the sender may retract an envelope",
                "v1.1 §20.7",
            ));
        }
        let env: Value = serde_json::from_str(&body).map_err(ApiError::internal)?;
        let tid = ThreadId::parse(&row.thread).map_err(ApiError::internal)?;
        let state = self
            .thread_state(&tx, &tid)?
            .ok_or_else(|| ApiError::internal("thread"))?;
        let env_labels = env
            .get("labels")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str);
        if !self.deviations.api.ignore_legal_hold {
            check_deletable(env_labels.chain(state.labels.iter().map(String::as_str)))?;
        }
        let window = i64::try_from(self.config.retract_window_secs)
            .unwrap_or(i64::MAX)
            .saturating_mul(1000);
        let received = Timestamp::parse(&row.received_at).map_err(ApiError::internal)?;
        if window == 0 || self.env.now().unix_ms() > received.unix_ms().saturating_add(window) {
            return Err(ApiError::new(
                ErrorCode::StateTransitionInvalid,
                "id",
                format!(
                    "the retract window of {} s has passed",
                    self.config.retract_window_secs
                ),
                "v1.1 §20.7",
            ));
        }
        let now = self.env.now().to_rfc3339();
        envelopes::retract(&tx, &eid, &now)?;
        let mut audience = AudienceOf::read(&env);
        audience.sender = Some(caller.identity.clone());
        let participants: Vec<Address> = state
            .participants
            .iter()
            .filter(|(_, p)| p.left_at.is_none())
            .map(|(a, _)| a.clone())
            .collect();
        let who = audience.readers(participants.iter(), &[]);
        if !self.deviations.api.omit_retracted_event {
            self.append_event(
                &tx,
                "envelope.retracted",
                Some(&tid),
                Some(&eid),
                json!({"envelope_id": eid.to_string(), "thread_id": row.thread}),
                &who,
            )?;
        }
        self.audit(
            &tx,
            &caller.identity.to_string(),
            "envelope.retracted",
            &eid.to_string(),
            json!({"sha256": row.sha256, "thread_id": row.thread}),
        )?;
        tx.commit()?;
        Ok(
            json!({"id": eid.to_string(), "thread_id": row.thread, "retracted": true, "retracted_at": now}),
        )
    }
}

/// Hex SHA-256 of a request body, for idempotency comparisons.
pub fn request_hash(raw: &[u8]) -> String {
    hash_hex(raw)
}

/// Canonical bytes, re-exported for callers hashing envelopes.
pub fn canonical(env: &Value) -> Vec<u8> {
    to_canonical_bytes(env)
}
