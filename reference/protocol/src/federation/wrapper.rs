//! The federation delivery wrapper (v1.1 §15.4, with the `delivery_id` member of the
//! existing v1.1 node, DESIGN.md §9):
//!
//! ```json
//! {"loom": "1.1", "sender_node": "a.test", "delivery_id": "fdel_01J…",
//!  "timestamp": "2026-02-16T18:30:00.000Z", "envelopes": [ … ]}
//! ```
//!
//! Reading is strict about what the receiver relies on and lenient about the rest:
//! - the body is strict JSON (no duplicate member names: two `sender_node` members must not
//!   let the signature check and the sender check read different values);
//! - `loom` is `"1.1"` (§15.4 body, §8.2);
//! - `sender_node` is a node name and equals `X-LOOM-Node` (DESIGN.md §9; §15.3 binds the
//!   request to the sending node);
//! - `timestamp` is within ±5 minutes of now (§15.5: the freshness check applies to the
//!   wrapper, never to the envelopes' `created_at`, which may be days old after
//!   store-and-forward);
//! - `envelopes` holds 1 to 100 objects (100 is the existing node's bound; §15.4 shows a
//!   list); each is judged later, one by one, by envelope acceptance;
//! - `delivery_id` is optional (§15.4's example has none); when present it is 1–256 visible
//!   ASCII characters, because the receipt echoes it inside a `\n`-joined signed text;
//! - other members are ignored (the v1.0 §14.3 wrapper carried a `signature`).

use crate::error::{ErrorCode, ProtocolError};
use crate::federation::node_name::{parse_node_name, same_node};
use crate::http_sig::check_freshness;
use crate::id::IdGenerator;
use crate::jcs::parse_strict_bytes;
use crate::time::Timestamp;
use crate::{Clock, LOOM_VERSION};
use serde_json::{Map, Value};

/// The delivery endpoint path (v1.1 §15.4).
pub const DELIVER_PATH: &str = "/v1/federation/deliver";
/// At most this many envelopes travel in one wrapper (the existing v1.1 node's bound).
pub const MAX_ENVELOPES_PER_WRAPPER: usize = 100;
/// Default largest wrapper body: 100 envelopes at the reference node's 256 KiB envelope
/// limit, rounded up.
pub const DEFAULT_MAX_WRAPPER_BYTES: usize = 26 * 1024 * 1024;
/// Longest `delivery_id`.
pub const MAX_DELIVERY_ID_LEN: usize = 256;
/// Prefix of the delivery ids this crate makes (the existing node uses `fdel_` + ULID).
pub const DELIVERY_ID_PREFIX: &str = "fdel_";

const SECTION: &str = "v1.1 §15.4";

/// Size bounds a receiver applies to a wrapper.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WrapperLimits {
    /// Most envelopes in one wrapper.
    pub max_envelopes: usize,
    /// Largest body in bytes.
    pub max_bytes: usize,
}

impl Default for WrapperLimits {
    fn default() -> Self {
        WrapperLimits {
            max_envelopes: MAX_ENVELOPES_PER_WRAPPER,
            max_bytes: DEFAULT_MAX_WRAPPER_BYTES,
        }
    }
}

/// A delivery wrapper that passed [`DeliveryWrapper::parse`].
#[derive(Debug, Clone, PartialEq)]
pub struct DeliveryWrapper {
    /// `sender_node`, normalized.
    pub sender_node: String,
    /// `delivery_id`, when sent.
    pub delivery_id: Option<String>,
    /// `timestamp`, parsed.
    pub timestamp: Timestamp,
    /// `timestamp` as sent.
    pub timestamp_text: String,
    /// The envelopes, each a JSON object, in wrapper order.
    pub envelopes: Vec<Value>,
}

fn invalid(field: impl Into<String>, rule: impl Into<String>) -> ProtocolError {
    ProtocolError::invalid(field, rule, SECTION)
}

/// Checks a `delivery_id` value (see the module docs).
pub fn check_delivery_id(id: &str) -> Result<(), ProtocolError> {
    if id.is_empty() || id.len() > MAX_DELIVERY_ID_LEN {
        return Err(invalid(
            "delivery_id",
            format!("delivery_id must be 1 to {MAX_DELIVERY_ID_LEN} characters"),
        ));
    }
    if !id.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(invalid(
            "delivery_id",
            "delivery_id must be visible ASCII: the signed receipt text joins its lines with \\n",
        ));
    }
    Ok(())
}

impl DeliveryWrapper {
    /// Reads a wrapper from the raw request body: size, strict JSON, and every member rule
    /// of the module docs except the two that need the request context ([`Self::check`]).
    /// Errors name the member, the rule and the section; nothing is changed on error.
    pub fn parse(body: &[u8], limits: &WrapperLimits) -> Result<DeliveryWrapper, ProtocolError> {
        if body.len() > limits.max_bytes {
            return Err(ProtocolError::new(
                ErrorCode::PayloadTooLarge,
                "$",
                format!(
                    "delivery body is {} bytes; at most {} are accepted",
                    body.len(),
                    limits.max_bytes
                ),
                SECTION,
            ));
        }
        let value = parse_strict_bytes(body)
            .map_err(|e| invalid("$", format!("delivery body is not strict JSON: {e}")))?;
        Self::from_value(value, limits)
    }

    /// [`Self::parse`] for an already parsed body (which must come from a strict parser).
    pub fn from_value(
        value: Value,
        limits: &WrapperLimits,
    ) -> Result<DeliveryWrapper, ProtocolError> {
        let Value::Object(mut obj) = value else {
            return Err(invalid("$", "the delivery body must be a JSON object"));
        };
        match obj.get("loom") {
            Some(Value::String(v)) if v == LOOM_VERSION => {}
            Some(other) => {
                return Err(invalid(
                    "loom",
                    format!("loom must be \"{LOOM_VERSION}\", not {other}"),
                ));
            }
            None => return Err(invalid("loom", "loom is required")),
        }
        let sender_node = match obj.get("sender_node") {
            Some(Value::String(s)) => parse_node_name(s)
                .map_err(|why| invalid("sender_node", format!("sender_node {s:?}: {why}")))?,
            Some(other) => {
                return Err(invalid(
                    "sender_node",
                    format!("sender_node must be a string, not {other}"),
                ));
            }
            None => return Err(invalid("sender_node", "sender_node is required")),
        };
        let delivery_id = match obj.get("delivery_id") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => {
                check_delivery_id(s)?;
                Some(s.clone())
            }
            Some(other) => {
                return Err(invalid(
                    "delivery_id",
                    format!("delivery_id must be a string, not {other}"),
                ));
            }
        };
        let timestamp_text = match obj.get("timestamp") {
            Some(Value::String(s)) => s.clone(),
            Some(other) => {
                return Err(invalid(
                    "timestamp",
                    format!("timestamp must be an ISO 8601 string, not {other}"),
                ));
            }
            None => return Err(invalid("timestamp", "timestamp is required")),
        };
        let timestamp =
            Timestamp::parse(&timestamp_text).map_err(|e| invalid("timestamp", e.to_string()))?;
        let envelopes = match obj.remove("envelopes") {
            Some(Value::Array(a)) => a,
            Some(other) => {
                return Err(invalid(
                    "envelopes",
                    format!("envelopes must be an array, not {}", kind_of(&other)),
                ));
            }
            None => return Err(invalid("envelopes", "envelopes is required")),
        };
        if envelopes.is_empty() {
            return Err(invalid(
                "envelopes",
                "envelopes must hold at least one envelope",
            ));
        }
        if envelopes.len() > limits.max_envelopes {
            return Err(ProtocolError::new(
                ErrorCode::PayloadTooLarge,
                "envelopes",
                format!(
                    "a wrapper holds {} envelopes; at most {} are accepted per delivery",
                    envelopes.len(),
                    limits.max_envelopes
                ),
                SECTION,
            ));
        }
        if let Some(i) = envelopes.iter().position(|e| !e.is_object()) {
            return Err(invalid(
                format!("envelopes[{i}]"),
                "each envelope must be a JSON object",
            ));
        }
        Ok(DeliveryWrapper {
            sender_node,
            delivery_id,
            timestamp,
            timestamp_text,
            envelopes,
        })
    }

    /// The rules that need the request: `sender_node` names the node that signed
    /// (`X-LOOM-Node`, DESIGN.md §9) and the wrapper timestamp is fresh (§15.5).
    pub fn check(&self, header_node: &str, now: Timestamp) -> Result<(), ProtocolError> {
        if !same_node(&self.sender_node, header_node) {
            return Err(ProtocolError::new(
                ErrorCode::SignatureInvalid,
                "sender_node",
                format!(
                    "wrapper sender_node {:?} differs from X-LOOM-Node {header_node:?}",
                    self.sender_node
                ),
                "v1.1 §15.3, §15.4",
            ));
        }
        check_freshness("timestamp", &self.timestamp_text, now)?;
        Ok(())
    }

    /// [`Self::parse`] then [`Self::check`].
    pub fn parse_and_check(
        body: &[u8],
        limits: &WrapperLimits,
        header_node: &str,
        now: Timestamp,
    ) -> Result<DeliveryWrapper, ProtocolError> {
        let w = Self::parse(body, limits)?;
        w.check(header_node, now)?;
        Ok(w)
    }

    /// The `id` of each envelope, `None` where it is missing or not a string.
    pub fn envelope_ids(&self) -> Vec<Option<&str>> {
        self.envelopes
            .iter()
            .map(|e| e.get("id").and_then(Value::as_str))
            .collect()
    }

    /// A wrapper to send: `sender_node` is this node, `timestamp` is now.
    pub fn new(
        sender_node: &str,
        delivery_id: Option<String>,
        now: Timestamp,
        envelopes: Vec<Value>,
    ) -> DeliveryWrapper {
        DeliveryWrapper {
            sender_node: crate::http_sig::normalize_node(sender_node),
            delivery_id,
            timestamp: now,
            timestamp_text: now.to_rfc3339(),
            envelopes,
        }
    }

    /// The wrapper as a JSON value (members of §15.4 plus `delivery_id` when set).
    pub fn to_value(&self) -> Value {
        let mut m = Map::new();
        m.insert("loom".into(), LOOM_VERSION.into());
        m.insert("sender_node".into(), self.sender_node.clone().into());
        if let Some(id) = &self.delivery_id {
            m.insert("delivery_id".into(), id.clone().into());
        }
        m.insert("timestamp".into(), self.timestamp_text.clone().into());
        m.insert("envelopes".into(), Value::Array(self.envelopes.clone()));
        Value::Object(m)
    }

    /// The body bytes to send (compact JSON; the signature covers exactly these bytes).
    pub fn to_body(&self) -> Vec<u8> {
        serde_json::to_vec(&self.to_value()).unwrap_or_else(|_| b"{}".to_vec())
    }
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A new delivery id: `fdel_` + ULID from the injected clock and seeded RNG.
pub fn new_delivery_id<C: Clock>(ids: &mut IdGenerator<C>) -> String {
    format!("{DELIVERY_ID_PREFIX}{}", ids.ulid())
}

/// Splits the envelopes for one destination node into wrapper-sized batches, keeping order.
pub fn batches(envelopes: Vec<Value>, max_per_wrapper: usize) -> Vec<Vec<Value>> {
    let max = max_per_wrapper.max(1);
    let mut out = Vec::with_capacity(envelopes.len().div_ceil(max));
    let mut it = envelopes.into_iter().peekable();
    while it.peek().is_some() {
        out.push(it.by_ref().take(max).collect());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn now() -> Timestamp {
        Timestamp::parse("2026-03-01T12:00:00Z").unwrap()
    }

    fn body(v: &Value) -> Vec<u8> {
        serde_json::to_vec(v).unwrap()
    }

    fn env(i: usize) -> Value {
        json!({"id": format!("env_01JN00000000000000000000{i:02}")})
    }

    fn good() -> Value {
        json!({"loom": "1.1", "sender_node": "a.test", "delivery_id": "fdel_01", "timestamp": "2026-03-01T12:00:00.000Z", "envelopes": [env(0)]})
    }

    fn err(v: &Value) -> ProtocolError {
        DeliveryWrapper::parse_and_check(&body(v), &WrapperLimits::default(), "a.test", now())
            .unwrap_err()
    }

    #[test]
    fn a_good_wrapper_parses_and_round_trips() {
        let w = DeliveryWrapper::parse_and_check(
            &body(&good()),
            &WrapperLimits::default(),
            "A.TEST.",
            now(),
        )
        .unwrap();
        assert_eq!(w.sender_node, "a.test");
        assert_eq!(w.delivery_id.as_deref(), Some("fdel_01"));
        assert_eq!(
            w.envelope_ids(),
            vec![Some("env_01JN0000000000000000000000")]
        );
        let again = DeliveryWrapper::parse(&w.to_body(), &WrapperLimits::default()).unwrap();
        assert_eq!(again, w);
    }

    #[test]
    fn each_rule_names_its_field_and_code() {
        let with = |k: &str, v: Value| {
            let mut g = good();
            g[k] = v;
            g
        };
        let without = |k: &str| {
            let mut g = good();
            g.as_object_mut().unwrap().remove(k);
            g
        };
        let cases: Vec<(Value, &str, ErrorCode)> = vec![
            (without("loom"), "loom", ErrorCode::EnvelopeInvalid),
            (
                with("loom", "1.0".into()),
                "loom",
                ErrorCode::EnvelopeInvalid,
            ),
            (
                without("sender_node"),
                "sender_node",
                ErrorCode::EnvelopeInvalid,
            ),
            (
                with("sender_node", "b.test".into()),
                "sender_node",
                ErrorCode::SignatureInvalid,
            ),
            (
                with("sender_node", "a test".into()),
                "sender_node",
                ErrorCode::EnvelopeInvalid,
            ),
            (
                with("delivery_id", "a\nb".into()),
                "delivery_id",
                ErrorCode::EnvelopeInvalid,
            ),
            (
                with("delivery_id", 7.into()),
                "delivery_id",
                ErrorCode::EnvelopeInvalid,
            ),
            (
                without("timestamp"),
                "timestamp",
                ErrorCode::EnvelopeInvalid,
            ),
            (
                with("timestamp", "2026-03-01T11:54:59.999Z".into()),
                "timestamp",
                ErrorCode::SignatureInvalid,
            ),
            (
                without("envelopes"),
                "envelopes",
                ErrorCode::EnvelopeInvalid,
            ),
            (
                with("envelopes", json!([])),
                "envelopes",
                ErrorCode::EnvelopeInvalid,
            ),
            (
                with("envelopes", json!([env(0), 3])),
                "envelopes[1]",
                ErrorCode::EnvelopeInvalid,
            ),
            (
                with("envelopes", Value::Array((0..101).map(env).collect())),
                "envelopes",
                ErrorCode::PayloadTooLarge,
            ),
            (json!([1]), "$", ErrorCode::EnvelopeInvalid),
        ];
        for (v, field, code) in cases {
            let e = err(&v);
            assert_eq!((e.field.as_str(), e.code), (field, code), "{v}: {e}");
        }
        let dup = br#"{"loom":"1.1","sender_node":"a.test","sender_node":"b.test","timestamp":"2026-03-01T12:00:00Z","envelopes":[{}]}"#;
        let e = DeliveryWrapper::parse(dup, &WrapperLimits::default()).unwrap_err();
        assert!(e.rule.contains("duplicate"), "{e}");
        let small = WrapperLimits {
            max_bytes: 10,
            ..WrapperLimits::default()
        };
        assert_eq!(
            DeliveryWrapper::parse(&body(&good()), &small)
                .unwrap_err()
                .code,
            ErrorCode::PayloadTooLarge
        );
    }

    #[test]
    fn batches_keep_order_and_bound() {
        let envs: Vec<Value> = (0..250).map(env).collect();
        let b = batches(envs.clone(), 100);
        assert_eq!(
            b.iter().map(Vec::len).collect::<Vec<_>>(),
            vec![100, 100, 50]
        );
        assert_eq!(b.concat(), envs);
        assert!(batches(vec![], 100).is_empty());
        let mut ids = IdGenerator::new(crate::FixedClock(now()), 1);
        let id = new_delivery_id(&mut ids);
        assert!(id.starts_with("fdel_") && id.len() == 31, "{id}");
        check_delivery_id(&id).unwrap();
    }

    proptest! {
        /// Parsing never panics on arbitrary bytes.
        #[test]
        fn parse_never_panics_on_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
            let _ = DeliveryWrapper::parse_and_check(&bytes, &WrapperLimits::default(), "a.test", now());
        }

        /// Nor on arbitrary JSON, including JSON shaped like a wrapper.
        #[test]
        fn parse_never_panics_on_json(v in crate::federation::testing::arb_json(), shaped in any::<bool>()) {
            let v = if shaped {
                json!({"loom": "1.1", "sender_node": v.clone(), "delivery_id": v.clone(), "timestamp": v.clone(), "envelopes": [v]})
            } else { v };
            let _ = DeliveryWrapper::parse_and_check(&body(&v), &WrapperLimits::default(), "a.test", now());
        }
    }
}
