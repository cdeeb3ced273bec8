//! TLS for the real-socket node (v1.1 §14.1): "HTTP/2 over TLS 1.3 for all API traffic",
//! "TLS 1.2 and below MUST be rejected". The acceptor offers TLS 1.3 only, with the `ring`
//! provider named explicitly (no process-default provider is consulted), and ALPN `h2` then
//! `http/1.1`.
//!
//! Certificates come from PEM files ([`TlsSettings::Files`]) or are made at start-up
//! ([`TlsSettings::SelfSigned`], rcgen) for the node's domain, `localhost` and `127.0.0.1`.
//! A self-signed key is drawn from the operating system's randomness (ring): TLS key material
//! is never part of a deterministic trace, and the simulator runs without TLS.

use crate::config::TlsSettings;
use crate::rules::NodeRules;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use rustls::{ClientConfig, RootCertStore, ServerConfig};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokio_rustls::TlsAcceptor;

/// ALPN protocols offered, in preference order (v1.1 §14.1: HTTP/2).
pub const ALPN: [&[u8]; 2] = [b"h2", b"http/1.1"];

/// Why TLS could not be set up; every variant names the file or step concerned.
#[derive(Debug)]
pub enum TlsError {
    /// A PEM file could not be read or parsed.
    Pem {
        /// The file.
        path: PathBuf,
        /// What it should hold (`certificate chain`, `private key`).
        what: &'static str,
        /// The problem.
        problem: String,
    },
    /// Generating the self-signed certificate failed.
    SelfSigned(String),
    /// rustls refused the configuration (for example a key that does not match the chain).
    Config(String),
}

impl fmt::Display for TlsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TlsError::Pem {
                path,
                what,
                problem,
            } => write!(f, "TLS {what} file {}: {problem}", path.display()),
            TlsError::SelfSigned(e) => write!(f, "cannot make a self-signed certificate: {e}"),
            TlsError::Config(e) => write!(f, "TLS configuration rejected: {e}"),
        }
    }
}

impl std::error::Error for TlsError {}

/// A ready TLS acceptor and the certificate chain it presents.
#[derive(Clone)]
pub struct ServerTls {
    /// The acceptor to hand to [`crate::Node::serve`].
    pub acceptor: TlsAcceptor,
    /// The chain presented to clients, leaf first (DER). With [`TlsSettings::SelfSigned`]
    /// this is the generated certificate, which a client can add as its trust anchor.
    pub cert_chain: Vec<CertificateDer<'static>>,
}

impl fmt::Debug for ServerTls {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServerTls")
            .field("cert_chain_len", &self.cert_chain.len())
            .finish_non_exhaustive()
    }
}

/// Builds the TLS 1.3-only acceptor for `settings`; `domain` names the self-signed certificate.
pub fn server_tls(settings: &TlsSettings, domain: &str) -> Result<ServerTls, TlsError> {
    server_tls_with(settings, domain, &crate::rules::Spec)
}

/// [`server_tls`] for a node running `rules` ([`NodeRules::tls`]: the conformance
/// self-test's TLS mutants).
pub fn server_tls_with(
    settings: &TlsSettings,
    domain: &str,
    rules: &dyn NodeRules,
) -> Result<ServerTls, TlsError> {
    let (chain, key) = match settings {
        TlsSettings::Files { cert, key } => (load_chain(cert)?, load_key(key)?),
        TlsSettings::SelfSigned => self_signed(domain)?,
    };
    let config = rules
        .tls(server_config(chain.clone(), key)?)
        .map_err(|e| TlsError::Config(e.to_string()))?;
    Ok(ServerTls {
        acceptor: TlsAcceptor::from(Arc::new(config)),
        cert_chain: chain,
    })
}

/// The rustls server configuration: ring provider, TLS 1.3 only, ALPN `h2`, `http/1.1`.
pub fn server_config(
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
) -> Result<ServerConfig, TlsError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| TlsError::Config(e.to_string()))?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(|e| TlsError::Config(e.to_string()))?;
    config.alpn_protocols = ALPN.iter().map(|p| p.to_vec()).collect();
    Ok(config)
}

/// The federation client's TLS configuration (v1.1 §14.1, §15): TLS 1.3 only, ring
/// provider, ALPN `http/1.1` (the client speaks HTTP/1.1), server certificates verified
/// (webpki) against the operating system's roots when `native_roots` is set
/// (rustls-native-certs; unreadable system certificates are skipped) plus every
/// `CERTIFICATE` in the `extra_roots` PEM files (`--peer-ca`).
pub fn client_config(
    native_roots: bool,
    extra_roots: &[PathBuf],
) -> Result<ClientConfig, TlsError> {
    let mut roots = RootCertStore::empty();
    if native_roots {
        let (added, _ignored) =
            roots.add_parsable_certificates(native_root_certs().iter().cloned());
        tracing::debug!(added, "federation TLS: operating-system roots");
    }
    for path in extra_roots {
        const WHAT: &str = "peer CA certificates";
        for cert in load_chain(path).map_err(|e| match e {
            TlsError::Pem { path, problem, .. } => TlsError::Pem {
                path,
                what: WHAT,
                problem,
            },
            other => other,
        })? {
            roots
                .add(cert)
                .map_err(|e| pem_error(path, WHAT, format!("not a usable CA certificate: {e}")))?;
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| TlsError::Config(e.to_string()))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(config)
}

/// The operating system's trust anchors, read once per process.
fn native_root_certs() -> &'static [CertificateDer<'static>] {
    static CERTS: std::sync::OnceLock<Vec<CertificateDer<'static>>> = std::sync::OnceLock::new();
    CERTS.get_or_init(|| rustls_native_certs::load_native_certs().certs)
}

fn pem_error(path: &Path, what: &'static str, e: impl fmt::Display) -> TlsError {
    TlsError::Pem {
        path: path.to_owned(),
        what,
        problem: e.to_string(),
    }
}

/// Reads every `CERTIFICATE` block of a PEM file, leaf first.
fn load_chain(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    const WHAT: &str = "certificate chain";
    let chain = CertificateDer::pem_file_iter(path)
        .map_err(|e| pem_error(path, WHAT, e))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| pem_error(path, WHAT, e))?;
    if chain.is_empty() {
        return Err(pem_error(path, WHAT, "no CERTIFICATE block found"));
    }
    Ok(chain)
}

/// Reads the first private key of a PEM file (PKCS#8, PKCS#1 RSA or SEC1 EC).
fn load_key(path: &Path) -> Result<PrivateKeyDer<'static>, TlsError> {
    PrivateKeyDer::from_pem_file(path).map_err(|e| {
        let problem = match e {
            rustls::pki_types::pem::Error::NoItemsFound => {
                "no PRIVATE KEY block found (expected PKCS#8, RSA or EC PEM)".to_owned()
            }
            other => other.to_string(),
        };
        pem_error(path, "private key", problem)
    })
}

/// A fresh self-signed certificate for `domain`, `localhost` and `127.0.0.1`.
fn self_signed(
    domain: &str,
) -> Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>), TlsError> {
    let mut names = vec![domain.to_owned()];
    for extra in ["localhost", "127.0.0.1"] {
        if !names.iter().any(|n| n.eq_ignore_ascii_case(extra)) {
            names.push(extra.to_owned());
        }
    }
    let certified = rcgen::generate_simple_self_signed(names)
        .map_err(|e| TlsError::SelfSigned(e.to_string()))?;
    let cert = certified.cert.der().clone();
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(
        certified.signing_key.serialize_der(),
    ));
    Ok((vec![cert], key))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn self_signed_builds() {
        let tls = server_tls(&TlsSettings::SelfSigned, "node.test").unwrap();
        assert_eq!(tls.cert_chain.len(), 1);
    }

    #[test]
    fn missing_files_name_the_file() {
        let e = server_tls(
            &TlsSettings::Files {
                cert: "/nonexistent/cert.pem".into(),
                key: "/nonexistent/key.pem".into(),
            },
            "node.test",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("/nonexistent/cert.pem"), "{e}");
        assert!(e.contains("certificate chain"), "{e}");
    }

    #[test]
    fn garbage_files_are_clear_errors() {
        let dir = std::env::temp_dir().join(format!("loom-tls-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let cert = dir.join("cert.pem");
        let key = dir.join("key.pem");
        std::fs::write(&cert, "not a pem").unwrap();
        std::fs::write(&key, "not a pem").unwrap();
        let e = server_tls(
            &TlsSettings::Files {
                cert: cert.clone(),
                key: key.clone(),
            },
            "node.test",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("no CERTIFICATE block"), "{e}");
        // A valid chain with a garbage key names the key file.
        let ss = rcgen::generate_simple_self_signed(vec!["node.test".to_owned()]).unwrap();
        std::fs::write(&cert, ss.cert.pem()).unwrap();
        let e = server_tls(
            &TlsSettings::Files {
                cert: cert.clone(),
                key: key.clone(),
            },
            "node.test",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("key.pem") && e.contains("PRIVATE KEY"), "{e}");
        // Matching files work.
        std::fs::write(&key, ss.signing_key.serialize_pem()).unwrap();
        server_tls(&TlsSettings::Files { cert, key }, "node.test").unwrap();
        let _ = std::fs::remove_dir_all(&dir);
    }
}
