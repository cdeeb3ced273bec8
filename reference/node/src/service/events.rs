//! Event catch-up (v1.1 §16.8, §17): the event log the envelope pipeline and the
//! capability and delegation endpoints append to, read back per identity.
//!
//! Every event has a stable `evt_` id and a `cursor` (its position in the node's total
//! order, as a decimal string); a client resumes with `?since=<event id>` or
//! `?cursor=<cursor>` and gets the events after it that list the caller among their readers,
//! in order, at most `limit`. Asking again from the same point returns the same events
//! (at-least-once, clients dedupe by id, §17.2). `next_cursor` is where to resume: the cursor
//! of the last event returned, or the starting point when nothing is new. An event id the
//! caller cannot see is as unknown as one that does not exist (400 naming `since`).

use super::{Caller, Service};
use crate::error::{ApiError, ApiResult};
use loom_protocol::id::EventId;
use rusqlite::{OptionalExtension, params};
use serde::Deserialize;
use serde_json::{Value, json};

/// One `events` row: seq, id, type, thread, envelope, payload, created_at.
type EventRow = (
    i64,
    String,
    String,
    Option<String>,
    Option<String>,
    String,
    String,
);

/// Default page size.
pub const DEFAULT_LIMIT: usize = 100;

/// `GET /v1/events` parameters.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EventsQuery {
    /// Resume after this event id.
    pub since: Option<String>,
    /// Resume after this cursor.
    pub cursor: Option<String>,
    /// Page size (default 100, capped by `max_page_size`).
    pub limit: Option<usize>,
}

fn bad(field: &str, reason: impl Into<String>) -> ApiError {
    ApiError::bad_request(field, reason, "v1.1 §16.8, §17.1")
}

impl Service {
    /// `GET /v1/events` (§16.8).
    pub fn events(&self, caller: &Caller, q: &EventsQuery) -> ApiResult<Value> {
        let limit = q.limit.unwrap_or(DEFAULT_LIMIT);
        if limit == 0 || limit > self.config.limits.max_page_size {
            return Err(bad(
                "limit",
                format!("limit must be 1-{}", self.config.limits.max_page_size),
            ));
        }
        let me = caller.identity.to_string();
        let conn = self.store.conn();
        let after: i64 = match (&q.since, &q.cursor) {
            (Some(_), None) if self.quirk(crate::quirks::Quirk::IgnoreEventsSince) => 0,
            (Some(_), Some(_)) => return Err(bad("since", "use either since or cursor, not both")),
            (Some(since), None) => {
                let id = EventId::parse(since).map_err(|e| bad("since", e.to_string()))?;
                conn.query_row(
                    "SELECT e.seq FROM events e JOIN event_readers r ON r.event_seq = e.seq AND r.identity = ?2 WHERE e.id = ?1",
                    params![id.to_string(), me],
                    |r| r.get(0),
                )
                .optional()?
                .ok_or_else(|| bad("since", format!("{id} is not an event this identity can resume from")))?
            }
            (None, Some(c)) => c
                .parse::<i64>()
                .ok()
                .filter(|c| *c >= 0)
                .ok_or_else(|| bad("cursor", "cursor must be a cursor from this node"))?,
            (None, None) => 0,
        };
        let mut stmt = if self.quirk(crate::quirks::Quirk::IgnoreEventAudience) {
            conn.prepare_cached(
                "SELECT e.seq, e.id, e.type, e.thread_id, e.envelope_id, e.payload, e.created_at FROM events e \
                 WHERE ?1 IS NOT NULL AND e.seq > ?2 ORDER BY e.seq LIMIT ?3",
            )?
        } else {
            conn.prepare_cached(
                "SELECT e.seq, e.id, e.type, e.thread_id, e.envelope_id, e.payload, e.created_at FROM events e \
                 JOIN event_readers r ON r.event_seq = e.seq AND r.identity = ?1 \
                 WHERE e.seq > ?2 ORDER BY e.seq LIMIT ?3",
            )?
        };
        let rows: Vec<EventRow> = stmt
            .query_map(
                params![me, after, i64::try_from(limit + 1).unwrap_or(i64::MAX)],
                |r| {
                    Ok((
                        r.get(0)?,
                        r.get(1)?,
                        r.get(2)?,
                        r.get(3)?,
                        r.get(4)?,
                        r.get(5)?,
                        r.get(6)?,
                    ))
                },
            )?
            .collect::<Result<_, _>>()?;
        let has_more = rows.len() > limit;
        let mut next = after;
        let mut events = Vec::new();
        for (seq, id, kind, thread, envelope, payload, at) in rows.into_iter().take(limit) {
            let payload: Value = serde_json::from_str(&payload).map_err(ApiError::internal)?;
            let id = if self.quirk(crate::quirks::Quirk::UnstableEventIds) {
                self.env.ids().event().to_string()
            } else {
                id
            };
            events.push(json!({
                "id": id,
                "cursor": seq.to_string(),
                "type": kind,
                "thread_id": thread,
                "envelope_id": envelope,
                "payload": payload,
                "created_at": at,
            }));
            next = seq;
        }
        Ok(json!({"events": events, "next_cursor": next.to_string(), "has_more": has_more}))
    }
}
