//! The encoder: `Value` → strict text (SPEC.md rule 12). Output is deterministic: object
//! entries in the order of `serde_json::Map`, 2-space indentation, every line ending in `\n`.

use crate::error::EncodeError;
use crate::scalar;
use serde_json::{Map, Value};

/// Encodes `v` (see [`crate::encode`]).
pub(crate) fn encode(v: &Value) -> Result<String, EncodeError> {
    if depth(v) > crate::MAX_DEPTH {
        return Err(EncodeError::TooDeep {
            limit: crate::MAX_DEPTH,
        });
    }
    let mut out = String::new();
    match inline(v) {
        Some(t) => {
            out.push_str(&t);
            out.push('\n');
        }
        None => block(v, 0, &mut out),
    }
    Ok(out)
}

/// Container nesting depth (rule 11), computed without recursion so any value is safe.
fn depth(v: &Value) -> usize {
    let mut max = 0;
    let mut stack = vec![(v, 1usize)];
    while let Some((v, d)) = stack.pop() {
        match v {
            Value::Array(a) => {
                max = max.max(d);
                stack.extend(a.iter().map(|x| (x, d + 1)));
            }
            Value::Object(o) => {
                max = max.max(d);
                stack.extend(o.values().map(|x| (x, d + 1)));
            }
            _ => {}
        }
    }
    max
}

/// Rule 12.1: a scalar's text, quoted when rule 12.2 says so.
fn scalar(v: &Value) -> Option<String> {
    Some(match v {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => scalar::format_number(n),
        Value::String(s) if scalar::value_needs_quotes(s) => {
            let mut out = String::new();
            scalar::write_quoted(s, &mut out);
            out
        }
        Value::String(s) => s.clone(),
        Value::Array(_) | Value::Object(_) => return None,
    })
}

/// Rule 12.4: the one-line form of `v`, if it has one: a scalar, `{}`, `[]`, `[x]` for one
/// scalar, `x, y, …` for two or more scalars.
fn inline(v: &Value) -> Option<String> {
    match v {
        Value::Object(o) if o.is_empty() => Some("{}".into()),
        Value::Object(_) => None,
        Value::Array(a) => {
            let items: Option<Vec<String>> = a.iter().map(scalar).collect();
            let items = items?;
            Some(match items.len() {
                0 => "[]".into(),
                1 => format!("[{}]", items[0]),
                _ => items.join(", "),
            })
        }
        _ => scalar(v),
    }
}

/// Rule 12.3: a key, quoted when needed.
fn key(k: &str) -> String {
    if scalar::key_needs_quotes(k) {
        let mut out = String::new();
        scalar::write_quoted(k, &mut out);
        out
    } else {
        k.to_owned()
    }
}

/// A non-empty object or a list that has no inline form, at `indent`.
fn block(v: &Value, indent: usize, out: &mut String) {
    match v {
        Value::Object(o) => entries(o, indent, out),
        Value::Array(a) => items(a, indent, out),
        _ => {}
    }
}

fn entries(o: &Map<String, Value>, indent: usize, out: &mut String) {
    for (k, v) in o {
        out.push_str(&" ".repeat(indent));
        out.push_str(&key(k));
        match inline(v) {
            Some(t) => {
                out.push_str(": ");
                out.push_str(&t);
                out.push('\n');
            }
            None => {
                out.push_str(":\n");
                block(v, indent + 2, out);
            }
        }
    }
}

/// Rule 12.5: list items; an object item starts on the `- ` line (the seed's form).
fn items(a: &[Value], indent: usize, out: &mut String) {
    for v in a {
        let pad = " ".repeat(indent);
        if let Some(t) = inline(v) {
            out.push_str(&pad);
            out.push_str("- ");
            out.push_str(&t);
            out.push('\n');
        } else if let Value::Object(o) = v {
            let mut inner = String::new();
            entries(o, indent + 2, &mut inner);
            out.push_str(&pad);
            out.push_str("- ");
            out.push_str(&inner[indent + 2..]);
        } else {
            out.push_str(&pad);
            out.push_str("-\n");
            block(v, indent + 2, out);
        }
    }
}
