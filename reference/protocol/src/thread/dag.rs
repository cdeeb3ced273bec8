//! The envelope DAG of a thread (v1.1 §10.2) and its size limits (§10.7).
//!
//! Nodes accept envelopes in any order: a missing parent marks the child
//! `meta.pending_parent = true` and never causes rejection (§10.2), but an envelope that
//! would close a cycle is rejected with `ENVELOPE_INVALID`, as is growth past the
//! configured limits. [`ThreadDag`] holds just the graph (ids, parents, creation times), so
//! a node can keep one per thread and ask it before storing anything.

use crate::error::{ErrorCode, ProtocolError};
use crate::id::EnvelopeId;
use crate::time::Timestamp;
use std::collections::{BTreeMap, BTreeSet};

/// Thread size limits (v1.1 §10.7). `0` disables a limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ThreadLimits {
    /// `max_envelopes_per_thread` (default 10000).
    pub max_envelopes_per_thread: usize,
    /// `max_pending_parents` (default 500).
    pub max_pending_parents: usize,
}

impl ThreadLimits {
    /// Every limit off (rebuilding stored threads; nodes that waive §10.7).
    pub const UNLIMITED: ThreadLimits = ThreadLimits {
        max_envelopes_per_thread: 0,
        max_pending_parents: 0,
    };
}

impl Default for ThreadLimits {
    fn default() -> Self {
        ThreadLimits {
            max_envelopes_per_thread: 10_000,
            max_pending_parents: 500,
        }
    }
}

/// One envelope's place in the DAG.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DagEntry {
    /// Parent, if any.
    pub parent: Option<EnvelopeId>,
    /// `created_at`, for rendering order.
    pub created_at: Timestamp,
}

/// The outcome of a successful insertion.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Inserted {
    /// True if the parent is not (yet) in the thread: set `meta.pending_parent`.
    pub pending_parent: bool,
    /// Earlier envelopes whose missing parent this envelope was.
    pub resolved_children: Vec<EnvelopeId>,
}

/// The DAG of one thread.
#[derive(Debug, Clone, Default)]
pub struct ThreadDag {
    entries: BTreeMap<EnvelopeId, DagEntry>,
    /// Missing parent → children waiting for it.
    waiting: BTreeMap<EnvelopeId, BTreeSet<EnvelopeId>>,
}

impl ThreadDag {
    /// An empty thread.
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of envelopes.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when the thread has no envelopes.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Number of envelopes whose parent is missing.
    pub fn pending_parent_count(&self) -> usize {
        self.waiting.values().map(BTreeSet::len).sum()
    }

    /// Whether `id` is in the thread.
    pub fn contains(&self, id: &EnvelopeId) -> bool {
        self.entries.contains_key(id)
    }

    /// The entry for `id`.
    pub fn get(&self, id: &EnvelopeId) -> Option<&DagEntry> {
        self.entries.get(id)
    }

    /// Depth of `id` (root or orphan = 0), following known parents.
    pub fn depth(&self, id: &EnvelopeId) -> u64 {
        let mut depth = 0;
        let mut cur = self.entries.get(id).and_then(|e| e.parent);
        while let Some(p) = cur {
            match self.entries.get(&p) {
                Some(e) => {
                    depth += 1;
                    cur = e.parent;
                }
                None => break,
            }
        }
        depth
    }

    /// Checks whether `id` could be inserted, without changing anything.
    pub fn check(
        &self,
        id: &EnvelopeId,
        parent: Option<&EnvelopeId>,
        limits: &ThreadLimits,
    ) -> Result<(), ProtocolError> {
        if self.entries.contains_key(id) {
            return Err(ProtocolError::new(
                ErrorCode::EnvelopeDuplicate,
                "id",
                "an envelope with this id is already in the thread",
                "v1.1 §24.2",
            ));
        }
        if limits.max_envelopes_per_thread != 0
            && self.entries.len() >= limits.max_envelopes_per_thread
        {
            return Err(ProtocolError::invalid(
                "thread_id",
                format!(
                    "the thread holds max_envelopes_per_thread = {} envelopes",
                    limits.max_envelopes_per_thread
                ),
                "v1.1 §10.7",
            ));
        }
        if let Some(p) = parent {
            if p == id {
                return Err(ProtocolError::invalid(
                    "parent_id",
                    "an envelope cannot be its own parent (cycle)",
                    "v1.1 §10.2",
                ));
            }
            // A cycle through `id` needs a stored envelope that descends from `id`, and the
            // first such envelope arrived with `id` as its missing parent, so it waits in
            // `waiting[id]`. Without one no cycle is possible and the walk is skipped.
            let mut cur = self.waiting.contains_key(id).then_some(*p);
            let mut steps = 0usize;
            while let Some(c) = cur {
                if c == *id {
                    return Err(ProtocolError::invalid(
                        "parent_id",
                        "this parent would create a cycle in the thread DAG",
                        "v1.1 §10.2",
                    ));
                }
                steps += 1;
                if steps > self.entries.len() {
                    break;
                }
                cur = self.entries.get(&c).and_then(|e| e.parent);
            }
            if !self.entries.contains_key(p)
                && limits.max_pending_parents != 0
                && self.pending_parent_count() >= limits.max_pending_parents
            {
                return Err(ProtocolError::invalid(
                    "parent_id",
                    format!(
                        "the thread already has max_pending_parents = {} unresolved parents",
                        limits.max_pending_parents
                    ),
                    "v1.1 §10.7",
                ));
            }
        }
        Ok(())
    }

    /// Inserts an envelope after [`ThreadDag::check`]; on error nothing changes.
    pub fn insert(
        &mut self,
        id: EnvelopeId,
        parent: Option<EnvelopeId>,
        created_at: Timestamp,
        limits: &ThreadLimits,
    ) -> Result<Inserted, ProtocolError> {
        self.check(&id, parent.as_ref(), limits)?;
        let pending_parent = parent.is_some_and(|p| !self.entries.contains_key(&p));
        if let Some(p) = parent.filter(|_| pending_parent) {
            self.waiting.entry(p).or_default().insert(id);
        }
        let resolved_children = self
            .waiting
            .remove(&id)
            .map(|s| s.into_iter().collect())
            .unwrap_or_default();
        self.entries.insert(id, DagEntry { parent, created_at });
        Ok(Inserted {
            pending_parent,
            resolved_children,
        })
    }

    /// Iterates envelopes by id.
    pub fn iter(&self) -> impl Iterator<Item = (&EnvelopeId, &DagEntry)> {
        self.entries.iter()
    }
}
