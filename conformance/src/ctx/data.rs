//! The test-data part of a case's context: ids, keys and times drawn from the case's own seed
//! (the run seed mixed with the case ID, so a case draws the same data whatever else runs),
//! and envelope builders.

use super::Ident;
use loom_client::{EnvelopeFactory, MessageDraft};
use loom_protocol::clock::Clock;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::sync::Arc;

/// The seed of a case's data: the run seed mixed with the case ID.
pub fn case_seed(run_seed: u64, case_id: &str) -> u64 {
    let h = Sha256::digest(format!("{run_seed}/{case_id}").as_bytes());
    u64::from_be_bytes(h[..8].try_into().unwrap_or([0; 8]))
}

/// Ids, keys, times and envelopes of one case.
pub struct TestData {
    factory: EnvelopeFactory<Arc<dyn Clock>>,
    tag: String,
}

impl std::fmt::Debug for TestData {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestData")
            .field("tag", &self.tag)
            .finish_non_exhaustive()
    }
}

impl TestData {
    /// The data of case `case_id` in a run seeded `run_seed`, timed by `clock`.
    pub fn new(clock: Arc<dyn Clock>, run_seed: u64, case_id: &str) -> TestData {
        let seed = case_seed(run_seed, case_id);
        TestData {
            factory: EnvelopeFactory::new(clock, seed),
            tag: format!("{:08x}", seed as u32),
        }
    }

    /// Eight hex digits naming this case in this run (part of every address it registers).
    pub fn tag(&self) -> &str {
        &self.tag
    }

    /// 32 fresh bytes (keys of identities a case builds by hand).
    pub fn seed32(&mut self) -> [u8; 32] {
        self.factory.bytes32()
    }

    /// A fresh `thr_` id.
    pub fn thread_id(&mut self) -> String {
        self.factory.thread_id()
    }

    /// A fresh `env_` id.
    pub fn envelope_id(&mut self) -> String {
        self.factory.envelope_id()
    }

    /// A word no other case uses (letters and digits only, so any tokenizer keeps it whole).
    pub fn word(&mut self) -> String {
        let id = self.envelope_id();
        format!("kw{}", id.trim_start_matches("env_").to_ascii_lowercase())
    }

    /// `address` spelled in upper case after the scheme (`loom://ALICE-…@DOMAIN`): the same
    /// identity compared case-insensitively, not its canonical form (v1.1 §6.1).
    pub fn upper_case_address(address: &str) -> String {
        match address.split_once("://") {
            Some((scheme, rest)) => format!("{scheme}://{}", rest.to_uppercase()),
            None => address.to_uppercase(),
        }
    }

    /// The harness clock's now shifted by `ms` (negative: in the past), RFC 3339.
    pub fn now_plus_ms(&self, ms: i64) -> String {
        self.factory.now().plus_ms(ms).to_rfc3339()
    }

    /// The harness clock's now shifted by whole days.
    pub fn now_plus_days(&self, days: i64) -> String {
        self.now_plus_ms(days * 24 * 3_600_000)
    }

    /// The harness clock's now (RFC 3339).
    pub fn now(&self) -> String {
        self.factory.now().to_rfc3339()
    }

    /// The harness clock's now as a timestamp: one reading for several times that must
    /// agree to the millisecond.
    pub fn now_timestamp(&self) -> loom_protocol::time::Timestamp {
        self.factory.now()
    }

    /// An unsigned message from `from` to `to` in `thread`, replying to `parent` (human
    /// content only, v1.1 §9.2).
    pub fn message(
        &mut self,
        from: &Ident,
        thread: &str,
        parent: Option<&str>,
        to: &[&Ident],
        text: &str,
    ) -> Value {
        let draft = MessageDraft {
            thread_id: Some(thread.to_owned()),
            parent_id: parent.map(str::to_owned),
            to: to.iter().map(|i| i.address().to_owned()).collect(),
            text: text.to_owned(),
        };
        let mut env = self
            .factory
            .message(&from.id, &draft)
            .unwrap_or(Value::Null);
        if let Some(o) = env.as_object_mut() {
            o.remove("signature");
        }
        env
    }

    /// [`TestData::message`], signed.
    pub fn signed_message(
        &mut self,
        from: &Ident,
        thread: &str,
        parent: Option<&str>,
        to: &[&Ident],
        text: &str,
    ) -> Value {
        let mut env = self.message(from, thread, parent, to, text);
        from.sign(&mut env);
        env
    }

    /// An unsigned `thread_op` from `from` (v1.1 §11.1).
    pub fn op(&mut self, from: &Ident, thread: &str, intent: &str, parameters: Value) -> Value {
        let mut env = self
            .factory
            .thread_op(&from.id, thread, intent, parameters)
            .unwrap_or(Value::Null);
        if let Some(o) = env.as_object_mut() {
            o.remove("signature");
        }
        env
    }
}

/// The structured content a message may carry (v1.1 §9.2: optional for messages): a
/// `message.*` intent from the Appendix B registry, so a node that pairs intent namespaces
/// with envelope types (as §9.2 does for tasks) takes it too.
pub const MESSAGE_INTENT: &str = "message.general@v1";
