//! `signatures`: every stored envelope's signature verifies with its sender's key (v1.1
//! §7.3): an identity's key from the run's record, a node's from its store.

use super::{Found, Run};
use ed25519_dalek::VerifyingKey;

pub(super) fn check(run: &Run<'_>, found: &mut Found) {
    for (d, id, from, b) in run.stored_envelopes() {
        let candidates: Vec<VerifyingKey> = if let Some(k) = run.keys.get(from) {
            vec![*k]
        } else if from.starts_with("bridge://") {
            // A bridged envelope is signed by the node that bridged it (its bridge key
            // is its node key, v1.1 §21.2 as the node README writes down).
            run.views
                .values()
                .flat_map(|n| n.node_keys.clone())
                .collect()
        } else if let Some(node) = from.strip_prefix("loom://loom-node@") {
            run.views
                .get(node)
                .map(|n| n.node_keys.clone())
                .unwrap_or_default()
        } else {
            Vec::new()
        };
        let ok = candidates
            .iter()
            .any(|k| loom_protocol::envelope::verify_envelope_signature(b, k).is_ok());
        if !ok {
            found.push(
                "signatures",
                format!(
                    "{d}: envelope {id} from {from} does not verify with the sender's key (v1.1 §7.3)"
                ),
            );
        }
    }
}
