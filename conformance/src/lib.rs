//! # loom-conformance
//!
//! The conformance harness for LOOM v1.1 nodes (DESIGN.md §5). A catalogue of wire-level
//! cases with stable IDs, levels, strengths and spec references ([`catalogue`]); a runner
//! that provisions its own identities on the target and records every exchange ([`runner`],
//! [`ctx`]); outcomes that separate a broken MUST from a broken SHOULD, a declared skip, an
//! unsupported capability, an implementer's expected failure and the harness's own errors
//! ([`outcome`]); and reports a person can act on ([`report`]).
//!
//! Verdicts come from the spec's expected behaviour observed over the wire, never from the
//! reference node's internals; `loom-node` is used only to start the embedded default target,
//! the quirk-switched mutants of the self-test and, behind the `variants` shim (feature
//! `selftest`), its legal variants. [`requirements`] holds the Level 1 inventory with the
//! quoted sentence of every MUST; [`show`] renders what a target sent; [`cli`] is the command
//! line, one module per subcommand.

pub mod case;
pub mod catalogue;
pub mod cli;
pub mod ctx;
pub mod finding;
#[cfg(feature = "fuzzing")]
pub mod fuzzing;
pub mod mail;
pub mod outcome;
pub mod peer;
pub mod profile;
pub mod readings;
pub mod report;
pub mod requirements;
pub mod runner;
#[cfg(feature = "selftest")]
pub mod selftest;
pub mod setup;
pub mod show;
pub mod skips;
pub mod target;
#[cfg(feature = "selftest")]
pub mod variants;

pub use case::{Case, Mutant, Need, Strength};
pub use finding::{Ex, Finding, Verdict};
pub use outcome::{CaseResult, Outcome};
