//! The assertion part of a case's context: every check turns a disagreement into a
//! [`Finding::Fail`] with what the spec requires, what the target did (its status, §24.1 code,
//! message and details; the JSON path of the first difference) and the deciding exchange.
//!
//! Success statuses are not fixed by the spec (v1.1 §16 lists routes, not statuses), so a
//! success is any 2xx; error codes are asserted exactly only where §24.2 names the code for the
//! condition, otherwise any of the fitting codes passes ([`Exchanges::expect_refused_with`]).

use super::Exchanges;
use crate::finding::{Ex, Finding, Verdict};
use crate::show::{difference_texts, error_summary, preview};
use loom_protocol::ErrorCode;
use serde_json::Value;

impl Exchanges {
    fn failing(&self, ex: Ex, expected: String) -> Finding {
        let t = self.transcript(ex);
        Finding::Fail {
            expected,
            actual: format!("HTTP {}{}", t.status, error_summary(t)),
            decisive: Some(ex),
        }
    }

    /// The status of `ex` must be `want`.
    pub fn expect_status(&self, ex: Ex, want: u16) -> Verdict {
        if self.status(ex) == want {
            return Ok(());
        }
        Err(self.failing(ex, format!("HTTP {want}")))
    }

    /// `ex` must be a success (2xx): what the request was for happened.
    pub fn expect_ok(&self, ex: Ex) -> Verdict {
        if self.transcript(ex).is_success() {
            return Ok(());
        }
        Err(self.failing(ex, "a success (2xx)".into()))
    }

    /// `ex` created something: any 2xx (201 is usual; v1.1 names no status for creation).
    pub fn expect_created(&self, ex: Ex) -> Verdict {
        if self.transcript(ex).is_success() {
            return Ok(());
        }
        Err(self.failing(ex, "accepted: a success (201, or another 2xx)".into()))
    }

    /// The JSON body of a successful `ex` (2xx), or a failure.
    pub fn ok_body(&self, ex: Ex) -> Result<Value, Finding> {
        self.expect_ok(ex)?;
        Ok(self.json(ex))
    }

    /// The JSON body of a successful creation `ex` (2xx), or a failure.
    pub fn created_body(&self, ex: Ex) -> Result<Value, Finding> {
        self.expect_created(ex)?;
        Ok(self.json(ex))
    }

    /// `ex` must be a §24.1 error with exactly `code`, sent with the status §24.2 gives it.
    /// For conditions §24.2 names a code for.
    pub fn expect_code(&self, ex: Ex, code: &str) -> Verdict {
        self.expect_refused_with(ex, &[code], "")
    }

    /// `ex` must be a §24.1 error with one of `codes` (each with its §24.2 status): for
    /// conditions several registry entries describe. `why` says why they all fit.
    pub fn expect_refused_with(&self, ex: Ex, codes: &[&str], why: &str) -> Verdict {
        let status = self.status(ex);
        let got = self.error_code(ex);
        let fits = got.as_deref().is_some_and(|g| {
            codes.contains(&g) && ErrorCode::parse(g).is_some_and(|c| c.http_status() == status)
        });
        if fits {
            return self.expect_error_shape(ex);
        }
        let wanted: Vec<String> = codes
            .iter()
            .map(|c| {
                let s = ErrorCode::parse(c).map_or(400, |c| c.http_status());
                format!("{s} {c}")
            })
            .collect();
        let mut expected = format!("HTTP {} (v1.1 §24.2)", wanted.join(" or "));
        if !why.is_empty() {
            expected.push_str(": ");
            expected.push_str(why);
        }
        Err(self.failing(ex, expected))
    }

    /// `ex` must be a refusal: a 4xx with a §24.1 body (for rules whose error code the spec
    /// does not name; any code from the registry passes).
    pub fn expect_refused(&self, ex: Ex) -> Verdict {
        let st = self.status(ex);
        if !(400..500).contains(&st) {
            return Err(self.failing(ex, "a refusal: 4xx with a §24.1 error body".into()));
        }
        self.expect_error_shape(ex)
    }

    /// `ex` must carry a §24.1 body: `error.code` from the registry, `message`, `details`,
    /// `request_id` and `timestamp` (the members of the §24.1 format).
    pub fn expect_error_shape(&self, ex: Ex) -> Verdict {
        let body = self.json(ex);
        let e = &body["error"];
        let mut missing = Vec::new();
        if e["code"].as_str().and_then(ErrorCode::parse).is_none() {
            missing.push("error.code from the §24.2 registry");
        }
        for m in ["message", "request_id", "timestamp"] {
            if !e[m].is_string() {
                missing.push(m);
            }
        }
        if e.get("details").is_none() {
            missing.push("details");
        }
        if missing.is_empty() {
            return Ok(());
        }
        Err(Finding::Fail {
            expected: "a §24.1 error body {error: {code, message, details, request_id, timestamp}}"
                .into(),
            actual: format!(
                "HTTP {} missing {}: {}",
                self.status(ex),
                missing.join(", "),
                preview(&self.transcript(ex).response_body)
            ),
            decisive: Some(ex),
        })
    }

    /// `what` must equal `want`; a difference names the JSON path where it starts.
    pub fn expect_eq(&self, what: &str, want: &Value, got: &Value) -> Verdict {
        if want == got {
            return Ok(());
        }
        let (expected, actual) = difference_texts(what, want, got);
        Err(Finding::Fail {
            expected,
            actual,
            decisive: self.last(),
        })
    }

    /// `cond` must hold; otherwise fail with expected/actual texts (deciding exchange: the
    /// last one).
    pub fn expect_that(
        &self,
        cond: bool,
        expected: impl Into<String>,
        actual: impl Into<String>,
    ) -> Verdict {
        if cond {
            return Ok(());
        }
        Err(Finding::Fail {
            expected: expected.into(),
            actual: actual.into(),
            decisive: self.last(),
        })
    }

    /// Like [`Exchanges::expect_that`], naming the deciding exchange.
    pub fn expect_at(
        &self,
        ex: Ex,
        cond: bool,
        expected: impl Into<String>,
        actual: impl Into<String>,
    ) -> Verdict {
        if cond {
            return Ok(());
        }
        Err(Finding::Fail {
            expected: expected.into(),
            actual: actual.into(),
            decisive: Some(ex),
        })
    }
}
