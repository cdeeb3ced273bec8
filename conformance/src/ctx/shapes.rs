//! Readers for response shapes the spec leaves open (issue 13, class 4): v1.1 §16 lists
//! routes, not bodies, so the harness accepts the shapes implementations use — a bare JSON
//! array or a named list, a stored envelope bare or under `envelope`, search results under
//! any member, event payloads under `payload` or `data`. Each reader says what it accepts.

use serde_json::Value;

/// Names a list may go by besides the route's own name.
const LIST_NAMES: &[&str] = &["items", "results", "data"];

/// The list a listing answered: the body itself when it is an array, else the first of
/// `names` (then `items`, `results`, `data`) that is an array, else the body's only array
/// member. `None` when there is no list.
pub fn list(body: &Value, names: &[&str]) -> Option<Vec<Value>> {
    if let Some(a) = body.as_array() {
        return Some(a.clone());
    }
    let o = body.as_object()?;
    for n in names.iter().chain(LIST_NAMES) {
        if let Some(a) = o.get(*n).and_then(Value::as_array) {
            return Some(a.clone());
        }
    }
    let arrays: Vec<&Vec<Value>> = o.values().filter_map(Value::as_array).collect();
    match arrays.as_slice() {
        [only] => Some((*only).clone()),
        _ => None,
    }
}

/// The envelope a `POST /v1/envelopes` or `GET /v1/envelopes/{id}` answered: the body, or
/// its `envelope` member when the body wraps it.
pub fn envelope(body: &Value) -> Value {
    match body.get("envelope") {
        Some(e) if e.is_object() && body.get("id").is_none() => e.clone(),
        _ => body.clone(),
    }
}

/// Whether `body` holds, anywhere, an object whose `id` is `id` (a search result of any
/// shape: `envelopes[]`, `threads[]`, `results[]`, nested hits).
pub fn has_object_with_id(body: &Value, id: &str) -> bool {
    match body {
        Value::Object(o) => {
            o.get("id").and_then(Value::as_str) == Some(id)
                || o.values().any(|v| has_object_with_id(v, id))
        }
        Value::Array(a) => a.iter().any(|v| has_object_with_id(v, id)),
        _ => false,
    }
}

/// Whether the text `needle` occurs anywhere in `body` (as a string value or inside one).
pub fn mentions(body: &Value, needle: &str) -> bool {
    match body {
        Value::String(s) => s.contains(needle),
        Value::Object(o) => o
            .iter()
            .any(|(k, v)| k.contains(needle) || mentions(v, needle)),
        Value::Array(a) => a.iter().any(|v| mentions(v, needle)),
        _ => false,
    }
}

/// The id a create answered (`blob_id`, `delegation_id`, … as `preferred`, else `id`).
pub fn created_id(body: &Value, preferred: &str) -> Option<String> {
    body.get(preferred)
        .or_else(|| body.get("id"))
        .or_else(|| body.get("envelope").and_then(|e| e.get("id")))
        .and_then(Value::as_str)
        .map(str::to_owned)
}

/// The id of an event (`id`, or `event_id` as §17.2 names it for real-time events).
pub fn event_id(e: &Value) -> Option<&str> {
    e["id"].as_str().or_else(|| e["event_id"].as_str())
}

/// The payload of an event (`payload`, or `data`).
pub fn event_payload(e: &Value) -> &Value {
    match e.get("payload") {
        Some(p) if !p.is_null() => p,
        _ => e.get("data").unwrap_or(&Value::Null),
    }
}

/// The envelope an event is about (`envelope_id` on the event or in its payload).
pub fn event_envelope(e: &Value) -> Option<&str> {
    e["envelope_id"]
        .as_str()
        .or_else(|| event_payload(e)["envelope_id"].as_str())
}

/// The thread an event is about (`thread_id` on the event or in its payload).
pub fn event_thread(e: &Value) -> Option<&str> {
    e["thread_id"]
        .as_str()
        .or_else(|| event_payload(e)["thread_id"].as_str())
}

/// The challenge id of a challenge response (`challenge_id`, or `challenge`).
pub fn challenge_id(body: &Value) -> String {
    body["challenge_id"]
        .as_str()
        .or(body["challenge"].as_str())
        .unwrap_or_default()
        .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn lists_in_any_of_the_usual_shapes() {
        let a = json!([{"id": 1}]);
        assert_eq!(list(&a, &["envelopes"]).map(|l| l.len()), Some(1));
        assert_eq!(
            list(&json!({"envelopes": [1, 2]}), &["envelopes"]).map(|l| l.len()),
            Some(2)
        );
        assert_eq!(
            list(&json!({"items": [1], "next_cursor": null}), &["envelopes"]).map(|l| l.len()),
            Some(1)
        );
        assert_eq!(
            list(&json!({"hits": [1, 2, 3], "total": 3}), &["envelopes"]).map(|l| l.len()),
            Some(3)
        );
        assert!(list(&json!({"a": [1], "b": [2]}), &["envelopes"]).is_none());
        assert!(has_object_with_id(
            &json!({"results": [{"kind": "thread", "id": "thr_1"}]}),
            "thr_1"
        ));
        assert!(!has_object_with_id(
            &json!({"envelopes": [{"id": "env_1", "thread_id": "thr_1"}]}),
            "thr_1"
        ));
        assert_eq!(envelope(&json!({"envelope": {"id": "e"}}))["id"], "e");
    }
}
