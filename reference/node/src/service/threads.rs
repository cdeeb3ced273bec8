//! Threads (v1.1 §16.2): listing with filters, sorting and offset or cursor pagination; the
//! §10.1 thread object; envelopes in §10.3 rendering order under audience rules.

use super::{Caller, Service};
use crate::error::{ApiError, ApiResult};
use crate::store::Cached;
use loom_protocol::ErrorCode;
use loom_protocol::id::{EnvelopeId, ThreadId};
use loom_protocol::thread::{ThreadState, rendering_order};
use rusqlite::params;
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
        "encryption": {"enabled": state.encryption_enabled, "profile": Value::Null, "key_epoch": state.key_epoch},
        "envelope_count": count,
        "last_event_seq": last_seq,
    })
}

fn parse_thread_id(id: &str) -> ApiResult<ThreadId> {
    ThreadId::parse(id).map_err(|e| ApiError::bad_request("thread_id", e.to_string(), "v1.1 §8.4"))
}

impl Service {
    /// `GET /v1/threads/{id}`: only for current participants; others get `THREAD_NOT_FOUND`
    /// so thread existence does not leak.
    pub fn get_thread(&self, caller: &Caller, id: &str) -> ApiResult<Value> {
        let tid = parse_thread_id(id)?;
        let conn = self.store.conn();
        let row = conn.row(
            "SELECT created_at, updated_at, envelope_count, last_event_seq, (SELECT id FROM envelopes WHERE thread_id = ?1 AND parent_id IS NULL ORDER BY event_seq LIMIT 1) FROM threads WHERE id = ?1",
            [tid.to_string()],
            |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?, r.get::<_, i64>(2)?, r.get::<_, i64>(3)?, r.get::<_, Option<String>>(4)?)),
        );
        let (created, updated, count, last, root) = match row {
            Ok(r) => r,
            Err(rusqlite::Error::QueryReturnedNoRows) => {
                return Err(ApiError::not_found(
                    ErrorCode::ThreadNotFound,
                    "thread_id",
                    tid,
                ));
            }
            Err(e) => return Err(e.into()),
        };
        let state = self
            .thread_state(&conn, &tid)?
            .ok_or_else(|| ApiError::internal("thread state"))?;
        if !state.is_active_participant(&caller.identity)
            && !self.quirk(crate::quirks::Quirk::IgnoreAudience)
        {
            return Err(ApiError::not_found(
                ErrorCode::ThreadNotFound,
                "thread_id",
                tid,
            ));
        }
        let mut obj = thread_object(&state, &created, &updated, root.as_deref(), count, last);
        if self.quirk(crate::quirks::Quirk::IncompleteThreadObject)
            && let Some(o) = obj.as_object_mut()
        {
            for k in ["cap_epoch", "subject", "labels"] {
                o.remove(k);
            }
        }
        Ok(obj)
    }

    /// `GET /v1/threads`: the caller's threads.
    pub fn list_threads(&self, caller: &Caller, q: &ThreadQuery) -> ApiResult<Value> {
        let bad = |f: &str, r: &str| ApiError::bad_request(f, r, "v1.1 §16.2");
        let sort = match q.sort.as_deref().unwrap_or("updated_at") {
            s @ ("updated_at" | "created_at") => s,
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
        let cmp = if desc { "<" } else { ">" };
        let dir = if desc { "DESC" } else { "ASC" };
        let mut sql = format!(
            "SELECT t.id, t.created_at, t.updated_at, t.envelope_count, t.last_event_seq, t.{sort} FROM threads t \
             JOIN thread_participants p ON p.thread_id = t.id AND p.identity = ?1 AND p.active = 1 WHERE 1=1"
        );
        let mut args: Vec<String> = vec![caller.identity.to_string()];
        if let Some(s) = &q.state {
            args.push(s.clone());
            sql += &format!(" AND t.status = ?{}", args.len());
        }
        if let Some(l) = &q.label {
            args.push(l.clone());
            sql += &format!(
                " AND EXISTS (SELECT 1 FROM thread_labels l WHERE l.thread_id = t.id AND l.label = ?{})",
                args.len()
            );
        }
        if let Some(p) = &q.participant {
            let a = super::parse_address("participant", p)?;
            args.push(a.to_string());
            sql += &format!(
                " AND EXISTS (SELECT 1 FROM thread_participants q WHERE q.thread_id = t.id AND q.identity = ?{} AND q.active = 1)",
                args.len()
            );
        }
        if let Some((k, id)) = &after {
            args.push(k.clone());
            args.push(id.clone());
            sql += &format!(
                " AND (t.{sort}, t.id) {cmp} (?{}, ?{})",
                args.len() - 1,
                args.len()
            );
        }
        sql += &format!(
            " ORDER BY t.{sort} {dir}, t.id {dir} LIMIT {} OFFSET {}",
            limit + 1,
            q.offset.unwrap_or(0)
        );
        let conn = self.store.conn();
        let mut stmt = conn.prepare(&sql)?;
        let rows: Vec<(String, String, String, i64, i64, String)> = stmt
            .query_map(rusqlite::params_from_iter(args.iter()), |r| {
                Ok((
                    r.get(0)?,
                    r.get(1)?,
                    r.get(2)?,
                    r.get(3)?,
                    r.get(4)?,
                    r.get(5)?,
                ))
            })?
            .collect::<Result<_, _>>()?;
        let more = rows.len() > limit;
        let mut threads = Vec::new();
        let mut next_cursor = None;
        for (id, created, updated, count, last, key) in rows.into_iter().take(limit) {
            let tid = parse_thread_id(&id)?;
            let state = self
                .thread_state(&conn, &tid)?
                .ok_or_else(|| ApiError::internal("thread state"))?;
            threads.push(thread_object(&state, &created, &updated, None, count, last));
            next_cursor = Some(format!("{key}|{id}"));
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
        let conn = self.store.conn();
        let Some(state) = self.thread_state(&conn, &tid)? else {
            return Err(ApiError::not_found(
                ErrorCode::ThreadNotFound,
                "thread_id",
                tid,
            ));
        };
        if !state.is_active_participant(&caller.identity)
            && !self.quirk(crate::quirks::Quirk::IgnoreAudience)
        {
            // A bcc recipient or custom-audience reader may still see single envelopes.
            let readable: i64 = conn.row(
                "SELECT COUNT(*) FROM envelope_readers r JOIN envelopes e ON e.id = r.envelope_id WHERE e.thread_id = ?1 AND r.identity = ?2",
                params![tid.to_string(), caller.identity.to_string()],
                |r| r.get(0),
            )?;
            if readable == 0 {
                return Err(ApiError::not_found(
                    ErrorCode::ThreadNotFound,
                    "thread_id",
                    tid,
                ));
            }
        }
        let order = match self.threads.get(&tid) {
            Some(rt) => rendering_order(&rt.dag),
            None => {
                let rt = crate::store::threads::load_runtime(&conn, &tid)?
                    .ok_or_else(|| ApiError::internal("thread"))?;
                rendering_order(&rt.dag)
            }
        };
        let mut stmt = conn.prepare_cached("SELECT body FROM envelopes WHERE id = ?1")?;
        let mut out = Vec::new();
        for eid in order {
            let body: Option<String> = stmt.query_row([eid.to_string()], |r| r.get(0))?;
            let Some(body) = body else {
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
    pub async fn post_thread_op(&self, caller: &Caller, id: &str, env: Value) -> ApiResult<Value> {
        let tid = parse_thread_id(id)?;
        if env.get("type").and_then(Value::as_str) != Some("thread_op") {
            return Err(ApiError::bad_request(
                "type",
                "this endpoint takes thread_op envelopes",
                "v1.1 §16.2",
            ));
        }
        if env.get("thread_id").and_then(Value::as_str) != Some(&tid.to_string()) {
            return Err(ApiError::bad_request(
                "thread_id",
                format!("must be {tid}, the thread in the path"),
                "v1.1 §16.2",
            ));
        }
        self.submit_envelope(caller, env).await
    }

    /// Stable reference to an envelope id for callers outside the crate.
    pub fn parse_envelope_id(id: &str) -> ApiResult<EnvelopeId> {
        EnvelopeId::parse(id).map_err(|e| ApiError::bad_request("id", e.to_string(), "v1.1 §8.4"))
    }
}
