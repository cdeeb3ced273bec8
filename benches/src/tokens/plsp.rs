//! PLSP state blocks as a format (issue 6, PLSP v0.5 §4): only *flat state maps* — a JSON
//! object whose keys are PLSP identifiers (`[a-zA-Z][a-zA-Z0-9]*`) and whose values are
//! strings without `"` or numbers — have a PLSP form. Anything else is refused with the
//! first member that does not fit, so it is reported, never counted.

use loom_plsp::{Block, Ident, Literal, Number, Stmt, Value as PValue};
use serde_json::{Map, Value};

/// `S{$k:v;…}S` in the canonical minimal serialization, or why `value` is not a flat map.
pub fn encode(value: &Value) -> Result<String, String> {
    let Value::Object(map) = value else {
        return Err("not a flat state map: the value is not an object".into());
    };
    let mut stmts = Vec::with_capacity(map.len());
    for (k, v) in map {
        let id = Ident::new(k)
            .ok_or_else(|| format!("not a flat state map: key {k:?} is not a PLSP identifier"))?;
        let lit = match v {
            Value::String(s) => Literal::string(s).ok_or_else(|| {
                format!("not a flat state map: $.{k} contains '\"', which PLSP strings cannot hold")
            })?,
            Value::Number(n) => Literal::Num(Number::parse(&n.to_string()).ok_or_else(|| {
                format!("not a flat state map: $.{k} = {n} is not a PLSP number")
            })?),
            other => return Err(format!("not a flat state map: $.{k} is {}", kind(other))),
        };
        stmts.push(Stmt::Assign(id, PValue::Lit(lit)));
    }
    Ok(Block { stmts }.to_string())
}

/// The flat map a block's assignments stand for.
pub fn decode(text: &str) -> Result<Value, String> {
    let block = loom_plsp::parse(text).map_err(|e| e.to_string())?;
    let mut map = Map::new();
    for s in &block.stmts {
        match s {
            Stmt::Assign(id, PValue::Lit(l)) => {
                map.insert(id.as_str().to_owned(), l.to_json());
            }
            other => {
                return Err(format!(
                    "{other} is not a literal assignment of a flat state map"
                ));
            }
        }
    }
    Ok(Value::Object(map))
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
        Value::String(_) => "a string",
        Value::Number(_) => "a number",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn flat_maps_round_trip_and_others_are_refused_with_the_reason() {
        let v = json!({"t": 21.5, "s": "ok", "n": 3});
        let text = encode(&v).unwrap();
        assert_eq!(decode(&text).unwrap(), v);
        assert!(
            encode(&json!({"a": [1]}))
                .unwrap_err()
                .contains("$.a is an array")
        );
        assert!(
            encode(&json!({"a-b": 1}))
                .unwrap_err()
                .contains("not a PLSP identifier")
        );
        assert!(
            encode(&json!({"a": "say \"hi\""}))
                .unwrap_err()
                .contains("cannot hold")
        );
        assert!(encode(&json!([1])).is_err());
    }
}
