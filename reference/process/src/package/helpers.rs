//! The verification helper registry as the validator sees it: names and capabilities
//! (guide "Process contract v2": `verification.policy` "semantic checks"). A semantic check
//! may name a `helper`; the guide's loader rejects a helper that is not registered, and a
//! declared `capability` the helper does not support. The names and capabilities below are
//! the loader's built-in registry; which of them this runner can execute (is "bound") is
//! decided by `runner::helpers`.

/// The verifier capabilities the guide's loader knows. A semantic check's `capability`
/// outside this list is ignored (the loader drops it), so it is not checked against the
/// helper either.
pub const CAPABILITIES: &[&str] = &[
    "artifact_static",
    "command_execution",
    "service_runtime",
    "browser_runtime",
    "report_rendering",
];

/// A registered verification helper.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HelperSpec {
    /// Lower-case helper name.
    pub name: &'static str,
    /// Capabilities it provides.
    pub capabilities: &'static [&'static str],
    /// One line on what it does.
    pub description: &'static str,
}

/// The built-in helpers, sorted by name.
pub const BUILTIN: &[HelperSpec] = &[
    HelperSpec {
        name: "browser_assert",
        capabilities: &["browser_runtime"],
        description: "Run a bounded browser assertion step against a prepared UI.",
    },
    HelperSpec {
        name: "browser_session",
        capabilities: &["browser_runtime"],
        description: "Run a structured browser-session verification flow (page steps, console and network capture, screenshots).",
    },
    HelperSpec {
        name: "http_assert",
        capabilities: &["service_runtime"],
        description: "Probe one local HTTP URL with bounded status/content assertions.",
    },
    HelperSpec {
        name: "probe_suite",
        capabilities: &["service_runtime", "browser_runtime"],
        description: "Run a bounded sequence of local HTTP/browser probe assertions.",
    },
    HelperSpec {
        name: "render_verification_report",
        capabilities: &["report_rendering"],
        description: "Render a human-readable verification report from the attempt's verdicts.",
    },
    HelperSpec {
        name: "run_build_check",
        capabilities: &["command_execution"],
        description: "Execute a build, lint or typecheck command with structured outcomes.",
    },
    HelperSpec {
        name: "run_test_suite",
        capabilities: &["command_execution"],
        description: "Execute a test command with structured pass/fail and timeout capture.",
    },
    HelperSpec {
        name: "serve_static",
        capabilities: &["service_runtime"],
        description: "Start a bounded local service or static probe with explicit cleanup.",
    },
];

/// The registered helper named `name` (trimmed, case-insensitive, as the loader looks it up).
pub fn lookup(name: &str) -> Option<&'static HelperSpec> {
    let name = name.trim().to_lowercase();
    BUILTIN.iter().find(|h| h.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registry_is_sorted_and_capabilities_are_known() {
        let names: Vec<_> = BUILTIN.iter().map(|h| h.name).collect();
        let mut sorted = names.clone();
        sorted.sort_unstable();
        assert_eq!(names, sorted);
        for h in BUILTIN {
            assert!(h.capabilities.iter().all(|c| CAPABILITIES.contains(c)));
        }
        assert_eq!(
            lookup(" Run_Test_Suite ").map(|h| h.name),
            Some("run_test_suite")
        );
        assert!(lookup("run_tests").is_none());
    }
}
