//! Auth preflight (guide "Auth requirements": "declare them explicitly so Loom can resolve
//! credentials before execution starts"; "preflight can fail early with clear remediation
//! instead of failing mid-run").
//!
//! Before any phase runs, each `auth.required` entry is checked against the credentials the
//! run was given ([`super::Env::auth_env`]: for `loom-process run`, the runner's environment;
//! for `loom-process test`, `scripts/<case>.auth.json`): every `required_env_keys` entry must
//! be present and non-empty. Each entry is one `JudgeResult` `{kind: auth, name, blocking:
//! true, status, reasons, evidence: ["env:KEY", ...]}` (key names only, never values). An
//! entry without `required_env_keys` passes with a note: its credential comes from a Loom
//! auth profile this runner does not resolve. If any entry fails, an `Error` `{code:
//! auth_preflight}` names the missing keys and the fix, and the run fails before its first
//! phase (every phase is recorded `skipped`).

use super::RunState;
use crate::engine::event::EventType;
use serde_json::json;

/// Checks the auth requirements; `Some(reason)` stops the run before any phase.
pub(crate) fn check(st: &mut RunState<'_>) -> Option<String> {
    let required = st.process.auth.as_ref()?.required.clone();
    let mut missing_all = Vec::new();
    for req in &required {
        let name = req
            .provider
            .clone()
            .or_else(|| req.resource_ref.clone())
            .or_else(|| req.resource_id.clone())
            .unwrap_or_else(|| "auth".into());
        let missing: Vec<&str> = req
            .required_env_keys
            .iter()
            .map(|k| k.trim())
            .filter(|k| st.env.auth_env.get(*k).is_none_or(|v| v.is_empty()))
            .collect();
        let (status, reasons) = if !missing.is_empty() {
            (
                "fail",
                vec![format!(
                    "{name}: missing credential env {} ({})",
                    missing.join(", "),
                    if req.modes.is_empty() {
                        "no modes declared".to_owned()
                    } else {
                        format!(
                            "modes {}",
                            serde_json::to_string(&req.modes).unwrap_or_default()
                        )
                    }
                )],
            )
        } else if req.required_env_keys.is_empty() {
            (
                "pass",
                vec![format!(
                    "{name}: no required_env_keys; the credential comes from a Loom auth profile, which this runner does not resolve"
                )],
            )
        } else {
            ("pass", vec![])
        };
        st.emit(
            EventType::JudgeResult,
            json!({"kind": "auth", "name": name, "blocking": true, "status": status,
                   "reasons": reasons,
                   "evidence": req.required_env_keys.iter().map(|k| format!("env:{k}")).collect::<Vec<_>>()}),
        );
        if !missing.is_empty() {
            missing_all.push(format!("{name} needs {}", missing.join(", ")));
        }
    }
    if missing_all.is_empty() {
        return None;
    }
    let message = format!(
        "auth preflight failed: {}; set the variables in the runner's environment (loom-process run) or in scripts/<case>.auth.json (loom-process test) (guide \"Auth requirements\")",
        missing_all.join("; ")
    );
    st.emit(
        EventType::Error,
        json!({"code": "auth_preflight", "message": message}),
    );
    Some("auth preflight failed".into())
}
