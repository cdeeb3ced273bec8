//! How a refusal is judged (issue 29): credited only beside an accepted control; a refused
//! control, a missing route and a server error are never a pass, and the last two never a
//! fail of the rule under test either.

use loom_client::{Client, Transcript};
use loom_conformance::Finding;
use loom_conformance::ctx::Exchanges;
use std::time::Duration;

fn answer(method: &str, path: &str, status: u16, body: &str) -> Transcript {
    Transcript {
        method: method.into(),
        path: path.into(),
        version: "HTTP/1.1".into(),
        request_headers: Vec::new(),
        request_body: Vec::new(),
        status,
        response_headers: vec![("content-type".into(), "application/json".into())],
        response_body: body.as_bytes().to_vec(),
        elapsed: Duration::ZERO,
    }
}

const ERROR_BODY: &str = r#"{"error":{"code":"ENVELOPE_INVALID","message":"m","details":{},"request_id":"r","timestamp":"2026-01-01T00:00:00Z"}}"#;

fn exchanges() -> Exchanges {
    Exchanges::new(Client::tcp("http://127.0.0.1:9").expect("client"))
}

/// Judges a probe answered `(status, body)` beside a control answered `control_status`.
fn judge(
    status: u16,
    body: &str,
    control_status: u16,
    codes: &[&str],
) -> (Result<(), Finding>, usize) {
    let mut x = exchanges();
    let p = x.record(answer("POST", "/v1/envelopes", status, body));
    let c = x.record(answer("POST", "/v1/envelopes", control_status, "{}"));
    let got = x.expect_refused_beside(p, c, "the control", codes, "");
    (got, x.take_refusals().len())
}

#[test]
fn a_refusal_beside_an_accepted_control_is_credited() {
    assert_eq!(judge(400, ERROR_BODY, 201, &[]), (Ok(()), 1));
    assert_eq!(
        judge(400, ERROR_BODY, 201, &["ENVELOPE_INVALID"]),
        (Ok(()), 1)
    );
}

#[test]
fn a_code_the_sentence_does_not_allow_fails() {
    let (got, credited) = judge(400, ERROR_BODY, 201, &["SIGNATURE_INVALID"]);
    assert!(matches!(got, Err(Finding::Fail { .. })), "{got:?}");
    assert_eq!(credited, 0);
}

#[test]
fn a_refused_control_is_an_error() {
    let (got, credited) = judge(400, ERROR_BODY, 400, &[]);
    assert!(
        matches!(&got, Err(Finding::Error(m)) if m.contains("refused the control")),
        "{got:?}"
    );
    assert_eq!(credited, 0);
}

#[test]
fn a_server_error_is_an_error_not_a_fail() {
    let (got, credited) = judge(500, "{}", 201, &[]);
    assert!(
        matches!(&got, Err(Finding::Error(m)) if m.contains("server error")),
        "{got:?}"
    );
    assert_eq!(credited, 0);
}

#[test]
fn a_missing_route_is_unsupported() {
    let mut x = exchanges();
    let p = x.record(answer("GET", "/v1/blobs/blob_x", 404, "{}"));
    let c = x.record(answer("POST", "/v1/envelopes", 201, "{}"));
    let got = x.expect_refused_beside(p, c, "the control", &[], "");
    assert!(matches!(got, Err(Finding::Unsupported(_))), "{got:?}");
    assert!(x.take_refusals().is_empty());
}
