//! Transport (v1.1 §14.1): TLS 1.3 only, HTTP/2, `wss://` for real time. These cases apply to
//! https targets; a plain-http target skips them with the reason.

use crate::case::{Case, Finding, Mutant, Need, Strength, Verdict, fail};
use crate::ctx::Ctx;
use loom_client::NodeUrl;
use loom_client::Transcript;
use rustls::{ProtocolVersion, SupportedProtocolVersion};
use std::time::Duration;

/// What a handshake negotiated.
#[derive(Debug)]
struct Negotiated {
    version: Option<ProtocolVersion>,
    alpn: Option<Vec<u8>>,
}

/// A raw TLS handshake with the target offering `versions` and `alpn`, trusting what the
/// harness trusts. `Ok(Err(reason))` when the target refused the handshake. The handshake is
/// recorded like an HTTP exchange (method `TLS`, status 0), so reports show it.
async fn handshake(
    cx: &mut Ctx,
    versions: &[&'static SupportedProtocolVersion],
    alpn: &[&[u8]],
) -> Result<Result<Negotiated, String>, Finding> {
    let started = std::time::Instant::now();
    let result = raw_handshake(cx, versions, alpn).await?;
    let offered = format!(
        "offering {} with ALPN {}",
        versions
            .iter()
            .map(|v| format!("{:?}", v.version))
            .collect::<Vec<_>>()
            .join(", "),
        alpn.iter()
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect::<Vec<_>>()
            .join(", ")
    );
    let outcome = match &result {
        Ok(n) => format!(
            "completed: {:?}, ALPN {}",
            n.version,
            n.alpn
                .as_deref()
                .map_or("none".into(), |a| String::from_utf8_lossy(a).into_owned())
        ),
        Err(e) => format!("refused: {e}"),
    };
    cx.net.record(Transcript {
        method: "TLS".into(),
        path: format!("handshake {offered}"),
        version: "TLS".into(),
        request_headers: Vec::new(),
        request_body: Vec::new(),
        status: 0,
        response_headers: Vec::new(),
        response_body: outcome.into_bytes(),
        elapsed: started.elapsed(),
    });
    Ok(result)
}

async fn raw_handshake(
    cx: &Ctx,
    versions: &[&'static SupportedProtocolVersion],
    alpn: &[&[u8]],
) -> Result<Result<Negotiated, String>, Finding> {
    let url = NodeUrl::parse(&cx.target.url).map_err(|e| Finding::Error(e.to_string()))?;
    let Some(trust) = &cx.target.trust else {
        return Err(Finding::Error(
            "no TLS trust configured for the https target (profile [tls] ca_cert or insecure)"
                .into(),
        ));
    };
    let config = loom_client::tls::client_config_with(trust, versions, alpn)
        .map_err(|e| Finding::Error(format!("TLS client configuration: {e}")))?;
    let name =
        loom_client::tls::server_name(&url.host).map_err(|e| Finding::Error(e.to_string()))?;
    let limit = Duration::from_secs_f64(10.0 * cx.timeout_scale);
    let tcp = tokio::time::timeout(
        limit,
        tokio::net::TcpStream::connect((url.host.as_str(), url.port)),
    )
    .await
    .map_err(|_| Finding::Error(format!("connect {}:{} timed out", url.host, url.port)))?
    .map_err(|e| Finding::Error(format!("connect {}:{}: {e}", url.host, url.port)))?;
    let connector = tokio_rustls::TlsConnector::from(config);
    match tokio::time::timeout(limit, connector.connect(name, tcp)).await {
        Err(_) => Ok(Err("the handshake timed out".into())),
        Ok(Err(e)) => Ok(Err(e.to_string())),
        Ok(Ok(stream)) => {
            let conn = stream.get_ref().1;
            Ok(Ok(Negotiated {
                version: conn.protocol_version(),
                alpn: conn.alpn_protocol().map(<[u8]>::to_vec),
            }))
        }
    }
}

const ALPN: [&[u8]; 2] = [b"h2", b"http/1.1"];

/// A TLS 1.2-only client must not complete a handshake.
async fn expect_tls12_refused(cx: &mut Ctx) -> Verdict {
    match handshake(cx, &[&rustls::version::TLS12], &ALPN).await? {
        Err(_) => Ok(()),
        Ok(n) => Err(decided(
            cx,
            "a TLS 1.2-only client handshake refused (v1.1 §14.1: TLS 1.2 and below MUST be rejected)",
            format!("the handshake completed with {:?}", n.version),
        )),
    }
}

/// A failure decided by the last (handshake) exchange.
fn decided(cx: &Ctx, expected: &str, actual: String) -> Finding {
    let mut f = fail(expected, actual);
    if let Finding::Fail { decisive, .. } = &mut f {
        *decisive = cx.net.last();
    }
    f
}

async fn tls12_refused(cx: &mut Ctx) -> Verdict {
    expect_tls12_refused(cx).await
}

async fn tls13_only(cx: &mut Ctx) -> Verdict {
    let both = [&rustls::version::TLS13, &rustls::version::TLS12];
    match handshake(cx, &both, &ALPN).await? {
        Ok(n) if n.version == Some(ProtocolVersion::TLSv1_3) => {}
        Ok(n) => {
            return Err(decided(
                cx,
                "TLS 1.3 negotiated with a client offering TLS 1.3 and 1.2 (v1.1 §14.1)",
                format!("negotiated {:?}", n.version),
            ));
        }
        Err(e) => {
            return Err(decided(
                cx,
                "a TLS 1.3 handshake succeeds (v1.1 §14.1)",
                format!("the handshake failed: {e}"),
            ));
        }
    }
    expect_tls12_refused(cx).await
}

async fn http2(cx: &mut Ctx) -> Verdict {
    match handshake(cx, &[&rustls::version::TLS13], &ALPN).await? {
        Ok(n) if n.alpn.as_deref() == Some(b"h2") => {}
        Ok(n) => {
            return Err(decided(
                cx,
                "ALPN selects h2 when the client offers h2 and http/1.1 (v1.1 §14.1: HTTP/2)",
                format!(
                    "ALPN selected {}",
                    n.alpn
                        .map_or("nothing".into(), |a| String::from_utf8_lossy(&a)
                            .into_owned())
                ),
            ));
        }
        Err(e) => {
            return Err(decided(
                cx,
                "a TLS 1.3 handshake with ALPN h2 succeeds",
                format!("the handshake failed: {e}"),
            ));
        }
    }
    let i = cx
        .net
        .call("GET", "/.well-known/loom.json", None, None)
        .await?;
    cx.net.expect_ok(i)?;
    let version = cx.net.transcript(i).version.clone();
    cx.net.expect_that(
        version == "HTTP/2",
        "the API answers over HTTP/2 (v1.1 §14.1)",
        format!("the exchange used {version}"),
    )
}

async fn websocket_wss(cx: &mut Ctx) -> Verdict {
    let i = cx
        .net
        .call("GET", "/.well-known/loom.json", None, None)
        .await?;
    let doc = cx.net.ok_body(i)?;
    cx.net.expect_that(
        doc["websocket_url"]
            .as_str()
            .is_some_and(|u| u.starts_with("wss://")),
        "the advertised real-time endpoint is WebSocket over TLS: websocket_url wss://… (v1.1 §14.1)",
        format!("websocket_url = {}", doc["websocket_url"]),
    )
}

const TRANSPORT: &[&str] = &["v1.1 §14.1", "v1.0 §13.1"];

/// Transport cases.
pub const CASES: &[Case] = &[
    Case {
        id: "core.transport.tls.1-2-refused",
        level: 1,
        strength: Strength::Must,
        spec: TRANSPORT,
        requirement: "A node MUST reject TLS 1.2 and below.",
        covers: &["R-14.1-03"],
        needs: &[Need::Tls],
        how: "Open a TLS handshake offering only TLS 1.2 (trusting the target's certificate); it must not complete.",
        interpretation: None,
        mutant: Mutant::Quirk("allow-tls12"),
        run: |cx| Box::pin(tls12_refused(cx)),
    },
    Case {
        id: "core.transport.tls.1-3-only",
        level: 1,
        strength: Strength::Must,
        spec: TRANSPORT,
        requirement: "All API traffic MUST use TLS 1.3: a client offering TLS 1.3 and 1.2 gets 1.3, a TLS 1.2-only client gets nothing.",
        covers: &["R-14.1-02", "R-14.1-03"],
        needs: &[Need::Tls],
        how: "Handshake offering TLS 1.3 and 1.2: TLS 1.3 must be negotiated; handshake offering only TLS 1.2: must fail.",
        interpretation: None,
        mutant: Mutant::Quirk("allow-tls12"),
        run: |cx| Box::pin(tls13_only(cx)),
    },
    Case {
        id: "core.transport.http2.alpn",
        level: 1,
        strength: Strength::Must,
        spec: TRANSPORT,
        requirement: "All API traffic MUST use HTTP/2: ALPN selects h2 and the API answers over HTTP/2.",
        covers: &["R-14.1-01"],
        needs: &[Need::Tls],
        how: "TLS 1.3 handshake offering ALPN h2, http/1.1: h2 must be selected; GET /.well-known/loom.json through the harness client must use HTTP/2.",
        interpretation: None,
        mutant: Mutant::Quirk("no-http2"),
        run: |cx| Box::pin(http2(cx)),
    },
    Case {
        id: "core.transport.websocket.wss",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §14.1", "v1.1 §15.2"],
        requirement: "Real-time traffic MUST use WebSocket over TLS: the advertised websocket_url is wss://.",
        covers: &["R-14.1-05"],
        needs: &[Need::Tls],
        how: "GET /.well-known/loom.json on the https target; websocket_url must start with wss://.",
        interpretation: None,
        mutant: Mutant::Quirk("incomplete-node-document"),
        run: |cx| Box::pin(websocket_wss(cx)),
    },
];
