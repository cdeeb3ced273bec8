//! `event-seq`: per node and thread, in commit order, `event_seq` is 1, 2, 3, … and
//! `meta.event_seq` says the same (v1.1 §11.6).

use super::{Found, Run};
use serde_json::Value;
use std::collections::BTreeMap;

pub(super) fn check(run: &Run<'_>, found: &mut Found) {
    for (d, v) in &run.views {
        let mut last: BTreeMap<&str, i64> = BTreeMap::new();
        for e in &v.envelopes {
            let id = &e.id;
            let prev = last.get(e.thread.as_str()).copied().unwrap_or(0);
            let meta = e
                .body
                .as_ref()
                .and_then(|b| b.pointer("/meta/event_seq"))
                .and_then(Value::as_i64);
            if e.event_seq != prev + 1 {
                found.push(
                    "event-seq",
                    format!(
                        "{d}: thread {} envelope {id} has event_seq {} after {prev} (v1.1 §11.6: last + 1)",
                        e.thread, e.event_seq
                    ),
                );
            } else if e.body.is_some() && meta != Some(e.event_seq) {
                found.push(
                    "event-seq",
                    format!(
                        "{d}: envelope {id} stored with event_seq {} but its meta.event_seq is {meta:?} (v1.1 §11.6)",
                        e.event_seq
                    ),
                );
            }
            last.insert(e.thread.as_str(), e.event_seq);
        }
    }
}
