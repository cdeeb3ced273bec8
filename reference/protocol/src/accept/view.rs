//! What acceptance reads about the world: a read-only view the caller implements over its
//! store (a node), over fixtures (tests) or, for federated delivery, over a resolver of
//! remote identities. Every method is a lookup; none changes anything.

use crate::address::Address;
use crate::capability::CapabilityResolver;
use crate::delegation::DelegationResolver;
use crate::id::{EnvelopeId, ThreadId};
use crate::task::TaskState;
use crate::thread::{ThreadDag, ThreadLimits, ThreadState};
use crate::time::Timestamp;
use ed25519_dalek::VerifyingKey;

/// Where an envelope comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin<'a> {
    /// Submitted over the client API by an authenticated identity (§16.1).
    Local {
        /// The identity the access token was issued to.
        caller: &'a Address,
    },
    /// Delivered by a federated node (§15.4): the sender's domain must be that node's, and
    /// the originating node's `event_seq` is kept as `meta.origin_event_seq` (§11.6).
    Federated {
        /// The delivering node (`X-LOOM-Node`, wrapper `sender_node`).
        node: &'a str,
        /// The sender node's `meta.event_seq`, when it sent one.
        origin_event_seq: Option<u64>,
    },
    /// Made by this node's email bridge from a received mail (v1.1 §21.2): the sender is
    /// the `bridge://` identity of the mail's author, and `meta.bridge` (node-local, outside
    /// the signature, §8.1) records where it came from and how it was authenticated.
    Bridge {
        /// `meta.bridge`: source, original headers, `auth_results`, `structured_trust`.
        meta: &'a serde_json::Value,
    },
}

/// Sender identities and their keys (§6, §7.3), plus what delegation chains need (§13.3).
/// A node answers from its identity table; a federated path answers remote identities
/// through its resolver.
pub trait Directory: DelegationResolver {
    /// The registered identity type of `identity` (`human`, `agent`, …), if known.
    fn registered_type(&self, identity: &Address) -> Option<String>;
    /// The active signing key `key_id` of `identity`, if there is one.
    fn active_signing_key(&self, identity: &Address, key_id: &str) -> Option<VerifyingKey>;
    /// The signing key `key_id` that `identity`'s document keeps as `retired` (v1.0 §7.4),
    /// if there is one. Only envelopes delivered by another node consult it
    /// ([`crate::federation::RetiredKey::verifies_envelope_created_at`]); a directory that
    /// knows no retired keys keeps the default.
    fn retired_signing_key(
        &self,
        _identity: &Address,
        _key_id: &str,
    ) -> Option<crate::federation::RetiredKey> {
        None
    }
}

/// One thread as acceptance needs it: its DAG, replicated state and last `event_seq`.
#[derive(Debug, Clone)]
pub struct ThreadRuntime {
    /// The envelope DAG (§10.2).
    pub dag: ThreadDag,
    /// The operation-log state (§10.1, §11).
    pub state: ThreadState,
    /// The last `meta.event_seq` assigned in this thread (§11.6).
    pub last_event_seq: u64,
}

impl ThreadRuntime {
    /// A runtime over stored pieces: `envelopes` are `(id, parent, created_at)` in
    /// `event_seq` order.
    pub fn rebuild(
        state: ThreadState,
        last_event_seq: u64,
        envelopes: impl IntoIterator<Item = (EnvelopeId, Option<EnvelopeId>, Timestamp)>,
    ) -> ThreadRuntime {
        let mut dag = ThreadDag::new();
        for (id, parent, created) in envelopes {
            // Stored envelopes passed the checks when they were accepted; limits are off
            // here so a lowered limit never hides history.
            let _ = dag.insert(id, parent, created, &ThreadLimits::UNLIMITED);
        }
        ThreadRuntime {
            dag,
            state,
            last_event_seq,
        }
    }
}

/// A stored task (§18.3).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskRecord {
    /// The thread of the `task.create` envelope.
    pub thread: ThreadId,
    /// Its sender.
    pub creator: String,
    /// The current assignee.
    pub assignee: Option<String>,
    /// The current state.
    pub state: TaskState,
}

/// The node's state as the writer sees it, for the in-order part of acceptance
/// ([`super::decide`]). Capability lookups come through [`CapabilityResolver`]; its
/// `may_issue` is not consulted (acceptance derives issuer authority from the thread).
pub trait AcceptView: CapabilityResolver {
    /// Is an envelope with this id stored?
    fn is_stored(&self, id: &EnvelopeId) -> bool;
    /// The runtime of a thread, if the thread exists.
    fn thread(&self, id: &ThreadId) -> Option<&ThreadRuntime>;
    /// The stored state of another thread (fork targets of §11.4), if it exists.
    fn stored_thread(&self, id: &ThreadId) -> Option<ThreadState>;
    /// A task by the id of its `task.create` envelope.
    fn task(&self, id: &str) -> Option<TaskRecord>;
    /// A workflow run by its `workflow_id` (§19.2).
    fn workflow(&self, id: &str) -> Option<crate::workflow::WorkflowRun>;
    /// The holder (`issued_to`) of a stored capability token.
    fn capability_holder(&self, id: &str) -> Option<String>;
}
