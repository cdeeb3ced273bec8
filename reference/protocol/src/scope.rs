//! Delegation scope syntax and matching (v1.1 §13.2; v1.0 §12.3).
//!
//! A scope is a dot-separated namespace (`calendar.schedule`), optionally ending in a
//! wildcard segment (`calendar.*`); `*` alone is full authority and is valid only on the root
//! human→agent link. Matching is case-sensitive. `calendar.*` covers `calendar.read` and
//! deeper names but not the bare `calendar` (the wildcard stands for at least one segment).
//! An action may carry an intent version (`task.create@v1`); a scope without a version
//! matches every version of that action.

use std::fmt;

/// Why a scope string is malformed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScopeError {
    /// The offending scope.
    pub scope: String,
    /// The rule.
    pub reason: &'static str,
}

impl fmt::Display for ScopeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "scope {:?}: {}", self.scope, self.reason)
    }
}

impl std::error::Error for ScopeError {}

/// Checks scope syntax: `*`, or segments of `[a-z0-9_-]` separated by `.`, the last of which
/// may be `*`.
pub fn check_scope_syntax(scope: &str) -> Result<(), ScopeError> {
    let err = |reason| {
        Err(ScopeError {
            scope: scope.to_owned(),
            reason,
        })
    };
    if scope == "*" {
        return Ok(());
    }
    let segments: Vec<&str> = scope.split('.').collect();
    for (i, seg) in segments.iter().enumerate() {
        if seg.is_empty() {
            return err("empty segment (scopes are dot-separated names)");
        }
        if *seg == "*" {
            if i + 1 != segments.len() {
                return err("a wildcard may only be the last segment");
            }
            continue;
        }
        if !seg
            .bytes()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'_' || c == b'-')
        {
            return err("segments may contain only [a-z0-9_-] or be a final '*'");
        }
    }
    Ok(())
}

/// Does `pattern` allow `action`? `action` may carry an `@vN` suffix, which a pattern ignores:
/// scopes name no versions (§13.2; [`check_scope_syntax`] rejects `@`), so `task.create`
/// covers every version of `task.create`. Patterns are expected to have passed the syntax
/// check; this function only matches.
pub fn scope_allows(pattern: &str, action: &str) -> bool {
    let unversioned = action.rsplit_once("@v").map_or(action, |(a, _)| a);
    [action, unversioned].into_iter().any(|a| {
        if pattern == "*" {
            true
        } else if let Some(prefix) = pattern.strip_suffix('*') {
            // `calendar.*` → prefix `calendar.`: at least one more segment must follow.
            a.len() > prefix.len() && a.starts_with(prefix)
        } else {
            a == pattern
        }
    })
}

/// Does a set of scopes allow `action`?
pub fn scopes_allow(scopes: &[String], action: &str) -> bool {
    scopes.iter().any(|p| scope_allows(p, action))
}

/// Is `child` covered by `parent`? Every name `child` allows, `parent` allows.
pub fn scope_covers(parent: &str, child: &str) -> bool {
    if parent == "*" {
        return true;
    }
    if child == "*" {
        return false;
    }
    match (parent.strip_suffix('*'), child.strip_suffix('*')) {
        // `a.*` covers `a.b.*` and `a.*`, not `a*`-style partial segments (syntax forbids them).
        (Some(pp), Some(cp)) => cp.starts_with(pp),
        (Some(pp), None) => child.len() > pp.len() && child.starts_with(pp),
        (None, Some(_)) => false,
        (None, None) => parent == child,
    }
}

/// Is the scope set `child` a subset of `parent` (v1.1 §13.2 "Sub-delegations MUST be strict
/// subsets of parent scope")? "Strict" is read as v1.0 §12.3 illustrates it — no name outside
/// the parent's scope — so a link may pass on its parent's scope unchanged.
pub fn is_scope_subset(child: &[String], parent: &[String]) -> bool {
    child
        .iter()
        .all(|c| parent.iter().any(|p| scope_covers(p, c)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn v(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn syntax() {
        for ok in [
            "*",
            "read.*",
            "reply.routine",
            "task.create",
            "calendar.*",
            "a.b.c",
            "x_y-z.*",
        ] {
            assert!(check_scope_syntax(ok).is_ok(), "{ok}");
        }
        for bad in [
            "", ".", "a.", ".a", "a..b", "*.a", "a.*.b", "Read.*", "a b", "a.b*", "a.**",
        ] {
            assert!(check_scope_syntax(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn wildcard_matching_follows_the_spec_examples() {
        assert!(scope_allows("*", "anything.at@v3"));
        assert!(scope_allows("read.*", "read.thread"));
        assert!(scope_allows("calendar.*", "calendar.schedule@v1"));
        assert!(!scope_allows("calendar.*", "calendar"));
        assert!(!scope_allows("calendar.*", "calendarx.read"));
        assert!(scope_allows("task.create", "task.create@v1"));
        assert!(!scope_allows("task.create", "task.create_all@v1"));
        assert!(check_scope_syntax("task.create@v1").is_err());
        assert!(!scope_allows("reply.routine", "reply.sensitive"));
    }

    #[test]
    fn subset_rules_from_v1_0_section_12_3() {
        // "if an agent has calendar.*, it can sub-delegate calendar.schedule but NOT task.create"
        assert!(is_scope_subset(
            &v(&["calendar.schedule"]),
            &v(&["calendar.*"])
        ));
        assert!(!is_scope_subset(&v(&["task.create"]), &v(&["calendar.*"])));
        assert!(is_scope_subset(&v(&["calendar.*"]), &v(&["calendar.*"])));
        assert!(is_scope_subset(
            &v(&["calendar.sub.*"]),
            &v(&["calendar.*"])
        ));
        assert!(!is_scope_subset(
            &v(&["calendar.*"]),
            &v(&["calendar.schedule"])
        ));
        assert!(!is_scope_subset(&v(&["*"]), &v(&["calendar.*"])));
        assert!(is_scope_subset(&v(&["*"]), &v(&["*"])));
        assert!(!is_scope_subset(&v(&["calendar"]), &v(&["calendar.*"])));
        assert!(is_scope_subset(&v(&[]), &v(&["a.b"])));
    }

    fn scope_strategy() -> impl Strategy<Value = String> {
        let seg = prop::sample::select(vec!["a", "b", "c"]);
        (
            prop::collection::vec(seg, 1..4),
            any::<bool>(),
            any::<bool>(),
        )
            .prop_map(|(segs, wild, star)| {
                if star {
                    return "*".to_owned();
                }
                let mut s = segs.join(".");
                if wild {
                    s.push_str(".*");
                }
                s
            })
    }

    fn action_strategy() -> impl Strategy<Value = String> {
        prop::collection::vec(prop::sample::select(vec!["a", "b", "c"]), 1..5)
            .prop_map(|s| s.join("."))
    }

    proptest! {
        /// Soundness of `scope_covers`: if the parent covers the child, every action the
        /// child allows the parent allows too.
        #[test]
        fn covers_implies_allows(p in scope_strategy(), c in scope_strategy(), a in action_strategy()) {
            if scope_covers(&p, &c) && scope_allows(&c, &a) {
                prop_assert!(scope_allows(&p, &a), "{p} covers {c}, {c} allows {a}, {p} does not");
            }
        }

        /// Subset is reflexive and transitive.
        #[test]
        fn subset_is_a_preorder(x in prop::collection::vec(scope_strategy(), 0..3),
                                y in prop::collection::vec(scope_strategy(), 0..3),
                                z in prop::collection::vec(scope_strategy(), 0..3)) {
            prop_assert!(is_scope_subset(&x, &x));
            if is_scope_subset(&x, &y) && is_scope_subset(&y, &z) {
                prop_assert!(is_scope_subset(&x, &z));
            }
        }
    }
}
