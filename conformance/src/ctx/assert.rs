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
        self.refused_with(ex, None, codes, why)?;
        self.credit(ex, None);
        Ok(())
    }

    /// A 404 or 405 that means "no such route" (issue 29): the feature is `unsupported`, never a
    /// refusal that passes. It is a real answer when its code names a missing resource (§24.2
    /// `*_NOT_FOUND`) or when `control`, the same method on the same path, was accepted.
    /// A 5xx answer to a probe is neither an acceptance nor a refusal of the property under
    /// test: the target failed before it could be judged, so the case is an `error` naming the
    /// exchange, never a `fail` of a rule that is not about server errors (issue 29).
    fn no_server_error(&self, probe: Ex) -> Verdict {
        let t = self.transcript(probe);
        if t.status < 500 {
            return Ok(());
        }
        Err(Finding::Error(format!(
            "the target answered the probe (exchange {probe}, {} {}) with a server error, HTTP {}{}: \
             the property under test was not judged; a node should refuse bad input with a §24.1 \
             4xx error",
            t.method,
            path_only(&t.path),
            t.status,
            error_summary(t)
        )))
    }

    fn no_route(&self, probe: Ex, control: Option<Ex>) -> Verdict {
        let status = self.status(probe);
        if !matches!(status, 404 | 405) {
            return Ok(());
        }
        let names_resource = self.error_code(probe).is_some_and(|c| {
            matches!(
                c.as_str(),
                "IDENTITY_NOT_FOUND" | "THREAD_NOT_FOUND" | "ENVELOPE_NOT_FOUND"
            )
        });
        let route_exists = control.is_some_and(|c| {
            let (p, c) = (self.transcript(probe), self.transcript(c));
            p.method == c.method && same_route(path_only(&p.path), path_only(&c.path))
        });
        if names_resource || route_exists {
            return Ok(());
        }
        let t = self.transcript(probe);
        Err(Finding::Unsupported(format!(
            "{} {} answered HTTP {status}{}: no such route, so the feature is not offered (a \
             missing route is never counted as a refusal)",
            t.method,
            path_only(&t.path),
            error_summary(t)
        )))
    }

    /// The probe `ex` must not have been accepted: a node that lacks the check fails here,
    /// before a control request is spent (`expected` says what the spec requires).
    pub fn expect_not_accepted(&self, ex: Ex, expected: &str) -> Verdict {
        if self.transcript(ex).is_success() {
            return Err(self.failing(ex, expected.to_owned()));
        }
        Ok(())
    }

    /// `control`, the request that differs from a probe only in the property under test, must
    /// be accepted (2xx); otherwise the case cannot tell why the probe was refused and is a
    /// harness `error` naming the control exchange, never a pass (issue 29).
    pub fn expect_control(&self, control: Ex, what: &str) -> Verdict {
        let t = self.transcript(control);
        if t.is_success() {
            return Ok(());
        }
        Err(Finding::Error(format!(
            "the target refused the control request ({what}; exchange {control}, {} {}): HTTP {}{}. \
             The control differs from the probe only in the property under test, so a refusal of \
             the probe cannot be credited",
            t.method,
            path_only(&t.path),
            t.status,
            error_summary(t)
        )))
    }

    /// The probe `ex` must be refused beside the accepted `control` (see
    /// [`Exchanges::expect_control`]): a §24.1 error with one of `codes` (exact, for a
    /// condition §24.2 names a code for), or any 4xx §24.1 error when `codes` is empty.
    pub fn expect_refused_beside(
        &self,
        ex: Ex,
        control: Ex,
        what: &str,
        codes: &[&str],
        why: &str,
    ) -> Verdict {
        self.expect_control(control, what)?;
        self.no_server_error(ex)?;
        if codes.is_empty() {
            self.no_route(ex, Some(control))?;
            let st = self.status(ex);
            if !(400..500).contains(&st) {
                return Err(self.failing(ex, "a refusal: 4xx with a §24.1 error body".into()));
            }
            self.expect_error_shape(ex)?;
        } else {
            self.refused_with(ex, Some(control), codes, why)?;
        }
        self.credit(ex, Some(control));
        Ok(())
    }

    fn refused_with(&self, ex: Ex, control: Option<Ex>, codes: &[&str], why: &str) -> Verdict {
        let status = self.status(ex);
        let got = self.error_code(ex);
        let fits = got.as_deref().is_some_and(|g| {
            codes.contains(&g) && ErrorCode::parse(g).is_some_and(|c| c.http_status() == status)
        });
        if fits {
            return self.expect_error_shape(ex);
        }
        self.no_route(ex, control)?;
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
        self.no_server_error(ex)?;
        self.no_route(ex, None)?;
        let st = self.status(ex);
        if !(400..500).contains(&st) {
            return Err(self.failing(ex, "a refusal: 4xx with a §24.1 error body".into()));
        }
        self.expect_error_shape(ex)?;
        self.credit(ex, None);
        Ok(())
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

/// `path` without its query string.
fn path_only(path: &str) -> &str {
    path.split('?').next().unwrap_or(path)
}

/// Whether two paths name the same route: equal, or differing only in their last segment (the
/// resource id of `GET /v1/envelopes/{id}`).
fn same_route(a: &str, b: &str) -> bool {
    let parent = |p: &str| p.rsplit_once('/').map(|(head, _)| head.to_owned());
    a == b || (a.matches('/').count() == b.matches('/').count() && parent(a) == parent(b))
}
