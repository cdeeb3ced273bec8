//! Federation TLS inside turmoil (DESIGN.md §3, v1.1 §14.1): the federation client's TLS
//! 1.3 runs on top of the `Dial` seam, so it works on turmoil's simulated sockets
//! (`SimDial`) exactly as on tokio's. A node serving TLS as the turmoil host `b.test` gives
//! its node document (§15.2) to a client trusting the test CA, and a client trusting nothing
//! gets a transport error naming the host and the TLS reason.
#![cfg(feature = "sim")]

use crate::support::fed::{TestCa, temp_dir};
use loom_node::outbound::{HttpClient, SimDial, TransportError};
use loom_node::{Env, Node, NodeConfig};
use loom_protocol::Timestamp;
use loom_protocol::clock::ManualClock;
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;

#[test]
fn the_federation_client_speaks_tls_over_turmoil_sockets() {
    let dir = temp_dir("sim-tls");
    std::fs::create_dir_all(&dir).unwrap();
    let ca = TestCa::new("LOOM sim CA");
    let ca_pem = dir.join("ca.pem");
    ca.write_pem(&ca_pem);
    let acceptor = ca.acceptor("b.test");

    let mut sim = turmoil::Builder::new()
        .rng_seed(7)
        .simulation_duration(Duration::from_secs(60))
        .build();
    sim.host("b.test", move || {
        let acceptor = acceptor.clone();
        async move {
            let config = NodeConfig {
                domain: "b.test".into(),
                public_url: Some("https://b.test".into()),
                ..NodeConfig::default()
            };
            let clock = ManualClock::new(Timestamp::parse(crate::support::START).unwrap());
            let node = Node::builder(config, Env::new(Arc::new(clock), 7)).build()?;
            let listener = turmoil::net::TcpListener::bind(("0.0.0.0", 443)).await?;
            node.serve(listener, Some(acceptor), std::future::pending::<()>())
                .await?;
            Ok(())
        }
    });
    sim.client("a.test", async move {
        let timeout = Duration::from_secs(5);
        let trusting = HttpClient::new(Arc::new(SimDial), timeout).with_tls(Arc::new(
            loom_node::tls::client_config(false, &[ca_pem]).unwrap(),
        ));
        let reply = trusting
            .request(
                "GET",
                "https://b.test/.well-known/loom.json",
                &[],
                Vec::new(),
            )
            .await
            .unwrap();
        assert_eq!(reply.status, 200);
        let doc: Value = serde_json::from_slice(&reply.body).unwrap();
        assert_eq!(doc["domain"], "b.test");

        let distrustful = HttpClient::new(Arc::new(SimDial), timeout)
            .with_tls(Arc::new(loom_node::tls::client_config(false, &[]).unwrap()));
        let e = distrustful
            .request(
                "GET",
                "https://b.test/.well-known/loom.json",
                &[],
                Vec::new(),
            )
            .await
            .unwrap_err();
        let TransportError::Unreachable(why) = e else {
            panic!("a TLS failure is a transport failure, got {e:?}");
        };
        assert!(
            why.contains("TLS handshake with b.test") && why.contains("UnknownIssuer"),
            "{why}"
        );
        Ok(())
    });
    sim.run().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}
