//! v1.1 §14.1 over a real loopback socket: TLS 1.3 only (a TLS 1.2 client is refused), ALPN
//! selects `h2` and the API answers over HTTP/2; without TLS the node speaks plain HTTP/1.1.

use crate::support::{DOMAIN, TestNode};
use axum::body::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper_util::rt::{TokioExecutor, TokioIo};
use loom_node::config::TlsSettings;
use loom_node::tls::{ServerTls, server_tls};
use rustls::pki_types::{CertificateDer, ServerName};
use rustls::{ClientConfig, RootCertStore, SupportedProtocolVersion};
use serde_json::Value;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::oneshot;
use tokio_rustls::TlsConnector;

/// A node serving on 127.0.0.1:0; dropping the sender stops it.
struct Running {
    addr: SocketAddr,
    _stop: oneshot::Sender<()>,
    tls: Option<ServerTls>,
}

async fn start(tls: Option<TlsSettings>) -> Running {
    let t = TestNode::new();
    let tls = tls.map(|s| server_tls(&s, DOMAIN).unwrap());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = oneshot::channel::<()>();
    let acceptor = tls.as_ref().map(|t| t.acceptor.clone());
    tokio::spawn(async move {
        t.node
            .serve(listener, acceptor, async {
                let _ = stopped.await;
            })
            .await
            .unwrap();
    });
    Running {
        addr,
        _stop: stop,
        tls,
    }
}

/// A client trusting exactly the server's (self-signed) certificate.
fn client(
    trust: &[CertificateDer<'static>],
    versions: &[&'static SupportedProtocolVersion],
    alpn: &[&[u8]],
) -> TlsConnector {
    let mut roots = RootCertStore::empty();
    for c in trust {
        roots.add(c.clone()).unwrap();
    }
    let mut config =
        ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_protocol_versions(versions)
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    TlsConnector::from(Arc::new(config))
}

#[tokio::test]
async fn tls12_only_client_is_refused() {
    let node = start(Some(TlsSettings::SelfSigned)).await;
    let chain = &node.tls.as_ref().unwrap().cert_chain;
    let connector = client(chain, &[&rustls::version::TLS12], &[b"h2", b"http/1.1"]);
    let tcp = tokio::net::TcpStream::connect(node.addr).await.unwrap();
    let result = connector
        .connect(ServerName::try_from("localhost").unwrap(), tcp)
        .await;
    let err = result.expect_err("a TLS 1.2-only client must not complete the handshake");
    // rustls reports the server's protocol_version alert.
    assert!(
        err.to_string().to_lowercase().contains("protocolversion")
            || err.to_string().to_lowercase().contains("protocol version"),
        "{err}"
    );
    // The refused handshake did not hurt the server: a TLS 1.3 client still gets in.
    let ok = client(chain, &[&rustls::version::TLS13], &[b"http/1.1"]);
    let tcp = tokio::net::TcpStream::connect(node.addr).await.unwrap();
    ok.connect(ServerName::try_from("localhost").unwrap(), tcp)
        .await
        .unwrap();
}

#[tokio::test]
async fn tls13_negotiates_h2_and_serves_discovery() {
    let node = start(Some(TlsSettings::SelfSigned)).await;
    let chain = &node.tls.as_ref().unwrap().cert_chain;
    let connector = client(chain, &[&rustls::version::TLS13], &[b"h2", b"http/1.1"]);
    // The certificate names the node's domain as well as localhost.
    for name in [DOMAIN, "localhost"] {
        let tcp = tokio::net::TcpStream::connect(node.addr).await.unwrap();
        let tls = connector
            .connect(ServerName::try_from(name).unwrap(), tcp)
            .await
            .unwrap();
        let (_, session) = tls.get_ref();
        assert_eq!(
            session.protocol_version(),
            Some(rustls::ProtocolVersion::TLSv1_3)
        );
        assert_eq!(session.alpn_protocol(), Some(&b"h2"[..]));

        let (mut sender, conn) =
            hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(tls))
                .await
                .unwrap();
        tokio::spawn(conn);
        let req = hyper::Request::get(format!("https://{name}/.well-known/loom.json"))
            .body(Empty::<Bytes>::new())
            .unwrap();
        let resp = sender.send_request(req).await.unwrap();
        assert_eq!(resp.status(), 200);
        assert_eq!(resp.version(), hyper::Version::HTTP_2);
        assert_eq!(
            resp.headers()["content-type"],
            "application/json; charset=utf-8"
        );
        let body = resp.into_body().collect().await.unwrap().to_bytes();
        let doc: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(doc["node_id"], DOMAIN, "{doc}");
    }
}

#[tokio::test]
async fn plain_http1_without_tls() {
    let node = start(None).await;
    let mut tcp = tokio::net::TcpStream::connect(node.addr).await.unwrap();
    tcp.write_all(
        b"GET /.well-known/loom.json HTTP/1.1\r\nHost: node.test\r\nConnection: close\r\n\r\n",
    )
    .await
    .unwrap();
    let mut out = Vec::new();
    tcp.read_to_end(&mut out).await.unwrap();
    let text = String::from_utf8_lossy(&out);
    assert!(text.starts_with("HTTP/1.1 200 OK\r\n"), "{text}");
    let body = &text[text.find("\r\n\r\n").unwrap() + 4..];
    let doc: Value = serde_json::from_str(body).unwrap();
    assert_eq!(doc["node_id"], DOMAIN, "{doc}");
}
