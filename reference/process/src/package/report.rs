//! Diagnostics and the validation report (text and JSON renderings).

use serde::Serialize;

use super::rules::{Level, Rule};
use super::yaml_pos::Pos;

/// One finding: which rule, where (path and 1-based YAML position), and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Diagnostic {
    /// `error` or `warning`.
    pub severity: Level,
    /// Path of the offending node, e.g. `phases[2].iteration.max_attempts` (`""` = document).
    pub path: String,
    /// Stable rule id (see `rules`).
    pub rule: &'static str,
    /// What is wrong, naming the offending value.
    pub message: String,
    /// The guide section the rule implements.
    pub section: &'static str,
    /// 1-based line of the offending node (0 when there is no document position).
    pub line: u64,
    /// 1-based column of the offending node (0 when there is no document position).
    pub column: u64,
}

impl Diagnostic {
    /// A diagnostic for `rule` at `path` / `pos`.
    pub fn new(rule: &Rule, path: impl Into<String>, pos: Pos, message: impl Into<String>) -> Self {
        Diagnostic {
            severity: rule.level,
            path: path.into(),
            rule: rule.id,
            message: message.into(),
            section: rule.section,
            line: pos.line,
            column: pos.column,
        }
    }

    /// True for errors.
    pub fn is_error(&self) -> bool {
        self.severity == Level::Error
    }

    /// One line: `error[rule] path (line L, col C): message (guide "Section")`.
    pub fn render(&self) -> String {
        let path = if self.path.is_empty() {
            "<document>"
        } else {
            &self.path
        };
        let at = if self.line > 0 {
            format!(" (line {}, col {})", self.line, self.column)
        } else {
            String::new()
        };
        format!(
            "{}[{}] {}{}: {} (guide \"{}\")",
            self.severity.as_str(),
            self.rule,
            path,
            at,
            self.message,
            self.section
        )
    }
}

/// All diagnostics for one definition, in document order.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Report {
    /// Errors and warnings, sorted by position, then path, then rule.
    pub diagnostics: Vec<Diagnostic>,
}

impl Report {
    /// A report of these diagnostics, put in the canonical order.
    pub fn new(mut diagnostics: Vec<Diagnostic>) -> Self {
        diagnostics.sort_by(|a, b| {
            (a.line, a.column, &a.path, a.rule, &a.message)
                .cmp(&(b.line, b.column, &b.path, b.rule, &b.message))
        });
        diagnostics.dedup();
        Report { diagnostics }
    }

    /// The errors.
    pub fn errors(&self) -> impl Iterator<Item = &Diagnostic> {
        self.diagnostics.iter().filter(|d| d.is_error())
    }

    /// The warnings.
    pub fn warnings(&self) -> impl Iterator<Item = &Diagnostic> {
        self.diagnostics.iter().filter(|d| !d.is_error())
    }

    /// True when there is no error (warnings allowed).
    pub fn is_valid(&self) -> bool {
        self.errors().next().is_none()
    }

    /// Human-readable report, one diagnostic per line, then a summary line.
    pub fn to_text(&self, source: &str) -> String {
        let mut out = String::new();
        for d in &self.diagnostics {
            out.push_str(&d.render());
            out.push('\n');
        }
        let errors = self.errors().count();
        let warnings = self.warnings().count();
        let verdict = if errors == 0 { "valid" } else { "invalid" };
        out.push_str(&format!(
            "{source}: {verdict} ({errors} error{}, {warnings} warning{})\n",
            plural(errors),
            plural(warnings)
        ));
        out
    }

    /// Machine-readable report: `{valid, errors, warnings, diagnostics: [...]}`.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "valid": self.is_valid(),
            "errors": self.errors().count(),
            "warnings": self.warnings().count(),
            "diagnostics": self.diagnostics,
        })
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}
