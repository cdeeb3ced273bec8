//! Collect-all for structural errors (guide "process.yaml reference"): one report names every
//! wrong type, missing required key and value outside an enum, not only the first one.
//!
//! serde stops at the first value it cannot build, so the model is built in passes over the
//! positioned tree. After each failure the error is reported (with the rule
//! [`shape::rule_for`] picks, so rule ids stay those of a one-error file) and the tree is
//! patched so the next pass gets further:
//!
//! - a bad value under a mapping key is removed: an optional field falls back to its default;
//! - a required key that is then (or was always) missing gets a neutral placeholder of the
//!   expected type: `""`, `[]`, `{}`, or for an enum the variant that adds the fewest rules
//!   ([`NEUTRAL_VARIANTS`]);
//! - a bad sequence element is replaced in place by a placeholder, so later indices keep their
//!   paths.
//!
//! Every patched path is recorded in a [`Poison`] set: semantic findings on a patched node, on
//! anything under it, or on its immediate parent exist only because of the patch and are
//! dropped. A required enum that got a placeholder (a gate or rule of unknown type) poisons its
//! whole item, so no finding about that item's kind is made up.
//!
//! Each list item (`phases[i]`, `tests[i]`, …) is settled on its own before the whole
//! document, so a pass costs the size of the item, not of the file; a scope gives up after
//! [`MAX_PASSES_PER_SCOPE`] passes (the report then holds the errors found so far).

use std::collections::BTreeSet;

use serde::de::DeserializeOwned;

use super::shape;
use crate::package::model::{
    AuthRequirement, MemoryType, Phase, PlannerExample, Process, TestCase, VerificationRule,
};
use crate::package::report::Diagnostic;
use crate::package::yaml_pos::{
    Expected, Node, NodeKind, Notes, ShapeError, ShapeErrorKind, from_node_at, parent_path,
};

/// Passes one scope (a list item or the whole document) may take before giving up.
pub const MAX_PASSES_PER_SCOPE: usize = 256;

/// Placeholders for required enums whose value was unusable, chosen to trigger no rule about
/// the surrounding list: an `artifact_regex` gate is deterministic, blocking by default and
/// not score-like (guide "Phase iteration loops"); an `llm` rule has no pattern to compile
/// (guide "Verification rules").
const NEUTRAL_VARIANTS: &[(&str, &str)] = &[
    ("phases[*].iteration.gates[*].type", "artifact_regex"),
    ("verification.rules[*].type", "llm"),
];

/// The result of building the model from a tree that may hold structural errors.
pub(super) struct Built {
    /// The process and its notes (unknown keys, coerced values); `None` if a scope could not
    /// be settled.
    pub value: Option<(Process, Notes)>,
    /// One diagnostic per structural error, in the order found.
    pub diags: Vec<Diagnostic>,
    /// Paths whose semantic findings are follow-ons of a patch.
    pub poison: Poison,
}

/// Builds the [`Process`] from `root`, reporting and patching structural errors as it goes
/// (see the module docs). `root` is left patched; semantic rules read the patched tree.
pub(super) fn build(root: &mut Node) -> Built {
    let mut repair = Repair {
        root,
        diags: Vec::new(),
        poison: Poison::default(),
        inserted: BTreeSet::new(),
    };
    let value = repair.settle_items().then(|| repair.settle::<Process>(""));
    Built {
        value: value.flatten(),
        diags: repair.diags,
        poison: repair.poison,
    }
}

struct Repair<'n> {
    root: &'n mut Node,
    diags: Vec<Diagnostic>,
    poison: Poison,
    /// Required keys given a `null` so that the next pass names their expected type.
    inserted: BTreeSet<String>,
}

impl Repair<'_> {
    /// Settles every item of the model's lists; false if one could not be settled.
    fn settle_items(&mut self) -> bool {
        self.settle_list::<Phase>("phases")
            && self.settle_list::<AuthRequirement>("auth.required")
            && self.settle_list::<VerificationRule>("verification.rules")
            && self.settle_list::<MemoryType>("memory.extract_types")
            && self.settle_list::<PlannerExample>("planner_examples")
            && self.settle_list::<TestCase>("tests")
    }

    fn settle_list<T: DeserializeOwned>(&mut self, path: &str) -> bool {
        let len = match self.root.get(path).map(|n| &n.kind) {
            Some(NodeKind::Seq(items)) => items.len(),
            _ => return true,
        };
        (0..len).all(|i| self.settle::<T>(&format!("{path}[{i}]")).is_some())
    }

    /// Deserializes `T` at `path`, patching after each failure until it succeeds; `None` when
    /// a patch is impossible, makes no progress, or the pass budget is spent.
    fn settle<T: DeserializeOwned>(&mut self, path: &str) -> Option<(T, Notes)> {
        let mut previous: Option<(String, ShapeErrorKind)> = None;
        for _ in 0..MAX_PASSES_PER_SCOPE {
            let node = self.root.get(path)?;
            let err = match from_node_at::<T>(node, path) {
                Ok(ok) => return Some(ok),
                Err(err) => err,
            };
            let key = (err.path.clone(), err.kind.clone());
            if previous.as_ref() == Some(&key) || !self.fix(&err) {
                self.give_up(&err);
                return None;
            }
            previous = Some(key);
        }
        None
    }

    /// Reports `err` unless it is a follow-on of an earlier patch, then patches the tree.
    fn fix(&mut self, err: &ShapeError) -> bool {
        let path = err.path.as_str();
        if path.is_empty() {
            return false;
        }
        if !self.poison.covers(path) {
            self.diags.push(shape::diagnostic(err, self.root));
        }
        self.poison.patched(path);
        let is_key = !path.ends_with(']');
        match err.kind {
            ShapeErrorKind::MissingField => {
                self.inserted.insert(path.to_string());
                self.root.insert_key(path, NodeKind::Null)
            }
            _ if is_key && !self.inserted.contains(path) => self.root.remove_key(path),
            _ => {
                let Some(expected) = err.expected else {
                    return false;
                };
                if is_key && matches!(expected, Expected::OneOf(_)) {
                    self.poison.subtree(parent_path(path));
                }
                let placeholder = expected.placeholder(neutral_variant(path));
                self.root.replace(path, placeholder)
            }
        }
    }

    /// Makes sure a scope that could not be settled leaves an error in the report.
    fn give_up(&mut self, err: &ShapeError) {
        if !self.diags.iter().any(Diagnostic::is_error) {
            self.diags.push(shape::diagnostic(err, self.root));
        }
    }
}

fn neutral_variant(path: &str) -> Option<&'static str> {
    let pattern = super::strip_indices(path);
    NEUTRAL_VARIANTS
        .iter()
        .find(|(p, _)| *p == pattern)
        .map(|(_, v)| *v)
}

/// Paths whose findings are follow-ons of a patch: whole subtrees, and exact nodes (the
/// parent of a patched node, e.g. `auth.required[0]` once its `provider` was removed).
#[derive(Debug, Default)]
pub(super) struct Poison {
    subtrees: BTreeSet<String>,
    exact: BTreeSet<String>,
}

impl Poison {
    /// Records a patch at `path`: the node and everything under it, and its parent itself.
    fn patched(&mut self, path: &str) {
        self.subtree(path);
        self.exact.insert(parent_path(path).to_string());
    }

    fn subtree(&mut self, path: &str) {
        self.subtrees.insert(path.to_string());
    }

    /// True when a finding at `path` is a follow-on of a patch.
    pub(super) fn covers(&self, path: &str) -> bool {
        self.exact.contains(path) || ancestors(path).any(|a| self.subtrees.contains(a))
    }
}

/// `a.b[1].c` → `a.b[1].c`, `a.b[1]`, `a.b`, `a`, `""`.
fn ancestors(path: &str) -> impl Iterator<Item = &str> {
    let cuts = path.rmatch_indices(['.', '[']).map(|(i, _)| &path[..i]);
    std::iter::once(path).chain(cuts).chain(std::iter::once(""))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::package::rules;
    use crate::package::validate_str;

    /// The rule ids a structural error may carry.
    fn is_structural(rule: &str) -> bool {
        rule == rules::YAML_TYPE.id || rule.ends_with(".value") || rule.ends_with(".required")
    }

    #[test]
    fn ancestors_walk_up_to_the_document() {
        let got: Vec<_> = ancestors("a.b[1].c").collect();
        assert_eq!(got, ["a.b[1].c", "a.b[1]", "a.b", "a", ""]);
    }

    #[test]
    fn poison_covers_subtree_and_parent_only() {
        let mut p = Poison::default();
        p.patched("auth.required[0].provider");
        assert!(p.covers("auth.required[0].provider"));
        assert!(p.covers("auth.required[0].provider.x"));
        assert!(p.covers("auth.required[0]"));
        assert!(!p.covers("auth.required[0].source"));
        assert!(!p.covers("auth.required[1]"));
        assert!(!p.covers("auth.required[0].providers"));
    }

    fn errors(yaml: &str) -> Vec<(String, String)> {
        validate_str(yaml)
            .errors()
            .map(|d| (d.rule.to_string(), d.path.clone()))
            .collect()
    }

    const HEAD: &str = "name: x\nschema_version: 2\nrisk_level: low\n";

    #[test]
    fn six_independent_errors_of_different_kinds_are_all_reported() {
        let yaml = format!(
            "{HEAD}phase_mode: loose\nphases:\n  - id: a\n    description: d\n    depends_on: [nope]\n    iteration:\n      enabled: true\n      max_attempts: 2\n      max_total_runner_invocations: 3\n      iteration_budget:\n        max_wall_clock_seconds: ten\n        max_tokens: 100\n        max_tool_calls: 5\n      gates:\n        - id: g\n          type: regexp\n          pattern: x\n        - id: ok\n          type: artifact_regex\n          blocking: true\n          pattern: \"[TBD\"\nverification:\n  rules:\n    - name: r\n      check: c\n      type: llm\n      severity: fatal\n"
        );
        let report = validate_str(&yaml);
        let got: Vec<_> = report
            .errors()
            .map(|d| (d.rule, d.path.as_str(), d.line))
            .collect();
        assert_eq!(
            got,
            [
                ("phase_mode.value", "phase_mode", 4),
                ("phases.depends_on.unknown", "phases[0].depends_on[0]", 8),
                (
                    "yaml.type",
                    "phases[0].iteration.iteration_budget.max_wall_clock_seconds",
                    14
                ),
                (
                    "iteration.gate.type.value",
                    "phases[0].iteration.gates[0].type",
                    19
                ),
                (
                    "iteration.gate.pattern.invalid",
                    "phases[0].iteration.gates[1].pattern",
                    24
                ),
                (
                    "verification.rule.severity.value",
                    "verification.rules[0].severity",
                    30
                ),
            ],
            "{}",
            report.to_text("")
        );
    }

    #[test]
    fn optional_bad_values_fall_back_without_follow_ons() {
        // A removed `max_attempts` must not also be "required when enabled"; a removed
        // `provider` must not make the entry lack a selector; a removed `enabled` must not
        // warn that the block is off.
        let yaml = format!(
            "{HEAD}auth:\n  required:\n    - provider: [x]\n      source: api\nphases:\n  - id: a\n    description: d\n    depends_on: []\n    iteration:\n      enabled: true\n      max_attempts: three\n      max_total_runner_invocations: 3\n      iteration_budget: {{max_wall_clock_seconds: 1, max_tokens: 1, max_tool_calls: 1}}\n      gates:\n        - type: artifact_regex\n          blocking: true\n          pattern: x\n  - id: b\n    description: d\n    depends_on: []\n    iteration:\n      enabled: \"yes\"\n"
        );
        let report = validate_str(&yaml);
        let got: Vec<_> = report
            .diagnostics
            .iter()
            .map(|d| (d.rule, d.path.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                ("yaml.type", "auth.required[0].provider"),
                ("yaml.type", "phases[0].iteration.max_attempts"),
                ("yaml.type", "phases[1].iteration.enabled"),
            ],
            "{}",
            report.to_text("")
        );
    }

    #[test]
    fn a_required_enum_placeholder_adds_no_rule_about_the_items_kind() {
        // The bad gate would be a tool_metric without its key fields, or a verifier_field that
        // leaves no deterministic blocking gate, under another placeholder; the bad rule type
        // would compile its check as a regex.
        let yaml = format!(
            "{HEAD}phases:\n  - id: a\n    description: d\n    depends_on: []\n    iteration:\n      enabled: true\n      max_attempts: 2\n      max_total_runner_invocations: 3\n      iteration_budget: {{max_wall_clock_seconds: 1, max_tokens: 1, max_tool_calls: 1}}\n      gates:\n        - type: tool-metric\n          operator: gte\n          blocking: true\nverification:\n  rules:\n    - name: r\n      check: \"(\"\n      type: regexp\nauth:\n  required:\n    - source: ftp\n      mcp_server: m\n"
        );
        assert_eq!(
            errors(&yaml),
            [
                (
                    "iteration.gate.type.value".to_string(),
                    "phases[0].iteration.gates[0].type".to_string()
                ),
                (
                    "verification.rule.type.value".to_string(),
                    "verification.rules[0].type".to_string()
                ),
                (
                    "auth.source.value".to_string(),
                    "auth.required[0].source".to_string()
                ),
            ]
        );
    }

    #[test]
    fn missing_required_keys_and_bad_items_are_all_reported() {
        let yaml = format!(
            "{HEAD}phases:\n  - id: a\n  - 5\n  - id: c\n    description: [d]\n    depends_on: []\ntags: [ok, [x], {{y: 1}}]\ntests:\n  - goal: g\n"
        );
        let got = errors(&yaml);
        let want = [
            ("phases.field.required", "phases[0].description"),
            ("yaml.type", "phases[1]"),
            ("yaml.type", "phases[2].description"),
            ("yaml.type", "tags[1]"),
            ("yaml.type", "tags[2]"),
            ("tests.id.required", "tests[0].id"),
        ];
        let want: Vec<_> = want
            .iter()
            .map(|(r, p)| (r.to_string(), p.to_string()))
            .collect();
        assert_eq!(got, want);
        assert!(got.iter().all(|(r, _)| is_structural(r)));
    }

    #[test]
    fn a_one_error_file_still_reports_one_error() {
        for yaml in [
            "name: x\nschema_version: 2\nrisk_level: loud\n".to_string(),
            format!(
                "{HEAD}phases:\n  - id: a\n    description: d\n    depends_on: []\n    model_tier: high\n"
            ),
            format!("{HEAD}tests:\n  - id: smoke\n    goal: g\n    mode: replay\n"),
        ] {
            let got = errors(&yaml);
            assert_eq!(got.len(), 1, "{yaml}\n{got:?}");
        }
    }

    #[test]
    fn many_bad_items_are_settled_one_item_at_a_time() {
        let mut yaml = format!("{HEAD}phases:\n");
        for i in 0..2_000 {
            yaml.push_str(&format!(
                "  - id: p{i}\n    description: d\n    depends_on: []\n    model_tier: x\n"
            ));
        }
        let report = validate_str(&yaml);
        assert_eq!(report.errors().count(), 2_000);
        assert!(report.errors().all(|d| d.rule == "yaml.type"));
    }

    #[test]
    fn a_scope_that_cannot_be_settled_still_reports_an_error() {
        let mut yaml = format!("{HEAD}tags:\n");
        for _ in 0..(MAX_PASSES_PER_SCOPE + 10) {
            yaml.push_str("  - [x]\n");
        }
        let report = validate_str(&yaml);
        assert_eq!(report.errors().count(), MAX_PASSES_PER_SCOPE);
    }
}
