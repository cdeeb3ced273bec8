//! Area `envelope-validation`: the structure and type rules of an envelope (v1.1 §6.1, §7.4,
//! §8.1–§8.4, §9.1–§9.2, §13.5, §18.1, §24.2), not its signature.
//!
//! Every case is the base message of `envelope_signature` changed by one mutation (a few set
//! a consistent pair, e.g. `type` with the content it needs), then signed by alice so that the
//! signature is genuine: an implementation that also verifies signatures reaches the same
//! verdict. Mutations of `signature` itself are applied after signing. Each expectation is
//! a literal in the tables below, decided from the cited sections.

use super::envelope_signature::{Prefix, base_envelope, set, sign};
use super::schema::AreaSchema;
use super::{Case, FileBuilder};
use serde_json::{Value, json};

type Edit = (&'static str, Option<Value>);

const E: Option<&str> = Some("ENVELOPE_INVALID");
const S: Option<&str> = Some("SIGNATURE_INVALID");
const D: Option<&str> = Some("DELEGATION_INVALID");
const P: Option<&str> = Some("PAYLOAD_TOO_LARGE");
const OK: Option<&str> = None;

const F81: &[&str] = &["v1.1 §8.1"];
const F82: &[&str] = &["v1.1 §8.2", "v1.0 §8.2"];
const F84: &[&str] = &["v1.1 §8.4", "v1.0 §8.3"];
const F61: &[&str] = &["v1.1 §6.1", "v1.1 §8.1"];
const F83: &[&str] = &["v1.1 §8.3", "v1.1 §8.1"];
const F91: &[&str] = &["v1.1 §9.1"];
const F92: &[&str] = &["v1.1 §9.2"];
const F181: &[&str] = &["v1.1 §18.1", "v1.1 §8.1"];
const F74: &[&str] = &["v1.1 §7.4", "v1.1 §8.1", "v1.1 §8.2"];
const FTS: &[&str] = &["v1.1 §8.2", "v1.1 Appendix D"];
const FSIG: &[&str] = &["v1.1 §7.3", "v1.1 §8.1", "v1.1 §24.2"];
const F135: &[&str] = &["v1.1 §13.5", "v1.1 §18.2", "v1.1 §13.3"];

/// One case: mutations of the base, and the expected error (`None`: valid).
struct Row {
    id: &'static str,
    comment: &'static str,
    spec: &'static [&'static str],
    flags: &'static [&'static str],
    edits: Vec<Edit>,
    expect: Option<&'static str>,
}

fn r(
    id: &'static str,
    comment: &'static str,
    spec: &'static [&'static str],
    flags: &'static [&'static str],
    edits: Vec<Edit>,
    expect: Option<&'static str>,
) -> Row {
    Row {
        id,
        comment,
        spec,
        flags,
        edits,
        expect,
    }
}

fn put(ptr: &'static str, v: Value) -> Vec<Edit> {
    vec![(ptr, Some(v))]
}

fn rm(ptr: &'static str) -> Vec<Edit> {
    vec![(ptr, None)]
}

/// The base after `edits` (those under `/signature`, or of the whole document, after
/// signing), signed by alice with the envelope context.
fn envelope(edits: Vec<Edit>) -> Value {
    let (after, before): (Vec<Edit>, Vec<Edit>) = edits
        .into_iter()
        .partition(|(p, _)| p.is_empty() || p.starts_with("/signature"));
    let mut env = base_envelope();
    for (p, v) in before {
        set(&mut env, p, v);
    }
    sign(
        &mut env,
        "alice",
        Prefix::Context(super::envelope_signature::ENVELOPE_CTX),
    );
    for (p, v) in after {
        set(&mut env, p, v);
    }
    env
}

impl Row {
    fn case(self) -> Case {
        let c = Case::new(self.id, self.comment, self.spec)
            .flags(self.flags)
            .input("envelope", envelope(self.edits));
        match self.expect {
            None => c.valid(),
            Some(code) => c.invalid(code),
        }
    }
}

const ENC: &str = "eHl6enk";

fn encrypted(profile: &str) -> Value {
    json!({"encrypted": true, "profile": profile, "epoch": 0, "nonce": "bm9uY2U", "ciphertext": ENC})
}

fn with_content(mut c: Value, ptr: &str, v: Option<Value>) -> Vec<Edit> {
    set(&mut c, ptr, v);
    put("/content", c)
}

fn enc_edit(ptr: &str, v: Option<Value>) -> Vec<Edit> {
    with_content(encrypted("loom-e2ee-x25519-xchacha20-v1"), ptr, v)
}

fn typed(t: &'static str, intent: &'static str) -> Vec<Edit> {
    vec![
        ("/type", Some(json!(t))),
        ("/content/structured/intent", Some(json!(intent))),
    ]
}

fn agent(chain: Option<Value>) -> Vec<Edit> {
    vec![
        ("/from/type", Some(json!("agent"))),
        ("/from/delegation_chain", chain),
    ]
}

fn link() -> Value {
    json!({"delegator": "loom://carol@node.test", "delegate": "loom://alice@node.test", "scope": ["*"], "created_at": "2026-02-01T00:00:00Z", "expires_at": "2026-06-01T00:00:00Z", "signature": "AAAA"})
}

fn minimal() -> Vec<Edit> {
    [
        "/parent_id",
        "/audience",
        "/expires_at",
        "/priority",
        "/attachments",
        "/references",
        "/capabilities",
        "/labels",
        "/meta",
        "/from/display",
        "/content/structured",
        "/content/encrypted",
    ]
    .into_iter()
    .map(|p| (p, None))
    .collect()
}

fn valid_rows() -> Vec<Row> {
    let v = &["ValidEnvelope"];
    vec![
        r(
            "valid.base",
            "a message with every optional member of §8.1",
            F81,
            v,
            vec![],
            OK,
        ),
        r(
            "valid.minimal",
            "only the members §8.2 requires (MUST), human content only",
            F82,
            v,
            minimal(),
            OK,
        ),
        r(
            "valid.parent-id-absent",
            "parent_id is SHOULD: absent is valid",
            F82,
            v,
            rm("/parent_id"),
            OK,
        ),
        r(
            "valid.parent-id-set",
            "parent_id names another envelope",
            F82,
            v,
            put("/parent_id", json!("env_01JMKB7X9Q2RVHF3KN4TYZPG01")),
            OK,
        ),
        r(
            "valid.meta-absent",
            "meta is SHOULD and node-local: absent is valid",
            F82,
            v,
            rm("/meta"),
            OK,
        ),
        r(
            "valid.unknown-member",
            "an unknown top-level member (extension) is accepted",
            F91,
            &["ValidEnvelope", "UnknownAccepted"],
            put("/x_vendor", json!({"k": 1})),
            OK,
        ),
        r(
            "valid.type.unknown",
            "unknown type: nodes MUST accept, store and relay it",
            F91,
            &["ValidEnvelope", "UnknownAccepted"],
            put("/type", json!("x-vendor.custom")),
            OK,
        ),
        r(
            "valid.type.unknown-no-human",
            "unknown type with structured content only: no type rule applies",
            F91,
            &["ValidEnvelope", "UnknownAccepted"],
            vec![
                ("/type", Some(json!("com.example.ping"))),
                ("/content/human", None),
            ],
            OK,
        ),
        r(
            "valid.type.task",
            "task with a task.*@vN intent",
            F92,
            v,
            typed("task", "task.create@v1"),
            OK,
        ),
        r(
            "valid.type.task-state-update",
            "task.state_update@v1 (v1.1 §18.3)",
            &["v1.1 §9.2", "v1.1 §18.3"],
            v,
            typed("task", "task.state_update@v1"),
            OK,
        ),
        r(
            "valid.type.approval",
            "approval with approval.request@v1",
            F91,
            v,
            typed("approval", "approval.request@v1"),
            OK,
        ),
        r(
            "valid.type.event",
            "event with event.invite@v1",
            F91,
            v,
            typed("event", "event.invite@v1"),
            OK,
        ),
        r(
            "valid.type.notification",
            "notification with structured content only",
            F91,
            v,
            vec![
                ("/type", Some(json!("notification"))),
                ("/content/human", None),
                (
                    "/content/structured/intent",
                    Some(json!("notification.system@v1")),
                ),
            ],
            OK,
        ),
        r(
            "valid.type.handoff",
            "handoff with handoff.transfer@v1",
            F91,
            v,
            typed("handoff", "handoff.transfer@v1"),
            OK,
        ),
        r(
            "valid.type.data",
            "data envelope",
            F91,
            v,
            typed("data", "data.export@v1"),
            OK,
        ),
        r(
            "valid.type.receipt",
            "receipt with structured content, human omitted",
            F92,
            v,
            vec![
                ("/type", Some(json!("receipt"))),
                ("/content/human", None),
                (
                    "/content/structured/intent",
                    Some(json!("receipt.delivered@v1")),
                ),
            ],
            OK,
        ),
        r(
            "valid.type.workflow",
            "workflow with workflow.execute@v1",
            F91,
            v,
            typed("workflow", "workflow.execute@v1"),
            OK,
        ),
        r(
            "valid.type.thread-op",
            "thread_op with thread.add_participant@v1",
            &["v1.1 §9.2", "v1.1 §11.1"],
            v,
            typed("thread_op", "thread.add_participant@v1"),
            OK,
        ),
        r(
            "valid.type.thread-op-capability",
            "thread_op with capability.spent@v1",
            &["v1.1 §9.2", "v1.1 §12.5"],
            v,
            typed("thread_op", "capability.spent@v1"),
            OK,
        ),
        r(
            "valid.type.thread-op-encryption",
            "thread_op with encryption.epoch@v1",
            &["v1.1 §9.2", "v1.1 §11.8"],
            v,
            typed("thread_op", "encryption.epoch@v1"),
            OK,
        ),
        r(
            "valid.type.thread-op-delegation",
            "thread_op with delegation.revoked@v1: §13.4 records revocations via thread_op",
            &["v1.1 §9.2", "v1.1 §13.4"],
            v,
            typed("thread_op", "delegation.revoked@v1"),
            OK,
        ),
        r(
            "valid.content.human-only",
            "message with human content only",
            F82,
            v,
            rm("/content/structured"),
            OK,
        ),
        r(
            "valid.content.format-plaintext",
            "human.format plaintext",
            F81,
            v,
            put("/content/human/format", json!("plaintext")),
            OK,
        ),
        r(
            "valid.content.format-html",
            "human.format html",
            F81,
            v,
            put("/content/human/format", json!("html")),
            OK,
        ),
        r(
            "valid.content.format-absent",
            "human.format omitted",
            F81,
            v,
            rm("/content/human/format"),
            OK,
        ),
        r(
            "valid.content.empty-text",
            "human.text may be empty: only its type is constrained",
            F81,
            v,
            put("/content/human/text", json!("")),
            OK,
        ),
        r(
            "valid.content.parameters-absent",
            "structured.parameters omitted",
            F81,
            v,
            rm("/content/structured/parameters"),
            OK,
        ),
        r(
            "valid.content.response-schema-uri",
            "response_schema is a URI",
            F181,
            v,
            put(
                "/content/structured/response_schema",
                json!("https://schemas.example.test/reply.json"),
            ),
            OK,
        ),
        r(
            "valid.content.response-schema-null",
            "response_schema null",
            F181,
            v,
            put("/content/structured/response_schema", Value::Null),
            OK,
        ),
        r(
            "valid.intent.deep-namespace",
            "intent with three segments and a two-digit version",
            F181,
            v,
            put(
                "/content/structured/intent",
                json!("com.example.invoice.request@v12"),
            ),
            OK,
        ),
        r(
            "valid.priority.low",
            "priority low",
            F81,
            v,
            put("/priority", json!("low")),
            OK,
        ),
        r(
            "valid.priority.high",
            "priority high",
            F81,
            v,
            put("/priority", json!("high")),
            OK,
        ),
        r(
            "valid.priority.urgent",
            "priority urgent",
            F81,
            v,
            put("/priority", json!("urgent")),
            OK,
        ),
        r(
            "valid.priority.absent",
            "priority omitted (defaults to normal, v1.0 §8.2)",
            F82,
            v,
            rm("/priority"),
            OK,
        ),
        r(
            "valid.to.all-roles",
            "primary plus cc, observer and bcc recipients",
            F81,
            v,
            put(
                "/to",
                json!([{"identity": "loom://bob@node.test", "role": "primary"}, {"identity": "loom://carol@node.test", "role": "cc"}, {"identity": "loom://dave@node.test", "role": "observer"}, {"identity": "loom://erin@node.test", "role": "bcc"}]),
            ),
            OK,
        ),
        r(
            "valid.to.primary-second",
            "the primary recipient need not come first",
            F82,
            v,
            put(
                "/to",
                json!([{"identity": "loom://carol@node.test", "role": "cc"}, {"identity": "loom://bob@node.test", "role": "primary"}]),
            ),
            OK,
        ),
        r(
            "valid.to.bridge",
            "a bridge:// recipient",
            F61,
            v,
            put("/to/0/identity", json!("bridge://bob@example.com")),
            OK,
        ),
        r(
            "valid.to.agent-address",
            "an agent-scoped address (subagent.agent.human)",
            F61,
            v,
            put(
                "/to/0/identity",
                json!("loom://sub.assistant.bob@node.test"),
            ),
            OK,
        ),
        r(
            "valid.to.local-64",
            "local part of 64 characters, the maximum",
            F61,
            v,
            put(
                "/to/0/identity",
                json!(format!("loom://{}@node.test", "a".repeat(64))),
            ),
            OK,
        ),
        r(
            "valid.audience.absent",
            "audience MAY be omitted (defaults to thread)",
            F83,
            v,
            rm("/audience"),
            OK,
        ),
        r(
            "valid.audience.recipients",
            "audience mode recipients",
            F83,
            v,
            put("/audience", json!({"mode": "recipients"})),
            OK,
        ),
        r(
            "valid.audience.custom",
            "custom audience listing identities",
            F83,
            v,
            put(
                "/audience",
                json!({"mode": "custom", "identities": ["loom://bob@node.test"]}),
            ),
            OK,
        ),
        r(
            "valid.from.bridge",
            "a bridged sender: bridge:// identity with from.type bridge",
            F61,
            v,
            vec![
                ("/from/identity", Some(json!("bridge://alice@example.com"))),
                ("/from/type", Some(json!("bridge"))),
            ],
            OK,
        ),
        r(
            "valid.from.service",
            "from.type service",
            F81,
            v,
            put("/from/type", json!("service")),
            OK,
        ),
        r(
            "valid.from.team",
            "from.type team",
            F81,
            v,
            put("/from/type", json!("team")),
            OK,
        ),
        r(
            "valid.from.agent",
            "agent sender with a delegation chain",
            F135,
            v,
            agent(Some(json!([link()]))),
            OK,
        ),
        r(
            "valid.from.display-absent",
            "from.display omitted",
            F81,
            v,
            rm("/from/display"),
            OK,
        ),
        r(
            "valid.from.device-id-1",
            "device_id of 1 character",
            F82,
            v,
            put("/from/device_id", json!("d")),
            OK,
        ),
        r(
            "valid.from.device-id-128",
            "device_id of 128 characters, the maximum",
            F82,
            v,
            put("/from/device_id", json!("d".repeat(128))),
            OK,
        ),
        r(
            "valid.from.device-id-128-non-ascii",
            "device_id of 128 non-ASCII characters (256 UTF-8 bytes): the limit counts characters",
            &["v1.1 §8.2"],
            &["ValidEnvelope", "Interpretation"],
            put("/from/device_id", json!("\u{e9}".repeat(128))),
            OK,
        ),
        r(
            "valid.from.key-id-labelled",
            "key ID with a label between prefix and ULID, as §6.2's examples",
            &["v1.1 §8.4", "v1.1 §6.2"],
            v,
            put("/from/key_id", json!("k_sign_dev_01JMKBA2F6GSNKJ9NR0WYDM0")),
            OK,
        ),
        r(
            "valid.from.human-empty-chain",
            "human sender with an empty delegation_chain array",
            F81,
            v,
            put("/from/delegation_chain", json!([])),
            OK,
        ),
        r(
            "valid.attachments.empty",
            "attachments empty array",
            F81,
            v,
            put("/attachments", json!([])),
            OK,
        ),
        r(
            "valid.attachments.minimal",
            "an attachment with only id, blob_id and hash",
            F81,
            v,
            put(
                "/attachments/0",
                json!({"id": "att_01JMKB8A6D3NMHG5KP6VWBTK00", "blob_id": "blob_01JMKB8A6D3NMHG5KP6VWBTK01", "hash": "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"}),
            ),
            OK,
        ),
        r(
            "valid.attachments.mime-params",
            "mime_type with a parameter",
            F81,
            v,
            put(
                "/attachments/0/mime_type",
                json!("text/plain; charset=utf-8"),
            ),
            OK,
        ),
        r(
            "valid.attachments.size-zero",
            "size_bytes 0",
            F81,
            v,
            put("/attachments/0/size_bytes", json!(0)),
            OK,
        ),
        r(
            "valid.references.empty",
            "references empty object",
            F81,
            v,
            put("/references", json!({})),
            OK,
        ),
        r(
            "valid.references.external-types",
            "every external reference type",
            F81,
            v,
            put(
                "/references/external",
                json!([{"type": "url", "ref": "https://x.test"}, {"type": "email_message_id", "ref": "<a@b>"}, {"type": "issue", "ref": "GH-1"}, {"type": "document", "ref": "doc-7"}]),
            ),
            OK,
        ),
        r(
            "valid.labels.empty",
            "labels empty array",
            F81,
            v,
            put("/labels", json!([])),
            OK,
        ),
        r(
            "valid.expires-at",
            "expires_at set",
            FTS,
            v,
            put("/expires_at", json!("2026-03-08T12:00:00Z")),
            OK,
        ),
        r(
            "valid.signature.legacy-shape",
            "signature without context (a legacy envelope): the shape is valid",
            FSIG,
            v,
            rm("/signature/context"),
            OK,
        ),
        r(
            "valid.signature.context-null",
            "signature.context null",
            FSIG,
            &["ValidEnvelope", "Interpretation"],
            put("/signature/context", Value::Null),
            OK,
        ),
    ]
}

fn timestamp_rows() -> Vec<Row> {
    let ts = |id, comment, s: &str, expect, flags| {
        r(
            id,
            comment,
            FTS,
            flags,
            put("/created_at", json!(s)),
            expect,
        )
    };
    let bad = &["BadTimestamp"];
    let interp = &["BadTimestamp", "Interpretation"];
    let ok = &["ValidEnvelope"];
    vec![
        ts(
            "created-at.millis",
            "milliseconds and Z",
            "2026-03-01T12:00:00.123Z",
            OK,
            ok,
        ),
        ts(
            "created-at.nanos",
            "nine fraction digits",
            "2026-03-01T12:00:00.123456789Z",
            OK,
            ok,
        ),
        ts(
            "created-at.offset",
            "a numeric offset instead of Z",
            "2026-03-01T13:00:00+01:00",
            OK,
            ok,
        ),
        ts(
            "created-at.negative-offset",
            "a negative offset",
            "2026-03-01T07:00:00-05:00",
            OK,
            ok,
        ),
        ts(
            "created-at.leap-day",
            "29 February of a leap year",
            "2028-02-29T12:00:00Z",
            OK,
            ok,
        ),
        ts(
            "created-at.no-zone",
            "no timezone: Appendix D requires ISO 8601 with timezone",
            "2026-03-01T12:00:00",
            E,
            bad,
        ),
        ts(
            "created-at.date-only",
            "a date without time or zone",
            "2026-03-01",
            E,
            bad,
        ),
        ts(
            "created-at.lowercase-t",
            "lowercase t separator: loom-protocol time.rs requires RFC 3339 with uppercase T so signed timestamps compare alike",
            "2026-03-01t12:00:00Z",
            E,
            interp,
        ),
        ts(
            "created-at.lowercase-z",
            "lowercase z zone: uppercase only (loom-protocol time.rs)",
            "2026-03-01T12:00:00z",
            E,
            interp,
        ),
        ts(
            "created-at.space-separator",
            "space instead of T (RFC 3339 §5.6 NOTE allows it; loom-protocol time.rs does not)",
            "2026-03-01 12:00:00Z",
            E,
            interp,
        ),
        ts(
            "created-at.basic-offset",
            "offset without colon (ISO 8601 basic format): loom-protocol accepts only ±HH:MM",
            "2026-03-01T13:00:00+0100",
            E,
            interp,
        ),
        ts(
            "created-at.basic-format",
            "ISO 8601 basic format without separators: loom-protocol requires the extended RFC 3339 form",
            "20260301T120000Z",
            E,
            interp,
        ),
        ts(
            "created-at.no-seconds",
            "minutes precision only: RFC 3339 requires seconds",
            "2026-03-01T12:00Z",
            E,
            interp,
        ),
        ts(
            "created-at.leap-second",
            "second 60: loom-protocol time.rs rejects leap seconds (milliseconds since the epoch cannot hold them)",
            "2026-12-31T23:59:60Z",
            E,
            interp,
        ),
        ts(
            "created-at.fraction-10-digits",
            "ten fraction digits: loom-protocol time.rs allows at most nine",
            "2026-03-01T12:00:00.1234567890Z",
            E,
            interp,
        ),
        ts(
            "created-at.empty-fraction",
            "a '.' with no fraction digits",
            "2026-03-01T12:00:00.Z",
            E,
            bad,
        ),
        ts(
            "created-at.not-leap-day",
            "29 February of a common year",
            "2025-02-29T12:00:00Z",
            E,
            bad,
        ),
        ts(
            "created-at.month-13",
            "month 13",
            "2026-13-01T12:00:00Z",
            E,
            bad,
        ),
        ts(
            "created-at.day-31-april",
            "31 April",
            "2026-04-31T12:00:00Z",
            E,
            bad,
        ),
        ts(
            "created-at.hour-24",
            "hour 24",
            "2026-03-01T24:00:00Z",
            E,
            bad,
        ),
        ts(
            "created-at.minute-60",
            "minute 60",
            "2026-03-01T12:60:00Z",
            E,
            bad,
        ),
        ts(
            "created-at.offset-hour-24",
            "offset +24:00",
            "2026-03-01T12:00:00+24:00",
            E,
            bad,
        ),
        ts(
            "created-at.two-digit-year",
            "two-digit year",
            "26-03-01T12:00:00Z",
            E,
            bad,
        ),
        ts(
            "created-at.unix-seconds-string",
            "Unix seconds as a string",
            "1772366400",
            E,
            bad,
        ),
        ts("created-at.empty", "empty string", "", E, bad),
        r(
            "created-at.number",
            "created_at as a number of milliseconds",
            FTS,
            &["WrongType"],
            put("/created_at", json!(1_772_366_400_000_i64)),
            E,
        ),
        r(
            "created-at.missing",
            "created_at is MUST",
            F82,
            &["MissingField"],
            rm("/created_at"),
            E,
        ),
        r(
            "created-at.null",
            "created_at null: a required member",
            F82,
            &["MissingField"],
            put("/created_at", Value::Null),
            E,
        ),
        r(
            "expires-at.bad",
            "expires_at without a zone",
            FTS,
            &["BadTimestamp"],
            put("/expires_at", json!("2026-03-08T12:00:00")),
            E,
        ),
        r(
            "expires-at.number",
            "expires_at as a number",
            FTS,
            &["WrongType"],
            put("/expires_at", json!(0)),
            E,
        ),
    ]
}

fn header_rows() -> Vec<Row> {
    let m = &["MissingField"];
    let w = &["WrongType"];
    let b = &["BadId"];
    vec![
        r(
            "envelope.array",
            "the envelope is an array",
            F81,
            &["WrongType"],
            put("", json!([])),
            E,
        ),
        r(
            "envelope.string",
            "the envelope is a string",
            F81,
            &["WrongType"],
            put("", json!("loom")),
            E,
        ),
        r("loom.missing", "loom is MUST", F82, m, rm("/loom"), E),
        r(
            "loom.v1-0",
            "loom \"1.0\" in a v1.1 envelope",
            F82,
            &["BadVersion"],
            put("/loom", json!("1.0")),
            E,
        ),
        r(
            "loom.number",
            "loom as the number 1.1",
            F82,
            &["BadVersion", "WrongType"],
            put("/loom", json!(1.1)),
            E,
        ),
        r(
            "loom.patch",
            "loom \"1.1.0\": the value is exactly \"1.1\"",
            F82,
            &["BadVersion"],
            put("/loom", json!("1.1.0")),
            E,
        ),
        r(
            "loom.v2",
            "loom \"2.0\"",
            F82,
            &["BadVersion"],
            put("/loom", json!("2.0")),
            E,
        ),
        r("id.missing", "id is MUST", F82, m, rm("/id"), E),
        r("id.null", "id null", F82, m, put("/id", Value::Null), E),
        r(
            "id.number",
            "id as a number",
            F84,
            w,
            put("/id", json!(1)),
            E,
        ),
        r(
            "id.thread-prefix",
            "id with the thr_ prefix",
            F84,
            b,
            put("/id", json!("thr_01JMKB7X9Q2RVHF3KN4TYZPG00")),
            E,
        ),
        r(
            "id.no-prefix",
            "a bare ULID",
            F84,
            b,
            put("/id", json!("01JMKB7X9Q2RVHF3KN4TYZPG00")),
            E,
        ),
        r(
            "id.uppercase-prefix",
            "ENV_ prefix",
            F84,
            b,
            put("/id", json!("ENV_01JMKB7X9Q2RVHF3KN4TYZPG00")),
            E,
        ),
        r(
            "id.short-ulid",
            "25-character ULID",
            F84,
            b,
            put("/id", json!("env_01JMKB7X9Q2RVHF3KN4TYZPG0")),
            E,
        ),
        r(
            "id.long-ulid",
            "27-character ULID",
            F84,
            b,
            put("/id", json!("env_01JMKB7X9Q2RVHF3KN4TYZPG000")),
            E,
        ),
        r(
            "id.letter-i",
            "ULID containing I (not Crockford base32)",
            F84,
            b,
            put("/id", json!("env_01JMKB7X9Q2RVHF3KN4TYZPGI0")),
            E,
        ),
        r(
            "id.overflow",
            "ULID starting with 8 exceeds 128 bits",
            F84,
            b,
            put("/id", json!("env_81JMKB7X9Q2RVHF3KN4TYZPG00")),
            E,
        ),
        r(
            "id.lowercase-ulid",
            "lowercase ULID: loom-protocol id.rs requires the canonical uppercase form so one object has one ID string",
            F84,
            &["BadId", "Interpretation"],
            put("/id", json!("env_01jmkb7x9q2rvhf3kn4tyzpg00")),
            E,
        ),
        r(
            "thread-id.missing",
            "thread_id is MUST",
            F82,
            m,
            rm("/thread_id"),
            E,
        ),
        r(
            "thread-id.envelope-prefix",
            "thread_id with the env_ prefix",
            F84,
            b,
            put("/thread_id", json!("env_01JMKB7W8P1QSGF2JM3SXYZR00")),
            E,
        ),
        r(
            "thread-id.number",
            "thread_id as a number",
            F84,
            w,
            put("/thread_id", json!(7)),
            E,
        ),
        r(
            "thread-id.bad-ulid",
            "thread_id with a character outside Crockford base32",
            F84,
            b,
            put("/thread_id", json!("thr_01JMKB7W8P1QSGF2JM3SXYZRU0")),
            E,
        ),
        r(
            "parent-id.thread-prefix",
            "parent_id with the thr_ prefix",
            F84,
            b,
            put("/parent_id", json!("thr_01JMKB7W8P1QSGF2JM3SXYZR00")),
            E,
        ),
        r(
            "parent-id.number",
            "parent_id as a number",
            F84,
            w,
            put("/parent_id", json!(0)),
            E,
        ),
        r(
            "parent-id.empty",
            "parent_id empty string (roots use null)",
            F84,
            b,
            put("/parent_id", json!("")),
            E,
        ),
        r(
            "parent-id.list",
            "parent_id listing two envelopes: a single parent, never a merge of parents",
            &["v1.1 §10.2", "v1.1 §8.1"],
            &["BadId"],
            put(
                "/parent_id",
                json!([
                    "env_01JMKB7X9Q2RVHF3KN4TYZPG01",
                    "env_01JMKB7X9Q2RVHF3KN4TYZPG02"
                ]),
            ),
            E,
        ),
        r(
            "parent-id.self",
            "parent_id equals id: a one-envelope cycle",
            &["v1.1 §10.2"],
            &["BadId"],
            put("/parent_id", json!("env_01JMKB7X9Q2RVHF3KN4TYZPG00")),
            E,
        ),
        r("type.missing", "type is MUST", F82, m, rm("/type"), E),
        r(
            "type.null",
            "type null",
            F82,
            m,
            put("/type", Value::Null),
            E,
        ),
        r(
            "type.number",
            "type as a number",
            F91,
            w,
            put("/type", json!(1)),
            E,
        ),
        r(
            "type.empty",
            "empty type: unknown types are accepted, but the empty string names none (loom-protocol validate.rs)",
            F91,
            &["WrongType", "Interpretation"],
            put("/type", json!("")),
            E,
        ),
        r(
            "priority.unknown",
            "priority critical is not in the enum",
            F81,
            &["BadEnum"],
            put("/priority", json!("critical")),
            E,
        ),
        r(
            "priority.capitalized",
            "priority Normal: enum values are lowercase",
            F81,
            &["BadEnum"],
            put("/priority", json!("Normal")),
            E,
        ),
        r(
            "priority.number",
            "priority as a number",
            F81,
            &["BadEnum", "WrongType"],
            put("/priority", json!(1)),
            E,
        ),
        r(
            "capabilities.not-array",
            "capabilities as a string",
            F81,
            w,
            put("/capabilities", json!("reply")),
            E,
        ),
        r(
            "capabilities.empty-entry",
            "an empty capability string (loom-protocol validate.rs: entries are non-empty strings)",
            F81,
            &["WrongType", "Interpretation"],
            put("/capabilities", json!([""])),
            E,
        ),
        r(
            "labels.not-array",
            "labels as a string",
            F81,
            w,
            put("/labels", json!("finance")),
            E,
        ),
        r(
            "labels.number-entry",
            "a label that is a number",
            F81,
            w,
            put("/labels", json!([1])),
            E,
        ),
        r(
            "meta.string",
            "meta as a string: node-local metadata is an object (§8.1)",
            F81,
            &["WrongType", "Interpretation"],
            put("/meta", json!("x")),
            E,
        ),
    ]
}

fn address_rows() -> Vec<Row> {
    let a = &["BadAddress"];
    let m = &["MissingField"];
    vec![
        r("from.missing", "from is MUST", F82, m, rm("/from"), E),
        r(
            "from.string",
            "from as the bare address",
            F81,
            &["WrongType"],
            put("/from", json!("loom://alice@node.test")),
            E,
        ),
        r(
            "from.identity.missing",
            "from.identity missing",
            F82,
            m,
            rm("/from/identity"),
            E,
        ),
        r(
            "from.identity.number",
            "from.identity as a number",
            F61,
            &["WrongType"],
            put("/from/identity", json!(1)),
            E,
        ),
        r(
            "from.identity.uppercase",
            "from.identity not in canonical lowercase",
            F61,
            a,
            put("/from/identity", json!("loom://Alice@node.test")),
            E,
        ),
        r(
            "from.identity.uppercase-domain",
            "uppercase domain",
            F61,
            a,
            put("/from/identity", json!("loom://alice@Node.Test")),
            E,
        ),
        r(
            "from.identity.fragment",
            "a fragment in an envelope address: client-side only",
            F61,
            a,
            put(
                "/from/identity",
                json!("loom://alice@node.test#thr_01JMKB7W8P1QSGF2JM3SXYZR00"),
            ),
            E,
        ),
        r(
            "from.identity.mailto",
            "mailto: scheme",
            F61,
            a,
            put("/from/identity", json!("mailto:alice@node.test")),
            E,
        ),
        r(
            "from.identity.no-scheme",
            "bare local@domain",
            F61,
            a,
            put("/from/identity", json!("alice@node.test")),
            E,
        ),
        r(
            "from.identity.leading-dot",
            "local part starting with '.'",
            F61,
            a,
            put("/from/identity", json!("loom://.alice@node.test")),
            E,
        ),
        r(
            "from.identity.local-65",
            "local part of 65 characters",
            F61,
            a,
            put(
                "/from/identity",
                json!(format!("loom://{}@node.test", "a".repeat(65))),
            ),
            E,
        ),
        r(
            "from.identity.plus",
            "'+' in a loom local part",
            F61,
            a,
            put("/from/identity", json!("loom://alice+x@node.test")),
            E,
        ),
        r(
            "from.identity.bridge-as-human",
            "bridge:// identity with from.type human: the scheme is reserved for bridged identities",
            F61,
            a,
            put("/from/identity", json!("bridge://alice@example.com")),
            E,
        ),
        r(
            "from.key-id.missing",
            "from.key_id (the signing key reference) missing",
            F82,
            m,
            rm("/from/key_id"),
            E,
        ),
        r(
            "from.key-id.number",
            "from.key_id as a number",
            F81,
            &["WrongType"],
            put("/from/key_id", json!(1)),
            E,
        ),
        r(
            "from.type.missing",
            "from.type missing (§8.1 lists it without an optional marker; loom-protocol validate.rs requires it)",
            F81,
            &["MissingField", "Interpretation"],
            rm("/from/type"),
            E,
        ),
        r(
            "from.type.unknown",
            "from.type robot",
            F81,
            &["BadEnum"],
            put("/from/type", json!("robot")),
            E,
        ),
        r(
            "from.type.capitalized",
            "from.type Human",
            F81,
            &["BadEnum"],
            put("/from/type", json!("Human")),
            E,
        ),
        r(
            "from.type.node",
            "from.type node: an identity type (§6.3) but not an envelope sender type (§8.1)",
            &["v1.1 §8.1", "v1.1 §6.3"],
            &["BadEnum"],
            put("/from/type", json!("node")),
            E,
        ),
        r(
            "from.display.number",
            "from.display as a number",
            F81,
            &["WrongType"],
            put("/from/display", json!(1)),
            E,
        ),
        r(
            "from.device-id.empty",
            "device_id of 0 characters (1-128 required)",
            F82,
            &["WrongType"],
            put("/from/device_id", json!("")),
            E,
        ),
        r(
            "from.device-id.129",
            "device_id of 129 characters",
            F82,
            &["WrongType"],
            put("/from/device_id", json!("d".repeat(129))),
            E,
        ),
        r(
            "from.device-id.number",
            "device_id as a number",
            F82,
            &["WrongType"],
            put("/from/device_id", json!(7)),
            E,
        ),
        r(
            "from.agent.no-chain",
            "agent without delegation_chain: rejected as a delegation failure (§13.3 step 7; loom-protocol validate.rs)",
            F135,
            &["Delegation", "Interpretation"],
            agent(None),
            D,
        ),
        r(
            "from.agent.empty-chain",
            "agent with an empty delegation chain: not the full chain",
            F135,
            &["Delegation", "Interpretation"],
            agent(Some(json!([]))),
            D,
        ),
        r(
            "from.agent.link-not-object",
            "agent chain whose link is a string",
            &["v1.1 §13.1", "v1.1 §13.3"],
            &["Delegation", "Interpretation"],
            agent(Some(json!(["link"]))),
            D,
        ),
        r(
            "from.delegation-chain.not-array",
            "human sender with delegation_chain as a string",
            F81,
            &["WrongType"],
            put("/from/delegation_chain", json!("x")),
            E,
        ),
        r("to.missing", "to is MUST", F82, m, rm("/to"), E),
        r(
            "to.object",
            "to as a single recipient object",
            F81,
            &["WrongType"],
            put(
                "/to",
                json!({"identity": "loom://bob@node.test", "role": "primary"}),
            ),
            E,
        ),
        r(
            "to.empty",
            "to empty: at least one primary recipient",
            F82,
            &["NoPrimary"],
            put("/to", json!([])),
            E,
        ),
        r(
            "to.cc-only",
            "only a cc recipient",
            F82,
            &["NoPrimary"],
            put("/to/0/role", json!("cc")),
            E,
        ),
        r(
            "to.bcc-only",
            "only a bcc recipient",
            F82,
            &["NoPrimary"],
            put("/to/0/role", json!("bcc")),
            E,
        ),
        r(
            "to.role.unknown",
            "role to",
            F81,
            &["BadEnum"],
            vec![(
                "/to/-",
                Some(json!({"identity": "loom://carol@node.test", "role": "to"})),
            )],
            E,
        ),
        r(
            "to.role.missing",
            "a second recipient without role",
            F81,
            &["BadEnum", "MissingField"],
            vec![("/to/-", Some(json!({"identity": "loom://carol@node.test"})))],
            E,
        ),
        r(
            "to.role.capitalized",
            "role Primary",
            F81,
            &["BadEnum"],
            put("/to/0/role", json!("Primary")),
            E,
        ),
        r(
            "to.identity.missing",
            "a recipient without identity",
            F81,
            m,
            rm("/to/0/identity"),
            E,
        ),
        r(
            "to.identity.uppercase",
            "recipient address in uppercase",
            F61,
            a,
            put("/to/0/identity", json!("LOOM://BOB@NODE.TEST")),
            E,
        ),
        r(
            "to.identity.fragment",
            "recipient address with a fragment",
            F61,
            a,
            put("/to/0/identity", json!("loom://bob@node.test#x")),
            E,
        ),
        r(
            "to.identity.https",
            "https URL as a recipient",
            F61,
            a,
            put("/to/0/identity", json!("https://node.test/bob")),
            E,
        ),
        r(
            "to.entry-string",
            "a recipient that is a bare address string",
            F81,
            &["WrongType"],
            put("/to/-", json!("loom://carol@node.test")),
            E,
        ),
        r(
            "audience.string",
            "audience as a string",
            F83,
            &["WrongType"],
            put("/audience", json!("thread")),
            E,
        ),
        r(
            "audience.mode.missing",
            "audience object without mode",
            F83,
            &["BadEnum", "MissingField"],
            put("/audience", json!({"identities": []})),
            E,
        ),
        r(
            "audience.mode.unknown",
            "audience mode everyone",
            F83,
            &["BadEnum"],
            put("/audience/mode", json!("everyone")),
            E,
        ),
        r(
            "audience.custom.no-identities",
            "custom audience without identities: sender plus listed identities only",
            F83,
            &["Audience"],
            put("/audience", json!({"mode": "custom"})),
            E,
        ),
        r(
            "audience.custom.empty",
            "custom audience with an empty list (loom-protocol validate.rs: a custom audience lists at least one identity)",
            F83,
            &["Audience", "Interpretation"],
            put("/audience", json!({"mode": "custom", "identities": []})),
            E,
        ),
        r(
            "audience.identities.not-array",
            "audience.identities as a string",
            F83,
            &["WrongType"],
            put(
                "/audience",
                json!({"mode": "custom", "identities": "loom://bob@node.test"}),
            ),
            E,
        ),
        r(
            "audience.identities.bad-address",
            "audience identity not an address",
            F83,
            &["BadAddress"],
            put(
                "/audience",
                json!({"mode": "custom", "identities": ["bob"]}),
            ),
            E,
        ),
    ]
}

fn content_rows() -> Vec<Row> {
    let t = &["TypeRule"];
    let i = &["BadIntent"];
    let w = &["WrongType"];
    vec![
        r(
            "content.missing",
            "content is MUST",
            F82,
            &["MissingField"],
            rm("/content"),
            E,
        ),
        r(
            "content.string",
            "content as a string",
            F81,
            w,
            put("/content", json!("hi")),
            E,
        ),
        r(
            "content.empty",
            "content with neither human nor structured, not encrypted",
            F82,
            &["MissingField"],
            put("/content", json!({})),
            E,
        ),
        r(
            "content.only-encrypted-false",
            "content with only encrypted: false",
            F82,
            &["MissingField"],
            put("/content", json!({"encrypted": false})),
            E,
        ),
        r(
            "content.human.string",
            "content.human as a string",
            F81,
            w,
            put("/content/human", json!("hi")),
            E,
        ),
        r(
            "content.human.text-missing",
            "human without text",
            F81,
            &["MissingField"],
            rm("/content/human/text"),
            E,
        ),
        r(
            "content.human.text-number",
            "human.text as a number",
            F81,
            w,
            put("/content/human/text", json!(42)),
            E,
        ),
        r(
            "content.human.format-unknown",
            "human.format rtf",
            F81,
            &["BadEnum"],
            put("/content/human/format", json!("rtf")),
            E,
        ),
        r(
            "content.human.format-capitalized",
            "human.format Markdown",
            F81,
            &["BadEnum"],
            put("/content/human/format", json!("Markdown")),
            E,
        ),
        r(
            "content.human.locale-number",
            "human.locale as a number",
            F81,
            w,
            put("/content/human/locale", json!(1)),
            E,
        ),
        r(
            "content.structured.string",
            "content.structured as a string",
            F81,
            w,
            put("/content/structured", json!("task.create@v1")),
            E,
        ),
        r(
            "content.structured.intent-missing",
            "structured without intent",
            F181,
            &["BadIntent", "MissingField"],
            rm("/content/structured/intent"),
            E,
        ),
        r(
            "content.structured.intent-number",
            "intent as a number",
            F181,
            i,
            put("/content/structured/intent", json!(1)),
            E,
        ),
        r(
            "content.structured.parameters-array",
            "parameters as an array",
            F81,
            w,
            put("/content/structured/parameters", json!([1])),
            E,
        ),
        r(
            "content.structured.response-schema-number",
            "response_schema as a number",
            F181,
            w,
            put("/content/structured/response_schema", json!(1)),
            E,
        ),
        r(
            "content.encrypted-string",
            "content.encrypted \"false\" (a string)",
            F81,
            w,
            put("/content/encrypted", json!("false")),
            E,
        ),
        r(
            "intent.unversioned",
            "intent without @vN",
            F181,
            i,
            put("/content/structured/intent", json!("message.general")),
            E,
        ),
        r(
            "intent.single-segment",
            "intent general@v1: not namespaced",
            F181,
            i,
            put("/content/structured/intent", json!("general@v1")),
            E,
        ),
        r(
            "intent.uppercase-v",
            "intent message.general@V1",
            F181,
            i,
            put("/content/structured/intent", json!("message.general@V1")),
            E,
        ),
        r(
            "intent.minor-version",
            "intent message.general@v1.1: the version is a major number",
            F181,
            i,
            put("/content/structured/intent", json!("message.general@v1.1")),
            E,
        ),
        r(
            "intent.empty-version",
            "intent message.general@v",
            F181,
            i,
            put("/content/structured/intent", json!("message.general@v")),
            E,
        ),
        r(
            "intent.v0",
            "intent @v0: loom-protocol validate.rs requires a major version without leading zero, starting at 1",
            F181,
            &["BadIntent", "Interpretation"],
            put("/content/structured/intent", json!("message.general@v0")),
            E,
        ),
        r(
            "intent.empty-segment",
            "intent message..general@v1",
            F181,
            i,
            put("/content/structured/intent", json!("message..general@v1")),
            E,
        ),
        r(
            "intent.space",
            "intent with a space",
            F181,
            i,
            put(
                "/content/structured/intent",
                json!("message.general now@v1"),
            ),
            E,
        ),
        r(
            "type.message-no-human",
            "message without content.human",
            F92,
            t,
            rm("/content/human"),
            E,
        ),
        r(
            "type.task-no-structured",
            "task without content.structured",
            F92,
            t,
            vec![
                ("/type", Some(json!("task"))),
                ("/content/structured", None),
            ],
            E,
        ),
        r(
            "type.task-wrong-intent",
            "task whose intent is message.general@v1, not task.*@vN",
            F92,
            t,
            put("/type", json!("task")),
            E,
        ),
        r(
            "type.task-prefix-lookalike",
            "task whose intent is taskforce.create@v1: the namespace is task exactly",
            F92,
            t,
            typed("task", "taskforce.create@v1"),
            E,
        ),
        r(
            "type.receipt-no-structured",
            "receipt without content.structured",
            F92,
            t,
            vec![
                ("/type", Some(json!("receipt"))),
                ("/content/structured", None),
            ],
            E,
        ),
        r(
            "type.thread-op-no-structured",
            "thread_op without content.structured",
            &["v1.1 §9.2", "v1.1 §11.1"],
            t,
            vec![
                ("/type", Some(json!("thread_op"))),
                ("/content/structured", None),
            ],
            E,
        ),
        r(
            "type.thread-op-task-intent",
            "thread_op with task.create@v1",
            F92,
            t,
            typed("thread_op", "task.create@v1"),
            E,
        ),
        r(
            "type.thread-op-message-intent",
            "thread_op with the base message.general@v1 intent",
            F92,
            t,
            put("/type", json!("thread_op")),
            E,
        ),
        r(
            "type.thread-op-encrypted",
            "thread_op with encrypted content: nodes must read it to authorize (§12.4; loom-protocol validate.rs)",
            &["v1.1 §12.4", "v1.1 §9.2"],
            &["TypeRule", "Interpretation"],
            vec![
                ("/type", Some(json!("thread_op"))),
                ("/content", Some(encrypted("loom-e2ee-x25519-xchacha20-v1"))),
            ],
            E,
        ),
    ]
}

fn encrypted_rows() -> Vec<Row> {
    let ok = &["ValidEnvelope", "Encrypted"];
    let bad = &["Encrypted"];
    let interp = &["Encrypted", "Interpretation"];
    vec![
        r(
            "encrypted.valid.x25519-v1",
            "encrypted message, profile loom-e2ee-x25519-xchacha20-v1: no cleartext needed",
            F74,
            ok,
            put("/content", encrypted("loom-e2ee-x25519-xchacha20-v1")),
            OK,
        ),
        r(
            "encrypted.valid.x25519-v2",
            "profile loom-e2ee-x25519-xchacha20-v2",
            &["v1.1 §7.4.1"],
            ok,
            put("/content", encrypted("loom-e2ee-x25519-xchacha20-v2")),
            OK,
        ),
        r(
            "encrypted.valid.mls",
            "profile loom-e2ee-mls-1",
            &["v1.1 §7.4.1", "v1.1 §7.4.2"],
            ok,
            put("/content", encrypted("loom-e2ee-mls-1")),
            OK,
        ),
        r(
            "encrypted.valid.schema-profile",
            "profile loom-e2ee-1, the name in the §8.1 schema",
            F74,
            ok,
            put("/content", encrypted("loom-e2ee-1")),
            OK,
        ),
        r(
            "encrypted.valid.epoch-large",
            "epoch 42",
            F74,
            ok,
            enc_edit("/epoch", Some(json!(42))),
            OK,
        ),
        r(
            "encrypted.valid.wrapped-keys",
            "wrapped_keys for a recipient",
            F74,
            ok,
            enc_edit(
                "/wrapped_keys",
                Some(json!([{"to": "loom://bob@node.test", "ciphertext": ENC}])),
            ),
            OK,
        ),
        r(
            "encrypted.valid.task",
            "encrypted task: the type rule's cleartext requirement yields to encryption",
            &["v1.1 §7.4", "v1.1 §8.2", "v1.1 §9.2"],
            ok,
            vec![
                ("/type", Some(json!("task"))),
                ("/content", Some(encrypted("loom-e2ee-x25519-xchacha20-v1"))),
            ],
            OK,
        ),
        r(
            "encrypted.profile-missing",
            "encrypted content without a profile (loom-protocol validate.rs: the profile selects the decryption)",
            F74,
            interp,
            enc_edit("/profile", None),
            E,
        ),
        r(
            "encrypted.profile-unknown",
            "unknown profile: fail closed",
            &["v1.1 §7.4.2"],
            bad,
            enc_edit("/profile", Some(json!("loom-e2ee-rot13"))),
            E,
        ),
        r(
            "encrypted.ciphertext-missing",
            "encrypted content without ciphertext",
            F74,
            bad,
            enc_edit("/ciphertext", None),
            E,
        ),
        r(
            "encrypted.ciphertext-empty",
            "empty ciphertext",
            F74,
            bad,
            enc_edit("/ciphertext", Some(json!(""))),
            E,
        ),
        r(
            "encrypted.ciphertext-standard-base64",
            "ciphertext in the standard alphabet with padding",
            &["v1.1 §8.1", "v1.1 Appendix D"],
            bad,
            enc_edit("/ciphertext", Some(json!("ab+/cd=="))),
            E,
        ),
        r(
            "encrypted.ciphertext-number",
            "ciphertext as a number",
            F74,
            bad,
            enc_edit("/ciphertext", Some(json!(1))),
            E,
        ),
        r(
            "encrypted.epoch-missing",
            "no epoch (loom-protocol validate.rs: epochs key the secrets of §10.6)",
            &["v1.1 §7.4", "v1.1 §10.6"],
            interp,
            enc_edit("/epoch", None),
            E,
        ),
        r(
            "encrypted.epoch-negative",
            "epoch -1",
            &["v1.1 §7.4", "v1.1 §10.6"],
            bad,
            enc_edit("/epoch", Some(json!(-1))),
            E,
        ),
        r(
            "encrypted.epoch-string",
            "epoch \"0\"",
            &["v1.1 §7.4", "v1.1 §10.6"],
            bad,
            enc_edit("/epoch", Some(json!("0"))),
            E,
        ),
        r(
            "encrypted.with-cleartext-human",
            "encrypted content that also carries human text: the encrypted block replaces cleartext",
            &["v1.1 §7.4", "v1.0 §7.3"],
            bad,
            enc_edit("/human", Some(json!({"text": "leak"}))),
            E,
        ),
        r(
            "encrypted.with-cleartext-structured",
            "encrypted content that also carries structured content",
            &["v1.1 §7.4", "v1.0 §7.3"],
            bad,
            enc_edit("/structured", Some(json!({"intent": "message.general@v1"}))),
            E,
        ),
        r(
            "encrypted.wrapped-keys-object",
            "wrapped_keys as an object",
            F74,
            bad,
            enc_edit("/wrapped_keys", Some(json!({"to": "loom://bob@node.test"}))),
            E,
        ),
        r(
            "encrypted.wrapped-key-bad-address",
            "a wrapped key for an uppercase address",
            F74,
            bad,
            enc_edit(
                "/wrapped_keys",
                Some(json!([{"to": "loom://BOB@node.test", "ciphertext": ENC}])),
            ),
            E,
        ),
    ]
}

fn attachment_rows() -> Vec<Row> {
    let a = &["Attachment"];
    let hash = |h: &str| put("/attachments/0/hash", json!(h));
    vec![
        r(
            "attachments.object",
            "attachments as an object",
            F81,
            &["Attachment", "WrongType"],
            put("/attachments", json!({})),
            E,
        ),
        r(
            "attachments.entry-string",
            "an attachment that is a string",
            F81,
            a,
            put("/attachments/0", json!("invoice.pdf")),
            E,
        ),
        r(
            "attachments.id-missing",
            "attachment without id",
            F81,
            a,
            rm("/attachments/0/id"),
            E,
        ),
        r(
            "attachments.id-blob-prefix",
            "attachment id with the blob_ prefix",
            &["v1.1 §8.1", "v1.1 §8.4"],
            a,
            put(
                "/attachments/0/id",
                json!("blob_01JMKB8A6D3NMHG5KP6VWBTK00"),
            ),
            E,
        ),
        r(
            "attachments.blob-id-missing",
            "attachment without blob_id",
            F81,
            a,
            rm("/attachments/0/blob_id"),
            E,
        ),
        r(
            "attachments.blob-id-att-prefix",
            "blob_id with the att_ prefix",
            &["v1.1 §8.1", "v1.1 §8.4"],
            a,
            put(
                "/attachments/0/blob_id",
                json!("att_01JMKB8A6D3NMHG5KP6VWBTK01"),
            ),
            E,
        ),
        r(
            "attachments.hash-missing",
            "attachment without hash",
            F81,
            a,
            rm("/attachments/0/hash"),
            E,
        ),
        r(
            "attachments.hash-md5",
            "md5: hash",
            F81,
            a,
            hash("md5:098f6bcd4621d373cade4e832627b4f6"),
            E,
        ),
        r(
            "attachments.hash-no-prefix",
            "bare hex without sha256:",
            F81,
            a,
            hash("9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"),
            E,
        ),
        r(
            "attachments.hash-63",
            "63 hex digits",
            F81,
            a,
            hash("sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a0"),
            E,
        ),
        r(
            "attachments.hash-uppercase",
            "uppercase hex (loom-protocol validate.rs: lowercase, one string per digest)",
            F81,
            &["Attachment", "Interpretation"],
            hash("sha256:9F86D081884C7D659A2FEAA0C55AD015A3BF4F1B2B0B822CD15D6C15B0F00A08"),
            E,
        ),
        r(
            "attachments.size-negative",
            "size_bytes -1",
            F81,
            a,
            put("/attachments/0/size_bytes", json!(-1)),
            E,
        ),
        r(
            "attachments.size-fraction",
            "size_bytes 1.5",
            F81,
            a,
            put("/attachments/0/size_bytes", json!(1.5)),
            E,
        ),
        r(
            "attachments.size-string",
            "size_bytes \"1024\"",
            F81,
            a,
            put("/attachments/0/size_bytes", json!("1024")),
            E,
        ),
        r(
            "attachments.mime-no-subtype",
            "mime_type pdf",
            F81,
            a,
            put("/attachments/0/mime_type", json!("pdf")),
            E,
        ),
        r(
            "attachments.filename-number",
            "filename as a number",
            F81,
            a,
            put("/attachments/0/filename", json!(1)),
            E,
        ),
        r(
            "attachments.inline-string",
            "inline \"false\"",
            F81,
            a,
            put("/attachments/0/inline", json!("false")),
            E,
        ),
    ]
}

fn reference_rows() -> Vec<Row> {
    let f = &["Reference"];
    vec![
        r(
            "references.array",
            "references as an array",
            F81,
            &["Reference", "WrongType"],
            put("/references", json!([])),
            E,
        ),
        r(
            "references.in-reply-to-thread",
            "in_reply_to with the thr_ prefix",
            &["v1.1 §8.1", "v1.1 §8.4"],
            f,
            put(
                "/references/in_reply_to",
                json!("thr_01JMKB7W8P1QSGF2JM3SXYZR00"),
            ),
            E,
        ),
        r(
            "references.linked-envelopes-string",
            "linked_envelopes as a string",
            F81,
            f,
            put(
                "/references/linked_envelopes",
                json!("env_01JMKB7X9Q2RVHF3KN4TYZPG01"),
            ),
            E,
        ),
        r(
            "references.linked-envelope-thread",
            "a linked envelope with the thr_ prefix",
            &["v1.1 §8.1", "v1.1 §8.4"],
            f,
            put(
                "/references/linked_envelopes/0",
                json!("thr_01JMKB7W8P1QSGF2JM3SXYZR00"),
            ),
            E,
        ),
        r(
            "references.linked-thread-envelope",
            "a linked thread with the env_ prefix",
            &["v1.1 §8.1", "v1.1 §8.4"],
            f,
            put(
                "/references/linked_threads",
                json!(["env_01JMKB7X9Q2RVHF3KN4TYZPG01"]),
            ),
            E,
        ),
        r(
            "references.external-type-unknown",
            "external reference type ftp",
            F81,
            f,
            put("/references/external/0/type", json!("ftp")),
            E,
        ),
        r(
            "references.external-ref-missing",
            "external reference without ref",
            F81,
            f,
            rm("/references/external/0/ref"),
            E,
        ),
    ]
}

fn signature_rows() -> Vec<Row> {
    let f = &["SignatureShape", "Interpretation"];
    vec![
        r(
            "signature.missing",
            "no signature: all envelopes MUST be signed; loom-protocol reports signature problems as SIGNATURE_INVALID",
            &["v1.1 §7.1", "v1.1 §8.2", "v1.1 §24.2"],
            f,
            rm("/signature"),
            S,
        ),
        r(
            "signature.string",
            "signature as a string",
            FSIG,
            f,
            put("/signature", json!("sig")),
            S,
        ),
        r(
            "signature.algorithm-other",
            "algorithm RSA",
            &["v1.1 §7.1", "v1.1 §24.2"],
            f,
            put("/signature/algorithm", json!("RSA")),
            S,
        ),
        r(
            "signature.algorithm-missing",
            "no algorithm",
            &["v1.1 §7.1", "v1.1 §24.2"],
            f,
            rm("/signature/algorithm"),
            S,
        ),
        r(
            "signature.key-id-missing",
            "no signature.key_id",
            FSIG,
            f,
            rm("/signature/key_id"),
            S,
        ),
        r(
            "signature.key-id-encryption",
            "signature.key_id names an encryption key (k_enc_)",
            &["v1.1 §8.4", "v1.1 §24.2"],
            f,
            put("/signature/key_id", json!("k_enc_alice_1")),
            S,
        ),
        r(
            "signature.key-id-differs",
            "signature.key_id differs from from.key_id, the sender's signing key reference",
            &["v1.1 §7.3", "v1.1 §8.2", "v1.1 §24.2"],
            f,
            put("/signature/key_id", json!("k_sign_alice_2")),
            S,
        ),
        r(
            "signature.value-missing",
            "no signature.value",
            FSIG,
            f,
            rm("/signature/value"),
            S,
        ),
        r(
            "signature.value-not-base64url",
            "signature.value with '+' and '/'",
            &["v1.1 §7.3", "v1.1 Appendix D"],
            f,
            put("/signature/value", json!("+/".repeat(43))),
            S,
        ),
        r(
            "signature.value-short",
            "signature.value of 32 bytes",
            &["v1.1 §7.3", "v1.1 Appendix D"],
            f,
            put("/signature/value", json!("A".repeat(43))),
            S,
        ),
        r(
            "signature.context-number",
            "signature.context as a number",
            FSIG,
            f,
            put("/signature/context", json!(1)),
            S,
        ),
    ]
}

fn size_case(
    id: &'static str,
    comment: &'static str,
    flags: &'static [&'static str],
    limit: usize,
    expect: Option<&'static str>,
) -> Case {
    let c = Case::new(id, comment, &["v1.1 §24.2"])
        .flags(flags)
        .input("envelope", envelope(vec![]))
        .input("max_envelope_bytes", limit);
    match expect {
        None => c.valid(),
        Some(code) => c.invalid(code),
    }
}

fn size_cases() -> Vec<Case> {
    let size = loom_protocol::jcs::to_canonical_bytes(&envelope(vec![])).len();
    vec![
        size_case(
            "size.at-limit",
            "the envelope's canonical size equals the node's limit",
            &["SizeLimit", "Interpretation"],
            size,
            OK,
        ),
        size_case(
            "size.over-by-one",
            "one byte over the node's limit",
            &["SizeLimit", "Interpretation"],
            size - 1,
            P,
        ),
        size_case(
            "size.far-over",
            "a node limit of 256 bytes",
            &["SizeLimit", "Interpretation"],
            256,
            P,
        ),
        size_case(
            "size.limit-zero",
            "limit 0 disables the check, as §10.7 defines for thread limits (loom-protocol validate.rs)",
            &["SizeLimit", "Interpretation"],
            0,
            OK,
        ),
    ]
}

/// Builds the file.
pub fn build() -> FileBuilder {
    let rows = [
        valid_rows(),
        header_rows(),
        timestamp_rows(),
        address_rows(),
        content_rows(),
        encrypted_rows(),
        attachment_rows(),
        reference_rows(),
        signature_rows(),
    ];
    notes(FileBuilder::new(
        "envelope-validation",
        "Envelope structure and type rules (v1.1 §6.1, §7.4, §8.1-§8.4, §9.1-§9.2, §13.5, §18.1; v1.0 §8): is 'envelope' well formed? The signature is not verified here (every envelope carries a genuine signature by the fixed-seed key 'alice' unless the signature object is the thing mutated), but its shape is checked. 'max_envelope_bytes', when present, is the node's size limit, applied to the byte length of the RFC 8785 form of the whole envelope.",
    ))
    .group("validate-envelope", Value::Null)
    .tests(rows.into_iter().flatten().map(Row::case))
    .tests(size_cases())
}

fn notes(f: FileBuilder) -> FileBuilder {
    f.note("ValidEnvelope", "A well-formed envelope that must be accepted.", "over-strict validation", "Legitimate envelopes from peers are rejected.")
        .note("UnknownAccepted", "Unknown types and members are accepted (v1.1 §9.1).", "closed-world validation", "Extensions cannot be deployed without every node upgrading.")
        .note("Interpretation", "The spec is silent or loose here; the expectation pins loom-protocol's documented interpretation, named in the comment.", "divergent reading of an underspecified rule", "Two conforming nodes disagree on the same envelope.")
        .note("MissingField", "A required member is absent (or null).", "missing presence check", "Downstream code dereferences a field that is not there.")
        .note("WrongType", "A member has the wrong JSON type.", "type confusion", "Crashes or misrouting on hostile input.")
        .note("BadVersion", "loom is not exactly \"1.1\".", "lenient version check", "Envelopes of another protocol version are processed under v1.1 rules.")
        .note("BadId", "An ID with the wrong prefix or a malformed ULID (v1.1 §8.4).", "lenient ID parsing", "Type confusion between envelopes and threads; inconsistent ordering.")
        .note("BadTimestamp", "A timestamp that is not an ISO 8601 / RFC 3339 date-time with zone.", "lenient date parsing", "Expiry and ordering differ between nodes.")
        .note("BadAddress", "An address that is not canonical lowercase loom:// or bridge:// without fragment (v1.1 §6.1).", "lenient address parsing", "Spoofing via look-alike addresses; fragments leak client state.")
        .note("BadEnum", "A value outside a closed enumeration (priority, role, from.type, format, audience mode).", "missing enum check", "Unknown semantics are silently applied.")
        .note("NoPrimary", "to has no primary recipient (v1.1 §8.2).", "missing cardinality check", "An envelope nobody is responsible for answering.")
        .note("Audience", "Audience rules of v1.1 §8.3.", "missing audience check", "Envelopes visible to the wrong people.")
        .note("Delegation", "Agent senders must carry their full delegation chain (v1.1 §13.5).", "missing agent check", "Agents act without proven authority.")
        .note("TypeRule", "A type rule of v1.1 §9.2 (required content per type, intent namespace).", "missing type rule", "Tasks and thread operations without machine-readable intent.")
        .note("BadIntent", "An intent that is not namespace.action@vN (v1.1 §18.1).", "lenient intent parsing", "Agents dispatch on unversioned or malformed intents.")
        .note("Encrypted", "Encrypted content shape (v1.1 §7.4).", "lenient E2EE shape check", "Undecryptable or half-cleartext envelopes are stored.")
        .note("Attachment", "Attachment shape (v1.1 §8.1).", "lenient attachment check", "Blob substitution or unverifiable attachments.")
        .note("Reference", "References shape (v1.1 §8.1).", "lenient reference check", "Broken links between envelopes and threads.")
        .note("SignatureShape", "The signature object's shape (v1.1 §7.1, §7.3), reported as SIGNATURE_INVALID.", "missing signature shape check", "Unsigned or unverifiable envelopes are accepted.")
        .note("SizeLimit", "The node's configured size limit (v1.1 §24.2 PAYLOAD_TOO_LARGE).", "missing size limit", "Memory exhaustion by oversized envelopes.")
}

/// The inputs and outputs of the file.
pub fn schema() -> AreaSchema {
    AreaSchema {
        kinds: vec!["validate-envelope"],
        inputs: vec![
            (
                "envelope",
                json!({"description": "the envelope, a JSON value"}),
            ),
            (
                "max_envelope_bytes",
                json!({"type": "integer", "minimum": 0, "description": "node size limit in bytes of the RFC 8785 form; 0 disables"}),
            ),
        ],
        required: vec!["envelope"],
        expected: json!(true),
        errors: vec![
            "ENVELOPE_INVALID",
            "SIGNATURE_INVALID",
            "DELEGATION_INVALID",
            "PAYLOAD_TOO_LARGE",
        ],
    }
}
