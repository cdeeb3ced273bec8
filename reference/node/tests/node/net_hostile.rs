//! Hostile peers against a real tokio listener: garbage bytes, a 100 KB request line, an h2
//! preface followed by junk, half-open and half-closed connections, a client that aborts a
//! TLS handshake. Each ends only its own connection (net.rs); a normal request afterwards
//! still gets 200.

use crate::support::{DOMAIN, TestNode};
use loom_node::config::TlsSettings;
use rustls::pki_types::CertificateDer;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::oneshot;
use tokio::time::timeout;

/// A node on 127.0.0.1:0 and the certificate it presents (empty without TLS); dropping the
/// sender stops it.
async fn start(
    tls: Option<TlsSettings>,
) -> (
    SocketAddr,
    oneshot::Sender<()>,
    Vec<CertificateDer<'static>>,
) {
    let tls = tls.map(|s| loom_node::tls::server_tls(&s, DOMAIN).unwrap());
    let chain = tls
        .as_ref()
        .map(|t| t.cert_chain.clone())
        .unwrap_or_default();
    let (addr, stop) = serve(TestNode::new(), tls.map(|t| t.acceptor)).await;
    (addr, stop, chain)
}

/// Serves `t` on 127.0.0.1:0 (with TLS when given an acceptor); dropping the sender stops it.
async fn serve(
    t: TestNode,
    acceptor: Option<tokio_rustls::TlsAcceptor>,
) -> (SocketAddr, oneshot::Sender<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = oneshot::channel::<()>();
    tokio::spawn(async move {
        t.node
            .serve(listener, acceptor, async {
                let _ = stopped.await;
            })
            .await
            .unwrap();
    });
    (addr, stop)
}

/// Writes `bytes` and reads whatever comes back until the server closes (or 5 s pass).
async fn poke(addr: SocketAddr, bytes: &[u8]) -> Vec<u8> {
    let mut s = TcpStream::connect(addr).await.unwrap();
    // The server may close before everything is written; that is an acceptable answer.
    let _ = s.write_all(bytes).await;
    let mut out = Vec::new();
    let _ = timeout(Duration::from_secs(5), s.read_to_end(&mut out)).await;
    out
}

/// A plain HTTP/1.1 discovery request; returns the status line.
async fn discovery_status(addr: SocketAddr) -> String {
    let out = poke(
        addr,
        b"GET /.well-known/loom.json HTTP/1.1\r\nHost: node.test\r\nConnection: close\r\n\r\n",
    )
    .await;
    let text = String::from_utf8_lossy(&out);
    text.lines().next().unwrap_or("").to_owned()
}

#[tokio::test]
async fn hostile_connections_do_not_take_the_server_down() {
    let (addr, _stop, _) = start(None).await;

    // Garbage bytes: answered with a 4xx or a close, never a crash.
    let out = poke(addr, &[0xff, 0x00, 0x13, 0x37, b'\r', b'\n', 0xfe, 0xfd]).await;
    let text = String::from_utf8_lossy(&out);
    assert!(out.is_empty() || text.starts_with("HTTP/1.1 4"), "{text}");

    // A 100 KB request line.
    let mut long = b"GET /".to_vec();
    long.extend(std::iter::repeat_n(b'a', 100 * 1024));
    long.extend_from_slice(b" HTTP/1.1\r\nHost: node.test\r\n\r\n");
    let out = poke(addr, &long).await;
    let text = String::from_utf8_lossy(&out);
    assert!(out.is_empty() || text.starts_with("HTTP/1.1 4"), "{text}");

    // 100 KB of header bytes with no end, left open: the server waits for the rest (until
    // net::HEADER_READ_TIMEOUT) without blocking anyone else.
    let mut slow = TcpStream::connect(addr).await.unwrap();
    let mut headers = b"GET / HTTP/1.1\r\nHost: node.test\r\nX-Junk: ".to_vec();
    headers.extend(std::iter::repeat_n(b'b', 100 * 1024));
    slow.write_all(&headers).await.unwrap();

    // An HTTP/2 preface followed by junk frames.
    let mut h2 = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
    h2.extend_from_slice(&[0xff; 64]);
    poke(addr, &h2).await;

    // Half-open: partial requests left hanging on open sockets.
    let mut hanging = Vec::new();
    for _ in 0..32 {
        let mut s = TcpStream::connect(addr).await.unwrap();
        s.write_all(b"GET /.well-known/loom.json HTTP/1.1\r\nHost: no")
            .await
            .unwrap();
        hanging.push(s);
    }
    // Half-closed: the client shuts its write side mid-request.
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(b"POST /v1/identity HTTP/1.1\r\nHost: node.test\r\nContent-Length: 100\r\n\r\n{")
        .await
        .unwrap();
    s.shutdown().await.unwrap();
    let mut out = Vec::new();
    let _ = timeout(Duration::from_secs(5), s.read_to_end(&mut out)).await;

    // Connect-and-vanish.
    for _ in 0..16 {
        drop(TcpStream::connect(addr).await.unwrap());
    }

    // With all of that still open, a normal request is served.
    assert_eq!(discovery_status(addr).await, "HTTP/1.1 200 OK");
    drop(hanging);
    drop(slow);
    assert_eq!(discovery_status(addr).await, "HTTP/1.1 200 OK");
}

#[tokio::test]
async fn hostile_tls_handshakes_do_not_take_the_server_down() {
    let (addr, _stop, chain) = start(Some(TlsSettings::SelfSigned)).await;
    // Plain HTTP and garbage at a TLS port.
    poke(addr, b"GET / HTTP/1.1\r\nHost: node.test\r\n\r\n").await;
    poke(addr, &[0x16, 0x03, 0x01, 0xff, 0xff, 0x00]).await;
    // A half-open handshake: a ClientHello record header, then silence.
    let mut hanging = TcpStream::connect(addr).await.unwrap();
    hanging.write_all(&[0x16, 0x03, 0x01, 0x00]).await.unwrap();

    // A proper TLS 1.3 client is still served.
    let mut roots = rustls::RootCertStore::empty();
    for c in chain {
        roots.add(c).unwrap();
    }
    let connector = tokio_rustls::TlsConnector::from(Arc::new(
        rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_protocol_versions(&[&rustls::version::TLS13])
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth(),
    ));
    let tcp = TcpStream::connect(addr).await.unwrap();
    let mut s = connector
        .connect(
            rustls::pki_types::ServerName::try_from("localhost").unwrap(),
            tcp,
        )
        .await
        .unwrap();
    s.write_all(
        b"GET /.well-known/loom.json HTTP/1.1\r\nHost: node.test\r\nConnection: close\r\n\r\n",
    )
    .await
    .unwrap();
    let mut out = Vec::new();
    let _ = timeout(Duration::from_secs(5), s.read_to_end(&mut out)).await;
    assert!(
        String::from_utf8_lossy(&out).starts_with("HTTP/1.1 200 OK"),
        "{}",
        String::from_utf8_lossy(&out)
    );
    drop(hanging);
}

/// Framing the HTTP RFCs forbid is refused before any route (issue 36, item 9): HTTP/1.1
/// without `Host` is 400 (RFC 9112 §3.2), two `Authorization` headers are 400 naming the field
/// (RFC 9110 §5.3); the same requests framed properly are answered normally.
#[tokio::test]
async fn forbidden_framing_is_refused_with_400() {
    let (addr, _stop, _) = start(None).await;
    let answer = |out: Vec<u8>| String::from_utf8_lossy(&out).into_owned();
    let no_host = answer(
        poke(
            addr,
            b"GET /.well-known/loom.json HTTP/1.1\r\nConnection: close\r\n\r\n",
        )
        .await,
    );
    assert!(
        no_host.starts_with("HTTP/1.1 400") && no_host.contains("\"Host\""),
        "{no_host}"
    );
    let two_auth = answer(
        poke(
            addr,
            b"GET /v1/threads HTTP/1.1\r\nHost: node.test\r\nAuthorization: Bearer a\r\nAuthorization: Bearer b\r\nConnection: close\r\n\r\n",
        )
        .await,
    );
    assert!(
        two_auth.starts_with("HTTP/1.1 400") && two_auth.contains("\"Authorization\""),
        "{two_auth}"
    );
    // Controls: with a Host, and with one (bogus) Authorization header.
    assert_eq!(discovery_status(addr).await, "HTTP/1.1 200 OK");
    let one_auth = answer(
        poke(
            addr,
            b"GET /v1/threads HTTP/1.1\r\nHost: node.test\r\nAuthorization: Bearer a\r\nConnection: close\r\n\r\n",
        )
        .await,
    );
    assert!(one_auth.starts_with("HTTP/1.1 401"), "{one_auth}");
    // HTTP/1.0 does not require Host.
    let old = answer(poke(addr, b"GET /.well-known/loom.json HTTP/1.0\r\n\r\n").await);
    assert!(
        old.starts_with("HTTP/1.0 200") || old.starts_with("HTTP/1.1 200"),
        "{old}"
    );
}

/// A request target longer than `net::MAX_URI_BYTES` that fits the head buffer is answered
/// 414 naming the limit (RFC 9110 §15.5.15; issue 36, item 9); one just under it reaches the
/// router (404 for an unknown path).
#[tokio::test]
async fn an_overlong_uri_is_answered_414() {
    let (addr, _stop, _) = start(None).await;
    let request = |len: usize| {
        let mut r = b"GET /".to_vec();
        r.extend(std::iter::repeat_n(b'a', len - 1));
        r.extend_from_slice(b" HTTP/1.1\r\nHost: node.test\r\nConnection: close\r\n\r\n");
        r
    };
    let long = poke(addr, &request(loom_node::net::MAX_URI_BYTES + 1)).await;
    let long = String::from_utf8_lossy(&long);
    assert!(long.starts_with("HTTP/1.1 414"), "{long}");
    assert!(long.contains("$uri") && long.contains("RFC 9110"), "{long}");
    let fits = poke(addr, &request(loom_node::net::MAX_URI_BYTES)).await;
    let fits = String::from_utf8_lossy(&fits);
    assert!(fits.starts_with("HTTP/1.1 404"), "{fits}");
}

/// `Expect: 100-continue` with a declared body over the limit is answered 413 at once, never
/// `100 Continue` (RFC 9110 §10.1.1: the server may refuse before the body is sent; issue 36,
/// item 9); a small declared body still gets `100 Continue` and its answer.
#[tokio::test]
async fn an_oversized_declared_body_is_refused_before_100_continue() {
    let (addr, _stop, _) = start(None).await;
    let head = |len: usize| {
        format!(
            "POST /v1/identity/challenge HTTP/1.1\r\nHost: node.test\r\nContent-Type: application/json\r\nContent-Length: {len}\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n"
        )
    };
    let big = poke(addr, head(10_000_000).as_bytes()).await;
    let big = String::from_utf8_lossy(&big);
    assert!(
        big.starts_with("HTTP/1.1 413") && !big.contains("100 Continue"),
        "{big}"
    );
    // The control: a small body, announced the same way, is asked for and answered.
    let body = r#"{"identity":"loom://nobody@node.test","key_id":"k_sign_x_1"}"#;
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(head(body.len()).as_bytes()).await.unwrap();
    let mut first = vec![0u8; 64];
    let n = timeout(Duration::from_secs(5), s.read(&mut first))
        .await
        .unwrap()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&first[..n]).starts_with("HTTP/1.1 100 Continue"),
        "{}",
        String::from_utf8_lossy(&first[..n])
    );
}

/// Issue 36, item 1: a delivery whose headers are complete and fresh but whose peer cannot
/// be found (its document does not load) is refused before its body is read: the client
/// announced 20 MB and sent none, and the 401 naming `X-LOOM-Node` comes at once instead of
/// after the body timers (before issue 36 the node read the body first, then looked up the
/// peer).
#[tokio::test]
async fn a_delivery_from_a_peer_nobody_can_find_is_refused_before_its_body_is_read() {
    let t = TestNode::with(|c| {
        // A peer whose document cannot be fetched: nothing listens on port 1.
        c.federation
            .peers
            .insert("c.test".into(), "http://127.0.0.1:1".into());
        c.federation.allow_private_http = true;
    });
    let (addr, _stop) = serve(t, None).await;
    let head = format!(
        "POST /v1/federation/deliver HTTP/1.1\r\nHost: node.test\r\n\
         Content-Type: application/json\r\nContent-Length: 20000000\r\n\
         X-LOOM-Node: c.test\r\nX-LOOM-Key-Id: k_node_sign_c\r\n\
         X-LOOM-Timestamp: {}\r\nX-LOOM-Nonce: n-0123456789abcdef\r\n\
         X-LOOM-Signature: {}\r\n\r\n",
        crate::support::START,
        "A".repeat(86)
    );
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(head.as_bytes()).await.unwrap();
    let mut buf = vec![0u8; 16 * 1024];
    let n = timeout(Duration::from_secs(5), s.read(&mut buf))
        .await
        .expect("answered before the body, not after the body timers")
        .unwrap();
    let text = String::from_utf8_lossy(&buf[..n]);
    assert!(text.starts_with("HTTP/1.1 401"), "{text}");
    assert!(text.contains("X-LOOM-Node"), "{text}");
    assert!(text.contains("no node document is known"), "{text}");
}
