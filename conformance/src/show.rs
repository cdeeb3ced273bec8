//! How the harness shows what a target sent (issue 13, item 5): short previews of bodies,
//! compact JSON that never dumps a long array, the JSON path of the first difference between
//! two values, and a one-line summary of a §24.1 error with its code, message and details.

use loom_client::Transcript;
use serde_json::Value;
use std::fmt::Write;

/// Longest preview of a body.
const PREVIEW_CHARS: usize = 200;
/// Array elements shown before the rest is counted.
const ARRAY_ITEMS: usize = 3;
/// Longest string value shown in full.
const STRING_CHARS: usize = 80;
/// Longest compact rendering.
const COMPACT_CHARS: usize = 400;

/// The first [`PREVIEW_CHARS`] characters of a body (lossy UTF-8).
pub fn preview(body: &[u8]) -> String {
    let s = String::from_utf8_lossy(body);
    clip(&s, PREVIEW_CHARS)
}

fn clip(s: &str, n: usize) -> String {
    let mut p: String = s.chars().take(n).collect();
    if s.chars().count() > n {
        p.push('…');
    }
    p
}

/// `v` as one line of JSON in which arrays show their first [`ARRAY_ITEMS`] elements and a
/// count of the rest, long strings are clipped, and the whole is at most [`COMPACT_CHARS`].
pub fn compact(v: &Value) -> String {
    let mut out = String::new();
    write_compact(v, &mut out);
    clip(&out, COMPACT_CHARS)
}

fn write_compact(v: &Value, out: &mut String) {
    match v {
        Value::Array(a) => {
            out.push('[');
            for (i, x) in a.iter().take(ARRAY_ITEMS).enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_compact(x, out);
            }
            if a.len() > ARRAY_ITEMS {
                let _ = write!(out, ",… {} more", a.len() - ARRAY_ITEMS);
            }
            out.push(']');
        }
        Value::Object(m) => {
            out.push('{');
            for (i, (k, x)) in m.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                let _ = write!(out, "{}:", Value::from(k.as_str()));
                write_compact(x, out);
            }
            out.push('}');
        }
        Value::String(s) => {
            let _ = write!(out, "{}", Value::from(clip(s, STRING_CHARS)));
        }
        other => {
            let _ = write!(out, "{other}");
        }
    }
}

/// A value at a JSON path, or its absence.
pub type Member = Option<Value>;

/// The first place where `got` differs from `want`, as (`JSON path`, wanted member, member
/// found; `None` when absent). Object members are compared in name order, arrays by index.
pub fn first_difference(want: &Value, got: &Value) -> Option<(String, Member, Member)> {
    diff_at("$", want, got)
}

fn diff_at(path: &str, want: &Value, got: &Value) -> Option<(String, Member, Member)> {
    match (want, got) {
        (Value::Object(a), Value::Object(b)) => {
            let mut names: Vec<&String> = a.keys().chain(b.keys()).collect();
            names.sort();
            names.dedup();
            for k in names {
                let sub = format!("{path}.{k}");
                match (a.get(k), b.get(k)) {
                    (Some(x), Some(y)) => {
                        if let Some(d) = diff_at(&sub, x, y) {
                            return Some(d);
                        }
                    }
                    (Some(x), None) => return Some((sub, Some(x.clone()), None)),
                    (None, Some(y)) => return Some((sub, None, Some(y.clone()))),
                    (None, None) => {}
                }
            }
            None
        }
        (Value::Array(a), Value::Array(b)) => {
            for i in 0..a.len().max(b.len()) {
                let sub = format!("{path}[{i}]");
                match (a.get(i), b.get(i)) {
                    (Some(x), Some(y)) => {
                        if let Some(d) = diff_at(&sub, x, y) {
                            return Some(d);
                        }
                    }
                    (x, y) => return Some((sub, x.cloned(), y.cloned())),
                }
            }
            None
        }
        (a, b) if a == b => None,
        (a, b) => Some((path.to_owned(), Some(a.clone()), Some(b.clone()))),
    }
}

/// `want` and `got` as an expected/actual pair that names the first differing path:
/// (`"$.content.human.text = \"a\""`, `"$.content.human.text = \"b\""`).
pub fn difference_texts(what: &str, want: &Value, got: &Value) -> (String, String) {
    let shown = |v: &Member| v.as_ref().map_or_else(|| "absent".to_owned(), compact);
    match first_difference(want, got) {
        Some((path, w, g)) if path == "$" => (
            format!("{what} = {}", shown(&w)),
            format!("{what} = {}", shown(&g)),
        ),
        Some((path, w, g)) => {
            let member = path.trim_start_matches('$');
            (
                format!("{what}{member} = {}", shown(&w)),
                format!("{what}{member} = {} (first difference)", shown(&g)),
            )
        }
        None => (
            format!("{what} = {}", compact(want)),
            format!("{what} = {}", compact(got)),
        ),
    }
}

/// ` with CODE: message; details {…}` for a §24.1 error body, ` with an empty body`, or a
/// preview of whatever else the response held.
pub fn error_summary(t: &Transcript) -> String {
    match t.json() {
        Some(v) if v.pointer("/error/code").is_some() => {
            let e = &v["error"];
            let mut s = format!(
                " with {}: {}",
                e["code"].as_str().unwrap_or("?"),
                e["message"].as_str().unwrap_or("(no message)")
            );
            if let Some(d) = e.get("details").filter(|d| !d.is_null()) {
                let _ = write!(s, "; details {}", compact(d));
            }
            s
        }
        _ if t.response_body.is_empty() => " with an empty body".into(),
        _ => format!(": {}", preview(&t.response_body)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn long_arrays_are_counted_not_dumped() {
        let v = json!({"events": vec![Value::Null; 300]});
        let s = compact(&v);
        assert_eq!(s, r#"{"events":[null,null,null,… 297 more]}"#);
    }

    #[test]
    fn the_first_difference_names_its_path() {
        let a = json!({"content": {"human": {"text": "a"}}, "to": [{"role": "primary"}]});
        let mut b = a.clone();
        b["to"][0]["role"] = "cc".into();
        let (p, w, g) = first_difference(&a, &b).unwrap();
        assert_eq!(p, "$.to[0].role");
        assert_eq!((w, g), (Some(json!("primary")), Some(json!("cc"))));
        let mut c = a.clone();
        c["content"]["human"]
            .as_object_mut()
            .unwrap()
            .remove("text");
        let (e, x) = difference_texts("stored", &a, &c);
        assert!(e.contains("stored.content.human.text = \"a\""), "{e}");
        assert!(x.contains("text = absent"), "{x}");
        // A dropped null is told apart from a null.
        let (e, x) = difference_texts("s", &json!({"x": null}), &json!({}));
        assert_eq!(
            (e.as_str(), x.as_str()),
            ("s.x = null", "s.x = absent (first difference)")
        );
        assert!(first_difference(&a, &a).is_none());
    }
}
