//! The benchmark corpus: the seed's examples, real LOOM/Loop Engine/process shapes, generated
//! shapes from a fixed seed, and adversarial values. Same seed, same values, same bytes.

use rand_chacha::ChaCha20Rng;
use rand_core::{Rng, SeedableRng};
use serde_json::{Map, Value, json};

/// Seed of every generated dataset ("LOOM" in ASCII).
pub const SEED: u64 = 0x4c4f_4f4d;

/// One document: encoded, decoded and counted on its own.
#[derive(Debug, Clone, PartialEq)]
pub struct Doc {
    /// Name in reports (first lossy document).
    pub label: String,
    /// The JSON value.
    pub value: Value,
}

/// A named set of documents whose counts are summed.
#[derive(Debug, Clone, PartialEq)]
pub struct Dataset {
    /// Stable name (golden key).
    pub name: String,
    /// One line for the report.
    pub description: String,
    /// The documents.
    pub docs: Vec<Doc>,
}

impl Dataset {
    fn new(name: &str, description: &str, docs: Vec<Doc>) -> Dataset {
        Dataset {
            name: name.to_string(),
            description: description.to_string(),
            docs,
        }
    }

    fn single(name: &str, description: &str, value: Value) -> Dataset {
        Dataset::new(name, description, vec![doc(name, value)])
    }
}

fn doc(label: &str, value: Value) -> Doc {
    Doc {
        label: label.to_string(),
        value,
    }
}

/// Every built-in dataset, generated ones from `seed`.
pub fn builtin(seed: u64) -> Vec<Dataset> {
    // Each generator has its own stream, so adding one does not shift the others.
    let rng = |stream: u64| {
        let mut r = ChaCha20Rng::seed_from_u64(seed);
        r.set_stream(stream);
        r
    };
    vec![
        Dataset::new(
            "seed-examples",
            "loom-notation.md: the 186-char classifier JSON and Examples 1-3, as JSON values",
            seed_examples(),
        ),
        Dataset::new(
            "loom-envelopes",
            "signed LOOM v1.1 envelopes: distinct valid cases of vectors/v1/envelope-signature.json and envelope-validation.json",
            envelopes(),
        ),
        Dataset::new(
            "loop-engine-events",
            "Loop Engine events, tool actions, plan, task config, judge result, evidence pack (loop-engine-protocols.md)",
            loop_engine_events(),
        ),
        Dataset::new(
            "process-definitions",
            "process.yaml definitions from loom-process-packages.md, as JSON values",
            process_definitions(),
        ),
        Dataset::single(
            "flat-records-100",
            "100 uniform flat records (8 scalar fields)",
            flat_records(&mut rng(1), 100),
        ),
        Dataset::single(
            "flat-records-2000",
            "2,000 uniform flat records (8 scalar fields)",
            flat_records(&mut rng(2), 2000),
        ),
        Dataset::single(
            "time-series",
            "metric time series: 240 points of timestamp + 4 floats",
            time_series(&mut rng(3), 240),
        ),
        Dataset::single(
            "nested-config",
            "service configuration: nested objects, short lists, mixed scalars",
            nested_config(&mut rng(4)),
        ),
        Dataset::single(
            "workflow-graph",
            "deeply nested workflow graph (branches and sub-steps to depth 7)",
            workflow_graph(&mut rng(5)),
        ),
        Dataset::single(
            "event-log",
            "150 semi-uniform log events: common fields plus optional, varying ones",
            event_log(&mut rng(6), 150),
        ),
        Dataset::single(
            "string-heavy",
            "40 records dominated by prose (titles, bodies, tag lists)",
            string_heavy(&mut rng(7), 40),
        ),
        Dataset::new(
            "agent-messages",
            "30 small agent messages (each < 100 tokens), one document each",
            agent_messages(&mut rng(8), 30),
        ),
        Dataset::new(
            "plsp-state-maps",
            "flat agent-loop state maps (PLSP v0.5 §4 examples as JSON, plus 40 generated monitor states)",
            plsp_state_maps(&mut rng(9), 40),
        ),
        Dataset::new(
            "adversarial",
            "strings that look like other types or syntax, edge numbers, empty and 1-element containers",
            adversarial(),
        ),
    ]
}

/// Flat state maps, the shape PLSP is made for: the spec's example states as JSON values and
/// `n` generated monitor-loop states (a handful of short identifiers with numbers and
/// quote-free strings). PLSP numbers are exact decimals without an integer/float kind, so
/// numbers are written the way a PLSP-native system emits them: an integral value as an
/// integer (`31`, not `31.0`).
pub fn plsp_state_maps(rng: &mut ChaCha20Rng, n: usize) -> Vec<Doc> {
    // The variable parts of the spec's example blocks (§4.1, §4.3, §4.5, §4.6); their `!`/`>`
    // commands are not state and have no JSON counterpart here.
    let mut docs = vec![
        doc("spec-4.1", json!({"p": "run", "t": 75, "l": 70})),
        doc("spec-4.3", json!({"i": "user_input", "c": 10})),
        doc("spec-4.5", json!({"t": 75})),
        doc("spec-4.6", json!({"u": "op", "m": "CPU High"})),
    ];
    for i in 0..n {
        let status = pick(rng, &["ok", "warn", "hot", "cold", "idle"]);
        let mode = pick(rng, &["auto", "manual", "eco"]);
        docs.push(doc(
            &format!("monitor-{i:02}"),
            json!({
                "t": plsp_number(decimal(rng, 15.0, 35.0, 1)),
                "h": below(rng, 100),
                "s": status,
                "m": mode,
                "n": below(rng, 20),
                "c": i,
                "zone": pick(rng, &["lab", "office", "server room", "hall"]),
            }),
        ));
    }
    docs
}

fn plsp_number(x: f64) -> Value {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        // Integral and exactly representable: the cast is lossless.
        json!(x as i64)
    } else {
        json!(x)
    }
}

/// The JSON of the seed's "Token Comparison" section, verbatim (the seed says 186 chars; it is 181).
pub const SEED_CLASSIFIER_JSON: &str = r#"{"intent":"WORKFLOW_CREATE","confidence":0.95,"reasoning":"User wants to create workflow","extractedEntities":{"trigger":"schedule","services":["slack","email"],"actions":["send"]}}"#;

/// The Loom text the seed sets against [`SEED_CLASSIFIER_JSON`], verbatim (lossy: rule 13 A2).
pub const SEED_CLASSIFIER_LOOM: &str = "intent: WORKFLOW_CREATE\nconfidence: 0.95\nreasoning: User wants to create workflow\nextractedEntities:\n  trigger: schedule\n  services: slack, email\n  actions: send\n";

/// The seed's documents: the token-comparison JSON and Examples 1–3 (labels are stable).
pub fn seed_examples() -> Vec<Doc> {
    let comparison: Value =
        serde_json::from_str(SEED_CLASSIFIER_JSON).expect("the seed's JSON is valid");
    vec![
        doc("token-comparison", comparison),
        doc(
            "example-1-classifier",
            json!({
                "intent": "WORKFLOW_CREATE",
                "confidence": 0.95,
                "reasoning": "User wants to create a scheduled workflow with Slack notification",
                "extractedEntities": {
                    "trigger": "schedule",
                    "services": ["slack", "email"],
                    "actions": ["send"]
                }
            }),
        ),
        doc(
            "example-2-enrichment",
            json!({
                "status": "NEEDS_MORE_INFO",
                "question": "How should this workflow be triggered?",
                "options": ["On a schedule", "When a webhook is called", "Manually"],
                "context": {
                    "alreadyKnown": "user wants Slack messages",
                    "stillNeeded": ["trigger type", "message content"]
                }
            }),
        ),
        doc(
            "example-3-workflow-plan",
            json!({
                "title": "Daily Slack Message",
                "summary": "Sends morning greeting to #general at 9 AM daily",
                "credentialsNeeded": [
                    {"type": "slackApi", "name": "Slack Account", "requiredFor": "Sending messages to Slack channels"}
                ],
                "workflow": {
                    "name": "Morning Greeting",
                    "nodes": [
                        {"id": "schedule", "type": "n8n-nodes-base.schedule", "name": "Every Day at 9 AM",
                         "parameters": {"rule": {"interval": "daily", "time": "09:00"}}},
                        {"id": "slack", "type": "n8n-nodes-base.slack", "name": "Send Message",
                         "parameters": {"channel": "#general", "text": "Good morning team!"}}
                    ],
                    "connections": {
                        "schedule": {"main": [{"node": "slack", "type": "main", "index": 0}]}
                    }
                }
            }),
        ),
    ]
}

const ENVELOPE_SIGNATURE: &str = include_str!("../../../vectors/v1/envelope-signature.json");
const ENVELOPE_VALIDATION: &str = include_str!("../../../vectors/v1/envelope-validation.json");

/// Distinct signed envelopes of the valid cases of the two envelope vector files.
pub fn envelopes() -> Vec<Doc> {
    let mut docs: Vec<Doc> = Vec::new();
    for (file, text) in [
        ("envelope-signature", ENVELOPE_SIGNATURE),
        ("envelope-validation", ENVELOPE_VALIDATION),
    ] {
        let v: Value = serde_json::from_str(text).expect("committed vector file is JSON");
        let groups = v["groups"].as_array().cloned().unwrap_or_default();
        for test in groups
            .iter()
            .flat_map(|g| g["tests"].as_array().cloned().unwrap_or_default())
        {
            let env = &test["envelope"];
            if test["result"] != "valid" || !env["signature"].is_object() {
                continue;
            }
            if docs.iter().any(|d| &d.value == env) {
                continue;
            }
            let id = test["id"].as_str().unwrap_or("?");
            docs.push(doc(&format!("{file}/{id}"), env.clone()));
        }
    }
    docs
}

/// Realistic Loop Engine traffic, one document per event or schema instance.
pub fn loop_engine_events() -> Vec<Doc> {
    let run = "7c0e2f64-5d1a-4b8e-9f3a-2e6d8c1b4a90";
    let ev = |id: &str, seq: u64, ts: u64, ty: &str, payload: Value| json!({"id": id, "runId": run, "ts": ts, "seq": seq, "type": ty, "payload": payload});
    vec![
        doc(
            "event-state-changed",
            ev(
                "e3b1c2d4-0001-4a6b-8c9d-0e1f2a3b4c5d",
                1,
                1_710_000_000_000,
                "StateChanged",
                json!({"from": "idle", "to": "planning", "reason": "task started"}),
            ),
        ),
        doc(
            "event-user-message",
            ev(
                "e3b1c2d4-0002-4a6b-8c9d-0e1f2a3b4c5d",
                2,
                1_710_000_000_120,
                "UserMessage",
                json!({"text": "The CI is red on main: fix the failing tests in packages/api and keep the diff small."}),
            ),
        ),
        doc(
            "event-plan-updated",
            ev(
                "e3b1c2d4-0003-4a6b-8c9d-0e1f2a3b4c5d",
                3,
                1_710_000_002_480,
                "PlanUpdated",
                json!({"version": 1, "goal": "Fix failing tests", "steps": [
                    {"id": "step-1", "title": "Run tests", "criteria": ["tests pass"], "status": "in_progress", "done": false, "hardStop": false},
                    {"id": "step-2", "title": "Patch the date parser", "criteria": ["parser handles ISO week dates"], "status": "pending", "done": false, "hardStop": false},
                    {"id": "step-3", "title": "Commit", "criteria": ["git clean"], "status": "pending", "done": false, "hardStop": true}
                ]}),
            ),
        ),
        doc(
            "event-tool-call-started",
            ev(
                "e3b1c2d4-0004-4a6b-8c9d-0e1f2a3b4c5d",
                4,
                1_710_000_002_900,
                "ToolCallStarted",
                json!({"action": {"id": "tool-0f3a9c", "type": "terminal.run", "program": "npm", "args": ["test", "--", "--runInBand"], "cwd": "packages/api"}}),
            ),
        ),
        doc(
            "event-tool-call-finished",
            ev(
                "e3b1c2d4-0005-4a6b-8c9d-0e1f2a3b4c5d",
                5,
                1_710_000_041_377,
                "ToolCallFinished",
                json!({"toolCallId": "tool-0f3a9c", "result": {"ok": false, "summary": "2 of 148 tests failed in src/date.test.ts", "exitCode": 1,
                "artifacts": {"log": ".loop/logs/tool-0f3a9c.txt"}, "raw": {"failed": ["parses ISO week dates", "rejects week 54"], "durationMs": 38412}}}),
            ),
        ),
        doc(
            "event-observation",
            ev(
                "e3b1c2d4-0006-4a6b-8c9d-0e1f2a3b4c5d",
                6,
                1_710_000_041_380,
                "Observation",
                json!({"source": "tool-0f3a9c", "text": "parseIsoWeek returns week 53 for 2021-01-03; expected week 53 of 2020."}),
            ),
        ),
        doc(
            "event-agent-action-proposed",
            ev(
                "e3b1c2d4-0007-4a6b-8c9d-0e1f2a3b4c5d",
                7,
                1_710_000_047_002,
                "AgentActionProposed",
                json!({"action": {"id": "tool-1b7d20", "type": "fs.applyPatch", "path": "packages/api/src/date.ts",
                "patch": "@@ -41,7 +41,7 @@\n-  const week = Math.floor(day / 7) + 1;\n+  const week = Math.floor((day + offset) / 7) + 1;\n"}, "needsConfirmation": false}),
            ),
        ),
        doc(
            "event-tool-call-chunk",
            ev(
                "e3b1c2d4-0008-4a6b-8c9d-0e1f2a3b4c5d",
                8,
                1_710_000_060_015,
                "ToolCallChunk",
                json!({"toolCallId": "tool-2c8e31", "stream": "stdout", "chunk": "PASS src/date.test.ts (4.2 s)\n"}),
            ),
        ),
        doc(
            "event-judge-result",
            ev(
                "e3b1c2d4-0009-4a6b-8c9d-0e1f2a3b4c5d",
                9,
                1_710_000_071_240,
                "JudgeResult",
                json!({"status": "pass", "reasons": [], "evidence": ["events:tool-2c8e31", "timeline:456"]}),
            ),
        ),
        doc(
            "event-error",
            ev(
                "e3b1c2d4-0010-4a6b-8c9d-0e1f2a3b4c5d",
                10,
                1_710_000_072_001,
                "Error",
                json!({"code": "BUDGET_EXCEEDED", "message": "maxToolCalls reached (200)", "recoverable": false}),
            ),
        ),
        doc(
            "task-config",
            json!({
            "taskId": "3f9a1c2e-8b7d-4e6f-a5c4-1d2e3f4a5b6c", "workspace": "D:/repo", "goal": "Fix failing tests",
            "completion": ["tests pass", "git clean"],
            "budget": {"maxIterations": 30, "maxToolCalls": 200, "maxWallTimeMs": 3_600_000},
            "riskPolicy": {"allowNetwork": false, "commandPolicy": "confirm", "pathPolicy": "workspace_only"},
            "autonomy": "auto"}),
        ),
        doc(
            "judge-rule",
            json!({"id": "tests_pass", "type": "command", "command": ["npm", "test"], "successMatch": "PASS", "failMatch": "FAIL"}),
        ),
        doc(
            "evidence-pack",
            json!({"iteration": 5, "stepId": "step-2", "toolCalls": ["tool-1b7d20", "tool-2c8e31"], "diff": "patch-7f3e",
            "errors": [], "summary": "fixed ISO week offset in parseIsoWeek; 148/148 tests pass"}),
        ),
    ]
}

/// Three process definitions from loom-process-packages.md (quick start, v2 minimal, a loop).
pub fn process_definitions() -> Vec<Doc> {
    let contract = json!({
        "enabled": true,
        "claim_extraction": {"enabled": true},
        "critical_claim_types": ["numeric", "date", "entity_fact"],
        "min_supported_ratio": 0.75,
        "max_unverified_ratio": 0.25,
        "max_contradicted_count": 0,
        "prune_mode": "rewrite_uncertainty",
        "final_gate": {"enforce_verified_context_only": true, "synthesis_min_verification_tier": 2, "critical_claim_support_ratio": 1.0}
    });
    vec![
        doc(
            "quick-start",
            json!({
                "name": "my-process",
                "version": "1.0",
                "schema_version": 2,
                "description": "One-paragraph description of what this process does and when to use it.\n",
                "author": "Your Name",
                "tags": ["domain", "keywords"],
                "persona": "You are a [role description]. You [approach description].\n[Constraints and style guidance].\n",
                "phase_mode": "guided",
                "risk_level": "medium",
                "validity_contract": contract,
                "phases": [
                    {"id": "research", "description": "What this phase accomplishes and how.\n", "depends_on": [],
                     "model_tier": 2, "verification_tier": 1,
                     "acceptance_criteria": "Concrete, measurable criteria for phase completion.\n",
                     "deliverables": ["research-notes.md — description of this deliverable"]},
                    {"id": "synthesize", "description": "Synthesize research into actionable output.\n", "depends_on": ["research"],
                     "model_tier": 3, "verification_tier": 2,
                     "acceptance_criteria": "Criteria for the synthesis phase.\n",
                     "deliverables": ["final-report.md — the main output document"]}
                ]
            }),
        ),
        doc(
            "v2-minimal",
            json!({
                "schema_version": 2,
                "verification": {
                    "policy": {"mode": "llm_first", "output_contract": {"required_fields":
                        ["passed", "outcome", "reason_code", "severity_class", "confidence", "feedback", "issues", "metadata"]}},
                    "remediation": {"default_strategy": "targeted-remediation"}
                },
                "evidence": {"record_schema": {
                    "required_fields": ["evidence_id", "tool", "source_url", "created_at", "quality"],
                    "facets": ["target", "entity", "subject", "region", "category"]}},
                "validity_contract": {
                    "enabled": true, "claim_extraction": {"enabled": true},
                    "min_supported_ratio": 0.75, "max_unverified_ratio": 0.25, "max_contradicted_count": 0,
                    "prune_mode": "rewrite_uncertainty",
                    "final_gate": {"enforce_verified_context_only": true, "synthesis_min_verification_tier": 2, "critical_claim_support_ratio": 1.0}
                },
                "prompt_contracts": {"evidence_contract": {"enabled": true, "applies_to_phases": ["*"]}}
            }),
        ),
        doc(
            "rewrite-loop",
            json!({
                "name": "draft-rewrite",
                "version": "1.2",
                "schema_version": 2,
                "description": "Rewrite a draft until it reads naturally and has no placeholders.",
                "phase_mode": "strict",
                "risk_level": "low",
                "phases": [
                    {"id": "rewrite", "description": "Improve draft quality.", "deliverables": ["draft.md — rewritten draft"],
                     "iteration": {
                        "enabled": true, "max_attempts": 4, "strategy": "targeted_remediation",
                        "stop_on_no_improvement_attempts": 2, "max_total_runner_invocations": 6,
                        "max_replans_after_exhaustion": 2, "replan_on_exhaustion": true,
                        "iteration_budget": {"max_wall_clock_seconds": 600, "max_tokens": 100_000, "max_tool_calls": 20},
                        "gates": [
                            {"id": "score", "type": "tool_metric", "blocking": true, "tool": "humanize_writing",
                             "metric_path": "report.humanization_score", "operator": "gte", "value": 80},
                            {"id": "no-placeholders", "type": "artifact_regex", "blocking": true, "target": "deliverables",
                             "pattern": "\\[TBD\\]|\\[TODO\\]|\\[PLACEHOLDER\\]", "expect_match": false}
                        ]}},
                    {"id": "review", "description": "Final read-through and sign-off.", "depends_on": ["rewrite"],
                     "model_tier": 3, "verification_tier": 2, "is_critical_path": true, "is_synthesis": true,
                     "acceptance_criteria": "No blocking gate fails; the summary lists every change.",
                     "deliverables": ["review.md — change summary"],
                     "validity_contract": {"min_supported_ratio": 0.8, "max_unverified_ratio": 0.2,
                        "final_gate": {"synthesis_min_verification_tier": 2}}}
                ]
            }),
        ),
    ]
}

// ---- generated shapes -------------------------------------------------------------------

fn below(rng: &mut ChaCha20Rng, n: u64) -> u64 {
    rng.next_u64() % n
}

fn pick<'a>(rng: &mut ChaCha20Rng, items: &[&'a str]) -> &'a str {
    items[below(rng, items.len() as u64) as usize]
}

/// A float with `decimals` decimal digits in [lo, hi) that prints as such.
fn decimal(rng: &mut ChaCha20Rng, lo: f64, hi: f64, decimals: i32) -> f64 {
    let scale = 10f64.powi(decimals);
    let steps = ((hi - lo) * scale) as u64;
    let x = lo + below(rng, steps.max(1)) as f64 / scale;
    (x * scale).round() / scale
}

const FIRST: &[&str] = &[
    "Ada", "Bruno", "Chen", "Dara", "Elif", "Femi", "Greta", "Hiro", "Ines", "Jonas", "Kavya",
    "Luis", "Mira", "Nils", "Olu", "Priya", "Quinn", "Rosa", "Sven", "Tala",
];
const LAST: &[&str] = &[
    "Okafor",
    "Lindqvist",
    "Moreau",
    "Tanaka",
    "Silva",
    "Kowalski",
    "Haddad",
    "Nguyen",
    "Fischer",
    "Mensah",
    "Rossi",
    "Patel",
];
const CITIES: &[&str] = &[
    "Lisbon", "Nairobi", "Osaka", "Toronto", "Berlin", "Lima", "Pune", "Oslo", "Austin", "Seoul",
];
const WORDS: &[&str] = &[
    "the",
    "invoice",
    "pipeline",
    "review",
    "customer",
    "deploy",
    "latency",
    "report",
    "quarterly",
    "agent",
    "schedule",
    "approve",
    "budget",
    "incident",
    "migration",
    "draft",
    "summary",
    "thread",
    "priority",
    "dataset",
    "cache",
    "retry",
    "signal",
    "owner",
    "before",
    "after",
    "because",
    "with",
    "and",
    "for",
    "team",
    "status",
    "release",
    "notes",
    "feedback",
];

fn date(rng: &mut ChaCha20Rng) -> String {
    format!("2025-{:02}-{:02}", 1 + below(rng, 12), 1 + below(rng, 28))
}

fn sentence(rng: &mut ChaCha20Rng, min: u64, max: u64) -> String {
    let n = min + below(rng, max - min + 1);
    let words: Vec<&str> = (0..n).map(|_| pick(rng, WORDS)).collect();
    let mut s = words.join(" ");
    if let Some(first) = s.get(0..1) {
        s.replace_range(0..1, &first.to_uppercase());
    }
    s.push('.');
    s
}

/// `{"records": [...]}` of uniform flat rows.
pub fn flat_records(rng: &mut ChaCha20Rng, n: usize) -> Value {
    let rows: Vec<Value> = (0..n)
        .map(|i| {
            let first = pick(rng, FIRST);
            let last = pick(rng, LAST);
            json!({
                "id": 1000 + i,
                "name": format!("{first} {last}"),
                "email": format!("{}.{}@example.com", first.to_lowercase(), last.to_lowercase()),
                "age": 18 + below(rng, 60),
                "active": below(rng, 4) != 0,
                "score": decimal(rng, 0.0, 100.0, 1),
                "city": pick(rng, CITIES),
                "signup": date(rng),
            })
        })
        .collect();
    json!({ "records": rows })
}

/// A metric series: header plus `n` points.
pub fn time_series(rng: &mut ChaCha20Rng, n: usize) -> Value {
    let start = 1_735_689_600u64; // 2025-01-01T00:00:00Z
    let points: Vec<Value> = (0..n)
        .map(|i| {
            json!({
                "ts": start + 60 * i as u64,
                "cpu": decimal(rng, 0.05, 0.98, 3),
                "mem_mb": 2048 + below(rng, 4096),
                "rps": decimal(rng, 50.0, 900.0, 1),
                "p99_ms": decimal(rng, 4.0, 250.0, 2),
            })
        })
        .collect();
    json!({"metric": "api.node-7", "interval_s": 60, "unit": {"cpu": "ratio", "mem_mb": "MiB", "rps": "req/s", "p99_ms": "ms"}, "points": points})
}

/// A nested service configuration.
pub fn nested_config(rng: &mut ChaCha20Rng) -> Value {
    let mut services = Map::new();
    for name in [
        "gateway",
        "auth",
        "billing",
        "search",
        "notifier",
        "scheduler",
    ] {
        let port = 8000 + below(rng, 1000);
        services.insert(
            name.to_string(),
            json!({
                "image": format!("registry.example.com/{name}:{}.{}.{}", 1 + below(rng, 3), below(rng, 20), below(rng, 10)),
                "replicas": 1 + below(rng, 6),
                "ports": [port, port + 1],
                "env": {"LOG_LEVEL": pick(rng, &["info", "debug", "warn"]), "REGION": pick(rng, &["eu-west-1", "us-east-2", "ap-south-1"]), "FEATURE_FLAGS": "beta-ui,fast-path"},
                "resources": {"limits": {"cpu": format!("{}m", 250 * (1 + below(rng, 8))), "memory": format!("{}Mi", 256 * (1 + below(rng, 8)))},
                              "requests": {"cpu": "100m", "memory": "128Mi"}},
                "healthcheck": {"path": "/healthz", "interval_s": 10, "timeout_s": 2, "retries": 3},
                "depends_on": if name == "gateway" { json!(["auth", "search"]) } else { json!(["gateway"]) },
            }),
        );
    }
    json!({
        "version": 3,
        "project": "loom-demo",
        "defaults": {"restart": "on-failure", "logging": {"driver": "json-file", "options": {"max-size": "10m", "max-file": 3}}},
        "services": services,
        "networks": {"frontend": {"driver": "bridge"}, "backend": {"driver": "bridge", "internal": true}},
        "volumes": {"pgdata": {}, "cache": {"driver": "local"}},
    })
}

/// A workflow graph whose steps nest branches of sub-steps.
pub fn workflow_graph(rng: &mut ChaCha20Rng) -> Value {
    fn step(rng: &mut ChaCha20Rng, path: &str, depth: u32) -> Value {
        let kind = pick(rng, &["task", "decision", "parallel", "loop"]);
        let mut s = json!({
            "id": format!("step-{path}"),
            "kind": kind,
            "name": sentence(rng, 2, 4),
            "timeout_s": 30 * (1 + below(rng, 10)),
            "retry": {"max": below(rng, 4), "backoff": pick(rng, &["fixed", "exponential"])},
        });
        if depth < 7 {
            let n = if depth < 2 {
                2
            } else {
                1 + below(rng, 2) as usize
            };
            let children: Vec<Value> = (0..n)
                .map(|i| step(rng, &format!("{path}.{}", i + 1), depth + 1))
                .collect();
            s["branches"] = json!([{"when": format!("outcome == \"{}\"", pick(rng, &["ok", "retry", "escalate"])), "steps": children}]);
        } else {
            s["action"] = json!({"tool": pick(rng, &["http.request", "fs.write", "terminal.run"]), "args": {"target": format!("res-{}", below(rng, 100))}});
        }
        s
    }
    json!({"workflow": {"id": "wf-nested-1", "version": 2, "root": step(rng, "1", 1)}})
}

/// Log events that share a core but carry varying optional fields.
pub fn event_log(rng: &mut ChaCha20Rng, n: usize) -> Value {
    let events: Vec<Value> = (0..n)
        .map(|i| {
            let level = pick(rng, &["info", "info", "info", "warn", "error", "debug"]);
            let mut e = json!({
                "ts": format!("2025-03-14T09:{:02}:{:02}.{:03}Z", i / 60 % 60, i % 60, below(rng, 1000)),
                "level": level,
                "service": pick(rng, &["gateway", "auth", "billing", "search"]),
                "msg": sentence(rng, 3, 8),
            });
            if below(rng, 2) == 0 {
                e["request_id"] = json!(format!("req-{:08x}", rng.next_u32()));
            }
            if level == "error" {
                e["error"] = json!({"code": pick(rng, &["E_TIMEOUT", "E_DENIED", "E_CONFLICT"]), "retryable": below(rng, 2) == 0});
            }
            if below(rng, 3) == 0 {
                e["duration_ms"] = json!(below(rng, 2000));
            }
            if below(rng, 5) == 0 {
                e["tags"] = json!([pick(rng, &["canary", "batch", "slow"]), pick(rng, &["eu", "us"])]);
            }
            e
        })
        .collect();
    json!({ "events": events })
}

/// Records dominated by prose.
pub fn string_heavy(rng: &mut ChaCha20Rng, n: usize) -> Value {
    let items: Vec<Value> = (0..n)
        .map(|i| {
            let paragraphs: Vec<String> = (0..2 + below(rng, 2))
                .map(|_| sentence(rng, 12, 30))
                .collect();
            json!({
                "id": format!("doc-{i:04}"),
                "title": sentence(rng, 4, 9),
                "author": format!("{} {}", pick(rng, FIRST), pick(rng, LAST)),
                "body": paragraphs.join(" "),
                "tags": [pick(rng, WORDS), pick(rng, WORDS), pick(rng, WORDS)],
            })
        })
        .collect();
    json!({ "documents": items })
}

/// Small agent messages, one document each.
pub fn agent_messages(rng: &mut ChaCha20Rng, n: usize) -> Vec<Doc> {
    (0..n)
        .map(|i| {
            let v = match i % 3 {
                0 => json!({"role": "assistant", "intent": pick(rng, &["TASK_ACCEPT", "TASK_DECLINE", "NEEDS_INFO"]),
                    "confidence": decimal(rng, 0.5, 1.0, 2), "text": sentence(rng, 5, 12)}),
                1 => json!({"role": "tool", "tool": pick(rng, &["search", "calendar.lookup", "fs.read"]),
                    "ok": below(rng, 5) != 0, "summary": sentence(rng, 4, 9), "items": below(rng, 20)}),
                _ => json!({"role": "user", "text": sentence(rng, 6, 14), "thread": format!("thr-{}", below(rng, 900) + 100),
                    "mentions": [format!("@{}", pick(rng, FIRST).to_lowercase())]}),
            };
            doc(&format!("message-{i:02}"), v)
        })
        .collect()
}

/// Values that trip naive text formats; each alone, inside an object and inside an array.
pub fn adversarial() -> Vec<Doc> {
    let values: Vec<(&str, Value)> = vec![
        ("string-42", json!("42")),
        ("string-007", json!("007")),
        ("string-true", json!("true")),
        ("string-null", json!("null")),
        ("string-empty", json!("")),
        ("string-padded", json!(" x ")),
        ("string-comma", json!("a, b")),
        ("string-dash-item", json!("- item")),
        ("string-hash", json!("#tag")),
        ("string-key-value", json!("k: v")),
        ("string-newlines", json!("line one\nline two\n")),
        ("string-unicode", json!("naïve café — 東京 🚀")),
        ("big-integer", json!(18_446_744_073_709_551_615u64)),
        ("big-negative", json!(-9_223_372_036_854_775_808i64)),
        ("minus-zero", json!(-0.0)),
        ("float-1e21", json!(1e21)),
        ("empty-array", json!([])),
        ("one-element-array", json!(["only"])),
        ("nested-empty-objects", json!({"a": {"b": {}}, "c": {}})),
    ];
    let mut docs: Vec<Doc> = values
        .iter()
        .map(|(label, v)| doc(&format!("{label}/in-object"), json!({"value": v})))
        .collect();
    docs.push(doc(
        "all/in-array",
        Value::Array(values.iter().map(|(_, v)| v.clone()).collect()),
    ));
    docs.extend(
        values
            .iter()
            .map(|(label, v)| doc(&format!("{label}/alone"), v.clone())),
    );
    docs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(sets: &[Dataset]) -> Vec<(String, String)> {
        sets.iter()
            .flat_map(|d| {
                d.docs
                    .iter()
                    .map(|x| (x.label.clone(), serde_json::to_string(&x.value).unwrap()))
            })
            .collect()
    }

    #[test]
    fn same_seed_same_bytes() {
        assert_eq!(bytes(&builtin(SEED)), bytes(&builtin(SEED)));
    }

    #[test]
    fn another_seed_changes_generated_data_only() {
        let a = builtin(SEED);
        let b = builtin(SEED + 1);
        assert_eq!(a[0], b[0], "seed examples do not depend on the seed");
        assert_ne!(
            bytes(&a[4..5]),
            bytes(&b[4..5]),
            "generated records depend on the seed"
        );
    }

    #[test]
    fn names_and_labels_are_unique() {
        let sets = builtin(SEED);
        let mut names: Vec<&str> = sets.iter().map(|d| d.name.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), sets.len());
        for d in &sets {
            let mut labels: Vec<&str> = d.docs.iter().map(|x| x.label.as_str()).collect();
            labels.sort_unstable();
            labels.dedup();
            assert_eq!(labels.len(), d.docs.len(), "{}", d.name);
        }
    }

    #[test]
    fn seed_texts_have_their_real_lengths_and_envelopes_are_signed() {
        // The seed claims 186 and 114 characters; the texts it prints have 181 and 161.
        assert_eq!(SEED_CLASSIFIER_JSON.chars().count(), 181);
        assert_eq!(SEED_CLASSIFIER_LOOM.trim_end().chars().count(), 161);
        let env = envelopes();
        assert!(env.len() >= 5);
        assert!(
            env.iter()
                .all(|d| d.value["signature"]["value"].is_string())
        );
    }
}
