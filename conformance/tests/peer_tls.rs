//! The fake federation peer over TLS (issue 15 Build item 3: "its own domain, node key and
//! TLS"): it speaks TLS 1.3 only, with a certificate for each peer's own domain issued by the
//! run's CA — a client trusting that CA gets the node document, plain HTTP and clients that
//! do not trust the CA get nothing; the profile placeholders for the CA and the address
//! expand; and the embedded reference node federates with the peers both ways over TLS (and
//! fails to when it is not given the CA), while the plain-HTTP mode keeps working.

use loom_client::{Client, Dial, Trust};
use loom_conformance::Outcome;
use loom_conformance::case::Case;
use loom_conformance::peer::Federation;
use loom_conformance::peer::profile::{FederationSection, fill};
use loom_conformance::runner::{self, RunConfig};
use loom_conformance::target::{self, Transport};
use loom_protocol::clock::{Clock, SystemClock};
use rustls::pki_types::{CertificateDer, ServerName};
use rustls::{ClientConfig, RootCertStore};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

fn section(text: &str) -> FederationSection {
    let s: FederationSection = toml::from_str(text).expect("section parses");
    s.check().expect("section is valid");
    s
}

async fn tls_federation() -> Federation {
    Federation::start(
        section("peer_domain = \"peer-{n}.test\"\ntls = true\n"),
        11,
        Arc::new(SystemClock),
    )
    .await
    .expect("starts")
}

/// A TLS client trusting `roots`, offering `versions`.
fn client(
    roots: &[CertificateDer<'static>],
    versions: &[&'static rustls::SupportedProtocolVersion],
) -> TlsConnector {
    let mut store = RootCertStore::empty();
    for r in roots {
        store.add(r.clone()).expect("a usable anchor");
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(versions)
        .expect("versions")
        .with_root_certificates(store)
        .with_no_client_auth();
    TlsConnector::from(Arc::new(config))
}

/// `GET path` with `Host: host` over TLS to `dial` with server name `sni`: the negotiated
/// version and the raw response, or the handshake error.
async fn get_tls(
    connector: &TlsConnector,
    dial: &str,
    sni: &str,
    path: &str,
) -> Result<(rustls::ProtocolVersion, String), String> {
    let tcp = TcpStream::connect(dial).await.map_err(|e| e.to_string())?;
    let name = ServerName::try_from(sni.to_owned()).map_err(|e| e.to_string())?;
    let mut tls = tokio::time::timeout(Duration::from_secs(5), connector.connect(name, tcp))
        .await
        .map_err(|_| "handshake timed out".to_owned())?
        .map_err(|e| e.to_string())?;
    let version = tls.get_ref().1.protocol_version().expect("negotiated");
    let req = format!("GET {path} HTTP/1.1\r\nhost: {sni}\r\nconnection: close\r\n\r\n");
    tls.write_all(req.as_bytes())
        .await
        .map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(5), tls.read_to_end(&mut out)).await;
    Ok((version, String::from_utf8_lossy(&out).into_owned()))
}

/// Connects every host name to the harness address (the `--resolve` a target is given).
#[derive(Debug, Clone)]
struct ToHarness(String);

impl Dial for ToHarness {
    type Io = TcpStream;

    async fn dial(&self, _host: &str, _port: u16) -> std::io::Result<TcpStream> {
        TcpStream::connect(&self.0).await
    }
}

fn body_json(response: &str) -> serde_json::Value {
    let body = response.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    serde_json::from_str(body).unwrap_or(serde_json::Value::Null)
}

#[tokio::test]
async fn the_tls_peer_speaks_tls13_with_a_certificate_from_the_run_ca() {
    let fed = tls_federation().await;
    let server = &fed.server;
    let tls = server
        .tls
        .clone()
        .expect("tls = true gives the server a CA");
    let peer = server.fresh().expect("a peer");
    let dial = server.dial_address();
    assert!(dial.starts_with("127.0.0.1:"), "{dial}");
    let port = server.port();
    assert_eq!(peer.base_url, format!("https://peer-0.test:{port}"));

    // The CA certificate file holds the CA the peers' certificates chain to.
    let pem = std::fs::read_to_string(tls.ca_file()).expect("the CA file is written");
    assert_eq!(pem, tls.ca_pem());
    assert!(pem.starts_with("-----BEGIN CERTIFICATE-----"), "{pem}");

    // A client trusting the CA gets the node document over TLS 1.3, naming https URLs on
    // the peer's own domain.
    let trusting = client(&[tls.ca_der()], &[&rustls::version::TLS13]);
    let (version, resp) = get_tls(&trusting, &dial, "peer-0.test", "/.well-known/loom.json")
        .await
        .expect("the handshake succeeds");
    assert_eq!(version, rustls::ProtocolVersion::TLSv1_3);
    assert!(resp.starts_with("HTTP/1.1 200"), "{resp}");
    let doc = body_json(&resp);
    assert_eq!(doc["node_id"], "peer-0.test", "{resp}");
    assert_eq!(
        doc["federation"]["deliver_url"],
        format!("https://peer-0.test:{port}/v1/federation/deliver")
    );
    assert_eq!(
        doc["federation"]["identity_resolve_url"],
        format!("https://peer-0.test:{port}/v1/identity/{{identity}}")
    );

    // An HTTP/2 client (ALPN h2; the peer is named by `:authority`, not `Host`) reaching
    // the peer's own https URL through a dial to the harness address.
    let mut h2 = Client::new(&peer.base_url, ToHarness(dial.clone()))
        .expect("client")
        .with_trust(&Trust::certificates(&[tls.ca_der()]).expect("trust"))
        .expect("trust")
        .with_timeout(Duration::from_secs(5));
    let t = h2
        .exchange("GET", "/.well-known/loom.json", &[], None, None)
        .await
        .expect("GET over h2");
    assert_eq!(h2.http_version(), Some("HTTP/2"));
    assert_eq!(
        t.status,
        200,
        "{}",
        String::from_utf8_lossy(&t.response_body)
    );
    assert_eq!(t.json().expect("json")["node_id"], "peer-0.test");

    // A name no fake peer has: no certificate, no handshake.
    let e = get_tls(&trusting, &dial, "peer-9.test", "/.well-known/loom.json")
        .await
        .expect_err("unknown server name");
    assert!(!e.is_empty());

    // A client that does not trust the run's CA (it trusts another one) is refused.
    let other = rcgen::generate_simple_self_signed(vec!["peer-0.test".to_owned()]).unwrap();
    let stranger = client(&[other.cert.der().clone()], &[&rustls::version::TLS13]);
    let e = get_tls(&stranger, &dial, "peer-0.test", "/.well-known/loom.json")
        .await
        .expect_err("an untrusted CA");
    assert!(
        e.contains("UnknownIssuer") || e.contains("invalid peer certificate"),
        "{e}"
    );

    // TLS 1.2 is refused (v1.1 §14.1).
    let old = client(&[tls.ca_der()], &[&rustls::version::TLS12]);
    get_tls(&old, &dial, "peer-0.test", "/.well-known/loom.json")
        .await
        .expect_err("TLS 1.2 only");

    // Plain HTTP to the TLS port gets no HTTP answer.
    let mut tcp = TcpStream::connect(&dial).await.expect("connects");
    tcp.write_all(b"GET /peer/0/.well-known/loom.json HTTP/1.1\r\nhost: peer-0.test\r\nconnection: close\r\n\r\n")
        .await
        .expect("writes");
    let mut out = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(5), tcp.read_to_end(&mut out)).await;
    assert!(
        !String::from_utf8_lossy(&out).contains("HTTP/1.1 200"),
        "{:?}",
        String::from_utf8_lossy(&out)
    );

    // The default CA file is the run's own and goes away with it.
    let file = tls.ca_file().to_owned();
    drop(tls);
    drop(peer);
    drop(fed);
    assert!(!file.exists(), "{}", file.display());
}

#[tokio::test]
async fn the_profile_placeholders_name_the_ca_and_the_address() {
    let fed = tls_federation().await;
    let peer = fed.server.fresh().expect("a peer");
    let vars = fed.vars("https://node.test", &peer);
    let tls = fed.server.tls.as_ref().expect("tls");
    let template = "{\"ca\":\"{peer_ca_pem}\",\"ca_file\":\"{peer_ca_pem_path}\",\"address\":\"{peer_address}\",\"base\":\"{peer_base_url}\"}";
    let body = fill(template, &vars, true, "federation.learn_peer.body").expect("fills");
    let v: serde_json::Value = serde_json::from_str(&body).expect("JSON-escaped");
    assert_eq!(v["ca"], tls.ca_pem());
    assert_eq!(v["ca_file"], tls.ca_file().display().to_string());
    assert_eq!(v["address"], fed.server.dial_address());
    assert_eq!(
        v["base"],
        format!("https://peer-0.test:{}", fed.server.port())
    );
    let url = fill(
        "--peer-ca {peer_ca_pem_path} --resolve {peer_domain}={peer_address}",
        &vars,
        false,
        "u",
    )
    .expect("fills");
    assert_eq!(
        url,
        format!(
            "--peer-ca {} --resolve peer-0.test={}",
            tls.ca_file().display(),
            fed.server.dial_address()
        )
    );

    // A chosen ca_file is written there (and left for the target after the run).
    let dir = std::env::temp_dir().join(format!("loom-peer-tls-test-{}", std::process::id()));
    let path = dir.join("ca.pem");
    let chosen = Federation::start(
        section(&format!(
            "tls = true\nca_file = {:?}\n",
            path.display().to_string()
        )),
        12,
        Arc::new(SystemClock),
    )
    .await
    .expect("starts");
    let p2 = chosen.server.fresh().expect("a peer");
    assert_eq!(
        chosen.vars("https://node.test", &p2)["peer_ca_pem_path"],
        path.display().to_string()
    );
    assert_eq!(
        std::fs::read_to_string(&path).expect("written"),
        chosen.server.tls.as_ref().expect("tls").ca_pem()
    );
    drop(p2);
    drop(chosen);
    assert!(path.exists(), "a chosen ca_file stays");
    let _ = std::fs::remove_dir_all(&dir);

    // Plain HTTP (the default for a target of the user's): /peer/{n} base URLs, no CA.
    let plain = Federation::start(section("peers = 2\n"), 13, Arc::new(SystemClock))
        .await
        .expect("starts");
    assert!(plain.server.tls.is_none());
    let p = plain.server.fresh().expect("a peer");
    assert_eq!(p.base_url, format!("{}/peer/0", plain.server.address));
    assert!(plain.server.address.starts_with("http://127.0.0.1:"));
    let vars = plain.vars("http://node.test", &p);
    assert_eq!(vars["peer_address"], plain.server.dial_address());
    let e = fill(
        "{peer_ca_pem_path}",
        &vars,
        false,
        "federation.learn_peer.url",
    )
    .expect_err("no CA in plain mode");
    assert!(
        e.contains("federation.learn_peer.url") && e.contains("{peer_ca_pem_path}"),
        "{e}"
    );
}

fn cases(ids: &[&str]) -> Vec<&'static Case> {
    let all = loom_conformance::catalogue::all();
    ids.iter()
        .map(|id| {
            *all.iter()
                .find(|c| c.id == *id)
                .unwrap_or_else(|| panic!("{id} is in the catalogue"))
        })
        .collect()
}

/// Runs `ids` against the embedded node (with `quirks`) federating with fake peers
/// configured by `section` (`tweak` edits the node's configuration afterwards).
async fn run_embedded(
    section: FederationSection,
    quirks: loom_node::Quirks,
    tweak: impl FnOnce(&mut loom_node::NodeConfig),
    ids: &[&str],
    timeout_scale: f64,
) -> Vec<(String, Outcome, Option<String>)> {
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let mut config = target::embedded_config();
    let fed = Federation::embedded_with(&mut config, section, 21, clock.clone())
        .await
        .expect("the peers start");
    tweak(&mut config);
    let node = target::start_embedded(
        target::quirk_rules(quirks),
        clock.clone(),
        21,
        config,
        Transport::Tls,
    )
    .await
    .expect("the node starts");
    let mut info = target::probe_embedded(&node).await.expect("probes");
    info.federation = Some(fed);
    let cfg = RunConfig {
        level: 2,
        seed: 21,
        timeout_scale,
        ..RunConfig::default()
    };
    runner::run_all(&cases(ids), Arc::new(info), &cfg, clock, &|_| {})
        .await
        .into_iter()
        .map(|r| (r.id.to_owned(), r.outcome, r.message))
        .collect()
}

/// Deliveries both ways: the target fetches the peer's node document and identity to verify
/// an inbound delivery, and delivers to the peer; a blocked peer is one the node can reach.
const BOTH_WAYS: &[&str] = &[
    "fed.inbound.valid-delivery",
    "fed.inbound.sender-key-rotation",
    "fed.inbound.policy.blocked-peer",
    "fed.outbound.signed-delivery",
];

#[tokio::test]
async fn the_embedded_node_federates_with_the_tls_peers_and_needs_their_ca() {
    let none = loom_node::Quirks::none;
    let got = run_embedded(
        Federation::embedded_section(),
        none(),
        |_| {},
        BOTH_WAYS,
        1.0,
    )
    .await;
    for (id, outcome, message) in &got {
        assert_eq!(*outcome, Outcome::Pass, "{id}: {message:?}");
    }

    // The blocked peers are reachable over TLS too: a node ignoring its blocklist accepts
    // their delivery (a refusal for an unreachable peer would hide the broken rule).
    let got = run_embedded(
        Federation::embedded_section(),
        none().with(loom_node::Quirk::IgnoreFederationPolicy),
        |_| {},
        &["fed.inbound.policy.blocked-peer"],
        1.0,
    )
    .await;
    assert_eq!(got[0].1, Outcome::Fail, "{got:?}");

    // Without the run's CA the node cannot verify the peers' certificates: nothing arrives.
    let got = run_embedded(
        Federation::embedded_section(),
        none(),
        |c| c.federation.peer_ca.clear(),
        &["fed.outbound.signed-delivery"],
        0.2,
    )
    .await;
    assert_eq!(got[0].1, Outcome::Fail, "{got:?}");
    assert!(
        got[0]
            .2
            .as_deref()
            .unwrap_or("")
            .contains("nothing arrived"),
        "{got:?}"
    );
}

#[tokio::test]
async fn the_embedded_node_federates_with_plain_http_peers_too() {
    let mut plain = Federation::embedded_section();
    plain.tls = Some(false);
    let got = run_embedded(plain, loom_node::Quirks::none(), |_| {}, BOTH_WAYS, 1.0).await;
    for (id, outcome, message) in &got {
        assert_eq!(*outcome, Outcome::Pass, "{id}: {message:?}");
    }
}

/// The README's TLS example: the harness profile and the node's federation section parse, and
/// say what the text around them says.
#[test]
fn the_readme_tls_example_parses() {
    let readme =
        std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md"))
            .expect("README");
    let block = |marker: &str| -> String {
        let start = readme
            .find(marker)
            .unwrap_or_else(|| panic!("the README has {marker:?}"));
        readme[start..]
            .split("\n```")
            .next()
            .expect("a block")
            .to_owned()
    };
    let profile = loom_conformance::profile::Profile::parse(&block("# fed-tls.toml"))
        .expect("the README's profile parses");
    let f = profile.federation.expect("a [federation] section");
    assert!(f.tls());
    assert_eq!(f.ca_file.as_deref(), Some("/tmp/loom-peer-ca.pem"));

    let certify = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../reference/node/certify.toml"),
    )
    .expect("certify.toml");
    // The node reads its CA file while parsing: stand a real certificate in for the file the
    // README names (which exists only while a harness run is going on).
    let ca_file = std::env::temp_dir().join(format!("readme-peer-ca-{}.pem", std::process::id()));
    let ca = rcgen::generate_simple_self_signed(vec!["readme-ca.test".to_owned()]).unwrap();
    std::fs::write(&ca_file, ca.cert.pem()).unwrap();
    let node_toml = block("# node.toml");
    assert!(node_toml.contains("/tmp/loom-peer-ca.pem"), "{node_toml}");
    let node_toml = node_toml.replace("/tmp/loom-peer-ca.pem", &ca_file.display().to_string());
    let node = loom_node::NodeConfig::from_toml(&format!("{certify}\n{node_toml}"));
    let _ = std::fs::remove_file(&ca_file);
    let node = node.expect("the README's node configuration parses");
    assert_eq!(node.federation.peer_ca.len(), 1);
    assert_eq!(
        node.federation.peers.get("peer-0.test").map(String::as_str),
        Some("https://peer-0.test:9900")
    );
    assert_eq!(
        node.federation
            .resolve
            .get("peer-0.test")
            .map(String::as_str),
        Some("127.0.0.1:9900")
    );
}
