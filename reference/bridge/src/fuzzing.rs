//! Fuzz bodies (DESIGN.md §8, issue 32): library functions shared by the `cargo fuzz` targets
//! in `fuzz/` and by `cargo test`, which replays every committed corpus file through them.
//! A panic is a broken property.
//!
//! | target | body | drives |
//! |---|---|---|
//! | `bridge_smtp` | [`smtp_session`] | the inbound SMTP conversation: commands, pipelining, DATA, smuggling |
//! | `bridge_mime` | [`mime_to_envelope`] | mail → envelope drafts under every disposition |

use crate::auth::{AuthResults, Disposition};
use crate::inbound::{InboundSettings, NoIndex, QUARANTINE_LABEL, Received, map_message};
use crate::smtp::session::{
    Output, RecipientVerdict, Recipients, Session, SessionConfig, SessionLimits, Verdict,
    bare_line_break,
};
use loom_protocol::Address;

/// A fuzz body: takes any bytes, panics only on a broken property.
pub type Body = fn(&[u8]);

/// Every fuzz target whose body lives in this crate.
pub const TARGETS: &[(&str, Body)] = &[
    ("bridge_smtp", smtp_session),
    ("bridge_mime", mime_to_envelope),
];

struct Local;

impl Recipients for Local {
    fn check(&self, address: &str) -> RecipientVerdict {
        if address.ends_with("@a.test") {
            RecipientVerdict::Accept
        } else {
            RecipientVerdict::Unknown
        }
    }
}

fn config() -> SessionConfig {
    SessionConfig {
        hostname: "mx.a.test".into(),
        limits: SessionLimits {
            max_message_bytes: 4096,
            max_recipients: 4,
            max_errors: 20,
            max_messages: 8,
        },
        starttls: true,
        require_tls: false,
    }
}

/// Runs the whole input through a session in chunks of `chunk` bytes (0: at once), accepting
/// every transaction; returns what came out.
fn converse(data: &[u8], chunk: usize) -> Vec<Output> {
    let (mut s, greeting) = Session::new(config());
    let mut out = vec![greeting];
    let pieces: Vec<&[u8]> = if chunk == 0 {
        vec![data]
    } else {
        data.chunks(chunk).collect()
    };
    for piece in pieces {
        let mut queue = s.feed(piece, &Local);
        while !queue.is_empty() {
            let mut next = Vec::new();
            for o in queue {
                let deliver = matches!(o, Output::Deliver(_));
                out.push(o);
                if deliver {
                    next.extend(s.finish(&Verdict::accepted("ok"), &Local));
                }
            }
            queue = next;
        }
        if s.is_closed() {
            break;
        }
    }
    out
}

/// The SMTP conversation (RFC 5321, issue 32 smuggling rules): whatever the client sends,
/// every delivered message is within the size limit, has no bare CR or LF (so no hidden
/// second message, CVE-2023-51764), names only accepted recipients (at most the limit, at
/// least one), and the conversation is the same whether the bytes come at once or one by
/// one (pipelining cannot change a verdict). STARTTLS inputs stop at the handshake.
pub fn smtp_session(data: &[u8]) {
    let whole = converse(data, 0);
    let limits = config().limits;
    for o in &whole {
        if let Output::Deliver(tx) = o {
            assert!(tx.data.len() <= limits.max_message_bytes, "size limit");
            assert_eq!(bare_line_break(&tx.data), None, "bare line break delivered");
            assert!(!tx.rcpt_to.is_empty() && tx.rcpt_to.len() <= limits.max_recipients);
            assert!(tx.rcpt_to.iter().all(|r| r.ends_with("@a.test")));
        }
        if let Output::Reply(r) = o {
            assert!(r.ends_with(b"\r\n") && r.len() >= 5, "a reply line: {r:?}");
        }
    }
    if whole.contains(&Output::StartTls) {
        return;
    }
    for chunk in [1, 7] {
        assert_eq!(converse(data, chunk), whole, "chunks of {chunk} bytes");
    }
}

/// Mail → envelope (v1.1 §21.2) under a disposition chosen by the first byte: mapping never
/// panics; every draft it makes is a valid v1.1 envelope once signed (§8.1–§8.4, the §20.6
/// bcc-copy form), from a `bridge://` sender of type `bridge`, non-authoritative and
/// non-actuating by default; quarantined mail carries `sys.quarantine` on every draft.
pub fn mime_to_envelope(data: &[u8]) {
    let Some((&first, raw)) = data.split_first() else {
        return;
    };
    if parser_panics(raw) {
        // mail-parser 0.11's known panic ("Invalid part ID"): `inbound::parse_mail` turns it
        // into a refusal (the committed corpus replays such an input through it), but
        // libFuzzer's panic hook aborts before any catch, so such inputs stop here.
        return;
    }
    let quarantined = first & 1 == 1;
    let disposition = if quarantined {
        Disposition::Quarantine("fuzz".into())
    } else {
        Disposition::Deliver
    };
    let auth = AuthResults {
        spf: "pass".into(),
        dkim: "none".into(),
        dmarc: "none".into(),
        spf_domain: "b.test".into(),
        dkim_signatures: Vec::new(),
        dmarc_domain: "b.test".into(),
        dmarc_policy: "unspecified".into(),
        spf_aligned: true,
        dkim_aligned: false,
        client_ip: "192.0.2.1".into(),
    };
    let recipients: Vec<Address> = ["loom://alice@a.test", "loom://bob@a.test"]
        .iter()
        .filter_map(|a| Address::parse_wire(a).ok())
        .collect();
    let emails = vec!["alice@a.test".to_string(), "bob@a.test".to_string()];
    let mut n = 0u64;
    let mapped = map_message(
        &Received {
            raw,
            mail_from: "x@b.test",
            recipients: &recipients,
            recipient_emails: &emails,
            received_at: "2026-11-29T08:00:00Z",
        },
        &auth,
        &disposition,
        &NoIndex,
        &InboundSettings::new("k_sign_bridge_1"),
        &mut || {
            n += 1;
            format!("01JMKB7X9Q2RVHF3KN4TY{n:05}")
        },
    );
    let Ok(m) = mapped else {
        return;
    };
    assert!(m.sender.is_bridge());
    assert!(!m.envelopes.is_empty() && m.envelopes.len() <= 2);
    assert_eq!(m.meta_bridge["structured_trust"]["authoritative"], false);
    assert_eq!(
        m.meta_bridge["structured_trust"]["auto_actuation_allowed"],
        false
    );
    let key = ed25519_dalek::SigningKey::from_bytes(&[9u8; 32]);
    let kid = loom_protocol::KeyId::parse("k_sign_bridge_1", loom_protocol::KeyKind::Signing)
        .expect("key id");
    for draft in &m.envelopes {
        let mut e = draft.clone();
        loom_protocol::envelope::sign::sign_envelope(&mut e, &key, &kid).expect("signs");
        if let Err(err) = loom_protocol::validate_envelope(&e) {
            panic!("a mapped envelope is invalid: {err:?}\n{e:#}");
        }
        loom_protocol::policy::check_bcc_copy(&e).expect("bcc-copy form");
        assert_eq!(e["from"]["type"], "bridge");
        assert_eq!(e["content"]["structured"]["authoritative"], false);
        if quarantined {
            assert_eq!(e["labels"], serde_json::json!([QUARANTINE_LABEL]));
        } else {
            assert!(e.get("labels").is_none());
        }
    }
}

/// Whether `mail-parser` panics on `raw` (with the panic hook silenced while it runs).
fn parser_panics(raw: &[u8]) -> bool {
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let panicked =
        std::panic::catch_unwind(|| mail_parser::MessageParser::default().parse(raw)).is_err();
    std::panic::set_hook(hook);
    panicked
}

#[cfg(test)]
mod tests {
    use super::TARGETS;
    use std::path::Path;

    /// Replays `fuzz/corpus/<target>/` for every target of this crate.
    #[test]
    fn every_bridge_target_replays_its_committed_corpus() {
        let fuzz_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz");
        loom_protocol::fuzzing::replay_committed_corpora(&fuzz_dir, TARGETS);
    }
}
