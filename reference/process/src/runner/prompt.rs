//! The system prompt of a phase's model turns, assembled from the process definition: persona
//! (guide "Persona"), tool guidance (guide "Tool guidance"), workspace analysis guidance
//! (guide "Workspace analysis"), executor instructions (guide "Process contract v2"), and the
//! phase's description, acceptance criteria and exact deliverable filenames (guide "Phases").

use crate::engine::action::ACTION_TYPES;
use crate::package::{Phase, Process};

/// The system prompt for `phase`. `fan_in_dir` is set for a fan-in phase: its deliverables
/// are written there and published by the finalizer (guide "Output coordination").
pub fn system_prompt(process: &Process, phase: &Phase, fan_in_dir: Option<&str>) -> String {
    system_prompt_with(process, phase, fan_in_dir, &[])
}

/// [`system_prompt`] listing the package's bundled tools, which the model calls with the
/// `tool.call` extension action.
pub fn system_prompt_with(
    process: &Process,
    phase: &Phase,
    fan_in_dir: Option<&str>,
    bundled: &[String],
) -> String {
    let mut s = String::new();
    let mut section = |title: &str, body: &str| {
        let body = body.trim();
        if !body.is_empty() {
            if !s.is_empty() {
                s.push_str("\n\n");
            }
            if !title.is_empty() {
                s.push_str(title);
                s.push_str(":\n");
            }
            s.push_str(body);
        }
    };
    section("", process.persona.as_deref().unwrap_or(""));
    // The loader's reading: top-level `tool_guidance`, else `tools.guidance`.
    let guidance = process
        .tool_guidance
        .as_deref()
        .filter(|g| !g.trim().is_empty())
        .or_else(|| process.tools.as_ref().and_then(|t| t.guidance.as_deref()))
        .unwrap_or("");
    section("Tool guidance", guidance);
    if let Some(t) = &process.tools
        && !t.excluded.is_empty()
    {
        section("Do not use these tools", &t.excluded.join(", "));
    }
    if let Some(w) = &process.workspace_analysis {
        section("Look for in the workspace", &w.scan_for.join("\n"));
        section("Workspace guidance", w.guidance.as_deref().unwrap_or(""));
    }
    if let Some(pc) = &process.prompt_contracts {
        section("Instructions", &pc.executor());
    }
    section(&format!("Phase {}", phase.id), &phase.description);
    section(
        "Acceptance criteria",
        phase.acceptance_criteria.as_deref().unwrap_or(""),
    );
    let files = phase.deliverable_filenames();
    match fan_in_dir {
        _ if files.is_empty() => {}
        None => section(
            "Deliverables (create or update exactly these workspace paths)",
            &files.join("\n"),
        ),
        Some(dir) => section(
            &format!(
                "Deliverables (write exactly these files under {dir}/; the phase finalizer publishes them)"
            ),
            &files.join("\n"),
        ),
    }
    section(
        "Tool actions (Loop Engine Tool Action Schema v1)",
        &ACTION_TYPES.join(", "),
    );
    section(
        "Bundled tools (action tool.call {tool, args})",
        &bundled.join(", "),
    );
    s
}

/// Appends a titled section to a prompt (nothing when `body` is blank).
pub fn append(prompt: &mut String, title: &str, body: &str) {
    let body = body.trim();
    if body.is_empty() {
        return;
    }
    if !prompt.is_empty() {
        prompt.push_str("\n\n");
    }
    prompt.push_str(title);
    prompt.push_str(":\n");
    prompt.push_str(body);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn includes_persona_phase_and_exact_deliverables() {
        let p: Process = serde_saphyr::from_str(
            "name: p\npersona: You are careful.\ntool_guidance: Use Markdown.\nphases:\n  - id: a\n    description: Do A.\n    depends_on: []\n    acceptance_criteria: A is done.\n    deliverables: [\"a.md — the A\"]\n",
        )
        .unwrap();
        let s = system_prompt(&p, &p.phases[0], None);
        assert!(s.starts_with("You are careful."), "{s}");
        assert!(s.contains("Tool guidance:\nUse Markdown."));
        assert!(s.contains("Phase a:\nDo A."));
        assert!(s.contains("exactly these workspace paths):\na.md\n"), "{s}");
        assert!(s.contains("fs.applyPatch"));
        let s = system_prompt(&p, &p.phases[0], Some(".loom/phase-artifacts/a"));
        assert!(
            s.contains(
                "under .loom/phase-artifacts/a/; the phase finalizer publishes them):\na.md\n"
            ),
            "{s}"
        );
    }
}
