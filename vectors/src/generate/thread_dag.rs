//! Area `thread-dag`: the envelope DAG of a thread (v1.1 §10.2), its size limits (§10.7) and
//! the canonical rendering order (§10.3).
//!
//! Envelopes are written in a small notation: `B<A@2` is envelope B whose `parent_id` is A,
//! created 2 s after 12:00:00Z; `A@0` is a root; `@=TEXT` gives `created_at` verbatim.
//! Letters become `env_` ULIDs that sort like the letters (Crockford base32, no I L O U).
//! Every expectation is a literal of the case tables below.

use super::schema::AreaSchema;
use super::{Case, FileBuilder};
use serde_json::{Value, json};

/// The envelope ID for letter `c`.
fn env(c: char) -> String {
    format!("env_01JN000000000000000000000{c}")
}

/// One envelope header from the notation `ID[<PARENT]@SECONDS` or `ID[<PARENT]@=TIMESTAMP`.
fn header(spec: &str) -> Value {
    let (ids, at) = spec.split_once('@').expect("ID@TIME");
    let created_at = match at.strip_prefix('=') {
        Some(verbatim) => verbatim.to_owned(),
        None => format!(
            "2026-03-01T12:00:{:02}Z",
            at.parse::<u32>().expect("seconds")
        ),
    };
    let mut chars = ids.chars();
    let id = chars.next().expect("id");
    let parent = match chars.as_str().strip_prefix('<') {
        Some(p) => Value::from(env(p.chars().next().expect("parent"))),
        None => Value::Null,
    };
    json!({"id": env(id), "parent_id": parent, "created_at": created_at})
}

fn headers(specs: &str) -> Value {
    specs.split_whitespace().map(header).collect()
}

/// Letters → envelope IDs.
fn ids(letters: &str) -> Value {
    letters
        .chars()
        .filter(|c| !c.is_whitespace())
        .map(env)
        .collect()
}

const SPEC_DAG: &[&str] = &["v1.1 §10.2"];
const SPEC_LIMITS: &[&str] = &["v1.1 §10.7", "v1.1 §10.2"];
const SPEC_ORDER: &[&str] = &["v1.1 §10.3"];

/// An `insert-envelopes` case: `(id, comment, spec, flags, (max_envelopes_per_thread,
/// max_pending_parents), envelopes, outcome)`; a valid outcome is `(pending_parent letters in
/// insertion order, unresolved letters sorted)`.
type Insert = (
    &'static str,
    &'static str,
    &'static [&'static str],
    &'static [&'static str],
    (u64, u64),
    &'static str,
    Result<(&'static str, &'static str), &'static str>,
);

const NO_LIMITS: (u64, u64) = (0, 0);
const DEFAULTS: (u64, u64) = (10000, 500);

#[rustfmt::skip]
const INSERTS: &[Insert] = &[
    ("accept.root", "a lone root is accepted with no pending parent", SPEC_DAG, &["Accepted"], DEFAULTS, "A@0", Ok(("", ""))),
    ("accept.chain-in-order", "a root, its reply and the reply's reply, each after its parent", SPEC_DAG, &["Accepted"], DEFAULTS, "A@0 B<A@1 C<B@2", Ok(("", ""))),
    ("accept.siblings", "several replies to one parent: a DAG, not a chain", SPEC_DAG, &["Accepted"], DEFAULTS, "A@0 B<A@1 C<A@2 D<A@3", Ok(("", ""))),
    ("pending.child-before-parent", "a reply before its parent is accepted with pending_parent; the parent's arrival resolves it", SPEC_DAG, &["PendingParent"], DEFAULTS, "B<A@1 A@0", Ok(("B", ""))),
    ("pending.orphan-stays", "a reply whose parent never arrives stays accepted and unresolved", SPEC_DAG, &["PendingParent"], DEFAULTS, "A@0 B<X@1", Ok(("B", "B"))),
    ("pending.two-children-one-missing-parent", "two replies waiting for the same missing parent are both accepted", SPEC_DAG, &["PendingParent"], DEFAULTS, "B<X@1 C<X@2", Ok(("BC", "BC"))),
    ("pending.reverse-chain", "a chain delivered leaf first: every envelope but the root waits, and all resolve", SPEC_DAG, &["PendingParent"], DEFAULTS, "E<D@4 D<C@3 C<B@2 B<A@1 A@0", Ok(("EDCB", ""))),
    ("pending.missing-grandparent", "the missing parent arrives but its own parent is missing: only it stays unresolved", SPEC_DAG, &["PendingParent"], DEFAULTS, "C<B@2 B<A@1", Ok(("CB", "B"))),
    ("pending.parent-arrives-late-with-siblings", "a parent arriving after two waiting replies resolves both", SPEC_DAG, &["PendingParent"], DEFAULTS, "A@0 C<B@2 D<B@3 B<A@1", Ok(("CD", ""))),
    ("pending.orphan-of-unknown-thread-member", "an orphan's own replies are not pending: their parent (the orphan) is in the thread", SPEC_DAG, &["PendingParent"], DEFAULTS, "B<X@1 C<B@2", Ok(("B", "B"))),
    ("duplicate.same-header", "the same envelope ID twice", SPEC_DAG, &["Duplicate"], DEFAULTS, "A@0 A@0", Err("ENVELOPE_DUPLICATE")),
    ("duplicate.different-parent", "an ID already in the thread, now claiming another parent", SPEC_DAG, &["Duplicate"], DEFAULTS, "A@0 B<A@1 C<A@2 B<C@3", Err("ENVELOPE_DUPLICATE")),
    ("duplicate.of-pending", "a second copy of an envelope still waiting for its parent", SPEC_DAG, &["Duplicate"], DEFAULTS, "B<X@1 B<X@1", Err("ENVELOPE_DUPLICATE")),
    ("duplicate.later-in-sequence", "a root repeated after other envelopes", SPEC_DAG, &["Duplicate"], DEFAULTS, "A@0 B<A@1 C<B@2 A@5", Err("ENVELOPE_DUPLICATE")),
    ("cycle.self-parent", "an envelope whose parent_id is its own id", SPEC_DAG, &["Cycle"], DEFAULTS, "A<A@0", Err("ENVELOPE_INVALID")),
    ("cycle.self-parent-in-thread", "a self-parented envelope after a valid root", SPEC_DAG, &["Cycle"], DEFAULTS, "A@0 B<B@1", Err("ENVELOPE_INVALID")),
    ("cycle.two", "B waits for A; A then names B as its parent", SPEC_DAG, &["Cycle"], DEFAULTS, "B<A@1 A<B@0", Err("ENVELOPE_INVALID")),
    ("cycle.three", "B→A, C→B wait; A naming C closes a three-envelope cycle", SPEC_DAG, &["Cycle"], DEFAULTS, "B<A@1 C<B@2 A<C@0", Err("ENVELOPE_INVALID")),
    ("cycle.long", "a cycle closed through a chain of five envelopes", SPEC_DAG, &["Cycle"], DEFAULTS, "B<A@1 C<B@2 D<C@3 E<D@4 A<E@0", Err("ENVELOPE_INVALID")),
    ("cycle.through-branch", "the missing parent names a descendant on a side branch", SPEC_DAG, &["Cycle"], DEFAULTS, "B<A@1 C<B@2 D<B@3 A<D@0", Err("ENVELOPE_INVALID")),
    ("cycle.near-miss", "the missing parent names another missing envelope, not a descendant: no cycle", SPEC_DAG, &["PendingParent"], DEFAULTS, "B<A@1 C<B@2 A<X@0", Ok(("BA", "A"))),
    ("cycle.near-miss-sibling-tree", "the late parent names an envelope of an unrelated subtree: no cycle", SPEC_DAG, &["PendingParent"], DEFAULTS, "R@0 S<R@1 B<A@3 A<S@2", Ok(("B", ""))),
    ("limit.envelopes.at-limit", "max_envelopes_per_thread = 3: the third envelope is still accepted", SPEC_LIMITS, &["EnvelopeLimit"], (3, 500), "A@0 B<A@1 C<A@2", Ok(("", ""))),
    ("limit.envelopes.over-limit", "max_envelopes_per_thread = 3: once 3 are stored, the fourth is rejected", SPEC_LIMITS, &["EnvelopeLimit"], (3, 500), "A@0 B<A@1 C<A@2 D<A@3", Err("ENVELOPE_INVALID")),
    ("limit.envelopes.one", "max_envelopes_per_thread = 1: only the root fits", SPEC_LIMITS, &["EnvelopeLimit"], (1, 500), "A@0 B<A@1", Err("ENVELOPE_INVALID")),
    ("limit.envelopes.counts-orphans", "waiting envelopes count toward max_envelopes_per_thread", SPEC_LIMITS, &["EnvelopeLimit"], (2, 500), "B<X@1 C<X@2 A@0", Err("ENVELOPE_INVALID")),
    ("limit.envelopes.zero-disables", "max_envelopes_per_thread = 0 disables the limit", SPEC_LIMITS, &["LimitDisabled"], (0, 500), "A@0 B<A@1 C<A@2 D<A@3 E<A@4 F<A@5", Ok(("", ""))),
    ("limit.envelopes.duplicate-first", "a duplicate arriving when the thread is full is reported as a duplicate", SPEC_LIMITS, &["Duplicate", "EnvelopeLimit", "Interpretation"], (2, 500), "A@0 B<A@1 B<A@1", Err("ENVELOPE_DUPLICATE")),
    ("limit.pending.at-limit", "max_pending_parents = 2: a second unresolved parent reference is accepted", SPEC_LIMITS, &["PendingLimit"], (10000, 2), "A@0 B<X@1 C<Y@2", Ok(("BC", "BC"))),
    ("limit.pending.over-limit", "max_pending_parents = 2: a third unresolved parent reference is rejected", SPEC_LIMITS, &["PendingLimit"], (10000, 2), "A@0 B<X@1 C<Y@2 D<Z@3", Err("ENVELOPE_INVALID")),
    ("limit.pending.root-still-accepted", "with the pending limit reached, an envelope without parent_id is accepted", SPEC_LIMITS, &["PendingLimit"], (10000, 2), "B<X@1 C<Y@2 A@0", Ok(("BC", "BC"))),
    ("limit.pending.known-parent-still-accepted", "with the pending limit reached, a reply to a stored envelope is accepted", SPEC_LIMITS, &["PendingLimit"], (10000, 2), "A@0 B<X@1 C<Y@2 D<A@3", Ok(("BC", "BC"))),
    ("limit.pending.resolution-frees-room", "when a missing parent arrives, its reference no longer counts", SPEC_LIMITS, &["PendingLimit"], (10000, 2), "B<X@1 C<Y@2 X@0 D<Z@3", Ok(("BCD", "CD"))),
    ("limit.pending.same-parent-counts-twice", "two replies to one missing parent are two unresolved references", SPEC_LIMITS, &["PendingLimit", "Interpretation"], (10000, 1), "B<X@1 C<X@2", Err("ENVELOPE_INVALID")),
    ("limit.pending.zero-disables", "max_pending_parents = 0 disables the limit", SPEC_LIMITS, &["LimitDisabled"], (10000, 0), "B<V@1 C<W@2 D<X@3 E<Y@4 F<Z@5", Ok(("BCDEF", "BCDEF"))),
    ("limit.both-disabled", "both limits 0: nothing is limited", SPEC_LIMITS, &["LimitDisabled"], NO_LIMITS, "B<X@1 C<Y@2 A@0 D<A@3", Ok(("BC", "BC"))),
];

fn insert_cases() -> Vec<Case> {
    INSERTS
        .iter()
        .map(|(id, comment, spec, flags, (max_env, max_pend), envs, outcome)| {
            let c = Case::new(*id, *comment, spec)
                .flags(flags)
                .input("limits", json!({"max_envelopes_per_thread": max_env, "max_pending_parents": max_pend}))
                .input("envelopes", headers(envs));
            match outcome {
                Ok((pending, unresolved)) => {
                    c.valid_with(json!({"pending_parent": ids(pending), "unresolved": ids(unresolved)}))
                }
                Err(code) => c.invalid(code),
            }
        })
        .collect()
}

/// Cases whose headers are not expressible in the notation.
fn insert_special_cases() -> Vec<Case> {
    let limits = json!({"max_envelopes_per_thread": 10000, "max_pending_parents": 500});
    let two_parents = json!([header("A@0"), header("B<A@1"), {"id": env('C'), "parent_id": [env('A'), env('B')], "created_at": "2026-03-01T12:00:02Z"}]);
    let one_in_array = json!([header("A@0"), {"id": env('B'), "parent_id": [env('A')], "created_at": "2026-03-01T12:00:01Z"}]);
    let absent = json!([{"id": env('A'), "created_at": "2026-03-01T12:00:00Z"}, header("B<A@1")]);
    vec![
        Case::new(
            "single-parent.two-parents",
            "parent_id listing two envelopes: a LOOM envelope has at most one parent",
            SPEC_DAG,
        )
        .flags(&["SingleParent"])
        .input("limits", limits.clone())
        .input("envelopes", two_parents)
        .invalid("ENVELOPE_INVALID"),
        Case::new(
            "single-parent.array-of-one",
            "parent_id must be an env_ ID or null, not an array, even of one",
            &["v1.1 §10.2", "v1.1 §8.1"],
        )
        .flags(&["SingleParent"])
        .input("limits", limits.clone())
        .input("envelopes", one_in_array)
        .invalid("ENVELOPE_INVALID"),
        Case::new(
            "accept.absent-parent-id",
            "a header without parent_id is a root, like parent_id null",
            &["v1.1 §10.2", "v1.1 §8.2"],
        )
        .flags(&["Accepted"])
        .input("limits", limits)
        .input("envelopes", absent)
        .valid_with(json!({"pending_parent": [], "unresolved": []})),
    ]
}

/// A `rendering-order` case: `(id, comment, flags, envelopes in arrival order, expected order)`.
type Order = (
    &'static str,
    &'static str,
    &'static [&'static str],
    &'static str,
    &'static str,
);

#[rustfmt::skip]
const ORDERS: &[Order] = &[
    ("single.root", "one envelope", &["Topological"], "A@0", "A"),
    ("chain.in-order", "a chain renders parent before child", &["Topological"], "A@0 B<A@1 C<B@2", "ABC"),
    ("chain.reverse-arrival", "arrival order does not matter: a chain delivered leaf first", &["Topological", "ArrivalOrder"], "C<B@2 B<A@1 A@0", "ABC"),
    ("chain.child-clock-behind", "a reply whose created_at precedes its parent's still renders after it", &["Topological"], "A@5 B<A@1 C<B@0", "ABC"),
    ("chain.ids-descending", "parent before child even when the child's id sorts first", &["Topological"], "Z@0 Y<Z@1 X<Y@2", "ZYX"),
    ("siblings.by-created-at", "replies to one parent render by created_at", &["SiblingTime"], "A@0 D<A@1 C<A@2 B<A@3", "ADCB"),
    ("siblings.by-created-at-reverse-arrival", "the same replies delivered newest first", &["SiblingTime", "ArrivalOrder"], "B<A@3 C<A@2 D<A@1 A@0", "ADCB"),
    ("siblings.tie-by-id", "replies with equal created_at render by id", &["SiblingTie"], "A@0 D<A@1 B<A@1 C<A@1", "ABCD"),
    ("siblings.tie-by-id-reverse-arrival", "equal created_at, delivered in descending id order", &["SiblingTie", "ArrivalOrder"], "D<A@1 C<A@1 B<A@1 A@0", "ABCD"),
    ("siblings.time-beats-id", "created_at decides before id", &["SiblingTime"], "A@0 B<A@2 C<A@1", "ACB"),
    ("siblings.mixed-ties", "five replies, two time ties, broken by id", &["SiblingTie"], "A@0 F<A@3 B<A@3 E<A@1 C<A@2 D<A@1", "ADECBF"),
    ("siblings.root-clock-ahead", "replies all created before the root still follow it, in their own time order", &["Topological", "SiblingTime"], "A@9 B<A@2 C<A@1", "ACB"),
    ("branch.subtree-before-later-sibling", "R's replies A@1, B@3; A's reply C@2 is ready before B by time", &["SiblingTime", "Interpretation"], "R@0 A<R@1 B<R@3 C<A@2", "RACB"),
    ("branch.interleave-by-time", "cousins interleave by created_at: R, A@1, B@2 (R's replies), then C@3 (A's reply)", &["SiblingTime", "Interpretation"], "R@0 A<R@1 B<R@2 C<A@3", "RABC"),
    ("branch.interleave-by-time-reverse-arrival", "the same thread delivered leaf first renders the same", &["ArrivalOrder", "Interpretation"], "C<A@3 B<R@2 A<R@1 R@0", "RABC"),
    ("branch.cousin-tie-by-id", "two ready cousins with equal created_at render by id", &["SiblingTie", "Interpretation"], "R@0 A<R@1 B<R@2 D<A@3 C<B@3", "RABCD"),
    ("branch.deep-and-wide", "two subtrees of depth 2; every envelope waits for its parent, ready ones go by created_at", &["Topological", "Interpretation"], "R@0 A<R@1 B<R@2 C<A@5 D<B@3 E<D@4 F<C@6", "RABDECF"),
    ("orphan.after-root", "an orphan renders among the ready envelopes by its created_at", &["Orphan", "Interpretation"], "R@0 A<R@2 G<X@1", "RGA"),
    ("orphan.before-root", "an orphan created before the root renders first", &["Orphan", "Interpretation"], "R@5 G<X@1 A<R@6", "GRA"),
    ("orphan.with-replies", "an orphan's replies follow it", &["Orphan", "Topological", "Interpretation"], "H<G@3 G<X@1 R@0 Q<R@2", "RGQH"),
    ("orphan.resolved", "once the missing parent arrives the reply renders after it", &["Topological", "ArrivalOrder"], "B<A@1 C<B@2 A@3", "ABC"),
    ("time.fraction-after-whole-second", "12:00:00.5Z is after 12:00:00Z, though the text sorts first", &["TimeComparison"], "R@0 A<R@=2026-03-01T12:00:00.5Z B<R@=2026-03-01T12:00:00Z", "RBA"),
    ("time.offset-equal-instant", "13:00:00+01:00 and 12:00:00Z are the same instant: id decides", &["TimeComparison", "SiblingTie"], "R@=2026-03-01T11:00:00Z B<R@=2026-03-01T12:00:00Z A<R@=2026-03-01T13:00:00+01:00", "RAB"),
    ("time.offset-earlier-instant", "12:30:00+01:00 is 11:30Z, before 12:00:00Z", &["TimeComparison"], "R@=2026-03-01T11:00:00Z A<R@=2026-03-01T12:00:00Z B<R@=2026-03-01T12:30:00+01:00", "RBA"),
    ("time.milliseconds", "created_at differing by one millisecond", &["TimeComparison"], "R@0 A<R@=2026-03-01T12:00:01.002Z B<R@=2026-03-01T12:00:01.001Z", "RBA"),
];

fn order_cases() -> Vec<Case> {
    ORDERS
        .iter()
        .map(|(id, comment, flags, envs, order)| {
            Case::new(*id, *comment, SPEC_ORDER)
                .flags(flags)
                .input("envelopes", headers(envs))
                .valid_with(ids(order))
        })
        .collect()
}

/// Builds `v1/thread-dag.json`.
pub fn build() -> FileBuilder {
    FileBuilder::new(
        "thread-dag",
        "The envelope DAG of a thread (v1.1 §10.2), its size limits (§10.7) and the canonical rendering order (§10.3). Envelopes are given as headers {id, parent_id, created_at} in arrival order.",
    )
    .note("Accepted", "Well-formed envelopes in a well-formed DAG.", "over-strict DAG check", "Replies are refused.")
    .note("PendingParent", "A reply whose parent is not (yet) in the thread: accepted and marked meta.pending_parent.", "rejecting out-of-order delivery", "Federated replies that overtake their parent are lost.")
    .note("Duplicate", "An envelope ID already in the thread.", "missing duplicate check", "Replays and re-deliveries create duplicate messages or overwrite stored ones.")
    .note("Cycle", "An envelope whose parent chain would lead back to itself.", "missing cycle check", "Rendering and traversal loop forever or drop the cycle's envelopes.")
    .note("SingleParent", "A parent_id that names more than one envelope or is not a single ID.", "multi-parent DAG", "Nodes disagree on a thread's shape.")
    .note("EnvelopeLimit", "max_envelopes_per_thread on both sides of the boundary.", "off-by-one or missing limit", "Unbounded threads exhaust storage.")
    .note("PendingLimit", "max_pending_parents on both sides of the boundary; only envelopes with an unresolved parent count and are refused.", "off-by-one or missing limit", "A peer floods a thread with orphans.")
    .note("LimitDisabled", "A limit set to 0, which disables it.", "0 read as 'nothing allowed'", "Configurations meant to be unlimited refuse every envelope.")
    .note("Topological", "Parents render before their replies, whatever the clocks say.", "time-only ordering", "Replies show above what they answer.")
    .note("SiblingTime", "Replies to one parent render by created_at ascending.", "arrival-order rendering", "Participants see a conversation in different orders.")
    .note("SiblingTie", "Equal created_at broken by id ascending.", "unstable sort", "Order changes between clients or reloads.")
    .note("ArrivalOrder", "The same set of envelopes delivered in another order renders the same.", "insertion-order dependence", "Two nodes render one thread differently.")
    .note("Orphan", "Envelopes whose parent is missing render with the roots.", "orphans dropped from rendering", "Out-of-order replies are invisible until their parent arrives.")
    .note("TimeComparison", "created_at compared as instants (fractions, offsets), not as text.", "string comparison of timestamps", "Envelopes with offsets or fractional seconds render out of order.")
    .note("Interpretation", "The spec leaves this open; the vector pins loom-protocol's documented reading. Order: §10.3 fixes parent-before-child and sibling order but not how different branches interleave; thread/order.rs uses Kahn's algorithm with the ready set ordered by (created_at, id), orphans ready from the start, which is the order the existing v1.1 node produces. Limits: dag.rs checks a duplicate before the size limits and counts each envelope waiting for a missing parent as one unresolved parent reference.", "divergent reading of an open point", "Implementations render or limit differently without either being wrong by the letter of the spec.")
    .group("insert-envelopes", Value::Null)
    .tests(insert_cases())
    .tests(insert_special_cases())
    .group("rendering-order", Value::Null)
    .tests(order_cases())
}

/// The schema of `v1/thread-dag.json`.
pub fn schema() -> AreaSchema {
    let env_id = json!({"type": "string", "pattern": "^env_[0-7][0-9A-HJKMNP-TV-Z]{25}$"});
    let header = json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["id", "created_at"],
        "properties": {
            "id": env_id,
            "parent_id": {"anyOf": [env_id, {"type": "null"}, {"type": "array", "items": env_id}]},
            "created_at": {"type": "string"}
        }
    });
    let limit = json!({"type": "integer", "minimum": 0});
    AreaSchema {
        kinds: vec!["insert-envelopes", "rendering-order"],
        inputs: vec![
            ("envelopes", json!({"type": "array", "items": header})),
            (
                "limits",
                json!({"type": "object", "additionalProperties": false,
                    "required": ["max_envelopes_per_thread", "max_pending_parents"],
                    "properties": {"max_envelopes_per_thread": limit, "max_pending_parents": limit}}),
            ),
        ],
        required: vec!["envelopes"],
        expected: json!({"oneOf": [
            {"type": "array", "items": env_id},
            {"type": "object", "additionalProperties": false, "required": ["pending_parent", "unresolved"],
             "properties": {"pending_parent": {"type": "array", "items": env_id}, "unresolved": {"type": "array", "items": env_id}}}
        ]}),
        errors: vec!["ENVELOPE_INVALID", "ENVELOPE_DUPLICATE"],
    }
}
