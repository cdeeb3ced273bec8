//! Bounces (v1.1 §20.8 "Receipts map to: delivered / queued / failed (DSN-like)", §21.3):
//! each outbound message's reverse path names the envelope and the recipient it was sent to
//! (VERP) under a keyed tag, so a delivery status notification (RFC 3464) that comes back
//! later — after the recipient's own server had accepted the message — can be mapped to
//! that one recipient's `receipt.failed@v1`, and nobody who did not receive the message can
//! forge one.
//!
//! The address is `bounces+{envelope id}.{tag}@{mail domain}`, the tag the first 16 bytes
//! (hex) of HMAC-SHA-256 (RFC 2104) under the bridge's secret over the envelope id and the
//! recipient's address (lowercase).

use mail_parser::{MessageParser, MimeHeaders, PartType};
use sha2::{Digest, Sha256};

/// The local-part prefix of bounce addresses.
pub const PREFIX: &str = "bounces+";

/// HMAC-SHA-256 (RFC 2104).
fn hmac(key: &[u8; 32], message: &[u8]) -> [u8; 32] {
    let mut block = [0u8; 64];
    block[..32].copy_from_slice(key);
    let pad = |b: u8| -> Vec<u8> { block.iter().map(|k| k ^ b).collect() };
    let inner = Sha256::new()
        .chain_update(pad(0x36))
        .chain_update(message)
        .finalize();
    Sha256::new()
        .chain_update(pad(0x5c))
        .chain_update(inner)
        .finalize()
        .into()
}

/// The tag binding `envelope_id` and `recipient` under `key`.
pub fn tag(key: &[u8; 32], envelope_id: &str, recipient: &str) -> String {
    let mut message = envelope_id.as_bytes().to_vec();
    message.push(0);
    message.extend_from_slice(recipient.to_ascii_lowercase().as_bytes());
    hex::encode(&hmac(key, &message)[..16])
}

/// The reverse path of the message for `recipient` of `envelope_id`.
pub fn address(key: &[u8; 32], envelope_id: &str, recipient: &str, domain: &str) -> String {
    format!(
        "{PREFIX}{envelope_id}.{}@{domain}",
        tag(key, envelope_id, recipient)
    )
}

/// (envelope id, tag) of a bounce address's local part, if it is one.
pub fn parse_local(local: &str) -> Option<(&str, &str)> {
    let rest = local
        .get(..PREFIX.len())
        .filter(|p| p.eq_ignore_ascii_case(PREFIX))
        .map(|_| &local[PREFIX.len()..])?;
    let (envelope, tag) = rest.rsplit_once('.')?;
    (tag.len() == 32 && tag.bytes().all(|b| b.is_ascii_hexdigit()) && !envelope.is_empty())
        .then_some((envelope, tag))
}

/// Whether `tag` is the one for `envelope_id` and `recipient` (constant time).
pub fn verify(key: &[u8; 32], envelope_id: &str, recipient: &str, tag_hex: &str) -> bool {
    let expected = tag(key, envelope_id, recipient);
    expected.len() == tag_hex.len()
        && expected
            .bytes()
            .zip(tag_hex.to_ascii_lowercase().bytes())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0
}

/// One recipient of a delivery status notification (RFC 3464 §2.3).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DsnRecipient {
    /// `Final-Recipient` (the address, without its `rfc822;` type).
    pub final_recipient: String,
    /// `Action`: `failed`, `delayed`, `delivered`, `relayed` or `expanded`.
    pub action: String,
    /// `Status` (`5.1.1`).
    pub status: String,
    /// `Diagnostic-Code`, if given.
    pub diagnostic: Option<String>,
}

/// The per-recipient fields of a `multipart/report; report-type=delivery-status` message
/// (RFC 3462, RFC 3464); `None` when `raw` is not one.
pub fn parse_dsn(raw: &[u8]) -> Option<Vec<DsnRecipient>> {
    let message = std::panic::catch_unwind(|| MessageParser::default().parse(raw)).ok()??;
    let root = message.parts.first()?;
    let is_report = root.is_content_type("multipart", "report")
        && root
            .content_type()
            .and_then(|c| c.attribute("report-type"))
            .is_some_and(|t| t.eq_ignore_ascii_case("delivery-status"));
    if !is_report {
        return None;
    }
    let status = message.parts.iter().find(|p| {
        p.is_content_type("message", "delivery-status")
            || p.is_content_type("message", "global-delivery-status")
    })?;
    let text = match &status.body {
        PartType::Text(t) => t.to_string(),
        PartType::Binary(b) | PartType::InlineBinary(b) => String::from_utf8_lossy(b).into_owned(),
        PartType::Message(m) => String::from_utf8_lossy(m.raw_message()).into_owned(),
        _ => return None,
    };
    let mut out = Vec::new();
    // Blocks separated by blank lines: the per-message block, then one per recipient.
    let unfolded = text
        .replace("\r\n", "\n")
        .replace("\n ", " ")
        .replace("\n\t", " ");
    for block in unfolded.split("\n\n").skip(1) {
        let field = |name: &str| {
            block.lines().find_map(|l| {
                let (k, v) = l.split_once(':')?;
                k.trim()
                    .eq_ignore_ascii_case(name)
                    .then(|| v.trim().to_string())
            })
        };
        let (Some(recipient), Some(action)) = (field("Final-Recipient"), field("Action")) else {
            continue;
        };
        let address = recipient
            .split_once(';')
            .map_or(recipient.as_str(), |(_, a)| a)
            .trim()
            .trim_matches(['<', '>'])
            .to_string();
        out.push(DsnRecipient {
            final_recipient: address,
            action: action.to_ascii_lowercase(),
            status: field("Status").unwrap_or_default(),
            diagnostic: field("Diagnostic-Code"),
        });
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc4231_test_case_1() {
        // RFC 4231 test case 1 (key 0x0b × 20, zero-padded to 32 is the same HMAC key).
        let mut key = [0u8; 32];
        key[..20].copy_from_slice(&[0x0b; 20]);
        assert_eq!(
            hex::encode(hmac(&key, b"Hi There")),
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"
        );
    }

    #[test]
    fn addresses_round_trip_and_tags_bind_both_parts() {
        let key = [7u8; 32];
        let a = address(&key, "env_01", "Carol@B.test", "a.test");
        let local = a.split('@').next().unwrap();
        let (env, t) = parse_local(local).unwrap();
        assert_eq!(env, "env_01");
        assert!(verify(&key, "env_01", "carol@b.test", t));
        assert!(!verify(&key, "env_01", "dave@b.test", t));
        assert!(!verify(&key, "env_02", "carol@b.test", t));
        assert!(!verify(&[8u8; 32], "env_01", "carol@b.test", t));
        assert!(parse_local("bounces+env_01.xyz").is_none());
        assert!(parse_local("alice").is_none());
    }

    #[test]
    fn a_dsn_names_its_failed_recipient() {
        let dsn = "From: MAILER-DAEMON@b.test\r\nTo: bounces+env_01.00@a.test\r\nSubject: Undelivered\r\nMIME-Version: 1.0\r\nContent-Type: multipart/report; report-type=delivery-status; boundary=\"b\"\r\n\r\n--b\r\nContent-Type: text/plain\r\n\r\nIt failed.\r\n--b\r\nContent-Type: message/delivery-status\r\n\r\nReporting-MTA: dns; mx.b.test\r\n\r\nFinal-Recipient: rfc822; carol@b.test\r\nAction: failed\r\nStatus: 5.1.1\r\nDiagnostic-Code: smtp; 550 5.1.1 no such\r\n user\r\n\r\n--b--\r\n";
        let r = parse_dsn(dsn.as_bytes()).unwrap();
        assert_eq!(
            r,
            vec![DsnRecipient {
                final_recipient: "carol@b.test".into(),
                action: "failed".into(),
                status: "5.1.1".into(),
                diagnostic: Some("smtp; 550 5.1.1 no such user".into()),
            }]
        );
        assert!(parse_dsn(b"From: a@b\r\n\r\nhello\r\n").is_none());
    }
}
