//! The mutation self-test over the whole catalogue: every case passes against the clean
//! reference node, and every MUST case fails against the node with its quirk (issue:
//! "a conformance test that cannot fail is a defect").

use loom_conformance::runner::RunConfig;
use loom_conformance::selftest::selftest;
use loom_conformance::{Case, catalogue};
use loom_protocol::clock::SystemClock;
use std::sync::Arc;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_case_passes_clean_and_every_must_case_fails_under_its_quirk() {
    let cases: Vec<&'static Case> = catalogue::all();
    let cfg = RunConfig {
        jobs: 8,
        ..RunConfig::default()
    };
    let st = selftest(&cases, &cfg, Arc::new(SystemClock))
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
}

#[test]
fn ids_are_unique_stable_strings() {
    let mut ids: Vec<&str> = catalogue::all().iter().map(|c| c.id).collect();
    for id in &ids {
        assert!(
            id.starts_with("core.")
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
