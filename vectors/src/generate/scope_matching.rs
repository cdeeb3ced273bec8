//! Area `scope-matching`: delegation scope syntax, matching of an action against a scope set,
//! and the subset rule of sub-delegation (v1.1 §13.2; v1.0 §12.3).
//!
//! Every expectation below is a literal written from those sections; where they are silent
//! the `Interpretation` flag marks the reading `loom_protocol::scope` documents.

use super::schema::{AreaSchema, string};
use super::{Case, FileBuilder};
use serde_json::{Value, json};

const AREA: &str = "scope-matching";
const ERR: &str = "DELEGATION_INVALID";
const S132: &str = "v1.1 §13.2";
const S123: &str = "v1.0 §12.3";
const S133: &str = "v1.1 §13.3";

/// Flags of this file.
const NOTES: &[(&str, &str, &str, &str)] = &[
    (
        "SpecExample",
        "A scope or rule quoted from v1.1 §13.2 or v1.0 §12.3.",
        "spec conformance",
        "the spec's own examples are handled differently from the spec",
    ),
    (
        "SegmentBoundary",
        "A wildcard or name must match whole dot-separated segments, not string prefixes.",
        "prefix matching on raw strings",
        "a scope for `thread.*` also grants `threadx.read`",
    ),
    (
        "Wildcard",
        "Wildcard semantics: `*` alone, trailing `.*`, and what a wildcard does and does not cover.",
        "wildcard matching",
        "an agent gets more (or less) authority than delegated",
    ),
    (
        "Malformed",
        "A scope string that is not a dot-separated name (optionally ending in `.*`) or `*`.",
        "missing scope syntax check",
        "a link with a nonsense scope is accepted, and matching on it is undefined",
    ),
    (
        "Subset",
        "Sub-delegation scope must be within the parent scope.",
        "scope escalation",
        "a sub-agent gains authority its delegator never had",
    ),
    (
        "Interpretation",
        "The spec is silent; the expectation pins loom-protocol's documented reading (scope.rs): names are lowercase [a-z0-9_-] segments, matching is case-sensitive, `x.*` stands for at least one further segment (any depth) and not for bare `x`, an action's `@vN` intent version is ignored by an unversioned scope, a scope itself carries no version, and \"strict subset\" means no name outside the parent (an equal set is allowed, as v1.0 §12.3 illustrates).",
        "divergent reading of an underspecified rule",
        "two nodes disagree on whether the same chain is valid",
    ),
];

/// The expected answer: `Some(b)` is a valid answer `b`; `None` is a rejection (malformed).
type Outcome = Option<bool>;
const YES: Outcome = Some(true);
const NO: Outcome = Some(false);
const BAD: Outcome = None;

/// A syntax case: (id suffix, scope, well-formed?, flags, comment).
type SyntaxRow = (
    &'static str,
    &'static str,
    bool,
    &'static [&'static str],
    &'static str,
);

#[rustfmt::skip]
const SYNTAX: &[SyntaxRow] = &[
    ("star", "*", true, &["SpecExample"], "`*` alone is full authority"),
    ("read-wildcard", "read.*", true, &["SpecExample"], "spec example `read.*`"),
    ("reply-routine", "reply.routine", true, &["SpecExample"], "spec example `reply.routine`"),
    ("task-create", "task.create", true, &["SpecExample"], "spec example `task.create`"),
    ("calendar-schedule", "calendar.schedule", true, &["SpecExample"], "spec example `calendar.schedule`"),
    ("calendar-wildcard", "calendar.*", true, &["SpecExample"], "spec example `calendar.*`"),
    ("single-segment", "calendar", true, &["Interpretation"], "one segment is a namespace name"),
    ("three-segments", "calendar.schedule.weekly", true, &[], "deeper namespaces are dot-separated names"),
    ("deep-wildcard", "calendar.events.*", true, &[], "a wildcard may end a deeper namespace"),
    ("digits-underscore-hyphen", "x_y-2.z9", true, &["Interpretation"], "segments may use digits, `_` and `-`"),
    ("empty", "", false, &["Malformed"], "the empty string names nothing"),
    ("dot", ".", false, &["Malformed"], "two empty segments"),
    ("leading-dot", ".read", false, &["Malformed"], "empty first segment"),
    ("trailing-dot", "read.", false, &["Malformed"], "empty last segment"),
    ("double-dot", "read..thread", false, &["Malformed"], "empty middle segment"),
    ("wildcard-first", "*.read", false, &["Malformed", "Wildcard"], "a wildcard may only be the last segment"),
    ("wildcard-middle", "calendar.*.read", false, &["Malformed", "Wildcard"], "a wildcard may only be the last segment"),
    ("partial-wildcard", "calendar.sched*", false, &["Malformed", "Wildcard"], "a wildcard is a whole segment, not a suffix of one"),
    ("glued-wildcard", "calendar*", false, &["Malformed", "Wildcard"], "`*` must follow a dot"),
    ("double-wildcard", "calendar.**", false, &["Malformed", "Wildcard"], "`**` is not a segment"),
    ("uppercase", "Calendar.read", false, &["Malformed", "Interpretation"], "names are lowercase"),
    ("space", "calendar read", false, &["Malformed"], "spaces are not part of a name"),
    ("versioned", "task.create@v1", false, &["Malformed", "Interpretation"], "a scope names actions without an intent version"),
    ("surrounding-space", " task.create", false, &["Malformed"], "no surrounding whitespace"),
    ("slash", "calendar/read", false, &["Malformed"], "segments are separated by dots only"),
];

/// A matching case: (id suffix, scopes, action, allowed?, flags, comment).
type AllowRow = (
    &'static str,
    &'static [&'static str],
    &'static str,
    Outcome,
    &'static [&'static str],
    &'static str,
);

#[rustfmt::skip]
const ALLOWS: &[AllowRow] = &[
    ("exact", &["task.create"], "task.create", YES, &["SpecExample"], "an exact name allows itself"),
    ("exact.other", &["reply.routine"], "reply.sensitive", NO, &["SpecExample"], "`reply.routine` does not allow `reply.sensitive`"),
    ("exact.prefix-of-action", &["task.create"], "task.create_all", NO, &["SegmentBoundary"], "an exact name is not a prefix pattern"),
    ("exact.deeper-action", &["task.create"], "task.create.bulk", NO, &["SegmentBoundary"], "an exact name does not allow deeper names"),
    ("exact.shorter-action", &["task.create"], "task", NO, &[], "an exact name does not allow its parent namespace"),
    ("star.any", &["*"], "calendar.schedule", YES, &["SpecExample", "Wildcard"], "`*` allows every action"),
    ("star.versioned", &["*"], "thread.resolve@v1", YES, &["Wildcard"], "`*` allows versioned intents too"),
    ("wildcard.child", &["read.*"], "read.thread", YES, &["SpecExample", "Wildcard"], "`read.*` allows `read.thread`"),
    ("wildcard.grandchild", &["calendar.*"], "calendar.events.create", YES, &["Wildcard", "Interpretation"], "`x.*` covers names at any depth below `x`"),
    ("wildcard.bare-namespace", &["calendar.*"], "calendar", NO, &["Wildcard", "Interpretation"], "`x.*` stands for at least one segment after `x`"),
    ("wildcard.segment-boundary", &["thread.*"], "threadx.read", NO, &["SegmentBoundary"], "`thread.*` does not allow `threadx.read`"),
    ("wildcard.other-namespace", &["calendar.*"], "task.create", NO, &["SpecExample"], "`calendar.*` does not allow `task.create`"),
    ("wildcard.deep-pattern", &["calendar.events.*"], "calendar.events.create", YES, &["Wildcard"], "a deeper wildcard allows names under it"),
    ("wildcard.deep-pattern-sibling", &["calendar.events.*"], "calendar.schedule", NO, &["Wildcard"], "a deeper wildcard does not allow siblings of its namespace"),
    ("wildcard.deep-pattern-boundary", &["calendar.events.*"], "calendar.eventsx.create", NO, &["SegmentBoundary"], "segment boundary inside a deeper wildcard"),
    ("wildcard.middle-of-action", &["calendar.*"], "team.calendar.read", NO, &["SegmentBoundary"], "a wildcard pattern is anchored at the start"),
    ("case.action-uppercase", &["calendar.*"], "Calendar.read", NO, &["Interpretation"], "matching is case-sensitive"),
    ("case.action-mixed", &["task.create"], "task.Create", NO, &["Interpretation"], "matching is case-sensitive"),
    ("version.exact", &["task.create"], "task.create@v1", YES, &["Interpretation"], "an unversioned scope allows every version of the intent"),
    ("version.v2", &["task.create"], "task.create@v2", YES, &["Interpretation"], "an unversioned scope allows every version of the intent"),
    ("version.wildcard", &["calendar.*"], "calendar.schedule@v1", YES, &["Interpretation"], "the version is ignored under a wildcard"),
    ("version.prefix", &["task.create"], "task.create_all@v1", NO, &["SegmentBoundary"], "removing the version does not turn a different name into a match"),
    ("version.bare-namespace", &["thread.*"], "thread@v1", NO, &["Wildcard", "Interpretation"], "`thread@v1` is the bare namespace `thread`"),
    ("set.second-matches", &["reply.routine", "task.create"], "task.create", YES, &[], "any scope of the set may allow the action"),
    ("set.none-match", &["read.*", "reply.routine", "task.create", "calendar.*"], "thread.delegate@v1", NO, &["SpecExample"], "the spec's delegation scope does not allow thread delegation"),
    ("set.spec-example", &["read.*", "reply.routine", "task.create", "calendar.*"], "calendar.schedule@v1", YES, &["SpecExample"], "the spec's delegation scope allows scheduling"),
    ("set.empty", &[], "task.create", NO, &[], "an empty scope set allows nothing"),
    ("malformed.one-of-set", &["task.create", "Task.*"], "task.create", BAD, &["Malformed", "Interpretation"], "a malformed scope in the set is rejected even when another scope matches"),
    ("malformed.empty-scope", &[""], "task.create", BAD, &["Malformed"], "an empty scope string is malformed"),
    ("malformed.middle-wildcard", &["calendar.*.read"], "calendar.x.read", BAD, &["Malformed", "Wildcard"], "a wildcard in the middle is malformed, not a one-segment match"),
    ("malformed.glued-wildcard", &["thread*"], "threadx.read", BAD, &["Malformed", "SegmentBoundary"], "`thread*` is malformed rather than a string prefix"),
    ("malformed.versioned-scope", &["task.create@v1"], "task.create@v1", BAD, &["Malformed", "Interpretation"], "a scope does not carry a version"),
];

/// A subset case: (id suffix, child, parent, subset?, flags, comment).
type SubsetRow = (
    &'static str,
    &'static [&'static str],
    &'static [&'static str],
    Outcome,
    &'static [&'static str],
    &'static str,
);

#[rustfmt::skip]
const SUBSETS: &[SubsetRow] = &[
    ("spec.narrower", &["calendar.schedule"], &["calendar.*"], YES, &["SpecExample", "Subset"], "`calendar.*` can sub-delegate `calendar.schedule`"),
    ("spec.outside", &["task.create"], &["calendar.*"], NO, &["SpecExample", "Subset"], "`calendar.*` can NOT sub-delegate `task.create`"),
    ("spec.chain-example", &["calendar.schedule", "calendar.read"], &["read.*", "reply.routine", "task.create", "calendar.*"], YES, &["SpecExample", "Subset"], "the v1.0 §12.1 sub-agent scope is within its parent"),
    ("equal.single", &["calendar.*"], &["calendar.*"], YES, &["Interpretation"], "passing the parent scope on unchanged adds nothing outside it"),
    ("equal.exact", &["task.create"], &["task.create"], YES, &["Interpretation"], "an exact name is within itself"),
    ("equal.set-reordered", &["b.c", "a.*"], &["a.*", "b.c"], YES, &["Interpretation"], "order of scopes does not matter"),
    ("wildcard.deeper-wildcard", &["calendar.events.*"], &["calendar.*"], YES, &["Wildcard", "Subset"], "a deeper wildcard is within a shallower one"),
    ("wildcard.wider-than-exact", &["calendar.*"], &["calendar.schedule"], NO, &["Wildcard", "Subset"], "a wildcard is not within one of its names"),
    ("wildcard.wider-than-names", &["calendar.*"], &["calendar.read", "calendar.schedule"], NO, &["Wildcard", "Subset"], "a wildcard covers names the parent lists none of"),
    ("wildcard.shallower", &["calendar.*"], &["calendar.events.*"], NO, &["Wildcard", "Subset"], "a shallower wildcard is not within a deeper one"),
    ("wildcard.bare-namespace", &["calendar"], &["calendar.*"], NO, &["Wildcard", "Interpretation"], "`calendar.*` does not allow bare `calendar`"),
    ("wildcard.segment-boundary", &["threadx.read"], &["thread.*"], NO, &["SegmentBoundary", "Subset"], "`threadx.read` is outside `thread.*`"),
    ("wildcard.segment-boundary-wildcard", &["threadx.*"], &["thread.*"], NO, &["SegmentBoundary", "Subset"], "`threadx.*` is outside `thread.*`"),
    ("star.child-of-star", &["*"], &["*"], YES, &["Wildcard", "Interpretation"], "`*` is within `*` (whether it may appear below the root is a chain rule)"),
    ("star.child-of-wildcard", &["*"], &["calendar.*"], NO, &["Wildcard", "Subset"], "`*` is wider than any namespace"),
    ("star.anything-in-star", &["calendar.*", "task.create"], &["*"], YES, &["Wildcard"], "everything is within `*`"),
    ("set.partly-outside", &["calendar.schedule", "task.create"], &["calendar.*"], NO, &["Subset"], "one scope outside the parent spoils the set"),
    ("set.union-of-parents", &["calendar.schedule", "task.create"], &["calendar.*", "task.create"], YES, &["Subset"], "each child scope is within some parent scope"),
    ("set.empty-child", &[], &["task.create"], YES, &["Interpretation"], "the empty set is within every set"),
    ("set.empty-parent", &["task.create"], &[], NO, &["Subset"], "nothing non-empty is within the empty set"),
    ("case.uppercase-child", &["Calendar.read"], &["calendar.*"], BAD, &["Malformed", "Interpretation"], "an uppercase scope is malformed"),
    ("malformed.parent", &["calendar.read"], &["calendar.*.x"], BAD, &["Malformed"], "a malformed parent scope is rejected"),
    ("malformed.child-versioned", &["task.create@v1"], &["task.*"], BAD, &["Malformed", "Interpretation"], "a versioned scope is malformed"),
];

fn strings(items: &[&str]) -> Value {
    json!(items)
}

fn syntax_case(row: &SyntaxRow) -> Case {
    let (id, scope, ok, flags, comment) = *row;
    let c = Case::new(format!("syntax.{id}"), comment, &[S132, S123])
        .flags(flags)
        .input("scope", scope);
    if ok { c.valid() } else { c.invalid(ERR) }
}

fn allow_case(row: &AllowRow) -> Case {
    let (id, scopes, action, allowed, flags, comment) = *row;
    let c = Case::new(format!("allows.{id}"), comment, &[S132, S133, S123])
        .flags(flags)
        .input("scopes", strings(scopes))
        .input("action", action);
    match allowed {
        Some(a) => c.valid_with(json!({ "allowed": a })),
        None => c.invalid(ERR),
    }
}

fn subset_case(row: &SubsetRow) -> Case {
    let (id, child, parent, subset, flags, comment) = *row;
    let c = Case::new(format!("subset.{id}"), comment, &[S132, S123])
        .flags(flags)
        .input("child", strings(child))
        .input("parent", strings(parent));
    match subset {
        Some(b) => c.valid_with(json!({ "subset": b })),
        None => c.invalid(ERR),
    }
}

/// Builds the file.
pub fn build() -> FileBuilder {
    let mut f = FileBuilder::new(
        AREA,
        "Delegation scope syntax, matching an action against a scope set, and the subset rule of sub-delegation (v1.1 §13.2; v1.0 §12.3).",
    );
    for (flag, d, b, e) in NOTES {
        f = f.note(flag, d, b, e);
    }
    f.group("check-scope", Value::Null)
        .tests(SYNTAX.iter().map(syntax_case))
        .group("scope-allows", Value::Null)
        .tests(ALLOWS.iter().map(allow_case))
        .group("scope-subset", Value::Null)
        .tests(SUBSETS.iter().map(subset_case))
}

/// The file's schema.
pub fn schema() -> AreaSchema {
    let set = json!({"type": "array", "items": {"type": "string"}});
    AreaSchema {
        kinds: vec!["check-scope", "scope-allows", "scope-subset"],
        inputs: vec![
            ("scope", string()),
            ("scopes", set.clone()),
            ("action", string()),
            ("child", set.clone()),
            ("parent", set),
        ],
        required: vec![],
        expected: json!({
            "type": "object",
            "additionalProperties": false,
            "minProperties": 1,
            "maxProperties": 1,
            "properties": {"allowed": {"type": "boolean"}, "subset": {"type": "boolean"}}
        }),
        errors: vec![ERR],
    }
}
