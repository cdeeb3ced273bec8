//! The WebSocket stream (v1.1 §17, v1.0 §16) over real upgrades: authentication, subscribe,
//! every event with `event_id` and `cursor`, resume without a gap, ack, ping/pong and the
//! heartbeat on the injected clock, presence visibility (§17.5), typing with its TTL, the
//! per-connection rate class (§14.3), bad frames explained, a slow consumer disconnected.
//!
//! The node serves over in-memory duplex pipes (`Pipes`), so a test chooses how much a pipe
//! buffers: a client that stops reading fills it in kilobytes, not megabytes.

use crate::support::{Ident, TestNode};
use loom_client::Dial;
use loom_client::ws::{self, Frame, TokenIn, WsClient};
use serde_json::{Value, json};
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::DuplexStream;
use tokio::sync::mpsc;

const WAIT: Duration = Duration::from_secs(5);
const QUIET: Duration = Duration::from_millis(300);

/// Connections as duplex pipes of `capacity` bytes.
#[derive(Debug, Clone)]
struct Pipes {
    tx: mpsc::UnboundedSender<DuplexStream>,
    capacity: usize,
}

struct PipeListener(mpsc::UnboundedReceiver<DuplexStream>);

impl loom_node::net::Accept for PipeListener {
    type Io = DuplexStream;

    async fn accept(&mut self) -> io::Result<(DuplexStream, SocketAddr)> {
        match self.0.recv().await {
            Some(s) => Ok((s, SocketAddr::from(([127, 0, 0, 1], 40000)))),
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        Ok(SocketAddr::from(([127, 0, 0, 1], 80)))
    }
}

impl Dial for Pipes {
    type Io = DuplexStream;

    async fn dial(&self, _host: &str, _port: u16) -> io::Result<DuplexStream> {
        let (client, server) = tokio::io::duplex(self.capacity);
        self.tx
            .send(server)
            .map_err(|_| io::Error::other("node stopped"))?;
        Ok(client)
    }
}

/// A node serving over pipes.
fn serve(n: TestNode, capacity: usize) -> (Arc<TestNode>, Pipes) {
    let (tx, rx) = mpsc::unbounded_channel();
    let n = Arc::new(n);
    let serving = n.clone();
    tokio::spawn(async move {
        let _ = serving
            .node
            .serve(PipeListener(rx), None, std::future::pending())
            .await;
    });
    (n, Pipes { tx, capacity })
}

async fn open(p: &Pipes, who: &Ident) -> WsClient {
    ws::connect(
        p,
        "http://node.test",
        None,
        "/ws",
        &who.token,
        TokenIn::Query,
        WAIT,
    )
    .await
    .unwrap_or_else(|e| panic!("connect: {e}"))
}

async fn json_frame(c: &mut WsClient) -> Value {
    match c.next(WAIT).await {
        Some(Frame::Json(v)) => v,
        other => panic!("expected a JSON frame, got {other:?}"),
    }
}

/// The next frame whose `event` is `kind`, skipping others.
async fn event(c: &mut WsClient, kind: &str) -> Value {
    match c
        .until(
            WAIT,
            |f| matches!(f, Frame::Json(v) if v["event"] == kind),
            |_| {},
        )
        .await
    {
        Some(Frame::Json(v)) => v,
        other => panic!("no {kind} event: {other:?}"),
    }
}

/// Every `event` type that arrives within `QUIET`.
async fn quiet_kinds(c: &mut WsClient) -> Vec<String> {
    let mut kinds = Vec::new();
    while let Some(Frame::Json(v)) = c.next(QUIET).await {
        kinds.push(v["event"].as_str().unwrap_or("?").to_owned());
    }
    kinds
}

async fn subscribe(c: &mut WsClient, since: Option<&str>) -> Value {
    let mut m = json!({"action": "subscribe", "channels": [{"type": "all_threads"}]});
    if let Some(s) = since {
        m["since"] = s.into();
    }
    c.send(&m).await.unwrap();
    event(c, "subscribed").await
}

#[tokio::test]
async fn upgrade_needs_a_token_in_the_query_or_header() {
    let n = TestNode::new();
    let alice = n.register("alice", "human", 1).await;
    let (_n, p) = serve(n, 1 << 16);
    for (token, how) in [
        ("", TokenIn::None),
        ("at_not-a-token", TokenIn::Query),
        ("at_not-a-token", TokenIn::Header),
    ] {
        match ws::connect(&p, "http://node.test", None, "/ws", token, how, WAIT).await {
            Err(ws::Refused::Status(401, body)) => {
                assert!(body.contains("SIGNATURE_INVALID"), "{body}");
                assert!(!body.contains("not-a-token"), "the token is echoed: {body}");
            }
            other => panic!("{how:?}: {other:?}"),
        }
    }
    for how in [TokenIn::Query, TokenIn::Header] {
        let mut c = ws::connect(&p, "http://node.test", None, "/ws", &alice.token, how, WAIT)
            .await
            .unwrap();
        c.send(&json!({"action": "ping", "ts": 7})).await.unwrap();
        assert_eq!(json_frame(&mut c).await, json!({"event": "pong", "ts": 7}));
    }
}

#[tokio::test]
async fn events_arrive_with_id_and_cursor_and_resume_has_no_gap() {
    let n = TestNode::new();
    let alice = n.register("alice", "human", 1).await;
    let bob = n.register("bob", "human", 2).await;
    let carol = n.register("carol", "human", 3).await;
    let (n, p) = serve(n, 1 << 16);
    let mut b = open(&p, &bob).await;
    let mut c = open(&p, &carol).await;
    subscribe(&mut b, None).await;
    subscribe(&mut c, None).await;

    let t = n.thread_id();
    let root = alice.message(&n, &t, None, &[&bob], "one");
    alice.send(&n, root.clone()).await.expect(201);
    let e = event(&mut b, "envelope.new").await;
    assert!(e["event_id"].as_str().unwrap().starts_with("evt_"), "{e}");
    assert!(e["cursor"].is_string(), "{e}");
    assert_eq!(e["envelope_id"], root["id"]);
    assert_eq!(e["thread_id"], t.as_str());
    assert_eq!(
        quiet_kinds(&mut c).await,
        Vec::<String>::new(),
        "carol reads nothing of it"
    );

    // Bob goes away; three more envelopes; he resumes from the last event he saw.
    b.close().await;
    let mut sent = Vec::new();
    for i in 0..3 {
        let m = alice.message(&n, &t, root["id"].as_str(), &[&bob], &format!("m{i}"));
        alice.send(&n, m.clone()).await.expect(201);
        sent.push(m["id"].clone());
    }
    let mut b = open(&p, &bob).await;
    let sub = subscribe(&mut b, e["event_id"].as_str()).await;
    assert_eq!(sub["cursor"], e["cursor"], "{sub}");
    let mut got = Vec::new();
    let mut cursors = Vec::new();
    for _ in 0..3 {
        let f = event(&mut b, "envelope.new").await;
        got.push(f["envelope_id"].clone());
        cursors.push(f["cursor"].as_str().unwrap().parse::<i64>().unwrap());
    }
    assert_eq!(got, sent);
    assert!(cursors.windows(2).all(|w| w[0] < w[1]), "{cursors:?}");
    // Resuming by cursor gives the same events again (at-least-once).
    let mut again = open(&p, &bob).await;
    subscribe(&mut again, e["cursor"].as_str()).await;
    assert_eq!(
        event(&mut again, "envelope.new").await["envelope_id"],
        sent[0]
    );

    // ack: a later subscription without `since` resumes after the acknowledged point.
    b.send(&json!({"action": "ack", "cursor": cursors[0].to_string()}))
        .await
        .unwrap();
    assert_eq!(
        event(&mut b, "acked").await["cursor"],
        cursors[0].to_string()
    );
    let mut fresh = open(&p, &bob).await;
    subscribe(&mut fresh, None).await;
    assert_eq!(
        event(&mut fresh, "envelope.new").await["envelope_id"],
        sent[1]
    );

    // A resume point the caller cannot see is refused, naming `since`.
    let mut c2 = open(&p, &carol).await;
    c2.send(&json!({"action": "subscribe", "channels": [{"type": "all_threads"}], "since": e["event_id"]}))
        .await
        .unwrap();
    let err = event(&mut c2, "error").await;
    assert_eq!(err["error"]["details"]["field"], "since", "{err}");
}

#[tokio::test]
async fn thread_channels_membership_and_retraction_events() {
    let n = TestNode::new();
    let alice = n.register("alice", "human", 1).await;
    let bob = n.register("bob", "human", 2).await;
    let carol = n.register("carol", "human", 3).await;
    let (n, p) = serve(n, 1 << 16);
    let t = n.thread_id();
    let other = n.thread_id();
    let root = alice.message(&n, &t, None, &[&bob], "one");
    alice.send(&n, root.clone()).await.expect(201);
    let mut b = open(&p, &bob).await;
    b.send(&json!({"action": "subscribe", "channels": [{"type": "thread", "id": t}]}))
        .await
        .unwrap();
    event(&mut b, "subscribed").await;
    alice
        .send(&n, alice.message(&n, &other, None, &[&bob], "elsewhere"))
        .await
        .expect(201);
    alice
        .send(
            &n,
            alice.op(
                &n,
                &t,
                "thread.add_participant@v1",
                json!({"identity": carol.address}),
            ),
        )
        .await
        .expect(201);
    let joined = event(&mut b, "participant.joined").await;
    assert_eq!(joined["data"]["identity"], carol.address.as_str());
    alice
        .send(
            &n,
            alice.op(
                &n,
                &t,
                "thread.remove_participant@v1",
                json!({"identity": carol.address}),
            ),
        )
        .await
        .expect(201);
    assert_eq!(
        event(&mut b, "participant.left").await["data"]["identity"],
        carol.address.as_str()
    );
    n.call(
        "DELETE",
        &format!("/v1/envelopes/{}", root["id"].as_str().unwrap()),
        Some(&alice.token),
        None,
    )
    .await
    .expect(200);
    assert_eq!(
        event(&mut b, "envelope.retracted").await["thread_id"],
        t.as_str()
    );
    let rest = quiet_kinds(&mut b).await;
    assert!(
        !rest.contains(&"envelope.new".to_owned()),
        "the other thread leaked: {rest:?}"
    );
}

#[tokio::test]
async fn presence_is_seen_only_by_co_participants() {
    let n = TestNode::new();
    let alice = n.register("alice", "human", 1).await;
    let bob = n.register("bob", "human", 2).await;
    let carol = n.register("carol", "human", 3).await;
    let (n, p) = serve(n, 1 << 16);
    let t = n.thread_id();
    alice
        .send(&n, alice.message(&n, &t, None, &[&bob], "hi"))
        .await
        .expect(201);
    let mut a = open(&p, &alice).await;
    let mut b = open(&p, &bob).await;
    let mut c = open(&p, &carol).await;
    for x in [&mut b, &mut c] {
        subscribe(x, None).await;
    }
    a.send(
        &json!({"action": "presence.update", "data": {"status": "busy", "custom_status": "Q1"}}),
    )
    .await
    .unwrap();
    let seen = event(&mut b, "presence.update").await;
    assert_eq!(seen["data"]["identity"], alice.address.as_str());
    assert_eq!(seen["data"]["status"], "busy");
    assert!(seen["event_id"].is_string() && seen["cursor"].is_string());
    assert_eq!(
        quiet_kinds(&mut c).await,
        Vec::<String>::new(),
        "carol shares no thread with alice"
    );
    // Bad presence is explained and stored nowhere.
    a.send(&json!({"action": "presence.update", "data": {"status": "asleep"}}))
        .await
        .unwrap();
    let err = event(&mut a, "error").await;
    assert_eq!(err["error"]["details"]["field"], "data.status", "{err}");
    assert_eq!(quiet_kinds(&mut b).await, Vec::<String>::new());
}

#[tokio::test]
async fn typing_reaches_participants_and_expires_on_the_injected_clock() {
    let n = TestNode::with(|c| {
        c.realtime.typing_ttl_ms = 10_000;
        c.realtime.heartbeat_check_ms = 20;
    });
    let alice = n.register("alice", "human", 1).await;
    let bob = n.register("bob", "human", 2).await;
    let carol = n.register("carol", "human", 3).await;
    let (n, p) = serve(n, 1 << 16);
    let t = n.thread_id();
    alice
        .send(&n, alice.message(&n, &t, None, &[&bob], "hi"))
        .await
        .expect(201);
    let mut a = open(&p, &alice).await;
    let mut b = open(&p, &bob).await;
    subscribe(&mut b, None).await;
    a.send(&json!({"action": "typing.start", "thread_id": t}))
        .await
        .unwrap();
    let start = event(&mut b, "typing.start").await;
    assert_eq!(start["data"]["identity"], alice.address.as_str());
    assert_eq!(start["thread_id"], t.as_str());
    a.send(&json!({"action": "typing.stop", "thread_id": t}))
        .await
        .unwrap();
    assert_eq!(
        event(&mut b, "typing.stop").await["data"]["reason"],
        "stopped"
    );

    a.send(&json!({"action": "typing.start", "thread_id": t}))
        .await
        .unwrap();
    event(&mut b, "typing.start").await;
    assert_eq!(
        quiet_kinds(&mut b).await,
        Vec::<String>::new(),
        "no expiry before the TTL"
    );
    n.clock.advance_ms(10_001);
    assert_eq!(
        event(&mut b, "typing.stop").await["data"]["reason"],
        "expired"
    );

    // A non-participant may not type in the thread.
    let mut c = open(&p, &carol).await;
    c.send(&json!({"action": "typing.start", "thread_id": t}))
        .await
        .unwrap();
    let err = event(&mut c, "error").await;
    assert_eq!(err["error"]["code"], "THREAD_NOT_FOUND", "{err}");
    assert_eq!(err["action"], "typing.start");
}

#[tokio::test]
async fn a_silent_client_is_closed_after_the_ping_timeout() {
    let n = TestNode::with(|c| {
        c.realtime.ping_timeout_secs = 90;
        c.realtime.heartbeat_check_ms = 20;
    });
    let alice = n.register("alice", "human", 1).await;
    let (n, p) = serve(n, 1 << 16);
    let mut a = open(&p, &alice).await;
    n.clock.advance_ms(60_000);
    a.send(&json!({"action": "ping"})).await.unwrap();
    assert_eq!(json_frame(&mut a).await["event"], "pong");
    n.clock.advance_ms(89_000);
    assert_eq!(a.next(QUIET).await, None, "pinged 89 s ago: still open");
    n.clock.advance_ms(2_000);
    match a.next(WAIT).await {
        Some(Frame::Closed(Some((1008, reason)))) => assert!(reason.contains("§17.4"), "{reason}"),
        other => panic!("expected close 1008, got {other:?}"),
    }
}

#[tokio::test]
async fn bad_frames_are_explained_and_the_rate_class_applies() {
    let n = TestNode::with(|c| c.rate_limits.ws_messages_per_connection = 5);
    let alice = n.register("alice", "human", 1).await;
    let (_n, p) = serve(n, 1 << 16);
    let mut a = open(&p, &alice).await;
    for (frame, field) in [
        ("{", "$"),
        (r#"{"action":"dance"}"#, "action"),
        (
            r#"{"action":"subscribe","channels":[{"type":"room"}]}"#,
            "channels[0].type",
        ),
    ] {
        a.send_text(frame).await.unwrap();
        let err = event(&mut a, "error").await;
        assert_eq!(err["error"]["details"]["field"], field, "{frame}: {err}");
    }
    a.send(&json!({"action": "ping"})).await.unwrap();
    event(&mut a, "pong").await;
    a.send(&json!({"action": "ping"})).await.unwrap();
    event(&mut a, "pong").await;
    a.send(&json!({"action": "ping"})).await.unwrap();
    let err = event(&mut a, "error").await;
    assert_eq!(err["error"]["code"], "RATE_LIMIT_EXCEEDED", "{err}");
}

#[tokio::test]
async fn connections_per_identity_are_capped() {
    let n = TestNode::with(|c| c.realtime.max_connections_per_identity = 2);
    let alice = n.register("alice", "human", 1).await;
    let (n, p) = serve(n, 1 << 16);
    let one = open(&p, &alice).await;
    let _two = open(&p, &alice).await;
    match ws::connect(
        &p,
        "http://node.test",
        None,
        "/ws",
        &alice.token,
        TokenIn::Query,
        WAIT,
    )
    .await
    {
        Err(ws::Refused::Status(429, body)) => {
            assert!(body.contains("RATE_LIMIT_EXCEEDED"), "{body}")
        }
        other => panic!("{other:?}"),
    }
    one.close().await;
    for _ in 0..50 {
        if n.node.service().realtime_connections() < 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    open(&p, &alice).await;
}

#[tokio::test]
async fn a_client_that_does_not_read_is_disconnected() {
    let n = TestNode::with(|c| {
        c.realtime.send_timeout_ms = 200;
        c.realtime.max_write_buffer_bytes = 8 * 1024;
    });
    let alice = n.register("alice", "human", 1).await;
    let bob = n.register("bob", "human", 2).await;
    let (n, p) = serve(n, 4 * 1024);
    let t = n.thread_id();
    alice
        .send(&n, alice.message(&n, &t, None, &[&bob], "hi"))
        .await
        .expect(201);
    let mut b = open(&p, &bob).await;
    subscribe(&mut b, None).await;
    // Bob stops reading; alice keeps talking.
    let start = n.node.service().realtime_connections();
    for i in 0..200 {
        alice
            .send(&n, alice.message(&n, &t, None, &[&bob], &format!("m{i}")))
            .await
            .expect(201);
    }
    let mut closed = false;
    for _ in 0..200 {
        if n.node.service().realtime_connections() < start {
            closed = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(closed, "the slow consumer is still connected");
    // What bob finally reads ends with the 1013 close.
    let mut last = None;
    while let Some(f) = b.next(QUIET).await {
        let end = matches!(f, Frame::Closed(_));
        last = Some(f);
        if end {
            break;
        }
    }
    match last {
        Some(Frame::Closed(Some((1013, reason)))) => {
            assert!(reason.contains("slow consumer"), "{reason}")
        }
        other => panic!("expected close 1013, got {other:?}"),
    }
}

/// Events of federated deliveries reach local subscribers (issue 34): Bob on b.test holds
/// his stream; Alice on a.test writes to him; once a.test delivers, Bob's stream pushes the
/// envelope as `envelope.new`, with b.test's own `event_id` and `cursor`.
#[tokio::test]
async fn a_federated_envelope_reaches_a_local_subscriber() {
    use crate::support::fed::{fed_pair, serve};
    let (a, b, pa, pb) = fed_pair(|_| {}, |_| {}).await;
    let _sa = serve(&a, pa).await;
    let _sb = serve(&b, pb).await;
    let alice = a.register("alice", "human", 1).await;
    let bob = b.register("bob", "human", 2).await;
    let mut s = ws::connect(
        &loom_client::TokioDial,
        &format!("http://127.0.0.1:{pb}"),
        None,
        "/ws",
        &bob.token,
        TokenIn::Query,
        WAIT,
    )
    .await
    .expect("Bob's stream on b.test");
    subscribe(&mut s, None).await;
    let t = a.thread_id();
    let root = alice.message(&a, &t, None, &[&bob], "from a.test");
    alice.send(&a, root.clone()).await.expect(201);
    assert_eq!(
        quiet_kinds(&mut s).await,
        Vec::<String>::new(),
        "not delivered yet"
    );
    assert_eq!(a.tick().await.delivered, 1);
    let e = event(&mut s, "envelope.new").await;
    assert_eq!(e["envelope_id"], root["id"], "{e}");
    assert_eq!(e["thread_id"], t.as_str());
    assert!(e["event_id"].as_str().unwrap().starts_with("evt_"), "{e}");
    assert!(e["cursor"].is_string(), "{e}");
}
