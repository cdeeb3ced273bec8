//! The connection timers of `net` (issue 19: first-byte/idle timeout, request-body minimum
//! rate, write timeout) proven on turmoil's simulated clock: each scenario measures, in
//! simulated time, when the node cut the connection off and checks it against the
//! configured limit — no wall-clock sleeps, so the test takes milliseconds.
#![cfg(feature = "sim")]

use axum::body::Bytes;
use http_body_util::Empty;
use hyper_util::rt::{TokioExecutor, TokioIo};
use loom_node::net::ConnectionLimits;
use loom_node::sim::SimClock;
use loom_node::{Env, Node, NodeConfig};
use loom_protocol::Timestamp;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::time::Instant;

const PORT: u16 = 8787;

/// Limits with every timer far apart, so a measured close time names one timer.
fn limits() -> ConnectionLimits {
    ConnectionLimits {
        idle_timeout_ms: 5_000,
        header_read_timeout_ms: 0,
        tls_handshake_timeout_ms: 30_000,
        body_grace_ms: 2_000,
        min_body_bytes_per_sec: 100,
        body_stall_ms: 0,
        body_deadline_ms: 0,
        max_connections: 16,
        max_connections_per_ip: 0,
        write_timeout_ms: 3_000,
    }
}

/// Runs `client` against a node with `limits` in a fresh simulation; returns what the
/// client reported.
fn simulate<F, Fut>(limits: ConnectionLimits, client: F) -> String
where
    F: FnOnce() -> Fut + 'static,
    Fut: std::future::Future<Output = Result<String, Box<dyn std::error::Error>>> + 'static,
{
    let out = Arc::new(Mutex::new(String::new()));
    let mut sim = turmoil::Builder::new()
        .rng_seed(19)
        .simulation_duration(Duration::from_secs(300))
        // A fixed 1 ms per message, so what the client measures is the node's timer ± 2 ms.
        .min_message_latency(Duration::from_millis(1))
        .max_message_latency(Duration::from_millis(1))
        .build();
    sim.host("node", move || {
        let limits = limits.clone();
        async move {
            let mut config = NodeConfig {
                domain: "node.test".into(),
                connections: limits,
                ..NodeConfig::default()
            };
            config.rate_limits = loom_node::config::RateLimits::unlimited();
            let epoch = Timestamp::parse("2026-03-01T12:00:00Z").unwrap();
            let env = Env::new(Arc::new(SimClock::new(epoch)), 19);
            let node = Node::builder(config, env).build()?;
            let listener = turmoil::net::TcpListener::bind(("0.0.0.0", PORT)).await?;
            node.serve(listener, None, std::future::pending::<()>())
                .await?;
            Ok(())
        }
    });
    let report = out.clone();
    sim.client("client", async move {
        let r = client().await?;
        *report.lock().unwrap() = r;
        Ok(())
    });
    sim.run().unwrap();
    out.lock().unwrap().clone()
}

/// Milliseconds since `t`, in simulated time.
fn since(t: Instant) -> u128 {
    t.elapsed().as_millis()
}

/// `ms` is `timer` as the client sees it: the node's timer started a message latency before
/// the client's clock and its close arrives one after (1 ms each), so allow a few ms.
fn about(ms: u128, timer: u128) -> bool {
    (timer - 20..timer + 50).contains(&ms)
}

#[test]
fn a_socket_that_never_sends_a_byte_is_closed_at_the_idle_timeout() {
    let r = simulate(limits(), || async {
        let mut s = turmoil::net::TcpStream::connect(("node", PORT)).await?;
        let t = Instant::now();
        let mut buf = [0u8; 64];
        let n = s.read(&mut buf).await.unwrap_or(0);
        Ok(format!("{n} {}", since(t)))
    });
    let (n, ms) = r.split_once(' ').unwrap();
    assert_eq!(n, "0", "closed without an answer");
    let ms: u128 = ms.parse().unwrap();
    assert!(about(ms, 5_000), "closed after {ms} ms, idle timeout 5000");
}

#[test]
fn an_idle_keep_alive_connection_is_closed_the_idle_timeout_after_its_last_response() {
    let r = simulate(limits(), || async {
        let mut s = turmoil::net::TcpStream::connect(("node", PORT)).await?;
        // A first request 4 s in (inside the idle window), answered, then silence.
        tokio::time::sleep(Duration::from_secs(4)).await;
        s.write_all(b"GET /.well-known/loom.json HTTP/1.1\r\nhost: node.test\r\n\r\n")
            .await?;
        let mut buf = vec![0u8; 64 * 1024];
        let n = s.read(&mut buf).await?;
        let head = String::from_utf8_lossy(&buf[..n]).to_string();
        let t = Instant::now();
        let mut rest = 0;
        loop {
            match s.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(k) => rest += k,
            }
        }
        Ok(format!(
            "{}|{rest}|{}",
            head.lines().next().unwrap_or(""),
            since(t)
        ))
    });
    let parts: Vec<&str> = r.split('|').collect();
    assert_eq!(parts[0], "HTTP/1.1 200 OK", "{r}");
    let ms: u128 = parts[2].parse().unwrap();
    assert!(about(ms, 5_000), "closed {ms} ms after the response");
}

#[test]
fn a_body_slower_than_the_minimum_rate_is_cut_off_with_408() {
    let r = simulate(limits(), || async {
        let s = turmoil::net::TcpStream::connect(("node", PORT)).await?;
        let (mut rd, mut wr) = tokio::io::split(s);
        wr.write_all(
            b"POST /v1/auth/challenge HTTP/1.1\r\nhost: node.test\r\n\
              content-type: application/json\r\ncontent-length: 1000\r\n\r\n{",
        )
        .await?;
        let t = Instant::now();
        // One byte a second: far below 100 bytes/s once the 2 s grace is over.
        let dribble = tokio::spawn(async move {
            for _ in 0..60 {
                tokio::time::sleep(Duration::from_secs(1)).await;
                if wr.write_all(b" ").await.is_err() {
                    break;
                }
            }
        });
        let mut buf = vec![0u8; 16 * 1024];
        let n = rd.read(&mut buf).await?;
        let at = since(t);
        dribble.abort();
        let text = String::from_utf8_lossy(&buf[..n]).to_string();
        Ok(format!("{at}|{text}"))
    });
    let (ms, text) = r.split_once('|').unwrap();
    let ms: u128 = ms.parse().unwrap();
    assert!(text.starts_with("HTTP/1.1 408"), "{text}");
    assert!(text.contains("min_body_bytes_per_sec"), "{text}");
    // Deadline: grace 2 s + received / 100 bytes/s (a few bytes: ~0.03 s).
    assert!((2_000..2_100).contains(&ms), "cut off after {ms} ms");
}

/// Issue 36, item 1: a client that sends a large part of a body fast and then goes silent
/// used to be held until the average rate caught up (here 2 s + 60,000 B / 100 B/s = 602 s,
/// for 1 MB at the default 1,024 B/s: 17 minutes); the stall timer cuts it off 3 s after its
/// last byte, and the body deadline bounds a body that keeps trickling.
#[test]
fn a_body_that_stalls_after_a_fast_start_is_cut_off_at_the_stall_timer() {
    for (stall, deadline, expect) in [(3_000, 0, 3_000), (0, 4_000, 4_000)] {
        let with = ConnectionLimits {
            body_stall_ms: stall,
            body_deadline_ms: deadline,
            ..limits()
        };
        let r = simulate(with, move || async move {
            let s = turmoil::net::TcpStream::connect(("node", PORT)).await?;
            let (mut rd, mut wr) = tokio::io::split(s);
            let mut head = b"POST /v1/auth/challenge HTTP/1.1\r\nhost: node.test\r\n\
                  content-type: application/json\r\ncontent-length: 200000\r\n\r\n"
                .to_vec();
            head.extend(std::iter::repeat_n(b' ', 60_000));
            wr.write_all(&head).await?;
            let t = Instant::now();
            // With a deadline only: keep the rate up (200 B/s) so only the deadline fires.
            let trickle = tokio::spawn(async move {
                if stall == 0 {
                    for _ in 0..600 {
                        tokio::time::sleep(Duration::from_millis(500)).await;
                        if wr.write_all(&[b' '; 100]).await.is_err() {
                            break;
                        }
                    }
                }
                std::future::pending::<()>().await;
            });
            let mut buf = vec![0u8; 16 * 1024];
            let n = rd.read(&mut buf).await?;
            let at = since(t);
            trickle.abort();
            Ok(format!("{at}|{}", String::from_utf8_lossy(&buf[..n])))
        });
        let (ms, text) = r.split_once('|').unwrap();
        let ms: u128 = ms.parse().unwrap();
        assert!(text.starts_with("HTTP/1.1 408"), "{text}");
        assert!(text.contains("connections.body_stall_ms"), "{text}");
        assert!(
            about(ms, expect),
            "stall {stall}, deadline {deadline}: cut off after {ms} ms"
        );
    }
}

/// Issue 36, item 1: a delivery whose headers alone fail (here: no LOOM-HTTP-SIG-1 headers)
/// is refused before its body is read — the client announced 20 MB and sent none, and the
/// answer comes at once instead of after the body timers.
#[test]
fn a_delivery_without_its_signature_headers_is_refused_before_its_body_is_read() {
    let r = simulate(limits(), || async {
        let mut s = turmoil::net::TcpStream::connect(("node", PORT)).await?;
        s.write_all(
            b"POST /v1/federation/deliver HTTP/1.1\r\nhost: node.test\r\n\
              content-type: application/json\r\ncontent-length: 20000000\r\n\r\n",
        )
        .await?;
        let t = Instant::now();
        let mut buf = vec![0u8; 16 * 1024];
        let n = s.read(&mut buf).await?;
        Ok(format!(
            "{}|{}",
            since(t),
            String::from_utf8_lossy(&buf[..n])
        ))
    });
    let (ms, text) = r.split_once('|').unwrap();
    let ms: u128 = ms.parse().unwrap();
    assert!(text.starts_with("HTTP/1.1 401"), "{text}");
    assert!(text.contains("X-LOOM-"), "{text}");
    assert!(ms < 100, "answered after {ms} ms");
}

#[test]
fn a_client_that_never_reads_its_response_is_cut_off_at_the_write_timeout() {
    let r = simulate(limits(), || async {
        let s = turmoil::net::TcpStream::connect(("node", PORT)).await?;
        // HTTP/2 with a zero stream window: the node can send the response head but not one
        // byte of its body until the client reads — and this client never does.
        let (mut sender, conn) = hyper::client::conn::http2::Builder::new(TokioExecutor::new())
            .initial_stream_window_size(0)
            .handshake::<_, Empty<Bytes>>(TokioIo::new(s))
            .await?;
        let conn = tokio::spawn(conn);
        let req = hyper::Request::get("http://node.test/.well-known/loom.json")
            .body(Empty::<Bytes>::new())?;
        let resp = sender.send_request(req).await?;
        let status = resp.status().as_u16();
        let t = Instant::now();
        let _unread = resp; // held, never polled
        let ended = conn.await;
        Ok(format!("{status}|{}|{}", ended.is_ok(), since(t)))
    });
    let parts: Vec<&str> = r.split('|').collect();
    assert_eq!(parts[0], "200", "{r}");
    let ms: u128 = parts[2].parse().unwrap();
    // Not the idle timeout (5 s; a request in progress stops that clock): the write one.
    assert!(about(ms, 3_000), "closed after {ms} ms, write timeout 3000");
}

#[test]
fn with_the_write_timeout_off_an_unread_response_holds_until_the_client_gives_up() {
    let off = ConnectionLimits {
        write_timeout_ms: 0,
        ..limits()
    };
    let r = simulate(off, || async {
        let s = turmoil::net::TcpStream::connect(("node", PORT)).await?;
        let (mut sender, conn) = hyper::client::conn::http2::Builder::new(TokioExecutor::new())
            .initial_stream_window_size(0)
            .handshake::<_, Empty<Bytes>>(TokioIo::new(s))
            .await?;
        let conn = tokio::spawn(conn);
        let req = hyper::Request::get("http://node.test/.well-known/loom.json")
            .body(Empty::<Bytes>::new())?;
        let resp = sender.send_request(req).await?;
        let _unread = resp;
        let still_open = tokio::time::timeout(Duration::from_secs(60), conn)
            .await
            .is_err();
        Ok(format!("{still_open}"))
    });
    assert_eq!(
        r, "true",
        "the control: nothing else closes an unread response"
    );
}
