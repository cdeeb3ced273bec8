//! The vector-file writer: fixed member order (header, then each test as `id, comment, flags,
//! spec, inputs…, result, expected|expected_error`), one member per line with compact values,
//! so files diff well and regenerate byte for byte.

use crate::Note;
use serde_json::{Map, Value};
use std::collections::BTreeSet;

/// One test, with members in the order they are written.
#[derive(Debug, Clone, PartialEq)]
pub struct Case {
    members: Vec<(String, Value)>,
    flags: Vec<String>,
    outcome: Option<(String, Value)>,
    /// Members written after the outcome (`expected_error_path`).
    trailing: Vec<(String, Value)>,
}

impl Case {
    /// A test with its stable ID, what it checks, and the sections it checks.
    pub fn new(id: impl Into<String>, comment: impl Into<String>, spec: &[&str]) -> Case {
        Case {
            members: vec![
                ("id".into(), Value::from(id.into())),
                ("comment".into(), Value::from(comment.into())),
                ("flags".into(), Value::Array(vec![])),
                (
                    "spec".into(),
                    Value::from(spec.iter().map(|s| Value::from(*s)).collect::<Vec<_>>()),
                ),
            ],
            flags: vec![],
            outcome: None,
            trailing: vec![],
        }
    }

    /// Adds flags (each must be defined in the file's notes).
    pub fn flags(mut self, flags: &[&str]) -> Case {
        self.flags.extend(flags.iter().map(|f| (*f).to_owned()));
        self
    }

    /// Adds an input member.
    pub fn input(mut self, name: &str, value: impl Into<Value>) -> Case {
        assert!(
            !crate::protocol::RESERVED_MEMBERS.contains(&name),
            "{name} is reserved"
        );
        self.members.push((name.to_owned(), value.into()));
        self
    }

    /// Expect acceptance, with no output to compare.
    pub fn valid(mut self) -> Case {
        self.members.push(("result".into(), "valid".into()));
        self.outcome = Some((String::new(), Value::Null));
        self
    }

    /// Expect acceptance producing exactly `expected`.
    pub fn valid_with(mut self, expected: impl Into<Value>) -> Case {
        self.members.push(("result".into(), "valid".into()));
        self.outcome = Some(("expected".into(), expected.into()));
        self
    }

    /// Expect rejection with the error `code`.
    pub fn invalid(mut self, code: &str) -> Case {
        self.members.push(("result".into(), "invalid".into()));
        self.outcome = Some(("expected_error".into(), code.into()));
        self
    }

    /// Expect rejection with the error `code` at `path` (written as `expected_error_path`; for
    /// areas whose errors point into the input, see `schema::AREAS_WITH_ERROR_PATHS`).
    pub fn invalid_at(mut self, code: &str, path: &str) -> Case {
        self = self.invalid(code);
        self.trailing
            .push(("expected_error_path".into(), path.into()));
        self
    }

    /// The test's ID.
    pub fn id(&self) -> &str {
        self.members[0].1.as_str().unwrap_or_default()
    }

    fn finish(mut self) -> Vec<(String, Value)> {
        let (name, value) = self
            .outcome
            .take()
            .unwrap_or_else(|| panic!("{}: no expectation", self.id()));
        self.members[2].1 = Value::from(self.flags.clone());
        if !name.is_empty() {
            self.members.push((name, value));
        }
        self.members.append(&mut self.trailing);
        self.members
    }
}

/// A group under construction.
#[derive(Debug, Clone, PartialEq)]
struct GroupBuilder {
    kind: String,
    shared: Map<String, Value>,
    tests: Vec<Case>,
}

/// A vector file under construction.
#[derive(Debug, Clone, PartialEq)]
pub struct FileBuilder {
    area: String,
    description: String,
    notes: Vec<(String, Note)>,
    groups: Vec<GroupBuilder>,
}

impl FileBuilder {
    /// A file for `area`.
    pub fn new(area: &str, description: &str) -> FileBuilder {
        FileBuilder {
            area: area.into(),
            description: description.into(),
            notes: vec![],
            groups: vec![],
        }
    }

    /// Defines a flag.
    pub fn note(mut self, flag: &str, description: &str, bug_class: &str, effect: &str) -> Self {
        self.notes.push((
            flag.into(),
            Note {
                description: description.into(),
                bug_class: bug_class.into(),
                effect: effect.into(),
            },
        ));
        self
    }

    /// Starts a group of `kind` with shared inputs (an object, or `Value::Null` for none).
    pub fn group(mut self, kind: &str, shared: Value) -> Self {
        let shared = match shared {
            Value::Object(m) => m,
            _ => Map::new(),
        };
        self.groups.push(GroupBuilder {
            kind: kind.into(),
            shared,
            tests: vec![],
        });
        self
    }

    /// Adds a test to the current group.
    pub fn test(mut self, case: Case) -> Self {
        self.groups
            .last_mut()
            .expect("group() before test()")
            .tests
            .push(case);
        self
    }

    /// Adds tests to the current group.
    pub fn tests(mut self, cases: impl IntoIterator<Item = Case>) -> Self {
        for c in cases {
            self = self.test(c);
        }
        self
    }

    /// The number of tests so far.
    pub fn len(&self) -> usize {
        self.groups.iter().map(|g| g.tests.len()).sum()
    }

    /// True when there are no tests.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The area name.
    pub fn area(&self) -> &str {
        &self.area
    }

    /// The file text. Panics on a duplicate ID or an undefined flag: both are generator bugs.
    pub fn render(self) -> String {
        let mut ids = BTreeSet::new();
        let defined: BTreeSet<&str> = self.notes.iter().map(|(f, _)| f.as_str()).collect();
        let mut out = String::from("{\n");
        let line = |out: &mut String, indent: usize, k: &str, v: &Value, last: bool| {
            out.push_str(&" ".repeat(indent));
            out.push_str(&Value::from(k).to_string());
            out.push_str(": ");
            out.push_str(&v.to_string());
            out.push_str(if last { "\n" } else { ",\n" });
        };
        let schema = format!("loom-vectors/v1/{}.schema.json", self.area);
        line(&mut out, 2, "schema", &schema.into(), false);
        line(&mut out, 2, "version", &"1.0.0".into(), false);
        line(&mut out, 2, "area", &self.area.clone().into(), false);
        line(
            &mut out,
            2,
            "description",
            &self.description.clone().into(),
            false,
        );
        line(&mut out, 2, "number_of_tests", &self.len().into(), false);
        out.push_str("  \"notes\": {\n");
        for (i, (flag, note)) in self.notes.iter().enumerate() {
            let v = serde_json::json!({"description": note.description, "bug_class": note.bug_class, "effect": note.effect});
            line(&mut out, 4, flag, &v, i + 1 == self.notes.len());
        }
        out.push_str("  },\n  \"groups\": [\n");
        let n_groups = self.groups.len();
        for (gi, g) in self.groups.into_iter().enumerate() {
            out.push_str("    {\n");
            line(&mut out, 6, "kind", &g.kind.clone().into(), false);
            for (k, v) in &g.shared {
                line(&mut out, 6, k, v, false);
            }
            out.push_str("      \"tests\": [\n");
            let n_tests = g.tests.len();
            for (ti, case) in g.tests.into_iter().enumerate() {
                assert!(
                    ids.insert(case.id().to_owned()),
                    "duplicate id {}",
                    case.id()
                );
                for f in &case.flags {
                    assert!(
                        defined.contains(f.as_str()),
                        "{}: flag {f} undefined",
                        case.id()
                    );
                }
                let members = case.finish();
                out.push_str("        {\n");
                for (mi, (k, v)) in members.iter().enumerate() {
                    line(&mut out, 10, k, v, mi + 1 == members.len());
                }
                out.push_str(if ti + 1 == n_tests {
                    "        }\n"
                } else {
                    "        },\n"
                });
            }
            out.push_str("      ]\n");
            out.push_str(if gi + 1 == n_groups {
                "    }\n"
            } else {
                "    },\n"
            });
        }
        out.push_str("  ]\n}\n");
        out
    }
}
