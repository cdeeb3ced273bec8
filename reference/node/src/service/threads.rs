//! Threads (v1.1 §16.2): listing with filters, sorting and offset or cursor pagination; the
//! §10.1 thread object; envelopes in §10.3 rendering order under audience rules.

use super::{Caller, Document, Service};
use crate::error::{ApiError, ApiResult};
use crate::store::listings::{self, ThreadPage, ThreadSort};
use crate::store::{envelopes, threads};
use loom_protocol::ErrorCode;
use loom_protocol::id::{EnvelopeId, ThreadId};
use loom_protocol::thread::{ThreadState, check_op_for_thread, rendering_order};
use serde::Deserialize;
use serde_json::{Value, json};

/// `GET /v1/threads` query parameters.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ThreadQuery {
    /// Only threads in this state.
    pub state: Option<String>,
    /// Only threads with this label.
    pub label: Option<String>,
    /// Only threads this identity participates in (besides the caller).
    pub participant: Option<String>,
    /// `updated_at` (default) or `created_at`.
    pub sort: Option<String>,
    /// `desc` (default) or `asc`.
    pub order: Option<String>,
    /// Page size (default 50, capped by the node's `max_page_size`).
    pub limit: Option<usize>,
    /// Offset pagination.
    pub offset: Option<usize>,
    /// Cursor pagination: the `next_cursor` of the previous page.
    pub cursor: Option<String>,
}

/// The §10.1 thread object.
pub fn thread_object(
    state: &ThreadState,
    created_at: &str,
    updated_at: &str,
    root: Option<&str>,
    count: i64,
    last_seq: i64,
) -> Value {
    let participants: Vec<Value> = state
        .participants
        .iter()
        .map(|(a, p)| json!({"identity": a.to_string(), "role": p.role, "joined_at": p.joined_at.to_rfc3339(), "left_at": p.left_at.map(|t| t.to_rfc3339())}))
        .collect();
    json!({
        "id": state.id.to_string(),
        "root_envelope_id": root,
        "subject": state.subject,
        "state": state.state.as_str(),
        "created_at": created_at,
        "updated_at": updated_at,
        "participants": participants,
        "labels": state.labels,
        "forks": state.forks,
        "linked_threads": state.linked_threads,
        "cap_epoch": state.cap_epoch,
        "encryption": {"enabled": state.encryption_enabled, "profile": state.encryption_profile, "key_epoch": state.key_epoch},
        "envelope_count": count,
        "last_event_seq": last_seq,
    })
}

pub(crate) fn parse_thread_id(id: &str) -> ApiResult<ThreadId> {
    ThreadId::parse(id).map_err(|e| ApiError::bad_request("thread_id", e.to_string(), "v1.1 §8.4"))
}

impl Service {
    /// `GET /v1/threads/{id}`: only for current participants; others get `THREAD_NOT_FOUND`
    /// so thread existence does not leak.
    pub fn get_thread(&self, caller: &Caller, id: &str) -> ApiResult<Value> {
        let tid = parse_thread_id(id)?;
        let conn = self.store.read();
        let Some(row) = listings::thread_row(&conn, &tid)? else {
            return Err(ApiError::not_found(
                ErrorCode::ThreadNotFound,
                "thread_id",
                tid,
            ));
        };
        let state = self
            .thread_state(&conn, &tid)?
            .ok_or_else(|| ApiError::internal("thread state"))?;
        drop(conn);
        if !state.is_active_participant(&caller.identity) && !self.deviations.reads.ignore_audience
        {
            return Err(ApiError::not_found(
                ErrorCode::ThreadNotFound,
                "thread_id",
                tid,
            ));
        }
        let obj = thread_object(
            &state,
            &row.created_at,
            &row.updated_at,
            row.root.as_deref(),
            row.envelope_count,
            row.last_event_seq,
        );
        Ok(obj)
    }

    /// `GET /v1/threads`: the caller's threads.
    pub fn list_threads(&self, caller: &Caller, q: &ThreadQuery) -> ApiResult<Value> {
        let bad = |f: &str, r: &str| ApiError::bad_request(f, r, "v1.1 §16.2");
        let sort = match q.sort.as_deref().unwrap_or("updated_at") {
            "updated_at" => ThreadSort::UpdatedAt,
            "created_at" => ThreadSort::CreatedAt,
            _ => return Err(bad("sort", "sort must be updated_at or created_at")),
        };
        let desc = match q.order.as_deref().unwrap_or("desc") {
            "desc" => true,
            "asc" => false,
            _ => return Err(bad("order", "order must be asc or desc")),
        };
        if let Some(s) = &q.state
            && !["active", "resolved", "archived", "locked"].contains(&s.as_str())
        {
            return Err(bad(
                "state",
                "state must be active, resolved, archived or locked",
            ));
        }
        let limit = q.limit.unwrap_or(50);
        if limit == 0 || limit > self.config.limits.max_page_size {
            return Err(bad(
                "limit",
                &format!("limit must be 1-{}", self.config.limits.max_page_size),
            ));
        }
        if q.cursor.is_some() && q.offset.is_some() {
            return Err(bad("cursor", "use either cursor or offset, not both"));
        }
        // The cursor is the (sort key, id) of the last row of the previous page.
        let after = match &q.cursor {
            Some(c) => {
                let (k, id) = c
                    .split_once('|')
                    .ok_or_else(|| bad("cursor", "malformed cursor"))?;
                Some((k.to_owned(), id.to_owned()))
            }
            None => None,
        };
        let participant = q
            .participant
            .as_deref()
            .map(|p| super::parse_address("participant", p))
            .transpose()?;
        let conn = self.store.read();
        let rows = listings::threads(
            &conn,
            &ThreadPage {
                caller: &caller.identity,
                status: q.state.as_deref(),
                label: q.label.as_deref(),
                participant: participant.as_ref(),
                sort,
                desc,
                after: after.as_ref().map(|(k, id)| (k.as_str(), id.as_str())),
                limit: limit + 1,
                offset: q.offset.unwrap_or(0),
            },
        )?;
        let more = rows.len() > limit;
        let mut threads = Vec::new();
        let mut next_cursor = None;
        for t in rows.into_iter().take(limit) {
            let tid = parse_thread_id(&t.row.id)?;
            let state = self
                .thread_state(&conn, &tid)?
                .ok_or_else(|| ApiError::internal("thread state"))?;
            threads.push(thread_object(
                &state,
                &t.row.created_at,
                &t.row.updated_at,
                None,
                t.row.envelope_count,
                t.row.last_event_seq,
            ));
            next_cursor = Some(format!("{}|{}", t.key, t.row.id));
        }
        Ok(json!({
            "threads": threads,
            "next_cursor": if more { next_cursor } else { None },
            "limit": limit,
            "offset": q.offset.unwrap_or(0),
        }))
    }

    /// `GET /v1/threads/{id}/envelopes`: every envelope the caller may see, in §10.3
    /// rendering order, each with its `meta`.
    pub fn thread_envelopes(&self, caller: &Caller, id: &str) -> ApiResult<Value> {
        let tid = parse_thread_id(id)?;
        let conn = self.store.read();
        let Some(state) = self.thread_state(&conn, &tid)? else {
            return Err(ApiError::not_found(
                ErrorCode::ThreadNotFound,
                "thread_id",
                tid,
            ));
        };
        // A bcc recipient or custom-audience reader may still see single envelopes.
        if !state.is_active_participant(&caller.identity)
            && !self.deviations.reads.ignore_audience
            && !listings::reads_in_thread(&conn, &tid, &caller.identity)?
        {
            return Err(ApiError::not_found(
                ErrorCode::ThreadNotFound,
                "thread_id",
                tid,
            ));
        }
        let order = match self.threads.get(&tid) {
            Some(rt) => rendering_order(&rt.dag),
            None => {
                let rt = threads::load_runtime(&conn, &tid)?
                    .ok_or_else(|| ApiError::internal("thread"))?;
                rendering_order(&rt.dag)
            }
        };
        let mut out = Vec::new();
        for eid in order {
            let row = envelopes::read(&conn, &eid)?
                .ok_or_else(|| ApiError::internal("an envelope of the thread's DAG"))?;
            let Some(body) = row.body else {
                out.push(
                    json!({"id": eid.to_string(), "thread_id": tid.to_string(), "erased": true}),
                );
                continue;
            };
            let env: Value = serde_json::from_str(&body).map_err(ApiError::internal)?;
            if self.check_visible(&env, caller, &state).is_ok() {
                out.push(env);
            }
        }
        Ok(json!({"thread_id": tid.to_string(), "envelopes": out}))
    }

    /// `POST /v1/threads/{id}/ops`: a `thread_op` envelope for this thread (§16.2).
    /// `claim`: the request's `Idempotency-Key`, remembered with the result.
    pub async fn post_thread_op(
        &self,
        caller: &Caller,
        id: &str,
        env: Value,
        claim: Option<super::idempotency::Claim>,
    ) -> ApiResult<Document> {
        let tid = parse_thread_id(id)?;
        check_op_for_thread(&env, &tid)?;
        self.submit_envelope_claimed(caller, env, claim).await
    }

    /// Stable reference to an envelope id for callers outside the crate.
    pub fn parse_envelope_id(id: &str) -> ApiResult<EnvelopeId> {
        EnvelopeId::parse(id).map_err(|e| ApiError::bad_request("id", e.to_string(), "v1.1 §8.4"))
    }
}
