//! Bounded work per envelope (issue 19, item 4): the node's limits on an envelope's fan-out
//! and on the size of its free-form JSON, checked in one pass before any per-recipient or
//! per-element work.
//!
//! v1.1 §10.7 makes thread sizes configurable node policy; these limits are the same kind
//! of policy for one envelope. The spec names no values, so a node chooses them (the
//! defaults below are generous for legitimate use) and the conformance harness never
//! asserts them. A refusal is `PAYLOAD_TOO_LARGE` (v1.1 §24.2: "Size limits exceeded",
//! 413) with a §24.1 body whose `details.field` is the JSON path of the offending member and
//! whose `details.reason` names the limit, its configured maximum and the actual count.
//! Every limit set to `0` is off, as in §10.7.
//!
//! [`check`] reads the JSON value as received, before structure validation: a list that is
//! not a list is left to the §8 rules. Its cost is bounded by the limits themselves — it
//! stops at the first member beyond one, and the generic walk visits at most
//! [`EnvelopeLimits::max_json_nodes`] values — so a refusal costs microseconds however large
//! the envelope is.

use crate::error::{ErrorCode, ProtocolError};
use serde_json::Value;

/// The section every refusal of this module cites.
pub const SECTION: &str = "v1.1 §24.2 (PAYLOAD_TOO_LARGE), §10.7 (node-configurable limits)";

/// Per-envelope limits (0 = that limit off). Field names are the limit names used in error
/// reasons, the node's `[limits]` configuration and its `--max-…` flags.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
#[serde(default)]
pub struct EnvelopeLimits {
    /// Size of the RFC 8785 form without `meta`, in bytes.
    pub max_envelope_bytes: usize,
    /// Entries in `to` (every role: primary, cc, observer, bcc): each may become a thread
    /// participant (§10.5), a reader row and a delivery.
    pub max_recipients: usize,
    /// Distinct domains among `to[*].identity` and `audience.identities[*]`: each remote
    /// one is a federation delivery (§15.4, §15.6), so this bounds the outbox fan-out.
    pub max_recipient_domains: usize,
    /// Entries in `audience.identities` (§8.3 custom audience): each is a reader row.
    pub max_audience_identities: usize,
    /// Entries in `attachments`.
    pub max_attachments: usize,
    /// Entries of `references.linked_envelopes`, `linked_threads` and `external` together.
    pub max_references: usize,
    /// Nesting depth of the envelope's JSON (the envelope object itself is depth 1); bounds
    /// extension data, `content.structured.parameters` and every other free-form member.
    pub max_json_depth: usize,
    /// Elements of any one JSON array anywhere in the envelope (extension data included).
    pub max_array_len: usize,
    /// JSON values in the whole envelope (objects, arrays and scalars, counted once each).
    pub max_json_nodes: usize,
}

impl Default for EnvelopeLimits {
    /// Generous defaults: a mailing-list-sized recipient list (Postfix's default
    /// `smtpd_recipient_limit` is also 1,000), and a 256 KiB envelope's worth of JSON.
    fn default() -> Self {
        EnvelopeLimits {
            max_envelope_bytes: 256 * 1024,
            max_recipients: 1_000,
            max_recipient_domains: 100,
            max_audience_identities: 1_000,
            max_attachments: 100,
            max_references: 1_000,
            max_json_depth: 32,
            max_array_len: 1_000,
            max_json_nodes: 20_000,
        }
    }
}

impl EnvelopeLimits {
    /// Every limit off.
    pub const fn unlimited() -> Self {
        EnvelopeLimits {
            max_envelope_bytes: 0,
            max_recipients: 0,
            max_recipient_domains: 0,
            max_audience_identities: 0,
            max_attachments: 0,
            max_references: 0,
            max_json_depth: 0,
            max_array_len: 0,
            max_json_nodes: 0,
        }
    }
}

/// The refusal for `field` when `actual` exceeds the limit `name` = `max`.
pub fn exceeded(field: impl Into<String>, name: &str, max: usize, actual: usize) -> ProtocolError {
    let field = field.into();
    ProtocolError::new(
        ErrorCode::PayloadTooLarge,
        field.clone(),
        format!(
            "{field} has {actual}, more than this node's limit {name} = {max} \
             (configurable; 0 turns it off)"
        ),
        SECTION,
    )
}

/// `actual` breaks `max` unless the limit is off.
fn over(max: usize, actual: usize) -> bool {
    max != 0 && actual > max
}

fn list_len(v: Option<&Value>) -> usize {
    v.and_then(Value::as_array).map_or(0, Vec::len)
}

/// Checks `envelope` against every limit except [`EnvelopeLimits::max_envelope_bytes`]
/// (which needs the canonical form; the acceptance core checks it right after). Named lists
/// are checked first so a long recipient list is reported as `max_recipients`, not as the
/// generic `max_array_len`.
pub fn check(envelope: &Value, limits: &EnvelopeLimits) -> Result<(), ProtocolError> {
    let to = envelope.get("to");
    let recipients = list_len(to);
    if over(limits.max_recipients, recipients) {
        return Err(exceeded(
            "to",
            "max_recipients",
            limits.max_recipients,
            recipients,
        ));
    }
    let audience = envelope.pointer("/audience/identities");
    let audience_len = list_len(audience);
    if over(limits.max_audience_identities, audience_len) {
        return Err(exceeded(
            "audience.identities",
            "max_audience_identities",
            limits.max_audience_identities,
            audience_len,
        ));
    }
    if limits.max_recipient_domains != 0 {
        let to_ids = to
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|r| r.get("identity"));
        let audience_ids = audience.and_then(Value::as_array).into_iter().flatten();
        let domains = distinct_domains(to_ids.chain(audience_ids), limits.max_recipient_domains);
        if over(limits.max_recipient_domains, domains) {
            return Err(exceeded(
                "to",
                "max_recipient_domains",
                limits.max_recipient_domains,
                domains,
            ));
        }
    }
    let attachments = list_len(envelope.get("attachments"));
    if over(limits.max_attachments, attachments) {
        return Err(exceeded(
            "attachments",
            "max_attachments",
            limits.max_attachments,
            attachments,
        ));
    }
    let references = envelope.get("references");
    let refs: usize = ["linked_envelopes", "linked_threads", "external"]
        .iter()
        .map(|k| list_len(references.and_then(|r| r.get(*k))))
        .sum();
    if over(limits.max_references, refs) {
        return Err(exceeded(
            "references",
            "max_references",
            limits.max_references,
            refs,
        ));
    }
    let mut walk = Walk { limits, nodes: 0 };
    walk.value(envelope, 1).map_err(|e| e.into_error(limits))
}

/// Counts distinct domains (the text after the last `@`, compared case-insensitively) and
/// stops counting one past `max`: the answer is exact up to `max + 1`.
fn distinct_domains<'a>(ids: impl Iterator<Item = &'a Value>, max: usize) -> usize {
    let mut seen: Vec<String> = Vec::new();
    for id in ids {
        let Some(domain) = id.as_str().and_then(|s| s.rsplit_once('@')).map(|(_, d)| d) else {
            continue;
        };
        if !seen.iter().any(|d| d.eq_ignore_ascii_case(domain)) {
            seen.push(domain.to_ascii_lowercase());
            if seen.len() > max {
                break;
            }
        }
    }
    seen.len()
}

/// Which generic limit the walk broke, and where (path segments, innermost last).
struct Exceed {
    name: &'static str,
    actual: usize,
    path: Vec<String>,
}

impl Exceed {
    fn into_error(mut self, limits: &EnvelopeLimits) -> ProtocolError {
        self.path.reverse();
        let mut field = String::new();
        for seg in &self.path {
            if !seg.starts_with('[') && !field.is_empty() {
                field.push('.');
            }
            field.push_str(seg);
        }
        if field.is_empty() {
            field.push('$');
        }
        let max = match self.name {
            "max_json_depth" => limits.max_json_depth,
            "max_array_len" => limits.max_array_len,
            _ => limits.max_json_nodes,
        };
        exceeded(field, self.name, max, self.actual)
    }
}

/// The generic walk: depth, array length and node count, stopping at the first excess.
struct Walk<'a> {
    limits: &'a EnvelopeLimits,
    nodes: usize,
}

impl Walk<'_> {
    fn value(&mut self, v: &Value, depth: usize) -> Result<(), Exceed> {
        self.nodes += 1;
        if over(self.limits.max_json_nodes, self.nodes) {
            return Err(Exceed {
                name: "max_json_nodes",
                actual: self.nodes,
                path: Vec::new(),
            });
        }
        let container = matches!(v, Value::Array(_) | Value::Object(_));
        if container && over(self.limits.max_json_depth, depth) {
            return Err(Exceed {
                name: "max_json_depth",
                actual: depth,
                path: Vec::new(),
            });
        }
        match v {
            Value::Array(items) => {
                if over(self.limits.max_array_len, items.len()) {
                    return Err(Exceed {
                        name: "max_array_len",
                        actual: items.len(),
                        path: Vec::new(),
                    });
                }
                for (i, item) in items.iter().enumerate() {
                    self.value(item, depth + 1).map_err(|mut e| {
                        e.path.push(format!("[{i}]"));
                        e
                    })?;
                }
            }
            Value::Object(members) => {
                for (k, item) in members {
                    self.value(item, depth + 1).map_err(|mut e| {
                        e.path.push(k.clone());
                        e
                    })?;
                }
            }
            _ => {}
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn recipients(n: usize, domains: usize) -> Value {
        (0..n)
            .map(|i| json!({"identity": format!("loom://u{i}@d{}.test", i % domains.max(1)), "role": "primary"}))
            .collect()
    }

    fn reason_of(e: &ProtocolError) -> &str {
        &e.rule
    }

    #[test]
    fn recipients_at_the_limit_pass_and_one_more_is_refused_naming_the_limit() {
        let limits = EnvelopeLimits {
            max_recipients: 5,
            ..EnvelopeLimits::default()
        };
        let ok = json!({"to": recipients(5, 1)});
        assert_eq!(check(&ok, &limits), Ok(()));
        let bad = json!({"to": recipients(6, 1)});
        let e = check(&bad, &limits).unwrap_err();
        assert_eq!(e.code, ErrorCode::PayloadTooLarge);
        assert_eq!(e.http_status(), 413);
        assert_eq!(e.field, "to");
        assert!(reason_of(&e).contains("max_recipients = 5"), "{e}");
        assert!(reason_of(&e).contains("has 6"), "{e}");
        assert!(e.section.contains("§24.2"));
    }

    #[test]
    fn recipient_domains_count_case_insensitively_across_to_and_audience() {
        let limits = EnvelopeLimits {
            max_recipient_domains: 2,
            ..EnvelopeLimits::default()
        };
        let ok = json!({
            "to": [{"identity": "loom://a@X.test"}, {"identity": "loom://b@x.TEST"}],
            "audience": {"mode": "custom", "identities": ["loom://c@y.test"]},
        });
        assert_eq!(check(&ok, &limits), Ok(()));
        let bad = json!({
            "to": [{"identity": "loom://a@x.test"}, {"identity": "loom://b@y.test"}],
            "audience": {"mode": "custom", "identities": ["loom://c@z.test"]},
        });
        let e = check(&bad, &limits).unwrap_err();
        assert!(reason_of(&e).contains("max_recipient_domains = 2"), "{e}");
        assert!(reason_of(&e).contains("has 3"), "{e}");
    }

    #[test]
    fn each_named_list_reports_its_own_limit_and_path() {
        let limits = EnvelopeLimits {
            max_audience_identities: 1,
            max_attachments: 1,
            max_references: 2,
            ..EnvelopeLimits::default()
        };
        let cases = [
            (
                json!({"audience": {"mode": "custom", "identities": ["loom://a@x.test", "loom://b@x.test"]}}),
                "audience.identities",
                "max_audience_identities = 1",
            ),
            (
                json!({"attachments": [{}, {}]}),
                "attachments",
                "max_attachments = 1",
            ),
            (
                json!({"references": {"linked_envelopes": ["a"], "linked_threads": ["b"], "external": [{}]}}),
                "references",
                "max_references = 2",
            ),
        ];
        for (env, field, name) in cases {
            let e = check(&env, &limits).unwrap_err();
            assert_eq!(e.field, field);
            assert!(reason_of(&e).contains(name), "{e}");
        }
    }

    #[test]
    fn the_generic_walk_names_the_path_of_a_long_extension_array() {
        let limits = EnvelopeLimits::default();
        let long: Vec<u32> = (0..100_000).collect();
        let env = json!({"content": {"structured": {"intent": "x@v1", "parameters": {"rows": [1, long]}}}});
        let e = check(&env, &limits).unwrap_err();
        assert_eq!(e.field, "content.structured.parameters.rows[1]");
        assert!(reason_of(&e).contains("max_array_len = 1000"), "{e}");
        assert!(reason_of(&e).contains("has 100000"), "{e}");
    }

    #[test]
    fn depth_counts_containers_from_the_envelope_object() {
        let limits = EnvelopeLimits {
            max_json_depth: 3,
            ..EnvelopeLimits::default()
        };
        // envelope (1) → extensions (2) → a (3): allowed; one more level is refused.
        assert_eq!(check(&json!({"extensions": {"a": {}}}), &limits), Ok(()));
        let e = check(&json!({"extensions": {"a": {"b": []}}}), &limits).unwrap_err();
        assert_eq!(e.field, "extensions.a.b");
        assert!(reason_of(&e).contains("max_json_depth = 3"), "{e}");
        assert!(reason_of(&e).contains("has 4"), "{e}");
    }

    #[test]
    fn node_count_includes_every_value_and_stops_one_past_the_limit() {
        let limits = EnvelopeLimits {
            max_json_nodes: 4,
            ..EnvelopeLimits::default()
        };
        // object + array + 2 numbers = 4 values.
        assert_eq!(check(&json!({"x": [1, 2]}), &limits), Ok(()));
        let e = check(&json!({"x": [1, 2, 3]}), &limits).unwrap_err();
        assert!(reason_of(&e).contains("max_json_nodes = 4"), "{e}");
        assert!(reason_of(&e).contains("has 5"), "{e}");
        assert_eq!(e.field, "x[2]");
    }

    #[test]
    fn zero_turns_a_limit_off_and_unlimited_accepts_everything() {
        let big = json!({"to": recipients(3_000, 300), "x": (0..5_000).collect::<Vec<u32>>()});
        assert!(check(&big, &EnvelopeLimits::default()).is_err());
        assert_eq!(check(&big, &EnvelopeLimits::unlimited()), Ok(()));
        let only_recipients_off = EnvelopeLimits {
            max_recipients: 0,
            max_recipient_domains: 0,
            max_array_len: 0,
            max_json_nodes: 0,
            ..EnvelopeLimits::default()
        };
        assert_eq!(check(&big, &only_recipients_off), Ok(()));
    }

    #[test]
    fn malformed_lists_are_left_to_structure_validation() {
        let env =
            json!({"to": "loom://a@x.test", "attachments": {}, "references": 3, "audience": []});
        assert_eq!(check(&env, &EnvelopeLimits::default()), Ok(()));
    }

    mod props {
        use super::*;
        use proptest::prelude::*;

        fn arb_json() -> impl Strategy<Value = Value> {
            let leaf = prop_oneof![
                Just(Value::Null),
                any::<bool>().prop_map(Value::from),
                any::<i64>().prop_map(Value::from),
                "[a-z]{0,4}".prop_map(Value::from),
            ];
            leaf.prop_recursive(7, 96, 9, |inner| {
                prop_oneof![
                    prop::collection::vec(inner.clone(), 0..9).prop_map(Value::Array),
                    prop::collection::btree_map("[a-z]{1,3}", inner, 0..6)
                        .prop_map(|m| Value::Object(m.into_iter().collect())),
                ]
            })
        }

        /// (deepest container, longest array, values) of `v` at `depth`, the naive way.
        fn measure(v: &Value, depth: usize) -> (usize, usize, usize) {
            let children: Vec<&Value> = match v {
                Value::Array(a) => a.iter().collect(),
                Value::Object(o) => o.values().collect(),
                _ => return (0, 0, 1),
            };
            let own_len = v.as_array().map_or(0, Vec::len);
            children.iter().fold((depth, own_len, 1), |(d, l, n), c| {
                let (cd, cl, cn) = measure(c, depth + 1);
                (d.max(cd), l.max(cl), n + cn)
            })
        }

        proptest! {
            /// The generic walk agrees with a naive measurement on arbitrary JSON: refused
            /// exactly when one of the three measures exceeds its limit, naming that limit.
            #[test]
            fn the_walk_agrees_with_a_naive_measure(
                v in arb_json(),
                d in 1usize..9,
                a in 1usize..10,
                n in 1usize..120,
            ) {
                let limits = EnvelopeLimits {
                    max_json_depth: d,
                    max_array_len: a,
                    max_json_nodes: n,
                    ..EnvelopeLimits::unlimited()
                };
                let (depth, len, nodes) = measure(&v, 1);
                let expect_ok = depth <= d && len <= a && nodes <= n;
                match check(&v, &limits) {
                    Ok(()) => prop_assert!(expect_ok, "accepted {v}: {depth} {len} {nodes}"),
                    Err(e) => {
                        prop_assert!(!expect_ok, "refused {v}: {e}");
                        prop_assert_eq!(e.code, ErrorCode::PayloadTooLarge);
                        let named = (e.rule.contains("max_json_depth") && depth > d)
                            || (e.rule.contains("max_array_len") && len > a)
                            || (e.rule.contains("max_json_nodes") && nodes > n);
                        prop_assert!(named, "{}", e);
                    }
                }
            }

            /// For every limit value `m`, `m` entries pass and `m + 1` are refused, naming
            /// the limit with both numbers.
            #[test]
            fn at_the_limit_passes_one_more_is_refused(m in 1usize..60, which in 0usize..4) {
                let (name, mut limits) = match which {
                    0 => ("max_recipients", EnvelopeLimits { max_recipients: m, ..EnvelopeLimits::unlimited() }),
                    1 => ("max_attachments", EnvelopeLimits { max_attachments: m, ..EnvelopeLimits::unlimited() }),
                    2 => ("max_array_len", EnvelopeLimits { max_array_len: m, ..EnvelopeLimits::unlimited() }),
                    _ => ("max_recipient_domains", EnvelopeLimits { max_recipient_domains: m, ..EnvelopeLimits::unlimited() }),
                };
                let build = |n: usize| match which {
                    0 | 3 => json!({"to": recipients(n, n)}),
                    1 => json!({"attachments": vec![json!({}); n]}),
                    _ => json!({"extensions": {"list": vec![0; n]}}),
                };
                prop_assert_eq!(check(&build(m), &limits), Ok(()));
                let e = check(&build(m + 1), &limits).unwrap_err();
                prop_assert_eq!(e.code, ErrorCode::PayloadTooLarge);
                prop_assert!(e.rule.contains(&format!("{name} = {m}")), "{}", e);
                prop_assert!(e.rule.contains(&format!("has {}", m + 1)), "{}", e);
                limits = EnvelopeLimits::unlimited();
                prop_assert_eq!(check(&build(m + 1), &limits), Ok(()));
            }

            /// Depth and node count: exactly at the limit passes, one more is refused.
            #[test]
            fn depth_and_nodes_are_exact(d in 1usize..40, n in 1usize..200) {
                let mut v = json!({});
                for _ in 1..d {
                    v = json!({"k": v});
                }
                let limits = EnvelopeLimits { max_json_depth: d, ..EnvelopeLimits::unlimited() };
                prop_assert_eq!(check(&v, &limits), Ok(()));
                let deeper = json!({"k": v});
                let e = check(&deeper, &limits).unwrap_err();
                prop_assert!(e.rule.contains("max_json_depth"), "{}", e);

                // {"x": [0; n - 2]} has n values for n ≥ 2.
                if n >= 2 {
                    let flat = json!({"x": vec![0; n - 2]});
                    let limits = EnvelopeLimits { max_json_nodes: n, ..EnvelopeLimits::unlimited() };
                    prop_assert_eq!(check(&flat, &limits), Ok(()));
                    let more = json!({"x": vec![0; n - 1]});
                    prop_assert!(check(&more, &limits).unwrap_err().rule.contains("max_json_nodes"));
                }
            }
        }
    }
}
