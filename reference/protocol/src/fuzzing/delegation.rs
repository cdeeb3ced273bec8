//! Delegation links and chains (v1.1 §13.1–§13.5).
//!
//! An input starting with `{` is an envelope (raw JSON) whose `from.delegation_chain` is
//! verified as given. Any other input drives a generator: a chain that is valid by
//! construction (root human, continuity, scopes within their parent, fresh, signed with the
//! §13.3.1 context or the legacy form), then at most one mutation whose refusal is known in
//! advance, down to the link and member it must name.

use super::world::{PEOPLE, Person, World};
use super::{assert_explained, now};
use crate::clock::FixedClock;
use crate::delegation::{
    ChainPolicy, sign_delegation_link, sign_delegation_link_legacy, verify_delegation_chain,
};
use crate::documents::DelegationLink;
use crate::error::{ErrorCode, ProtocolError};
use crate::id::{KeyId, KeyKind};
use crate::jcs::parse_strict_bytes;
use crate::time::Timestamp;
use arbitrary::{Result as ArbResult, Unstructured};
use serde_json::{Value, json};

/// See the module docs: raw chains refuse with `DELEGATION_INVALID` naming a `from.…` member
/// and a section, and their links read back through the typed model unchanged; generated
/// chains verify (sign∘verify), and each mutation is refused naming the expected member.
pub fn delegation_chain(data: &[u8]) {
    if data.first() == Some(&b'{') {
        raw(data);
    } else {
        let _ = generated(&mut Unstructured::new(data));
    }
}

fn check_refusal(e: &ProtocolError) {
    assert_explained(e);
    assert_eq!(e.code, ErrorCode::DelegationInvalid, "{e:?}");
    assert!(e.field.starts_with("from."), "{e:?}");
}

fn raw(data: &[u8]) {
    let Ok(v) = parse_strict_bytes(data) else {
        return;
    };
    let world = World::default();
    let clock = FixedClock(now());
    let first = verify_delegation_chain(&v, &world, &ChainPolicy::default(), &clock);
    if let Err(e) = &first {
        check_refusal(e);
    }
    let again = verify_delegation_chain(&v, &world, &ChainPolicy::default(), &clock);
    assert_eq!(first, again, "verification is deterministic");
    let links = v
        .pointer("/from/delegation_chain")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for link in links {
        if let Ok(typed) = serde_json::from_value::<DelegationLink>(link) {
            let printed = serde_json::to_value(&typed).expect("a link serializes");
            let back: DelegationLink =
                serde_json::from_value(printed).expect("a printed link reads back");
            assert_eq!(back, typed, "parse∘print = id");
        }
    }
}

const ROOT_SCOPES: [&[&str]; 4] = [
    &["*"],
    &["message.*"],
    &["message.*", "task.*"],
    &["message.general"],
];

struct LinkSpec {
    delegator: usize,
    delegate: usize,
    scope: Vec<String>,
    created_ms: i64,
    expires_ms: Option<i64>,
    allow_sub: Option<bool>,
    max_depth: Option<u64>,
    id: Option<String>,
    note: Option<String>,
    legacy: bool,
    signer: Option<usize>,
}

impl LinkSpec {
    fn to_json(&self) -> Value {
        let mut link = json!({
            "delegator": PEOPLE[self.delegator].address,
            "delegate": PEOPLE[self.delegate].address,
            "scope": self.scope,
            "created_at": Timestamp::from_unix_ms(self.created_ms).to_rfc3339(),
            "revocable": true,
        });
        let extra = [
            (
                "expires_at",
                self.expires_ms
                    .map(|t| Value::from(Timestamp::from_unix_ms(t).to_rfc3339())),
            ),
            ("allow_sub_delegation", self.allow_sub.map(Value::from)),
            ("max_sub_delegation_depth", self.max_depth.map(Value::from)),
            ("id", self.id.clone().map(Value::from)),
            ("note", self.note.clone().map(Value::from)),
        ];
        for (k, v) in extra {
            if let Some(v) = v {
                link[k] = v;
            }
        }
        // The link names the delegator's key; `signer` (a mutation) signs with another.
        let named: &Person = &PEOPLE[self.delegator];
        let kid = KeyId::parse(named.key_id, KeyKind::Signing).expect("fixture key id");
        let key = PEOPLE[self.signer.unwrap_or(self.delegator)].key();
        let signed = if self.legacy {
            sign_delegation_link_legacy(&mut link, &key, &kid)
        } else {
            sign_delegation_link(&mut link, &key, &kid)
        };
        signed.expect("a link object signs");
        link
    }
}

/// Agents that can be delegates (indices into [`PEOPLE`]).
const AGENTS: [usize; 2] = [3, 4];

fn generated(u: &mut Unstructured<'_>) -> ArbResult<()> {
    let n = u.int_in_range(1..=4usize)?;
    let t0 = now().unix_ms();
    let root_scope: Vec<String> = u
        .choose(&ROOT_SCOPES)?
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
    let mut links: Vec<LinkSpec> = Vec::with_capacity(n);
    let mut delegator = 0; // alice, a human
    for i in 0..n {
        let delegate = *u.choose(&AGENTS)?;
        let scope = if i == 0 || root_scope != ["*"] {
            root_scope.clone()
        } else {
            vec!["message.*".to_owned()]
        };
        let remaining = (n - 1 - i) as u64;
        links.push(LinkSpec {
            delegator,
            delegate,
            scope,
            created_ms: t0 - u.int_in_range(0..=400_000_000i64)?,
            expires_ms: if u.arbitrary()? {
                Some(t0 + u.int_in_range(0..=400_000_000i64)?)
            } else {
                None
            },
            allow_sub: if i + 1 < n {
                Some(true)
            } else {
                u.arbitrary()?
            },
            max_depth: if u.arbitrary()? {
                Some(remaining + u.int_in_range(0..=3u64)?)
            } else {
                None
            },
            id: u.arbitrary::<bool>()?.then(|| format!("dlg_fuzz_{i}")),
            note: u.arbitrary::<Option<String>>()?,
            legacy: u.ratio(1, 4)?,
            signer: None,
        });
        delegator = delegate;
    }
    let mut world = World::default();
    let mut policy = ChainPolicy::default();
    let mut intent = "message.general@v1";
    let mut sender = PEOPLE[links[n - 1].delegate].address;
    let i = u.choose_index(n)?;
    let mutation = u.int_in_range(0..=12u8)?;
    let mut post: Option<(&str, Value)> = None;
    let mut drop_signature = false;
    let at = |m: &str| format!("from.delegation_chain[{i}]{m}");
    let expected: Option<String> = match mutation {
        1 => {
            // A number: never equal to the generated (string) note.
            post = Some(("note", Value::from(12_345)));
            Some(at(".signature"))
        }
        2 => {
            drop_signature = true;
            Some(at(".signature"))
        }
        3 => {
            let id = format!("dlg_fuzz_{i}");
            links[i].id = Some(id.clone());
            world.revoked_links.insert(id);
            Some(at(""))
        }
        4 => {
            links[i].expires_ms = Some(t0 - u.int_in_range(1..=400_000_000i64)?);
            Some(at(".expires_at"))
        }
        5 if i > 0 => {
            links[i].delegator = 2; // carol, who is not the previous delegate
            Some(at(".delegator"))
        }
        5 => {
            sender = PEOPLE[2].address;
            Some(format!("from.delegation_chain[{}].delegate", n - 1))
        }
        6 => {
            links[0].delegator = 3; // an agent as root
            Some("from.delegation_chain[0].".to_owned())
        }
        7 if i + 1 < n => {
            links[i].allow_sub = Some(false);
            Some(format!("from.delegation_chain[{}]", i + 1))
        }
        8 if i + 1 < n => {
            links[i].max_depth = Some((n - 2 - i) as u64);
            Some(at(".max_sub_delegation_depth"))
        }
        9 => {
            policy.max_chain_length = n - 1;
            Some("from.delegation_chain".to_owned())
        }
        10 if !links[n - 1].scope.iter().any(|s| s == "*" || s == "task.*") => {
            intent = "task.create@v1";
            Some(format!("from.delegation_chain[{}].scope", n - 1))
        }
        11 => {
            links[i].signer = Some(1); // bob signs in alice's (or an agent's) name
            Some(at(".signature"))
        }
        12 => {
            post = Some(("signature_context", Value::from("LOOM-OTHER-SIG-v1")));
            Some(at(".signature_context"))
        }
        _ => None,
    };
    let mut chain: Vec<Value> = links.iter().map(LinkSpec::to_json).collect();
    if let Some((k, v)) = post {
        chain[i][k] = v;
    }
    if drop_signature {
        chain[i].as_object_mut().map(|o| o.remove("signature"));
    }
    let envelope = json!({
        "type": "message",
        "from": {"identity": sender, "type": "agent", "delegation_chain": chain},
        "content": {"structured": {"intent": intent, "parameters": {}}},
    });
    let clock = FixedClock(now());
    let got = verify_delegation_chain(&envelope, &world, &policy, &clock);
    match (&expected, &got) {
        (None, Ok(())) => {
            let strict = ChainPolicy {
                accept_legacy_signatures: false,
                ..policy
            };
            let first_legacy = links.iter().position(|l| l.legacy);
            match (
                first_legacy,
                verify_delegation_chain(&envelope, &world, &strict, &clock),
            ) {
                (None, Ok(())) => {}
                (Some(j), Err(e)) => {
                    assert_eq!(e.field, format!("from.delegation_chain[{j}].signature"))
                }
                (j, r) => panic!("legacy policy: first legacy link {j:?}, got {r:?}"),
            }
        }
        (None, Err(e)) => panic!("a chain valid by construction is refused: {e:?}"),
        (Some(field), Ok(())) => panic!("mutation {mutation} accepted; expected {field}"),
        (Some(field), Err(e)) => {
            check_refusal(e);
            assert!(
                e.field.starts_with(field.as_str()),
                "mutation {mutation}: expected {field}, got {e:?}"
            );
        }
    }
    Ok(())
}
