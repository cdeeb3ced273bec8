//! Process packages (`specs/loom-process-packages.md`) and a Loop Engine runtime
//! (`specs/loop-engine-protocols.md`).
//!
//! - [`package`]: loading and validating `process.yaml` packages.
//! - [`cli`]: the `loom-process` command line (one module per subcommand).
//! - [`engine`]: the Loop Engine runtime (events, tool actions, policy, models, judges).
//!
//! Layering (DESIGN.md §2): this crate depends on nothing LOOM-wire specific; time and
//! randomness are injected so the same run gives the same event stream.

pub mod cli;
pub mod engine;
pub mod package;
pub mod runner;
