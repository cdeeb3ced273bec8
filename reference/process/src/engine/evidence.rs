//! loop-engine "Evidence Pack (per iteration)": what one iteration (one attempt of one phase)
//! did — its tool calls, a reference to what it changed, its errors and a summary.
//!
//! `diff` is a reference, as in the schema (`"patch-id"`): here `diff-<12 hex>`, the first
//! 12 hex digits of SHA-256 over the sorted `path\0sha256(content)\n` lines of the files the
//! iteration wrote, or absent when it wrote nothing. The same changes give the same id.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// One iteration's evidence.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EvidencePack {
    /// Attempt number (1-based).
    pub iteration: u32,
    /// The plan step (phase id).
    pub step_id: String,
    /// Tool call (action) ids, in order.
    pub tool_calls: Vec<String>,
    /// Reference to the changes (see the module note).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diff: Option<String>,
    /// Errors: refused or failed tool calls, failed gates and rules.
    pub errors: Vec<String>,
    /// What changed.
    pub summary: String,
}

/// The `diff` reference for files `(path, content)` written in an iteration.
pub fn diff_id(files: &[(String, Vec<u8>)]) -> Option<String> {
    if files.is_empty() {
        return None;
    }
    let mut lines: Vec<String> = files
        .iter()
        .map(|(p, c)| format!("{p}\0{}\n", hex::encode(Sha256::digest(c))))
        .collect();
    lines.sort();
    let digest = Sha256::digest(lines.concat().as_bytes());
    Some(format!("diff-{}", &hex::encode(digest)[..12]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn diff_id_is_order_independent_and_content_sensitive() {
        let a = ("a.md".to_owned(), b"x".to_vec());
        let b = ("b.md".to_owned(), b"y".to_vec());
        assert_eq!(
            diff_id(&[a.clone(), b.clone()]),
            diff_id(&[b.clone(), a.clone()])
        );
        assert_ne!(
            diff_id(std::slice::from_ref(&a)),
            diff_id(&[("a.md".to_owned(), b"z".to_vec())])
        );
        assert_eq!(diff_id(&[]), None);
        assert!(diff_id(&[a]).unwrap().starts_with("diff-"));
    }

    #[test]
    fn serializes_with_schema_keys() {
        let p = EvidencePack {
            iteration: 5,
            step_id: "step-2".into(),
            tool_calls: vec!["tool-1".into()],
            diff: Some("diff-abc".into()),
            errors: vec![],
            summary: "s".into(),
        };
        let v = serde_json::to_value(&p).unwrap();
        let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            [
                "diff",
                "errors",
                "iteration",
                "stepId",
                "summary",
                "toolCalls"
            ]
        );
    }
}
