//! Sockets behind one seam (DESIGN.md §3): [`Accept`] yields connections from a tokio
//! listener or, with the `sim` feature, a turmoil listener, and [`serve`] runs the same
//! router over either — plain (HTTP/1.1 and h2c) or TLS 1.3 with ALPN.

use axum::Router;
use axum::extract::ConnectInfo;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::service::TowerToHyperService;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_rustls::TlsAcceptor;

/// A source of incoming connections.
pub trait Accept: Send + 'static {
    /// The connection type.
    type Io: AsyncRead + AsyncWrite + Unpin + Send + 'static;
    /// The next connection and its peer address.
    fn accept(&mut self) -> impl Future<Output = io::Result<(Self::Io, SocketAddr)>> + Send;
    /// The bound address.
    fn local_addr(&self) -> io::Result<SocketAddr>;
}

impl Accept for tokio::net::TcpListener {
    type Io = tokio::net::TcpStream;

    async fn accept(&mut self) -> io::Result<(Self::Io, SocketAddr)> {
        let (s, a) = tokio::net::TcpListener::accept(self).await?;
        let _ = s.set_nodelay(true);
        Ok((s, a))
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        tokio::net::TcpListener::local_addr(self)
    }
}

#[cfg(feature = "sim")]
impl Accept for turmoil::net::TcpListener {
    type Io = turmoil::net::TcpStream;

    async fn accept(&mut self) -> io::Result<(Self::Io, SocketAddr)> {
        turmoil::net::TcpListener::accept(self).await
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        turmoil::net::TcpListener::local_addr(self)
    }
}

/// How long a client may take to send a complete HTTP/1.1 request head (slow-loris defence).
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(30);

/// How long a client may take to complete the TLS handshake.
pub const TLS_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(30);

/// Serves `router` on every connection `listener` yields until `shutdown` completes. Each
/// connection runs on its own task; a connection error (a client hanging up, a failed TLS
/// handshake, garbage bytes) ends that connection only, and a client that stalls in its TLS
/// handshake or request head is dropped after [`TLS_HANDSHAKE_TIMEOUT`] /
/// [`HEADER_READ_TIMEOUT`]. Timers are tokio's, so inside turmoil they run on simulated time.
pub async fn serve<A: Accept>(
    mut listener: A,
    router: Router,
    tls: Option<TlsAcceptor>,
    shutdown: impl Future<Output = ()> + Send,
) -> io::Result<()> {
    tokio::pin!(shutdown);
    loop {
        let (io, peer) = tokio::select! {
            r = listener.accept() => match r {
                Ok(c) => c,
                Err(e) => {
                    tracing::warn!(error = %e, "accept failed");
                    continue;
                }
            },
            () = &mut shutdown => return Ok(()),
        };
        let app = router.clone().layer(axum::Extension(ConnectInfo(peer)));
        let tls = tls.clone();
        tokio::spawn(async move {
            let service = TowerToHyperService::new(app);
            let mut builder = auto::Builder::new(TokioExecutor::new());
            builder
                .http1()
                .timer(TokioTimer::new())
                .header_read_timeout(HEADER_READ_TIMEOUT)
                // `Date` comes from the node's injected clock (`http::error_bodies`), not
                // hyper's wall clock: the same seed gives the same bytes (DESIGN.md §3).
                .auto_date_header(false);
            builder.http2().auto_date_header(false);
            let result = match tls {
                Some(acceptor) => {
                    match tokio::time::timeout(TLS_HANDSHAKE_TIMEOUT, acceptor.accept(io)).await {
                        Err(_) => {
                            tracing::debug!(%peer, "TLS handshake timed out");
                            return;
                        }
                        Ok(Ok(stream)) => {
                            builder
                                .serve_connection_with_upgrades(TokioIo::new(stream), service)
                                .await
                        }
                        Ok(Err(e)) => {
                            tracing::debug!(%peer, error = %e, "TLS handshake failed");
                            return;
                        }
                    }
                }
                None => {
                    builder
                        .serve_connection_with_upgrades(TokioIo::new(io), service)
                        .await
                }
            };
            if let Err(e) = result {
                tracing::debug!(%peer, error = %e, "connection ended with an error");
            }
        });
    }
}
