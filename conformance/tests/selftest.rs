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
            (id.starts_with("core.") || id.starts_with("fed."))
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
