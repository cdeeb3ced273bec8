//! The quirks the conformance self-test cannot prove (DESIGN.md §4): no case of the harness
//! can reach them over the wire, so each row below shows the quirk turning off exactly its
//! check — refused by a correct node with the §24.2 code, accepted by a node with that one
//! quirk. Every other quirk is proven by the self-test (`loom-conformance`'s
//! `tests/selftest.rs` requires each quirk to be named by a case or listed, with its reason,
//! as proven here or in `federation_quirks.rs`).

use crate::support::{Resp, TestNode};
use loom_node::{Quirk, Quirks};

fn node(q: Option<Quirk>) -> TestNode {
    let quirks = q.map_or_else(Quirks::none, |q| Quirks::none().with(q));
    TestNode::with_quirks(quirks, |_| {})
}

/// Runs the violating request of `q` against `n`; returns its response.
async fn violate(q: Quirk, n: &TestNode) -> Resp {
    let alice = n.register("alice", "human", 1).await;
    match q {
        // §14.2: access tokens expire after 1 h; the harness cannot move a target's clock.
        Quirk::AcceptExpiredToken => {
            n.clock.advance_ms(3_600_001);
            n.get("/v1/identity/me", &alice.token).await
        }
        _ => unreachable!("{q:?} has no row: the self-test proves it"),
    }
}

/// (quirk, status and code of a correct node, status with the quirk).
const REFUSALS: &[(Quirk, u16, &str, u16)] =
    &[(Quirk::AcceptExpiredToken, 401, "SIGNATURE_INVALID", 200)];

#[tokio::test]
async fn each_quirk_turns_off_exactly_its_check() {
    for &(q, status, code, quirked) in REFUSALS {
        let correct = violate(q, &node(None)).await;
        assert_eq!(
            correct.status.as_u16(),
            status,
            "{q:?} on a correct node: {}",
            correct.body
        );
        assert_eq!(correct.body["error"]["code"], code, "{q:?}");
        let broken = violate(q, &node(Some(q))).await;
        assert_eq!(
            broken.status.as_u16(),
            quirked,
            "{q:?} with the quirk: {}",
            broken.body
        );
    }
}

/// The README's quirk table documents every quirk (and nothing else in it is a quirk name
/// the node does not know).
#[test]
fn every_quirk_has_a_readme_row() {
    let readme = include_str!("../../README.md");
    let section = readme
        .split("## Quirks (deliberate defects for the conformance self-test)")
        .nth(1)
        .and_then(|s| s.split("\n## ").next())
        .expect("the README has a quirk section");
    for q in Quirk::ALL {
        assert!(
            section.contains(&format!("\n| `{}` |", q.name())),
            "{q:?} has no row in the README's quirk table"
        );
    }
    for row in section.lines().filter_map(|l| l.strip_prefix("| `")) {
        let name = row.split('`').next().unwrap_or("");
        assert!(
            Quirk::parse(name).is_some(),
            "README row for unknown quirk {name:?}"
        );
    }
}
