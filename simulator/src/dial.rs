//! The nodes' outbound seam, recorded (v1.1 §15.3–§15.5). [`TracingDial`] dials turmoil
//! TCP like the node's own `SimDial` and wraps the stream: the request bytes and the
//! status line of the answer become a trace line; a `POST /v1/federation/deliver` is kept
//! for replay faults; and an accepted delivery whose signed `X-LOOM-Timestamp` is more than
//! the ±5 minute window of LOOM-HTTP-SIG-1 from the receiver's clock is a violation, seen the
//! moment it happens.

use crate::clock::SkewClock;
use crate::trace::{Captured, MAX_CAPTURED, Shared, short_hash};
use loom_node::outbound::{Connecting, Dial, Io};
use loom_protocol::Timestamp;
use loom_protocol::clock::Clock;
use loom_protocol::http_sig::HEADER_TIMESTAMP;
use serde_json::json;
use std::collections::BTreeMap;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// The freshness window of LOOM-HTTP-SIG-1 (v1.1 §15.3, §15.5): ±5 minutes.
pub const SKEW_WINDOW_MS: i64 = 5 * 60 * 1000;
/// Slack for network latency when judging the window from outside.
pub const SKEW_SLACK_MS: i64 = 2_000;

/// Who is who: host address literal → node domain, and each node's skew.
#[derive(Debug, Default)]
pub struct Topology {
    /// Address literal of a node host → its domain.
    pub domains: BTreeMap<String, String>,
    /// Domain → current clock skew in ms.
    pub skews: BTreeMap<String, Arc<AtomicI64>>,
}

/// The recording dialler of one node.
#[derive(Debug, Clone)]
pub struct TracingDial {
    /// The dialling node.
    pub node: String,
    /// The run's record.
    pub shared: Shared,
    /// Addresses and skews of every node.
    pub topology: Arc<std::sync::RwLock<Topology>>,
}

impl Dial for TracingDial {
    fn dial<'a>(&'a self, host: &'a str, port: u16) -> Connecting<'a> {
        Box::pin(async move {
            let r = turmoil::net::TcpStream::connect((host, port)).await;
            let to = self
                .topology
                .read()
                .map(|t| {
                    t.domains
                        .get(host)
                        .cloned()
                        .unwrap_or_else(|| host.to_owned())
                })
                .unwrap_or_default();
            match r {
                Ok(s) => Ok(Box::new(Recorded {
                    inner: s,
                    dial: self.clone(),
                    to,
                    host: host.to_owned(),
                    sent: Vec::new(),
                    recv: Vec::new(),
                    done: false,
                    receiver_at_send: None,
                }) as Box<dyn Io>),
                Err(e) => {
                    self.shared.lock().line(
                        "dial",
                        json!({"from": self.node, "to": to, "error": e.kind().to_string()}),
                    );
                    Err(e)
                }
            }
        })
    }
}

/// A recorded outbound connection.
struct Recorded {
    inner: turmoil::net::TcpStream,
    dial: TracingDial,
    to: String,
    host: String,
    sent: Vec<u8>,
    recv: Vec<u8>,
    done: bool,
    /// The dialled node's clock (unix ms) when the request's first bytes left: a clock
    /// jump while the request is in flight changes it.
    receiver_at_send: Option<i64>,
}

const MAX_RECORDED: usize = 1 << 20;

impl Recorded {
    /// The dialled node's clock now, in unix ms (what its freshness check reads).
    fn receiver_clock(&self) -> i64 {
        let skew = self
            .dial
            .topology
            .read()
            .ok()
            .and_then(|t| t.skews.get(&self.to).map(|s| s.load(Ordering::Relaxed)))
            .unwrap_or(0);
        SkewClock::new(Arc::new(AtomicI64::new(skew)))
            .now()
            .unix_ms()
    }

    /// The request's signed `X-LOOM-Timestamp` (v1.1 §15.3), in unix ms.
    fn signed_timestamp(&self) -> Option<i64> {
        let head = self.sent.split(|b| *b == b'\n').take_while(|l| l.len() > 1);
        head.filter_map(|l| std::str::from_utf8(l).ok())
            .filter_map(|l| l.split_once(':'))
            .find(|(k, _)| k.trim().eq_ignore_ascii_case(HEADER_TIMESTAMP))
            .and_then(|(_, v)| Timestamp::parse(v.trim()).ok())
            .map(|t| t.unix_ms())
    }

    /// Called once the answer's status line is in: trace, capture, check the skew window.
    fn answered(&mut self) {
        self.done = true;
        let status_line = self.recv.split(|b| *b == b'\r').next().unwrap_or_default();
        let status: u16 = std::str::from_utf8(status_line)
            .ok()
            .and_then(|l| l.split(' ').nth(1))
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        let request_line = self.sent.split(|b| *b == b'\r').next().unwrap_or_default();
        let request_line = String::from_utf8_lossy(request_line).into_owned();
        let deliver = request_line.starts_with("POST /v1/federation/deliver");
        let mut rec = self.dial.shared.lock();
        rec.line(
            "outbound",
            json!({"from": self.dial.node, "to": self.to, "request": request_line,
                   "request_sha": short_hash(&self.sent), "status": status}),
        );
        if !deliver {
            return;
        }
        if rec.captured.len() >= MAX_CAPTURED {
            rec.captured.remove(0);
        }
        rec.captured.push(Captured {
            from: self.dial.node.clone(),
            to: self.host.clone(),
            bytes: self.sent.clone(),
        });
        if (200..300).contains(&status) {
            // The signed timestamp against the receiver's clock, both when the request left
            // and when it was answered (a receiver's clock that jumped while the request was
            // in flight may have been read at either); a request without one is refused
            // by a correct node anyway and judged at the answer.
            let now = self.receiver_clock();
            let signed = self.signed_timestamp().unwrap_or(i64::MIN / 2);
            let diff = (signed - now)
                .abs()
                .min((signed - self.receiver_at_send.unwrap_or(now)).abs());
            if diff > SKEW_WINDOW_MS + SKEW_SLACK_MS {
                let t = turmoil::sim_elapsed()
                    .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
                    .unwrap_or(0);
                rec.violation(
                    "skew-window",
                    t,
                    format!(
                        "{} accepted a delivery from {} (status {status}) signed {} s away from its own clock, outside the ±300 s window (v1.1 §15.3, §15.5)",
                        self.to,
                        self.dial.node,
                        diff / 1000
                    ),
                );
            }
        }
    }
}

impl AsyncRead for Recorded {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let r = Pin::new(&mut self.inner).poll_read(cx, buf);
        if !self.done && matches!(r, Poll::Ready(Ok(()))) {
            let new = buf.filled()[before..].to_vec();
            self.recv.extend_from_slice(&new);
            if self.recv.windows(2).any(|w| w == b"\r\n") {
                self.answered();
            }
        }
        r
    }
}

impl AsyncWrite for Recorded {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let r = Pin::new(&mut self.inner).poll_write(cx, buf);
        if self.receiver_at_send.is_none() && matches!(r, Poll::Ready(Ok(_))) {
            self.receiver_at_send = Some(self.receiver_clock());
        }
        if let Poll::Ready(Ok(n)) = r
            && self.sent.len() + n <= MAX_RECORDED
        {
            self.sent.extend_from_slice(&buf[..n]);
        }
        r
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}
