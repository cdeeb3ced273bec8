//! The adapter protocol (vectors/README.md, "Adapter protocol"): how any implementation, in
//! any language, is driven through the vectors over JSON lines on stdin/stdout, and how its
//! answers are judged against a test's written expectation.
//!
//! One request per test: `{"v":1,"id","area","kind","input"}`. `input` is every member of the
//! test and of its group that is not part of the file format ([`RESERVED_MEMBERS`]), so the
//! expectation is never sent. One answer per request, in order:
//! `{"id","result":"valid"|"invalid"|"unsupported","output"?,"error"?,"detail"?}`.

use crate::{Group, VectorFile};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The protocol version carried in every request's `v`.
pub const ADAPTER_PROTOCOL_VERSION: u32 = 1;

/// Test and group members that describe the test rather than feed the implementation.
pub const RESERVED_MEMBERS: [&str; 10] = [
    "id",
    "comment",
    "flags",
    "spec",
    "result",
    "expected",
    "expected_error",
    "expected_error_path",
    "kind",
    "tests",
];

/// One request to an adapter.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Request {
    /// Adapter protocol version.
    pub v: u32,
    /// The vector ID; the answer repeats it.
    pub id: String,
    /// The vector file's area.
    pub area: String,
    /// The operation (`canonicalize`, `verify-envelope-signature`, …).
    pub kind: String,
    /// The inputs.
    pub input: Map<String, Value>,
}

/// What an implementation decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// Accepted (and `output` holds what it produced, when the kind has an output).
    Valid,
    /// Rejected, with `error` naming the code.
    Invalid,
    /// The implementation does not implement this kind; never counted as a pass.
    Unsupported,
}

/// One answer from an adapter.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Answer {
    /// The vector ID of the request this answers.
    pub id: String,
    /// The verdict.
    pub result: Verdict,
    /// What a `valid` answer produced (canonical text, parsed form, new state, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<Value>,
    /// The error code of an `invalid` answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Where in the input the error is (areas whose tests carry `expected_error_path`, e.g.
    /// `phases[2].depends_on[0]` in `process-yaml`); judged only when the test has one.
    /// (Boxed to keep `Answer` small: it is an `Err` type in reference modules.)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_path: Option<Box<String>>,
    /// Free text explaining the verdict (shown in reports, never judged).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

impl Answer {
    /// A `valid` answer with an output.
    pub fn valid(output: impl Into<Value>) -> Answer {
        Answer {
            id: String::new(),
            result: Verdict::Valid,
            output: Some(output.into()),
            error: None,
            error_path: None,
            detail: None,
        }
    }

    /// A `valid` answer for kinds whose expectation is the verdict alone.
    pub fn accepted() -> Answer {
        Answer {
            id: String::new(),
            result: Verdict::Valid,
            output: None,
            error: None,
            error_path: None,
            detail: None,
        }
    }

    /// An `invalid` answer with its error code and an explanation.
    pub fn invalid(code: impl Into<String>, detail: impl Into<String>) -> Answer {
        Answer {
            id: String::new(),
            result: Verdict::Invalid,
            output: None,
            error: Some(code.into()),
            error_path: None,
            detail: Some(detail.into()),
        }
    }

    /// An `invalid` answer that also says where the error is (`error_path`).
    pub fn invalid_at(
        code: impl Into<String>,
        path: impl Into<String>,
        detail: impl Into<String>,
    ) -> Answer {
        Answer {
            error_path: Some(Box::new(path.into())),
            ..Answer::invalid(code, detail)
        }
    }

    /// The answer for a kind the implementation does not know.
    pub fn unsupported(detail: impl Into<String>) -> Answer {
        Answer {
            id: String::new(),
            result: Verdict::Unsupported,
            output: None,
            error: None,
            error_path: None,
            detail: Some(detail.into()),
        }
    }

    /// The same answer, addressed to vector `id`.
    pub fn for_id(mut self, id: &str) -> Answer {
        self.id = id.to_owned();
        self
    }
}

/// The request for `test` of `group` in `file`.
pub fn request_for(file: &VectorFile, group: &Group, test: &Value) -> Request {
    let mut input = Map::new();
    for (k, v) in group
        .shared
        .iter()
        .chain(test.as_object().into_iter().flatten())
    {
        if !RESERVED_MEMBERS.contains(&k.as_str()) {
            input.insert(k.clone(), v.clone());
        }
    }
    Request {
        v: ADAPTER_PROTOCOL_VERSION,
        id: test["id"].as_str().unwrap_or_default().to_owned(),
        area: file.area.clone(),
        kind: group.kind.clone(),
        input,
    }
}

/// How one test came out.
#[derive(Debug, Clone, PartialEq)]
pub enum Judgement {
    /// The answer agrees with the expectation.
    Pass,
    /// The implementation declared the kind unsupported.
    Unsupported(String),
    /// The answer disagrees; the text says expected vs. actual.
    Fail(String),
}

/// Judges `answer` against `test`: the verdict must match; an invalid test also needs the
/// expected error code (and, when the test has `expected_error_path`, that error path); a
/// valid test with an `expected` member needs exactly that output.
pub fn judge(test: &Value, answer: &Answer) -> Judgement {
    let expected_result = test["result"].as_str().unwrap_or_default();
    let why = |s: String| match &answer.detail {
        Some(d) => Judgement::Fail(format!("{s} (implementation said: {d})")),
        None => Judgement::Fail(s),
    };
    match (expected_result, answer.result) {
        (_, Verdict::Unsupported) => {
            Judgement::Unsupported(answer.detail.clone().unwrap_or_default())
        }
        ("valid", Verdict::Valid) => match test.get("expected") {
            Some(exp) if answer.output.as_ref() != Some(exp) => why(format!(
                "expected output {}, got {}",
                exp,
                answer
                    .output
                    .as_ref()
                    .map_or("none".into(), Value::to_string)
            )),
            _ => Judgement::Pass,
        },
        ("invalid", Verdict::Invalid) => {
            let exp = test["expected_error"].as_str().unwrap_or_default();
            let exp_path = test.get("expected_error_path").and_then(Value::as_str);
            if answer.error.as_deref() != Some(exp) {
                why(format!(
                    "expected invalid with error {exp}, got invalid with error {}",
                    answer.error.as_deref().unwrap_or("(none)")
                ))
            } else if let Some(path) = exp_path
                && answer.error_path.as_deref().map(String::as_str) != Some(path)
            {
                why(format!(
                    "expected invalid with error {exp} at {path}, got it at {}",
                    answer
                        .error_path
                        .as_deref()
                        .map_or("(no path)", String::as_str)
                ))
            } else {
                Judgement::Pass
            }
        }
        ("valid", Verdict::Invalid) => why(format!(
            "expected valid, got invalid with error {}",
            answer.error.as_deref().unwrap_or("(none)")
        )),
        (_, Verdict::Valid) => why(format!(
            "expected invalid with error {}, got valid",
            test["expected_error"].as_str().unwrap_or_default()
        )),
        (other, _) => Judgement::Fail(format!("the test's result {other:?} is not valid/invalid")),
    }
}

#[cfg(test)]
mod error_path_tests {
    use super::*;

    /// `expected_error_path`, when a test has it, is judged against the answer's `error_path`.
    #[test]
    fn error_path_is_judged_only_when_the_test_pins_one() {
        let test = serde_json::json!({"result": "invalid", "expected_error": "r", "expected_error_path": "a[0]"});
        assert_eq!(
            judge(&test, &Answer::invalid_at("r", "a[0]", "")),
            Judgement::Pass
        );
        assert!(matches!(
            judge(&test, &Answer::invalid_at("r", "a[1]", "")),
            Judgement::Fail(_)
        ));
        assert!(matches!(
            judge(&test, &Answer::invalid("r", "")),
            Judgement::Fail(_)
        ));
        let no_path = serde_json::json!({"result": "invalid", "expected_error": "r"});
        assert_eq!(judge(&no_path, &Answer::invalid("r", "")), Judgement::Pass);
    }
}
