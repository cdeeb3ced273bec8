//! # loom-vectors
//!
//! The shared test-vector files of `vectors/v1/` (format: DESIGN.md §6, Wycheproof-style) and
//! the code that loads them and checks `loom-protocol` against them.
//!
//! A file is `{schema, version, area, description, number_of_tests, notes, groups}`; each group
//! holds shared inputs and `tests`, and each test has a stable string `id`, a `comment`, the
//! `flags` that classify it (defined in `notes`), the `spec` sections it checks, its inputs,
//! its expectation and `result: "valid" | "invalid"`. Expectations are written from the spec.

pub mod generate;
pub mod protocol;
pub mod reference;
pub mod verify;

use protocol::{Answer, Judgement, Request};
use serde::Deserialize;
use serde_json::{Map, Value};
use std::collections::BTreeSet;
use std::fmt;
use std::path::{Path, PathBuf};

/// Where the vector files live, for tools run from the repository.
pub fn vectors_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("v1")
}

/// What one flag means (DESIGN.md §6 `notes`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Note {
    /// What the flagged tests check.
    pub description: String,
    /// The class of bug they catch.
    pub bug_class: String,
    /// What goes wrong for users if an implementation has that bug.
    pub effect: String,
}

/// A group of tests sharing inputs.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Group {
    /// Which operation the tests exercise (`canonicalize`, …).
    pub kind: String,
    /// The tests.
    pub tests: Vec<Value>,
    /// Shared inputs.
    #[serde(flatten)]
    pub shared: Map<String, Value>,
}

/// One vector file.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VectorFile {
    /// Schema identifier.
    pub schema: String,
    /// File version (semver).
    pub version: String,
    /// Area name, equal to the file stem.
    pub area: String,
    /// What the file covers.
    pub description: String,
    /// Total number of tests in all groups.
    pub number_of_tests: usize,
    /// Flag vocabulary.
    pub notes: std::collections::BTreeMap<String, Note>,
    /// Test groups.
    pub groups: Vec<Group>,
}

/// A structural problem with a vector file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FormatError(pub String);

impl fmt::Display for FormatError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for FormatError {}

impl VectorFile {
    /// Loads and checks a file: the header matches its stem, the count is right, IDs are
    /// unique, every test has the common members and only uses flags the file defines.
    pub fn load(path: &Path) -> Result<VectorFile, FormatError> {
        let err = |m: String| FormatError(format!("{}: {m}", path.display()));
        let text = std::fs::read_to_string(path).map_err(|e| err(e.to_string()))?;
        let file: VectorFile = serde_json::from_str(&text).map_err(|e| err(e.to_string()))?;
        let stem = path
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or_default();
        if file.area != stem {
            return Err(err(format!(
                "area {:?} differs from the file name",
                file.area
            )));
        }
        let count: usize = file.groups.iter().map(|g| g.tests.len()).sum();
        if count != file.number_of_tests {
            return Err(err(format!(
                "number_of_tests is {} but the groups hold {count}",
                file.number_of_tests
            )));
        }
        let mut ids = BTreeSet::new();
        for t in file.tests() {
            let id = t
                .get("id")
                .and_then(Value::as_str)
                .ok_or_else(|| err("a test has no string id".into()))?;
            if !ids.insert(id) {
                return Err(err(format!("duplicate test id {id}")));
            }
            for member in ["comment", "flags", "spec", "result"] {
                if t.get(member).is_none() {
                    return Err(err(format!("{id}: missing {member}")));
                }
            }
            let result = t["result"].as_str();
            if !matches!(result, Some("valid" | "invalid")) {
                return Err(err(format!("{id}: result must be valid or invalid")));
            }
            if result == Some("invalid") && t.get("expected_error").is_none() {
                return Err(err(format!(
                    "{id}: invalid tests name their expected_error"
                )));
            }
            let flags = t["flags"]
                .as_array()
                .ok_or_else(|| err(format!("{id}: flags must be an array")))?;
            for f in flags {
                let f = f.as_str().unwrap_or_default();
                if !file.notes.contains_key(f) {
                    return Err(err(format!("{id}: flag {f:?} is not defined in notes")));
                }
            }
            if result == Some("invalid") && flags.is_empty() {
                return Err(err(format!("{id}: invalid tests carry at least one flag")));
            }
            // A refusal names the rule it rests on: a spec section (or, where the spec is
            // silent, the `Interpretation` flag beside the section it reads).
            let names_rule = t["spec"].as_array().is_some_and(|s| {
                s.iter()
                    .any(|x| x.as_str().is_some_and(|x| !x.trim().is_empty()))
            });
            if result == Some("invalid") && !names_rule {
                return Err(err(format!(
                    "{id}: invalid tests name the spec rule they rest on (a non-empty spec list)"
                )));
            }
        }
        Ok(file)
    }

    /// Every test of every group, in file order.
    pub fn tests(&self) -> impl Iterator<Item = &Value> {
        self.groups.iter().flat_map(|g| g.tests.iter())
    }
}

/// The minimum number of vectors each area must hold (the vectors issue's floor).
pub const AREA_MINIMUMS: &[(&str, usize)] = &[
    ("canonical-json", 60),
    ("jcs-numbers", 100),
    ("ids", 40),
    ("addresses", 60),
    ("envelope-signature", 40),
    ("envelope-validation", 150),
    ("delegation-chain", 60),
    ("scope-matching", 60),
    ("capability-token", 50),
    ("thread-dag", 40),
    ("thread-state", 44),
    ("task-state", 81),
    ("http-signature", 30),
    ("notation-decode", 60),
    ("notation-encode", 50),
    ("notation-errors", 40),
    ("plsp-parse", 60),
    ("plsp-serialize", 20),
    ("plsp-state", 25),
    ("plsp-engine", 50),
    ("process-yaml", 100),
    ("identity-document", 60),
    ("federation", 100),
    ("email-auth", 120),
    ("mime-mapping", 80),
    ("e2ee", 150),
];

/// Every vector file in `dir`, sorted by name, loaded and checked.
pub fn load_all(dir: &Path) -> Result<Vec<VectorFile>, FormatError> {
    let entries =
        std::fs::read_dir(dir).map_err(|e| FormatError(format!("{}: {e}", dir.display())))?;
    let mut paths: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    paths.sort();
    paths.iter().map(|p| VectorFile::load(p)).collect()
}

/// One test's outcome.
#[derive(Debug, Clone, PartialEq)]
pub struct TestOutcome {
    /// The vector ID.
    pub id: String,
    /// How it came out.
    pub judgement: Judgement,
}

impl VectorFile {
    /// Every test with the request an adapter receives for it.
    pub fn requests(&self) -> impl Iterator<Item = (&Value, Request)> {
        self.groups.iter().flat_map(move |g| {
            g.tests
                .iter()
                .map(move |t| (t, protocol::request_for(self, g, t)))
        })
    }

    /// Runs every test through `answer` and judges the answers.
    pub fn check(&self, mut answer: impl FnMut(&Request) -> Answer) -> Vec<TestOutcome> {
        self.requests()
            .map(|(t, req)| {
                let a = answer(&req);
                let judgement = if a.id != req.id {
                    Judgement::Fail(format!("answer is for {:?}, not {:?}", a.id, req.id))
                } else {
                    protocol::judge(t, &a)
                };
                TestOutcome {
                    id: req.id,
                    judgement,
                }
            })
            .collect()
    }
}
