//! Delegation scopes (v1.1 §13.2): syntax, matching and the sub-delegation subset rule.

use super::{BadRequest, Input};
use crate::protocol::Answer;
use loom_protocol::scope::{ScopeError, check_scope_syntax, is_scope_subset, scopes_allow};
use serde_json::json;

/// A member that is an array of strings.
pub fn string_list(input: Input<'_>, name: &str) -> Result<Vec<String>, BadRequest> {
    input
        .value(name)?
        .as_array()
        .and_then(|items| {
            items
                .iter()
                .map(|s| s.as_str().map(str::to_owned))
                .collect()
        })
        .ok_or_else(|| format!("input member {name:?} must be an array of strings"))
}

fn malformed(e: &ScopeError) -> Answer {
    Answer::invalid("DELEGATION_INVALID", e.to_string())
}

fn check_all(scopes: &[String]) -> Result<(), ScopeError> {
    scopes.iter().try_for_each(|s| check_scope_syntax(s))
}

/// `check-scope`: is `scope` well-formed?
pub fn check_scope(input: Input<'_>) -> Result<Answer, BadRequest> {
    Ok(match check_scope_syntax(input.str("scope")?) {
        Ok(()) => Answer::accepted(),
        Err(e) => malformed(&e),
    })
}

/// `scope-allows`: does the (well-formed) scope set `scopes` allow `action`?
pub fn scope_allows(input: Input<'_>) -> Result<Answer, BadRequest> {
    let scopes = string_list(input, "scopes")?;
    let action = input.str("action")?;
    Ok(match check_all(&scopes) {
        Ok(()) => Answer::valid(json!({ "allowed": scopes_allow(&scopes, action) })),
        Err(e) => malformed(&e),
    })
}

/// `scope-subset`: is the scope set `child` within `parent`?
pub fn scope_subset(input: Input<'_>) -> Result<Answer, BadRequest> {
    let child = string_list(input, "child")?;
    let parent = string_list(input, "parent")?;
    Ok(match check_all(&child).and_then(|()| check_all(&parent)) {
        Ok(()) => Answer::valid(json!({ "subset": is_scope_subset(&child, &parent) })),
        Err(e) => malformed(&e),
    })
}
