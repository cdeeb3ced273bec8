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
use crate::store::ReadConn;
use crate::store::listings::{self, EventAudience};
use loom_protocol::Address;
use loom_protocol::id::EventId;
use serde::Deserialize;
use serde_json::{Value, json};

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

const SECTION: &str = "v1.1 §16.8, §17.1";

fn bad(field: &str, reason: impl Into<String>) -> ApiError {
    ApiError::bad_request(field, reason, SECTION)
}

impl Service {
    /// The position of the event `id` that `me` may resume after (catch-up `since`, a
    /// subscription's `since`, an `ack`): an event it cannot see is as unknown as one that
    /// does not exist (400 naming `field`).
    pub(crate) fn event_position(
        &self,
        conn: &ReadConn<'_>,
        me: &Address,
        id: &str,
        field: &str,
        section: &'static str,
    ) -> ApiResult<i64> {
        let bad = |why: String| ApiError::bad_request(field, why, section);
        let id = EventId::parse(id).map_err(|e| bad(e.to_string()))?;
        let seq = if self.deviations.reads.ignore_event_audience {
            listings::event_seq_any(conn, &id)?
        } else {
            listings::event_seq_for(conn, &id, me)?
        };
        seq.ok_or_else(|| {
            bad(format!(
                "{id} is not an event this identity can resume from"
            ))
        })
    }

    /// `GET /v1/events` (§16.8).
    pub fn events(&self, caller: &Caller, q: &EventsQuery) -> ApiResult<Value> {
        let limit = q.limit.unwrap_or(DEFAULT_LIMIT);
        if limit == 0 || limit > self.config.limits.max_page_size {
            return Err(bad(
                "limit",
                format!("limit must be 1-{}", self.config.limits.max_page_size),
            ));
        }
        let dev = &self.deviations.reads;
        let me = &caller.identity;
        let conn = self.store.read();
        let after: i64 = match (&q.since, &q.cursor) {
            (Some(_), None) if dev.ignore_events_since => 0,
            (Some(_), Some(_)) => return Err(bad("since", "use either since or cursor, not both")),
            (Some(since), None) => self.event_position(&conn, me, since, "since", SECTION)?,
            (None, Some(c)) => c
                .parse::<i64>()
                .ok()
                .filter(|c| *c >= 0)
                .ok_or_else(|| bad("cursor", "cursor must be a cursor from this node"))?,
            (None, None) => 0,
        };
        let audience = if dev.ignore_event_audience {
            EventAudience::Everyone(me)
        } else {
            EventAudience::ReadableBy(me)
        };
        let rows = listings::events_after(&conn, audience, after, limit + 1)?;
        drop(conn);
        let has_more = rows.len() > limit;
        let mut next = after;
        let mut events = Vec::new();
        for e in rows.into_iter().take(limit) {
            let payload: Value = serde_json::from_str(&e.payload).map_err(ApiError::internal)?;
            events.push(json!({
                "id": e.id,
                "cursor": e.seq.to_string(),
                "type": e.kind,
                "thread_id": e.thread,
                "envelope_id": e.envelope,
                "payload": payload,
                "created_at": e.created_at,
            }));
            next = e.seq;
        }
        let page = json!({"events": events, "next_cursor": next.to_string(), "has_more": has_more});
        Ok(page)
    }
}
