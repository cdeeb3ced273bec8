//! Every example of the seed (`docs/specs/loom-notation.md`), decoded in both modes to the JSON the
//! seed means (written by hand), then re-encoded (snapshot) and read back.
#![allow(clippy::approx_constant)] // the seed writes `float: 3.14`

use loom_notation::{DecodeOptions, decode, decode_with, encode};
use serde_json::{Value, json};

/// Decodes in strict and lenient mode (the seed's examples mean the same in both), checks the
/// strict encoding reads back, and returns the encoding for a snapshot.
fn check(text: &str, expected: Value) -> String {
    assert_eq!(decode(text).unwrap(), expected, "strict");
    assert_eq!(
        decode_with(text, &DecodeOptions::lenient()).unwrap(),
        expected,
        "lenient"
    );
    let enc = encode(&expected).unwrap();
    assert_eq!(decode(&enc).unwrap(), expected, "round trip of\n{enc}");
    enc
}

#[test]
fn token_comparison() {
    let text = "intent: WORKFLOW_CREATE
confidence: 0.95
reasoning: User wants to create workflow
extractedEntities:
  trigger: schedule
  services: slack, email
  actions: send
";
    // The seed's JSON has `"actions": ["send"]`, but its Loom text `actions: send` can only
    // mean the string: a one-element inline array is indistinguishable from a scalar in the
    // seed's syntax (SPEC.md rule 13, ambiguity A2). The strict encoder writes `[send]`.
    let enc = check(
        text,
        json!({
            "intent": "WORKFLOW_CREATE",
            "confidence": 0.95,
            "reasoning": "User wants to create workflow",
            "extractedEntities": {
                "trigger": "schedule",
                "services": ["slack", "email"],
                "actions": "send"
            }
        }),
    );
    insta::assert_snapshot!("token_comparison", enc);
    let as_json = json!({"intent":"WORKFLOW_CREATE","confidence":0.95,"reasoning":"User wants to create workflow","extractedEntities":{"trigger":"schedule","services":["slack","email"],"actions":["send"]}});
    let enc = encode(&as_json).unwrap();
    assert!(enc.contains("  actions: [send]\n"), "{enc}");
    assert_eq!(decode(&enc).unwrap(), as_json);
}

#[test]
fn basic_key_value() {
    let enc = check(
        "key: value\nname: John Doe\nage: 30\nenabled: true\ncount: 42\n",
        json!({"key": "value", "name": "John Doe", "age": 30, "enabled": true, "count": 42}),
    );
    insta::assert_snapshot!("basic_key_value", enc);
}

#[test]
fn nested_objects() {
    let enc = check(
        "workflow:\n  name: My Workflow\n  settings:\n    retryOnError: true\n    timeout: 30\n",
        json!({"workflow": {"name": "My Workflow", "settings": {"retryOnError": true, "timeout": 30}}}),
    );
    insta::assert_snapshot!("nested_objects", enc);
}

#[test]
fn inline_array() {
    let enc = check(
        "tags: urgent, daily, automated\n",
        json!({"tags": ["urgent", "daily", "automated"]}),
    );
    insta::assert_snapshot!("inline_array", enc);
}

#[test]
fn multi_line_array() {
    let enc = check(
        "nodes:
  - id: schedule
    type: n8n-nodes-base.schedule
  - id: slack
    type: n8n-nodes-base.slack
",
        json!({"nodes": [
            {"id": "schedule", "type": "n8n-nodes-base.schedule"},
            {"id": "slack", "type": "n8n-nodes-base.slack"}
        ]}),
    );
    insta::assert_snapshot!("multi_line_array", enc);
}

#[test]
fn type_inference() {
    let text = "string: Hello World\nnumber: 42\nfloat: 3.14\nboolean: true\nnull: null\n";
    let v = decode(text).unwrap();
    assert!(v["number"].is_u64() && v["float"].is_f64());
    let enc = check(
        text,
        json!({"string": "Hello World", "number": 42, "float": 3.14, "boolean": true, "null": null}),
    );
    insta::assert_snapshot!("type_inference", enc);
}

#[test]
fn comments() {
    // "Inline comments not supported": the text after the value is part of the value.
    let enc = check(
        "# This is a comment\nkey: value  # Inline comments not supported\n",
        json!({"key": "value  # Inline comments not supported"}),
    );
    insta::assert_snapshot!("comments", enc);
}

#[test]
fn example_1_classifier_response() {
    let enc = check(
        "intent: WORKFLOW_CREATE
confidence: 0.95
reasoning: User wants to create a scheduled workflow with Slack notification
extractedEntities:
  trigger: schedule
  services: slack, email
  actions: send
",
        json!({
            "intent": "WORKFLOW_CREATE",
            "confidence": 0.95,
            "reasoning": "User wants to create a scheduled workflow with Slack notification",
            "extractedEntities": {"trigger": "schedule", "services": ["slack", "email"], "actions": "send"}
        }),
    );
    insta::assert_snapshot!("example_1", enc);
}

#[test]
fn example_2_enrichment_question() {
    let enc = check(
        "status: NEEDS_MORE_INFO
question: How should this workflow be triggered?
options: On a schedule, When a webhook is called, Manually
context:
  alreadyKnown: user wants Slack messages
  stillNeeded: trigger type, message content
",
        json!({
            "status": "NEEDS_MORE_INFO",
            "question": "How should this workflow be triggered?",
            "options": ["On a schedule", "When a webhook is called", "Manually"],
            "context": {
                "alreadyKnown": "user wants Slack messages",
                "stillNeeded": ["trigger type", "message content"]
            }
        }),
    );
    insta::assert_snapshot!("example_2", enc);
}

#[test]
fn example_3_workflow_plan() {
    let enc = check(
        "title: Daily Slack Message
summary: Sends morning greeting to #general at 9 AM daily
credentialsNeeded:
  - type: slackApi
    name: Slack Account
    requiredFor: Sending messages to Slack channels
workflow:
  name: Morning Greeting
  nodes:
    - id: schedule
      type: n8n-nodes-base.schedule
      name: Every Day at 9 AM
      parameters:
        rule:
          interval: daily
          time: 09:00
    - id: slack
      type: n8n-nodes-base.slack
      name: Send Message
      parameters:
        channel: #general
        text: Good morning team!
  connections:
    schedule:
      main:
        - node: slack
          type: main
          index: 0
",
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
                "connections": {"schedule": {"main": [{"node": "slack", "type": "main", "index": 0}]}}
            }
        }),
    );
    insta::assert_snapshot!("example_3", enc);
}

#[test]
fn duplicate_keys_last_wins_in_lenient_mode_only() {
    // Seed limitation 4: "No duplicate keys: Last value wins".
    let text = "a: 1\na: 2\n";
    assert_eq!(
        decode_with(text, &DecodeOptions::lenient()).unwrap(),
        json!({"a": 2})
    );
    let e = decode(text).unwrap_err();
    assert_eq!((e.code.as_str(), e.line, e.column), ("DUPLICATE_KEY", 2, 1));
}

#[test]
fn block_scalars_from_the_seeds_future_work() {
    let text = "lit: |\n  line one\n    indented\n\n  last\nfold: >\n  a long\n  sentence\n\n  next\nstrip: |-\n  x\nkeep: |+\n  y\n\nend: 1\n";
    let expected = json!({
        "lit": "line one\n  indented\n\nlast\n",
        "fold": "a long sentence\nnext\n",
        "strip": "x",
        "keep": "y\n\n",
        "end": 1
    });
    assert_eq!(decode(text).unwrap(), expected);
    assert_eq!(
        decode_with(text, &DecodeOptions::lenient()).unwrap(),
        expected
    );
}
