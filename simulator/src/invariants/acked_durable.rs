//! `acked-durable`: every envelope a node answered 201 for is in its store after every crash.

use super::{Found, Run};

pub(super) fn check(run: &Run<'_>, found: &mut Found) {
    for a in run.acks {
        if !run
            .views
            .get(&a.node)
            .is_some_and(|v| v.by_id.contains_key(&a.id))
        {
            found.push(
                "acked-durable",
                format!(
                    "{} acknowledged {} (201) but does not have it",
                    a.node, a.id
                ),
            );
        }
    }
}
