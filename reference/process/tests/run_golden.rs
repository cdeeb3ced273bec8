//! Golden event streams (insta) for deterministic runs, and byte-identical reruns.

mod run_common;
use loom_process::engine::event::to_jsonl;
use run_common::*;

const PROCESS: &str = r#"
name: brief-writer
schema_version: 2
risk_level: low
phase_mode: guided
persona: You are a careful analyst.
phases:
  - id: research
    description: Gather notes.
    depends_on: []
    deliverables: ["notes.md — research notes"]
  - id: outline
    description: Outline the brief.
    depends_on: []
    deliverables: ["outline.md — outline"]
  - id: write
    description: Write the brief.
    depends_on: [research, outline]
    is_synthesis: true
    deliverables: ["brief.md — the brief"]
    iteration:
      enabled: true
      max_attempts: 3
      strategy: targeted_remediation
      max_total_runner_invocations: 3
      iteration_budget: {max_wall_clock_seconds: 600, max_tokens: 10000, max_tool_calls: 10}
      gates:
        - id: no-placeholders
          type: artifact_regex
          blocking: true
          target: deliverables
          pattern: "\\[TBD\\]"
          expect_match: false
verification:
  rules:
    - name: no-todo
      description: No TODO markers
      check: "TODO"
      severity: error
      type: regex
    - name: claims-sourced
      description: Claims cite sources
      check: Every claim cites a source.
      severity: warning
      type: llm
      target: deliverables
"#;

const SCRIPT: &str = r#"
phases:
  research:
    - attempt: 1
      turns:
        - message: Writing notes.
          tokens: {prompt: 100, completion: 20}
          actions:
            - {id: r1, type: fs.write, path: notes.md, content: "Fact A [1]\n"}
        - message: Notes done.
  outline:
    - attempt: 1
      turns:
        - message: Outline.
          tokens: {prompt: 50, completion: 10}
          actions:
            - {id: o1, type: fs.write, path: outline.md, content: "1. A\n"}
            - {id: o2, type: fs.search, pattern: "A", paths: ["."]}
  write:
    - attempt: 1
      turns:
        - message: Draft.
          tokens: {prompt: 200, completion: 80}
          actions:
            - {id: w1, type: fs.write, path: brief.md, content: "Brief: A [TBD]\n"}
    - attempt: 2
      turns:
        - message: Fixing the placeholder.
          tokens: {prompt: 220, completion: 40}
          actions:
            - {id: w2, type: fs.applyPatch, path: brief.md, patch: "@@ -1 +1 @@\n-Brief: A [TBD]\n+Brief: A [1]\n"}
judges:
  claims-sourced:
    - verdict: pass
      reasons: [cited]
      tokens: {prompt: 30, completion: 5}
"#;

#[test]
fn golden_event_stream_of_a_retrying_run() {
    let (out, _dir) = quick(&process(PROCESS), scripted(SCRIPT));
    assert_eq!(out.status.as_str(), "completed");
    assert_eq!(out.phases["write"].attempts, 2);
    assert_eq!(out.started, ["outline", "research", "write"]);
    insta::assert_snapshot!("brief_writer_events", to_jsonl(&out.events));
}

#[test]
fn the_same_run_twice_gives_byte_identical_events() {
    let p = process(PROCESS);
    let (a, _d1) = quick(&p, scripted(SCRIPT));
    // Wave 1 (outline, research) runs concurrently: repeat to give thread timing a chance.
    for _ in 0..20 {
        let (b, _d2) = quick(&p, scripted(SCRIPT));
        assert_eq!(to_jsonl(&a.events), to_jsonl(&b.events));
    }
    assert!(a.events.len() > 40);
}
