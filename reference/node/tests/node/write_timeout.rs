//! The write timeout on a real tokio socket over HTTP/1.1 (issue 19): a client that pipelines
//! requests and never reads fills its receive buffer and the node's send buffer; with
//! `write_timeout_ms` the node closes the connection once no byte could be written for that
//! long, although the idle timeout (60 s here) would keep it. The HTTP/2 flow-control case
//! and every timer's exact time are in `sim_timers.rs` (simulated clock).

use crate::support::TestNode;
use loom_node::net::ConnectionLimits;
use std::net::SocketAddr;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::oneshot;

async fn start(write_timeout_ms: u64) -> (SocketAddr, oneshot::Sender<()>) {
    let t = TestNode::with(|c| {
        c.connections = ConnectionLimits {
            idle_timeout_ms: 60_000,
            write_timeout_ms,
            ..ConnectionLimits::default()
        };
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = oneshot::channel::<()>();
    tokio::spawn(async move {
        t.node
            .serve(listener, None, async {
                let _ = stopped.await;
            })
            .await
            .unwrap();
    });
    (addr, stop)
}

const REQUESTS: usize = 12_000;

/// Pipelines [`REQUESTS`] discovery requests without reading, waits `stall`, then reads for
/// at most `read_for`; returns (responses seen, whether the node closed the connection).
async fn unread_pipeline(addr: SocketAddr, stall: Duration, read_for: Duration) -> (usize, bool) {
    let sock = tokio::net::TcpSocket::new_v4().unwrap();
    sock.set_recv_buffer_size(4096).unwrap();
    let s = sock.connect(addr).await.unwrap();
    let (mut rd, mut wr) = s.into_split();
    let writer = tokio::spawn(async move {
        let one = b"GET /.well-known/loom.json HTTP/1.1\r\nhost: node.test\r\n\r\n";
        let all: Vec<u8> = one.repeat(REQUESTS);
        // Blocks once the node stops reading; an error once it has closed.
        let _ = wr.write_all(&all).await;
        wr
    });
    tokio::time::sleep(stall).await;
    let mut out = Vec::new();
    let closed = tokio::time::timeout(read_for, rd.read_to_end(&mut out))
        .await
        .is_ok();
    writer.abort();
    let seen = out.windows(12).filter(|w| w == b"HTTP/1.1 200").count();
    (seen, closed)
}

#[tokio::test]
async fn a_client_that_never_reads_is_cut_off_by_the_write_timeout() {
    let (addr, _stop) = start(300).await;
    let (seen, closed) =
        unread_pipeline(addr, Duration::from_secs(2), Duration::from_secs(10)).await;
    assert!(closed, "the node closed the connection");
    assert!(
        seen < REQUESTS,
        "cut off before answering everything ({seen} of {REQUESTS} answered)"
    );
}

#[tokio::test]
async fn without_the_write_timeout_the_connection_is_held() {
    let (addr, _stop) = start(0).await;
    let (_, closed) = unread_pipeline(addr, Duration::from_secs(2), Duration::from_secs(2)).await;
    assert!(!closed, "the control: only the write timeout closes it");
}
