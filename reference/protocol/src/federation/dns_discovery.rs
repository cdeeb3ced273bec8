//! DNS-based node discovery (v1.1 §15.1): the record names a node advertises under and the
//! reading of its `_loom` TXT record. The DNS wire protocol itself (RFC 1035, SRV per
//! RFC 2782) is IO and lives in the node (`loom_node::dns`); what a LOOM record *means* is
//! a spec rule and lives here, in one place.
//!
//! §15.1 example:
//! ```text
//! _loom._tcp.example.com. 3600 IN SRV 10 0 443 loom.example.com.
//! _loom.example.com. 3600 IN TXT "v=LOOM1.1; api=https://loom.example.com/v1; ws=wss://loom.example.com/ws; wellknown=https://example.com/.well-known/loom.json"
//! ```

use crate::error::{ErrorCode, ProtocolError};

/// The §15.1 TXT version tag this implementation reads (`v=LOOM1.1`). v1.0 §14.1 published
/// `v=LOOM1` with a `keys=` URL instead of `wellknown=`; such a record is not read.
pub const TXT_VERSION: &str = "LOOM1.1";

/// Longest TXT value read (several 255-byte character-strings concatenated); longer values
/// are refused rather than scanned.
pub const MAX_TXT_LEN: usize = 4096;

/// The SRV owner name of `domain` (v1.1 §15.1): `_loom._tcp.{domain}` (trailing dot of
/// `domain` dropped).
pub fn srv_name(domain: &str) -> String {
    format!("_loom._tcp.{}", domain.trim_end_matches('.'))
}

/// The TXT owner name of `domain` (v1.1 §15.1): `_loom.{domain}`.
pub fn txt_name(domain: &str) -> String {
    format!("_loom.{}", domain.trim_end_matches('.'))
}

/// A §15.1 `_loom` TXT record, read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoomTxt {
    /// `api=`: the node's REST base URL, if given.
    pub api: Option<String>,
    /// `ws=`: the node's WebSocket URL, if given.
    pub ws: Option<String>,
    /// `wellknown=`: where the §15.2 node document is served, if given.
    pub wellknown: Option<String>,
}

fn txt_error(field: &str, rule: impl Into<String>) -> ProtocolError {
    ProtocolError::new(
        ErrorCode::NodeUnreachable,
        format!("_loom TXT {field}"),
        rule,
        "v1.1 §15.1",
    )
}

/// Whether `url` is `scheme://` followed by a non-empty authority with no whitespace or
/// control characters.
fn is_url_with_scheme(url: &str, schemes: &[&str]) -> bool {
    schemes.iter().any(|s| {
        url.strip_prefix(s)
            .and_then(|r| r.strip_prefix("://"))
            .is_some_and(|rest| {
                !rest.is_empty()
                    && !rest.starts_with('/')
                    && rest.chars().all(|c| !c.is_whitespace() && !c.is_control())
            })
    })
}

/// Reads the value of a `_loom.{domain}` TXT record (v1.1 §15.1): `key=value` pairs
/// separated by `;`, blanks around keys and values ignored, keys case-insensitive.
///
/// - `v` is required, comes first and must be [`TXT_VERSION`] (a record for another
///   version is not this node's to interpret);
/// - `api` must be an `https://`/`http://` URL, `ws` a `wss://`/`ws://` URL, `wellknown` an
///   `https://`/`http://` URL (whether plain http may be used is the HTTP client's transport
///   rule, v1.1 §14.1, not this record's);
/// - a key given twice, a pair without `=`, or a value longer than [`MAX_TXT_LEN`] is an
///   error; unknown keys are ignored (later minor versions may add some); empty segments
///   (`a=b;;` or a trailing `;`) are ignored.
///
/// Errors are [`ErrorCode::NodeUnreachable`]: a peer whose discovery record is unusable
/// cannot be reached through it.
pub fn parse_loom_txt(value: &str) -> Result<LoomTxt, ProtocolError> {
    if value.len() > MAX_TXT_LEN {
        return Err(txt_error(
            "$",
            format!("a _loom TXT value is at most {MAX_TXT_LEN} bytes"),
        ));
    }
    let mut out = LoomTxt {
        api: None,
        ws: None,
        wellknown: None,
    };
    let mut version_seen = false;
    for (i, segment) in value
        .split(';')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .enumerate()
    {
        let Some((key, val)) = segment.split_once('=') else {
            return Err(txt_error(
                "$",
                format!("each part of a _loom TXT value is key=value; {segment:?} has no '='"),
            ));
        };
        let key = key.trim().to_ascii_lowercase();
        let val = val.trim();
        if i == 0 && key != "v" {
            return Err(txt_error("v", "a _loom TXT value starts with v=LOOM1.1"));
        }
        let slot = match key.as_str() {
            "v" => {
                if version_seen {
                    return Err(txt_error("v", "v is given more than once"));
                }
                if val != TXT_VERSION {
                    return Err(txt_error(
                        "v",
                        format!("unsupported version {val:?}: this node reads v={TXT_VERSION}"),
                    ));
                }
                version_seen = true;
                continue;
            }
            "api" => (&mut out.api, &["https", "http"][..]),
            "ws" => (&mut out.ws, &["wss", "ws"][..]),
            "wellknown" => (&mut out.wellknown, &["https", "http"][..]),
            _ => continue,
        };
        let (slot, schemes) = slot;
        if slot.is_some() {
            return Err(txt_error(&key, format!("{key} is given more than once")));
        }
        if !is_url_with_scheme(val, schemes) {
            return Err(txt_error(
                &key,
                format!(
                    "{key} must be a {} URL; got {val:?}",
                    schemes
                        .iter()
                        .map(|s| format!("{s}://"))
                        .collect::<Vec<_>>()
                        .join(" or ")
                ),
            ));
        }
        *slot = Some(val.to_owned());
    }
    if !version_seen {
        return Err(txt_error("v", "a _loom TXT value starts with v=LOOM1.1"));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn the_spec_example_reads() {
        let t = parse_loom_txt("v=LOOM1.1; api=https://loom.example.com/v1; ws=wss://loom.example.com/ws; wellknown=https://example.com/.well-known/loom.json").unwrap();
        assert_eq!(t.api.as_deref(), Some("https://loom.example.com/v1"));
        assert_eq!(t.ws.as_deref(), Some("wss://loom.example.com/ws"));
        assert_eq!(
            t.wellknown.as_deref(),
            Some("https://example.com/.well-known/loom.json")
        );
        assert_eq!(srv_name("example.com."), "_loom._tcp.example.com");
        assert_eq!(txt_name("example.com"), "_loom.example.com");
    }

    #[test]
    fn blanks_case_unknown_keys_and_empty_parts_are_tolerated() {
        let t = parse_loom_txt(
            " V = LOOM1.1 ;;WellKnown= http://127.0.0.1:8788/.well-known/loom.json ; future=x ;",
        )
        .unwrap();
        assert_eq!(
            t.wellknown.as_deref(),
            Some("http://127.0.0.1:8788/.well-known/loom.json")
        );
        assert_eq!((t.api, t.ws), (None, None));
        assert_eq!(
            parse_loom_txt("v=LOOM1.1").unwrap(),
            LoomTxt {
                api: None,
                ws: None,
                wellknown: None
            }
        );
    }

    #[test]
    fn bad_records_name_the_key_and_section() {
        for (value, field, needle) in [
            ("", "_loom TXT v", "starts with v=LOOM1.1"),
            ("api=https://a/v1; v=LOOM1.1", "_loom TXT v", "starts with"),
            (
                "v=LOOM1; keys=https://a/k",
                "_loom TXT v",
                "unsupported version",
            ),
            ("v=LOOM1.1; v=LOOM1.1", "_loom TXT v", "more than once"),
            ("v=LOOM1.1; wellknown", "_loom TXT $", "no '='"),
            (
                "v=LOOM1.1; wellknown=ftp://a/x",
                "_loom TXT wellknown",
                "https://",
            ),
            (
                "v=LOOM1.1; wellknown=https://",
                "_loom TXT wellknown",
                "URL",
            ),
            (
                "v=LOOM1.1; wellknown=https:///x",
                "_loom TXT wellknown",
                "URL",
            ),
            ("v=LOOM1.1; api=https://a b/v1", "_loom TXT api", "URL"),
            ("v=LOOM1.1; ws=https://a/ws", "_loom TXT ws", "wss://"),
            (
                "v=LOOM1.1; api=https://a/v1; API=https://b/v1",
                "_loom TXT api",
                "more than once",
            ),
        ] {
            let e = parse_loom_txt(value).unwrap_err();
            assert_eq!(e.field, field, "{value:?}: {e:?}");
            assert!(e.rule.contains(needle), "{value:?}: {e:?}");
            assert_eq!(
                (e.section, e.code),
                ("v1.1 §15.1", ErrorCode::NodeUnreachable)
            );
        }
        let long = format!("v=LOOM1.1; x={}", "a".repeat(MAX_TXT_LEN));
        assert!(parse_loom_txt(&long).unwrap_err().rule.contains("at most"));
    }

    proptest! {
        #[test]
        fn arbitrary_strings_never_panic(s in ".{0,300}") {
            if let Err(e) = parse_loom_txt(&s) {
                prop_assert!(!e.field.is_empty() && !e.rule.is_empty());
            }
        }

        #[test]
        fn built_records_read_back(host in "[a-z][a-z0-9-]{0,20}\\.test", port in 1u16..) {
            let wk = format!("https://{host}:{port}/.well-known/loom.json");
            let t = parse_loom_txt(&format!("v=LOOM1.1; api=https://{host}/v1; wellknown={wk}")).unwrap();
            prop_assert_eq!(t.wellknown.as_deref(), Some(wk.as_str()));
        }
    }
}
