//! Strict value equality for the round-trip gate: numbers must keep their kind and bits.

use serde_json::{Number, Value};

/// The first place where `decoded` differs from `original`, as `path: what`, or `None`.
///
/// Stricter than `Value`'s `==`: `1` vs `1.0` and `0.0` vs `-0.0` differ (a reader would see
/// a different number). Object member order is ignored (JSON objects are unordered).
pub fn first_difference(original: &Value, decoded: &Value) -> Option<String> {
    diff_at("$", original, decoded)
}

/// If `a` and `b` are equal except for numbers written in another form but with the same
/// exact value (`1.0` → `1`, `-0.0` → `0`, `1e21` → `1000000000000000000000`), how many
/// numbers changed form; `None` when anything else differs (a number that changed value,
/// such as 18446744073709551615 → 1.8446744073709552e19, counts as different).
///
/// This is the round-trip criterion of formats whose specification writes numbers in one
/// canonical form (TOON §2): they keep every value of the JSON data model (RFC 8259 §6 does
/// not distinguish `1` from `1.0`), not the integer/float kind or the sign of zero.
pub fn normalized_numbers(a: &Value, b: &Value) -> Option<usize> {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            if number_key(x) == number_key(y) {
                Some(0)
            } else if same_exact_value(x, y) {
                Some(1)
            } else {
                None
            }
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => x
            .iter()
            .zip(y)
            .try_fold(0, |n, (p, q)| Some(n + normalized_numbers(p, q)?)),
        (Value::Object(x), Value::Object(y)) if x.len() == y.len() => x
            .iter()
            .try_fold(0, |n, (k, v)| Some(n + normalized_numbers(v, y.get(k)?)?)),
        _ => (a == b).then_some(0),
    }
}

/// Whether two JSON numbers have the same mathematical value (`-0.0` and `0` are both zero).
fn same_exact_value(x: &Number, y: &Number) -> bool {
    let int = |n: &Number| {
        n.as_u64()
            .map(i128::from)
            .or_else(|| n.as_i64().map(i128::from))
    };
    // An f64 equals an integer only if it is integral and converts to it exactly; every
    // integral f64 below 2^127 in magnitude converts to i128 without rounding.
    let float_is = |f: Option<f64>, i: i128| {
        f.is_some_and(|f| f.fract() == 0.0 && f.abs() < 2f64.powi(127) && f as i128 == i)
    };
    match (int(x), int(y)) {
        (Some(a), Some(b)) => a == b,
        (Some(a), None) => float_is(y.as_f64(), a),
        (None, Some(b)) => float_is(x.as_f64(), b),
        (None, None) => x.as_f64() == y.as_f64(),
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
    fn normalized_numbers_counts_changes_of_form_only() {
        assert_eq!(
            normalized_numbers(&json!({"a": [1, "x"]}), &json!({"a": [1, "x"]})),
            Some(0)
        );
        assert_eq!(
            normalized_numbers(&json!({"a": [1.0, -0.0, 2.5]}), &json!({"a": [1, 0, 2.5]})),
            Some(2)
        );
        assert_eq!(normalized_numbers(&json!(1e21), &json!(1e21)), Some(0));
        assert_eq!(normalized_numbers(&json!(-3.0), &json!(-3)), Some(1));
        // A changed value is not a change of form.
        assert_eq!(
            normalized_numbers(&json!({"a": [1.5]}), &json!({"a": [1]})),
            None
        );
        assert_eq!(
            normalized_numbers(
                &json!(18_446_744_073_709_551_615u64),
                &json!(1.8446744073709552e19)
            ),
            None
        );
        assert_eq!(
            normalized_numbers(
                &json!(9_007_199_254_740_993u64),
                &json!(9_007_199_254_740_992.0)
            ),
            None
        );
        // Anything but a number must be identical.
        assert_eq!(normalized_numbers(&json!("1"), &json!(1)), None);
        assert_eq!(normalized_numbers(&json!({"a": 1}), &json!({"b": 1})), None);
        assert_eq!(normalized_numbers(&json!([1.0]), &json!([1, 1])), None);
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
