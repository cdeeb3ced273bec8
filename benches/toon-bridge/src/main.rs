//! `loom-toon-bridge`: TOON encode/decode for `loom-tokens`, over JSON lines.
//!
//! One request per line on stdin, one response per line on stdout, in order:
//!
//! - `{"op":"version"}` → `{"ok":{"bridge":"0.1.0","toon_format":"0.7.0","toon_spec":"4.4"}}`
//! - `{"op":"encode","delimiter":"comma"|"tab"|"pipe","value":V}` → `{"ok":"<TOON text>"}`
//! - `{"op":"decode","text":"<TOON text>"}` → `{"ok":V}` (strict decoding, TOON spec §14)
//!
//! Any failure is `{"error":"..."}` on that line; the bridge keeps serving. It exits at the
//! end of stdin. Object members keep the order they arrive in (serde_json `preserve_order`,
//! which toon-format turns on), so TOON text lists keys in the order `loom-tokens` sent them.

use std::io::{self, BufRead, Write};

use serde_json::{Value, json};
use toon_format::{DecodeOptions, Delimiter, EncodeOptions};

/// The toon-format release this bridge is pinned to (`Cargo.toml`).
const TOON_FORMAT: &str = "0.7.0";
/// The TOON specification version toon-format 0.7.0 implements (its README).
const TOON_SPEC: &str = "4.4";

fn delimiter(name: Option<&str>) -> Result<Delimiter, String> {
    match name.unwrap_or("comma") {
        "comma" => Ok(Delimiter::Comma),
        "tab" => Ok(Delimiter::Tab),
        "pipe" => Ok(Delimiter::Pipe),
        other => Err(format!(
            "unknown delimiter {other:?} (expected comma, tab or pipe)"
        )),
    }
}

fn handle(line: &str) -> Result<Value, String> {
    let req: Value = serde_json::from_str(line).map_err(|e| format!("request is not JSON: {e}"))?;
    match req.get("op").and_then(Value::as_str) {
        Some("version") => Ok(json!({
            "bridge": env!("CARGO_PKG_VERSION"),
            "toon_format": TOON_FORMAT,
            "toon_spec": TOON_SPEC,
        })),
        Some("encode") => {
            let value = req.get("value").ok_or("encode request has no \"value\"")?;
            let opts = EncodeOptions::new()
                .with_delimiter(delimiter(req.get("delimiter").and_then(Value::as_str))?);
            toon_format::encode(value, &opts)
                .map(Value::String)
                .map_err(|e| e.to_string())
        }
        Some("decode") => {
            let text = req
                .get("text")
                .and_then(Value::as_str)
                .ok_or("decode request has no string \"text\"")?;
            toon_format::decode::<Value>(text, &DecodeOptions::new().with_strict(true))
                .map_err(|e| e.to_string())
        }
        Some(other) => Err(format!(
            "unknown op {other:?} (expected version, encode or decode)"
        )),
        None => Err("request has no string \"op\"".to_string()),
    }
}

fn main() -> io::Result<()> {
    let stdin = io::stdin();
    let mut out = io::BufWriter::new(io::stdout().lock());
    for line in stdin.lock().lines() {
        let line = line?;
        let response = match handle(&line) {
            Ok(v) => json!({ "ok": v }),
            Err(e) => json!({ "error": e }),
        };
        serde_json::to_writer(&mut out, &response)?;
        out.write_all(b"\n")?;
        out.flush()?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_the_readme_example_and_decodes_it_back() {
        let req =
            r#"{"op":"encode","value":{"users":[{"id":1,"name":"Alice"},{"id":2,"name":"Bob"}]}}"#;
        let text = handle(req).unwrap();
        assert_eq!(text, json!("users[2]{id,name}:\n  1,Alice\n  2,Bob"));
        let back = handle(&json!({"op": "decode", "text": text}).to_string()).unwrap();
        assert_eq!(
            back,
            json!({"users":[{"id":1,"name":"Alice"},{"id":2,"name":"Bob"}]})
        );
    }

    #[test]
    fn tab_delimiter_is_declared_in_the_header() {
        let req = r#"{"op":"encode","delimiter":"tab","value":{"t":[{"a":1,"b":"x y"}]}}"#;
        assert_eq!(handle(req).unwrap(), json!("t[1\t]{a\tb}:\n  1\tx y"));
    }

    #[test]
    fn keys_keep_the_order_they_arrive_in() {
        let req = r#"{"op":"encode","value":{"b":1,"a":2}}"#;
        assert_eq!(handle(req).unwrap(), json!("b: 1\na: 2"));
    }

    #[test]
    fn bad_requests_are_errors_naming_the_problem() {
        assert!(handle("nope").unwrap_err().contains("not JSON"));
        assert!(handle(r#"{"op":"x"}"#).unwrap_err().contains("unknown op"));
        assert!(
            handle(r#"{"op":"encode","delimiter":";","value":1}"#)
                .unwrap_err()
                .contains("unknown delimiter")
        );
        // Strict decoding (TOON spec §14): a declared length must match.
        assert!(
            handle(r#"{"op":"decode","text":"a[2]: 1"}"#)
                .unwrap_err()
                .contains("Expected 2")
        );
    }
}
