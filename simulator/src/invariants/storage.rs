//! `storage-recovery`: after every crash, power loss, failed `fsync` and full disk, each
//! node's store is a sound SQLite database (SQLite's integrity check, `Inspector::integrity`) at the end of the run.
//! The other half of the rule, a node that refuses to start on a healthy disk, is caught
//! while the run goes on (`world::NodeHostSpec::boot`); what a node acknowledged and lost
//! is `acked-durable`'s.

use super::Found;
use loom_node::inspect::Inspector;

pub(super) fn check(domain: &str, store: &Inspector, found: &mut Found) {
    match store.integrity() {
        Ok(problems) if problems.is_empty() => {}
        Ok(problems) => found.push(
            "storage-recovery",
            format!(
                "{domain}: the store fails SQLite's integrity check: {}",
                problems.join("; ")
            ),
        ),
        Err(e) => found.push(
            "storage-recovery",
            format!("{domain}: the integrity check could not run: {e}"),
        ),
    }
}
