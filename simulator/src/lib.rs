//! # loom-sim
//!
//! A deterministic multi-node simulator of LOOM reference nodes (DESIGN.md §3, §7): N
//! `loom-node`s on different domains as turmoil hosts, federating with each other over
//! simulated TCP; seeded clients that register, send local and federated messages and reply
//! into thread DAGs, run thread operations and retract; a fault schedule (partitions, holds,
//! slow links, crashes and restarts, clock skew, replayed deliveries); invariants checked
//! continuously and at quiescence; a JSONL trace whose hash is the same for the same seed;
//! sweeps over many seeds; and shrinking of a failing seed's fault schedule.
//!
//! Modules: [`scenario`] (TOML files), [`clock`] (skewable simulated time), [`trace`]
//! (the shared record of a run), [`dial`] (the nodes' outbound seam, recorded), [`workload`]
//! (client hosts), [`faults`] (the schedule), [`hosts`] (slots for extra hosts), [`template`]
//! (the migrated empty store every node starts from), [`realtime`] (WebSocket watchers), [`world`] (one run), [`invariants`]
//! (the checks), [`sweep`] (many seeds), [`shrink`] (minimal failing schedules).

pub mod agents;
mod authority;
pub mod clock;
pub mod dial;
pub mod faults;
pub mod hosts;
pub mod invariants;
pub mod mail;
pub mod realtime;
pub mod scenario;
pub mod shrink;
pub mod sweep;
pub mod template;
pub mod trace;
pub mod workload;
pub mod world;

pub use scenario::Scenario;
pub use world::{RunOptions, RunReport, run};

use sha2::{Digest, Sha256};

/// A sub-seed for `label` derived from the run seed (hosts, clients, schedule draw from
/// independent streams, so adding a draw in one does not shift the others).
pub fn derive_seed(seed: u64, label: &str) -> u64 {
    let h = Sha256::digest(format!("loom-sim/{seed}/{label}").as_bytes());
    let mut eight = [0u8; 8];
    eight.copy_from_slice(&h[..8]);
    u64::from_le_bytes(eight)
}

/// 32 bytes derived from the run seed for `label` (identity keys).
pub fn derive_bytes(seed: u64, label: &str) -> [u8; 32] {
    Sha256::digest(format!("loom-sim/{seed}/{label}").as_bytes()).into()
}
