//! Crash safety of the group-committing writer (issue 14): the `loom-node` binary is killed
//! with SIGKILL while envelopes stream in over several connections; every envelope that was
//! answered 201 must be in the store after a restart on the same data directory, and the
//! §25.1 audit chain must verify (`loom-node audit verify`).

use crate::support::TestNode;
use loom_node::Storage;
use loom_node::store::{Store, envelopes};
use loom_protocol::Timestamp;
use loom_protocol::id::EnvelopeId;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_loom-node");

/// One `POST /v1/envelopes` over its own connection; the status, or `None` when the node
/// went away before answering.
fn post(addr: SocketAddr, token: &str, body: &[u8]) -> Option<u16> {
    let mut s = TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    let head = format!(
        "POST /v1/envelopes HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    s.write_all(head.as_bytes()).ok()?;
    s.write_all(body).ok()?;
    let mut out = String::new();
    s.read_to_string(&mut out).ok()?;
    out.split_whitespace().nth(1)?.parse().ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_acknowledged_envelope_survives_a_kill() {
    let dir = std::env::temp_dir().join(format!("loom-crash-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    // Identities and tokens, registered in-process on the durable store. The clock is far
    // ahead so the access tokens are still valid for the binary's real clock.
    let (alice, bob, bodies) = {
        let n = TestNode::with(|c| c.storage = Storage::Dir(dir.clone()));
        n.clock
            .set(Timestamp::parse("2100-01-01T00:00:00Z").unwrap());
        let alice = n.register("alice", "human", 1).await;
        let bob = n.register("bob", "human", 2).await;
        let mut bodies = Vec::new();
        for t in 0..40 {
            let thread = n.thread_id();
            let mut parent: Option<String> = None;
            for i in 0..10 {
                let (from, to) = if i % 2 == 0 {
                    (&alice, &bob)
                } else {
                    (&bob, &alice)
                };
                let env = from.sign(from.message(
                    &n,
                    &thread,
                    parent.as_deref(),
                    &[to],
                    &format!("t{t} m{i}"),
                ));
                parent = env["id"].as_str().map(str::to_owned);
                bodies.push((i % 2 == 0, env));
            }
        }
        (alice, bob, bodies)
    };
    let config = dir.join("node.toml");
    std::fs::write(
        &config,
        format!(
            "domain = \"node.test\"\nlisten = \"127.0.0.1:0\"\nstorage = {{ dir = {:?} }}\n[rate_limits]\nenvelopes_per_identity = 0\nauth_per_ip = 0\nthread_reads_per_identity = 0\nfederation_per_node = 0\n",
            dir.display().to_string()
        ),
    )
    .unwrap();
    let mut child = Command::new(BIN)
        .args(["--config", config.to_str().unwrap()])
        .env("LOOM_LOG", "info")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let addr: SocketAddr = loop {
        let line = lines.next().expect("start line").unwrap();
        if let Some(a) = line
            .split_whitespace()
            .find_map(|w| w.strip_prefix("listen="))
        {
            break a.parse().unwrap();
        }
    };
    std::thread::spawn(move || for _ in lines {});

    // Eight senders, each posting its share of the threads in order; the kill lands while
    // they are still sending.
    let acked: Arc<Mutex<Vec<String>>> = Arc::default();
    let bodies = Arc::new(bodies);
    let mut senders = Vec::new();
    for w in 0..8 {
        let (acked, bodies) = (acked.clone(), bodies.clone());
        let (ta, tb) = (alice.token.clone(), bob.token.clone());
        senders.push(std::thread::spawn(move || {
            for (n, (from_alice, env)) in bodies.iter().enumerate() {
                if (n / 10) % 8 != w {
                    continue;
                }
                let token = if *from_alice { &ta } else { &tb };
                match post(addr, token, env.to_string().as_bytes()) {
                    Some(201) => acked
                        .lock()
                        .unwrap()
                        .push(env["id"].as_str().unwrap().to_owned()),
                    Some(other) => panic!("unexpected status {other}"),
                    None => return,
                }
            }
        }));
    }
    while acked.lock().unwrap().len() < 100 {
        std::thread::sleep(Duration::from_millis(2));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    for s in senders {
        s.join().unwrap();
    }
    let acked = acked.lock().unwrap().clone();
    assert!(
        acked.len() >= 100 && acked.len() < bodies.len(),
        "{} acknowledged",
        acked.len()
    );

    // Restart on the same directory (recovers the WAL) and look for every acknowledged id.
    let store = Store::open(&Storage::Dir(dir.clone())).unwrap();
    let conn = store.conn();
    let missing: Vec<&String> = acked
        .iter()
        .filter(|id| !envelopes::exists(&conn, &EnvelopeId::parse(id).unwrap()).unwrap())
        .collect();
    assert!(missing.is_empty(), "acknowledged but lost: {missing:?}");
    drop(conn);
    drop(store);
    let verify = Command::new(BIN)
        .args(["audit", "verify", "--data", dir.to_str().unwrap()])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&verify.stdout);
    assert!(verify.status.success(), "{text}");
    assert!(text.starts_with("audit log intact"), "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}
