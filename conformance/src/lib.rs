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
//! reference node's internals; `loom-node` is used only to start the embedded default target
//! and the quirk-switched mutants of the self-test.

pub mod case;
pub mod catalogue;
pub mod ctx;
pub mod fuzzing;
pub mod outcome;
pub mod profile;
pub mod report;
pub mod requirements;
pub mod runner;
#[cfg(feature = "selftest")]
pub mod selftest;
pub mod skips;
pub mod target;

pub use case::{Case, Finding, Mutant, Need, Strength, Verdict};
pub use outcome::{CaseResult, Outcome};
