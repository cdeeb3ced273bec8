//! The socket shell around [`Session`]: reads with a timeout per stage (RFC 5321 §4.5.3.2:
//! 5 minutes for a command, 3 minutes per DATA block by default), writes replies with a
//! timeout, upgrades to TLS on STARTTLS (rustls through tokio-rustls, the node's TLS stack,
//! TLS 1.2 and 1.3 only), hands finished transactions to a [`Handler`], and caps concurrent
//! connections. Generic over the stream so the same code runs on tokio sockets and in the
//! simulator.

use super::session::{Output, Recipients, Session, SessionConfig, Transaction, Verdict};
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::time::timeout;
use tokio_rustls::TlsAcceptor;

/// What the bridge does with a finished transaction.
pub trait Handler: Recipients + Send + Sync + 'static {
    /// Authenticate, map and store `tx` from `peer`; the verdict is the reply to DATA.
    fn deliver(
        &self,
        peer: SocketAddr,
        tx: Transaction,
    ) -> Pin<Box<dyn Future<Output = Verdict> + Send + '_>>;
}

/// Timeouts and limits of the listener.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Per-session settings.
    pub session: SessionConfig,
    /// Waiting for a command (RFC 5321 §4.5.3.2.7: 5 minutes).
    pub command_timeout: Duration,
    /// Waiting for the next DATA bytes (RFC 5321 §4.5.3.2.6: 3 minutes per block).
    pub data_timeout: Duration,
    /// Writing a reply to a client that does not read.
    pub write_timeout: Duration,
    /// The TLS handshake after STARTTLS.
    pub tls_handshake_timeout: Duration,
    /// Whole connection, whatever it does.
    pub connection_timeout: Duration,
    /// Concurrent connections; beyond it a client gets `421 4.3.2` and is closed.
    pub max_connections: usize,
}

impl ServerConfig {
    /// RFC 5321's timeouts with `session`.
    pub fn new(session: SessionConfig) -> Self {
        Self {
            session,
            command_timeout: Duration::from_secs(300),
            data_timeout: Duration::from_secs(180),
            write_timeout: Duration::from_secs(60),
            tls_handshake_timeout: Duration::from_secs(30),
            connection_timeout: Duration::from_secs(30 * 60),
            max_connections: 200,
        }
    }
}

enum Conn<S> {
    Plain(S),
    Tls(Box<tokio_rustls::server::TlsStream<S>>),
    Gone,
}

impl<S: AsyncRead + AsyncWrite + Unpin> Conn<S> {
    async fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Conn::Plain(s) => s.read(buf).await,
            Conn::Tls(s) => s.read(buf).await,
            Conn::Gone => Ok(0),
        }
    }

    async fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match self {
            Conn::Plain(s) => {
                s.write_all(buf).await?;
                s.flush().await
            }
            Conn::Tls(s) => {
                s.write_all(buf).await?;
                s.flush().await
            }
            Conn::Gone => Err(io::ErrorKind::NotConnected.into()),
        }
    }

    async fn shutdown(&mut self) {
        let _ = match self {
            Conn::Plain(s) => s.shutdown().await,
            Conn::Tls(s) => s.shutdown().await,
            Conn::Gone => Ok(()),
        };
    }
}

/// Runs one SMTP connection to its end. Errors are the connection's (timeouts, resets);
/// they are logged by the caller and never affect other connections.
pub async fn serve_connection<S, H>(
    stream: S,
    peer: SocketAddr,
    config: &ServerConfig,
    tls: Option<&TlsAcceptor>,
    handler: &H,
) -> io::Result<()>
where
    S: AsyncRead + AsyncWrite + Unpin + Send,
    H: Handler,
{
    let mut session_config = config.session.clone();
    session_config.starttls = session_config.starttls && tls.is_some();
    let (mut session, greeting) = Session::new(session_config);
    let mut conn = Conn::Plain(stream);
    let work = async {
        let mut queue = vec![greeting];
        let mut buf = vec![0u8; 16 * 1024];
        loop {
            let mut i = 0;
            while i < queue.len() {
                match std::mem::replace(&mut queue[i], Output::Close) {
                    Output::Reply(bytes) => {
                        timeout(config.write_timeout, conn.write_all(&bytes))
                            .await
                            .map_err(|_| io::Error::from(io::ErrorKind::TimedOut))??;
                    }
                    Output::Deliver(tx) => {
                        let verdict = handler.deliver(peer, tx).await;
                        queue.extend(session.finish(&verdict, handler));
                    }
                    Output::StartTls => {
                        let Some(acceptor) = tls else {
                            return Ok(());
                        };
                        let Conn::Plain(s) = std::mem::replace(&mut conn, Conn::Gone) else {
                            return Ok(());
                        };
                        let stream = timeout(config.tls_handshake_timeout, acceptor.accept(s))
                            .await
                            .map_err(|_| io::Error::from(io::ErrorKind::TimedOut))??;
                        conn = Conn::Tls(Box::new(stream));
                    }
                    Output::Close => {
                        conn.shutdown().await;
                        return Ok(());
                    }
                }
                i += 1;
            }
            queue.clear();
            let wait = if session.in_data() {
                config.data_timeout
            } else {
                config.command_timeout
            };
            let n = match timeout(wait, conn.read(&mut buf)).await {
                Ok(r) => r?,
                Err(_) => {
                    let _ = timeout(
                        config.write_timeout,
                        conn.write_all(b"421 4.4.2 timeout, closing connection\r\n"),
                    )
                    .await;
                    return Ok(());
                }
            };
            if n == 0 {
                return Ok(());
            }
            queue = session.feed(&buf[..n], handler);
        }
    };
    match timeout(config.connection_timeout, work).await {
        Ok(r) => r,
        Err(_) => Ok(()),
    }
}

/// Accepts connections on `listener` until it fails, each served on its own task, at
/// most [`ServerConfig::max_connections`] at once.
pub async fn serve_tcp<H: Handler>(
    listener: tokio::net::TcpListener,
    config: Arc<ServerConfig>,
    tls: Option<TlsAcceptor>,
    handler: Arc<H>,
) -> io::Result<()> {
    serve(listener, config, tls, handler).await
}

/// A source of incoming SMTP connections: a TCP listener, or a simulated network's.
pub trait Listener: Send + 'static {
    /// The connection type.
    type Io: AsyncRead + AsyncWrite + Unpin + Send + 'static;
    /// The next connection and its peer's address.
    fn accept(&mut self) -> impl Future<Output = io::Result<(Self::Io, SocketAddr)>> + Send;
}

impl Listener for tokio::net::TcpListener {
    type Io = tokio::net::TcpStream;

    async fn accept(&mut self) -> io::Result<(Self::Io, SocketAddr)> {
        let (s, peer) = tokio::net::TcpListener::accept(self).await?;
        let _ = s.set_nodelay(true);
        Ok((s, peer))
    }
}

/// [`serve_tcp`] on any [`Listener`].
pub async fn serve<L: Listener, H: Handler>(
    mut listener: L,
    config: Arc<ServerConfig>,
    tls: Option<TlsAcceptor>,
    handler: Arc<H>,
) -> io::Result<()> {
    let slots = Arc::new(tokio::sync::Semaphore::new(config.max_connections));
    loop {
        let (mut stream, peer) = match listener.accept().await {
            Ok(c) => c,
            Err(e) => {
                tracing::warn!(target: "loom::bridge", "smtp accept failed: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let Ok(permit) = slots.clone().try_acquire_owned() else {
            tokio::spawn(async move {
                let _ = stream
                    .write_all(b"421 4.3.2 too many connections, try again later\r\n")
                    .await;
                let _ = stream.shutdown().await;
            });
            continue;
        };
        let (config, tls, handler) = (config.clone(), tls.clone(), handler.clone());
        tokio::spawn(async move {
            let _permit = permit;
            if let Err(e) = serve_connection(stream, peer, &config, tls.as_ref(), &*handler).await {
                tracing::debug!(target: "loom::bridge", %peer, "smtp connection ended: {e}");
            }
        });
    }
}
