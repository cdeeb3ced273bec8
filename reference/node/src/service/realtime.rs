//! The real-time stream (v1.1 §17, v1.0 §16): the hub every WebSocket connection reads from,
//! resume points and acks, presence (§17.5) and typing with its TTL.
//!
//! Every event a connection sees comes from the durable event log (`store::events`), so
//! resume has no gap by construction: a connection is a position in the log, a filter (the
//! reader lists of §8.3 and its channels) and a socket. After each committed write the hub
//! reads the new events once, with their readers, into a bounded in-memory window of recent
//! events and renders each frame once; every connection then filters that window. A
//! connection further behind than the window (a resume from long ago, a slow reader) reads
//! its own page from the store instead. No connection has a queue: a client that does not
//! read stays where it is in the log, and the socket shell disconnects it once a write has
//! waited `send_timeout_ms` (close code 1013).
//!
//! Presence and typing are events like the others (they carry `event_id` and `cursor`, and a
//! resume replays them): presence is readable by the identity and everyone sharing an active
//! thread with it (§17.5: "thread participants with `read` capability"); typing by the
//! thread's active participants, and only a participant may type in a thread.

use super::{Caller, Service};
use crate::error::{ApiError, ApiResult};
use crate::store::events::{self, LiveRow};
use crate::store::listings::{self, EventAudience};
use loom_protocol::address::Address;
use loom_protocol::error::ErrorCode;
use loom_protocol::id::ThreadId;
use loom_protocol::realtime::{Channel, EventSubject, Presence, subscribed};
use loom_protocol::time::Timestamp;
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// Events one connection is handed per batch.
pub const BATCH: usize = 256;

/// One event as the hub fans it out: rendered once, filtered per connection.
#[derive(Debug)]
pub struct LiveEvent {
    /// Position in the log (the cursor).
    pub seq: i64,
    /// Thread, for `thread` channels.
    pub thread: Option<ThreadId>,
    /// The identity the event is about (`payload.identity`), for `identity` channels.
    pub identity: Option<Address>,
    /// Who may see it, sorted.
    pub readers: Vec<String>,
    /// The frame, as sent.
    pub frame: Arc<str>,
}

impl LiveEvent {
    fn from_row(row: LiveRow) -> LiveEvent {
        let payload: Value = serde_json::from_str(&row.payload).unwrap_or(Value::Null);
        let identity = payload_identity(&payload);
        let thread = row.thread.as_deref().and_then(|t| ThreadId::parse(t).ok());
        let frame = frame(
            &row.kind,
            &row.id,
            row.seq,
            row.thread.as_deref(),
            row.envelope.as_deref(),
            payload,
            &row.created_at,
        );
        LiveEvent {
            seq: row.seq,
            thread,
            identity,
            readers: row.readers,
            frame: frame.into(),
        }
    }

    fn subject(&self) -> EventSubject<'_> {
        EventSubject {
            thread: self.thread,
            identity: self.identity.as_ref(),
        }
    }
}

/// The identity an event payload is about (`identity`: presence, typing, membership).
fn payload_identity(payload: &Value) -> Option<Address> {
    payload
        .get("identity")
        .and_then(Value::as_str)
        .and_then(|a| Address::parse(a).ok())
}

/// The server frame of one event (§17.2: every event carries `event_id` and `cursor`; v1.0
/// §16.2: the type in `event`, the body in `data`).
pub fn frame(
    kind: &str,
    id: &str,
    seq: i64,
    thread: Option<&str>,
    envelope: Option<&str>,
    payload: Value,
    created_at: &str,
) -> String {
    json!({
        "event": kind,
        "event_id": id,
        "cursor": seq.to_string(),
        "thread_id": thread,
        "envelope_id": envelope,
        "data": payload,
        "created_at": created_at,
    })
    .to_string()
}

#[derive(Debug, Default)]
struct Recent {
    events: VecDeque<Arc<LiveEvent>>,
    /// The highest position read from the log; `None` before the first read.
    loaded_to: Option<i64>,
    /// The commit generation the window reflects.
    generation: Option<u64>,
}

/// The hub's shared state (one per node).
#[derive(Debug, Default)]
pub struct Realtime {
    recent: Mutex<Recent>,
    typing: Mutex<BTreeMap<(ThreadId, Address), Timestamp>>,
    typing_changed: tokio::sync::Notify,
    per_identity: Mutex<BTreeMap<Address, usize>>,
    open: AtomicUsize,
    next_connection: AtomicU64,
    shutdown: tokio::sync::watch::Sender<bool>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// One open WebSocket connection's place in the caps; released on drop.
#[derive(Debug)]
pub struct Connection {
    svc: Arc<Service>,
    /// Its number (rate-limit key `ws:<n>`).
    pub id: u64,
    identity: Address,
}

impl Drop for Connection {
    fn drop(&mut self) {
        let rt = &self.svc.realtime;
        rt.open.fetch_sub(1, Ordering::AcqRel);
        let mut per = lock(&rt.per_identity);
        if let Some(n) = per.get_mut(&self.identity) {
            *n -= 1;
            if *n == 0 {
                per.remove(&self.identity);
            }
        }
    }
}

/// A batch for one connection: frames to send and the position after them.
#[derive(Debug)]
pub struct Batch {
    /// Frames, in log order.
    pub frames: Vec<Arc<str>>,
    /// Where the connection now stands.
    pub position: i64,
}

fn too_many(reason: String) -> ApiError {
    ApiError::new(
        ErrorCode::RateLimitExceeded,
        "$connection",
        reason,
        "v1.1 §14.3",
    )
}

impl Service {
    /// Takes a connection slot for `caller` (the node's and the identity's caps, §14.3).
    pub fn realtime_connect(self: &Arc<Self>, caller: &Caller) -> ApiResult<Connection> {
        let cfg = &self.config.realtime;
        let rt = &self.realtime;
        let mut per = lock(&rt.per_identity);
        let mine = per.get(&caller.identity).copied().unwrap_or(0);
        if mine >= cfg.max_connections_per_identity {
            return Err(too_many(format!(
                "{} already holds {mine} WebSocket connections (the limit per identity)",
                caller.identity
            )));
        }
        if cfg.max_connections > 0 && rt.open.load(Ordering::Acquire) >= cfg.max_connections {
            return Err(too_many(format!(
                "the node holds {} WebSocket connections (its limit)",
                cfg.max_connections
            )));
        }
        *per.entry(caller.identity.clone()).or_default() += 1;
        rt.open.fetch_add(1, Ordering::AcqRel);
        Ok(Connection {
            svc: self.clone(),
            id: rt.next_connection.fetch_add(1, Ordering::AcqRel),
            identity: caller.identity.clone(),
        })
    }

    /// WebSocket connections open now.
    pub fn realtime_connections(&self) -> usize {
        self.realtime.open.load(Ordering::Acquire)
    }

    /// A receiver that turns `true` when the node shuts down (connections close with 1001).
    pub fn realtime_shutdown_signal(&self) -> tokio::sync::watch::Receiver<bool> {
        self.realtime.shutdown.subscribe()
    }

    /// Tells every connection the node is going away.
    pub fn realtime_shut_down(&self) {
        self.realtime.shutdown.send_replace(true);
    }

    /// Where a subscription starts (§17.1): after `since` (an event id the caller can see, or
    /// a cursor from this node), else after the caller's last ack (§17.2), else at the head
    /// (new events only).
    pub fn realtime_resume_point(&self, caller: &Caller, since: Option<&str>) -> ApiResult<i64> {
        let conn = self.store.read();
        match since {
            Some(s) => self.position_of(&conn, &caller.identity, s, "since"),
            None => match events::acked(&conn, &caller.identity)? {
                Some(seq) => Ok(seq),
                None => Ok(events::head(&conn)?),
            },
        }
    }

    /// An event id the caller can see, or a cursor no later than the head.
    fn position_of(
        &self,
        conn: &crate::store::ReadConn<'_>,
        me: &Address,
        text: &str,
        field: &str,
    ) -> ApiResult<i64> {
        const SECTION: &str = "v1.1 §17.1, §17.2";
        if text.starts_with("evt_") {
            return self.event_position(conn, me, text, field, SECTION);
        }
        let bad = |why: String| ApiError::bad_request(field, why, SECTION);
        let head = events::head(conn)?;
        text.parse::<i64>()
            .ok()
            .filter(|c| (0..=head).contains(c))
            .ok_or_else(|| {
                bad(format!(
                    "{text:?} is neither an event id nor a cursor this node gave out"
                ))
            })
    }

    /// `ack` (§17.2): records that the caller processed everything up to `cursor`; a
    /// subscription without `since` resumes there. Returns the position.
    pub fn realtime_ack(&self, caller: &Caller, cursor: &str) -> ApiResult<i64> {
        let seq = {
            let conn = self.store.read();
            self.position_of(&conn, &caller.identity, cursor, "cursor")?
        };
        let tx = self.store.begin()?;
        events::record_ack(&tx, &caller.identity, seq, &self.env.now().to_rfc3339())?;
        tx.commit()?;
        Ok(seq)
    }

    /// Reads what was committed since the window was last filled (once per commit, whoever
    /// asks first).
    fn refresh_recent(&self) -> ApiResult<MutexGuard<'_, Recent>> {
        let generation = self.store.commit_generation();
        let mut recent = lock(&self.realtime.recent);
        if recent.generation == Some(generation) {
            return Ok(recent);
        }
        let conn = self.store.read();
        let mut after = match recent.loaded_to {
            Some(p) => p,
            None => events::head(&conn)?,
        };
        let capacity = self.config.realtime.recent_events.max(1);
        loop {
            let rows = events::live_after(&conn, after, capacity)?;
            let n = rows.len();
            for row in rows {
                after = row.seq;
                recent.events.push_back(Arc::new(LiveEvent::from_row(row)));
            }
            while recent.events.len() > capacity {
                recent.events.pop_front();
            }
            if n < capacity {
                break;
            }
        }
        recent.loaded_to = Some(after);
        recent.generation = Some(generation);
        Ok(recent)
    }

    /// The next frames for a connection of `me` on `channels` standing at `after`.
    pub fn realtime_batch(
        &self,
        me: &Address,
        channels: &[Channel],
        after: i64,
    ) -> ApiResult<Batch> {
        let who = me.to_string();
        let visible = |readers: &[String]| {
            self.deviations.reads.ignore_event_audience
                || readers.binary_search_by(|r| r.as_str().cmp(&who)).is_ok()
        };
        let (snapshot, from_window) = {
            let recent = self.refresh_recent()?;
            let loaded_to = recent.loaded_to.unwrap_or(0);
            let first = recent.events.front().map_or(loaded_to + 1, |e| e.seq);
            if after >= first - 1 {
                let start = recent.events.partition_point(|e| e.seq <= after);
                let mut frames = Vec::new();
                let mut position = after;
                for e in recent.events.range(start..) {
                    if frames.len() == BATCH {
                        break;
                    }
                    position = e.seq;
                    if visible(&e.readers) && subscribed(channels, e.subject()) {
                        frames.push(e.frame.clone());
                    }
                }
                if frames.len() < BATCH {
                    position = position.max(loaded_to);
                }
                (loaded_to, Some(Batch { frames, position }))
            } else {
                (loaded_to, None)
            }
        };
        if let Some(b) = from_window {
            return Ok(b);
        }
        // Behind the window: the caller's own page from the log (§16.8's query).
        let conn = self.store.read();
        let audience = if self.deviations.reads.ignore_event_audience {
            EventAudience::Everyone(me)
        } else {
            EventAudience::ReadableBy(me)
        };
        let rows = listings::events_after(&conn, audience, after, BATCH)?;
        let full = rows.len() == BATCH;
        let mut position = after;
        let mut frames = Vec::new();
        for r in rows {
            position = r.seq;
            let payload: Value = serde_json::from_str(&r.payload).unwrap_or(Value::Null);
            let identity = payload_identity(&payload);
            let subject = EventSubject {
                thread: r.thread.as_deref().and_then(|t| ThreadId::parse(t).ok()),
                identity: identity.as_ref(),
            };
            if subscribed(channels, subject) {
                frames.push(
                    frame(
                        &r.kind,
                        &r.id,
                        r.seq,
                        r.thread.as_deref(),
                        r.envelope.as_deref(),
                        payload.clone(),
                        &r.created_at,
                    )
                    .into(),
                );
            }
        }
        if !full {
            // Everything up to the window's head was committed before this read.
            position = position.max(snapshot);
        }
        Ok(Batch { frames, position })
    }

    /// The newest position the hub knows of.
    pub fn realtime_head(&self) -> ApiResult<i64> {
        Ok(self.refresh_recent()?.loaded_to.unwrap_or(0))
    }

    /// `presence.update` (v1.0 §16.4): an event readable by the caller and everyone sharing
    /// an active thread with it (§17.5).
    pub fn presence_update(&self, caller: &Caller, presence: &Presence) -> ApiResult<()> {
        if let Some(other) = presence
            .identity
            .as_ref()
            .filter(|a| **a != caller.identity)
        {
            return Err(ApiError::new(
                ErrorCode::AudienceDenied,
                "data.identity",
                format!(
                    "{} may publish only its own presence, not {other}",
                    caller.identity
                ),
                "v1.0 §16.4",
            ));
        }
        let dev = &self.deviations.realtime;
        if dev.drop_presence {
            return Ok(());
        }
        let tx = self.store.begin()?;
        let mut readers = events::co_participants(&tx, &caller.identity)?;
        readers.insert(caller.identity.clone());
        if dev.presence_to_everyone {
            readers.extend(lock(&self.realtime.per_identity).keys().cloned());
        }
        self.append_event(
            &tx,
            "presence.update",
            None,
            None,
            presence.to_payload(&caller.identity),
            &readers,
        )?;
        tx.commit()?;
        Ok(())
    }

    /// The active participants of `thread` (empty when there is no such thread).
    fn thread_members(&self, thread: &ThreadId) -> ApiResult<BTreeSet<Address>> {
        let conn = self.store.read();
        Ok(self
            .thread_state(&conn, thread)?
            .map(|s| s.active_participants())
            .unwrap_or_default())
    }

    /// `typing.start` / `typing.stop` (§17.3) in `thread`, by one of its active participants;
    /// a start lasts `typing_ttl_ms` (then `typing.stop` with `reason: "expired"`), a repeated
    /// start extends it without a new event, a stop when not typing is a no-op.
    pub fn typing(&self, caller: &Caller, thread: &ThreadId, start: bool) -> ApiResult<()> {
        let readers = self.thread_members(thread)?;
        if !readers.contains(&caller.identity) {
            // A thread the caller cannot read is as unknown as one that does not exist.
            return Err(ApiError::new(
                ErrorCode::ThreadNotFound,
                "thread_id",
                format!("{thread} is not a thread {} takes part in", caller.identity),
                "v1.1 §17.3, §8.3",
            ));
        }
        let now = self.env.now();
        let key = (*thread, caller.identity.clone());
        let was_typing = {
            let mut typing = lock(&self.realtime.typing);
            let was = typing.remove(&key).is_some_and(|until| until > now);
            if start {
                let ttl = i64::try_from(self.config.realtime.typing_ttl_ms).unwrap_or(i64::MAX);
                typing.insert(key, now.plus_ms(ttl));
            }
            was
        };
        self.realtime.typing_changed.notify_one();
        if start == was_typing || self.deviations.realtime.drop_typing {
            return Ok(());
        }
        let kind = if start { "typing.start" } else { "typing.stop" };
        let mut payload =
            json!({"identity": caller.identity.to_string(), "thread_id": thread.to_string()});
        if !start {
            payload["reason"] = "stopped".into();
        }
        let tx = self.store.begin()?;
        self.append_event(&tx, kind, Some(thread), None, payload, &readers)?;
        tx.commit()?;
        Ok(())
    }

    /// Ends every typing indicator whose TTL ran out by now with `typing.stop`
    /// (`reason: "expired"`); returns when the next one runs out.
    pub fn expire_typing(&self) -> ApiResult<Option<Timestamp>> {
        let now = self.env.now();
        let mut due = Vec::new();
        lock(&self.realtime.typing).retain(|k, until| {
            let over = *until <= now;
            if over {
                due.push(k.clone());
            }
            !over
        });
        for (thread, who) in due {
            let mut readers = self.thread_members(&thread)?;
            readers.insert(who.clone());
            let tx = self.store.begin()?;
            self.append_event(
                &tx,
                "typing.stop",
                Some(&thread),
                None,
                json!({"identity": who.to_string(), "thread_id": thread.to_string(), "reason": "expired"}),
                &readers,
            )?;
            tx.commit()?;
        }
        Ok(lock(&self.realtime.typing).values().min().copied())
    }
}

/// Ends typing indicators as their TTLs run out (§17.3), on the injected clock: it sleeps
/// until the earliest is due, wakes when one is set, and looks again at least every
/// `heartbeat_check_ms` (a clock that jumps is noticed within that bound).
pub async fn run_typing_worker(svc: Arc<Service>) {
    let idle = svc.config.realtime.heartbeat_check_ms.max(10);
    loop {
        let next = match svc.expire_typing() {
            Ok(n) => n,
            Err(e) => {
                tracing::warn!(error = %e.message(), "typing expiry failed");
                None
            }
        };
        let wait = next.map_or(idle, |t| {
            u64::try_from(t.unix_ms() - svc.env.now().unix_ms())
                .unwrap_or(0)
                .clamp(1, idle)
        });
        tokio::select! {
            () = tokio::time::sleep(std::time::Duration::from_millis(wait)) => {}
            () = svc.realtime.typing_changed.notified() => {}
        }
    }
}
