//! The delegation scope each operation of the agent needs (v1.1 §13.2), in one place.
//!
//! Envelopes: the node checks an agent envelope's action against the leaf scope of its chain
//! (§13.3 step 6; the action is `loom_protocol::delegation::envelope_action`), so the agent
//! checks the same action before it signs and never sends what its node must refuse. Work:
//! running a package or a PLSP program is not an envelope, yet it acts for the delegator, so
//! it needs a scope too — `process.run.<package>` and `plsp.run` (dot-separated names as
//! §13.2 allows; this kit's interpretation, in the README). The enrolment asks for exactly
//! the scopes of the configured work ([`needed_for`]), no wildcard: the narrowest delegation
//! that lets the agent do its job.

use loom_protocol::scope::scopes_allow;

/// Scope of a `task.state_update@v1` envelope (§18.3).
pub const TASK_UPDATE: &str = "task.state_update";
/// Scope of a message the agent posts (PLSP `!send`, `>` data): intent `message.general@v1`.
pub const MESSAGE: &str = "message.general";
/// Scope of reading a thread for a PLSP `!read`.
pub const READ_THREAD: &str = "read.thread";
/// Scope of running a PLSP program.
pub const PLSP_RUN: &str = "plsp.run";

/// The scope of running the process package `package`.
pub fn process_run(package: &str) -> String {
    format!("process.run.{package}")
}

/// The intent of the agent's messages (the extension registry's example message intent).
pub const MESSAGE_INTENT: &str = "message.general@v1";

/// Does `scopes` allow `action` (an envelope action such as `task.state_update@v1`, or a
/// work scope such as `process.run.market-sizing`)?
pub fn allows(scopes: &[String], action: &str) -> bool {
    scopes_allow(scopes, action)
}

/// The scopes an agent needs for `packages` (and PLSP programs when `plsp` is set): task
/// updates, messages, reading threads, and one `process.run.<name>` per package.
pub fn needed_for(packages: &[String], plsp: bool) -> Vec<String> {
    let mut s = vec![TASK_UPDATE.to_owned(), MESSAGE.to_owned()];
    if plsp {
        s.push(READ_THREAD.to_owned());
        s.push(PLSP_RUN.to_owned());
    }
    s.extend(packages.iter().map(|p| process_run(p)));
    s.sort();
    s.dedup();
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_needed_scopes_allow_the_work_and_nothing_else() {
        let s = needed_for(&["market-sizing".into()], true);
        for action in [
            "task.state_update@v1",
            "message.general@v1",
            "read.thread",
            "plsp.run",
            "process.run.market-sizing",
        ] {
            assert!(allows(&s, action), "{action}");
        }
        for action in [
            "task.create@v1",
            "message.send@v1",
            "process.run.code-fix",
            "process.run.market-sizing-2",
            "payment.send@v1",
        ] {
            assert!(!allows(&s, action), "{action}");
        }
        for scope in &s {
            loom_protocol::scope::check_scope_syntax(scope).unwrap();
        }
        assert!(!needed_for(&[], false).contains(&PLSP_RUN.to_owned()));
    }
}
