//! The node-wide budget for request bodies being read (issue 36, item 1): every byte of a
//! body that has arrived but whose request has not finished arriving counts against
//! `limits.max_inflight_body_bytes`, whatever connection, protocol or route it came on. A
//! client that sends most of a large body and then stalls holds its share only until the
//! per-request deadline cuts it off, and all clients together never hold more than the
//! budget: a request whose next chunk would exceed it is answered 503 with `Retry-After` at
//! once (waiting would let the stalled ones decide who gets served). Once a body is whole
//! its bytes leave the budget: handling a complete request is bounded by the route's own
//! limits, not by a client's pace.

use crate::error::ApiError;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Bytes of incomplete bodies held now, against a cap (0 = no cap).
#[derive(Debug, Default)]
pub struct BodyBudget {
    cap: usize,
    held: AtomicUsize,
}

impl BodyBudget {
    /// A budget of `cap` bytes (0 = unlimited).
    pub fn new(cap: usize) -> Arc<BodyBudget> {
        Arc::new(BodyBudget {
            cap,
            held: AtomicUsize::new(0),
        })
    }

    /// Bytes held by bodies being read now.
    pub fn held(&self) -> usize {
        self.held.load(Ordering::Relaxed)
    }

    /// A share of the budget for one body, empty at first; released when dropped.
    pub fn share(self: &Arc<Self>) -> Share {
        Share {
            budget: self.clone(),
            bytes: 0,
        }
    }
}

/// One body's share of the budget.
#[derive(Debug)]
pub struct Share {
    budget: Arc<BodyBudget>,
    bytes: usize,
}

impl Share {
    /// Takes `n` more bytes, or refuses with 503 when the budget has no room for them.
    pub fn grow(&mut self, n: usize) -> Result<(), ApiError> {
        let b = &self.budget;
        let taken = b
            .held
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |held| {
                let after = held.checked_add(n)?;
                (b.cap == 0 || after <= b.cap).then_some(after)
            });
        if taken.is_err() {
            return Err(ApiError::new(
                loom_protocol::ErrorCode::RateLimitExceeded,
                "$body",
                format!(
                    "the node is reading as many request bodies as it holds at once (limits.max_inflight_body_bytes = {} bytes); retry shortly",
                    b.cap
                ),
                "v1.1 §14.3",
            )
            .with_status(503)
            .with_header("Retry-After", "1"));
        }
        self.bytes += n;
        Ok(())
    }
}

impl Drop for Share {
    fn drop(&mut self) {
        self.budget.held.fetch_sub(self.bytes, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_are_refused_past_the_cap_and_released_on_drop() {
        let b = BodyBudget::new(100);
        let mut one = b.share();
        one.grow(60).unwrap();
        let mut two = b.share();
        let e = two.grow(41).unwrap_err();
        assert_eq!(e.status, Some(503));
        assert!(
            e.reason.contains("limits.max_inflight_body_bytes = 100"),
            "{}",
            e.reason
        );
        two.grow(40).unwrap();
        assert_eq!(b.held(), 100);
        drop(one);
        assert_eq!(b.held(), 40);
        drop(two);
        assert_eq!(b.held(), 0);
        let unlimited = BodyBudget::new(0);
        unlimited.share().grow(usize::MAX / 2).unwrap();
        assert_eq!(unlimited.held(), 0);
    }
}
