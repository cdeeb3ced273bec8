//! TLS for the client (v1.1 §14.1): rustls with the `ring` provider named explicitly,
//! TLS 1.3 only, ALPN `h2` then `http/1.1`. Trust comes from a root store the caller builds
//! (PEM files, or one self-signed certificate of a development node), or — only for
//! measurement against throwaway nodes — no verification at all.

use crate::error::ClientError;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, WebPkiSupportedAlgorithms};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};
use std::path::Path;
use std::sync::Arc;

/// ALPN protocols offered, in preference order.
pub const ALPN: [&[u8]; 2] = [b"h2", b"http/1.1"];

/// Which server certificates to accept.
#[derive(Debug, Clone)]
pub enum Trust {
    /// Certificates that chain to one of these roots.
    Roots(RootCertStore),
    /// Any certificate (no verification; the handshake signature is still checked). For load
    /// tests against a throwaway self-signed node only.
    InsecureAnyCertificate,
}

impl Trust {
    /// Trust exactly these certificates (DER) as roots — e.g. a development node's
    /// self-signed certificate.
    pub fn certificates(certs: &[CertificateDer<'static>]) -> Result<Trust, ClientError> {
        let mut roots = RootCertStore::empty();
        for c in certs {
            roots
                .add(c.clone())
                .map_err(|e| ClientError::Tls(format!("cannot trust certificate: {e}")))?;
        }
        Ok(Trust::Roots(roots))
    }

    /// Trust every `CERTIFICATE` block of a PEM file.
    pub fn pem_file(path: &Path) -> Result<Trust, ClientError> {
        let bad = |e: &dyn std::fmt::Display| {
            ClientError::Tls(format!("CA file {}: {e}", path.display()))
        };
        let certs = CertificateDer::pem_file_iter(path)
            .map_err(|e| bad(&e))?
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| bad(&e))?;
        if certs.is_empty() {
            return Err(bad(&"no CERTIFICATE block found"));
        }
        Trust::certificates(&certs)
    }
}

/// The rustls client configuration for `trust`: ring, TLS 1.3 only, ALPN `h2`, `http/1.1`.
pub fn client_config(trust: &Trust) -> Result<Arc<ClientConfig>, ClientError> {
    client_config_with(trust, &[&rustls::version::TLS13], &ALPN)
}

/// A rustls client configuration for `trust` with the given protocol versions and ALPN
/// offer (ring provider). The conformance harness uses it to probe what a server refuses.
pub fn client_config_with(
    trust: &Trust,
    versions: &[&'static rustls::SupportedProtocolVersion],
    alpn: &[&[u8]],
) -> Result<Arc<ClientConfig>, ClientError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(versions)
        .map_err(|e| ClientError::Tls(e.to_string()))?;
    let mut config = match trust {
        Trust::Roots(roots) => builder
            .with_root_certificates(roots.clone())
            .with_no_client_auth(),
        Trust::InsecureAnyCertificate => builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AnyCertificate(
                provider.signature_verification_algorithms,
            )))
            .with_no_client_auth(),
    };
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    Ok(Arc::new(config))
}

/// The server name to present and verify for `host` (a DNS name or an IP address).
pub fn server_name(host: &str) -> Result<ServerName<'static>, ClientError> {
    ServerName::try_from(host.to_owned())
        .map_err(|e| ClientError::Url(format!("{host:?} is not a valid TLS server name: {e}")))
}

/// Accepts any certificate but still verifies the handshake signature with it.
#[derive(Debug)]
struct AnyCertificate(WebPkiSupportedAlgorithms);

impl ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.0)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.0)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_schemes()
    }
}

/// 32 bytes from the operating system's CSPRNG (through ring). Only binaries' `main`
/// functions call this (DESIGN.md §3): libraries take seeds.
pub fn os_random_32() -> Result<[u8; 32], ClientError> {
    let provider: CryptoProvider = rustls::crypto::ring::default_provider();
    let mut b = [0u8; 32];
    provider
        .secure_random
        .fill(&mut b)
        .map_err(|_| ClientError::Input("the operating system's random source failed".into()))?;
    Ok(b)
}
