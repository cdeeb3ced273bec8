//! `process.yaml` loading and validation (package guide).
