//! Process packages (`docs/specs/loom-process-packages.md`) and a Loop Engine runtime
//! (`docs/specs/loop-engine-protocols.md`).
//!
//! - [`package`]: loading and validating `process.yaml` packages.
//! - [`cli`]: the `loom-process` command line (one module per subcommand).
//! - [`engine`]: the Loop Engine runtime (events, tool actions, policy, models, judges).
//! - [`runner`]: runs a validated process on the engine (phase DAG, checks, iteration
//!   loops) and its `tests:` manifest.
//!
//! Layering (DESIGN.md §2): this crate depends on nothing LOOM-wire specific (it borrows
//! `loom-plsp`'s HTTP seam for the optional chat backend); time and randomness are injected
//! so the same run gives the same event stream.

pub mod cli;
pub mod engine;
#[cfg(feature = "fuzzing")]
pub mod fuzzing;
pub mod package;
pub mod runner;
