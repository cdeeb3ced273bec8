//! LOOM-HTTP-SIG-1 (v1.1 §15.3–§15.5): header reading, the signing strings, verification and
//! the nonce cache, driven by a request written as text.
//!
//! Input format (lenient, so any bytes are an input): the first line is `METHOD path`, the
//! following lines up to an empty line are `Name: value` headers, the rest is the raw body.

use super::{assert_explained, now};
use crate::http_sig::{
    HEADER_KEY_ID, HEADER_NODE, HEADER_NONCE, HEADER_SIGNATURE, HEADER_TIMESTAMP,
    HEADER_TRUST_EPOCH, MemoryNonceCache, RequestParts, SignedHeaders, SigningForm,
    sign_request_with_epoch, signing_string, verify_request_detailed,
};
use crate::keys::signing_key_from_seed;

const HEADERS: [&str; 6] = [
    HEADER_NODE,
    HEADER_TIMESTAMP,
    HEADER_NONCE,
    HEADER_KEY_ID,
    HEADER_SIGNATURE,
    HEADER_TRUST_EPOCH,
];

struct Request<'a> {
    method: &'a str,
    path: &'a str,
    headers: Vec<(&'a str, &'a str)>,
    body: &'a [u8],
}

fn split_request(data: &[u8]) -> Request<'_> {
    let text_end = data
        .windows(2)
        .position(|w| w == b"\n\n")
        .unwrap_or(data.len());
    let head = std::str::from_utf8(&data[..text_end]).unwrap_or("");
    let body = data.get(text_end + 2..).unwrap_or(&[]);
    let mut lines = head.split('\n');
    let first = lines.next().unwrap_or("");
    let (method, path) = first.split_once(' ').unwrap_or((first, "/"));
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim(), v.trim()))
        .collect();
    Request {
        method,
        path,
        headers,
        body,
    }
}

/// Headers read from any pairs survive a write/read cycle; verification of the request as
/// given never panics and every refusal names one of the LOOM-HTTP-SIG-1 headers and a
/// section; signing the same method, path, body (and the given nonce and trust epoch) and
/// verifying succeeds with the form the epoch selects, once: the replay is refused; a
/// different body is refused.
pub fn http_sig(data: &[u8]) {
    let r = split_request(data);
    let headers = SignedHeaders::from_pairs(r.headers.iter().copied());
    let reread = SignedHeaders::from_pairs(headers.all_pairs());
    assert_eq!(reread, headers, "from_pairs∘all_pairs is the identity");

    let req = RequestParts {
        method: r.method,
        path: r.path,
        body: r.body,
    };
    let key = signing_key_from_seed(&[7; 32]);
    let mut cache = MemoryNonceCache::default();
    if let Err(e) = verify_request_detailed(&req, &headers, &key.verifying_key(), &mut cache, now())
    {
        assert_explained(&e);
        assert!(HEADERS.contains(&e.field.as_str()), "{e:?} names no header");
    }

    // sign∘verify with the request's own parts.
    let nonce_bytes = headers.nonce.as_bytes();
    let nonce_bytes = if nonce_bytes.is_empty() {
        b"fuzz-nonce".as_slice()
    } else {
        &nonce_bytes[..nonce_bytes.len().min(96)]
    };
    let epoch = headers.trust_epoch.as_deref();
    let signed = sign_request_with_epoch(
        &req,
        "Node.Fuzz.Test.",
        "k_node_sign_fuzz",
        &key,
        now(),
        nonce_bytes,
        epoch,
    );
    let text = signing_string(&req, &signed.timestamp, &signed.nonce, epoch);
    assert!(text.starts_with(&req.method.to_ascii_uppercase()));
    let mut cache = MemoryNonceCache::default();
    let verified = verify_request_detailed(&req, &signed, &key.verifying_key(), &mut cache, now());
    let epoch_is_valid = |e: &str| e.len() <= 20 && e.bytes().all(|b| b.is_ascii_digit());
    match (epoch, verified) {
        (Some(e), Err(err)) if !epoch_is_valid(e) => {
            assert_eq!(err.field, HEADER_TRUST_EPOCH, "{err:?}");
        }
        (_, Err(err)) => panic!("sign∘verify failed: {err:?}"),
        (e, Ok(v)) => {
            // Signing with an epoch (even an empty one) writes the six-line v2 string.
            let expected = if e.is_some() {
                SigningForm::V2
            } else {
                SigningForm::V1
            };
            assert_eq!(v.form, expected);
            assert_eq!(v.node, "node.fuzz.test");
            let replay =
                verify_request_detailed(&req, &signed, &key.verifying_key(), &mut cache, now())
                    .expect_err("a replayed nonce is refused");
            assert_eq!(replay.field, HEADER_NONCE);
            let mut other_body = r.body.to_vec();
            other_body.push(b'x');
            let changed = RequestParts {
                body: &other_body,
                ..req
            };
            let mut fresh = MemoryNonceCache::default();
            let e =
                verify_request_detailed(&changed, &signed, &key.verifying_key(), &mut fresh, now())
                    .expect_err("the body is signed");
            assert_eq!(e.field, HEADER_SIGNATURE);
        }
    }
}
