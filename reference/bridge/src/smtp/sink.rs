//! A [`Handler`] that keeps every transaction it is given: the outside world's mail host in
//! tests, the conformance harness's sink and the benchmark's. It accepts every recipient
//! except those whose local part starts with a configured prefix (`550 5.1.1`).

use super::server::Handler;
use super::session::{RecipientVerdict, Recipients, Transaction, Verdict};
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// One transaction the sink received.
#[derive(Debug, Clone)]
pub struct Arrived {
    /// When.
    pub at: Instant,
    /// The transaction.
    pub tx: Transaction,
}

impl Arrived {
    /// The message as text (lossy).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.tx.data).into_owned()
    }

    /// The first value of header `name` (case-insensitive), unfolded and trimmed.
    pub fn header(&self, name: &str) -> Option<String> {
        mail_parser::MessageParser::default()
            .parse(&self.tx.data)
            .and_then(|m| m.header_raw(name).map(|v| v.trim().to_owned()))
    }
}

/// The recording handler.
#[derive(Debug, Default)]
pub struct RecordingSink {
    refuse_prefix: Option<String>,
    arrived: Mutex<Vec<Arrived>>,
}

impl RecordingSink {
    /// A sink that refuses recipients whose address starts with `prefix`.
    pub fn refusing(prefix: &str) -> Self {
        Self {
            refuse_prefix: Some(prefix.to_owned()),
            arrived: Mutex::new(Vec::new()),
        }
    }

    /// Everything received so far.
    pub fn arrived(&self) -> Vec<Arrived> {
        self.arrived
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Waits up to `wait` for the transactions `pick` selects to number at least `n`.
    pub async fn wait_for(
        &self,
        wait: Duration,
        n: usize,
        pick: impl Fn(&Arrived) -> bool,
    ) -> Vec<Arrived> {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            let got: Vec<Arrived> = self.arrived().into_iter().filter(|a| pick(a)).collect();
            if got.len() >= n || tokio::time::Instant::now() >= deadline {
                return got;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

impl Recipients for RecordingSink {
    fn check(&self, address: &str) -> RecipientVerdict {
        match &self.refuse_prefix {
            Some(p) if address.starts_with(p.as_str()) => RecipientVerdict::Unknown,
            _ => RecipientVerdict::Accept,
        }
    }
}

impl Handler for RecordingSink {
    fn deliver(
        &self,
        _: SocketAddr,
        tx: Transaction,
    ) -> Pin<Box<dyn Future<Output = Verdict> + Send + '_>> {
        Box::pin(async move {
            self.arrived
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .push(Arrived {
                    at: Instant::now(),
                    tx,
                });
            Verdict::accepted("stored")
        })
    }
}
