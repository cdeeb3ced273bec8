//! The README's federation walkthrough, run as written (ports picked free instead of
//! 8787/8788): two `loom-node` processes (`a.test`, `b.test`, `--peer` each), the `loom`
//! CLI of `reference/client` registering alice and bob, a message from alice reaching bob,
//! bob's reply coming back in the same thread, and a message sent while b.test is down
//! delivered after it restarts (v1.1 §15.6).

use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

const NODE: &str = env!("CARGO_BIN_EXE_loom-node");

/// The `loom` binary of `loom-client`, next to `loom-node` (built on demand when this
/// package's tests run alone).
fn loom_bin() -> PathBuf {
    let bin = Path::new(NODE).with_file_name(format!("loom{}", std::env::consts::EXE_SUFFIX));
    if !bin.exists() {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let st = Command::new(cargo)
            .args(["build", "-p", "loom-client", "--bin", "loom"])
            .status()
            .unwrap();
        assert!(st.success(), "building the loom CLI failed");
    }
    bin
}

fn loom(args: &[&str]) -> String {
    let out: Output = Command::new(loom_bin()).args(args).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "loom {args:?}: exit {:?}\nstdout: {stdout}\nstderr: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// A free loopback port below Linux's ephemeral range (32768–60999), so that the source port
/// of some other test's outgoing connection cannot take it between this check and the child
/// process binding it (`bind(0)` would hand out a port from inside that range).
/// `taken` lists ports already handed out (a released port checks as free again).
fn free_port(taken: &[u16]) -> u16 {
    let start = 20_000 + (std::process::id() % 10_000) as u16;
    (start..32_000)
        .chain(20_000..start)
        .find(|p| !taken.contains(p) && TcpListener::bind(("127.0.0.1", *p)).is_ok())
        .expect("a free loopback port in 20000..32000")
}

struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `loom-node --data DIR --domain D --listen 127.0.0.1:P --peer OTHER=URL --allow-private-http`.
fn node(dir: &Path, domain: &str, port: u16, peer: &str, peer_port: u16) -> Proc {
    let mut child = Command::new(NODE)
        .args([
            "--data",
            dir.to_str().unwrap(),
            "--domain",
            domain,
            "--listen",
            &format!("127.0.0.1:{port}"),
            "--peer",
            &format!("{peer}=http://127.0.0.1:{peer_port}"),
            "--allow-private-http",
            "--federation-retry-base-ms",
            "500",
        ])
        .env("LOOM_LOG", "info")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    loop {
        let line = lines.next().expect("start line").unwrap();
        if line.contains("listening on") {
            break;
        }
    }
    std::thread::spawn(move || for _ in lines {});
    Proc(child)
}

/// Polls `f` for up to 30 s.
fn eventually(what: &str, mut f: impl FnMut() -> bool) {
    let start = Instant::now();
    while !f() {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "timed out: {what}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn envelope_texts(session: &str, thread: &str) -> Vec<String> {
    let out = loom(&["get", "--session", session, thread]);
    let v: Value = serde_json::from_str(&out).unwrap_or(Value::Null);
    let list = if v["envelopes"].is_array() {
        &v["envelopes"]
    } else {
        &v["envelopes"]["envelopes"]
    };
    list.as_array()
        .into_iter()
        .flatten()
        .filter_map(|e| e["content"]["human"]["text"].as_str().map(str::to_owned))
        .collect()
}

/// `sent ENV in thread THR (event_seq N)` → (ENV, THR).
fn sent(out: &str) -> (String, String) {
    let w: Vec<&str> = out.split_whitespace().collect();
    (w[1].to_owned(), w[4].to_owned())
}

#[test]
fn two_nodes_federate_as_the_readme_shows() {
    let root = std::env::temp_dir().join(format!("loom-walk-fed-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(&root).unwrap();
    let p = |n: &str| root.join(n).to_str().unwrap().to_owned();
    let pa = free_port(&[]);
    let pb = free_port(&[pa]);
    let (na, nb) = (
        format!("http://127.0.0.1:{pa}"),
        format!("http://127.0.0.1:{pb}"),
    );
    let _a = node(&root.join("a-data"), "a.test", pa, "b.test", pb);
    let b = node(&root.join("b-data"), "b.test", pb, "a.test", pa);

    loom(&["keygen", "--out", &p("alice.key")]);
    loom(&["keygen", "--out", &p("bob.key")]);
    loom(&[
        "register",
        "--node",
        &na,
        "--identity",
        "loom://alice@a.test",
        "--key",
        &p("alice.key"),
    ]);
    loom(&[
        "register",
        "--node",
        &nb,
        "--identity",
        "loom://bob@b.test",
        "--key",
        &p("bob.key"),
    ]);
    loom(&[
        "login",
        "--node",
        &na,
        "--identity",
        "loom://alice@a.test",
        "--key",
        &p("alice.key"),
        "--session",
        &p("alice.session"),
    ]);
    loom(&[
        "login",
        "--node",
        &nb,
        "--identity",
        "loom://bob@b.test",
        "--key",
        &p("bob.key"),
        "--session",
        &p("bob.session"),
    ]);

    // alice@a.test → bob@b.test.
    let (env, thread) = sent(&loom(&[
        "send",
        "--session",
        &p("alice.session"),
        "--to",
        "loom://bob@b.test",
        "--text",
        "hi bob",
    ]));
    eventually("bob sees alice's message", || {
        loom(&["threads", "--session", &p("bob.session")]).contains(&thread)
    });
    assert_eq!(envelope_texts(&p("bob.session"), &thread), ["hi bob"]);

    // bob answers in the same thread.
    loom(&[
        "send",
        "--session",
        &p("bob.session"),
        "--to",
        "loom://alice@a.test",
        "--text",
        "hi alice",
        "--thread",
        &thread,
        "--parent",
        &env,
    ]);
    eventually("alice sees bob's reply", || {
        envelope_texts(&p("alice.session"), &thread).len() == 2
    });
    assert_eq!(
        envelope_texts(&p("alice.session"), &thread),
        ["hi bob", "hi alice"]
    );

    // b.test goes down; alice writes; b.test comes back and gets it.
    drop(b);
    let (_, later) = sent(&loom(&[
        "send",
        "--session",
        &p("alice.session"),
        "--to",
        "loom://bob@b.test",
        "--text",
        "while you were away",
    ]));
    std::thread::sleep(Duration::from_millis(1_500));
    let _b = node(&root.join("b-data"), "b.test", pb, "a.test", pa);
    eventually("bob gets the queued message after the restart", || {
        loom(&["threads", "--session", &p("bob.session")]).contains(&later)
    });
    assert_eq!(
        envelope_texts(&p("bob.session"), &later),
        ["while you were away"]
    );
    let _ = std::fs::remove_dir_all(&root);
}
