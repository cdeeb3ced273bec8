//! The validator: YAML text → [`Report`] (and, when there is no error, the typed [`Process`]).
//!
//! Stages: parse into a positioned tree (syntax and duplicate keys), deserialize the model
//! from it (types, required keys, enum values, unknown keys), then the guide's semantic rules,
//! one module per guide section. Structural problems stop at the first one found (serde
//! cannot continue past a value it could not build); semantic rules are all reported.

mod extras;
mod iteration;
mod manifest;
mod metadata;
mod phases;
mod shape;
mod validity;
mod verification;

use super::command;
use super::model::Process;
use super::report::{Diagnostic, Report};
use super::rules::{self, Rule};
use super::yaml_pos::{Node, NodeKind, Pos, from_node};

/// Validator settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValidateOptions {
    /// Allowlisted `command_exit` argv prefixes; default: the guide's MVP list
    /// ([`command::DEFAULT_ALLOWLIST`]). Loom lets `loom.toml` override it.
    pub command_allowlist: Vec<Vec<String>>,
}

impl Default for ValidateOptions {
    fn default() -> Self {
        ValidateOptions {
            command_allowlist: command::default_allowlist(),
        }
    }
}

/// A definition that passed validation, with its warnings.
#[derive(Debug, Clone, PartialEq)]
pub struct Validated {
    /// The typed definition.
    pub process: Process,
    /// Warnings only (no errors).
    pub report: Report,
}

/// Validates YAML text with default options.
pub fn validate_str(yaml: &str) -> Report {
    validate_str_with(yaml, &ValidateOptions::default())
}

/// Validates YAML text.
pub fn validate_str_with(yaml: &str, opts: &ValidateOptions) -> Report {
    match load_str_with(yaml, opts) {
        Ok(v) => v.report,
        Err(report) => report,
    }
}

/// Loads and validates YAML text with default options: the typed process and its warnings,
/// or the report with at least one error.
pub fn load_str(yaml: &str) -> Result<Validated, Report> {
    load_str_with(yaml, &ValidateOptions::default())
}

/// Loads and validates YAML text.
pub fn load_str_with(yaml: &str, opts: &ValidateOptions) -> Result<Validated, Report> {
    let node = match Node::parse(yaml) {
        Ok(node) => node,
        Err((message, pos, duplicate)) => {
            let rule = if duplicate {
                &rules::YAML_DUPLICATE_KEY
            } else {
                &rules::YAML_SYNTAX
            };
            let path = if duplicate {
                duplicate_key_path(yaml, pos)
            } else {
                String::new()
            };
            return Err(Report::new(vec![Diagnostic::new(
                rule,
                path,
                pos,
                clean_parser_message(&message),
            )]));
        }
    };
    if !matches!(node.kind, NodeKind::Map(_)) {
        return Err(Report::new(vec![Diagnostic::new(
            &rules::YAML_TYPE,
            "",
            node.pos,
            format!(
                "a process definition is a mapping, found {}",
                node.kind.type_name()
            ),
        )]));
    }
    let (process, unknown) = match from_node::<Process>(&node) {
        Ok(ok) => ok,
        Err(err) => return Err(Report::new(vec![shape::diagnostic(&err)])),
    };
    let mut ctx = Ctx {
        node: &node,
        opts,
        diags: Vec::new(),
    };
    for key in unknown {
        let parent = key.path.rsplit_once('.').map_or("", |(p, _)| p);
        if !rules::LENIENT_BLOCKS.contains(&strip_indices(parent).as_str()) {
            let name = key.path.rsplit('.').next().unwrap_or(&key.path).to_string();
            ctx.diags.push(Diagnostic::new(
                &rules::YAML_UNKNOWN_KEY,
                key.path,
                key.pos,
                format!(
                    "unknown key `{name}` is ignored (known here: {})",
                    key.expected.join(", ")
                ),
            ));
        }
    }
    check_all(&mut ctx, &process);
    let report = Report::new(ctx.diags);
    if report.is_valid() {
        Ok(Validated { process, report })
    } else {
        Err(report)
    }
}

/// Every semantic rule, section by section in guide order.
fn check_all(ctx: &mut Ctx<'_>, p: &Process) {
    metadata::check(ctx, p);
    phases::check(ctx, p);
    validity::check(ctx, p);
    iteration::check(ctx, p);
    verification::check(ctx, p);
    manifest::check(ctx, p);
    extras::check(ctx, p);
}

/// Shared state of one validation run.
pub(crate) struct Ctx<'a> {
    node: &'a Node,
    opts: &'a ValidateOptions,
    diags: Vec<Diagnostic>,
}

impl Ctx<'_> {
    /// Records a finding for `rule` at `path`, positioned at the node (or nearest ancestor).
    fn emit(&mut self, rule: &Rule, path: impl Into<String>, message: impl Into<String>) {
        let path = path.into();
        let pos = self.node.position_of(&path);
        self.diags.push(Diagnostic::new(rule, path, pos, message));
    }
}

/// `phases[2].gates[0]` → `phases[*].gates[*]`.
pub(crate) fn strip_indices(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    let mut in_index = false;
    for c in path.chars() {
        match c {
            '[' => {
                in_index = true;
                out.push_str("[*");
            }
            ']' => {
                in_index = false;
                out.push(']');
            }
            _ if in_index => {}
            _ => out.push(c),
        }
    }
    out
}

/// saphyr messages start with `error: line L column C: `; the position is reported separately.
fn clean_parser_message(msg: &str) -> String {
    let re = regex::Regex::new(r"^(error: )?(line \d+ column \d+: )?").expect("static regex");
    let cleaned = re.replace(msg, "").to_string();
    let cleaned = cleaned
        .split(", set DuplicateKeyPolicy")
        .next()
        .unwrap_or(&cleaned)
        .to_string();
    if cleaned.is_empty() {
        msg.to_string()
    } else {
        cleaned
    }
}

/// The path of a duplicated key: re-parse letting the last key win and find the key written
/// at the reported position.
fn duplicate_key_path(yaml: &str, pos: Pos) -> String {
    Node::parse_last_wins(yaml)
        .and_then(|n| n.key_path_at(pos))
        .map(|p| p.replace(".[", "["))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strip_indices_generalizes_paths() {
        assert_eq!(
            strip_indices("phases[12].iteration.gates[0].type"),
            "phases[*].iteration.gates[*].type"
        );
    }

    #[test]
    fn duplicate_key_path_follows_indentation() {
        let report = validate_str("name: x\nphases:\n  - id: a\n    id: b\n");
        let d = &report.diagnostics[0];
        assert_eq!(
            (d.rule, d.path.as_str()),
            ("yaml.duplicate_key", "phases[0].id")
        );
        assert_eq!((d.line, d.column), (4, 5));
    }
}
