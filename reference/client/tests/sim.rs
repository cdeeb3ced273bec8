//! The client as a turmoil host (feature `sim`): the same library code, dialling simulated
//! sockets, registers, logs in and sends to a reference node host. One seed, one byte-identical
//! transcript (DESIGN.md §3).
#![cfg(feature = "sim")]

use loom_client::{Client, EnvelopeFactory, Identity, MessageDraft, SimDial};
use loom_node::sim::SimClock;
use loom_node::{Env, Node, NodeConfig};
use loom_protocol::Timestamp;
use std::sync::{Arc, Mutex};
use std::time::Duration;

const EPOCH: &str = "2026-03-01T12:00:00Z";

fn run(seed: u64) -> String {
    let out: Arc<Mutex<String>> = Arc::default();
    let epoch = Timestamp::parse(EPOCH).unwrap();
    let mut sim = turmoil::Builder::new()
        .rng_seed(seed)
        .simulation_duration(Duration::from_secs(60))
        .build();
    sim.host("node", move || async move {
        let mut config = NodeConfig {
            domain: "node.test".into(),
            ..NodeConfig::default()
        };
        config.rate_limits = loom_node::config::RateLimits::unlimited();
        let node = Node::builder(config, Env::new(Arc::new(SimClock::new(epoch)), seed)).build()?;
        let listener = turmoil::net::TcpListener::bind(("0.0.0.0", 8787)).await?;
        node.serve(listener, None, std::future::pending::<()>())
            .await?;
        Ok(())
    });
    let trace = out.clone();
    sim.client("client", async move {
        let mut c = Client::new("http://node:8787", SimDial)?;
        let log = |t: &loom_client::Transcript| {
            if let Ok(mut s) = trace.lock() {
                s.push_str(&t.to_json().to_string());
                s.push('\n');
            }
        };
        log(&c.node_document().await?.transcript);
        let alice = Identity::from_seed("loom://alice@node.test", &[1; 32])?;
        log(&alice.register(&mut c).await?.transcript);
        let s = alice.login(&mut c).await?;
        c.set_token(Some(s.access_token));
        let mut f = EnvelopeFactory::new(SimClock::new(epoch), seed);
        let env = f.message(
            &alice,
            &MessageDraft {
                to: vec![alice.address().into()],
                text: "note to self".into(),
                ..MessageDraft::default()
            },
        )?;
        let sent = c.send_envelope(&env).await?;
        log(&sent.transcript);
        let id = env["id"].as_str().unwrap_or_default();
        log(&c.get_envelope(id).await?.transcript);
        log(&c.list_threads(&[]).await?.transcript);
        Ok(())
    });
    sim.run().unwrap();
    out.lock().unwrap().clone()
}

#[test]
fn client_runs_in_the_simulator_and_is_deterministic() {
    let a = run(5);
    assert_eq!(a.lines().count(), 5, "{a}");
    for line in a.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        assert!(v["status"].as_u64().unwrap() < 300, "{line}");
    }
    // The node's `Date` header is its injected clock, not the machine's (a wall-clock date
    // made two runs differ whenever they straddled a second).
    assert!(a.contains("01 Mar 2026 12:0"), "{a}");
    assert_eq!(a, run(5), "same seed, same transcripts");
}
