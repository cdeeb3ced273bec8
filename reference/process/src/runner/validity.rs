//! The validity contract at runtime (guide "Validity contract (claim and evidence rigor)",
//! "Operational behavior"): claim extraction from a phase's output, claim states, pruning,
//! the synthesis input gate and the validity scorecard.
//!
//! - **When**: for a phase whose resolved contract (`package::validity::resolve`) has the
//!   pipeline and claim extraction on, in a process that declares a `validity_contract` (at
//!   process or phase level). The risk floor alone does not switch extraction on: the guide's
//!   loader extracts claims only from `fact_checker` calls, so a package that never mentions
//!   the contract gets no claim pipeline here either.
//! - **Extraction**: the phase's deliverable files (else its agent messages) are split into
//!   sentences (Markdown headings, code blocks and table separators skipped; a table row is
//!   one sentence); a sentence with a number, a year, a forecast word or an entity word is a
//!   claim, typed `numeric`, `date`, `forecast_assumption` or `entity_fact` (the loader's
//!   `normalize_claim_type` order); id `CLM-` + the first 10 hex digits (upper case) of the
//!   SHA-256 of its text (the loader uses SHA-1; ours has no SHA-1).
//! - **States**: `extracted`, then the fact checker's verdict (`Purpose::FactCheck`; the
//!   scripted backend's `fact_checks:`) — `supported`, `contradicted` or
//!   `insufficient_evidence` (no verdict = `insufficient_evidence`) — then `pruned` for a
//!   pruned claim. A claim is critical when its type is in `critical_claim_types`.
//! - **Thresholds**: supported/extracted ≥ `min_supported_ratio`, insufficient/extracted ≤
//!   `max_unverified_ratio`, contradicted ≤ `max_contradicted_count`; for a synthesis phase
//!   also supported critical / critical ≥ `final_gate.critical_claim_support_ratio`. No
//!   claims: nothing to fail.
//! - **Pruning** (intermediate phases): when the thresholds fail, `insufficient_evidence`
//!   claims are pruned and the thresholds are judged again over the remaining claims; the
//!   phase passes if they hold ("non-fatal by default when unresolved claims are prunable and
//!   post-prune thresholds still pass"). Pruning changes the claim ledger, not the files:
//!   `drop` forgets the claims, `rewrite_uncertainty` keeps them as uncertainty notes in the
//!   synthesis input. A synthesis phase is never pruned: its thresholds are final.
//! - **Synthesis input gate**: before a synthesis phase runs, the claims of the phases it
//!   depends on (transitively) form its verified context, added to its prompt; with
//!   `final_gate.enforce_verified_context_only` only `supported` claims go in (plus the notes
//!   of `rewrite_uncertainty`), and the gate's `JudgeResult` lists what was excluded.
//! - **Scorecard**: at the end of the run a `TaskUpdated` with `validityScorecard` gives per
//!   phase the counts, ratios, thresholds and verdict, and the totals.

use super::RunState;
use super::checks::Check;
use crate::engine::event::EventType;
use crate::engine::judge::{JudgeResult, JudgeStatus};
use crate::engine::model::{ClaimText, ModelRequest, Purpose};
use crate::package::validity::{ResolvedValidity, resolve};
use crate::package::{Phase, Process, PruneMode};
use serde::Serialize;
use serde_json::{Value as Json, json};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet};

/// One claim and its lifecycle.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Claim {
    /// `CLM-…`.
    pub claim_id: String,
    /// The sentence.
    pub text: String,
    /// `numeric`, `date`, `forecast_assumption` or `entity_fact`.
    pub claim_type: String,
    /// `critical` or `important`.
    pub criticality: String,
    /// The current state.
    pub status: String,
    /// States in order (`extracted`, verdict, `pruned`).
    pub lifecycle: Vec<String>,
    /// Evidence references from the fact checker.
    pub evidence_refs: Vec<String>,
}

/// A phase's claim ledger after its last attempt.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Ledger {
    /// The claims (pruned ones included, with their state).
    pub claims: Vec<Claim>,
    /// Whether the thresholds held.
    pub passed: bool,
    /// A synthesis phase's ledger.
    pub synthesis: bool,
    /// The thresholds it was judged by.
    pub thresholds: Json,
    /// How pruned claims are kept: `drop` or `rewrite_uncertainty`.
    pub prune_mode: String,
}

/// The resolved contract when the claim pipeline runs for `ph` (see the module docs).
pub fn active(p: &Process, ph: &Phase) -> Option<ResolvedValidity> {
    if p.validity_contract.is_none() && ph.validity_contract.is_none() {
        return None;
    }
    let v = resolve(p, Some(ph));
    (v.enabled && v.claim_extraction_enabled).then_some(v)
}

/// The loader's claim typing; `None` for a qualitative sentence (not a checkable claim).
pub fn claim_type(text: &str) -> Option<&'static str> {
    let lower = text.to_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    if words
        .iter()
        .any(|w| w.starts_with(|c: char| c.is_ascii_digit()))
    {
        // The loader's first test (`\b\d[\d,]*(?:\.\d+)?\b`) also catches years.
        return Some("numeric");
    }
    const FORECAST: [&str; 5] = ["forecast", "project", "expect", "guidance", "assum"];
    if words.iter().any(|w| {
        FORECAST
            .iter()
            .any(|f| w == f || (*f == "assum" && w.starts_with(f)))
    }) {
        return Some("forecast_assumption");
    }
    const ENTITY: [&str; 5] = ["company", "entity", "organization", "person", "team"];
    if words.iter().any(|w| ENTITY.contains(w)) {
        return Some("entity_fact");
    }
    None
}

/// `CLM-` + 10 upper-case hex digits of SHA-256(text).
pub fn claim_id(text: &str) -> String {
    let d = Sha256::digest(text.as_bytes());
    format!("CLM-{}", hex::encode_upper(&d[..5]))
}

/// The sentences of a Markdown text (see the module docs): paragraphs and list items are
/// joined across their wrapped lines, then split after `.`, `!` or `?` followed by a space
/// and a capital letter.
pub fn sentences(text: &str) -> Vec<String> {
    let mut blocks: Vec<String> = Vec::new();
    let mut current = String::new();
    let flush = |current: &mut String, blocks: &mut Vec<String>| {
        if !current.trim().is_empty() {
            blocks.push(std::mem::take(current));
        }
        current.clear();
    };
    let mut in_code = false;
    for line in text.lines() {
        let t = line.trim();
        if t.starts_with("```") {
            flush(&mut current, &mut blocks);
            in_code = !in_code;
            continue;
        }
        if in_code {
            continue;
        }
        if t.is_empty() || t.starts_with('#') {
            flush(&mut current, &mut blocks);
            continue;
        }
        if t.starts_with('|') {
            flush(&mut current, &mut blocks);
            let cells: Vec<&str> = t
                .trim_matches('|')
                .split('|')
                .map(str::trim)
                .filter(|c| !c.is_empty())
                .collect();
            if !cells
                .iter()
                .all(|c| c.chars().all(|ch| matches!(ch, '-' | ':')))
            {
                blocks.push(cells.join("; "));
            }
            continue;
        }
        let item = t
            .strip_prefix(['-', '*', '+', '>'])
            .map(str::trim_start)
            .or_else(|| {
                let digits = t.trim_start_matches(|c: char| c.is_ascii_digit());
                (digits.len() < t.len())
                    .then(|| digits.strip_prefix(". "))
                    .flatten()
            });
        match item {
            Some(rest) => {
                flush(&mut current, &mut blocks);
                current.push_str(rest);
            }
            None => {
                if !current.is_empty() {
                    current.push(' ');
                }
                current.push_str(t);
            }
        }
    }
    flush(&mut current, &mut blocks);
    let mut out = Vec::new();
    for b in blocks {
        let chars: Vec<(usize, char)> = b.char_indices().collect();
        let mut start = 0;
        for (k, (i, c)) in chars.iter().enumerate() {
            let next = chars.get(k + 1).map(|x| x.1);
            let after = chars.get(k + 2).map(|x| x.1);
            if matches!(c, '.' | '!' | '?')
                && next == Some(' ')
                && after.is_some_and(|a| a.is_uppercase())
            {
                out.push(b[start..=*i].trim().to_owned());
                start = i + 1;
            }
        }
        let rest = b[start..].trim();
        if !rest.is_empty() {
            out.push(rest.to_owned());
        }
    }
    out
}

/// The claims of `text`, deduplicated by id, in order.
pub fn extract(text: &str, critical: &[String]) -> Vec<Claim> {
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for s in sentences(text) {
        let Some(kind) = claim_type(&s) else { continue };
        let id = claim_id(&s);
        if !seen.insert(id.clone()) {
            continue;
        }
        out.push(Claim {
            claim_id: id,
            criticality: if critical.iter().any(|c| c == kind) {
                "critical".into()
            } else {
                "important".into()
            },
            claim_type: kind.into(),
            status: "extracted".into(),
            lifecycle: vec!["extracted".into()],
            evidence_refs: Vec::new(),
            text: s,
        });
    }
    out
}

#[derive(Debug, Default, Clone, Copy)]
struct Counts {
    extracted: usize,
    supported: usize,
    contradicted: usize,
    insufficient: usize,
    pruned: usize,
    critical: usize,
    critical_supported: usize,
}

fn counts(claims: &[Claim]) -> Counts {
    let mut c = Counts {
        extracted: claims.len(),
        ..Default::default()
    };
    for cl in claims {
        match cl.status.as_str() {
            "supported" => c.supported += 1,
            "contradicted" => c.contradicted += 1,
            "pruned" => c.pruned += 1,
            _ => c.insufficient += 1,
        }
        if cl.criticality == "critical" && cl.status != "pruned" {
            c.critical += 1;
            if cl.status == "supported" {
                c.critical_supported += 1;
            }
        }
    }
    c
}

fn ratio(n: usize, d: usize) -> f64 {
    if d == 0 { 1.0 } else { n as f64 / d as f64 }
}

/// Threshold failures over the claims not pruned.
fn failures(claims: &[Claim], v: &ResolvedValidity, synthesis: bool) -> Vec<String> {
    let c = counts(claims);
    let judged = c.extracted - c.pruned;
    let mut out = Vec::new();
    if judged == 0 {
        return out;
    }
    let sr = ratio(c.supported, judged);
    if sr < v.min_supported_ratio {
        out.push(format!(
            "supported ratio {sr:.2} ({} of {judged}) is below min_supported_ratio {}",
            c.supported, v.min_supported_ratio
        ));
    }
    let ur = if judged == 0 {
        0.0
    } else {
        c.insufficient as f64 / judged as f64
    };
    if ur > v.max_unverified_ratio {
        out.push(format!(
            "unverified ratio {ur:.2} ({} of {judged}) is above max_unverified_ratio {}",
            c.insufficient, v.max_unverified_ratio
        ));
    }
    if i64::try_from(c.contradicted).unwrap_or(i64::MAX) > v.max_contradicted_count {
        let ids: Vec<&str> = claims
            .iter()
            .filter(|cl| cl.status == "contradicted")
            .map(|cl| cl.claim_id.as_str())
            .collect();
        out.push(format!(
            "{} contradicted claims ({}) exceed max_contradicted_count {}",
            c.contradicted,
            ids.join(", "),
            v.max_contradicted_count
        ));
    }
    if synthesis && c.critical > 0 {
        let cr = ratio(c.critical_supported, c.critical);
        if cr < v.critical_claim_support_ratio {
            out.push(format!(
                "critical claims supported {cr:.2} ({} of {}) is below critical_claim_support_ratio {}",
                c.critical_supported, c.critical, v.critical_claim_support_ratio
            ));
        }
    }
    out
}

fn thresholds(v: &ResolvedValidity, synthesis: bool) -> Json {
    let mut t = json!({
        "minSupportedRatio": v.min_supported_ratio,
        "maxUnverifiedRatio": v.max_unverified_ratio,
        "maxContradictedCount": v.max_contradicted_count,
    });
    if synthesis {
        t["criticalClaimSupportRatio"] = json!(v.critical_claim_support_ratio);
    }
    t
}

/// Prunes the `insufficient_evidence` claims.
pub fn prune(claims: &mut [Claim]) -> usize {
    let mut n = 0;
    for c in claims
        .iter_mut()
        .filter(|c| c.status == "insufficient_evidence")
    {
        c.status = "pruned".into();
        c.lifecycle.push("pruned".into());
        n += 1;
    }
    n
}

/// Runs the claim pipeline for one attempt: extraction from `text`, the fact check, states,
/// pruning for an intermediate phase; emits the claims as an `Observation` and returns the
/// validity check, the ledger and the tokens spent. `None` when the pipeline is off.
pub(crate) fn check_attempt(
    st: &mut RunState<'_>,
    ph: &Phase,
    attempt: u32,
    model_tier: u8,
    text: &str,
) -> Option<(Check, Ledger, u64)> {
    let v = active(st.process, ph)?;
    let mut claims = extract(text, &v.critical_claim_types);
    let mut tokens = 0;
    if !claims.is_empty() {
        let req = ModelRequest {
            purpose: Purpose::FactCheck {
                claims: claims
                    .iter()
                    .map(|c| ClaimText {
                        id: c.claim_id.clone(),
                        text: c.text.clone(),
                    })
                    .collect(),
                subject: text.to_owned(),
            },
            system: String::new(),
            goal: st.req.goal.clone(),
            phase_id: ph.id.clone(),
            phase_description: ph.description.clone(),
            attempt,
            turn: 1,
            observations: Vec::new(),
            feedback: Vec::new(),
            model_tier,
        };
        match st.env.model.reply(&req) {
            Ok(reply) => {
                tokens = reply.tokens.total();
                let verdicts: BTreeMap<String, _> = reply
                    .claims
                    .into_iter()
                    .map(|v| (v.id.clone(), v))
                    .collect();
                for c in &mut claims {
                    let (status, source) = match verdicts.get(&c.claim_id) {
                        Some(v)
                            if crate::engine::model::CLAIM_VERDICTS
                                .contains(&v.verdict.as_str()) =>
                        {
                            (v.verdict.clone(), v.source.clone())
                        }
                        _ => ("insufficient_evidence".to_owned(), None),
                    };
                    c.lifecycle.push(status.clone());
                    c.status = status;
                    c.evidence_refs.extend(source);
                }
            }
            Err(e) => {
                st.emit(
                    EventType::Error,
                    json!({"phase": ph.id, "attempt": attempt, "code": "model_error",
                           "message": format!("fact check: {}", e.0)}),
                );
                for c in &mut claims {
                    c.lifecycle.push("insufficient_evidence".into());
                    c.status = "insufficient_evidence".into();
                }
            }
        }
    }
    let synthesis = ph.is_synthesis;
    let before = failures(&claims, &v, synthesis);
    let mut pruned = 0;
    let after = if !before.is_empty() && !synthesis {
        pruned = prune(&mut claims);
        failures(&claims, &v, synthesis)
    } else {
        before.clone()
    };
    let c = counts(&claims);
    let prune_mode = match v.prune_mode {
        PruneMode::Drop => "drop",
        PruneMode::RewriteUncertainty => "rewrite_uncertainty",
    };
    let summary = format!(
        "{} claims extracted: {} supported, {} contradicted, {} insufficient_evidence, {} pruned",
        c.extracted, c.supported, c.contradicted, c.insufficient, c.pruned
    );
    let call_id = format!("claims:{}#{attempt}", ph.id);
    st.emit(
        EventType::Observation,
        json!({"phase": ph.id, "attempt": attempt, "toolCallId": call_id,
               "observation": {"ok": true, "summary": summary, "artifacts": {},
                               "raw": {"claims": claims, "pruneMode": prune_mode}}}),
    );
    let mut reasons = after.clone();
    if pruned > 0 {
        reasons.insert(
            0,
            format!(
                "pruned {pruned} insufficient_evidence claims ({prune_mode}) after: {}",
                before.join("; ")
            ),
        );
    }
    let status = if after.is_empty() {
        JudgeStatus::Pass
    } else {
        JudgeStatus::Fail
    };
    let check = Check {
        kind: "validity",
        name: if synthesis { "final_gate" } else { "claims" }.into(),
        blocking: true,
        result: JudgeResult::new(status, reasons, vec![format!("events:{call_id}")]),
        score: None,
    };
    let ledger = Ledger {
        claims,
        passed: after.is_empty(),
        synthesis,
        thresholds: thresholds(&v, synthesis),
        prune_mode: prune_mode.into(),
    };
    Some((check, ledger, tokens))
}

/// The threshold failures of a ledger as it stands (after a prune).
pub fn recheck(ledger: &Ledger, v: &ResolvedValidity) -> Vec<String> {
    failures(&ledger.claims, v, ledger.synthesis)
}

/// The phases `ph` depends on, transitively, sorted.
fn ancestors(p: &Process, ph: &Phase) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut todo: Vec<&str> = ph.depends_on.iter().map(String::as_str).collect();
    while let Some(id) = todo.pop() {
        if out.insert(id.to_owned())
            && let Some(d) = p.phase(id)
        {
            todo.extend(d.depends_on.iter().map(String::as_str));
        }
    }
    out
}

/// The synthesis input gate (see the module docs): the verified context for synthesis phase
/// `ph` from its ancestors' ledgers, and its check. `None` unless `ph` is a synthesis phase
/// with the pipeline on.
pub(crate) fn synthesis_input(st: &RunState<'_>, ph: &Phase) -> Option<(String, Check)> {
    if !ph.is_synthesis {
        return None;
    }
    let v = active(st.process, ph)?;
    let mut included = Vec::new();
    let mut notes = Vec::new();
    let mut excluded: BTreeMap<String, usize> = BTreeMap::new();
    let mut evidence = Vec::new();
    for id in ancestors(st.process, ph) {
        let Some(ledger) = st.validity.get(&id) else {
            continue;
        };
        for c in &ledger.claims {
            let keep = c.status == "supported"
                || (!v.enforce_verified_context_only
                    && c.status != "contradicted"
                    && c.status != "pruned");
            if keep {
                included.push(format!("- [{}] {} ({id})", c.claim_id, c.text));
                evidence.push(format!("claim:{}", c.claim_id));
            } else {
                *excluded.entry(c.status.clone()).or_default() += 1;
                if c.status == "pruned" && ledger.prune_mode == "rewrite_uncertainty" {
                    notes.push(format!(
                        "- Unverified, not to be relied on: {} ({id})",
                        c.text
                    ));
                }
            }
        }
    }
    let mut context = included.join("\n");
    if !notes.is_empty() {
        context.push_str("\nUncertainty notes (excluded from the verified context):\n");
        context.push_str(&notes.join("\n"));
    }
    let reasons = if excluded.is_empty() {
        vec![format!("{} supported claims admitted", included.len())]
    } else {
        vec![format!(
            "{} claims admitted; excluded: {}{}",
            included.len(),
            excluded
                .iter()
                .map(|(k, n)| format!("{n} {k}"))
                .collect::<Vec<_>>()
                .join(", "),
            if v.enforce_verified_context_only {
                " (enforce_verified_context_only)"
            } else {
                ""
            }
        )]
    };
    let check = Check {
        kind: "validity",
        name: "synthesis_input".into(),
        blocking: false,
        result: JudgeResult::new(JudgeStatus::Pass, reasons, evidence),
        score: None,
    };
    Some((context, check))
}

/// The run's validity scorecard from the phase ledgers, or `None` when no phase had one.
pub(crate) fn scorecard(ledgers: &BTreeMap<String, Ledger>) -> Option<Json> {
    if ledgers.is_empty() {
        return None;
    }
    let mut phases = serde_json::Map::new();
    let mut total = Counts::default();
    for (id, l) in ledgers {
        let c = counts(&l.claims);
        let judged = c.extracted - c.pruned;
        total.extracted += c.extracted;
        total.supported += c.supported;
        total.contradicted += c.contradicted;
        total.insufficient += c.insufficient;
        total.pruned += c.pruned;
        phases.insert(
            id.clone(),
            json!({
                "extracted": c.extracted, "supported": c.supported,
                "contradicted": c.contradicted, "insufficientEvidence": c.insufficient,
                "pruned": c.pruned,
                "supportedRatio": round2(ratio(c.supported, judged)),
                "unverifiedRatio": round2(if judged == 0 { 0.0 } else { c.insufficient as f64 / judged as f64 }),
                "synthesis": l.synthesis, "thresholds": l.thresholds,
                "status": if l.passed { "pass" } else { "fail" },
            }),
        );
    }
    Some(json!({
        "phases": phases,
        "totals": {"extracted": total.extracted, "supported": total.supported,
                   "contradicted": total.contradicted, "insufficientEvidence": total.insufficient,
                   "pruned": total.pruned},
        "passed": ledgers.values().all(|l| l.passed),
    }))
}

fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claims_are_typed_like_the_loader() {
        assert_eq!(claim_type("Revenue grew 12% in 2025."), Some("numeric"));
        assert_eq!(
            claim_type("We expect demand to slow."),
            Some("forecast_assumption")
        );
        assert_eq!(
            claim_type("The team owns the pipeline."),
            Some("entity_fact")
        );
        assert_eq!(claim_type("The report is readable."), None);
        assert!(claim_id("x").starts_with("CLM-") && claim_id("x").len() == 14);
    }

    #[test]
    fn sentences_skip_markup_and_split_on_sentence_ends() {
        let s = sentences(
            "# Title\n- Sales grew 4% in Q1. Costs fell 2%.\n```\ncode 1\n```\n| a | b |\n|---|---|\n| x | 3 |\n1. Item one has 2 parts\nA wrapped\nsentence of 3 lines\nends here.\n",
        );
        assert_eq!(
            s,
            [
                "Sales grew 4% in Q1.",
                "Costs fell 2%.",
                "a; b",
                "x; 3",
                "Item one has 2 parts A wrapped sentence of 3 lines ends here."
            ]
        );
    }

    fn claim(status: &str, critical: bool) -> Claim {
        Claim {
            claim_id: format!("CLM-{status}"),
            text: status.into(),
            claim_type: "numeric".into(),
            criticality: if critical { "critical" } else { "important" }.into(),
            status: status.into(),
            lifecycle: vec!["extracted".into(), status.into()],
            evidence_refs: vec![],
        }
    }

    #[test]
    fn thresholds_and_pruning() {
        let v = ResolvedValidity::floor(crate::package::RiskLevel::Medium);
        let mut claims = vec![
            claim("supported", true),
            claim("supported", false),
            claim("insufficient_evidence", false),
            claim("insufficient_evidence", false),
        ];
        let f = failures(&claims, &v, false);
        assert_eq!(f.len(), 2, "{f:?}");
        assert_eq!(prune(&mut claims), 2);
        assert!(failures(&claims, &v, false).is_empty());
        assert_eq!(
            claims[2].lifecycle,
            ["extracted", "insufficient_evidence", "pruned"]
        );
        let mut with_contradiction = vec![claim("supported", false), claim("contradicted", true)];
        prune(&mut with_contradiction);
        let f = failures(&with_contradiction, &v, true);
        assert!(f.iter().any(|r| r.contains("contradicted")), "{f:?}");
        assert!(f.iter().any(|r| r.contains("critical claims")), "{f:?}");
    }
}
