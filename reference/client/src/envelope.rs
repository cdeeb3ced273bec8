//! Envelope builders (v1.1 §8.1, §11.1). IDs come from an injected [`IdGenerator`] and
//! `created_at` from an injected [`Clock`] (DESIGN.md §3): the same seed and clock give the
//! same envelopes, byte for byte.

use crate::error::ClientError;
use crate::identity::Identity;
use loom_protocol::Timestamp;
use loom_protocol::clock::Clock;
use loom_protocol::id::IdGenerator;
use serde_json::{Value, json};

/// What a message says and where it goes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MessageDraft {
    /// The thread; `None` starts a new thread with a fresh `thr_` id.
    pub thread_id: Option<String>,
    /// The envelope replied to; `None` for a thread root.
    pub parent_id: Option<String>,
    /// Primary recipients (`loom://…`).
    pub to: Vec<String>,
    /// `content.human.text`.
    pub text: String,
}

/// Makes signed envelopes with deterministic ids and timestamps.
#[derive(Debug)]
pub struct EnvelopeFactory<C: Clock + Clone> {
    clock: C,
    ids: IdGenerator<C>,
}

impl<C: Clock + Clone> EnvelopeFactory<C> {
    /// A factory reading `clock` and drawing id randomness from a ChaCha20 RNG seeded `seed`.
    pub fn new(clock: C, seed: u64) -> EnvelopeFactory<C> {
        EnvelopeFactory {
            ids: IdGenerator::new(clock.clone(), seed),
            clock,
        }
    }

    /// The current time of the factory's clock.
    pub fn now(&self) -> Timestamp {
        self.clock.now()
    }

    /// A fresh `thr_` id.
    pub fn thread_id(&mut self) -> String {
        self.ids.thread().to_string()
    }

    /// A fresh `env_` id.
    pub fn envelope_id(&mut self) -> String {
        self.ids.envelope().to_string()
    }

    /// A fresh `cap_` id (a capability token's `id`, v1.1 §12.1).
    pub fn capability_id(&mut self) -> String {
        self.ids.capability().to_string()
    }

    /// A fresh `att_` id (an attachment entry's `id`, v1.1 §8.1).
    pub fn attachment_id(&mut self) -> String {
        self.ids.attachment().to_string()
    }

    /// 32 bytes from the factory's RNG (e.g. a key seed for a generated identity).
    pub fn bytes32(&mut self) -> [u8; 32] {
        self.ids.bytes32()
    }

    /// A signed `message` envelope from `from`.
    pub fn message(&mut self, from: &Identity, draft: &MessageDraft) -> Result<Value, ClientError> {
        let thread = match &draft.thread_id {
            Some(t) => t.clone(),
            None => self.thread_id(),
        };
        let to: Vec<Value> = draft
            .to
            .iter()
            .map(|a| json!({"identity": a, "role": "primary"}))
            .collect();
        let mut env = json!({
            "loom": "1.1",
            "id": self.envelope_id(),
            "thread_id": thread,
            "parent_id": draft.parent_id,
            "type": "message",
            "from": from.from_object(),
            "to": to,
            "created_at": self.now().to_rfc3339(),
            "priority": "normal",
            "content": {"human": {"text": draft.text, "format": "plaintext"}, "encrypted": false},
            "attachments": [],
        });
        from.sign(&mut env)?;
        Ok(env)
    }

    /// A signed `task` envelope (v1.1 §9.2, §18.1, §18.3): the draft's thread, parent and
    /// recipients, `intent` (`task.create@v1`, `task.state_update@v1`) with `parameters`, and
    /// the draft's text as `content.human`.
    pub fn task(
        &mut self,
        from: &Identity,
        draft: &MessageDraft,
        intent: &str,
        parameters: Value,
    ) -> Result<Value, ClientError> {
        let mut env = self.message(from, draft)?;
        env["type"] = "task".into();
        env["content"]["structured"] = json!({"intent": intent, "parameters": parameters});
        from.sign(&mut env)?;
        Ok(env)
    }

    /// A signed `thread_op` envelope (v1.1 §11.1) with `intent` and `parameters`, addressed
    /// to `from` itself.
    pub fn thread_op(
        &mut self,
        from: &Identity,
        thread_id: &str,
        intent: &str,
        parameters: Value,
    ) -> Result<Value, ClientError> {
        let mut env = json!({
            "loom": "1.1",
            "id": self.envelope_id(),
            "thread_id": thread_id,
            "parent_id": null,
            "type": "thread_op",
            "from": from.from_object(),
            "to": [{"identity": from.address(), "role": "primary"}],
            "created_at": self.now().to_rfc3339(),
            "priority": "normal",
            "content": {"structured": {"intent": intent, "parameters": parameters}, "encrypted": false},
            "attachments": [],
        });
        from.sign(&mut env)?;
        Ok(env)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use loom_protocol::clock::FixedClock;

    #[test]
    fn same_seed_same_envelope_and_signature_verifies() {
        let t = Timestamp::parse("2026-03-01T12:00:00Z").unwrap();
        let alice = Identity::from_seed("loom://alice@x.test", &[3; 32]).unwrap();
        let draft = MessageDraft {
            to: vec!["loom://bob@x.test".into()],
            text: "hi".into(),
            ..MessageDraft::default()
        };
        let a = EnvelopeFactory::new(FixedClock(t), 9)
            .message(&alice, &draft)
            .unwrap();
        let b = EnvelopeFactory::new(FixedClock(t), 9)
            .message(&alice, &draft)
            .unwrap();
        assert_eq!(a, b);
        assert!(a["id"].as_str().unwrap().starts_with("env_"));
        assert!(a["thread_id"].as_str().unwrap().starts_with("thr_"));
        loom_protocol::envelope::validate_envelope(&a).unwrap();
    }
}
