//! The validator: YAML text → [`Report`] (and, when there is no error, the typed [`Process`]).
//!
//! Stages: parse into a positioned tree (syntax and duplicate keys), deserialize the model
//! from it (types, required keys, enum values, unknown keys), then the guide's semantic rules,
//! one module per guide section. A syntax error or duplicate key stops the report (there is
//! no tree to read); every structural error is reported, the tree being patched past each
//! one ([`repair`]), and so is every semantic finding that is not a follow-on of a patch.

mod extras;
mod iteration;
mod manifest;
mod metadata;
mod phases;
mod repair;
mod shape;
mod validity;
mod verification;

use std::sync::LazyLock;

use super::command;
use super::model::Process;
use super::pattern::{Pattern, PatternError};
use super::report::{Diagnostic, Report};
use super::rules::{self, Rule};
use super::yaml_pos::{CoercionReason, Node, NodeKind, Pos};

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
    let mut node = match Node::parse(yaml) {
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
    let built = repair::build(&mut node);
    let Some((process, notes)) = built.value else {
        return Err(Report::new(built.diags));
    };
    let mut ctx = Ctx {
        node: &node,
        opts,
        diags: Vec::new(),
    };
    for c in notes.coerced {
        let rule = match c.reason {
            CoercionReason::Yaml11Bool => &rules::YAML_BOOL_YAML11,
            CoercionReason::EnumCase => &rules::YAML_ENUM_CASE,
            CoercionReason::EnumAlias => &rules::RISK_LEVEL_ALIAS,
        };
        let why = match c.reason {
            CoercionReason::Yaml11Bool => {
                "a YAML 1.1 boolean: the guide's loader reads YAML with PyYAML"
            }
            CoercionReason::EnumCase => "the guide's loader lower-cases this value",
            CoercionReason::EnumAlias => "the guide's loader maps this alias",
        };
        ctx.diags.push(Diagnostic::new(
            rule,
            c.path,
            c.pos,
            format!(
                "`{}` is read as `{}` ({why}); write `{}`, which every YAML reader reads the same way",
                c.found, c.portable, c.portable
            ),
        ));
    }
    for key in notes.unknown {
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
    let mut diags = built.diags;
    diags.extend(
        ctx.diags
            .into_iter()
            .filter(|d| !built.poison.covers(&d.path)),
    );
    let report = Report::new(diags);
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

/// Compiles a package regex ([`Pattern`], Python `re` dialect) and reports a malformed
/// pattern under `invalid` and an oversized one under `too_large`.
fn check_pattern(
    ctx: &mut Ctx<'_>,
    pattern: &str,
    path: String,
    invalid: &Rule,
    too_large: &Rule,
    what: &str,
) {
    match Pattern::compile(pattern) {
        Ok(_) => {}
        Err(e @ PatternError::TooLarge(_)) => ctx.emit(too_large, path, format!("{what}: {e}")),
        Err(e) => ctx.emit(invalid, path, format!("{what}: {e}")),
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

/// saphyr messages start with `error: line L column C: ` and may end in `at line L, column
/// C`; the position is reported in the diagnostic's own fields, so both are removed. Messages
/// that name serde-saphyr API are rewritten in the guide's terms.
fn clean_parser_message(msg: &str) -> String {
    static PREFIX: LazyLock<regex::Regex> = LazyLock::new(|| {
        regex::Regex::new(r"^(error: )?(line \d+ column \d+: )?").expect("static regex")
    });
    static AT: LazyLock<regex::Regex> = LazyLock::new(|| {
        regex::Regex::new(r",?\s*(at )?line \d+,? column \d+").expect("static regex")
    });
    if msg.contains("multiple YAML documents") {
        return "a process definition is one YAML document; found a second one (remove the `---` separator)".to_string();
    }
    let cleaned = PREFIX.replace(msg, "").to_string();
    let cleaned = cleaned
        .split(", set DuplicateKeyPolicy")
        .next()
        .unwrap_or(&cleaned)
        .to_string();
    let cleaned = AT.replace_all(&cleaned, "").trim().to_string();
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

#[cfg(test)]
mod message_tests {
    use super::*;

    fn only(yaml: &str) -> Diagnostic {
        let r = validate_str(yaml);
        assert_eq!(r.errors().count(), 1, "{:#?}", r.diagnostics);
        r.errors().next().unwrap().clone()
    }

    #[test]
    fn messages_carry_no_position_and_no_rust_internals() {
        for yaml in [
            "name: x\nphases: [\n",
            "name: x\n---\nname: y\n",
            "name: x\nphases:\n  - id: a\n    description: d\n    depends_on: []\n    iteration:\n      gates:\n        - type: command_exit\n          command: {a: b}\n",
            "name: x\n? [a, b]\n: c\n",
        ] {
            let d = only(yaml);
            for leak in [
                "line ",
                "column ",
                "from_str_multiple",
                "untagged",
                "GateCommand",
            ] {
                assert!(!d.message.contains(leak), "{leak:?} in {:?}", d.message);
            }
            assert!(d.line > 0 && d.column > 0, "{d:?}");
        }
    }

    #[test]
    fn a_non_scalar_key_is_positioned() {
        let d = only("name: x\n? [a, b]\n: c\n");
        assert_eq!((d.rule, d.line, d.column), ("yaml.syntax", 2, 3));
        assert_eq!(
            d.message,
            "a mapping key must be a scalar, found a sequence"
        );
    }

    #[test]
    fn integer_overflow_says_out_of_range() {
        for big in ["99999999999999999999999", "18446744073709551615"] {
            let d = only(&format!(
                "name: x\nphases:\n  - id: a\n    description: d\n    depends_on: []\n    model_tier: {big}\n"
            ));
            assert_eq!(d.path, "phases[0].model_tier");
            assert!(d.message.contains("integer out of range"), "{}", d.message);
        }
    }

    #[test]
    fn a_command_that_is_not_a_list_names_the_argv_rule() {
        let d = only(
            "name: x\nphases:\n  - id: a\n    description: d\n    depends_on: []\n    iteration:\n      gates:\n        - type: command_exit\n          command: {a: b}\n",
        );
        assert_eq!(d.rule, "iteration.gate.command.argv");
        assert_eq!(
            d.message,
            "`command`: expected a list of argv tokens, found a mapping"
        );
    }
}
