//! The one in-memory world of the kit's protocol-level fakes: registered identities with
//! fixed-seed keys, the lookups delegation chains, capability tokens and acceptance need, and
//! what acceptance has stored — used by the structure-aware fuzz bodies and by the acceptance
//! tests (`tests/acceptance.rs`) alike.

use crate::accept::{AcceptView, Acceptance, Directory, Effect, TaskRecord, ThreadRuntime};
use crate::address::Address;
use crate::capability::CapabilityResolver;
use crate::delegation::{DelegationResolver, LinkRef};
use crate::envelope::SenderType;
use crate::id::{CapabilityId, EnvelopeId, ThreadId};
use crate::keys::signing_key_from_seed;
use crate::task::TaskState;
use crate::thread::ThreadState;
use ed25519_dalek::{SigningKey, VerifyingKey};
use std::collections::{BTreeMap, BTreeSet};

/// One registered identity.
#[derive(Debug, Clone)]
pub struct Person {
    /// `loom://…@node.test`.
    pub address: &'static str,
    /// Human or agent.
    pub kind: SenderType,
    /// The byte the signing key's seed repeats.
    pub seed: u8,
    /// The signing key's id.
    pub key_id: &'static str,
}

impl Person {
    /// The address, parsed.
    pub fn addr(&self) -> Address {
        Address::parse_wire(self.address).expect("fixture address")
    }
    /// The signing key.
    pub fn key(&self) -> SigningKey {
        signing_key_from_seed(&[self.seed; 32])
    }
}

/// The identities every structure-aware body knows: three humans and two agents.
pub const PEOPLE: [Person; 5] = [
    Person {
        address: "loom://alice@node.test",
        kind: SenderType::Human,
        seed: 1,
        key_id: "k_sign_alice_1",
    },
    Person {
        address: "loom://bob@node.test",
        kind: SenderType::Human,
        seed: 2,
        key_id: "k_sign_bob_1",
    },
    Person {
        address: "loom://carol@node.test",
        kind: SenderType::Human,
        seed: 3,
        key_id: "k_sign_carol_1",
    },
    Person {
        address: "loom://bot.alice@node.test",
        kind: SenderType::Agent,
        seed: 4,
        key_id: "k_sign_bot_1",
    },
    Person {
        address: "loom://helper.alice@node.test",
        kind: SenderType::Agent,
        seed: 5,
        key_id: "k_sign_helper_1",
    },
];

/// Identities, revocations and what acceptance has stored so far.
#[derive(Debug, Default)]
pub struct World {
    /// People of [`PEOPLE`] taken out of the directory (unknown senders).
    pub unregistered: BTreeSet<Address>,
    /// Revoked delegation link ids.
    pub revoked_links: BTreeSet<String>,
    /// Revoked capability ids.
    pub revoked_caps: BTreeSet<String>,
    /// Spent capability ids.
    pub spent_caps: BTreeSet<String>,
    /// Who may issue capability tokens.
    pub issuers: BTreeSet<Address>,
    /// Accepted envelopes.
    pub stored: BTreeSet<EnvelopeId>,
    /// Threads with accepted envelopes.
    pub threads: BTreeMap<ThreadId, ThreadRuntime>,
    /// Tasks created by accepted envelopes.
    pub tasks: BTreeMap<String, TaskRecord>,
    /// Capability id → holder.
    pub cap_holders: BTreeMap<String, String>,
    /// Workflow runs by `workflow_id`.
    pub workflows: BTreeMap<String, crate::workflow::WorkflowRun>,
}

impl World {
    fn person(&self, identity: &Address) -> Option<&'static Person> {
        PEOPLE
            .iter()
            .find(|p| p.addr() == *identity && !self.unregistered.contains(identity))
    }

    /// Applies an accepted envelope's effects the way a node's store does: stored, its tasks
    /// created or moved, its thread's runtime advanced.
    pub fn apply(&mut self, a: &Acceptance) {
        self.stored.insert(a.facts.id);
        for e in &a.effects {
            match e {
                Effect::TaskCreated {
                    id,
                    thread,
                    creator,
                    assignee,
                } => {
                    self.tasks.insert(
                        id.to_string(),
                        TaskRecord {
                            thread: *thread,
                            creator: creator.to_string(),
                            assignee: assignee.clone(),
                            state: TaskState::Created,
                        },
                    );
                }
                Effect::TaskMoved {
                    id,
                    state,
                    assignee,
                } => {
                    if let Some(t) = self.tasks.get_mut(id) {
                        t.state = *state;
                        t.assignee = assignee.clone();
                    }
                }
                Effect::PutWorkflow { run, .. } => {
                    self.workflows
                        .insert(run.definition.workflow_id.clone(), (**run).clone());
                }
                _ => {}
            }
        }
        let rt = self
            .threads
            .entry(a.facts.thread)
            .or_insert_with(|| ThreadRuntime {
                dag: Default::default(),
                state: a.next_state.clone(),
                last_event_seq: 0,
            });
        a.advance(rt);
    }
}

impl DelegationResolver for World {
    fn signing_keys(&self, identity: &Address) -> Option<Vec<(String, VerifyingKey)>> {
        self.person(identity)
            .map(|p| vec![(p.key_id.to_owned(), p.key().verifying_key())])
    }
    fn identity_type(&self, identity: &Address) -> Option<SenderType> {
        self.person(identity).map(|p| p.kind)
    }
    fn is_revoked(&self, link: &LinkRef<'_>) -> bool {
        link.id.is_some_and(|id| self.revoked_links.contains(id))
    }
}

impl Directory for World {
    fn registered_type(&self, identity: &Address) -> Option<String> {
        self.person(identity).map(|p| p.kind.as_str().to_owned())
    }
    fn active_signing_key(&self, identity: &Address, key_id: &str) -> Option<VerifyingKey> {
        self.person(identity)
            .filter(|p| p.key_id == key_id)
            .map(|p| p.key().verifying_key())
    }
}

impl CapabilityResolver for World {
    fn signing_key(&self, identity: &Address, key_id: &str) -> Option<VerifyingKey> {
        self.active_signing_key(identity, key_id)
    }
    fn pop_key(&self, holder: &Address, key_id: &str) -> Option<VerifyingKey> {
        self.active_signing_key(holder, key_id)
    }
    fn may_issue(&self, issuer: &Address, _: &ThreadId) -> bool {
        self.issuers.contains(issuer)
    }
    fn is_revoked(&self, id: &CapabilityId) -> bool {
        self.revoked_caps.contains(&id.to_string())
    }
    fn is_spent(&self, id: &CapabilityId) -> bool {
        self.spent_caps.contains(&id.to_string())
    }
}

impl AcceptView for World {
    fn is_stored(&self, id: &EnvelopeId) -> bool {
        self.stored.contains(id)
    }
    fn thread(&self, id: &ThreadId) -> Option<&ThreadRuntime> {
        self.threads.get(id)
    }
    fn stored_thread(&self, id: &ThreadId) -> Option<ThreadState> {
        self.threads.get(id).map(|t| t.state.clone())
    }
    fn task(&self, id: &str) -> Option<TaskRecord> {
        self.tasks.get(id).cloned()
    }
    fn workflow(&self, id: &str) -> Option<crate::workflow::WorkflowRun> {
        self.workflows.get(id).cloned()
    }
    fn capability_holder(&self, id: &str) -> Option<String> {
        self.cap_holders.get(id).cloned()
    }
}
