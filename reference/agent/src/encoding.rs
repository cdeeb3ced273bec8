//! Loom notation as an optional content encoding of an agent's results, and what each form
//! costs in LLM tokens.
//!
//! The extension registry names no content encoding, so this is an interpretation (crate
//! README "Loom notation"), shaped by its rules: an extension id `loom-ext-notation-v1`
//! (registry "Identifier Rules" 2), declared where it is used, never changing how a node
//! authorizes anything ("Negotiation and Safety" 2). With `content_encoding = "json"` (the
//! default) a `completed` / `failed` update carries its result as JSON in
//! `content.structured.parameters.result`; with `"loom-notation"` the result is the update's
//! `content.human.text` in Loom notation (`format: "plaintext"`) and
//! `parameters.result_encoding` is `loom-ext-notation-v1`. Everything a node checks (intent,
//! `task_id`, `state`) stays JSON.
//!
//! Token counts use the `loom-tokens` benchmark's method: tiktoken-rs `encode_ordinary` with
//! `o200k_base` and `cl100k_base`, every text counted without a final newline.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The extension id of the notation encoding (this kit's interpretation).
pub const NOTATION_EXTENSION: &str = "loom-ext-notation-v1";

/// How results are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Encoding {
    /// `parameters.result` as JSON.
    #[default]
    Json,
    /// `content.human.text` in Loom notation.
    LoomNotation,
}

/// The text of `v` in each form, as counted: compact JSON, and Loom notation (both without
/// a final newline).
pub fn texts(v: &Value) -> (String, Option<String>) {
    let json = serde_json::to_string(v).unwrap_or_default();
    let notation = loom_notation::encode(v)
        .ok()
        .map(|t| t.trim_end_matches('\n').to_owned());
    (json, notation)
}

/// Tokens of one text: `[o200k_base, cl100k_base]`.
pub fn tokens(text: &str) -> [usize; 2] {
    [
        tiktoken_rs::o200k_base_singleton()
            .encode_ordinary(text)
            .len(),
        tiktoken_rs::cl100k_base_singleton()
            .encode_ordinary(text)
            .len(),
    ]
}

/// What a set of messages cost in each form.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Cost {
    /// Messages counted.
    pub messages: usize,
    /// JSON tokens, `[o200k_base, cl100k_base]`.
    pub json: [usize; 2],
    /// Loom notation tokens, `[o200k_base, cl100k_base]`.
    pub notation: [usize; 2],
    /// Messages the notation cannot carry (too deep): counted as JSON in both columns.
    pub json_only: usize,
}

impl Cost {
    /// Adds the structured part of one message (its `parameters`).
    pub fn add(&mut self, v: &Value) {
        let (json, notation) = texts(v);
        let j = tokens(&json);
        let n = match notation {
            Some(n) => tokens(&n),
            None => {
                self.json_only += 1;
                j
            }
        };
        self.messages += 1;
        for i in 0..2 {
            self.json[i] += j[i];
            self.notation[i] += n[i];
        }
    }

    /// Adds another cost.
    pub fn merge(&mut self, o: &Cost) {
        self.messages += o.messages;
        self.json_only += o.json_only;
        for i in 0..2 {
            self.json[i] += o.json[i];
            self.notation[i] += o.notation[i];
        }
    }

    /// Loom notation against JSON, in percent (negative: notation is cheaper), per tokenizer.
    pub fn change(&self) -> [f64; 2] {
        [0, 1].map(|i| {
            if self.json[i] == 0 {
                0.0
            } else {
                100.0 * (self.notation[i] as f64 - self.json[i] as f64) / self.json[i] as f64
            }
        })
    }

    /// One line: `N message(s): JSON a/b tokens, Loom notation c/d (o200k_base/cl100k_base):
    /// +x%/+y% against JSON`.
    pub fn line(&self) -> String {
        let [a, b] = self.change();
        format!(
            "{} message(s): JSON {}/{} tokens, Loom notation {}/{} (o200k_base/cl100k_base): {a:+.1}%/{b:+.1}% against JSON",
            self.messages, self.json[0], self.json[1], self.notation[0], self.notation[1],
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn notation_round_trips_and_is_counted_without_a_final_newline() {
        let v = json!({"package": "market-sizing", "status": "completed",
                       "deliverables": ["top-down.md", "bottom-up.md"]});
        let (j, n) = texts(&v);
        let n = n.unwrap();
        assert!(!n.ends_with('\n') && !j.ends_with('\n'));
        assert_eq!(loom_notation::decode(&n).unwrap(), v);
        let mut c = Cost::default();
        c.add(&v);
        assert_eq!(c.messages, 1);
        assert_eq!(c.json, tokens(&j));
        assert!(c.notation[0] < c.json[0], "{c:?}");
        assert!(c.line().contains("1 message(s)"));
    }
}
