//! `process.yaml` packages (package guide, `docs/specs/loom-process-packages.md`): the typed model,
//! the validator with one stable rule id per guide rule, package directories, the search
//! order and the install security review.

pub mod command;
pub mod dir;
pub mod helpers;
pub mod model;
pub mod paths;
pub mod pattern;
pub mod report;
pub mod requirement;
pub mod review;
pub mod rules;
pub mod validate;
pub mod validity;
pub mod yaml_pos;

pub use dir::{LoadedPackage, discover, load_dir, load_dir_with, search_dirs};
pub use model::*;
pub use report::{Diagnostic, Report};
pub use validate::{
    ValidateOptions, Validated, load_str, load_str_with, validate_str, validate_str_with,
};
