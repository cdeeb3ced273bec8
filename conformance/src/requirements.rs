//! The requirements inventory (`requirements/level1.toml` and `requirements/level2.toml`,
//! embedded at build time) and the traceability matrix: every requirement with the cases that cover it, uncovered
//! testable requirements listed explicitly, and not-testable ones with their reason.

use crate::case::{Case, Strength};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// The embedded Level 1 requirements file.
pub const LEVEL1_TOML: &str = include_str!("../requirements/level1.toml");

/// The embedded Level 2 (federation, v1.1 §28.1) requirements file.
pub const LEVEL2_TOML: &str = include_str!("../requirements/level2.toml");

/// The embedded Level 3 (email bridge, v1.1 §28.1) requirements file.
pub const LEVEL3_TOML: &str = include_str!("../requirements/level3.toml");

/// The embedded Level 4 (E2EE, WebSocket, workflows, presence; v1.1 §28.1) requirements file.
pub const LEVEL4_TOML: &str = include_str!("../requirements/level4.toml");

/// One requirement of the inventory.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Requirement {
    /// Stable ID (`R-7.3-01`).
    pub id: String,
    /// `v1.1 §7.3`.
    pub section: String,
    /// The corresponding v1.0 section, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub v10: Option<String>,
    /// `MUST`, `SHOULD` or `MAY`.
    pub strength: String,
    /// The requirement in one line.
    pub text: String,
    /// The spec sentence that makes it mandatory, verbatim (fragments of one passage joined
    /// by ` … `), from v1.1, or from v1.0 where v1.1 defers (`quote_from`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quote: Option<String>,
    /// Where `quote` comes from when not `section` (e.g. `v1.0 §17.3`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quote_from: Option<String>,
    /// Whether it can be observed over the node's HTTP API.
    pub testable: bool,
    /// Why not, when it cannot.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The conformance level of the file it comes from (not a member of the file).
    #[serde(default, skip_deserializing)]
    pub level: u8,
}

impl Requirement {
    /// The section the quote comes from.
    pub fn quote_source(&self) -> &str {
        self.quote_from.as_deref().unwrap_or(&self.section)
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    requirement: Vec<Requirement>,
}

/// Parses a requirements file and checks it: unique IDs, known strengths, a reason exactly
/// when a requirement is not testable.
pub fn parse(text: &str) -> Result<Vec<Requirement>, String> {
    let f: File = toml::from_str(text).map_err(|e| e.to_string())?;
    let mut seen = BTreeSet::new();
    for r in &f.requirement {
        if !seen.insert(r.id.as_str()) {
            return Err(format!("requirement {} is listed twice", r.id));
        }
        if !matches!(r.strength.as_str(), "MUST" | "SHOULD" | "MAY") {
            return Err(format!(
                "requirement {}: strength must be MUST, SHOULD or MAY, not {:?}",
                r.id, r.strength
            ));
        }
        if r.strength == "MUST" && r.quote.as_deref().is_none_or(|q| q.trim().is_empty()) {
            return Err(format!(
                "requirement {} is a MUST but quotes no spec sentence (quote = …)",
                r.id
            ));
        }
        if !r.testable && r.reason.as_deref().is_none_or(|s| s.trim().is_empty()) {
            return Err(format!(
                "requirement {} is not testable but gives no reason",
                r.id
            ));
        }
    }
    Ok(f.requirement)
}

/// The embedded Level 1 inventory.
pub fn level1() -> Result<Vec<Requirement>, String> {
    parse_level(LEVEL1_TOML, 1).map_err(|e| format!("requirements/level1.toml: {e}"))
}

/// The embedded Level 2 inventory (federation).
pub fn level2() -> Result<Vec<Requirement>, String> {
    parse_level(LEVEL2_TOML, 2).map_err(|e| format!("requirements/level2.toml: {e}"))
}

/// The embedded Level 3 inventory (the email bridge).
pub fn level3() -> Result<Vec<Requirement>, String> {
    parse_level(LEVEL3_TOML, 3).map_err(|e| format!("requirements/level3.toml: {e}"))
}

/// The embedded Level 4 inventory ("Full": E2EE, WebSocket, workflows, presence).
pub fn level4() -> Result<Vec<Requirement>, String> {
    parse_level(LEVEL4_TOML, 4).map_err(|e| format!("requirements/level4.toml: {e}"))
}

/// The testable MUST requirements of `level` that no case of the catalogue covers: a level
/// with any is not certifiable (a node cannot prove what the harness does not test).
pub fn uncovered_musts(level: u8) -> Vec<String> {
    let reqs = match level {
        1 => level1(),
        2 => level2(),
        3 => level3(),
        4 => level4(),
        _ => Ok(Vec::new()),
    }
    .unwrap_or_default();
    let covered = covered_ids();
    reqs.into_iter()
        .filter(|r| r.testable && r.strength == "MUST" && !covered.contains(r.id.as_str()))
        .map(|r| r.id)
        .collect()
}

/// The requirement IDs some case of the catalogue covers.
pub fn covered_ids() -> BTreeSet<&'static str> {
    crate::catalogue::all()
        .iter()
        .flat_map(|c| c.covers.iter().copied())
        .collect()
}

/// Every embedded inventory, Level 1 first; an ID listed in two levels is an error.
pub fn all() -> Result<Vec<Requirement>, String> {
    let mut reqs = level1()?;
    let mut ids: BTreeMap<String, u8> = reqs.iter().map(|r| (r.id.clone(), 1)).collect();
    for r in level2()?.into_iter().chain(level3()?).chain(level4()?) {
        if let Some(other) = ids.get(&r.id) {
            return Err(format!(
                "requirement {} is listed in level{other}.toml and level{}.toml",
                r.id, r.level
            ));
        }
        ids.insert(r.id.clone(), r.level);
        reqs.push(r);
    }
    Ok(reqs)
}

fn parse_level(text: &str, level: u8) -> Result<Vec<Requirement>, String> {
    let mut reqs = parse(text)?;
    for r in &mut reqs {
        r.level = level;
    }
    Ok(reqs)
}

/// One row of the traceability matrix.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Row {
    /// The requirement.
    #[serde(flatten)]
    pub requirement: Requirement,
    /// IDs of the cases covering it, in catalogue order.
    pub cases: Vec<&'static str>,
}

/// What one MUST case enforces: the requirement its first `covers` entry names, with the
/// quoted sentence.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Enforced {
    /// The case.
    pub case: &'static str,
    /// The requirement (`None` when the case's first `covers` names none).
    pub requirement: Option<Requirement>,
}

/// The traceability matrix over `reqs` and `cases`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Matrix {
    /// Every MUST/SHOULD requirement (MAY ones are not part of the verdict), in file order.
    pub rows: Vec<Row>,
    /// `covers` entries that name no requirement: `(case ID, requirement ID)`.
    pub unknown_covers: Vec<(&'static str, &'static str)>,
    /// Every MUST case with the sentence it enforces, in catalogue order.
    pub enforced: Vec<Enforced>,
    /// SHOULD and MAY cases with the harness's interpretation, when they carry one.
    pub interpretations: Vec<(&'static str, &'static str)>,
}

impl Matrix {
    /// Builds the matrix.
    pub fn build(reqs: &[Requirement], cases: &[&'static Case]) -> Matrix {
        let mut by_req: BTreeMap<&str, Vec<&'static str>> = BTreeMap::new();
        let known: BTreeSet<&str> = reqs.iter().map(|r| r.id.as_str()).collect();
        let mut unknown_covers = Vec::new();
        for c in cases {
            for r in c.covers {
                if known.contains(r) {
                    by_req.entry(r).or_default().push(c.id);
                } else {
                    unknown_covers.push((c.id, *r));
                }
            }
        }
        let rows = reqs
            .iter()
            .filter(|r| r.strength != "MAY")
            .map(|r| Row {
                cases: by_req.get(r.id.as_str()).cloned().unwrap_or_default(),
                requirement: r.clone(),
            })
            .collect();
        let enforced = cases
            .iter()
            .filter(|c| c.strength == Strength::Must)
            .map(|c| Enforced {
                case: c.id,
                requirement: c
                    .covers
                    .first()
                    .and_then(|id| reqs.iter().find(|r| r.id == *id))
                    .cloned(),
            })
            .collect();
        let interpretations = cases
            .iter()
            .filter_map(|c| c.interpretation.map(|i| (c.id, i)))
            .collect();
        Matrix {
            rows,
            unknown_covers,
            enforced,
            interpretations,
        }
    }

    /// Testable requirements no case covers.
    pub fn uncovered(&self) -> Vec<&Row> {
        self.rows
            .iter()
            .filter(|r| r.requirement.testable && r.cases.is_empty())
            .collect()
    }

    /// Requirements that cannot be tested over the wire.
    pub fn not_testable(&self) -> Vec<&Row> {
        self.rows
            .iter()
            .filter(|r| !r.requirement.testable)
            .collect()
    }

    /// `(covered, testable)` counts for one strength.
    pub fn coverage(&self, strength: Strength) -> (usize, usize) {
        let s = strength.to_string();
        let testable: Vec<&Row> = self
            .rows
            .iter()
            .filter(|r| r.requirement.testable && r.requirement.strength == s)
            .collect();
        let covered = testable.iter().filter(|r| !r.cases.is_empty()).count();
        (covered, testable.len())
    }

    /// MUST cases whose first `covers` entry is not a quoted MUST requirement.
    pub fn unquoted_must_cases(&self) -> Vec<&'static str> {
        self.enforced
            .iter()
            .filter(|e| {
                e.requirement
                    .as_ref()
                    .is_none_or(|r| r.strength != "MUST" || r.quote.is_none())
            })
            .map(|e| e.case)
            .collect()
    }

    /// The plain-text table `loom-conformance matrix` prints.
    pub fn to_text(&self, width: usize) -> String {
        use crate::report::layout::{indented, row};
        use std::fmt::Write;
        let mut out = String::new();
        let levels: BTreeSet<u8> = self.rows.iter().map(|r| r.requirement.level).collect();
        let levels: Vec<String> = levels.iter().map(u8::to_string).collect();
        let _ = writeln!(
            out,
            "LOOM v1.1 Level {} traceability: requirement → covering cases\n",
            levels.join("+")
        );
        for r in &self.rows {
            let q = &r.requirement;
            let cases = if !q.testable {
                "(not testable over the wire)".to_owned()
            } else if r.cases.is_empty() {
                "UNCOVERED".to_owned()
            } else {
                r.cases.join(", ")
            };
            let _ = writeln!(
                out,
                "{}",
                row(
                    &format!("{:<12} {:<6} {:<12} ", q.id, q.strength, q.section),
                    &cases,
                    width,
                    24
                )
            );
            if let Some(quote) = &q.quote {
                let _ = writeln!(
                    out,
                    "{}",
                    indented(
                        &format!("\"{quote}\" ({})", q.quote_source()),
                        width,
                        13,
                        13
                    )
                );
            }
        }
        let _ = writeln!(
            out,
            "\nMUST cases and the sentence each enforces ({}):",
            self.enforced.len()
        );
        for e in &self.enforced {
            match &e.requirement {
                Some(r) => {
                    let _ = writeln!(
                        out,
                        "  {}\n{}",
                        e.case,
                        indented(
                            &format!(
                                "{} ({}): \"{}\"",
                                r.id,
                                r.quote_source(),
                                r.quote.as_deref().unwrap_or("(no quote)")
                            ),
                            width,
                            6,
                            6
                        )
                    );
                }
                None => {
                    let _ = writeln!(out, "  {}\n      (names no requirement)", e.case);
                }
            }
        }
        if !self.interpretations.is_empty() {
            let _ = writeln!(
                out,
                "\nWhere the spec leaves room: the harness's reading ({} cases):",
                self.interpretations.len()
            );
            for (c, i) in &self.interpretations {
                let _ = writeln!(out, "  {c}\n{}", indented(i, width, 6, 6));
            }
        }
        let uncovered = self.uncovered();
        let _ = writeln!(
            out,
            "\nUncovered testable requirements ({}):",
            uncovered.len()
        );
        if uncovered.is_empty() {
            let _ = writeln!(out, "  none");
        }
        for r in uncovered {
            let q = &r.requirement;
            let _ = writeln!(
                out,
                "{}",
                indented(
                    &format!("{} [{} {}] {}", q.id, q.strength, q.section, q.text),
                    width,
                    2,
                    4
                )
            );
        }
        let nt = self.not_testable();
        let _ = writeln!(
            out,
            "\nNot testable over the wire ({}), with the reason:",
            nt.len()
        );
        for r in nt {
            let q = &r.requirement;
            let _ = writeln!(
                out,
                "{}",
                indented(
                    &format!(
                        "{} [{} {}] {}",
                        q.id,
                        q.strength,
                        q.section,
                        q.reason.as_deref().unwrap_or("")
                    ),
                    width,
                    2,
                    4
                )
            );
        }
        if !self.unknown_covers.is_empty() {
            let _ = writeln!(out, "\nCases naming unknown requirement IDs:");
            for (c, r) in &self.unknown_covers {
                let _ = writeln!(out, "  {c} covers {r}, which the requirements file lacks");
            }
        }
        let (mc, mt) = self.coverage(Strength::Must);
        let (sc, st) = self.coverage(Strength::Should);
        let _ = writeln!(
            out,
            "\nCoverage: MUST {mc}/{mt} testable requirements covered, SHOULD {sc}/{st}"
        );
        out
    }

    /// The JSON form (`loom-conformance matrix --json`).
    pub fn to_json(&self) -> serde_json::Value {
        let (mc, mt) = self.coverage(Strength::Must);
        let (sc, st) = self.coverage(Strength::Should);
        serde_json::json!({
            "requirements": self.rows,
            "uncovered": self.uncovered().iter().map(|r| &r.requirement.id).collect::<Vec<_>>(),
            "not_testable": self.not_testable().iter().map(|r| serde_json::json!({
                "id": r.requirement.id,
                "reason": r.requirement.reason,
            })).collect::<Vec<_>>(),
            "unknown_covers": self.unknown_covers.iter().map(|(c, r)| serde_json::json!({
                "case": c, "requirement": r,
            })).collect::<Vec<_>>(),
            "must_cases": self.enforced.iter().map(|e| serde_json::json!({
                "case": e.case,
                "requirement": e.requirement.as_ref().map(|r| &r.id),
                "quote": e.requirement.as_ref().and_then(|r| r.quote.as_ref()),
                "quote_from": e.requirement.as_ref().map(|r| r.quote_source()),
            })).collect::<Vec<_>>(),
            "interpretations": self.interpretations.iter().map(|(c, i)| serde_json::json!({
                "case": c, "interpretation": i,
            })).collect::<Vec<_>>(),
            "coverage": {
                "must": {"covered": mc, "testable": mt},
                "should": {"covered": sc, "testable": st},
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_embedded_file_parses() {
        let reqs = level1().expect("level1.toml parses");
        assert!(reqs.len() > 100);
        assert!(reqs.iter().all(|r| r.level == 1));
    }

    #[test]
    fn level2_loads_next_to_level1() {
        let l2 = level2().expect("level2.toml parses");
        assert_eq!(l2.len(), 49);
        assert!(l2.iter().all(|r| r.level == 2));
        let all = all().expect("the files load without overlapping IDs");
        let l3 = level3().expect("level3.toml parses");
        let l4 = level4().expect("level4.toml parses");
        assert_eq!(
            all.len(),
            level1().expect("level1").len() + l2.len() + l3.len() + l4.len()
        );
        assert!(all.iter().any(|r| r.id == "R-15.3-08" && r.level == 2));
    }

    /// The testable requirements of `reqs` no case covers.
    fn uncovered(reqs: Vec<Requirement>) -> Vec<String> {
        let covered = covered_ids();
        reqs.into_iter()
            .filter(|r| r.testable && !covered.contains(r.id.as_str()))
            .map(|r| format!("{} ({} {})", r.id, r.strength, r.section))
            .collect()
    }

    /// Issue 15 "every L2 requirement covered or marked not-testable with a reason": a
    /// testable Level 2 requirement (any strength) without a case fails here.
    #[test]
    fn every_testable_level2_requirement_has_a_case() {
        let missing = uncovered(level2().expect("level2.toml parses"));
        assert!(
            missing.is_empty(),
            "testable Level 2 requirements without a case: {missing:?} (add a case, or mark the requirement testable = false with a reason)"
        );
        let m = Matrix::build(&level2().expect("level2"), &crate::catalogue::all());
        assert!(m.uncovered().is_empty());
    }

    /// Issue 32 "every Level 3 requirement covered or marked not-testable with a reason".
    #[test]
    fn every_testable_level3_requirement_has_a_case() {
        let l3 = level3().expect("level3.toml parses");
        assert!(l3.iter().all(|r| r.level == 3));
        let missing = uncovered(l3);
        assert!(
            missing.is_empty(),
            "testable Level 3 requirements without a case: {missing:?}"
        );
    }

    /// Issues 33 and 34 "every Level 4 requirement (E2EE, §17, §19) covered or marked
    /// not-testable with a reason": Level 4 is certifiable, and so is every level below.
    #[test]
    fn every_testable_level4_requirement_has_a_case() {
        let l4 = level4().expect("level4.toml parses");
        assert!(l4.iter().all(|r| r.level == 4));
        let missing = uncovered(l4.clone());
        assert!(
            missing.is_empty(),
            "testable Level 4 requirements without a case: {missing:?}"
        );
        for section in ["v1.1 §17", "v1.1 §19", "v1.1 §7.4"] {
            assert!(
                l4.iter().any(|r| r.section.starts_with(section)),
                "no requirement of {section}"
            );
        }
        for level in 1..=4 {
            assert_eq!(
                uncovered_musts(level),
                Vec::<String>::new(),
                "level {level}"
            );
        }
    }

    #[test]
    fn bad_files_are_errors_not_panics() {
        assert!(parse("not toml [").is_err());
        assert!(parse("[[requirement]]\nid = \"R-1\"").is_err());
        let dup =
            "[[requirement]]\nid='R-1'\nsection='s'\nstrength='SHOULD'\ntext='t'\ntestable=true\n";
        assert!(parse(&format!("{dup}{dup}")).unwrap_err().contains("twice"));
        let no_reason =
            "[[requirement]]\nid='R-1'\nsection='s'\nstrength='SHOULD'\ntext='t'\ntestable=false\n";
        assert!(parse(no_reason).is_err());
        let unquoted_must =
            "[[requirement]]\nid='R-1'\nsection='s'\nstrength='MUST'\ntext='t'\ntestable=true\n";
        assert!(
            parse(unquoted_must)
                .unwrap_err()
                .contains("quotes no spec sentence")
        );
        let quoted = format!("{unquoted_must}quote='Nodes MUST'\n");
        assert!(parse(&quoted).is_ok());
    }
}
