//! Sockets behind one seam (DESIGN.md §3, §8): a [`Dial`] opens a byte stream to
//! `host:port`. [`TokioDial`] uses real TCP; with the `sim` feature, [`SimDial`] uses turmoil's
//! simulated network, so the same client runs inside the simulator (reqwest cannot).

use std::fmt;
use std::future::Future;
use std::io;
use tokio::io::{AsyncRead, AsyncWrite};

/// Opens connections to a node.
pub trait Dial: Send + Sync + fmt::Debug + 'static {
    /// The stream type (TLS, if any, is layered on top by the client).
    type Io: AsyncRead + AsyncWrite + Unpin + Send + 'static;

    /// Connects to `host:port`.
    fn dial(&self, host: &str, port: u16) -> impl Future<Output = io::Result<Self::Io>> + Send;
}

/// Real TCP through tokio, with `TCP_NODELAY` (requests are small and latency-bound).
#[derive(Debug, Clone, Copy, Default)]
pub struct TokioDial;

impl Dial for TokioDial {
    type Io = tokio::net::TcpStream;

    async fn dial(&self, host: &str, port: u16) -> io::Result<Self::Io> {
        let s = tokio::net::TcpStream::connect((host, port)).await?;
        s.set_nodelay(true)?;
        Ok(s)
    }
}

/// turmoil's simulated TCP (feature `sim`); `host` is a turmoil host name.
#[cfg(feature = "sim")]
#[derive(Debug, Clone, Copy, Default)]
pub struct SimDial;

#[cfg(feature = "sim")]
impl Dial for SimDial {
    type Io = turmoil::net::TcpStream;

    async fn dial(&self, host: &str, port: u16) -> io::Result<Self::Io> {
        turmoil::net::TcpStream::connect((host, port)).await
    }
}
