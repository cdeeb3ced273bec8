//! The `loom-node` binary: serving on a port it picks and names in its start log, graceful
//! shutdown on Ctrl-C (SIGINT), configuration errors, and `audit verify` over a real store
//! whose §25.1 chain is intact, edited and truncated.

use crate::support::TestNode;
use loom_node::Storage;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_loom-node");

/// A fresh directory under the system temp dir, unique per test.
fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("loom-cli-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Starts the binary and reads stderr until the start line; returns the bound address.
fn spawn_node(args: &[&str]) -> (Child, SocketAddr, String) {
    let mut child = Command::new(BIN)
        .args(args)
        .env("LOOM_LOG", "info")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let mut lines = BufReader::new(stderr).lines();
    let start = loop {
        match lines.next() {
            Some(Ok(line)) if line.contains("loom-node listening") => break line,
            Some(Ok(_)) => {}
            other => {
                let _ = child.kill();
                panic!("node exited before its start line: {other:?}");
            }
        }
    };
    // Keep draining stderr so the node never blocks on a full pipe.
    std::thread::spawn(move || for _ in lines {});
    let addr = start
        .split_whitespace()
        .find_map(|w| w.strip_prefix("listen="))
        .unwrap_or_else(|| panic!("no listen= in {start:?}"))
        .parse()
        .unwrap();
    (child, addr, start)
}

/// A minimal HTTP/1.1 GET; returns (status line, body).
fn get(addr: SocketAddr, path: &str) -> (String, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    let (head, body) = out.split_once("\r\n\r\n").unwrap();
    (head.lines().next().unwrap().to_owned(), body.to_owned())
}

/// Waits up to 10 s for the child to exit.
fn wait_exit(child: &mut Child) -> Option<std::process::ExitStatus> {
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if let Some(status) = child.try_wait().unwrap() {
            return Some(status);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    None
}

#[test]
fn serves_discovery_on_a_picked_port_and_stops_on_sigint() {
    let (mut child, addr, start) = spawn_node(&[
        "--memory",
        "--listen",
        "127.0.0.1:0",
        "--domain",
        "example.test",
        "--seed",
        "1",
    ]);
    assert!(
        start.contains("scheme=http") && start.contains("domain=example.test"),
        "{start}"
    );
    let (status, body) = get(addr, "/.well-known/loom.json");
    assert_eq!(status, "HTTP/1.1 200 OK");
    let doc: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(doc["node_id"], "example.test");

    // Ctrl-C: the node stops accepting and exits 0.
    let pid = child.id().to_string();
    let sent = Command::new("kill").args(["-INT", &pid]).status().unwrap();
    assert!(sent.success());
    match wait_exit(&mut child) {
        Some(status) => assert!(status.success(), "exit after SIGINT: {status}"),
        None => {
            let _ = child.kill();
            panic!("node did not stop within 10 s of SIGINT");
        }
    }
}

#[test]
fn self_signed_tls_is_named_in_the_start_line() {
    let (mut child, _addr, start) = spawn_node(&[
        "serve",
        "--memory",
        "--listen",
        "127.0.0.1:0",
        "--domain",
        "example.test",
        "--tls-self-signed",
    ]);
    assert!(start.contains("scheme=https"), "{start}");
    let _ = child.kill();
    let _ = child.wait();
}

fn run(args: &[&str]) -> Output {
    Command::new(BIN).args(args).output().unwrap()
}

#[test]
fn configuration_errors_exit_2_and_name_the_problem() {
    let dir = temp_dir("config");
    let file = dir.join("node.toml");
    std::fs::write(&file, "domain = \"example.test\"\nlisten_port = 1\n").unwrap();
    let out = run(&["--config", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("node.toml") && err.contains("listen_port"),
        "{err}"
    );

    let out = run(&["--memory", "--domain", "not a domain"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a domain"));

    let out = run(&["--memory", "--tls-cert", "/nonexistent/c.pem"]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "clap: --tls-cert needs --tls-key"
    );

    let out = run(&[
        "--memory",
        "--listen",
        "127.0.0.1:0",
        "--tls-cert",
        "/nonexistent/c.pem",
        "--tls-key",
        "/nonexistent/k.pem",
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent/c.pem"));

    // Federation TLS and discovery settings are checked before anything starts.
    let out = run(&["--memory", "--peer-ca", "/nonexistent/ca.pem"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("federation.peer_ca") && err.contains("/nonexistent/ca.pem"),
        "{err}"
    );
    let out = run(&["--memory", "--resolve", "b.test=not-an-address"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("b.test") && err.contains("IP:PORT"), "{err}");
    let out = run(&["--memory", "--dns-server", "dns.example:53"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("federation.dns_server") && err.contains("dns.example:53"),
        "{err}"
    );
    let out = run(&["--memory", "--peer", "b.test=ftp://b.test"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("https://"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// A store with a few audit rows: two identities registered and logged in, in-process.
async fn populated_store(dir: &Path) {
    let node = TestNode::with(|c| c.storage = Storage::Dir(dir.to_owned()));
    node.register("alice", "human", 1).await;
    node.register("bob", "human", 2).await;
}

fn verify(dir: &Path) -> (Option<i32>, String) {
    let out = run(&["audit", "verify", "--data", dir.to_str().unwrap()]);
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&out.stderr));
    (out.status.code(), text)
}

fn audit_rows(dir: &Path) -> i64 {
    let conn = rusqlite::Connection::open(dir.join("loom.db")).unwrap();
    conn.query_row("SELECT COUNT(*) FROM audit_log", [], |r| r.get(0))
        .unwrap()
}

#[tokio::test]
async fn audit_verify_intact_edited_and_deleted() {
    // Intact.
    let dir = temp_dir("audit-edit");
    populated_store(&dir).await;
    let rows = audit_rows(&dir);
    assert!(rows >= 3, "expected several audit rows, found {rows}");
    let (code, text) = verify(&dir);
    assert_eq!(code, Some(0), "{text}");
    assert!(
        text.starts_with(&format!("audit log intact: {rows} rows\n")),
        "{text}"
    );

    // One edited row breaks the chain at that row.
    let conn = rusqlite::Connection::open(dir.join("loom.db")).unwrap();
    conn.execute(
        "UPDATE audit_log SET actor = 'loom://mallory@node.test' WHERE seq = 2",
        [],
    )
    .unwrap();
    drop(conn);
    let (code, text) = verify(&dir);
    assert_eq!(code, Some(1), "{text}");
    assert!(text.starts_with("audit log BROKEN at row 2: "), "{text}");
    assert!(text.contains("edited"), "{text}");

    // A deleted row leaves a gap.
    let dir2 = temp_dir("audit-delete");
    populated_store(&dir2).await;
    let conn = rusqlite::Connection::open(dir2.join("loom.db")).unwrap();
    conn.execute("DELETE FROM audit_log WHERE seq = 2", [])
        .unwrap();
    drop(conn);
    let (code, text) = verify(&dir2);
    assert_eq!(code, Some(1), "{text}");
    assert!(text.starts_with("audit log BROKEN at row 3: "), "{text}");
    assert!(text.contains("deleted"), "{text}");

    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(&dir2);
}

#[test]
fn audit_verify_without_a_store_exits_2() {
    let dir = temp_dir("audit-missing");
    let (code, text) = verify(&dir.join("nothing-here"));
    assert_eq!(code, Some(2), "{text}");
    assert!(text.contains("no store at"), "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}

fn node_keys(dir: &Path) -> Vec<(String, String)> {
    let conn = rusqlite::Connection::open(dir.join("loom.db")).unwrap();
    let mut stmt = conn
        .prepare("SELECT key_id, status FROM node_keys ORDER BY created_at, key_id")
        .unwrap();
    stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

#[tokio::test]
async fn node_key_rotate_retires_the_active_key_and_keeps_it() {
    let dir = temp_dir("node-key-rotate");
    populated_store(&dir).await;
    let before = node_keys(&dir);
    assert_eq!(before.len(), 1, "{before:?}");
    let out = run(&["node-key", "rotate", "--data", dir.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let after = node_keys(&dir);
    assert_eq!(after.len(), 2, "{after:?}");
    assert!(
        after.contains(&(before[0].0.clone(), "retired".into())),
        "{after:?}"
    );
    let new = after
        .iter()
        .find(|(_, s)| s == "active")
        .expect("an active key");
    assert!(text.contains(&new.0), "{text}");
    // The restarted node signs with the new key and publishes the old one as retired.
    let node = TestNode::with(|c| c.storage = Storage::Dir(dir.clone()));
    assert_eq!(node.node.service().node_key().0, new.0);
    let doc = node
        .call("GET", "/.well-known/loom.json", None, None)
        .await
        .body;
    let listed: Vec<(String, String)> = doc["signing_keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| {
            (
                k["key_id"].as_str().unwrap().to_owned(),
                k["status"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert!(
        listed.contains(&(before[0].0.clone(), "retired".into())),
        "{listed:?}"
    );
    drop(node);
    // Without a store: exit 2, nothing created.
    let missing = dir.join("nothing-here");
    let out = run(&["node-key", "rotate", "--data", missing.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(!missing.exists());
    let _ = std::fs::remove_dir_all(&dir);
}

/// One data directory, one writer (issue 36, item 4): a second node on a directory a running
/// node holds exits with an error naming the directory and the lock, and so does a key rotation;
/// once the first node stopped, the directory is free again.
#[test]
fn a_second_node_on_one_data_directory_is_refused() {
    let dir = temp_dir("locked");
    let data = dir.to_str().unwrap();
    let args = [
        "--data",
        data,
        "--listen",
        "127.0.0.1:0",
        "--domain",
        "example.test",
        "--seed",
        "1",
    ];
    let (mut first, _, _) = spawn_node(&args);
    let mut second = Command::new(BIN)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let Some(status) = wait_exit(&mut second) else {
        let _ = second.kill();
        let _ = first.kill();
        panic!("a second node started on a data directory another node holds");
    };
    let mut err = String::new();
    let _ = std::io::Read::read_to_string(&mut second.stderr.take().unwrap(), &mut err);
    assert!(!status.success(), "{status}");
    assert!(
        err.contains("in use by another node") && err.contains("loom.lock"),
        "{err}"
    );
    let rotate = run(&["node-key", "rotate", "--data", data]);
    assert_ne!(rotate.status.code(), Some(0));
    assert!(
        String::from_utf8_lossy(&rotate.stderr).contains("in use by another node"),
        "{rotate:?}"
    );
    let _ = first.kill();
    let _ = first.wait();
    let (mut again, _, _) = spawn_node(&args);
    let _ = again.kill();
    let _ = again.wait();
    let _ = std::fs::remove_dir_all(&dir);
}
