//! loop-engine "Judge Rules + Result": `command` rules (exit code plus `successMatch` /
//! `failMatch` over the output), `regex` rules over texts, and `llm` rules through the
//! [`Model`]. Each gives a [`JudgeResult`] `{status, reasons, evidence}`.
//!
//! Reading of `command` rules: `failMatch` found in stdout+stderr → fail; else
//! `successMatch` given → pass iff found; else pass iff the exit code is 0. A command the
//! policy refuses, or that cannot start or times out, gives `error` (the judge could not
//! decide), never `pass`.

use super::action::Observation;
use super::model::{Model, ModelRequest};
use super::tools::ToolExecutor;
use crate::package::pattern::Pattern;
use serde::{Deserialize, Serialize};

/// A judge rule (loop-engine "Judge Rules + Result" rule shape, plus `regex` and `llm`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct JudgeRule {
    /// Rule id.
    pub id: String,
    /// `command`, `regex` or `llm`.
    #[serde(rename = "type")]
    pub kind: JudgeKind,
    /// `command`: argv.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub command: Vec<String>,
    /// `command`: a regex whose presence in the output means pass.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub success_match: Option<String>,
    /// `command`: a regex whose presence in the output means fail.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fail_match: Option<String>,
    /// `regex`: the pattern; `llm`: the check text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check: Option<String>,
}

/// Judge rule kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum JudgeKind {
    /// Run a command.
    Command,
    /// Match a regex.
    Regex,
    /// Ask the model.
    Llm,
}

/// A verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum JudgeStatus {
    /// The rule holds.
    Pass,
    /// The rule is broken.
    Fail,
    /// The judge could not decide (refused command, model error, bad pattern).
    Error,
    /// The check was not run (e.g. `command_exit` gates disabled at runtime).
    Skipped,
}

impl JudgeStatus {
    /// The JSON name.
    pub fn as_str(self) -> &'static str {
        match self {
            JudgeStatus::Pass => "pass",
            JudgeStatus::Fail => "fail",
            JudgeStatus::Error => "error",
            JudgeStatus::Skipped => "skipped",
        }
    }
}

/// loop-engine "Judge Rules + Result" result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JudgeResult {
    /// The verdict.
    pub status: JudgeStatus,
    /// Why (empty on a plain pass).
    pub reasons: Vec<String>,
    /// References: `events:<tool call id>`, `file:<path>`, `output:<phase>`.
    pub evidence: Vec<String>,
}

impl JudgeResult {
    /// A result.
    pub fn new(status: JudgeStatus, reasons: Vec<String>, evidence: Vec<String>) -> Self {
        JudgeResult {
            status,
            reasons,
            evidence,
        }
    }
}

/// Package and engine patterns share one dialect (Python `re`, see `package::pattern`).
fn compile(pattern: &str, what: &str) -> Result<Pattern, JudgeResult> {
    Pattern::compile(pattern).map_err(|e| {
        JudgeResult::new(
            JudgeStatus::Error,
            vec![format!("{what}: invalid regex {pattern:?}: {e}")],
            vec![],
        )
    })
}

/// Runs a compiled pattern; a pattern that gives up (backtracking budget) is a judge error,
/// never a silent pass or fail.
fn matches(re: &Pattern, text: &str, what: &str) -> Result<bool, JudgeResult> {
    re.is_match(text).map_err(|e| {
        JudgeResult::new(
            JudgeStatus::Error,
            vec![format!(
                "{what}: regex {:?} could not run: {e}",
                re.as_str()
            )],
            vec![],
        )
    })
}

/// Judges an already-run command's observation (`tool_call_id` is the evidence reference).
pub fn judge_command_output(
    obs: &Observation,
    tool_call_id: &str,
    success_match: Option<&str>,
    fail_match: Option<&str>,
) -> JudgeResult {
    let evidence = vec![format!("events:{tool_call_id}")];
    let Some(code) = obs.exit_code else {
        return JudgeResult::new(JudgeStatus::Error, vec![obs.summary.clone()], evidence);
    };
    let output = format!(
        "{}{}",
        obs.raw.get("stdout").and_then(|v| v.as_str()).unwrap_or(""),
        obs.raw.get("stderr").and_then(|v| v.as_str()).unwrap_or("")
    );
    if let Some(f) = fail_match {
        match compile(f, "failMatch").and_then(|re| matches(&re, &output, "failMatch")) {
            Err(e) => return e,
            Ok(true) => {
                return JudgeResult::new(
                    JudgeStatus::Fail,
                    vec![format!("output matches failMatch {f:?}")],
                    evidence,
                );
            }
            Ok(false) => {}
        }
    }
    if let Some(s) = success_match {
        return match compile(s, "successMatch").and_then(|re| matches(&re, &output, "successMatch"))
        {
            Err(e) => e,
            Ok(true) => JudgeResult::new(JudgeStatus::Pass, vec![], evidence),
            Ok(false) => JudgeResult::new(
                JudgeStatus::Fail,
                vec![format!(
                    "output does not match successMatch {s:?} (exit code {code})"
                )],
                evidence,
            ),
        };
    }
    if code == 0 {
        JudgeResult::new(JudgeStatus::Pass, vec![], evidence)
    } else {
        JudgeResult::new(
            JudgeStatus::Fail,
            vec![format!("exit code {code}")],
            evidence,
        )
    }
}

/// Runs a `command` rule through the executor (so the command policy applies, with the
/// runner checks' allowlist: [`ToolExecutor::run_check_argv`]) and judges it.
/// Returns the observation too, for the event stream.
pub fn judge_command(
    rule: &JudgeRule,
    tool_call_id: &str,
    exec: &mut ToolExecutor,
) -> (JudgeResult, Observation) {
    let obs = exec.run_check_argv(&rule.command, None, None);
    let r = judge_command_output(
        &obs,
        tool_call_id,
        rule.success_match.as_deref(),
        rule.fail_match.as_deref(),
    );
    (r, obs)
}

/// A regex rule over labelled texts: passes iff "some text matches" equals `expect_match`.
/// Each text is matched as a whole (so multi-line patterns and `\z` work; `^`/`$` anchor at
/// the text's ends unless the pattern sets `(?m)`, as Python's `re.search` does). Reasons
/// list the first match starting on each line (`label:line: text`, the line computed from
/// the match offset), sorted by label then line.
pub fn judge_regex(pattern: &str, texts: &[(String, String)], expect_match: bool) -> JudgeResult {
    let re = match compile(pattern, "regex rule") {
        Ok(r) => r,
        Err(e) => return e,
    };
    let mut hits = Vec::new();
    let mut sorted: Vec<&(String, String)> = texts.iter().collect();
    sorted.sort_by(|a, b| a.0.cmp(&b.0));
    for (label, text) in &sorted {
        let matches = match re.spans(text) {
            Ok(m) => m,
            Err(e) => {
                return JudgeResult::new(
                    JudgeStatus::Error,
                    vec![format!("regex {pattern:?} could not run on {label}: {e}")],
                    vec![label.clone()],
                );
            }
        };
        let mut last_line = 0;
        for (start, m) in matches {
            let line = text[..start].matches('\n').count() + 1;
            if line != last_line {
                hits.push(format!("{label}:{line}: {m:?}"));
                last_line = line;
            }
        }
    }
    let evidence: Vec<String> = sorted.iter().map(|(l, _)| l.clone()).collect();
    let matched = !hits.is_empty();
    if matched == expect_match {
        JudgeResult::new(JudgeStatus::Pass, vec![], evidence)
    } else if matched {
        JudgeResult::new(
            JudgeStatus::Fail,
            hits.into_iter()
                .map(|h| format!("forbidden match {h}"))
                .collect(),
            evidence,
        )
    } else if texts.is_empty() {
        JudgeResult::new(
            JudgeStatus::Fail,
            vec![format!("no text to check for {pattern:?}")],
            evidence,
        )
    } else {
        JudgeResult::new(
            JudgeStatus::Fail,
            vec![format!("no match for {pattern:?}")],
            evidence,
        )
    }
}

/// A regex rule that must match at least `min` times (exactly `min` with `exact`): the
/// guide's loader's `min_count` / `requires_exact_cardinality`. Matches are counted over all
/// texts (non-overlapping, Python `re.findall` semantics).
pub fn judge_regex_count(
    pattern: &str,
    texts: &[(String, String)],
    min: usize,
    exact: bool,
) -> JudgeResult {
    let re = match compile(pattern, "regex rule") {
        Ok(r) => r,
        Err(e) => return e,
    };
    let mut sorted: Vec<&(String, String)> = texts.iter().collect();
    sorted.sort_by(|a, b| a.0.cmp(&b.0));
    let mut count = 0usize;
    for (label, text) in &sorted {
        match re.spans(text) {
            Ok(m) => count += m.len(),
            Err(e) => {
                return JudgeResult::new(
                    JudgeStatus::Error,
                    vec![format!("regex {pattern:?} could not run on {label}: {e}")],
                    vec![label.clone()],
                );
            }
        }
    }
    let evidence: Vec<String> = sorted.iter().map(|(l, _)| l.clone()).collect();
    let ok = if exact { count == min } else { count >= min };
    if ok {
        JudgeResult::new(JudgeStatus::Pass, vec![], evidence)
    } else {
        JudgeResult::new(
            JudgeStatus::Fail,
            vec![format!(
                "{pattern:?} matches {count} times; the rule needs {}{min}",
                if exact { "exactly " } else { "at least " }
            )],
            evidence,
        )
    }
}

/// An `llm` rule: asks the model (request purpose `Judge`); a reply without a verdict or a
/// model error gives `error`. Returns the token usage with the result.
pub fn judge_llm(model: &dyn Model, req: &ModelRequest) -> (JudgeResult, u64) {
    match model.reply(req) {
        Err(e) => (JudgeResult::new(JudgeStatus::Error, vec![e.0], vec![]), 0),
        Ok(reply) => {
            let evidence = vec![format!("model:{}", model.name())];
            let status = match reply.verdict {
                Some(true) => JudgeStatus::Pass,
                Some(false) => JudgeStatus::Fail,
                None => JudgeStatus::Error,
            };
            let mut reasons = reply.reasons;
            if status == JudgeStatus::Error {
                reasons.push(format!("the model gave no verdict: {:?}", reply.message));
            }
            (
                JudgeResult::new(status, reasons, evidence),
                reply.tokens.total(),
            )
        }
    }
}

/// Comparison operators of gates (guide "Phase iteration loops": `operator`).
pub fn compare(operator: &str, actual: f64, expected: f64) -> Result<bool, String> {
    Ok(match operator {
        "eq" | "==" => actual == expected,
        "ne" | "!=" => actual != expected,
        "gt" | ">" => actual > expected,
        "gte" | ">=" => actual >= expected,
        "lt" | "<" => actual < expected,
        "lte" | "<=" => actual <= expected,
        other => {
            return Err(format!(
                "unknown operator {other:?} (eq, ne, gt, gte, lt, lte)"
            ));
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::model::{MockModel, ModelReply, Purpose};
    use serde_json::json;

    fn cmd_obs(code: Option<i32>, stdout: &str) -> Observation {
        let mut o = Observation::ok("ran").with_raw(json!({"stdout": stdout, "stderr": ""}));
        o.exit_code = code;
        o
    }

    #[test]
    fn rule_shape_parses_the_schema_example() {
        let r: JudgeRule = serde_json::from_str(
            r#"{"id": "tests_pass", "type": "command", "command": ["npm", "test"], "successMatch": "PASS", "failMatch": "FAIL"}"#,
        )
        .unwrap();
        assert_eq!(r.kind, JudgeKind::Command);
        assert_eq!(r.success_match.as_deref(), Some("PASS"));
        let res = JudgeResult::new(JudgeStatus::Pass, vec![], vec!["events:tool-123".into()]);
        assert_eq!(
            serde_json::to_value(res).unwrap(),
            json!({"status": "pass", "reasons": [], "evidence": ["events:tool-123"]})
        );
    }

    #[test]
    fn command_output_rules() {
        let s = |o: &Observation, sm, fm| judge_command_output(o, "t1", sm, fm).status;
        assert_eq!(s(&cmd_obs(Some(0), "ok"), None, None), JudgeStatus::Pass);
        assert_eq!(s(&cmd_obs(Some(1), "ok"), None, None), JudgeStatus::Fail);
        assert_eq!(
            s(&cmd_obs(Some(0), "3 FAIL"), Some("PASS"), Some("FAIL")),
            JudgeStatus::Fail
        );
        assert_eq!(
            s(&cmd_obs(Some(1), "PASS"), Some("PASS"), Some("FAIL")),
            JudgeStatus::Pass
        );
        assert_eq!(
            s(&cmd_obs(Some(0), "meh"), Some("PASS"), None),
            JudgeStatus::Fail
        );
        assert_eq!(s(&cmd_obs(None, ""), None, None), JudgeStatus::Error);
        assert_eq!(
            s(&cmd_obs(Some(0), ""), Some("("), None),
            JudgeStatus::Error
        );
        assert_eq!(
            judge_command_output(&cmd_obs(Some(0), ""), "t1", None, None).evidence,
            ["events:t1"]
        );
    }

    #[test]
    fn regex_rules_with_and_without_expected_match() {
        let texts = vec![
            ("file:b.md".to_owned(), "fine\n[TBD] x".to_owned()),
            ("file:a.md".to_owned(), "ok".to_owned()),
        ];
        let r = judge_regex(r"\[TBD\]", &texts, false);
        assert_eq!(r.status, JudgeStatus::Fail);
        assert_eq!(r.reasons, ["forbidden match file:b.md:2: \"[TBD]\""]);
        assert_eq!(r.evidence, ["file:a.md", "file:b.md"]);
        assert_eq!(
            judge_regex(r"\[TBD\]", &texts, true).status,
            JudgeStatus::Pass
        );
        assert_eq!(
            judge_regex("nothing", &texts, false).status,
            JudgeStatus::Pass
        );
        assert_eq!(
            judge_regex("nothing", &texts, true).status,
            JudgeStatus::Fail
        );
        assert_eq!(judge_regex("(", &texts, true).status, JudgeStatus::Error);
    }

    /// Patterns see the whole text: a match may span lines, `\z` is the end of the text,
    /// and the reported line is where the match starts.
    #[test]
    fn regex_rules_match_the_whole_text() {
        let texts = vec![(
            "file:r.md".to_owned(),
            "# Report\n\nBody\n## Sources\n".to_owned(),
        )];
        let r = judge_regex(r"Body\n## Sources", &texts, false);
        assert_eq!(
            r.reasons,
            ["forbidden match file:r.md:3: \"Body\\n## Sources\""]
        );
        assert_eq!(
            judge_regex(r"Sources\n\z", &texts, true).status,
            JudgeStatus::Pass
        );
        assert_eq!(
            judge_regex(r"Body\z", &texts, true).status,
            JudgeStatus::Fail
        );
        assert_eq!(
            judge_regex(r"(?m)^## Sources$", &texts, true).status,
            JudgeStatus::Pass
        );
        let r = judge_regex(r"(?s)Report.*Body", &texts, false);
        assert_eq!(r.reasons.len(), 1);
        assert!(
            r.reasons[0].starts_with("forbidden match file:r.md:1:"),
            "{r:?}"
        );
    }

    #[test]
    fn llm_rules_go_through_the_model() {
        let mut m = MockModel::new();
        m.expect_name().return_const("mock".to_owned());
        m.expect_reply()
            .withf(|r| matches!(&r.purpose, Purpose::Judge { rule, .. } if rule == "claims"))
            .times(1)
            .returning(|_| {
                Ok(ModelReply {
                    verdict: Some(false),
                    reasons: vec!["uncited".into()],
                    tokens: crate::engine::model::TokenUsage {
                        prompt: 3,
                        completion: 2,
                    },
                    ..Default::default()
                })
            });
        let req = ModelRequest {
            purpose: Purpose::Judge {
                rule: "claims".into(),
                check: "cite".into(),
                subject: "x".into(),
            },
            system: String::new(),
            goal: String::new(),
            phase_id: "p".into(),
            phase_description: String::new(),
            attempt: 1,
            turn: 1,
            observations: vec![],
            feedback: vec![],
            model_tier: 2,
        };
        let (r, tokens) = judge_llm(&m, &req);
        assert_eq!((r.status, tokens), (JudgeStatus::Fail, 5));
        assert_eq!(r.reasons, ["uncited"]);
        assert_eq!(r.evidence, ["model:mock"]);
    }

    #[test]
    fn operators() {
        assert_eq!(compare("gte", 80.0, 80.0), Ok(true));
        assert_eq!(compare("lt", 80.0, 80.0), Ok(false));
        assert_eq!(compare("eq", 0.0, 0.0), Ok(true));
        assert!(compare("approx", 1.0, 1.0).is_err());
    }
}
