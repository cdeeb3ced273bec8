//! TLS for the fake federation peers (issue 15; v1.1 §14.1: "HTTP/2 over TLS 1.3 for all
//! API traffic", which node-to-node delivery is): a per-run certificate authority made with
//! rcgen whose private key never leaves the harness process, and a certificate for each fake
//! peer's own domain issued by it, presented by SNI. The server side is configured like the
//! reference node's (`loom_node::tls::server_config`): ring provider named explicitly, TLS 1.3
//! only, ALPN `h2` then `http/1.1`.
//!
//! The target is told to trust the CA certificate (PEM, written to
//! [`PeerTls::ca_file`]; the profile's `{peer_ca_pem_path}` / `{peer_ca_pem}` placeholders),
//! and to reach a peer's domain at the harness address (`--resolve`-style, like Complement's
//! homerunner). TLS key material comes from the operating system's randomness (ring): it is
//! never part of a deterministic trace, exactly as with the node's self-signed certificate.

use rustls::ServerConfig;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::{CertifiedKey, SigningKey};
use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use tokio_rustls::TlsAcceptor;

/// ALPN protocols the fake peer offers, in preference order (as the node does).
const ALPN: [&[u8]; 2] = [b"h2", b"http/1.1"];

/// The per-run CA and the certificates it issued for the fake peers.
pub struct PeerTls {
    ca: rcgen::CertifiedIssuer<'static, rcgen::KeyPair>,
    ca_pem: String,
    ca_file: PathBuf,
    remove_ca_file: bool,
    /// One key for every leaf certificate (the fake peers live in one process anyway).
    leaf_key: rcgen::KeyPair,
    leaf_signer: Arc<dyn SigningKey>,
    /// The certificates presented (shared with the acceptor, which may outlive this: the CA
    /// file goes when this is dropped, not when the last connection ends).
    certs: Arc<Certs>,
}

/// The certificates the acceptor presents.
#[derive(Debug, Default)]
struct Certs {
    /// By lower-case server name.
    by_name: Mutex<BTreeMap<String, Arc<CertifiedKey>>>,
    /// Presented when the client sends no server name (an IP-literal URL such as
    /// `https://127.0.0.1:9900/peer/3`): a certificate for the harness host.
    no_sni: Mutex<Option<Arc<CertifiedKey>>>,
}

impl fmt::Debug for PeerTls {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PeerTls")
            .field("ca_file", &self.ca_file)
            .field(
                "names",
                &self
                    .certs
                    .by_name
                    .lock()
                    .map(|c| c.len())
                    .unwrap_or_default(),
            )
            .finish_non_exhaustive()
    }
}

impl Drop for PeerTls {
    fn drop(&mut self) {
        if self.remove_ca_file {
            let _ = std::fs::remove_file(&self.ca_file);
            if let Some(dir) = self.ca_file.parent() {
                let _ = std::fs::remove_dir(dir);
            }
        }
    }
}

/// A fresh temporary path for this run's CA file, in a directory of its own (process id and
/// a counter: several runs in one test process each get their own).
fn default_ca_file() -> PathBuf {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    std::env::temp_dir()
        .join(format!(
            "loom-conformance-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ))
        .join("peer-ca.pem")
}

impl PeerTls {
    /// A fresh CA; its certificate (PEM) is written to `ca_file` (a file of its own in the
    /// temporary directory when `None`, removed again when this is dropped). Errors name
    /// `federation.ca_file`.
    pub fn new(ca_file: Option<&Path>) -> Result<PeerTls, String> {
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new())
            .map_err(|e| format!("the fake peers' CA: {e}"))?;
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "loom-conformance fake peer CA");
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params.key_usages = vec![
            rcgen::KeyUsagePurpose::KeyCertSign,
            rcgen::KeyUsagePurpose::CrlSign,
        ];
        let key = rcgen::KeyPair::generate().map_err(|e| format!("the fake peers' CA: {e}"))?;
        let ca = rcgen::CertifiedIssuer::self_signed(params, key)
            .map_err(|e| format!("the fake peers' CA: {e}"))?;
        let ca_pem = ca.pem();
        let leaf_key =
            rcgen::KeyPair::generate().map_err(|e| format!("the fake peers' TLS key: {e}"))?;
        let der = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(leaf_key.serialize_der()));
        let leaf_signer = rustls::crypto::ring::sign::any_supported_type(&der)
            .map_err(|e| format!("the fake peers' TLS key: {e}"))?;
        let (ca_file, remove_ca_file) = match ca_file {
            Some(p) => (p.to_owned(), false),
            None => (default_ca_file(), true),
        };
        if let Some(dir) = ca_file.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| {
                format!(
                    "federation.ca_file {}: cannot create its directory: {e}",
                    ca_file.display()
                )
            })?;
        }
        std::fs::write(&ca_file, &ca_pem).map_err(|e| {
            format!(
                "federation.ca_file {}: cannot write the fake peers' CA certificate: {e}",
                ca_file.display()
            )
        })?;
        Ok(PeerTls {
            ca,
            ca_pem,
            ca_file,
            remove_ca_file,
            leaf_key,
            leaf_signer,
            certs: Arc::new(Certs::default()),
        })
    }

    /// The CA certificate, PEM.
    pub fn ca_pem(&self) -> &str {
        &self.ca_pem
    }

    /// Where the CA certificate PEM was written.
    pub fn ca_file(&self) -> &Path {
        &self.ca_file
    }

    /// The CA certificate, DER (a client's trust anchor).
    pub fn ca_der(&self) -> CertificateDer<'static> {
        self.ca.der().clone()
    }

    /// A certificate for `names` (DNS names or IP literals) issued by the CA, leaf then CA.
    fn issue(&self, names: &[String]) -> Result<Arc<CertifiedKey>, String> {
        let mut params = rcgen::CertificateParams::new(names.to_vec())
            .map_err(|e| format!("a fake peer certificate for {names:?}: {e}"))?;
        if let Some(first) = names.first() {
            params
                .distinguished_name
                .push(rcgen::DnType::CommonName, first.as_str());
        }
        let cert = params
            .signed_by(&self.leaf_key, &self.ca)
            .map_err(|e| format!("a fake peer certificate for {names:?}: {e}"))?;
        Ok(Arc::new(CertifiedKey::new(
            vec![cert.der().clone(), self.ca.der().clone()],
            self.leaf_signer.clone(),
        )))
    }

    /// Issues (once) the certificate of a fake peer's `domain`, presented when a client asks
    /// for that name (SNI).
    pub fn add_domain(&self, domain: &str) -> Result<(), String> {
        let name = domain.to_ascii_lowercase();
        if self
            .certs
            .by_name
            .lock()
            .map(|c| c.contains_key(&name))
            .unwrap_or(false)
        {
            return Ok(());
        }
        let ck = self.issue(std::slice::from_ref(&name))?;
        if let Ok(mut c) = self.certs.by_name.lock() {
            c.insert(name, ck);
        }
        Ok(())
    }

    /// Sets the certificate presented without SNI: for `host` (the harness address's host,
    /// a name or an IP literal) and `localhost`.
    pub fn set_no_sni_host(&self, host: &str) -> Result<(), String> {
        let mut names = vec![
            host.trim_start_matches('[')
                .trim_end_matches(']')
                .to_owned(),
        ];
        if !names[0].eq_ignore_ascii_case("localhost") {
            names.push("localhost".into());
        }
        let ck = self.issue(&names)?;
        if let Ok(mut d) = self.certs.no_sni.lock() {
            *d = Some(ck);
        }
        Ok(())
    }

    /// The TLS 1.3-only acceptor presenting each peer's certificate by SNI.
    pub fn acceptor(&self) -> Result<TlsAcceptor, String> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = ServerConfig::builder_with_provider(provider)
            .with_protocol_versions(&[&rustls::version::TLS13])
            .map_err(|e| format!("the fake peers' TLS configuration: {e}"))?
            .with_no_client_auth()
            .with_cert_resolver(Arc::new(BySni(self.certs.clone())));
        config.alpn_protocols = ALPN.iter().map(|p| p.to_vec()).collect();
        Ok(TlsAcceptor::from(Arc::new(config)))
    }
}

/// Picks the certificate by the name the client asked for; an unknown name gets none (the
/// handshake fails: there is no such fake peer).
#[derive(Debug)]
struct BySni(Arc<Certs>);

impl ResolvesServerCert for BySni {
    fn resolve(&self, hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        match hello.server_name() {
            Some(name) => self
                .0
                .by_name
                .lock()
                .ok()?
                .get(&name.to_ascii_lowercase())
                .cloned(),
            None => self.0.no_sni.lock().ok()?.clone(),
        }
    }
}
