//! What derived replies write for one phase, from its definition alone (guide "Phases":
//! deliverables by exact filename; "Output coordination": a fan-in worker writes under
//! `<intermediate_root>/<phase>/`; "Phase iteration loops": gates; "Verification rules").
//!
//! Each deliverable gets a neutral text by kind (`.csv` a header and one row, `.json` an
//! object, anything else a Markdown heading naming the phase and file and one sentence); the
//! texts carry no number, date, forecast or entity word, so they make no claim for the
//! validity contract to check. Then every pattern the definition requires of the phase is
//! placed where its check reads it: an `artifact_regex` gate with `expect_match: true` and a
//! regex rule with `min_count` get [`super::sample::sample`] texts (as often as the count
//! says) in the first text deliverable (`deliverables`, `changed_files`, `auto` with
//! deliverables) or the final message (`output`, `summary`, `auto` without). Finally every
//! requirement, forbidden patterns included, is checked against what was built; what does not
//! hold is returned as a note naming the rule or gate, so the report says why a check fails.
//!
//! A `tool_metric` gate on a tool the package does not bundle (a Loom built-in) gets a
//! stand-in output holding a value that satisfies the gate's operator (the scripted
//! backend's `tools:` section, derived); a bundled tool runs for real and is not derived.

use super::sample::sample;
use crate::package::pattern::Pattern;
use crate::package::{ArtifactTarget, GateKind, Operator, Phase, Process, RuleTarget, RuleType};
use crate::runner::checks::compare_json;
use crate::runner::output::{phase_intermediate_dir, phase_is_fan_in};
use serde_json::{Map, Value as Json};

/// The most copies of one sample derived replies write (a `min_count` is package input).
const MAX_COPIES: usize = 1000;

/// Where a check reads its text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Where {
    /// The phase's deliverable files.
    Files,
    /// All the attempt's agent messages.
    Output,
    /// The attempt's last agent message.
    Summary,
}

/// What a check requires of that text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Need {
    /// At least (`exact`: exactly) this many matches.
    Matches { min: usize, exact: bool },
    /// No match.
    None,
}

/// One pattern requirement and the check it comes from.
#[derive(Debug, Clone)]
struct Requirement {
    origin: String,
    pattern: String,
    at: Where,
    need: Need,
}

/// The replies of one phase.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PhaseReplies {
    /// `(path written, content)`: canonical paths, or the fan-in intermediate paths.
    pub writes: Vec<(String, String)>,
    /// The last message of the attempt (with the samples of output/summary checks).
    pub final_message: String,
}

/// A neutral text for deliverable `file` of `phase` (see the module docs).
fn base_content(phase: &Phase, file: &str) -> String {
    let ext = std::path::Path::new(file)
        .extension()
        .map(|e| e.to_string_lossy().to_lowercase());
    match ext.as_deref() {
        Some("csv") => "field,value\nsource,derived\n".to_owned(),
        Some("json") => "{\"source\": \"derived\", \"status\": \"ok\"}\n".to_owned(),
        _ => format!(
            "# {}: {file}\n\nWritten by replies derived from the process definition; no model wrote this file.\n",
            phase.id
        ),
    }
}

/// The pattern requirements of `phase`: its iteration gates (when the loop is on) and the
/// regex rules that judge it.
fn requirements(process: &Process, phase: &Phase) -> Vec<Requirement> {
    let mut out = Vec::new();
    let files_or_output = if phase.deliverables.is_empty() {
        Where::Output
    } else {
        Where::Files
    };
    if phase.iterates() {
        for (i, gate) in phase
            .iteration
            .iter()
            .flat_map(|it| it.gates.iter())
            .enumerate()
        {
            let Some(GateKind::ArtifactRegex {
                target,
                pattern,
                expect_match,
            }) = gate.kind()
            else {
                continue;
            };
            let at = match target {
                ArtifactTarget::Auto | ArtifactTarget::Deliverables => files_or_output,
                ArtifactTarget::ChangedFiles => Where::Files,
                ArtifactTarget::Output => Where::Output,
                ArtifactTarget::Summary => Where::Summary,
            };
            out.push(Requirement {
                origin: format!(
                    "gate {}",
                    gate.id.clone().unwrap_or_else(|| format!("gate-{}", i + 1))
                ),
                pattern: pattern.to_owned(),
                at,
                need: if expect_match {
                    Need::Matches {
                        min: 1,
                        exact: false,
                    }
                } else {
                    Need::None
                },
            });
        }
    }
    let rules = process.verification.iter().flat_map(|v| v.rules.iter());
    for rule in rules.filter(|r| r.rule_type() == RuleType::Regex && r.applies_to(&phase.id)) {
        let need = match rule.min_count.and_then(|n| usize::try_from(n).ok()) {
            Some(min) => Need::Matches {
                min,
                exact: rule.requires_exact_cardinality == Some(true),
            },
            None => Need::None,
        };
        out.push(Requirement {
            origin: format!("rule {}", rule.name),
            pattern: rule.check.clone(),
            at: match rule.target() {
                RuleTarget::Output => Where::Output,
                RuleTarget::Deliverables => Where::Files,
            },
            need,
        });
    }
    out
}

/// Matches of `pattern` over `texts` (non-overlapping, summed), or why it could not run.
fn count(pattern: &str, texts: &[&str]) -> Result<usize, String> {
    let re = Pattern::compile(pattern).map_err(|e| e.to_string())?;
    texts.iter().try_fold(0usize, |n, t| {
        re.spans(t).map(|m| n + m.len()).map_err(|e| e.to_string())
    })
}

/// The replies of `phase`, and notes on the requirements they cannot meet.
pub fn phase_replies(process: &Process, phase: &Phase) -> (PhaseReplies, Vec<String>) {
    let files: Vec<&str> = phase.deliverable_filenames();
    let mut contents: Vec<String> = files.iter().map(|f| base_content(phase, f)).collect();
    // Samples go into the first Markdown/text deliverable (a CSV or JSON file keeps its shape
    // unless it is the only one).
    let host = files
        .iter()
        .position(|f| {
            let f = f.to_lowercase();
            !f.ends_with(".csv") && !f.ends_with(".json")
        })
        .or((!files.is_empty()).then_some(0));
    let mut final_lines = vec![format!("Completed {}.", phase.id)];
    let reqs = requirements(process, phase);
    let mut notes = Vec::new();
    // Requirements already noted as unmet (no sample, nowhere to put it) are not checked again.
    let mut noted = vec![false; reqs.len()];
    for (i, r) in reqs.iter().enumerate() {
        let Need::Matches { min, .. } = r.need else {
            continue;
        };
        if min == 0 {
            continue;
        }
        if min > MAX_COPIES {
            notes.push(format!(
                "phase {}: {} needs {min} matches of {:?}; derived replies write at most {MAX_COPIES}",
                phase.id, r.origin, r.pattern
            ));
            noted[i] = true;
            continue;
        }
        let Some(text) = sample(&r.pattern) else {
            notes.push(format!(
                "phase {}: {} needs {:?} to match, and no text matching it could be derived",
                phase.id, r.origin, r.pattern
            ));
            noted[i] = true;
            continue;
        };
        match (r.at, host) {
            (Where::Files, Some(h)) => {
                for _ in 0..min {
                    contents[h].push_str(&text);
                    contents[h].push('\n');
                }
            }
            (Where::Files, None) => {
                notes.push(format!(
                    "phase {}: {} reads files the phase writes, and the phase declares no deliverables",
                    phase.id, r.origin
                ));
                noted[i] = true;
            }
            (Where::Output | Where::Summary, _) => {
                final_lines.extend(std::iter::repeat_n(text, min));
            }
        }
    }
    let final_message = final_lines.join("\n");
    let work_message = format!("Writing the deliverables of {}.", phase.id);
    for r in reqs
        .iter()
        .zip(&noted)
        .filter(|(_, n)| !**n)
        .map(|(r, _)| r)
    {
        let texts: Vec<&str> = match r.at {
            Where::Files => contents.iter().map(String::as_str).collect(),
            Where::Output if contents.is_empty() => vec![final_message.as_str()],
            Where::Output => vec![work_message.as_str(), final_message.as_str()],
            Where::Summary => vec![final_message.as_str()],
        };
        let joined = texts.join("\n");
        let n = match r.at {
            // Output is the messages joined by a newline, as the checks read it.
            Where::Output => count(&r.pattern, &[joined.as_str()]),
            _ => count(&r.pattern, &texts),
        };
        let problem = match (n, r.need) {
            (Err(e), _) => Some(format!("the pattern could not run: {e}")),
            (Ok(0), Need::None) => None,
            (Ok(k), Need::None) => Some(format!("the derived text matches it {k} times")),
            (Ok(k), Need::Matches { min, exact: true }) if k != min => Some(format!(
                "the derived text matches it {k} times, exactly {min} are required"
            )),
            (Ok(k), Need::Matches { min, .. }) if k < min => Some(format!(
                "the derived text matches it {k} times, at least {min} are required"
            )),
            _ => None,
        };
        if let Some(p) = problem {
            notes.push(format!(
                "phase {}: {} ({:?}) not satisfied: {p}",
                phase.id, r.origin, r.pattern
            ));
        }
    }
    let dir = phase_is_fan_in(process, phase).then(|| phase_intermediate_dir(process, phase));
    let writes = files
        .iter()
        .zip(contents)
        .map(|(f, c)| {
            let path = match &dir {
                Some(d) => format!("{d}/{}", crate::engine::tools::normalize(f)),
                None => (*f).to_owned(),
            };
            (path, c)
        })
        .collect();
    (
        PhaseReplies {
            writes,
            final_message,
        },
        notes,
    )
}

/// A value for which `op` holds against `expected`: the expected value itself (`eq`, `gte`,
/// `lte`, `contains`), or an empty text (`not_contains`).
fn satisfying(op: Operator, expected: &Json) -> Json {
    match op {
        Operator::NotContains => Json::String(String::new()),
        _ => expected.clone(),
    }
}

/// Sets `value` at the dotted `path` in `data` (objects created on the way); false when a
/// scalar is in the way or the path is already set.
fn set_path(data: &mut Map<String, Json>, path: &str, value: Json) -> bool {
    let mut keys = path.split('.').peekable();
    let mut cur = data;
    while let Some(k) = keys.next() {
        if keys.peek().is_none() {
            if cur.contains_key(k) {
                return false;
            }
            cur.insert(k.to_owned(), value);
            return true;
        }
        let next = cur
            .entry(k.to_owned())
            .or_insert_with(|| Json::Object(Map::new()));
        let Json::Object(m) = next else {
            return false;
        };
        cur = m;
    }
    false
}

/// Stand-in outputs of the tools the `tool_metric` gates of `phase` read, by tool name, and
/// notes on gates they cannot satisfy.
pub fn tool_outputs(phase: &Phase) -> (Vec<(String, Json)>, Vec<String>) {
    let mut by_tool: Vec<(String, Map<String, Json>)> = Vec::new();
    let mut notes = Vec::new();
    if !phase.iterates() {
        return (Vec::new(), notes);
    }
    let gates: Vec<_> = phase
        .iteration
        .iter()
        .flat_map(|it| it.gates.iter())
        .collect();
    for (i, gate) in gates.iter().enumerate() {
        let Some(GateKind::ToolMetric {
            tool,
            metric_path,
            operator,
            value,
        }) = gate.kind()
        else {
            continue;
        };
        let name = gate.id.clone().unwrap_or_else(|| format!("gate-{}", i + 1));
        let slot = match by_tool.iter().position(|(t, _)| t == tool) {
            Some(k) => k,
            None => {
                by_tool.push((tool.to_owned(), Map::new()));
                by_tool.len() - 1
            }
        };
        let data = &mut by_tool[slot].1;
        set_path(data, metric_path, satisfying(operator, value));
        let holds = crate::runner::checks::lookup(&Json::Object(data.clone()), metric_path)
            .map(|actual| compare_json(operator, actual, value));
        if holds != Some(Ok(true)) {
            notes.push(format!(
                "phase {}: gate {name} ({tool}.{metric_path} {} {value}) cannot be satisfied by a derived output",
                phase.id,
                operator.as_str()
            ));
        }
    }
    (
        by_tool
            .into_iter()
            .map(|(t, m)| (t, Json::Object(m)))
            .collect(),
        notes,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn process(yaml: &str) -> Process {
        crate::package::load_str(yaml)
            .unwrap_or_else(|r| panic!("{}", r.to_text("t")))
            .process
    }

    const HEAD: &str = "name: t\nschema_version: 2\nrisk_level: low\n";

    #[test]
    fn required_patterns_are_placed_and_forbidden_ones_avoided() {
        let p = process(&format!(
            "{HEAD}phases:\n  - id: notes\n    description: d\n    depends_on: []\n    deliverables: [data.csv, notes.md]\n    iteration:\n      enabled: true\n      max_attempts: 2\n      max_total_runner_invocations: 2\n      iteration_budget: {{max_wall_clock_seconds: 9, max_tokens: 9, max_tool_calls: 9}}\n      gates:\n        - {{id: dated, type: artifact_regex, blocking: true, pattern: \"as-of \\\\d{{4}}\", expect_match: true}}\n        - {{id: said, type: artifact_regex, blocking: true, target: summary, pattern: \"(?m)^## Sources\", expect_match: true}}\n        - {{id: clean, type: artifact_regex, blocking: true, pattern: TBD, expect_match: false}}\nverification:\n  rules:\n    - {{name: two, check: \"(?m)^## (Added|Fixed)$\", type: regex, target: deliverables, min_count: 2, requires_exact_cardinality: true}}\n"
        ));
        let (r, notes) = phase_replies(&p, &p.phases[0]);
        assert!(notes.is_empty(), "{notes:?}");
        assert_eq!(
            r.writes[0],
            ("data.csv".into(), "field,value\nsource,derived\n".into())
        );
        let md = &r.writes[1].1;
        assert!(md.contains("\nas-of 0000\n"), "{md}");
        assert_eq!(md.matches("## Added").count(), 2, "{md}");
        assert_eq!(r.final_message, "Completed notes.\n## Sources");
    }

    #[test]
    fn fan_in_workers_write_under_the_intermediate_root_and_unmet_needs_are_noted() {
        let p = process(&format!(
            "{HEAD}output_coordination: {{strategy: fan_in}}\nphases:\n  - id: sweep\n    description: d\n    depends_on: []\n    deliverables: [\"a/b.md — notes\"]\nverification:\n  rules:\n    - {{name: no-derived, check: derived, type: regex, target: deliverables, severity: error}}\n    - {{name: pair, check: \"(a)\\\\1\", type: regex, min_count: 1}}\n"
        ));
        let (r, notes) = phase_replies(&p, &p.phases[0]);
        assert_eq!(r.writes[0].0, ".loom/phase-artifacts/sweep/a/b.md");
        assert_eq!(notes.len(), 2, "{notes:?}");
        assert!(
            notes[0].contains("rule pair") && notes[0].contains("no text matching it"),
            "{notes:?}"
        );
        assert!(
            notes[1].contains("rule no-derived") && notes[1].contains("matches it 1 times"),
            "{notes:?}"
        );
    }

    #[test]
    fn a_huge_min_count_is_noted_not_written() {
        let p = process(&format!(
            "{HEAD}phases:\n  - {{id: a, description: d, depends_on: [], deliverables: [a.md]}}\nverification:\n  rules:\n    - {{name: many, check: x, type: regex, target: deliverables, min_count: 1000000000000}}\n"
        ));
        let (r, notes) = phase_replies(&p, &p.phases[0]);
        assert!(r.writes[0].1.len() < 1000, "{}", r.writes[0].1.len());
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(notes[0].contains("at most 1000"), "{notes:?}");
    }

    #[test]
    fn tool_metric_gates_get_a_satisfying_stand_in_output() {
        let p = process(&format!(
            "{HEAD}phases:\n  - id: w\n    description: d\n    depends_on: []\n    iteration:\n      enabled: true\n      max_attempts: 2\n      stop_on_no_improvement_attempts: 1\n      max_total_runner_invocations: 2\n      iteration_budget: {{max_wall_clock_seconds: 9, max_tokens: 9, max_tool_calls: 9}}\n      gates:\n        - {{id: s, type: tool_metric, blocking: true, tool: humanize_writing, metric_path: report.score, operator: gte, value: 80}}\n        - {{id: c, type: tool_metric, blocking: true, tool: scan, metric_path: found, operator: contains, value: law}}\n        - {{id: n, type: tool_metric, blocking: true, tool: scan, metric_path: missing, operator: not_contains, value: law}}\n        - {{id: clash, type: tool_metric, blocking: true, tool: humanize_writing, metric_path: report.score, operator: lte, value: 10}}\n"
        ));
        let (outs, notes) = tool_outputs(&p.phases[0]);
        assert_eq!(
            outs,
            vec![
                (
                    "humanize_writing".to_owned(),
                    serde_json::json!({"report": {"score": 80}})
                ),
                (
                    "scan".to_owned(),
                    serde_json::json!({"found": "law", "missing": ""})
                ),
            ]
        );
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(notes[0].contains("gate clash"), "{notes:?}");
    }
}
