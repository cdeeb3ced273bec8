//! `process.yaml` loading and validation (package guide).

pub mod model;

pub use model::*;
