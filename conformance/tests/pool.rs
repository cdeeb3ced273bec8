//! `pool` provisioning (conformance/README.md "Target profiles"): the harness logs in the
//! identities the operator created beforehand and registers none of its own; a pool too small
//! for a case is a setup `error` that says what to add.

use loom_client::{Client, Identity};
use loom_conformance::profile::Profile;
use loom_conformance::runner::{RunConfig, run_all};
use loom_conformance::target::{
    EMBEDDED_DOMAIN, Transport, embedded_config, probe, spec_rules, start_embedded,
};
use loom_conformance::{Case, Outcome, catalogue};
use loom_protocol::clock::{Clock, SystemClock};
use std::fmt::Write;
use std::sync::Arc;

/// Registers `humans` humans and `agents` agents (delegated by the first human) out of band,
/// as an operator would, and returns the profile listing them.
async fn provision(url: &str, humans: u8, agents: u8) -> Profile {
    let mut c = Client::tcp(url).expect("client");
    let mut toml = String::from("[provisioning]\nmode = \"pool\"\n");
    let mut first: Option<Identity> = None;
    for (kind, n) in [("human", humans), ("agent", agents)] {
        for i in 0..n {
            let seed = [if kind == "human" { 10 + i } else { 100 + i }; 32];
            let address = format!("loom://pool-{kind}-{i}@{EMBEDDED_DOMAIN}");
            let mut id = Identity::from_seed(&address, &seed)
                .expect("identity")
                .with_type(kind);
            if kind == "agent" {
                let boss = first.as_ref().expect("a human delegates");
                id = id.clone().with_members(boss.delegate_agent(
                    id.address(),
                    &["*".to_owned()],
                    "2099-01-01T00:00:00Z",
                ));
            }
            id.register(&mut c).await.expect("registered");
            writeln!(
                toml,
                "[[provisioning.identity]]\naddress = \"{address}\"\ntype = \"{kind}\"\nkey_id = \"{}\"\nseed_hex = \"{}\"",
                id.key_id(),
                hex::encode(seed)
            )
            .expect("write");
            if first.is_none() {
                first = Some(id);
            }
        }
    }
    Profile::parse(&toml).expect("profile parses")
}

fn cases(prefixes: &[&str]) -> Vec<&'static Case> {
    catalogue::all()
        .into_iter()
        .filter(|c| prefixes.iter().any(|p| c.id.starts_with(p)))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pool_profile_logs_in_its_identities_and_registers_nothing() {
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let mut config = embedded_config();
    // Every case shares the pool, so a per-identity envelope limit would throttle the run.
    config.rate_limits.envelopes_per_identity = 0;
    let node = start_embedded(spec_rules(), clock.clone(), 7, config, Transport::Plain)
        .await
        .expect("node starts");
    let profile = provision(&node.url, 6, 12).await;
    let info = Arc::new(probe(&node.url, &profile, false).await.expect("probe"));
    // Everything but rate limits (lifted above for the shared identities) and search (a
    // shared participant's name matches every case's threads).
    let selected: Vec<&'static Case> = cases(&["core."])
        .into_iter()
        .filter(|c| !c.id.starts_with("core.ratelimit.") && !c.id.starts_with("core.search."))
        .collect();
    let cfg = RunConfig {
        jobs: 4,
        ..RunConfig::default()
    };
    let results = run_all(&selected, info, &cfg, clock, &|_| {}).await;
    let mut passed = 0;
    let mut skipped = 0;
    for r in &results {
        match r.outcome {
            Outcome::Pass => passed += 1,
            Outcome::Skipped => skipped += 1,
            other => panic!("{}: {other:?}: {:?}", r.id, r.message),
        }
        for t in &r.transcripts {
            assert!(
                !(t.method == "POST" && t.path.starts_with("/v1/identity")),
                "{} registered an identity ({} {}) although the profile provides a pool",
                r.id,
                t.method,
                t.path
            );
        }
    }
    assert!(passed >= 150, "only {passed} cases passed");
    assert!(skipped >= 1, "registration cases are skipped under a pool");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pool_too_small_for_a_case_is_a_setup_error_naming_the_fix() {
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let node = start_embedded(
        spec_rules(),
        clock.clone(),
        8,
        embedded_config(),
        Transport::Plain,
    )
    .await
    .expect("node starts");
    let profile = provision(&node.url, 1, 0).await;
    let info = Arc::new(probe(&node.url, &profile, false).await.expect("probe"));
    // Sending needs a sender and a recipient: two humans.
    let selected = cases(&["core.envelope.sig.tampered-body"]);
    assert!(!selected.is_empty(), "the case exists");
    let results = run_all(&selected, info, &RunConfig::default(), clock, &|_| {}).await;
    let r = &results[0];
    assert_eq!(r.outcome, Outcome::Error, "{:?}", r.message);
    let msg = r.message.clone().unwrap_or_default();
    assert!(
        msg.contains("identities of type human") && msg.contains("[[provisioning.identity]]"),
        "{msg}"
    );
}
