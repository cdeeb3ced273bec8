//! `audit-chain`: every node's audit log verifies (v1.1 §25.1; `loom-node audit verify`).

use super::{Found, Run};
use loom_node::store::audit::AuditVerdict;

pub(super) fn check(run: &Run<'_>, found: &mut Found) {
    for (d, v) in &run.views {
        match &v.audit {
            Ok(AuditVerdict::Intact { .. }) => {}
            Ok(AuditVerdict::Broken { seq, reason }) => found.push(
                "audit-chain",
                format!("{d}: audit chain broken at row {seq}: {reason} (v1.1 §25.1)"),
            ),
            Err(e) => found.push(
                "audit-chain",
                format!("{d}: cannot read the audit log: {e}"),
            ),
        }
    }
}
