//! The self-test over the whole catalogue: every case passes against the clean reference
//! node, every MUST case fails against the node with its quirk ("a conformance test that
//! cannot fail is a defect"), and every case passes against the node under each legal variant
//! ("a case that fails a correct node is a defect", issue 13).

use loom_conformance::outcome::Outcome;
use loom_conformance::runner::RunConfig;
use loom_conformance::selftest::selftest;
use loom_conformance::{Case, Strength, catalogue, variants};
use loom_protocol::clock::SystemClock;
use std::sync::Arc;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutation_and_legal_variant_coverage_are_complete() {
    // Levels 1 and 2 (the embedded nodes federate with the fake peers).
    let cases: Vec<&'static Case> = catalogue::all().into_iter().collect();
    let cfg = RunConfig {
        jobs: 8,
        seed: 13,
        ..RunConfig::default()
    };
    let st = selftest(&cases, &cfg, Arc::new(SystemClock), &variants::all())
        .await
        .expect("embedded nodes start");
    let problems = st.problems();
    assert!(
        problems.is_empty(),
        "{} problems:\n{}",
        problems.len(),
        problems.join("\n")
    );
    let (proven, must) = st.coverage(&cases);
    assert_eq!(proven, must, "mutation coverage {proven}/{must}");
    let (clean, total) = st.variant_coverage();
    assert_eq!(clean, total, "legal-variant coverage {clean}/{total}");
    assert!(total >= 25, "{total} legal variants");
    let (ok, runs) = st.variant_case_runs();
    assert_eq!((ok, runs), (cases.len() * total, cases.len() * total));
    // Issue 29: no negative case passes under a refuse-all mutant of its area, and in those
    // areas every credited refusal has a passing control beside it.
    assert_eq!(st.vacuous_passes(), vec![], "vacuous passes");
    for r in &st.refuse_all {
        for (id, outcome) in &r.cases {
            assert!(
                // Not a pass (a SHOULD case that notices is non-strict).
                matches!(
                    outcome,
                    Outcome::Error
                        | Outcome::Unsupported
                        | Outcome::Fail
                        | Outcome::NonStrict
                        | Outcome::Informational
                ),
                "{id} under {}: {outcome}",
                r.mutant
            );
        }
    }
    let judged: Vec<&str> = st
        .refuse_all
        .iter()
        .flat_map(|r| r.cases.iter().map(|(id, _)| *id))
        .collect();
    assert!(judged.len() >= 20, "{judged:?}");
    let uncontrolled = st.uncontrolled();
    let in_areas: Vec<&&str> = uncontrolled
        .iter()
        .filter(|id| judged.contains(id))
        .collect();
    assert!(
        in_areas.is_empty(),
        "refusals without a control: {in_areas:?}"
    );
    let (controlled, negative) = st.negative_controls(&cases);
    assert!(
        negative >= controlled && controlled >= judged.len(),
        "{controlled}/{negative}"
    );
}

#[test]
fn ids_are_unique_stable_strings() {
    let mut ids: Vec<&str> = catalogue::all().iter().map(|c| c.id).collect();
    for id in &ids {
        assert!(
            (id.starts_with("core.")
                || id.starts_with("fed.")
                || id.starts_with("bridge.")
                || id.starts_with("full."))
                && id
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"._-".contains(&b)),
            "{id}"
        );
        assert!(!catalogue::RETIRED.contains(id), "{id} is retired");
    }
    let n = ids.len();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), n, "duplicate case IDs");
}

#[test]
fn variants_name_their_sentence_and_depart_only_from_should_cases() {
    let mut names: Vec<&str> = variants::all().iter().map(|v| v.name).collect();
    let n = names.len();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), n, "duplicate variant names");
    for v in variants::all() {
        assert!(
            v.section.starts_with("v1.1 §") || v.section.starts_with("DESIGN.md §"),
            "{}: {}",
            v.name,
            v.section
        );
        assert!(
            !v.quote.trim().is_empty() && !v.reading.trim().is_empty(),
            "{}",
            v.name
        );
        for d in v.departs {
            let c = catalogue::find(d).unwrap_or_else(|| panic!("{}: no case {d}", v.name));
            assert_eq!(
                c.strength,
                Strength::Should,
                "{}: departs from {d}, a {} case: a legal variant never breaks a MUST",
                v.name,
                c.strength
            );
        }
    }
}

/// The quirks no conformance case names, each with where it is proven instead and why the
/// harness cannot reach it over the wire. Every other quirk is proven by the self-test
/// above, so the node's own tests need no row for it (issue 31).
/// The quirks no conformance case names, each with the test that proves it instead and why
/// no case does. Every other quirk is proven by the self-test above, so the node's own tests
/// need no row for it (issue 31). "No case yet" marks a Level 2 rule the harness does not
/// check over the wire.
const PROVEN_ELSEWHERE: &[(&str, &str, &str)] = &[
    (
        "accept-expired-token",
        "reference/node/tests/node/quirks.rs",
        "access tokens live 1 h; the harness cannot move a target's clock",
    ),
    (
        "drop-outbox-on-restart",
        "reference/node/tests/node/federation_quirks.rs",
        "needs a restart of the target (also simulator/tests/sweeps.rs)",
    ),
    (
        "forget-last-envelope-on-restart",
        "reference/node/tests/node/federation_quirks.rs",
        "needs a restart of the target (also simulator/tests/sweeps.rs)",
    ),
    (
        "prune-audit-on-restart",
        "reference/node/tests/node/federation_quirks.rs",
        "needs a restart of the target (also simulator/tests/sweeps.rs)",
    ),
    (
        "ack-before-sync",
        "reference/node/tests/node/federation_quirks.rs",
        "needs a power loss under the target's disk (simulator/tests/sweeps.rs, storage-faults)",
    ),
    (
        "full-key-node-signature",
        "reference/node/tests/node/federation_quirks.rs",
        "breaks interop with the existing node's registration form (DESIGN.md §9); the harness detects the target's form instead of failing either",
    ),
    (
        "top-level-receipt",
        "reference/node/tests/node/federation_quirks.rs",
        "an interop form of the existing node (DESIGN.md §9); the harness reads both",
    ),
    (
        "duplicate-rejection-is-failure",
        "reference/node/tests/node/federation_quirks.rs",
        "how a sender reads a peer's receipt (DESIGN.md §9): the harness's fake peer would have to answer ENVELOPE_DUPLICATE and watch for receipt.failed; no case yet",
    ),
    (
        "one-delegation-reading",
        "reference/node/tests/node/federation_quirks.rs",
        "§13.3.1 is silent; the harness detects the target's reading instead of failing either",
    ),
    (
        "no-refetch-on-signature-failure",
        "reference/node/tests/node/federation_quirks.rs",
        "needs a fake peer that rotates its key under the same id mid-run; no case yet",
    ),
    (
        "ignore-sender-node-mismatch",
        "reference/node/tests/node/federation_quirks.rs",
        "no case yet: a wrapper whose sender_node differs from X-LOOM-Node",
    ),
    (
        "accept-inactive-node-key",
        "reference/node/tests/node/federation_quirks.rs",
        "no case yet: a delivery signed with a retired node key",
    ),
    (
        "ignore-wrapper-limit",
        "reference/node/tests/node/federation_quirks.rs",
        "no case yet: a wrapper of 101 envelopes",
    ),
    (
        "reject-identical-redelivery",
        "reference/node/tests/node/federation_quirks.rs",
        "fed.inbound.redelivery names store-redelivered-twice; one mutant per case",
    ),
    (
        "unsigned-receipt",
        "reference/node/tests/node/federation_quirks.rs",
        "fed.inbound.receipt names no-receipt; one mutant per case",
    ),
    (
        "drop-origin-event-seq",
        "reference/node/tests/node/federation_quirks.rs",
        "no case yet: meta.origin_event_seq kept on delivery (§11.6)",
    ),
    (
        "orphan-delivered-replies",
        "reference/node/tests/node/federation_quirks.rs",
        "no case yet: a delivered reply keeps its parent (also simulator/tests/sweeps.rs)",
    ),
    (
        "ignore-delivered-lock",
        "reference/node/tests/node/federation_quirks.rs",
        "no case yet: a delivered thread.lock@v1 is applied (also simulator/tests/sweeps.rs)",
    ),
];

#[test]
fn every_quirk_is_proven_by_a_case_or_a_named_test() {
    use loom_conformance::case::Mutant;
    let named: std::collections::BTreeSet<&str> = catalogue::all()
        .into_iter()
        .filter_map(|c| match c.mutant {
            Mutant::Quirk(q) => Some(q),
            Mutant::NotApplicable(_) => None,
        })
        .collect();
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut unproven = Vec::new();
    for q in loom_node::Quirk::ALL {
        let name = q.name();
        if named.contains(name.as_str()) {
            assert!(
                !PROVEN_ELSEWHERE.iter().any(|(n, ..)| *n == name),
                "{name} is named by a case; drop it from PROVEN_ELSEWHERE"
            );
            continue;
        }
        match PROVEN_ELSEWHERE.iter().find(|(n, ..)| *n == name) {
            Some((_, file, _)) => {
                let text = std::fs::read_to_string(root.join(file)).expect(file);
                assert!(
                    text.contains(&format!("Quirk::{q:?}")),
                    "{file} does not exercise {name}"
                );
            }
            None => unproven.push(name),
        }
    }
    assert!(
        unproven.is_empty(),
        "quirks no case and no named test proves: {unproven:?}"
    );
}
