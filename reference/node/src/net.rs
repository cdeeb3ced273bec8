//! Sockets behind one seam (DESIGN.md §3): [`Accept`] yields connections from a tokio
//! listener or, with the `sim` feature, a turmoil listener, and [`serve`] runs the same
//! router over either — plain (HTTP/1.1 and h2c) or TLS 1.3 with ALPN.
//!
//! Connection hygiene (issue 19) lives here too, configured by [`ConnectionLimits`]: an
//! idle timeout that also covers a socket that never sends a byte, a minimum request-body
//! rate, a write timeout for a client that does not read its response, a connection cap with
//! a fast 503 beyond it, accept-error back-off with rate-limited logging, and bounded
//! per-connection buffers. Every timer is tokio's, so inside turmoil they run on simulated
//! time (`tests/node/sim_timers.rs` proves each one there).

use crate::error::ApiError;
use axum::Router;
use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{HeaderValue, Request, Response, header};
use hyper::body::{Body as HttpBody, Frame, Incoming, SizeHint};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use serde::Deserialize;
use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::watch;
use tokio::time::{Instant, Sleep};
use tokio_rustls::TlsAcceptor;
use tower::ServiceExt;

/// A source of incoming connections.
pub trait Accept: Send + 'static {
    /// The connection type.
    type Io: AsyncRead + AsyncWrite + Unpin + Send + 'static;
    /// The next connection and its peer address.
    fn accept(&mut self) -> impl Future<Output = io::Result<(Self::Io, SocketAddr)>> + Send;
    /// The bound address.
    fn local_addr(&self) -> io::Result<SocketAddr>;
}

/// Any [`Accept`] as the bridge's SMTP listener.
#[derive(Debug)]
pub struct SmtpListener<A>(pub A);

impl<A: Accept> loom_bridge::smtp::server::Listener for SmtpListener<A> {
    type Io = A::Io;

    fn accept(&mut self) -> impl Future<Output = io::Result<(Self::Io, SocketAddr)>> + Send {
        self.0.accept()
    }
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

/// Default for [`ConnectionLimits::header_read_timeout_ms`] (slow-loris defence).
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(30);

/// Default for [`ConnectionLimits::tls_handshake_timeout_ms`].
pub const TLS_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(30);

/// Largest HTTP/1.1 read buffer per connection (hyper's default is ~400 KB); a request head
/// beyond it is answered 431.
pub const H1_MAX_BUF_BYTES: usize = 64 * 1024;
/// Largest HTTP/2 header list (hyper's default is 16 MB).
pub const H2_MAX_HEADER_LIST_BYTES: u32 = 64 * 1024;
/// HTTP/2 streams open at once per connection.
pub const H2_MAX_CONCURRENT_STREAMS: u32 = 64;
/// HTTP/2 flow-control window per stream and per connection (bytes buffered per peer).
pub const H2_STREAM_WINDOW_BYTES: u32 = 256 * 1024;
/// See [`H2_STREAM_WINDOW_BYTES`].
pub const H2_CONNECTION_WINDOW_BYTES: u32 = 1024 * 1024;
/// Largest HTTP/2 send buffer per stream.
pub const H2_MAX_SEND_BUF_BYTES: usize = 256 * 1024;
/// How long a connection beyond the cap may take to send the request its 503 answers.
pub const REFUSAL_TIMEOUT: Duration = Duration::from_secs(1);
/// Refused connections being answered at once; beyond this they are closed unanswered.
pub const MAX_REFUSALS_IN_FLIGHT: usize = 64;
/// At most one accept-failure log line per this interval (the first is logged at once).
pub const ACCEPT_LOG_INTERVAL: Duration = Duration::from_secs(10);
/// First and largest pause after an accept failure that signals exhaustion (`EMFILE`, …).
pub const ACCEPT_BACKOFF: (Duration, Duration) =
    (Duration::from_millis(5), Duration::from_millis(500));

/// Descriptors kept free for the store, its WAL, logs and outbound connections when the
/// connection cap is compared with the process's descriptor limit.
pub const RESERVED_DESCRIPTORS: u64 = 64;

/// The process's soft limit on open files (`ulimit -n`), where the OS tells it
/// (`/proc/self/limits` on Linux); `None` elsewhere or when unlimited.
pub fn descriptor_limit() -> Option<u64> {
    let limits = std::fs::read_to_string("/proc/self/limits").ok()?;
    let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
    line.trim_start_matches("Max open files")
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// The start-up warning when `max_connections` cannot be reached before the process runs
/// out of descriptors (issue 36): accept then fails with `EMFILE` instead of the cap's 503.
pub fn descriptor_warning(max_connections: usize, soft_limit: u64) -> Option<String> {
    let cap = u64::try_from(max_connections).unwrap_or(u64::MAX);
    (cap > 0 && cap.saturating_add(RESERVED_DESCRIPTORS) > soft_limit).then(|| {
        format!(
            "connections.max_connections = {cap} exceeds the descriptor limit {soft_limit} (ulimit -n) minus {RESERVED_DESCRIPTORS} kept for the store and logs: raise the limit or lower the cap, or connections beyond {} fail at accept instead of getting 503",
            soft_limit.saturating_sub(RESERVED_DESCRIPTORS)
        )
    })
}

/// Connection limits (`[connections]` in the configuration file; node README).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ConnectionLimits {
    /// A connection with no request in progress is closed this long after it opened or after
    /// its last response ended — a socket that never sends a byte included (0 = never).
    pub idle_timeout_ms: u64,
    /// Time to send a complete HTTP/1.1 request head once its first byte arrived (0 = off).
    pub header_read_timeout_ms: u64,
    /// Time to complete the TLS handshake.
    pub tls_handshake_timeout_ms: u64,
    /// Grace before the minimum body rate applies to a request body.
    pub body_grace_ms: u64,
    /// Minimum average request-body rate after the grace, in bytes/s: a body that falls
    /// behind `grace + received / rate` is cut off with 408 (0 = off).
    pub min_body_bytes_per_sec: u64,
    /// Longest pause inside a request body once it started: a client that sent much of a
    /// body fast and then goes silent is cut off with 408 here, not when the average rate
    /// catches up with it (issue 36: 1 MB earned 17 minutes) (0 = off).
    pub body_stall_ms: u64,
    /// Longest time to read one request body, however fast it comes (0 = off).
    pub body_deadline_ms: u64,
    /// Connections served at once; beyond it a connection gets 503 and is closed (0 = off).
    pub max_connections: usize,
    /// Connections served at once from one client address, so one client cannot take the
    /// whole cap (issue 36: 150 sockets from one address locked everyone out); beyond it
    /// that address's next connection gets 503 (0 = off).
    pub max_connections_per_ip: usize,
    /// A client that does not read: while a response is ready or the socket's send buffer
    /// is full, the connection is closed when no byte could be written for this long — a
    /// full socket buffer or an exhausted HTTP/2 flow-control window — so it cannot hold its
    /// memory (0 = off).
    pub write_timeout_ms: u64,
}

impl Default for ConnectionLimits {
    fn default() -> Self {
        ConnectionLimits {
            idle_timeout_ms: 30_000,
            header_read_timeout_ms: 30_000,
            tls_handshake_timeout_ms: 30_000,
            body_grace_ms: 10_000,
            min_body_bytes_per_sec: 1024,
            body_stall_ms: 30_000,
            body_deadline_ms: 120_000,
            max_connections: 4096,
            max_connections_per_ip: 1024,
            write_timeout_ms: 30_000,
        }
    }
}

fn ms(v: u64) -> Option<Duration> {
    (v > 0).then(|| Duration::from_millis(v))
}

/// Renders an error the node answers outside any route (503 beyond the cap, 408 for a slow
/// body) as a full response.
pub type Refusal = Arc<dyn Fn(ApiError) -> Response<Body> + Send + Sync>;

/// What [`serve_with`] needs beyond the router: the limits and how to render refusals.
#[derive(Clone)]
pub struct Hygiene {
    /// The limits.
    pub limits: ConnectionLimits,
    /// The renderer of refusals (the node's §24.1 bodies with a request id).
    pub refusal: Refusal,
}

impl std::fmt::Debug for Hygiene {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hygiene")
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

impl Hygiene {
    /// The default limits with a bare §24.1 body (no request id) for refusals.
    pub fn defaults() -> Hygiene {
        Hygiene {
            limits: ConnectionLimits::default(),
            refusal: Arc::new(bare_refusal),
        }
    }
}

fn bare_refusal(e: ApiError) -> Response<Body> {
    e.to_response(None, None)
}

/// Which cap a refused connection hit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cap {
    /// `max_connections`, all clients together.
    Node(usize),
    /// `max_connections_per_ip`, one client address.
    PerAddress(usize),
}

/// 503 for a connection beyond a connection cap (v1.1 §14.3: rate limits are node policy).
pub fn over_capacity(cap: Cap) -> ApiError {
    let why = match cap {
        Cap::Node(max) => format!(
            "the node serves at most {max} connections at once (connections.max_connections)"
        ),
        Cap::PerAddress(max) => format!(
            "the node serves at most {max} connections at once from one address (connections.max_connections_per_ip)"
        ),
    };
    ApiError::new(
        loom_protocol::ErrorCode::RateLimitExceeded,
        "$connection",
        why,
        "v1.1 §14.3",
    )
    .with_status(503)
    .with_header("Retry-After", "1")
}

/// Open connections per client address (looked up, never iterated: no order reaches output).
#[derive(Debug, Default)]
struct PerAddress(std::sync::Mutex<std::collections::HashMap<std::net::IpAddr, usize>>);

impl PerAddress {
    /// Counts one more connection from `ip` unless it already has `max` (0 = no limit).
    fn take(self: &Arc<Self>, ip: std::net::IpAddr, max: usize) -> Option<AddressSlot> {
        let mut open = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let n = open.entry(ip).or_insert(0);
        if max > 0 && *n >= max {
            return None;
        }
        *n += 1;
        Some(AddressSlot(self.clone(), ip))
    }
}

/// One connection counted against its address; dropped with the connection.
struct AddressSlot(Arc<PerAddress>, std::net::IpAddr);

impl Drop for AddressSlot {
    fn drop(&mut self) {
        let mut open = (self.0).0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(n) = open.get_mut(&self.1) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                open.remove(&self.1);
            }
        }
    }
}

/// 408 for a request body slower than the configured minimum rate, stalled, or not done by
/// the body deadline (v1.1 §14.3).
pub fn body_too_slow(limits: &ConnectionLimits) -> ApiError {
    ApiError::new(
        loom_protocol::ErrorCode::RateLimitExceeded,
        "$body",
        format!(
            "request body arrived slower than {} bytes/s after a grace of {} ms \
             (connections.min_body_bytes_per_sec), paused longer than {} ms \
             (connections.body_stall_ms) or took longer than {} ms \
             (connections.body_deadline_ms)",
            limits.min_body_bytes_per_sec,
            limits.body_grace_ms,
            limits.body_stall_ms,
            limits.body_deadline_ms
        ),
        "v1.1 §14.3",
    )
    .with_status(408)
}

/// Serves `router` with the default [`ConnectionLimits`]; see [`serve_with`].
pub async fn serve<A: Accept>(
    listener: A,
    router: Router,
    tls: Option<TlsAcceptor>,
    shutdown: impl Future<Output = ()> + Send,
) -> io::Result<()> {
    serve_with(listener, router, tls, Hygiene::defaults(), shutdown).await
}

/// Serves `router` on every connection `listener` yields until `shutdown` completes. Each
/// connection runs on its own task; a connection error (a client hanging up, a failed TLS
/// handshake, garbage bytes) ends that connection only. `hygiene` bounds what one client can
/// hold: time without a request, time for a request head or TLS handshake, body rate,
/// connections at once, buffer sizes (module docs).
pub async fn serve_with<A: Accept>(
    mut listener: A,
    router: Router,
    tls: Option<TlsAcceptor>,
    hygiene: Hygiene,
    shutdown: impl Future<Output = ()> + Send,
) -> io::Result<()> {
    tokio::pin!(shutdown);
    let open = Arc::new(AtomicUsize::new(0));
    let per_address = Arc::new(PerAddress::default());
    let refusing = Arc::new(AtomicUsize::new(0));
    let mut failures = AcceptFailures::default();
    let hygiene = Arc::new(hygiene);
    loop {
        let (io, peer) = tokio::select! {
            r = listener.accept() => match r {
                Ok(c) => {
                    failures.recovered();
                    c
                }
                Err(e) => {
                    let pause = failures.failed(&e);
                    if !pause.is_zero() {
                        tokio::select! {
                            () = tokio::time::sleep(pause) => {}
                            () = &mut shutdown => return Ok(()),
                        }
                    }
                    continue;
                }
            },
            () = &mut shutdown => return Ok(()),
        };
        let max = hygiene.limits.max_connections;
        if max > 0 && open.load(Ordering::Acquire) >= max {
            refuse(io, peer, tls.is_some(), Cap::Node(max), &hygiene, &refusing);
            continue;
        }
        let per_ip = hygiene.limits.max_connections_per_ip;
        let Some(address_slot) = per_address.take(peer.ip(), per_ip) else {
            refuse(
                io,
                peer,
                tls.is_some(),
                Cap::PerAddress(per_ip),
                &hygiene,
                &refusing,
            );
            continue;
        };
        let slot = Slot::take(&open);
        let app = router.clone();
        let tls = tls.clone();
        let hygiene = hygiene.clone();
        tokio::spawn(async move {
            let _slots = (slot, address_slot);
            serve_connection(io, peer, app, tls, &hygiene).await;
        });
    }
}

/// One counted connection; the count drops when the connection task ends.
struct Slot(Arc<AtomicUsize>);

impl Slot {
    fn take(open: &Arc<AtomicUsize>) -> Slot {
        open.fetch_add(1, Ordering::AcqRel);
        Slot(open.clone())
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A connection beyond the cap: over plain HTTP its first request is answered 503 within
/// [`REFUSAL_TIMEOUT`]; over TLS (no handshake is spent on it) or when
/// [`MAX_REFUSALS_IN_FLIGHT`] are already being answered, it is closed at once.
fn refuse<Io>(
    io: Io,
    peer: SocketAddr,
    tls: bool,
    cap: Cap,
    hygiene: &Arc<Hygiene>,
    refusing: &Arc<AtomicUsize>,
) where
    Io: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    tracing::debug!(%peer, ?cap, "connection refused: connection cap reached");
    if tls || refusing.load(Ordering::Acquire) >= MAX_REFUSALS_IN_FLIGHT {
        drop(io);
        return;
    }
    let slot = Slot::take(refusing);
    let hygiene = hygiene.clone();
    tokio::spawn(async move {
        let _slot = slot;
        let service = hyper::service::service_fn(move |_req: Request<Incoming>| {
            let mut resp = (hygiene.refusal)(over_capacity(cap));
            resp.headers_mut()
                .insert(header::CONNECTION, HeaderValue::from_static("close"));
            async move { Ok::<_, Infallible>(resp) }
        });
        let mut builder = auto::Builder::new(TokioExecutor::new());
        builder.http1().auto_date_header(false);
        builder.http2().auto_date_header(false);
        let conn = builder.serve_connection(TokioIo::new(io), service);
        let _ = tokio::time::timeout(REFUSAL_TIMEOUT, conn).await;
    });
}

async fn serve_connection<Io>(
    io: Io,
    peer: SocketAddr,
    app: Router,
    tls: Option<TlsAcceptor>,
    hygiene: &Arc<Hygiene>,
) where
    Io: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let limits = &hygiene.limits;
    let activity = Activity::new();
    let io = Progress {
        inner: io,
        activity: activity.clone(),
    };
    let service = {
        let activity = activity.clone();
        let hygiene = hygiene.clone();
        hyper::service::service_fn(move |req: Request<Incoming>| {
            handle(req, peer, app.clone(), activity.begin(), hygiene.clone())
        })
    };
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(ms(limits.header_read_timeout_ms))
        .max_buf_size(H1_MAX_BUF_BYTES)
        // `Date` comes from the node's injected clock (`http::error_bodies`), not
        // hyper's wall clock: the same seed gives the same bytes (DESIGN.md §3).
        .auto_date_header(false);
    builder
        .http2()
        .timer(TokioTimer::new())
        .max_header_list_size(H2_MAX_HEADER_LIST_BYTES)
        .max_concurrent_streams(H2_MAX_CONCURRENT_STREAMS)
        .initial_stream_window_size(H2_STREAM_WINDOW_BYTES)
        .initial_connection_window_size(H2_CONNECTION_WINDOW_BYTES)
        .max_send_buf_size(H2_MAX_SEND_BUF_BYTES)
        .auto_date_header(false);
    let idle = activity.closed(ms(limits.idle_timeout_ms), ms(limits.write_timeout_ms));
    tokio::pin!(idle);
    let result = match tls {
        Some(acceptor) => {
            let handshake = tokio::time::timeout(
                Duration::from_millis(limits.tls_handshake_timeout_ms),
                acceptor.accept(io),
            );
            let stream = tokio::select! {
                r = handshake => r,
                why = &mut idle => {
                    tracing::debug!(%peer, "closed: {why} during the TLS handshake");
                    return;
                }
            };
            match stream {
                Err(_) => {
                    tracing::debug!(%peer, "TLS handshake timed out");
                    return;
                }
                Ok(Err(e)) => {
                    tracing::debug!(%peer, error = %e, "TLS handshake failed");
                    return;
                }
                Ok(Ok(stream)) => {
                    let conn =
                        builder.serve_connection_with_upgrades(TokioIo::new(stream), service);
                    tokio::select! {
                        r = conn => r,
                        why = &mut idle => {
                            tracing::debug!(%peer, "closed: {why}");
                            return;
                        }
                    }
                }
            }
        }
        None => {
            let conn = builder.serve_connection_with_upgrades(TokioIo::new(io), service);
            tokio::select! {
                r = conn => r,
                why = &mut idle => {
                    tracing::debug!(%peer, "closed: {why}");
                    return;
                }
            }
        }
    };
    if let Err(e) = result {
        tracing::debug!(%peer, error = %e, "connection ended with an error");
    }
}

/// One request: the body is held to the minimum rate, the response body carries the
/// connection's in-flight mark until it has been sent, and a body cut off for slowness turns
/// the answer into 408 with `Connection: close`.
async fn handle(
    mut req: Request<Incoming>,
    peer: SocketAddr,
    app: Router,
    in_flight: InFlight,
    hygiene: Arc<Hygiene>,
) -> Result<Response<Body>, Infallible> {
    let limits = &hygiene.limits;
    if let Some(e) = framing_error(&req) {
        return Ok((hygiene.refusal)(e));
    }
    let slow = Arc::new(AtomicBool::new(false));
    req.extensions_mut().insert(ConnectInfo(peer));
    let req = req.map(|b| {
        Body::new(MinRate {
            inner: b,
            grace: Duration::from_millis(limits.body_grace_ms),
            bytes_per_sec: limits.min_body_bytes_per_sec,
            stall: Duration::from_millis(limits.body_stall_ms),
            max: Duration::from_millis(limits.body_deadline_ms),
            received: 0,
            started: None,
            last_byte: None,
            timer: None,
            slow: slow.clone(),
        })
    });
    let resp = match app.oneshot(req).await {
        Ok(r) => r,
        Err(never) => match never {},
    };
    let resp = if slow.load(Ordering::Acquire) {
        let mut r = (hygiene.refusal)(body_too_slow(limits));
        r.headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
        r
    } else {
        resp
    };
    let responding = in_flight.responding();
    Ok(resp.map(|b| {
        Body::new(Marked {
            inner: b,
            _in_flight: in_flight,
            _responding: responding,
        })
    }))
}

/// Longest request target interpreted, in bytes: twice the 8000 octets RFC 9110 §4.1 asks
/// every recipient to support; no LOOM route needs more than a few hundred. A longer one
/// is answered 414 (RFC 9110 §15.5.15). A request head larger than the HTTP/1.1 read buffer
/// ([`H1_MAX_BUF_BYTES`]) never reaches this check: hyper answers it 431 itself.
pub const MAX_URI_BYTES: usize = 16 * 1024;

/// A request whose framing the HTTP RFCs forbid, refused before any route sees it (issue 36,
/// item 9): an HTTP/1.1 request without `Host` (RFC 9112 §3.2: "A server MUST respond with a
/// 400 (Bad Request) status code to any HTTP/1.1 request message that lacks a Host header
/// field"), more than one `Authorization` field line (RFC 9110 §5.3: a singleton field;
/// which credentials to use would be a guess), and a target longer than [`MAX_URI_BYTES`].
fn framing_error<B>(req: &Request<B>) -> Option<ApiError> {
    let target = req.uri().path_and_query().map_or(0, |p| p.as_str().len());
    if target > MAX_URI_BYTES {
        return Some(
            ApiError::bad_request(
                "$uri",
                format!(
                    "the request target is {target} bytes; at most {MAX_URI_BYTES} are interpreted"
                ),
                "RFC 9110 §4.1, §15.5.15",
            )
            .with_status(414),
        );
    }
    if req.version() == axum::http::Version::HTTP_11 && !req.headers().contains_key(header::HOST) {
        return Some(ApiError::bad_request(
            "Host",
            "an HTTP/1.1 request must carry a Host header",
            "RFC 9112 §3.2",
        ));
    }
    if req.headers().get_all(header::AUTHORIZATION).iter().count() > 1 {
        return Some(ApiError::bad_request(
            "Authorization",
            "more than one Authorization header: send one set of credentials",
            "RFC 9110 §5.3, §11.6.2; v1.1 §14.2",
        ));
    }
    None
}

/// The request-body error of [`MinRate`].
#[derive(Debug)]
struct BodyTooSlow;

impl std::fmt::Display for BodyTooSlow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("request body slower than the minimum rate")
    }
}

impl std::error::Error for BodyTooSlow {}

/// A request body that fails once it falls behind `grace + received / bytes_per_sec`, once
/// it pauses longer than `stall` after a byte, or once `max` has passed, all counted from the
/// first time the handler reads it (each 0 = off).
struct MinRate {
    inner: Incoming,
    grace: Duration,
    bytes_per_sec: u64,
    stall: Duration,
    max: Duration,
    received: u64,
    started: Option<Instant>,
    last_byte: Option<Instant>,
    timer: Option<Pin<Box<Sleep>>>,
    slow: Arc<AtomicBool>,
}

impl MinRate {
    /// The earliest of the three deadlines in force, if any.
    fn deadline(&self, started: Instant) -> Option<Instant> {
        let rate = (self.bytes_per_sec > 0).then(|| {
            started
                + self.grace
                + Duration::from_secs_f64(self.received as f64 / self.bytes_per_sec as f64)
        });
        let stall = (!self.stall.is_zero())
            .then(|| self.last_byte.map(|t| t + self.stall))
            .flatten();
        let max = (!self.max.is_zero()).then(|| started + self.max);
        [rate, stall, max].into_iter().flatten().min()
    }
}

impl HttpBody for MinRate {
    type Data = hyper::body::Bytes;
    type Error = Box<dyn std::error::Error + Send + Sync>;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        let this = &mut *self;
        let started = *this.started.get_or_insert_with(Instant::now);
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(data) = frame.data_ref() {
                    this.received += data.len() as u64;
                    if !data.is_empty() {
                        this.last_byte = Some(Instant::now());
                    }
                }
                return Poll::Ready(Some(Ok(frame)));
            }
            Poll::Ready(Some(Err(e))) => return Poll::Ready(Some(Err(e.into()))),
            Poll::Ready(None) => return Poll::Ready(None),
            Poll::Pending => {}
        }
        let Some(deadline) = this.deadline(started) else {
            return Poll::Pending;
        };
        let timer = this
            .timer
            .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(deadline)));
        if timer.deadline() != deadline {
            timer.as_mut().reset(deadline);
        }
        match timer.as_mut().poll(cx) {
            Poll::Ready(()) => {
                this.slow.store(true, Ordering::Release);
                Poll::Ready(Some(Err(Box::new(BodyTooSlow))))
            }
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// A response body that keeps its request counted as in flight, and as a response being
/// written, until it is sent or dropped.
struct Marked {
    inner: Body,
    _in_flight: InFlight,
    _responding: Responding,
}

impl HttpBody for Marked {
    type Data = hyper::body::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// Requests in progress on one connection, responses being written, and since when it has
/// had no request.
#[derive(Debug, Clone, Copy)]
struct Load {
    in_flight: usize,
    responding: usize,
    /// The socket refused the last write (its send buffer is full).
    write_blocked: bool,
    idle_since: Instant,
}

/// The clocks of one connection: the idle clock (requests in progress) and the write clock
/// (when bytes last left for the client).
#[derive(Debug, Clone)]
struct Activity(Arc<ActivityInner>);

#[derive(Debug)]
struct ActivityInner {
    load: watch::Sender<Load>,
    /// When the connection opened; [`ActivityInner::written_ms`] counts from here.
    origin: Instant,
    /// Milliseconds after `origin` at which bytes were last written (or a response became
    /// ready). An atomic, not the watch channel: it changes on every write and nobody needs
    /// waking for it.
    written_ms: AtomicU64,
    /// Mirror of [`Load::write_blocked`], read on every write without touching the channel.
    write_blocked: AtomicBool,
}

impl Activity {
    fn new() -> Activity {
        let now = Instant::now();
        Activity(Arc::new(ActivityInner {
            load: watch::Sender::new(Load {
                in_flight: 0,
                responding: 0,
                write_blocked: false,
                idle_since: now,
            }),
            origin: now,
            written_ms: AtomicU64::new(0),
            write_blocked: AtomicBool::new(false),
        }))
    }

    /// Marks a request in progress until the returned guard drops.
    fn begin(&self) -> InFlight {
        self.0.load.send_modify(|l| l.in_flight += 1);
        InFlight(self.clone())
    }

    /// Records that bytes left for the client now.
    fn wrote(&self) {
        let ms = u64::try_from(self.0.origin.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.0.written_ms.store(ms, Ordering::Relaxed);
        if self.0.write_blocked.load(Ordering::Relaxed) {
            self.set_blocked(false);
        }
    }

    /// The socket's send buffer filled (or drained again): the write clock applies while it
    /// is full even between responses (HTTP/1.1 pipelining, an HTTP/2 connection's frames).
    fn set_blocked(&self, blocked: bool) {
        if self.0.write_blocked.swap(blocked, Ordering::Relaxed) != blocked {
            self.0.load.send_modify(|l| l.write_blocked = blocked);
        }
    }

    fn last_write(&self) -> Instant {
        self.0.origin + Duration::from_millis(self.0.written_ms.load(Ordering::Relaxed))
    }

    /// Completes, naming the timer, once the connection has had no request in progress for
    /// `idle`, or has had a response ready or a full send buffer with no byte written for
    /// `write`.
    async fn closed(&self, idle: Option<Duration>, write: Option<Duration>) -> &'static str {
        const IDLE: &str = "idle timeout";
        const WRITE: &str = "write timeout";
        let mut rx = self.0.load.subscribe();
        loop {
            let load = *rx.borrow_and_update();
            let idle_at = idle
                .filter(|_| load.in_flight == 0)
                .map(|d| (load.idle_since + d, IDLE));
            let write_at = write
                .filter(|_| load.responding > 0 || load.write_blocked)
                .map(|d| (self.last_write() + d, WRITE));
            let deadline = match (idle_at, write_at) {
                (Some(i), Some(w)) => Some(if i.0 <= w.0 { i } else { w }),
                (i, w) => i.or(w),
            };
            match deadline {
                Some((at, why)) => tokio::select! {
                    () = tokio::time::sleep_until(at) => {
                        // A write may have moved the write clock while this slept.
                        let moved = why == WRITE
                            && self.last_write() + write.unwrap_or_default() > at;
                        if !moved {
                            return why;
                        }
                    }
                    r = rx.changed() => if r.is_err() { return std::future::pending().await },
                },
                None => {
                    if rx.changed().await.is_err() {
                        return std::future::pending().await;
                    }
                }
            }
        }
    }
}

/// A request in progress (see [`Activity::begin`]).
#[derive(Debug)]
struct InFlight(Activity);

impl InFlight {
    /// Marks this request's response as being written until the returned guard drops; the
    /// write clock starts now.
    fn responding(&self) -> Responding {
        let a = &self.0;
        a.wrote();
        a.0.load.send_modify(|l| l.responding += 1);
        Responding(a.clone())
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.0.load.send_modify(|l| {
            l.in_flight -= 1;
            if l.in_flight == 0 {
                l.idle_since = Instant::now();
            }
        });
    }
}

/// A response being written (see [`InFlight::responding`]).
#[derive(Debug)]
struct Responding(Activity);

impl Drop for Responding {
    fn drop(&mut self) {
        self.0.0.load.send_modify(|l| l.responding -= 1);
    }
}

/// The connection's socket, recording every successful write on the write clock.
struct Progress<Io> {
    inner: Io,
    activity: Activity,
}

impl<Io: AsyncRead + Unpin> AsyncRead for Progress<Io> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<Io: AsyncWrite + Unpin> Progress<Io> {
    fn record(&self, r: Poll<io::Result<usize>>) -> Poll<io::Result<usize>> {
        match &r {
            Poll::Ready(Ok(n)) if *n > 0 => self.activity.wrote(),
            Poll::Pending => self.activity.set_blocked(true),
            _ => {}
        }
        r
    }
}

impl<Io: AsyncWrite + Unpin> AsyncWrite for Progress<Io> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let r = Pin::new(&mut self.inner).poll_write(cx, buf);
        self.record(r)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let r = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        self.record(r)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// Accept failures: back-off when they signal exhaustion, and at most one log line per
/// [`ACCEPT_LOG_INTERVAL`] with the count of the ones not logged.
#[derive(Debug, Default)]
struct AcceptFailures {
    backoff: Option<Duration>,
    next_log: Option<Instant>,
    unlogged: u64,
    since_recovery: u64,
}

impl AcceptFailures {
    /// Records a failure; returns how long to pause before the next accept.
    fn failed(&mut self, e: &io::Error) -> Duration {
        self.since_recovery += 1;
        let now = Instant::now();
        if self.next_log.is_none_or(|t| now >= t) {
            tracing::warn!(
                error = %e,
                suppressed = self.unlogged,
                "accept failed ({} more since the last report; at most one report per {} s)",
                self.unlogged,
                ACCEPT_LOG_INTERVAL.as_secs()
            );
            self.unlogged = 0;
            self.next_log = Some(now + ACCEPT_LOG_INTERVAL);
        } else {
            self.unlogged += 1;
        }
        if is_exhaustion(e) {
            let (first, most) = ACCEPT_BACKOFF;
            let pause = self.backoff.map_or(first, |b| (b * 2).min(most));
            self.backoff = Some(pause);
            pause
        } else {
            Duration::ZERO
        }
    }

    /// An accept succeeded: the back-off resets; the end of a run of failures is reported
    /// under the same rate limit as the failures.
    fn recovered(&mut self) {
        self.backoff = None;
        if self.since_recovery == 0 {
            return;
        }
        let now = Instant::now();
        if self.next_log.is_none_or(|t| now >= t) {
            tracing::warn!(
                failures = self.since_recovery,
                "accepting again after {} failed accepts",
                self.since_recovery
            );
            self.since_recovery = 0;
            self.unlogged = 0;
            self.next_log = Some(now + ACCEPT_LOG_INTERVAL);
        }
    }
}

/// Out of descriptors or memory: retrying at once would spin (issue 19: 4.3 million log
/// lines in 9 s).
fn is_exhaustion(e: &io::Error) -> bool {
    // EMFILE 24, ENFILE 23, ENOBUFS 105, ENOMEM 12 (Linux numbering).
    matches!(e.raw_os_error(), Some(24 | 23 | 105 | 12)) || e.kind() == io::ErrorKind::OutOfMemory
}
