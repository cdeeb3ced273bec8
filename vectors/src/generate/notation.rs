//! Loom notation vectors (`reference/notation/SPEC.md`, seed `docs/specs/loom-notation.md`):
//! `notation-decode`, `notation-encode`, `notation-errors`. Every expectation below is a
//! literal written from SPEC.md and the seed, never produced by `loom-notation`.

#![allow(clippy::approx_constant)] // the seed writes `float: 3.14`

use super::schema::{AreaSchema, any, string};
use super::{Case, FileBuilder};
use serde_json::{Value, json};

/// Every error code `notation-decode` may name (SPEC.md rule 11).
pub const DECODE_ERRORS: &[&str] = &[
    "BAD_INDENT",
    "TAB_INDENT",
    "DUPLICATE_KEY",
    "UNTERMINATED_QUOTE",
    "BAD_ESCAPE",
    "MIXED_BLOCK",
    "EXPECTED_KEY",
    "EXPECTED_ITEM",
    "MISSING_VALUE",
    "UNTERMINATED_BRACKET",
    "EMPTY_ITEM",
    "TRAILING_CHARACTERS",
    "RESERVED_SCALAR",
    "NUMBER_OUT_OF_RANGE",
    "INVALID_CHARACTER",
    "TRAILING_CONTENT",
    "EMPTY_DOCUMENT",
    "DEPTH_LIMIT",
];

fn decode_inputs() -> Vec<(&'static str, Value)> {
    vec![
        ("text", string()),
        ("mode", json!({"enum": ["strict", "lenient"]})),
    ]
}

/// Schema of `notation-decode`.
pub fn decode_schema() -> AreaSchema {
    AreaSchema {
        kinds: vec!["notation-decode"],
        inputs: decode_inputs(),
        required: vec!["text", "mode"],
        expected: any(),
        errors: DECODE_ERRORS.to_vec(),
    }
}

/// Schema of `notation-errors`.
pub fn errors_schema() -> AreaSchema {
    AreaSchema {
        kinds: vec!["notation-decode"],
        inputs: decode_inputs(),
        required: vec!["text", "mode"],
        expected: any(),
        errors: DECODE_ERRORS.to_vec(),
    }
}

/// Schema of `notation-encode`.
pub fn encode_schema() -> AreaSchema {
    AreaSchema {
        kinds: vec!["notation-encode"],
        inputs: vec![("value", any())],
        required: vec!["value"],
        expected: string(),
        errors: vec!["TOO_DEEP"],
    }
}

fn rule(n: &str) -> String {
    format!("SPEC.md rule {n}")
}

fn case(id: &str, comment: &str, flags: &[&str], rules: &[&str]) -> Case {
    let spec: Vec<String> = rules
        .iter()
        .map(|r| {
            if r.starts_with("seed") {
                (*r).to_owned()
            } else {
                rule(r)
            }
        })
        .collect();
    let spec: Vec<&str> = spec.iter().map(String::as_str).collect();
    Case::new(id, comment, &spec).flags(flags)
}

type DecodeRow = (
    &'static str,
    &'static str,
    &'static [&'static str],
    &'static [&'static str],
    &'static str,
    Value,
);

/// id, comment, flags, rules, value, expected text.
type EncodeRow = (
    &'static str,
    &'static str,
    &'static [&'static str],
    &'static [&'static str],
    Value,
    &'static str,
);

/// id, comment, flags, rules, text, expected error code.
type ErrorRow = (
    &'static str,
    &'static str,
    &'static [&'static str],
    &'static [&'static str],
    &'static str,
    &'static str,
);

fn strict_decode_rows() -> Vec<DecodeRow> {
    vec![
        (
            "seed.basic",
            "seed: basic key-value with type inference",
            &["Seed"],
            &["seed Syntax", "5", "7"],
            "key: value\nname: John Doe\nage: 30\nenabled: true\ncount: 42\n",
            json!({"key": "value", "name": "John Doe", "age": 30, "enabled": true, "count": 42}),
        ),
        (
            "seed.nested",
            "seed: 2-space nested objects",
            &["Seed"],
            &["seed Nested Objects", "3", "5"],
            "workflow:\n  name: My Workflow\n  settings:\n    retryOnError: true\n    timeout: 30\n",
            json!({"workflow": {"name": "My Workflow", "settings": {"retryOnError": true, "timeout": 30}}}),
        ),
        (
            "seed.inline-array",
            "seed: `, ` makes an inline array",
            &["Seed", "InlineArray"],
            &["seed Arrays", "9"],
            "tags: urgent, daily, automated\n",
            json!({"tags": ["urgent", "daily", "automated"]}),
        ),
        (
            "seed.multi-line-array",
            "seed: `- ` items holding objects",
            &["Seed", "List"],
            &["seed Arrays", "9"],
            "nodes:\n  - id: schedule\n    type: n8n-nodes-base.schedule\n  - id: slack\n    type: n8n-nodes-base.slack\n",
            json!({"nodes": [{"id": "schedule", "type": "n8n-nodes-base.schedule"}, {"id": "slack", "type": "n8n-nodes-base.slack"}]}),
        ),
        (
            "seed.type-inference",
            "seed: string, integer, float, boolean, null",
            &["Seed", "Inference"],
            &["seed Type Inference", "6", "7"],
            "string: Hello World\nnumber: 42\nfloat: 3.14\nboolean: true\nnull: null\n",
            json!({"string": "Hello World", "number": 42, "float": 3.14, "boolean": true, "null": null}),
        ),
        (
            "seed.comments",
            "seed: full-line comment ignored; `#` after a value is part of it",
            &["Seed", "Comment"],
            &["seed Comments", "4"],
            "# This is a comment\nkey: value  # Inline comments not supported\n",
            json!({"key": "value  # Inline comments not supported"}),
        ),
        (
            "seed.example-1",
            "seed example 1; `actions: send` is the string (ambiguity A2)",
            &["Seed", "Interpretation"],
            &["seed Example 1", "13"],
            "intent: WORKFLOW_CREATE\nconfidence: 0.95\nreasoning: User wants to create a scheduled workflow with Slack notification\nextractedEntities:\n  trigger: schedule\n  services: slack, email\n  actions: send\n",
            json!({"intent": "WORKFLOW_CREATE", "confidence": 0.95, "reasoning": "User wants to create a scheduled workflow with Slack notification",
                "extractedEntities": {"trigger": "schedule", "services": ["slack", "email"], "actions": "send"}}),
        ),
        (
            "seed.example-2",
            "seed example 2: comma-separated options and context",
            &["Seed"],
            &["seed Example 2", "9"],
            "status: NEEDS_MORE_INFO\nquestion: How should this workflow be triggered?\noptions: On a schedule, When a webhook is called, Manually\ncontext:\n  alreadyKnown: user wants Slack messages\n  stillNeeded: trigger type, message content\n",
            json!({"status": "NEEDS_MORE_INFO", "question": "How should this workflow be triggered?",
                "options": ["On a schedule", "When a webhook is called", "Manually"],
                "context": {"alreadyKnown": "user wants Slack messages", "stillNeeded": ["trigger type", "message content"]}}),
        ),
        (
            "seed.example-3",
            "seed example 3: lists of objects, `#general` and `09:00` are strings",
            &["Seed", "List"],
            &["seed Example 3", "7", "9"],
            "title: Daily Slack Message\nsummary: Sends morning greeting to #general at 9 AM daily\ncredentialsNeeded:\n  - type: slackApi\n    name: Slack Account\n    requiredFor: Sending messages to Slack channels\nworkflow:\n  name: Morning Greeting\n  nodes:\n    - id: schedule\n      type: n8n-nodes-base.schedule\n      name: Every Day at 9 AM\n      parameters:\n        rule:\n          interval: daily\n          time: 09:00\n    - id: slack\n      type: n8n-nodes-base.slack\n      name: Send Message\n      parameters:\n        channel: #general\n        text: Good morning team!\n  connections:\n    schedule:\n      main:\n        - node: slack\n          type: main\n          index: 0\n",
            json!({"title": "Daily Slack Message", "summary": "Sends morning greeting to #general at 9 AM daily",
                "credentialsNeeded": [{"type": "slackApi", "name": "Slack Account", "requiredFor": "Sending messages to Slack channels"}],
                "workflow": {"name": "Morning Greeting",
                    "nodes": [
                        {"id": "schedule", "type": "n8n-nodes-base.schedule", "name": "Every Day at 9 AM", "parameters": {"rule": {"interval": "daily", "time": "09:00"}}},
                        {"id": "slack", "type": "n8n-nodes-base.slack", "name": "Send Message", "parameters": {"channel": "#general", "text": "Good morning team!"}}],
                    "connections": {"schedule": {"main": [{"node": "slack", "type": "main", "index": 0}]}}}}),
        ),
        (
            "scalar.hash-value",
            "a value starting with `#` is a string, not a comment",
            &["Comment"],
            &["4", "7"],
            "channel: #general\n",
            json!({"channel": "#general"}),
        ),
        (
            "scalar.time",
            "`09:00` is not a number",
            &["Inference"],
            &["6", "7"],
            "time: 09:00\n",
            json!({"time": "09:00"}),
        ),
        (
            "scalar.leading-zero",
            "`007` is not a JSON number literal",
            &["Inference", "Number"],
            &["6"],
            "a: 007\n",
            json!({"a": "007"}),
        ),
        (
            "scalar.plus-sign",
            "`+1` is a string",
            &["Number"],
            &["6"],
            "a: +1\n",
            json!({"a": "+1"}),
        ),
        (
            "scalar.dot-five",
            "`.5` is a string",
            &["Number"],
            &["6"],
            "a: .5\n",
            json!({"a": ".5"}),
        ),
        (
            "scalar.capital-true",
            "only lowercase literals",
            &["Inference"],
            &["7"],
            "a: True\n",
            json!({"a": "True"}),
        ),
        (
            "scalar.false",
            "false literal",
            &["Inference"],
            &["7"],
            "a: false\n",
            json!({"a": false}),
        ),
        (
            "scalar.trimmed",
            "value text is trimmed",
            &["Inference"],
            &["7"],
            "a:    spaced out   \n",
            json!({"a": "spaced out"}),
        ),
        (
            "scalar.colon-inside",
            "only the first `: ` splits key and value",
            &["Inference"],
            &["5"],
            "url: http://x.test/a: b\n",
            json!({"url": "http://x.test/a: b"}),
        ),
        (
            "scalar.empty-object",
            "`{}` is an empty object",
            &["Empty"],
            &["7"],
            "a: {}\n",
            json!({"a": {}}),
        ),
        (
            "number.negative",
            "negative integer",
            &["Number"],
            &["6"],
            "a: -17\n",
            json!({"a": -17}),
        ),
        (
            "number.u64-max",
            "largest u64 stays an integer",
            &["Number"],
            &["6"],
            "a: 18446744073709551615\n",
            json!({"a": 18446744073709551615u64}),
        ),
        (
            "number.i64-min",
            "smallest i64 stays an integer",
            &["Number"],
            &["6"],
            "a: -9223372036854775808\n",
            json!({"a": i64::MIN}),
        ),
        (
            "number.beyond-u64",
            "an integer beyond u64 becomes the nearest f64",
            &["Number"],
            &["6"],
            "a: 18446744073709551616\n",
            json!({"a": 18446744073709551616.0}),
        ),
        (
            "number.negative-zero",
            "`-0` is the float -0.0 (as serde_json reads it)",
            &["Number"],
            &["6"],
            "a: -0\n",
            json!({"a": -0.0}),
        ),
        (
            "number.exponent",
            "`1e21` is a float",
            &["Number"],
            &["6"],
            "a: 1e21\n",
            json!({"a": 1e21}),
        ),
        (
            "number.float-one",
            "`1.0` is a float, not an integer",
            &["Number"],
            &["6"],
            "a: 1.0\n",
            json!({"a": 1.0}),
        ),
        (
            "number.small",
            "negative exponent",
            &["Number"],
            &["6"],
            "a: 1.5e-7\n",
            json!({"a": 1.5e-7}),
        ),
        (
            "quote.number-string",
            "a quoted number is a string",
            &["Quoting"],
            &["8"],
            "a: \"42\"\n",
            json!({"a": "42"}),
        ),
        (
            "quote.null-string",
            "a quoted literal is a string",
            &["Quoting"],
            &["8"],
            "a: \"null\"\n",
            json!({"a": "null"}),
        ),
        (
            "quote.empty",
            "`\"\"` is the empty string",
            &["Quoting"],
            &["8"],
            "a: \"\"\n",
            json!({"a": ""}),
        ),
        (
            "quote.comma",
            "a quoted string keeps `, `",
            &["Quoting"],
            &["8", "9"],
            "a: \"x, y\"\n",
            json!({"a": "x, y"}),
        ),
        (
            "quote.escapes",
            "JSON escapes",
            &["Quoting"],
            &["8"],
            "a: \"t\\tn\\nq\\\"b\\\\s\\/\"\n",
            json!({"a": "t\tn\nq\"b\\s/"}),
        ),
        (
            "quote.unicode-escape",
            "`\\u` escapes with a surrogate pair",
            &["Quoting"],
            &["8"],
            "a: \"\\u00e9\\ud83d\\ude00\"\n",
            json!({"a": "é😀"}),
        ),
        (
            "quote.key",
            "a quoted key may hold `: `",
            &["Quoting", "Key"],
            &["5", "8"],
            "\"a: b\": 1\n",
            json!({"a: b": 1}),
        ),
        (
            "quote.empty-key",
            "the empty key is quoted",
            &["Quoting", "Key"],
            &["5", "8"],
            "\"\": 1\n",
            json!({"": 1}),
        ),
        (
            "key.literal-looking",
            "keys are never type-inferred",
            &["Key"],
            &["12.3"],
            "true: 1\n42: 2\n",
            json!({"true": 1, "42": 2}),
        ),
        (
            "inline.one-element",
            "`[x]` is a one-element array",
            &["InlineArray", "OneElement"],
            &["9"],
            "a: [send]\n",
            json!({"a": ["send"]}),
        ),
        (
            "inline.empty",
            "`[]` is the empty array",
            &["InlineArray", "Empty"],
            &["9"],
            "a: []\n",
            json!({"a": []}),
        ),
        (
            "inline.bracketed",
            "`[a, b]` is the same as `a, b`",
            &["InlineArray"],
            &["9"],
            "a: [1, two]\n",
            json!({"a": [1, "two"]}),
        ),
        (
            "inline.typed-items",
            "items are inferred one by one",
            &["InlineArray", "Inference"],
            &["9"],
            "a: 1, 2.5, true, null, x\n",
            json!({"a": [1, 2.5, true, null, "x"]}),
        ),
        (
            "inline.quoted-items",
            "quoted items may hold `, `",
            &["InlineArray", "Quoting"],
            &["8", "9"],
            "a: \"x, y\", z\n",
            json!({"a": ["x, y", "z"]}),
        ),
        (
            "list.scalars",
            "a list of scalars",
            &["List"],
            &["9"],
            "- a\n- 1\n- \"2\"\n",
            json!(["a", 1, "2"]),
        ),
        (
            "list.nested-arrays",
            "`-` alone holds the list below it",
            &["List"],
            &["9"],
            "-\n  - [1]\n- 2, 3\n- []\n",
            json!([[[1]], [2, 3], []]),
        ),
        (
            "list.empty-objects",
            "`- {}` items",
            &["List", "Empty"],
            &["9"],
            "- {}\n- {}\n",
            json!([{}, {}]),
        ),
        (
            "list.object-nested-first",
            "the first entry of an item may open a block",
            &["List"],
            &["9"],
            "- a:\n    b: 1\n  c: 2\n",
            json!([{"a": {"b": 1}, "c": 2}]),
        ),
        (
            "list.under-item-key",
            "a list under a key inside an item",
            &["List"],
            &["9"],
            "- k:\n    - 1\n    - 2\n",
            json!([{"k": [1, 2]}]),
        ),
        (
            "doc.scalar",
            "a one-line scalar document",
            &["Document"],
            &["10"],
            "hello world\n",
            json!("hello world"),
        ),
        (
            "doc.number",
            "a number document",
            &["Document"],
            &["10"],
            "42\n",
            json!(42),
        ),
        (
            "doc.inline-array",
            "an inline array document",
            &["Document"],
            &["10"],
            "a, b\n",
            json!(["a", "b"]),
        ),
        (
            "doc.empty-object",
            "`{}` document",
            &["Document", "Empty"],
            &["10"],
            "{}\n",
            json!({}),
        ),
        (
            "doc.crlf",
            "CRLF line ends",
            &["Document"],
            &["1"],
            "a: 1\r\nb: 2\r\n",
            json!({"a": 1, "b": 2}),
        ),
        (
            "doc.no-final-newline",
            "the last line needs no terminator",
            &["Document"],
            &["1"],
            "a: 1",
            json!({"a": 1}),
        ),
        (
            "doc.blank-lines",
            "blank and indented comment lines are ignored",
            &["Comment"],
            &["4"],
            "a:\n\n    # note\n  b: 1\n",
            json!({"a": {"b": 1}}),
        ),
        (
            "block.literal",
            "`|` keeps line breaks and one final LF",
            &["BlockScalar"],
            &["10"],
            "a: |\n  one\n    two\nb: 1\n",
            json!({"a": "one\n  two\n", "b": 1}),
        ),
        (
            "block.literal-strip",
            "`|-` drops the final LF",
            &["BlockScalar"],
            &["10"],
            "a: |-\n  one\n\n  two\n",
            json!({"a": "one\n\ntwo"}),
        ),
        (
            "block.literal-keep",
            "`|+` keeps trailing empty lines",
            &["BlockScalar"],
            &["10"],
            "a: |+\n  one\n\n\nb: 1\n",
            json!({"a": "one\n\n\n", "b": 1}),
        ),
        (
            "block.folded",
            "`>` joins lines with spaces, empty lines are LF",
            &["BlockScalar"],
            &["10"],
            "a: >\n  one\n  two\n\n  three\n",
            json!({"a": "one two\nthree\n"}),
        ),
        (
            "block.folded-strip",
            "`>-`",
            &["BlockScalar"],
            &["10"],
            "a: >-\n  one\n  two\n",
            json!({"a": "one two"}),
        ),
        (
            "block.empty",
            "a block with no lines is empty",
            &["BlockScalar"],
            &["10"],
            "a: |\nb: 1\n",
            json!({"a": "", "b": 1}),
        ),
        (
            "block.item",
            "a block scalar as a list item",
            &["BlockScalar", "List"],
            &["10"],
            "- |-\n  x\n  y\n",
            json!(["x\ny"]),
        ),
        (
            "block.hash-line",
            "`#` lines inside a block are text",
            &["BlockScalar", "Comment"],
            &["4", "10"],
            "a: |-\n  # not a comment\n",
            json!({"a": "# not a comment"}),
        ),
        (
            "ambiguity.comma",
            "any value with `, ` is an array (ambiguity A1)",
            &["Interpretation"],
            &["13"],
            "reasoning: Hello, world\n",
            json!({"reasoning": ["Hello", "world"]}),
        ),
    ]
}

fn lenient_decode_rows() -> Vec<DecodeRow> {
    vec![
        (
            "lenient.duplicate-last-wins",
            "seed Limitations 4: last value wins",
            &["Lenient"],
            &["seed Limitations", "13"],
            "a: 1\na: 2\n",
            json!({"a": 2}),
        ),
        (
            "lenient.wide-indent",
            "any deeper indentation opens a block",
            &["Lenient"],
            &["3", "13"],
            "a:\n    b: 1\n    c: 2\n",
            json!({"a": {"b": 1, "c": 2}}),
        ),
        (
            "lenient.missing-value",
            "`key:` with nothing below is `{}`",
            &["Lenient", "Interpretation"],
            &["5", "13"],
            "a:\nb: 1\n",
            json!({"a": {}, "b": 1}),
        ),
        (
            "lenient.empty-text",
            "empty text is `{}`",
            &["Lenient", "Interpretation"],
            &["10", "13"],
            "",
            json!({}),
        ),
        (
            "lenient.unterminated-quote",
            "a malformed quote is text",
            &["Lenient"],
            &["8", "13"],
            "a: \"abc\n",
            json!({"a": "\"abc"}),
        ),
        (
            "lenient.inline-object",
            "`{...}` is text",
            &["Lenient"],
            &["7", "13"],
            "a: {b: 1}\n",
            json!({"a": "{b: 1}"}),
        ),
        (
            "lenient.empty-item",
            "an empty item is the empty string",
            &["Lenient"],
            &["9", "13"],
            "a: x, , y\n",
            json!({"a": ["x", "", "y"]}),
        ),
        (
            "lenient.huge-number",
            "an overflowing number is text",
            &["Lenient", "Number"],
            &["6", "13"],
            "a: 1e400\n",
            json!({"a": "1e400"}),
        ),
        (
            "lenient.unterminated-bracket",
            "an unclosed `[` is text",
            &["Lenient"],
            &["9", "13"],
            "a: [x, y\n",
            json!({"a": "[x, y"}),
        ),
        (
            "lenient.key-trailing-space",
            "keys are trimmed",
            &["Lenient", "Key"],
            &["5", "13"],
            "a : 1\n",
            json!({"a": 1}),
        ),
        (
            "lenient.block-indent",
            "block scalar indentation comes from its first line",
            &["Lenient", "BlockScalar"],
            &["10", "13"],
            "a: |-\n      x\n        y\n",
            json!({"a": "x\n  y"}),
        ),
        (
            "lenient.seed-example-2",
            "seed example 2 reads the same leniently",
            &["Lenient", "Seed"],
            &["seed Example 2", "13"],
            "status: NEEDS_MORE_INFO\noptions: On a schedule, When a webhook is called, Manually\n",
            json!({"status": "NEEDS_MORE_INFO", "options": ["On a schedule", "When a webhook is called", "Manually"]}),
        ),
        (
            "lenient.quoted-ok",
            "well-formed quotes still work",
            &["Lenient", "Quoting"],
            &["8", "13"],
            "a: \"x, y\"\n",
            json!({"a": "x, y"}),
        ),
        (
            "lenient.control-char",
            "raw control characters are text",
            &["Lenient"],
            &["2", "13"],
            "a: x\u{1}y\n",
            json!({"a": "x\u{1}y"}),
        ),
    ]
}

fn decode_notes(f: FileBuilder) -> FileBuilder {
    f.note(
        "Seed",
        "an example from the seed specification",
        "seed incompatibility",
        "legacy Loom text is read differently",
    )
    .note(
        "Inference",
        "type inference of plain scalars",
        "type confusion",
        "strings become numbers or booleans or vice versa",
    )
    .note(
        "Number",
        "number literals and their JSON value",
        "number mangling",
        "numbers change type, sign or precision",
    )
    .note(
        "Quoting",
        "quoted strings and escapes",
        "lenient or broken string parser",
        "strings are altered",
    )
    .note(
        "Key",
        "keys: quoting, no inference",
        "key confusion",
        "object keys change",
    )
    .note(
        "InlineArray",
        "inline `, ` arrays and `[...]`",
        "array/scalar confusion",
        "arrays collapse to scalars or the reverse",
    )
    .note(
        "OneElement",
        "one-element arrays",
        "array/scalar confusion",
        "a one-element array reads as its element",
    )
    .note(
        "Empty",
        "empty arrays and objects",
        "empty container loss",
        "empty containers vanish or change type",
    )
    .note(
        "List",
        "`- ` lists, objects inside lists, nested lists",
        "structure confusion",
        "nesting is read wrongly",
    )
    .note(
        "Comment",
        "full-line comments, no inline comments",
        "comment handling",
        "text is dropped or comments read as data",
    )
    .note(
        "Document",
        "document-level forms and line ends",
        "document framing",
        "whole documents are misread",
    )
    .note(
        "BlockScalar",
        "`|` and `>` block scalars",
        "multi-line text handling",
        "multi-line text is altered",
    )
    .note(
        "Lenient",
        "lenient (seed-compatible) reading",
        "legacy incompatibility",
        "legacy text is rejected or misread",
    )
    .note(
        "Interpretation",
        "a choice the seed leaves open, fixed in SPEC.md rule 13",
        "interpretation",
        "implementations disagree on ambiguous text",
    )
}

fn rows_to_cases(rows: Vec<DecodeRow>) -> Vec<Case> {
    rows.into_iter()
        .map(|(id, comment, flags, rules, text, expected)| {
            case(id, comment, flags, rules)
                .input("text", text)
                .valid_with(expected)
        })
        .collect()
}

/// `notation-decode.json`.
pub fn decode_file() -> FileBuilder {
    decode_notes(FileBuilder::new(
        "notation-decode",
        "Loom notation decoding (reference/notation/SPEC.md; seed specs/loom-notation.md): text -> JSON value, strict and lenient.",
    ))
    .group("notation-decode", json!({"mode": "strict"}))
    .tests(rows_to_cases(strict_decode_rows()))
    .group("notation-decode", json!({"mode": "lenient"}))
    .tests(rows_to_cases(lenient_decode_rows()))
}

/// `notation-encode.json`: exact strict text (SPEC.md rule 12).
pub fn encode_file() -> FileBuilder {
    let rows: Vec<EncodeRow> = vec![
        (
            "scalar.plain",
            "a plain string",
            &["Structure"],
            &["12.2"],
            json!("hello world"),
            "hello world\n",
        ),
        (
            "scalar.null",
            "null",
            &["Structure"],
            &["12.1"],
            json!(null),
            "null\n",
        ),
        (
            "scalar.true",
            "true",
            &["Structure"],
            &["12.1"],
            json!(true),
            "true\n",
        ),
        (
            "string.42",
            "number-like string is quoted",
            &["Quoting"],
            &["12.2"],
            json!("42"),
            "\"42\"\n",
        ),
        (
            "string.007",
            "leading-zero string is quoted",
            &["Quoting"],
            &["12.2"],
            json!("007"),
            "\"007\"\n",
        ),
        (
            "string.plus",
            "signed number-like string is quoted",
            &["Quoting"],
            &["12.2"],
            json!("+1"),
            "\"+1\"\n",
        ),
        (
            "string.dot5",
            "`.5` is quoted",
            &["Quoting"],
            &["12.2"],
            json!(".5"),
            "\".5\"\n",
        ),
        (
            "string.nan",
            "`NaN` is quoted",
            &["Quoting"],
            &["12.2"],
            json!("NaN"),
            "\"NaN\"\n",
        ),
        (
            "string.true",
            "literal-like string is quoted",
            &["Quoting"],
            &["12.2"],
            json!("true"),
            "\"true\"\n",
        ),
        (
            "string.null-upper",
            "any case of a literal is quoted",
            &["Quoting"],
            &["12.2"],
            json!("NULL"),
            "\"NULL\"\n",
        ),
        (
            "string.empty",
            "the empty string",
            &["Quoting"],
            &["12.2"],
            json!(""),
            "\"\"\n",
        ),
        (
            "string.padded",
            "edge spaces are quoted",
            &["Quoting"],
            &["12.2"],
            json!(" x "),
            "\" x \"\n",
        ),
        (
            "string.comma",
            "`, ` is quoted",
            &["Quoting"],
            &["12.2"],
            json!("a, b"),
            "\"a, b\"\n",
        ),
        (
            "string.comma-no-space",
            "`,` without a space is plain",
            &["Quoting"],
            &["12.2"],
            json!("a,b"),
            "a,b\n",
        ),
        (
            "string.dash-item",
            "leading `- ` is quoted",
            &["Quoting"],
            &["12.2"],
            json!("- item"),
            "\"- item\"\n",
        ),
        (
            "string.dash",
            "`-` is quoted",
            &["Quoting"],
            &["12.2"],
            json!("-"),
            "\"-\"\n",
        ),
        (
            "string.hyphenated",
            "an inner hyphen is plain",
            &["Quoting"],
            &["12.2"],
            json!("n8n-nodes-base.slack"),
            "n8n-nodes-base.slack\n",
        ),
        (
            "string.hash",
            "leading `#` is quoted",
            &["Quoting"],
            &["12.2"],
            json!("#tag"),
            "\"#tag\"\n",
        ),
        (
            "string.key-value",
            "`: ` is quoted",
            &["Quoting"],
            &["12.2"],
            json!("k: v"),
            "\"k: v\"\n",
        ),
        (
            "string.colon-end",
            "a final `:` is quoted",
            &["Quoting"],
            &["12.2"],
            json!("note:"),
            "\"note:\"\n",
        ),
        (
            "string.time",
            "`09:00` is plain",
            &["Quoting"],
            &["12.2"],
            json!("09:00"),
            "09:00\n",
        ),
        (
            "string.newline",
            "newlines are escaped",
            &["Quoting"],
            &["12.2"],
            json!("a\nb"),
            "\"a\\nb\"\n",
        ),
        (
            "string.controls",
            "control characters as escapes",
            &["Quoting"],
            &["12.2"],
            json!("\t\r\u{8}\u{c}\u{0}\u{7f}"),
            "\"\\t\\r\\b\\f\\u0000\\u007f\"\n",
        ),
        (
            "string.line-separator",
            "U+2028 is escaped",
            &["Quoting"],
            &["12.2"],
            json!("a\u{2028}b"),
            "\"a\\u2028b\"\n",
        ),
        (
            "string.quote-inside",
            "an inner quote is plain",
            &["Quoting"],
            &["12.2"],
            json!("say \"hi\""),
            "say \"hi\"\n",
        ),
        (
            "string.quote-start",
            "a leading quote is quoted and escaped",
            &["Quoting"],
            &["12.2"],
            json!("\"hi\""),
            "\"\\\"hi\\\"\"\n",
        ),
        (
            "string.backslash",
            "a backslash in a quoted string",
            &["Quoting"],
            &["12.2"],
            json!(" \\"),
            "\" \\\\\"\n",
        ),
        (
            "string.unicode",
            "non-ASCII is written as itself",
            &["Quoting"],
            &["12.2"],
            json!("héllo 😀"),
            "héllo 😀\n",
        ),
        (
            "string.bracket",
            "leading `[` is quoted",
            &["Quoting"],
            &["12.2"],
            json!("[x]"),
            "\"[x]\"\n",
        ),
        (
            "string.braces",
            "`{}` as a string is quoted",
            &["Quoting"],
            &["12.2"],
            json!("{}"),
            "\"{}\"\n",
        ),
        (
            "string.block-header",
            "`|` is quoted",
            &["Quoting"],
            &["12.2"],
            json!("|"),
            "\"|\"\n",
        ),
        (
            "number.integer",
            "integer",
            &["Number"],
            &["6"],
            json!({"a": 30}),
            "a: 30\n",
        ),
        (
            "number.negative",
            "negative integer",
            &["Number"],
            &["6"],
            json!({"a": -5}),
            "a: -5\n",
        ),
        (
            "number.u64-max",
            "u64::MAX",
            &["Number"],
            &["6"],
            json!({"a": 18446744073709551615u64}),
            "a: 18446744073709551615\n",
        ),
        (
            "number.float",
            "float",
            &["Number"],
            &["6"],
            json!({"a": 0.95}),
            "a: 0.95\n",
        ),
        (
            "number.float-integral",
            "an integral float keeps `.0`",
            &["Number"],
            &["6"],
            json!({"a": 1.0}),
            "a: 1.0\n",
        ),
        (
            "number.negative-zero",
            "-0.0 keeps its sign",
            &["Number"],
            &["6"],
            json!({"a": -0.0}),
            "a: -0.0\n",
        ),
        (
            "number.1e21",
            "1e21 in exponent form",
            &["Number"],
            &["6"],
            json!({"a": 1e21}),
            "a: 1e21\n",
        ),
        (
            "number.big-integer-float",
            "an integer beyond u64 (a float in serde_json)",
            &["Number"],
            &["6"],
            json!({"a": 1.2345678901234568e29}),
            "a: 1.2345678901234568e29\n",
        ),
        (
            "number.small",
            "1.5e-7 in exponent form",
            &["Number"],
            &["6"],
            json!({"a": 1.5e-7}),
            "a: 1.5e-7\n",
        ),
        (
            "number.ten-thousandth",
            "1e-4 is positional",
            &["Number"],
            &["6"],
            json!({"a": 0.0001}),
            "a: 0.0001\n",
        ),
        (
            "number.1e16",
            "1e16 is exponent form",
            &["Number"],
            &["6"],
            json!({"a": 1e16}),
            "a: 1e16\n",
        ),
        (
            "empty.array",
            "empty array",
            &["Empty"],
            &["12.4"],
            json!({"a": []}),
            "a: []\n",
        ),
        (
            "empty.object",
            "empty object",
            &["Empty"],
            &["12.4"],
            json!({"a": {}}),
            "a: {}\n",
        ),
        (
            "empty.document-object",
            "empty object document",
            &["Empty"],
            &["12.5"],
            json!({}),
            "{}\n",
        ),
        (
            "empty.document-array",
            "empty array document",
            &["Empty"],
            &["12.5"],
            json!([]),
            "[]\n",
        ),
        (
            "one.string",
            "one-element array is bracketed",
            &["OneElement"],
            &["12.4"],
            json!({"actions": ["send"]}),
            "actions: [send]\n",
        ),
        (
            "one.number",
            "one number",
            &["OneElement"],
            &["12.4"],
            json!({"a": [1]}),
            "a: [1]\n",
        ),
        (
            "one.quoted",
            "one quoted string",
            &["OneElement", "Quoting"],
            &["12.4"],
            json!({"a": ["x, y"]}),
            "a: [\"x, y\"]\n",
        ),
        (
            "one.document",
            "one-element array document",
            &["OneElement"],
            &["12.5"],
            json!(["x"]),
            "[x]\n",
        ),
        (
            "inline.two",
            "two scalars inline",
            &["Structure"],
            &["12.4"],
            json!({"services": ["slack", "email"]}),
            "services: slack, email\n",
        ),
        (
            "inline.mixed",
            "mixed scalars inline",
            &["Structure"],
            &["12.4"],
            json!({"a": [1, "b", null, true, ""]}),
            "a: 1, b, null, true, \"\"\n",
        ),
        (
            "structure.nested",
            "nested objects, keys in map order",
            &["Structure"],
            &["12.1"],
            json!({"w": {"s": {"t": 30}, "n": "x"}}),
            "w:\n  n: x\n  s:\n    t: 30\n",
        ),
        (
            "structure.list-of-objects",
            "object items start on the dash line",
            &["Structure"],
            &["12.5"],
            json!({"nodes": [{"id": "a", "type": "t"}, {"id": "b"}]}),
            "nodes:\n  - id: a\n    type: t\n  - id: b\n",
        ),
        (
            "structure.list-of-empty-objects",
            "`- {}` items",
            &["Structure", "Empty"],
            &["12.5"],
            json!([{}, {}]),
            "- {}\n- {}\n",
        ),
        (
            "structure.arrays-of-arrays",
            "inner arrays inline or under `-`",
            &["Structure"],
            &["12.5"],
            json!([[1, 2], [[3]], []]),
            "- 1, 2\n-\n  - [3]\n- []\n",
        ),
        (
            "structure.item-first-entry-nested",
            "an item's first entry opens a block",
            &["Structure"],
            &["12.5"],
            json!([{"a": {"b": 1}}]),
            "- a:\n    b: 1\n",
        ),
        (
            "structure.mixed-list",
            "scalars and containers in one list",
            &["Structure"],
            &["12.5"],
            json!({"a": [1, {"b": 2}]}),
            "a:\n  - 1\n  - b: 2\n",
        ),
        (
            "key.quoted",
            "keys that need quotes",
            &["Key", "Quoting"],
            &["12.3"],
            json!({"": 1, "a: b": 2, "#c": 3}),
            "\"\": 1\n\"#c\": 3\n\"a: b\": 2\n",
        ),
        (
            "key.plain-literals",
            "keys are never inferred, so not quoted",
            &["Key"],
            &["12.3"],
            json!({"true": 1, "42": 2}),
            "42: 2\ntrue: 1\n",
        ),
        (
            "key.dash",
            "keys starting with `- ` and `-`",
            &["Key", "Quoting"],
            &["12.3"],
            json!({"- x": 1, "-": 2, "-y": 3}),
            "\"-\": 2\n\"- x\": 1\n-y: 3\n",
        ),
    ];
    FileBuilder::new(
        "notation-encode",
        "Loom notation encoding in the strict profile (reference/notation/SPEC.md rule 12): JSON value -> exact text.",
    )
    .note("Structure", "layout of objects, lists and documents", "structure", "text does not read back to the same value")
    .note("Quoting", "when strings are quoted and how they are escaped", "missing quotes", "strings read back as numbers, literals, arrays or keys")
    .note("Number", "number text", "number mangling", "numbers change type, sign or precision")
    .note("Empty", "empty containers", "empty container loss", "empty containers vanish or change type")
    .note("OneElement", "one-element arrays", "array/scalar confusion", "a one-element array reads back as its element")
    .note("Key", "key quoting", "key confusion", "keys change or lines are misread")
    .group("notation-encode", Value::Null)
    .tests(rows.into_iter().map(|(id, comment, flags, rules, value, text)| {
        case(id, comment, flags, rules)
            .input("value", value)
            .valid_with(text)
    }))
}

/// `notation-errors.json`: strict rejections; the comment gives the line and column.
pub fn errors_file() -> FileBuilder {
    let rows: Vec<ErrorRow> = vec![
        (
            "indent.three",
            "child indented 3, not 2 (line 2, column 4)",
            &["Indentation"],
            &["3"],
            "a:\n   b: 1\n",
            "BAD_INDENT",
        ),
        (
            "indent.four",
            "child indented 4 (line 2, column 5)",
            &["Indentation"],
            &["3"],
            "a:\n    b: 1\n",
            "BAD_INDENT",
        ),
        (
            "indent.first-line",
            "document starts indented (line 1, column 3)",
            &["Indentation"],
            &["3"],
            "  a: 1\n",
            "BAD_INDENT",
        ),
        (
            "indent.orphan",
            "dedent to no open block (line 4, column 2)",
            &["Indentation"],
            &["3"],
            "a:\n  b:\n    c: 1\n d: 2\n",
            "BAD_INDENT",
        ),
        (
            "indent.deeper-sibling",
            "a line deeper than its sibling (line 2, column 3)",
            &["Indentation"],
            &["3"],
            "a: 1\n  b: 2\n",
            "BAD_INDENT",
        ),
        (
            "indent.item-two-spaces",
            "two spaces after `-` before a key (line 1, column 4)",
            &["Indentation"],
            &["9"],
            "-  a: 1\n",
            "BAD_INDENT",
        ),
        (
            "indent.list-same-level",
            "YAML-style list at the key's level (line 1, column 3)",
            &["Indentation", "Structure"],
            &["5"],
            "a:\n- x\n",
            "MISSING_VALUE",
        ),
        (
            "tab.indent",
            "tab as indentation (line 2, column 1)",
            &["Indentation"],
            &["3"],
            "a:\n\tb: 1\n",
            "TAB_INDENT",
        ),
        (
            "tab.after-spaces",
            "tab after spaces (line 2, column 3)",
            &["Indentation"],
            &["3"],
            "a:\n  \tb: 1\n",
            "TAB_INDENT",
        ),
        (
            "tab.top",
            "tab before a top-level key (line 1, column 1)",
            &["Indentation"],
            &["3"],
            "\ta: 1\n",
            "TAB_INDENT",
        ),
        (
            "duplicate.top",
            "duplicate top-level key (line 2, column 1)",
            &["Duplicate"],
            &["5"],
            "a: 1\na: 2\n",
            "DUPLICATE_KEY",
        ),
        (
            "duplicate.nested",
            "duplicate nested key (line 3, column 3)",
            &["Duplicate"],
            &["5"],
            "x:\n  a: 1\n  a: 1\n",
            "DUPLICATE_KEY",
        ),
        (
            "duplicate.quoted",
            "a quoted key equal to a plain one (line 2, column 1)",
            &["Duplicate", "Quoting"],
            &["5", "8"],
            "a: 1\n\"a\": 2\n",
            "DUPLICATE_KEY",
        ),
        (
            "duplicate.in-item",
            "duplicate key inside a list item (line 2, column 3)",
            &["Duplicate"],
            &["5", "9"],
            "- a: 1\n  a: 2\n",
            "DUPLICATE_KEY",
        ),
        (
            "quote.unterminated",
            "no closing quote (line 1, column 4)",
            &["Quoting"],
            &["8"],
            "a: \"abc\n",
            "UNTERMINATED_QUOTE",
        ),
        (
            "quote.unterminated-key",
            "unterminated quoted key (line 1, column 1)",
            &["Quoting"],
            &["8"],
            "\"a: 1\n",
            "UNTERMINATED_QUOTE",
        ),
        (
            "quote.unterminated-item",
            "unterminated quoted item (line 1, column 7)",
            &["Quoting"],
            &["8", "9"],
            "a: x, \"y\n",
            "UNTERMINATED_QUOTE",
        ),
        (
            "quote.escaped-end",
            "the only quote is escaped (line 1, column 4)",
            &["Quoting"],
            &["8"],
            "a: \"abc\\\"\n",
            "UNTERMINATED_QUOTE",
        ),
        (
            "escape.unknown",
            "`\\q` (line 1, column 5)",
            &["Quoting"],
            &["8"],
            "a: \"\\q\"\n",
            "BAD_ESCAPE",
        ),
        (
            "escape.short-unicode",
            "`\\u12` (line 1, column 5)",
            &["Quoting"],
            &["8"],
            "a: \"\\u12\"\n",
            "BAD_ESCAPE",
        ),
        (
            "escape.lone-high",
            "lone high surrogate (line 1, column 5)",
            &["Quoting"],
            &["8"],
            "a: \"\\ud800\"\n",
            "BAD_ESCAPE",
        ),
        (
            "escape.lone-low",
            "lone low surrogate (line 1, column 5)",
            &["Quoting"],
            &["8"],
            "a: \"\\udc00\"\n",
            "BAD_ESCAPE",
        ),
        (
            "escape.single-quote",
            "`\\'` is not a JSON escape (line 1, column 5)",
            &["Quoting"],
            &["8"],
            "a: \"\\'\"\n",
            "BAD_ESCAPE",
        ),
        (
            "mixed.item-in-object",
            "an item among entries (line 2, column 1)",
            &["Structure"],
            &["4"],
            "a: 1\n- b\n",
            "MIXED_BLOCK",
        ),
        (
            "mixed.entry-in-list",
            "an entry among items (line 2, column 1)",
            &["Structure"],
            &["4"],
            "- a\nb: 1\n",
            "MIXED_BLOCK",
        ),
        (
            "mixed.nested",
            "mixed nested block (line 3, column 3)",
            &["Structure"],
            &["4"],
            "a:\n  b: 1\n  - c\n",
            "MIXED_BLOCK",
        ),
        (
            "expected-key.scalar-line",
            "a bare scalar in an object (line 2, column 1)",
            &["Structure"],
            &["5"],
            "a: 1\nbare\n",
            "EXPECTED_KEY",
        ),
        (
            "expected-key.block",
            "a bare scalar as a nested block (line 2, column 3)",
            &["Structure"],
            &["5"],
            "a:\n  text\n",
            "EXPECTED_KEY",
        ),
        (
            "expected-key.no-space",
            "`key:value` is not an entry (line 2, column 1)",
            &["Structure"],
            &["5"],
            "a: 1\nb:2\n",
            "EXPECTED_KEY",
        ),
        (
            "expected-item.scalar-line",
            "a bare scalar in a list (line 2, column 1)",
            &["Structure"],
            &["9"],
            "- a\nb\n",
            "EXPECTED_ITEM",
        ),
        (
            "missing.value",
            "`key:` at the end (line 1, column 3)",
            &["Structure"],
            &["5"],
            "a:\n",
            "MISSING_VALUE",
        ),
        (
            "missing.item",
            "`-` with nothing below (line 1, column 2)",
            &["Structure"],
            &["9"],
            "-\n",
            "MISSING_VALUE",
        ),
        (
            "missing.sibling",
            "`key:` followed by a sibling (line 1, column 3)",
            &["Structure"],
            &["5"],
            "a:\nb: 1\n",
            "MISSING_VALUE",
        ),
        (
            "bracket.unterminated",
            "`[1, 2` (line 1, column 4)",
            &["InlineArray"],
            &["9"],
            "a: [1, 2\n",
            "UNTERMINATED_BRACKET",
        ),
        (
            "bracket.document",
            "`[x` document (line 1, column 1)",
            &["InlineArray"],
            &["9"],
            "[x\n",
            "UNTERMINATED_BRACKET",
        ),
        (
            "item.empty-middle",
            "`a, , b` (line 1, column 7)",
            &["InlineArray"],
            &["9"],
            "a: 1, , 2\n",
            "EMPTY_ITEM",
        ),
        (
            "item.empty-bracketed",
            "`[a, , b]` (line 1, column 8)",
            &["InlineArray"],
            &["9"],
            "a: [x, , y]\n",
            "EMPTY_ITEM",
        ),
        (
            "trailing.after-quote",
            "text after a closing quote (line 1, column 7)",
            &["Quoting"],
            &["8"],
            "a: \"x\" y\n",
            "TRAILING_CHARACTERS",
        ),
        (
            "trailing.comma-no-space",
            "`\"x\",y` (line 1, column 7)",
            &["Quoting", "InlineArray"],
            &["8", "9"],
            "a: \"x\",y\n",
            "TRAILING_CHARACTERS",
        ),
        (
            "reserved.inline-object",
            "`{b: 1}` (line 1, column 4)",
            &["Structure"],
            &["7"],
            "a: {b: 1}\n",
            "RESERVED_SCALAR",
        ),
        (
            "reserved.nested-bracket",
            "`[[1]]` (line 1, column 5)",
            &["InlineArray"],
            &["9"],
            "a: [[1]]\n",
            "RESERVED_SCALAR",
        ),
        (
            "reserved.bracket-item",
            "an item starting with `[` (line 1, column 7)",
            &["InlineArray"],
            &["9"],
            "a: x, [y]\n",
            "RESERVED_SCALAR",
        ),
        (
            "reserved.dash-dash",
            "`- - x` (line 1, column 3)",
            &["Structure"],
            &["7", "9"],
            "- - x\n",
            "RESERVED_SCALAR",
        ),
        (
            "number.overflow",
            "`1e400` (line 1, column 4)",
            &["Number"],
            &["6"],
            "a: 1e400\n",
            "NUMBER_OUT_OF_RANGE",
        ),
        (
            "number.overflow-item",
            "an overflowing item (line 1, column 7)",
            &["Number"],
            &["6", "9"],
            "a: 1, -1e999\n",
            "NUMBER_OUT_OF_RANGE",
        ),
        (
            "char.nul",
            "raw NUL (line 1, column 5)",
            &["Characters"],
            &["2"],
            "a: x\u{0}\n",
            "INVALID_CHARACTER",
        ),
        (
            "char.escape",
            "raw ESC (line 2, column 4)",
            &["Characters"],
            &["2"],
            "a: 1\nb: \u{1b}[0m\n",
            "INVALID_CHARACTER",
        ),
        (
            "char.lone-cr",
            "a CR not before LF (line 1, column 5)",
            &["Characters"],
            &["1", "2"],
            "a: 1\rb: 2\n",
            "INVALID_CHARACTER",
        ),
        (
            "doc.two-scalars",
            "a second line after a scalar document (line 2, column 1)",
            &["Structure"],
            &["10"],
            "x\ny\n",
            "TRAILING_CONTENT",
        ),
        (
            "doc.empty",
            "empty text (line 1, column 1)",
            &["Structure"],
            &["10"],
            "",
            "EMPTY_DOCUMENT",
        ),
        (
            "doc.comments-only",
            "only comments (line 1, column 1)",
            &["Structure"],
            &["10"],
            "# nothing\n\n",
            "EMPTY_DOCUMENT",
        ),
    ];
    let mut deep = String::new();
    for i in 0..129 {
        deep.push_str(&" ".repeat(2 * i));
        deep.push_str("k:\n");
    }
    deep.push_str(&" ".repeat(258));
    deep.push_str("k: 1\n");
    let mut deep_list = String::new();
    for i in 0..128 {
        deep_list.push_str(&" ".repeat(2 * i));
        deep_list.push_str("-\n");
    }
    deep_list.push_str(&" ".repeat(256));
    deep_list.push_str("- []\n");
    FileBuilder::new(
        "notation-errors",
        "Loom notation texts the strict profile rejects (reference/notation/SPEC.md rule 11), with the error code; each comment gives the expected line and column, which implementations report in `detail`.",
    )
    .note("Indentation", "indentation rules", "lenient indentation", "structure is guessed instead of rejected")
    .note("Duplicate", "duplicate keys in strict mode", "silent overwrite", "data is lost without notice")
    .note("Quoting", "quoted strings and escapes", "lenient string parser", "malformed strings are silently altered")
    .note("Structure", "block and document structure", "structure confusion", "malformed documents are guessed at")
    .note("InlineArray", "inline arrays", "lenient array parser", "malformed arrays are guessed at")
    .note("Number", "number range", "number mangling", "numbers become infinite or are silently altered")
    .note("Characters", "raw control characters", "lenient character handling", "invisible characters slip through")
    .note("Limits", "nesting depth limit", "resource exhaustion", "deep input exhausts the stack")
    .group("notation-decode", json!({"mode": "strict"}))
    .tests(rows.into_iter().map(|(id, comment, flags, rules, text, code)| {
        case(id, comment, flags, rules)
            .input("text", text)
            .invalid(code)
    }))
    .test(
        case("depth.objects", "130 nested objects exceed the default 128 (line 129, column 257)", &["Limits"], &["11"])
            .input("text", deep)
            .invalid("DEPTH_LIMIT"),
    )
    .test(
        case("depth.lists", "129 nested lists plus an inline `[]` exceed the default 128 (line 129, column 257)", &["Limits"], &["11"])
            .input("text", deep_list)
            .invalid("DEPTH_LIMIT"),
    )
}
