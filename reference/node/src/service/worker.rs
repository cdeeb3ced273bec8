//! The loop shared by the node's queue workers (the federation outbox, §15.6, and the
//! outbound mail queue, §21.3): a pass over what is due, then a wait until the next row is
//! due (at most `idle_ms`, so clock changes are seen) or until the writer queues something.
//!
//! A pass that fails is followed by a pause, never an immediate retry: when the store
//! cannot be written (a full disk, failing `fsync`s) the rows a pass should have moved stay
//! due, and retrying at once would spin — a busy core and a log line per pass on a real
//! node, a simulation whose clock never advances in the simulator, where the storage-fault
//! scenario found it (issue 36, Build 8).

use std::time::Duration;
use tokio::sync::Notify;

/// How one worker waits.
pub(crate) struct Pacing<'a> {
    /// What the log lines name.
    pub name: &'static str,
    /// Woken when the writer queues something.
    pub wake: &'a Notify,
    /// Longest wait between two passes, in ms.
    pub idle_ms: i64,
    /// Wait after a failed pass, in ms.
    pub pause_ms: i64,
}

/// How long to wait after a pass: after a failed one, `pause_ms`; otherwise until the next
/// row is due (`next_due`, unix ms; `None` when nothing is queued or the store cannot say),
/// at most `idle_ms`. Zero means "run the next pass now".
pub(crate) fn wait_after<E: std::fmt::Display>(
    pacing: &Pacing<'_>,
    pass: Result<(), E>,
    next_due: impl FnOnce() -> Option<i64>,
    now: i64,
) -> i64 {
    match pass {
        Err(e) => {
            tracing::warn!(worker = pacing.name, error = %e, pause_ms = pacing.pause_ms,
                "queue pass failed; pausing before the next one");
            pacing.pause_ms.max(1)
        }
        Ok(()) => match next_due() {
            Some(t) => (t - now).clamp(0, pacing.idle_ms),
            None => pacing.idle_ms,
        },
    }
}

/// Waits `wait_ms` or until the writer queues something (a zero wait only yields).
pub(crate) async fn pause(pacing: &Pacing<'_>, wait_ms: i64) {
    if wait_ms <= 0 {
        tokio::task::yield_now().await;
        return;
    }
    let wait = Duration::from_millis(u64::try_from(wait_ms).unwrap_or(1_000));
    tokio::select! {
        () = pacing.wake.notified() => {}
        () = tokio::time::sleep(wait) => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pacing(wake: &Notify) -> Pacing<'_> {
        Pacing {
            name: "test",
            wake,
            idle_ms: 1_000,
            pause_ms: 500,
        }
    }

    #[test]
    fn a_failed_pass_pauses_even_when_a_row_is_due_now() {
        let wake = Notify::new();
        let p = pacing(&wake);
        // The row the failed pass could not move is still due: no hot loop.
        assert_eq!(wait_after(&p, Err("disk I/O error"), || Some(0), 10), 500);
        assert_eq!(wait_after::<&str>(&p, Ok(()), || Some(0), 10), 0);
    }

    #[test]
    fn a_good_pass_waits_for_the_next_due_row_at_most_idle() {
        let wake = Notify::new();
        let p = pacing(&wake);
        assert_eq!(wait_after::<&str>(&p, Ok(()), || Some(310), 10), 300);
        assert_eq!(wait_after::<&str>(&p, Ok(()), || Some(99_999), 10), 1_000);
        assert_eq!(wait_after::<&str>(&p, Ok(()), || None, 10), 1_000);
    }
}
