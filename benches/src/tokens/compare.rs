//! Strict value equality for the round-trip gate: numbers must keep their kind and bits.

use serde_json::{Number, Value};

/// The first place where `decoded` differs from `original`, as `path: what`, or `None`.
///
/// Stricter than `Value`'s `==`: `1` vs `1.0` and `0.0` vs `-0.0` differ (a reader would see
/// a different number). Object member order is ignored (JSON objects are unordered).
pub fn first_difference(original: &Value, decoded: &Value) -> Option<String> {
    diff_at("$", original, decoded)
}

/// Equality where numbers compare by value only (`1` = `1.0`, `0.0` = `-0.0`), as JavaScript
/// and many JSON readers see them.
pub fn equal_as_number_values(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| equal_as_number_values(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| equal_as_number_values(v, w)))
        }
        _ => a == b,
    }
}

fn number_key(n: &Number) -> (u8, u64) {
    if let Some(u) = n.as_u64() {
        (0, u)
    } else if let Some(i) = n.as_i64() {
        (1, i as u64)
    } else {
        (2, n.as_f64().map_or(0, f64::to_bits))
    }
}

fn short(v: &Value) -> String {
    let s = serde_json::to_string(v).unwrap_or_default();
    if s.chars().count() > 60 {
        let cut: String = s.chars().take(57).collect();
        format!("{cut}...")
    } else {
        s
    }
}

fn diff_at(path: &str, a: &Value, b: &Value) -> Option<String> {
    let mismatch = || Some(format!("{path}: expected {}, got {}", short(a), short(b)));
    match (a, b) {
        (Value::Null, Value::Null) => None,
        (Value::Bool(x), Value::Bool(y)) if x == y => None,
        (Value::String(x), Value::String(y)) if x == y => None,
        (Value::Number(x), Value::Number(y)) if number_key(x) == number_key(y) => None,
        (Value::Array(x), Value::Array(y)) => {
            for (i, (ea, eb)) in x.iter().zip(y).enumerate() {
                if let Some(d) = diff_at(&format!("{path}[{i}]"), ea, eb) {
                    return Some(d);
                }
            }
            if x.len() != y.len() {
                return Some(format!(
                    "{path}: expected {} elements, got {}",
                    x.len(),
                    y.len()
                ));
            }
            None
        }
        (Value::Object(x), Value::Object(y)) => {
            for (k, va) in x {
                let sub = format!("{path}.{}", serde_json::to_string(k).unwrap_or_default());
                match y.get(k) {
                    Some(vb) => {
                        if let Some(d) = diff_at(&sub, va, vb) {
                            return Some(d);
                        }
                    }
                    None => return Some(format!("{sub}: missing")),
                }
            }
            y.keys().find(|k| !x.contains_key(*k)).map(|k| {
                format!(
                    "{path}.{}: unexpected member",
                    serde_json::to_string(k).unwrap_or_default()
                )
            })
        }
        _ => mismatch(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn equal_values_have_no_difference() {
        let v = json!({"a": [1, -2, 2.5, "x", null, true, {}], "b": {"c": []}});
        assert_eq!(first_difference(&v, &v.clone()), None);
    }

    #[test]
    fn number_kind_and_sign_matter() {
        assert!(first_difference(&json!(1), &json!(1.0)).is_some());
        assert!(first_difference(&json!(-0.0), &json!(0.0)).is_some());
        assert!(first_difference(&json!(-1), &json!(-1.0)).is_some());
    }

    #[test]
    fn number_value_equality_is_looser() {
        assert!(equal_as_number_values(
            &json!({"a": [1.0, -0.0]}),
            &json!({"a": [1, 0]})
        ));
        assert!(!equal_as_number_values(
            &json!({"a": [1.5]}),
            &json!({"a": [1]})
        ));
        assert!(!equal_as_number_values(&json!("1"), &json!(1)));
    }

    #[test]
    fn path_names_the_first_difference() {
        let a = json!({"a": {"b": [1, 2, 3]}});
        let b = json!({"a": {"b": [1, "2", 3]}});
        assert_eq!(
            first_difference(&a, &b).unwrap(),
            "$.\"a\".\"b\"[1]: expected 2, got \"2\""
        );
        let c = json!({"a": {"b": [1, 2]}});
        assert!(
            first_difference(&a, &c)
                .unwrap()
                .starts_with("$.\"a\".\"b\": expected 3 elements")
        );
        assert_eq!(
            first_difference(&json!({"x": 1}), &json!({})).unwrap(),
            "$.\"x\": missing"
        );
    }
}
