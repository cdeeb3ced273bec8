//! Host slots (issue 16 Build 1): a documented way to put more hosts into a run beside the
//! nodes and their clients — the bridge, an external mail host, agents (process runner,
//! PLSP loop) as those pieces arrive. A [`HostSlot`] is a name and a function that builds
//! the host's future from a [`HostEnv`]; the world starts it as a turmoil client host (its
//! own IP, reachable by name, subject to the same simulated network), after the nodes and
//! before the first step. A slot host is part of the workload: the world heals and settles
//! only after every client host, slot hosts included, has finished.
//!
//! Everything a slot host does must come from its `HostEnv` (seeded RNG via
//! [`HostEnv::rng_seed`], simulated time through tokio/turmoil, trace lines through
//! [`HostEnv::shared`]) so the run stays a function of its seed.

use crate::trace::Shared;
use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

/// What a slot host gets.
#[derive(Debug, Clone)]
pub struct HostEnv {
    /// The slot's host name.
    pub name: String,
    /// Node domain → base URL (`http://addr:port`) inside the simulation.
    pub nodes: BTreeMap<String, String>,
    /// The run seed.
    pub seed: u64,
    /// A sub-seed for this host (`derive_seed(seed, "host/{name}")`).
    pub rng_seed: u64,
    /// The run's record (trace lines, acknowledgements the invariants check).
    pub shared: Shared,
}

/// The future a slot host runs.
pub type HostFuture = Pin<Box<dyn Future<Output = Result<(), Box<dyn std::error::Error>>>>>;

/// Builds a slot host's future.
pub type HostFn = Arc<dyn Fn(HostEnv) -> HostFuture + Send + Sync>;

/// One extra host.
#[derive(Clone)]
pub struct HostSlot {
    /// Host name (unique in the run; not a node domain or `client.*`).
    pub name: String,
    /// The host.
    pub run: HostFn,
}

impl std::fmt::Debug for HostSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostSlot")
            .field("name", &self.name)
            .finish()
    }
}

impl HostSlot {
    /// A slot named `name` running `run`.
    pub fn new<F, Fut>(name: &str, run: F) -> HostSlot
    where
        F: Fn(HostEnv) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), Box<dyn std::error::Error>>> + 'static,
    {
        HostSlot {
            name: name.into(),
            run: Arc::new(move |env| Box::pin(run(env))),
        }
    }
}
