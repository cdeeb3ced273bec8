//! `process-yaml.validate`: `loom-process`'s validator (package guide) answering the vectors.

use super::{BadRequest, Input};
use crate::protocol::Answer;
use loom_process::package::validate_str;
use serde_json::{Value, json};

/// Invalid: the first error (document order) with its rule id and path. Valid: the warnings
/// as `[{rule, path}]` sorted by path, then rule.
pub fn validate(input: Input<'_>) -> Result<Answer, BadRequest> {
    let report = validate_str(input.str("yaml")?);
    if let Some(error) = report.errors().next() {
        return Ok(Answer::invalid_at(error.rule, &error.path, error.render()));
    }
    let mut warnings: Vec<(&str, &str)> = report
        .warnings()
        .map(|d| (d.path.as_str(), d.rule))
        .collect();
    warnings.sort();
    Ok(Answer::valid(Value::Array(
        warnings
            .into_iter()
            .map(|(path, rule)| json!({"rule": rule, "path": path}))
            .collect(),
    )))
}
