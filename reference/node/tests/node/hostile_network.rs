//! The hostile network of issue 19, on loopback and bounded: sockets that never send a byte,
//! request heads and bodies that trickle in, more connections than the cap, a descriptor
//! limit far below what clients open, and many idle connections. Each test starts a node
//! with small limits (`[connections]`, node README) and asserts the configured behaviour:
//! the timeouts are the behaviour under test, so each check allows the configured time plus
//! a slack and never measures speed.

use crate::support::TestNode;
use std::io::{BufRead, BufReader, Write};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::oneshot;
use tokio::time::timeout;

const BIN: &str = env!("CARGO_BIN_EXE_loom-node");

/// How much later than its configured time a cut-off may come on a busy 2-core machine.
const SLACK: Duration = Duration::from_secs(3);

/// A node on 127.0.0.1:0 with `tweak` applied to its connection limits; dropping the sender
/// stops it.
async fn start(
    tweak: impl FnOnce(&mut loom_node::net::ConnectionLimits),
) -> (SocketAddr, oneshot::Sender<()>) {
    start_config(|c| tweak(&mut c.connections)).await
}

/// [`start`] with any part of the configuration changed.
async fn start_config(
    tweak: impl FnOnce(&mut loom_node::NodeConfig),
) -> (SocketAddr, oneshot::Sender<()>) {
    let t = TestNode::with(tweak);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = oneshot::channel::<()>();
    tokio::spawn(async move {
        t.node
            .serve(listener, None, async {
                let _ = stopped.await;
            })
            .await
            .unwrap();
    });
    (addr, stop)
}

const DISCOVERY: &[u8] = b"GET /.well-known/loom.json HTTP/1.1\r\nHost: node.test\r\n\r\n";

/// Reads until the peer closes; `None` if it is still open after `within`.
async fn closed_within(s: &mut TcpStream, within: Duration) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    match timeout(within, s.read_to_end(&mut out)).await {
        Ok(_) => Some(out),
        Err(_) => None,
    }
}

/// Reads one HTTP/1.1 response with a `Content-Length` body; returns (status, body).
async fn read_response(s: &mut TcpStream) -> (u16, serde_json::Value) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).to_string();
            let len: usize = head
                .lines()
                .find_map(|l| {
                    let (k, v) = l.split_once(':')?;
                    k.eq_ignore_ascii_case("content-length")
                        .then(|| v.trim().parse().ok())?
                })
                .unwrap_or(0);
            while buf.len() < end + 4 + len {
                let n = s.read(&mut chunk).await.unwrap();
                assert!(n > 0, "closed mid-body: {head}");
                buf.extend_from_slice(&chunk[..n]);
            }
            let status = head[9..12].parse().unwrap();
            let body = serde_json::from_slice(&buf[end + 4..end + 4 + len])
                .unwrap_or(serde_json::Value::Null);
            return (status, body);
        }
        let n = timeout(Duration::from_secs(10), s.read(&mut chunk))
            .await
            .expect("no response within 10 s")
            .unwrap();
        assert!(
            n > 0,
            "closed before a response: {:?}",
            String::from_utf8_lossy(&buf)
        );
        buf.extend_from_slice(&chunk[..n]);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_socket_that_sends_nothing_is_closed_after_the_idle_timeout() {
    let idle = Duration::from_millis(400);
    let (addr, _stop) = start(|l| l.idle_timeout_ms = 400).await;

    // Never a byte: closed (EOF, nothing sent) within the idle timeout plus slack.
    let mut silent = TcpStream::connect(addr).await.unwrap();
    let out = closed_within(&mut silent, idle + SLACK).await;
    assert_eq!(out, Some(Vec::new()), "a silent socket must be closed");

    // Keep-alive after one answered request: the idle clock starts again when the response
    // ends, and the idle connection is closed the same way.
    let mut kept = TcpStream::connect(addr).await.unwrap();
    kept.write_all(DISCOVERY).await.unwrap();
    let (status, _) = read_response(&mut kept).await;
    assert_eq!(status, 200);
    assert!(
        closed_within(&mut kept, idle + SLACK).await.is_some(),
        "an idle keep-alive connection must be closed"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_head_that_trickles_in_is_cut_off() {
    let (addr, _stop) = start(|l| {
        l.idle_timeout_ms = 60_000;
        l.header_read_timeout_ms = 400;
    })
    .await;
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(b"GET /.well-known/loom.json HTTP/1.1\r\nHost: no")
        .await
        .unwrap();
    assert!(
        closed_within(&mut s, Duration::from_millis(400) + SLACK)
            .await
            .is_some(),
        "a request head left unfinished must be cut off by the header timeout"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_slower_than_the_minimum_rate_is_answered_408_and_closed() {
    let (addr, _stop) = start(|l| {
        l.body_grace_ms = 300;
        l.min_body_bytes_per_sec = 100;
    })
    .await;
    let head = "POST /v1/auth/challenge HTTP/1.1\r\nHost: node.test\r\n\
                Content-Type: application/json; charset=utf-8\r\nContent-Length: 200\r\n\r\n";

    // A stall after 10 bytes: 408 with the §24.1 body naming the limit, then the close.
    let mut stalled = TcpStream::connect(addr).await.unwrap();
    stalled.write_all(head.as_bytes()).await.unwrap();
    stalled.write_all(b"{\"identity\"").await.unwrap();
    let (status, body) = timeout(
        Duration::from_millis(300) + SLACK,
        read_response(&mut stalled),
    )
    .await
    .expect("a stalled body must be answered within grace + slack");
    assert_eq!(status, 408, "{body}");
    assert_eq!(body["error"]["code"], "RATE_LIMIT_EXCEEDED", "{body}");
    assert_eq!(body["error"]["details"]["field"], "$body", "{body}");
    assert!(
        body["error"]["details"]["reason"]
            .as_str()
            .is_some_and(|r| r.contains("min_body_bytes_per_sec")),
        "{body}"
    );
    assert!(closed_within(&mut stalled, SLACK).await.is_some());

    // 1 byte every 50 ms (20 B/s, the whole body would take 10 s): cut off long before.
    let started = Instant::now();
    let trickle = TcpStream::connect(addr).await.unwrap();
    let (mut rd, mut wr) = trickle.into_split();
    let writer = tokio::spawn(async move {
        if wr.write_all(head.as_bytes()).await.is_err() {
            return;
        }
        for _ in 0..200 {
            if wr.write_all(b" ").await.is_err() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    });
    let mut out = Vec::new();
    let ended = timeout(Duration::from_secs(2) + SLACK, rd.read_to_end(&mut out)).await;
    assert!(ended.is_ok(), "a trickling body must be cut off");
    assert!(started.elapsed() < Duration::from_secs(10));
    // The answer is 408, unless the close raced the client's next byte into a reset.
    let text = String::from_utf8_lossy(&out);
    assert!(out.is_empty() || text.starts_with("HTTP/1.1 408"), "{text}");
    writer.abort();

    // The same request at full speed is answered normally (not 408).
    let mut fast = TcpStream::connect(addr).await.unwrap();
    let json = br#"{"identity":"loom://nobody@node.test","key_id":"k_sign_x"}"#;
    let req = format!(
        "POST /v1/auth/challenge HTTP/1.1\r\nHost: node.test\r\n\
         Content-Type: application/json; charset=utf-8\r\nContent-Length: {}\r\n\r\n",
        json.len()
    );
    fast.write_all(req.as_bytes()).await.unwrap();
    fast.write_all(json).await.unwrap();
    let (status, body) = read_response(&mut fast).await;
    assert_ne!(status, 408, "{body}");
}

/// A JSON `POST /v1/auth/challenge` whose body is `len` bytes: a valid object padded with
/// spaces, which the route refuses on its own terms (never 503).
fn challenge(len: usize) -> Vec<u8> {
    let json = br#"{"identity":"loom://nobody@node.test","key_id":"k_sign_x"}"#;
    let mut body = json.to_vec();
    body.resize(len.max(json.len()), b' ');
    let mut req = format!(
        "POST /v1/auth/challenge HTTP/1.1\r\nHost: node.test\r\n\
         Content-Type: application/json; charset=utf-8\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    req.extend_from_slice(&body);
    req
}

/// Issue 36, item 1: bodies that stall after most of their bytes hold memory only within
/// `limits.max_inflight_body_bytes`; a request that would exceed it gets 503 at once, and
/// the share comes back when the stalled client goes away.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stalled_bodies_cannot_hold_more_than_the_in_flight_budget() {
    let (addr, _stop) = start_config(|c| {
        c.limits.max_inflight_body_bytes = 64 * 1024;
        c.connections.body_grace_ms = 60_000;
        c.connections.body_stall_ms = 60_000;
    })
    .await;
    // Control: the same small request is answered by its route while the budget is free.
    let mut control = TcpStream::connect(addr).await.unwrap();
    control.write_all(&challenge(10 * 1024)).await.unwrap();
    let (status, body) = read_response(&mut control).await;
    assert_ne!(status, 503, "{body}");
    // 60 KiB of a 500 KiB body, then silence.
    let mut stalled = TcpStream::connect(addr).await.unwrap();
    let big = challenge(500 * 1024);
    let head_end = big.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    stalled
        .write_all(&big[..head_end + 60 * 1024])
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut refused = TcpStream::connect(addr).await.unwrap();
    refused.write_all(&challenge(10 * 1024)).await.unwrap();
    let (status, body) = read_response(&mut refused).await;
    assert_eq!(status, 503, "{body}");
    assert_eq!(body["error"]["code"], "RATE_LIMIT_EXCEEDED", "{body}");
    assert_eq!(body["error"]["details"]["field"], "$body", "{body}");
    assert!(
        body["error"]["details"]["reason"]
            .as_str()
            .is_some_and(|r| r.contains("limits.max_inflight_body_bytes")),
        "{body}"
    );
    // The stalled client leaves: its share returns and the request is served again.
    drop(stalled);
    let deadline = Instant::now() + SLACK;
    loop {
        let mut s = TcpStream::connect(addr).await.unwrap();
        s.write_all(&challenge(10 * 1024)).await.unwrap();
        if read_response(&mut s).await.0 != 503 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the stalled body's share was not released"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_beyond_the_cap_get_503_at_once() {
    let (addr, _stop) = start(|l| {
        l.idle_timeout_ms = 60_000;
        l.max_connections = 4;
    })
    .await;
    // Four connections, each proven accepted by an answered request, held open.
    let mut held = Vec::new();
    for _ in 0..4 {
        let mut s = TcpStream::connect(addr).await.unwrap();
        s.write_all(DISCOVERY).await.unwrap();
        assert_eq!(read_response(&mut s).await.0, 200);
        held.push(s);
    }
    // The fifth gets the §24.1 503 (within the refusal timeout) and is closed.
    let mut extra = TcpStream::connect(addr).await.unwrap();
    extra.write_all(DISCOVERY).await.unwrap();
    let (status, body) = timeout(loom_node::net::REFUSAL_TIMEOUT, read_response(&mut extra))
        .await
        .expect("a refused connection is answered within the refusal timeout");
    assert_eq!(status, 503, "{body}");
    assert_eq!(body["error"]["code"], "RATE_LIMIT_EXCEEDED", "{body}");
    assert_eq!(body["error"]["details"]["field"], "$connection", "{body}");
    assert!(closed_within(&mut extra, SLACK).await.is_some());
    // A refused connection that sends nothing is closed after the refusal timeout.
    let mut silent = TcpStream::connect(addr).await.unwrap();
    assert!(
        closed_within(&mut silent, loom_node::net::REFUSAL_TIMEOUT + SLACK)
            .await
            .is_some()
    );

    // One held connection goes away: a new one is served again.
    drop(held.pop());
    let deadline = Instant::now() + SLACK;
    loop {
        let mut s = TcpStream::connect(addr).await.unwrap();
        s.write_all(DISCOVERY).await.unwrap();
        let (status, _) = read_response(&mut s).await;
        if status == 200 {
            break;
        }
        assert!(Instant::now() < deadline, "a freed slot was not reused");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Issue 36: one client address cannot take the whole connection cap — its connections
/// beyond `max_connections_per_ip` get the 503, while another address (127.0.0.2, loopback
/// too) is still served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_address_cannot_take_the_whole_cap() {
    let (addr, _stop) = start(|l| {
        l.idle_timeout_ms = 60_000;
        l.max_connections = 8;
        l.max_connections_per_ip = 3;
    })
    .await;
    let mut held = Vec::new();
    for _ in 0..3 {
        let mut s = TcpStream::connect(addr).await.unwrap();
        s.write_all(DISCOVERY).await.unwrap();
        assert_eq!(read_response(&mut s).await.0, 200);
        held.push(s);
    }
    let mut fourth = TcpStream::connect(addr).await.unwrap();
    fourth.write_all(DISCOVERY).await.unwrap();
    let (status, body) = timeout(loom_node::net::REFUSAL_TIMEOUT, read_response(&mut fourth))
        .await
        .expect("answered within the refusal timeout");
    assert_eq!(status, 503, "{body}");
    assert_eq!(body["error"]["code"], "RATE_LIMIT_EXCEEDED", "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("max_connections_per_ip")),
        "{body}"
    );
    // Another address still gets in while the first holds its three.
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind("127.0.0.2:0".parse().unwrap()).unwrap();
    let mut other = socket.connect(addr).await.unwrap();
    other.write_all(DISCOVERY).await.unwrap();
    assert_eq!(read_response(&mut other).await.0, 200);
    // The first address gets a slot back when one of its connections closes.
    drop(held.pop());
    let deadline = Instant::now() + SLACK;
    loop {
        let mut s = TcpStream::connect(addr).await.unwrap();
        s.write_all(DISCOVERY).await.unwrap();
        if read_response(&mut s).await.0 == 200 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "a freed per-address slot was not reused"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The debug binary with `config` (TOML), optionally under `ulimit -n`; stderr lines are
/// collected.
struct Binary {
    child: Child,
    addr: SocketAddr,
    log: Arc<Mutex<Vec<String>>>,
    dir: std::path::PathBuf,
}

impl Binary {
    fn start(name: &str, config: &str, nofile: Option<u32>) -> Binary {
        let dir = std::env::temp_dir().join(format!("loom-hostile-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let cfg = dir.join("node.toml");
        std::fs::write(&cfg, config).unwrap();
        let mut cmd = match nofile {
            Some(n) => {
                let mut c = Command::new("sh");
                c.arg("-c")
                    .arg(format!("ulimit -n {n} && exec \"$0\" \"$@\""))
                    .arg(BIN);
                c
            }
            None => Command::new(BIN),
        };
        let mut child = cmd
            .arg("--config")
            .arg(&cfg)
            .env("LOOM_LOG", "info")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let mut before = Vec::new();
        let start = loop {
            match lines.next() {
                Some(Ok(line)) if line.contains("loom-node listening") => break line,
                Some(Ok(line)) => before.push(line),
                other => {
                    let _ = child.kill();
                    panic!("node exited before its start line: {other:?}");
                }
            }
        };
        let addr = start
            .split_whitespace()
            .find_map(|w| w.strip_prefix("listen="))
            .unwrap()
            .parse()
            .unwrap();
        let log = Arc::new(Mutex::new(before));
        let sink = log.clone();
        std::thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
                sink.lock().unwrap().push(line);
            }
        });
        Binary {
            child,
            addr,
            log,
            dir,
        }
    }

    fn rss_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap()
    }

    /// One discovery request on a fresh connection; the status, or None if it failed.
    fn discovery(&self) -> Option<u16> {
        let mut s = std::net::TcpStream::connect(self.addr).ok()?;
        s.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
        s.write_all(b"GET /.well-known/loom.json HTTP/1.1\r\nHost: n\r\nConnection: close\r\n\r\n")
            .ok()?;
        let mut out = String::new();
        std::io::Read::read_to_string(&mut s, &mut out).ok()?;
        out.get(9..12)?.parse().ok()
    }
}

impl Drop for Binary {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

const BASE_CONFIG: &str = "domain = \"node.test\"\nlisten = \"127.0.0.1:0\"\nstorage = \"memory\"\n\
                           [rate_limits]\nenvelopes_per_identity = 0\nauth_per_ip = 0\n\
                           thread_reads_per_identity = 0\nfederation_per_node = 0\n";

#[test]
fn descriptor_exhaustion_is_survived_with_bounded_log_output() {
    // 64 descriptors, a cap above them (so accept itself runs out), a short idle timeout.
    let config =
        format!("{BASE_CONFIG}[connections]\nidle_timeout_ms = 1000\nmax_connections = 10000\n");
    let node = Binary::start("emfile", &config, Some(64));
    assert_eq!(node.discovery(), Some(200));

    // 200 idle sockets: far more than the node can hold.
    let sockets: Vec<_> = (0..200)
        .map(|_| std::net::TcpStream::connect(node.addr).unwrap())
        .collect();
    // The node cycles through them (idle timeout) and answers again afterwards.
    let deadline = Instant::now() + Duration::from_secs(20);
    std::thread::sleep(Duration::from_secs(3));
    drop(sockets);
    loop {
        if node.discovery() == Some(200) {
            break;
        }
        assert!(Instant::now() < deadline, "the node did not recover");
        std::thread::sleep(Duration::from_millis(100));
    }
    let log = node.log.lock().unwrap().clone();
    let failures: Vec<_> = log
        .iter()
        .filter(|l| l.contains("accept failed") || l.contains("accepting again"))
        .collect();
    assert!(
        log.iter().any(|l| l.contains("accept failed")),
        "the test must exhaust the descriptors; log: {log:?}"
    );
    // The cap (10,000) above the descriptor limit (64) was announced at start-up.
    assert!(
        log.iter().any(|l| l.contains("WARN")
            && l.contains("max_connections = 10000 exceeds the descriptor limit 64")),
        "a start-up warning names the cap and the limit; log: {log:?}"
    );
    // At most one report per 10 s: a handful of lines for a few seconds of exhaustion.
    assert!(
        failures.len() <= 6,
        "{} accept log lines: {failures:?}",
        failures.len()
    );
    assert!(log.len() <= 20, "{} log lines: {log:?}", log.len());
}

#[test]
fn the_descriptor_warning_compares_the_cap_with_the_limit() {
    use loom_node::net::descriptor_warning;
    assert!(descriptor_warning(4096, 1024).is_some());
    assert!(descriptor_warning(4096, 4096 + 63).is_some());
    assert!(descriptor_warning(4096, 4096 + 64).is_none());
    assert!(
        descriptor_warning(0, 16).is_none(),
        "no cap, nothing to compare"
    );
}

#[test]
fn rss_stays_bounded_under_many_idle_connections() {
    const N: usize = 400;
    /// Stated bound per idle keep-alive connection (node README).
    const MAX_KIB_PER_CONNECTION: u64 = 48;
    let config = format!("{BASE_CONFIG}[connections]\nidle_timeout_ms = 60000\n");
    let node = Binary::start("rss", &config, None);
    for _ in 0..20 {
        assert_eq!(node.discovery(), Some(200));
    }
    let before = node.rss_kib();
    let mut held = Vec::new();
    for _ in 0..N {
        let mut s = std::net::TcpStream::connect(node.addr).unwrap();
        s.write_all(DISCOVERY).unwrap();
        held.push(s);
    }
    // Every connection answered (so each was accepted and served), then left idle.
    for s in &mut held {
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let mut buf = [0u8; 4096];
        let n = std::io::Read::read(s, &mut buf).unwrap();
        assert!(buf[..n].starts_with(b"HTTP/1.1 200"));
    }
    let after = node.rss_kib();
    let per = after.saturating_sub(before) * 1024 / N as u64 / 1024;
    eprintln!("RSS {before} KiB -> {after} KiB with {N} idle connections ({per} KiB each)");
    assert!(
        after.saturating_sub(before) <= MAX_KIB_PER_CONNECTION * N as u64,
        "RSS grew {before} -> {after} KiB for {N} connections"
    );
}
