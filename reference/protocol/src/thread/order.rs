//! Canonical rendering order of a thread (v1.1 §10.3): topological by `parent_id`; among
//! envelopes that are ready at the same time, `created_at` ascending, then `id` ascending.
//!
//! This is Kahn's algorithm with the ready set ordered by `(created_at, id)`, the order the
//! existing v1.1 node produces. Envelopes whose parent is missing (orphans, §10.2) are
//! ready from the start, like roots.

use super::dag::ThreadDag;
use crate::id::EnvelopeId;
use crate::time::Timestamp;
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};

/// The envelopes of `dag` in canonical rendering order.
pub fn rendering_order(dag: &ThreadDag) -> Vec<EnvelopeId> {
    let mut children: BTreeMap<EnvelopeId, Vec<EnvelopeId>> = BTreeMap::new();
    let mut ready: BinaryHeap<Reverse<(Timestamp, EnvelopeId)>> = BinaryHeap::new();
    for (id, e) in dag.iter() {
        match e.parent.filter(|p| dag.contains(p)) {
            Some(p) => children.entry(p).or_default().push(*id),
            None => ready.push(Reverse((e.created_at, *id))),
        }
    }
    let mut out = Vec::with_capacity(dag.len());
    while let Some(Reverse((_, id))) = ready.pop() {
        out.push(id);
        for child in children.remove(&id).unwrap_or_default() {
            if let Some(e) = dag.get(&child) {
                ready.push(Reverse((e.created_at, child)));
            }
        }
    }
    out
}
