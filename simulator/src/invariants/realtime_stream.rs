//! `realtime-stream`: after dedupe by `event_id`, every WebSocket watcher saw every event it
//! may read between the point its first subscription started and the newest event it saw —
//! across every disconnect and resume (v1.1 §17.1, §17.2 at-least-once) — and nothing it may
//! not read (§8.3); per thread the events came in cursor order, and an event id always came
//! with the same cursor.

use super::Found;
use crate::trace::WatchRecord;
use loom_node::inspect::Inspector;
use std::collections::{BTreeMap, BTreeSet};

const NAME: &str = "realtime-stream";

pub(super) fn check(w: &WatchRecord, store: Option<&Inspector>, found: &mut Found) {
    let who = format!("{} ({} on {})", w.host, w.identity, w.node);
    let Some(last) = w.frames.iter().map(|f| f.1).max() else {
        return;
    };
    let Some(start) = w.start else {
        found.push(
            NAME,
            format!("{who}: received events but never a subscription starting point"),
        );
        return;
    };
    let Some(store) = store else {
        found.push(NAME, format!("{who}: the node's store cannot be read"));
        return;
    };
    let readable = match store.events_for(&w.identity, start, i64::MAX) {
        Ok(r) => r,
        Err(e) => {
            found.push(NAME, format!("{who}: reading the event log: {e}"));
            return;
        }
    };
    let allowed: BTreeMap<&str, i64> = readable
        .iter()
        .map(|(s, id, _)| (id.as_str(), *s))
        .collect();
    let mut seen: BTreeMap<&str, i64> = BTreeMap::new();
    let mut last_in_thread: BTreeMap<&str, i64> = BTreeMap::new();
    for (id, cursor, thread) in &w.frames {
        if let Some(before) = seen.get(id.as_str()) {
            if before != cursor {
                found.push(
                    NAME,
                    format!("{who}: {id} came with cursor {before}, then {cursor} (stable ids and cursors, §16.8)"),
                );
            }
            continue;
        }
        seen.insert(id, *cursor);
        match allowed.get(id.as_str()) {
            None => found.push(
                NAME,
                format!("{who}: received {id} (cursor {cursor}), which it may not read or which came before its subscription (§8.3)"),
            ),
            Some(seq) if seq != cursor => found.push(
                NAME,
                format!("{who}: {id} carries cursor {cursor}, the log has it at {seq}"),
            ),
            Some(_) => {}
        }
        if let Some(t) = thread.as_deref() {
            if let Some(prev) = last_in_thread.get(t).filter(|p| **p >= *cursor) {
                found.push(
                    NAME,
                    format!("{who}: in thread {t}, cursor {cursor} came after {prev} (cursor order per thread)"),
                );
            }
            last_in_thread.insert(t, *cursor);
        }
    }
    let missing: BTreeSet<(i64, &str)> = readable
        .iter()
        .filter(|(s, id, _)| *s <= last && !seen.contains_key(id.as_str()))
        .map(|(s, id, _)| (*s, id.as_str()))
        .collect();
    if let Some((s, id)) = missing.iter().next() {
        found.push(
            NAME,
            format!(
                "{who}: missed {} event(s) it may read between its start ({start}) and the newest it saw ({last}), first {id} at {s}, over {} connection(s)",
                missing.len(),
                w.sessions
            ),
        );
    }
}
