//! The README's "your node over TLS" flow with `loom-node` as a separate process (issue 15:
//! the fake peer "reachable by the target" with its own TLS): the harness writes the run's CA
//! file before it probes the target, the node is started after it with that file as its
//! `peer_ca` and the peer domains resolved to the harness address, and every Level 2 case
//! passes — deliveries to the peers and fetches of their documents over verified TLS.

mod support;

use serde_json::Value;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use support::{Background, CONFORMANCE, repo, scratch, start_node};

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

#[test]
fn an_external_node_trusting_the_run_ca_passes_the_federation_cases_over_tls() {
    let dir = scratch("external-tls-peer");
    let peer_port = free_port();
    let node_port = free_port();
    let ca = dir.join("peer-ca.pem");
    let report = dir.join("fed.json");
    let profile = dir.join("fed-tls.toml");
    std::fs::write(
        &profile,
        format!(
            "[target]\nreadiness_timeout_secs = 60\n[federation]\ntls = true\nharness_address = \"https://127.0.0.1:{peer_port}\"\nlisten = \"127.0.0.1:{peer_port}\"\nca_file = {:?}\npeers = 160\n[federation.block_peer]\nmode = \"static\"\ndomain = \"blocked-{{n}}.test\"\ncount = 4\n[federation.timers]\nttl_ms = 5000\nrefetch_min_interval_ms = 200\n",
            ca.display().to_string()
        ),
    )
    .expect("profile written");

    // The harness first: it writes the CA file, then waits for the target.
    let log = std::fs::File::create(dir.join("harness.log")).expect("log");
    let mut harness = Background(
        Command::new(CONFORMANCE)
            .args([
                "run",
                "--quiet",
                "--target",
                &format!("http://127.0.0.1:{node_port}"),
                "--profile",
                &profile.display().to_string(),
                "--level",
                "2",
                "--only",
                "fed.*",
                "--report",
                &format!("json={}", report.display()),
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("the harness starts"),
    );
    let begun = Instant::now();
    while !ca.exists() {
        assert!(
            begun.elapsed() < Duration::from_secs(30),
            "the harness wrote no CA file"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(100));

    // The node, as the README shows: certify.toml plus the peers over https.
    let mut config =
        std::fs::read_to_string(repo().join("reference/node/certify.toml")).expect("certify.toml");
    let names: Vec<String> = (0..160)
        .map(|n| format!("peer-{n}.test"))
        .chain((0..4).map(|n| format!("blocked-{n}.test")))
        .collect();
    config.push_str(&format!(
        "\n[federation]\npeer_ca = [{:?}]\nnative_roots = false\nblocklist = [\"blocked-0.test\", \"blocked-1.test\", \"blocked-2.test\", \"blocked-3.test\"]\nttl_secs = 5\nretry_base_ms = 200\nretry_max_ms = 1600\nrefetch_min_interval_ms = 200\n[federation.peers]\n",
        ca.display().to_string()
    ));
    for n in &names {
        config.push_str(&format!("{n:?} = \"https://{n}:{peer_port}\"\n"));
    }
    config.push_str("[federation.resolve]\n");
    for n in &names {
        config.push_str(&format!("{n:?} = \"127.0.0.1:{peer_port}\"\n"));
    }
    let node_toml = dir.join("node.toml");
    std::fs::write(&node_toml, config).expect("node config written");
    let (_node, _url) = start_node(
        &dir,
        &[
            "--config".into(),
            node_toml.display().to_string(),
            "--listen".into(),
            format!("127.0.0.1:{node_port}"),
        ],
    );

    let begun = Instant::now();
    let status = loop {
        if let Some(s) = harness.0.try_wait().expect("waits") {
            break s;
        }
        assert!(
            begun.elapsed() < Duration::from_secs(180),
            "the harness did not finish"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    let logged = std::fs::read_to_string(dir.join("harness.log")).unwrap_or_default();
    let v: Value = serde_json::from_str(
        &std::fs::read_to_string(&report)
            .unwrap_or_else(|e| panic!("no report ({e}); harness exited {status}: {logged}")),
    )
    .expect("the report is JSON");
    let cases = v["cases"].as_array().expect("cases");
    assert!(cases.len() >= 30, "{} cases: {logged}", cases.len());
    for c in cases {
        assert_eq!(
            c["outcome"], "pass",
            "{}: {}\n{logged}",
            c["id"], c["message"]
        );
    }
    // A chosen ca_file is left for the target.
    assert!(ca.exists());
    let _ = std::fs::remove_dir_all(&dir);
}
