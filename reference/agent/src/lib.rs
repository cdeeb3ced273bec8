//! # loom-agent
//!
//! An agent host: a LOOM identity of type `agent` (v1.1 §6.3, §6.4) acting under a human's
//! delegation (§13) that follows its threads and turns `task.create@v1` envelopes (§18.1,
//! §18.3) into work — a process package run by `loom-process`, or a PLSP program run by the
//! `loom-plsp` middleware loop — and answers in the thread with one `task.state_update@v1`
//! envelope per transition, each signed by the agent with its delegation chain (§13.5, §18.2).
//!
//! Layers, quinn-style: [`work`] parses an envelope once into what the agent may act on;
//! [`core::AgentCore`] decides (inputs and time in, [`core::Output`]s out, no IO); [`host`] is
//! the async shell that reads the node, runs the work ([`run`]) and posts what the core
//! decided; [`journal`] is what survives a restart. [`scope`] maps every operation to the
//! delegation scope it needs; [`encoding`] renders results as JSON or Loom notation and
//! counts their tokens.

pub mod config;
pub mod core;
pub mod encoding;
pub mod enroll;
pub mod host;
pub mod journal;
#[cfg(feature = "quirks")]
pub mod quirks;
pub mod run;
pub mod scope;
pub mod work;

pub use core::{AgentCore, Input, Output};
pub use work::{Seen, Work};
