//! A positioned YAML node tree and a serde deserializer over it.
//!
//! serde-saphyr parses the text (YAML 1.2 scalars, anchors, merge keys, duplicate-key
//! rejection) and its `Spanned<T>` gives every node's 1-based line/column. We keep those in a
//! small [`Node`] tree, then deserialize the typed model from the tree with [`NodeDeserializer`],
//! which knows the path of every value it visits. That gives every diagnostic its path and
//! position: type mismatches, missing fields and unknown keys as well as the validator's
//! semantic rules (which look positions up with [`Node::position_of`]).

use std::cell::RefCell;
use std::fmt;

use serde::de::{self, DeserializeSeed, IntoDeserializer, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_saphyr::Spanned;

/// A 1-based line/column position (0/0 when unknown).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct Pos {
    /// 1-based line.
    pub line: u64,
    /// 1-based column.
    pub column: u64,
}

impl Pos {
    fn of(loc: &serde_saphyr::Location) -> Pos {
        Pos {
            line: loc.line(),
            column: loc.column(),
        }
    }
}

/// A YAML node with its position.
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    /// Where the node starts.
    pub pos: Pos,
    /// The value.
    pub kind: NodeKind,
    /// For plain scalars YAML resolved to a number or boolean: the text as written (`1.0`,
    /// `2024`, `true`), so a string field can take it verbatim (`version: 1.0` is `"1.0"`).
    pub raw: Option<String>,
}

/// A YAML value.
#[derive(Debug, Clone, PartialEq)]
pub enum NodeKind {
    /// `~`, `null` or empty.
    Null,
    /// `true` / `false`.
    Bool(bool),
    /// An integer that fits `i64`.
    Int(i64),
    /// An integer above `i64::MAX`.
    UInt(u64),
    /// A float.
    Float(f64),
    /// A string scalar.
    Str(String),
    /// A sequence.
    Seq(Vec<Node>),
    /// A mapping in document order; keys are scalars rendered as text.
    Map(Vec<(Key, Node)>),
}

/// A mapping key with its position.
#[derive(Debug, Clone, PartialEq)]
pub struct Key {
    /// The key text.
    pub name: String,
    /// Where the key is.
    pub pos: Pos,
}

impl NodeKind {
    /// A short name of the node's YAML type for messages.
    pub fn type_name(&self) -> &'static str {
        match self {
            NodeKind::Null => "null",
            NodeKind::Bool(_) => "a boolean",
            NodeKind::Int(_) | NodeKind::UInt(_) => "an integer",
            NodeKind::Float(_) => "a float",
            NodeKind::Str(_) => "a string",
            NodeKind::Seq(_) => "a sequence",
            NodeKind::Map(_) => "a mapping",
        }
    }
}

impl Node {
    /// Parses YAML text into a positioned tree. The error carries saphyr's message and position.
    ///
    /// YAML 1.2 booleans only (`strict_booleans`): `y`, `n`, `yes`, `no`, `on` and `off` are
    /// strings, so `depends_on: [yes, no]` names two phases, as in the guide's YAML 1.2 reading.
    /// Nesting depth is bounded by the parser budget ([`Node::MAX_DEPTH`] levels), which bounds
    /// every recursive walk over the tree.
    pub fn parse(text: &str) -> Result<Node, (String, Pos, bool)> {
        match serde_saphyr::from_str_with_options::<Option<Node>>(text, Self::options()) {
            Ok(Some(mut node)) => {
                node.fill_raw(text);
                Ok(node)
            }
            Ok(None) => Ok(Node {
                pos: Pos { line: 1, column: 1 },
                kind: NodeKind::Null,
                raw: None,
            }),
            Err(err) => {
                let mut pos = err.location().map(|l| Pos::of(&l)).unwrap_or_default();
                let inner = err.without_snippet();
                let duplicate = matches!(inner, serde_saphyr::Error::DuplicateMappingKey { .. });
                let mut msg = first_line(&inner.to_string());
                if let Some((found, at)) = non_scalar_key(&msg) {
                    pos = at;
                    msg = format!("a mapping key must be a scalar, found {found}");
                } else if msg.contains("budget breached") {
                    msg = budget_message(msg.trim_start_matches("budget breached:").trim());
                }
                Err((msg, pos, duplicate))
            }
        }
    }

    /// Parser options: YAML 1.2 booleans, a depth budget of [`Node::MAX_DEPTH`], and a node
    /// budget of [`Node::MAX_NODES`] (the
    /// library default, 250,000, refuses a 50,000-phase definition; the budget stays, so
    /// input size remains bounded).
    fn options() -> serde_saphyr::Options {
        let mut options = serde_saphyr::Options::default();
        options.strict_booleans = true;
        // `.nan`, `.inf` and integers too large for 64 bits reach the tree as floats, so the
        // field they are in decides the message (a ratio out of 0..1, an integer out of
        // range) instead of a parser-level rejection.
        options.non_finite_float_policy = serde_saphyr::NonFiniteFloatPolicy::PassThrough;
        let mut budget = options.budget.take().unwrap_or_default();
        budget.max_nodes = Self::MAX_NODES;
        budget.max_depth = Self::MAX_DEPTH;
        budget.max_events = budget.max_events.max(2 * Self::MAX_NODES);
        options.budget = Some(budget);
        options
    }

    /// The most YAML nodes a definition may have.
    pub const MAX_NODES: usize = 1_000_000;

    /// The deepest nesting the parser accepts. The deepest path the guide documents is 8
    /// levels (`phases[].iteration.gates[].command[]`); 32 leaves room for authors' own
    /// blocks while keeping the recursive tree build well inside a 2 MiB thread stack (at 64
    /// levels a debug build overflows it).
    pub const MAX_DEPTH: usize = 32;

    /// Parses YAML text letting the last duplicate key win (used only to locate a duplicate
    /// key that [`Node::parse`] rejected).
    pub fn parse_last_wins(text: &str) -> Option<Node> {
        let mut options = Self::options();
        options.duplicate_keys = serde_saphyr::DuplicateKeyPolicy::LastWins;
        serde_saphyr::from_str_with_options::<Option<Node>>(text, options)
            .ok()
            .flatten()
    }

    /// Fills [`Node::raw`] for number and boolean scalars from the source text (iterative).
    fn fill_raw(&mut self, text: &str) {
        let lines: Vec<usize> = std::iter::once(0)
            .chain(text.match_indices('\n').map(|(i, _)| i + 1))
            .collect();
        let mut todo: Vec<&mut Node> = vec![self];
        while let Some(node) = todo.pop() {
            match &mut node.kind {
                NodeKind::Int(_) | NodeKind::UInt(_) | NodeKind::Float(_) | NodeKind::Bool(_) => {
                    node.raw = plain_scalar_at(text, &lines, node.pos);
                }
                // A plain (unquoted) YAML 1.1 boolean spelling: a boolean field may read it
                // (see [`yaml11_bool`]); `raw` marks it as plain, a quoted "yes" has none.
                NodeKind::Str(s) if yaml11_bool(s).is_some() => {
                    let s = s.clone();
                    node.raw = plain_scalar_at(text, &lines, node.pos).filter(|r| *r == s);
                }
                NodeKind::Seq(items) => todo.extend(items.iter_mut()),
                NodeKind::Map(entries) => todo.extend(entries.iter_mut().map(|(_, v)| v)),
                _ => {}
            }
        }
    }

    /// The diagnostic path of the mapping key written at `pos`, if any.
    pub fn key_path_at(&self, pos: Pos) -> Option<String> {
        match &self.kind {
            NodeKind::Map(entries) => entries.iter().find_map(|(key, value)| {
                if key.pos == pos {
                    Some(key.name.clone())
                } else {
                    value.key_path_at(pos).map(|p| join_key(&key.name, &p))
                }
            }),
            NodeKind::Seq(items) => items.iter().enumerate().find_map(|(i, item)| {
                item.key_path_at(pos).map(|p| {
                    if p.starts_with('[') {
                        format!("[{i}]{p}")
                    } else {
                        format!("[{i}].{p}")
                    }
                })
            }),
            _ => None,
        }
    }

    /// The node at a diagnostic path such as `phases[2].iteration.gates[0].type`, if present.
    pub fn get(&self, path: &str) -> Option<&Node> {
        let mut node = self;
        for step in parse_path(path)? {
            node = match (step, &node.kind) {
                (Step::Key(k), NodeKind::Map(entries)) => {
                    &entries.iter().find(|(key, _)| key.name == k)?.1
                }
                (Step::Index(i), NodeKind::Seq(items)) => items.get(i)?,
                _ => return None,
            };
        }
        Some(node)
    }

    /// The node at a diagnostic path, mutably.
    fn get_mut(&mut self, path: &str) -> Option<&mut Node> {
        let mut node = self;
        for step in parse_path(path)? {
            node = match (step, &mut node.kind) {
                (Step::Key(k), NodeKind::Map(entries)) => {
                    &mut entries.iter_mut().find(|(key, _)| key.name == k)?.1
                }
                (Step::Index(i), NodeKind::Seq(items)) => items.get_mut(i)?,
                _ => return None,
            };
        }
        Some(node)
    }

    /// Replaces the value at `path` (keeping its position); false if there is no such node.
    pub fn replace(&mut self, path: &str, kind: NodeKind) -> bool {
        match self.get_mut(path) {
            Some(node) => {
                node.kind = kind;
                node.raw = None;
                true
            }
            None => false,
        }
    }

    /// Removes the mapping entry at `path` (a path ending in a key); false if `path` does not
    /// name a present mapping entry.
    pub fn remove_key(&mut self, path: &str) -> bool {
        let Some((parent, key)) = split_last_key(path) else {
            return false;
        };
        match self.get_mut(parent).map(|n| &mut n.kind) {
            Some(NodeKind::Map(entries)) => {
                let before = entries.len();
                entries.retain(|(k, _)| k.name != key);
                entries.len() < before
            }
            _ => false,
        }
    }

    /// Adds the mapping entry at `path` (a path ending in a key) with `kind`, positioned at
    /// the mapping; false if the parent is not a mapping or already has the key.
    pub fn insert_key(&mut self, path: &str, kind: NodeKind) -> bool {
        let Some((parent, key)) = split_last_key(path) else {
            return false;
        };
        let Some(node) = self.get_mut(parent) else {
            return false;
        };
        let pos = node.pos;
        match &mut node.kind {
            NodeKind::Map(entries) if !entries.iter().any(|(k, _)| k.name == key) => {
                entries.push((
                    Key {
                        name: key.to_string(),
                        pos,
                    },
                    Node {
                        pos,
                        kind,
                        raw: None,
                    },
                ));
                true
            }
            _ => false,
        }
    }

    /// The position of the deepest existing node along `path` (the node itself if it exists,
    /// otherwise its nearest present ancestor, e.g. the mapping missing a required key).
    pub fn position_of(&self, path: &str) -> Pos {
        let mut best = self.pos;
        let Some(steps) = parse_path(path) else {
            return best;
        };
        let mut node = self;
        for step in steps {
            let next = match (step, &node.kind) {
                (Step::Key(k), NodeKind::Map(entries)) => {
                    entries.iter().find(|(key, _)| key.name == k).map(|e| &e.1)
                }
                (Step::Index(i), NodeKind::Seq(items)) => items.get(i),
                _ => None,
            };
            match next {
                Some(n) => {
                    node = n;
                    best = n.pos;
                }
                None => break,
            }
        }
        best
    }
}

/// `a.b[2].c` → `("a.b[2]", "c")`; `None` when the path does not end in a key.
fn split_last_key(path: &str) -> Option<(&str, &str)> {
    let (parent, key) = path.rsplit_once('.').unwrap_or(("", path));
    (!key.is_empty() && !key.contains(['[', ']'])).then_some((parent, key))
}

/// The path of the node containing `path`'s node: `a.b[2].c` → `a.b[2]`, `a[2]` → `a`,
/// `a` → `""`.
pub fn parent_path(path: &str) -> &str {
    if let Some(stripped) = path.strip_suffix(']')
        && let Some(i) = stripped.rfind('[')
    {
        return &path[..i];
    }
    path.rsplit_once('.').map_or("", |(parent, _)| parent)
}

/// The plain scalar written at `pos` (1-based line, 1-based character column): up to the
/// end of the line, a flow indicator (`,`, `]`, `}`) or a comment.
fn plain_scalar_at(text: &str, lines: &[usize], pos: Pos) -> Option<String> {
    let start = *lines.get(usize::try_from(pos.line).ok()?.checked_sub(1)?)?;
    let line = text[start..].lines().next()?;
    let col = usize::try_from(pos.column).ok()?.checked_sub(1)?;
    let from = line.char_indices().nth(col).map(|(i, _)| i)?;
    let rest = &line[from..];
    let end = rest
        .char_indices()
        .find(|&(i, c)| {
            matches!(c, ',' | ']' | '}') || (c == '#' && rest[..i].ends_with([' ', '\t']))
        })
        .map_or(rest.len(), |(i, _)| i);
    let raw = rest[..end].trim_end();
    (!raw.is_empty()).then(|| raw.to_string())
}

/// Marker a non-scalar mapping key's error carries through serde-saphyr (whose custom
/// errors have no position) so that [`Node::parse`] can place it.
const NON_SCALAR_KEY: &str = "non-scalar mapping key@";

/// `(found, pos)` from a [`NON_SCALAR_KEY`] message.
fn non_scalar_key(msg: &str) -> Option<(String, Pos)> {
    let rest = &msg[msg.find(NON_SCALAR_KEY)? + NON_SCALAR_KEY.len()..];
    let mut parts = rest.splitn(3, ':');
    let line = parts.next()?.parse().ok()?;
    let column = parts.next()?.parse().ok()?;
    let found = parts.next()?.trim().to_string();
    Some((found, Pos { line, column }))
}

/// The message of a breached parser budget, in the guide's terms: which limit, and what it is.
fn budget_message(which: &str) -> String {
    let kind = which.split([' ', '{']).next().unwrap_or("");
    match kind {
        "Depth" => format!(
            "the document nests more than {} levels deep (mappings and sequences inside each other); a process definition is limited to {} levels",
            Node::MAX_DEPTH,
            Node::MAX_DEPTH
        ),
        "Nodes" | "Events" => format!(
            "the document has more than {} YAML nodes; a process definition is limited to {} nodes",
            Node::MAX_NODES,
            Node::MAX_NODES
        ),
        "Aliases" | "Anchors" => "the document uses more YAML aliases or anchors than the parser allows (alias expansion is bounded)".to_string(),
        _ => "the document exceeds the parser's resource limits (size, nesting or aliases)".to_string(),
    }
}

/// A YAML 1.1 boolean spelling (PyYAML's resolver, which the guide's loader uses) that YAML
/// 1.2 reads as a string: `yes`/`no`/`on`/`off` in their three cases. (`True`/`TRUE` are
/// booleans in YAML 1.2's core schema already; `y`/`n` are not booleans in PyYAML either.)
pub fn yaml11_bool(s: &str) -> Option<bool> {
    match s {
        "yes" | "Yes" | "YES" | "on" | "On" | "ON" => Some(true),
        "no" | "No" | "NO" | "off" | "Off" | "OFF" => Some(false),
        _ => None,
    }
}

/// `123`, `-4`, `+5`: decimal digits with an optional sign.
fn is_integer_text(s: &str) -> bool {
    let digits = s.strip_prefix(['-', '+']).unwrap_or(s);
    !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
}

fn first_line(msg: &str) -> String {
    msg.lines().next().unwrap_or("").trim().to_string()
}

enum Step<'a> {
    Key(&'a str),
    Index(usize),
}

/// Splits `a.b[2].c` into steps; `None` for a malformed path.
fn parse_path(path: &str) -> Option<Vec<Step<'_>>> {
    let mut steps = Vec::new();
    if path.is_empty() {
        return Some(steps);
    }
    for part in path.split('.') {
        let (key, mut rest) = match part.find('[') {
            Some(i) => (&part[..i], &part[i..]),
            None => (part, ""),
        };
        if !key.is_empty() {
            steps.push(Step::Key(key));
        }
        while let Some(stripped) = rest.strip_prefix('[') {
            let end = stripped.find(']')?;
            steps.push(Step::Index(stripped[..end].parse().ok()?));
            rest = &stripped[end + 1..];
        }
    }
    Some(steps)
}

// ---- building the tree from serde-saphyr ---------------------------------------------------

impl<'de> Deserialize<'de> for Node {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let spanned = Spanned::<NodeKind>::deserialize(deserializer)?;
        Ok(Node {
            pos: Pos::of(&spanned.referenced),
            kind: spanned.value,
            raw: None,
        })
    }
}

impl<'de> Deserialize<'de> for NodeKind {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(KindVisitor)
    }
}

struct KindVisitor;

impl<'de> Visitor<'de> for KindVisitor {
    type Value = NodeKind;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any YAML value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<NodeKind, E> {
        Ok(NodeKind::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<NodeKind, E> {
        Ok(NodeKind::Int(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<NodeKind, E> {
        Ok(i64::try_from(v).map_or(NodeKind::UInt(v), NodeKind::Int))
    }
    fn visit_i128<E: de::Error>(self, v: i128) -> Result<NodeKind, E> {
        i64::try_from(v)
            .map(NodeKind::Int)
            .map_err(|_| E::custom("integer out of range"))
    }
    fn visit_u128<E: de::Error>(self, v: u128) -> Result<NodeKind, E> {
        u64::try_from(v)
            .map(|v| i64::try_from(v).map_or(NodeKind::UInt(v), NodeKind::Int))
            .map_err(|_| E::custom("integer out of range"))
    }
    fn visit_f64<E>(self, v: f64) -> Result<NodeKind, E> {
        Ok(NodeKind::Float(v))
    }
    fn visit_str<E>(self, v: &str) -> Result<NodeKind, E> {
        Ok(NodeKind::Str(v.to_string()))
    }
    fn visit_string<E>(self, v: String) -> Result<NodeKind, E> {
        Ok(NodeKind::Str(v))
    }
    fn visit_unit<E>(self) -> Result<NodeKind, E> {
        Ok(NodeKind::Null)
    }
    fn visit_none<E>(self) -> Result<NodeKind, E> {
        Ok(NodeKind::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<NodeKind, D::Error> {
        NodeKind::deserialize(d)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<NodeKind, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element::<Node>()? {
            items.push(item);
        }
        Ok(NodeKind::Seq(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<NodeKind, A::Error> {
        let mut entries = Vec::new();
        while let Some(key) = map.next_key::<Node>()? {
            let name = match &key.kind {
                NodeKind::Str(s) => s.clone(),
                NodeKind::Int(i) => i.to_string(),
                NodeKind::UInt(u) => u.to_string(),
                NodeKind::Bool(b) => b.to_string(),
                NodeKind::Float(f) => f.to_string(),
                NodeKind::Null => "null".to_string(),
                NodeKind::Seq(_) | NodeKind::Map(_) => {
                    return Err(de::Error::custom(format!(
                        "{NON_SCALAR_KEY}{}:{}:{}",
                        key.pos.line,
                        key.pos.column,
                        key.kind.type_name()
                    )));
                }
            };
            let value = map.next_value::<Node>()?;
            entries.push((Key { name, pos: key.pos }, value));
        }
        Ok(NodeKind::Map(entries))
    }
}

// ---- deserializing the model from the tree ----------------------------------------------------

/// What went wrong while deserializing the model from the tree.
#[derive(Debug, Clone, PartialEq)]
pub enum ShapeErrorKind {
    /// A required key is absent.
    MissingField,
    /// A string is not one of the allowed values.
    UnknownVariant,
    /// The node has the wrong YAML type.
    WrongType,
    /// The node is null (`key:` with no value) where a value is required.
    Null,
}

/// A deserialization error with the path and position of the node it is about.
#[derive(Debug, Clone, PartialEq)]
pub struct ShapeError {
    /// The kind of problem.
    pub kind: ShapeErrorKind,
    /// Diagnostic path of the node (for a missing field: the field's path).
    pub path: String,
    /// Position of the node (for a missing field: the enclosing mapping).
    pub pos: Pos,
    /// Human-readable message.
    pub message: String,
    /// What the node should have been, when known (wrong types and enum values).
    pub expected: Option<Expected>,
}

/// What a model field expects, as far as the deserializer can tell: used to describe a wrong
/// type and to build a neutral stand-in value ([`Expected::placeholder`]) so that
/// deserialization can continue past a bad value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expected {
    /// `true` / `false`.
    Bool,
    /// An integer.
    Int,
    /// A non-negative integer.
    UInt,
    /// A number (integer or float).
    Number,
    /// A string.
    Str,
    /// A sequence.
    Seq,
    /// A mapping.
    Map,
    /// One of these strings (an enum).
    OneOf(&'static [&'static str]),
}

impl Expected {
    /// The type as messages name it.
    pub fn describe(self) -> &'static str {
        match self {
            Expected::Bool => "a boolean",
            Expected::Int => "an integer",
            Expected::UInt => "a non-negative integer",
            Expected::Number => "a number",
            Expected::Str | Expected::OneOf(_) => "a string",
            Expected::Seq => "a sequence",
            Expected::Map => "a mapping",
        }
    }

    /// A value of the expected type; for an enum, `preferred` if it is one of the variants,
    /// else the first variant.
    pub fn placeholder(self, preferred: Option<&str>) -> NodeKind {
        match self {
            Expected::Bool => NodeKind::Bool(false),
            Expected::Int | Expected::UInt => NodeKind::Int(0),
            Expected::Number => NodeKind::Float(0.0),
            Expected::Str => NodeKind::Str(String::new()),
            Expected::Seq => NodeKind::Seq(Vec::new()),
            Expected::Map => NodeKind::Map(Vec::new()),
            Expected::OneOf(variants) => {
                let pick = preferred
                    .filter(|p| variants.contains(p))
                    .or_else(|| variants.first().copied())
                    .unwrap_or_default();
                NodeKind::Str(pick.to_string())
            }
        }
    }
}

/// A key the model does not know (reported as a warning).
#[derive(Debug, Clone, PartialEq)]
pub struct UnknownKey {
    /// Path of the key.
    pub path: String,
    /// Position of the key.
    pub pos: Pos,
    /// The fields the enclosing mapping accepts.
    pub expected: &'static [&'static str],
}

/// Why a value was read in a form other than the one it was written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CoercionReason {
    /// A YAML 1.1 boolean spelling (`yes`, `off`, `True`) in a boolean field.
    Yaml11Bool,
    /// An enum value in another letter case (`HIGH`), read as its lowercase variant.
    EnumCase,
    /// A documented alias of an enum value (`standard` for `medium`).
    EnumAlias,
}

/// A value accepted in a non-portable form: the guide's loader (PyYAML, YAML 1.1, lower-cased
/// and aliased enums) reads it, and so do we, with a warning naming the portable spelling.
#[derive(Debug, Clone, PartialEq)]
pub struct Coercion {
    /// Path of the value.
    pub path: String,
    /// Position of the value.
    pub pos: Pos,
    /// The text as written.
    pub found: String,
    /// The portable spelling it was read as.
    pub portable: String,
    /// Which kind of reading.
    pub reason: CoercionReason,
}

/// What deserializing a tree noted besides the value: unknown keys and coerced values.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Notes {
    /// Keys the model does not know.
    pub unknown: Vec<UnknownKey>,
    /// Values read in a non-portable form.
    pub coerced: Vec<Coercion>,
}

/// Enums the guide's loader lower-cases before comparing (`str(...).strip().lower()`), with
/// the aliases it maps. Keyed by the model's Rust enum name; `phase_mode`, rule `severity`,
/// `type`, `enforcement`, `scope` and test `mode` are compared as written there and are not
/// listed.
const FOLDED_ENUMS: &[(&str, &[(&str, &str)])] = &[
    (
        "RiskLevel",
        &[
            ("normal", "medium"),
            ("med", "medium"),
            ("mid", "medium"),
            ("std", "medium"),
            ("standard", "medium"),
        ],
    ),
    ("PolicyMode", &[]),
    ("OutputStrategy", &[]),
    ("PublishMode", &[]),
    ("ConflictPolicy", &[]),
    ("FinalizerInputPolicy", &[]),
    ("IterationStrategy", &[]),
    ("GateType", &[]),
    ("Operator", &[]),
    ("ArtifactTarget", &[]),
    ("AuthSource", &[]),
    ("PruneMode", &[]),
    ("CriticalPathBehavior", &[]),
    ("FailureClass", &[]),
    ("RemediationMode", &[]),
];

/// The variant `text` stands for in enum `name` when it is not written as one: trimmed and
/// lower-cased, then through the alias table ([`FOLDED_ENUMS`]).
fn fold_enum(
    name: &str,
    text: &str,
    variants: &'static [&'static str],
) -> Option<(&'static str, CoercionReason)> {
    let (_, aliases) = FOLDED_ENUMS.iter().find(|(n, _)| *n == name)?;
    let lower = text.trim().to_lowercase();
    if let Some(v) = variants.iter().find(|v| **v == lower) {
        return Some((v, CoercionReason::EnumCase));
    }
    let (_, target) = aliases.iter().find(|(a, _)| *a == lower)?;
    variants
        .iter()
        .find(|v| *v == target)
        .map(|v| (*v, CoercionReason::EnumAlias))
}

/// The serde error type of [`NodeDeserializer`]; the located detail is kept in the context so
/// that serde's own error constructors (`missing_field`, `unknown_variant`) can be placed.
#[derive(Debug, Clone, PartialEq)]
pub struct DeError {
    /// Message.
    pub message: String,
    /// Kind.
    pub kind: ShapeErrorKind,
    /// For a missing field: its name (the enclosing mapping extends its path with it).
    pub missing: Option<&'static str>,
    /// What the node should have been, when the failing deserializer knows.
    pub expected: Option<Expected>,
    /// Path and position, filled in by the deserializer closest to the failure.
    pub at: Option<(String, Pos)>,
}

impl fmt::Display for DeError {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for DeError {}

impl de::Error for DeError {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        DeError {
            message: msg.to_string(),
            kind: ShapeErrorKind::WrongType,
            missing: None,
            expected: None,
            at: None,
        }
    }
    fn missing_field(field: &'static str) -> Self {
        DeError {
            message: format!("missing required key `{field}`"),
            kind: ShapeErrorKind::MissingField,
            missing: Some(field),
            expected: None,
            at: None,
        }
    }
    fn unknown_variant(variant: &str, expected: &'static [&'static str]) -> Self {
        DeError {
            message: format!(
                "`{variant}` is not one of {}",
                expected
                    .iter()
                    .map(|e| format!("`{e}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            kind: ShapeErrorKind::UnknownVariant,
            missing: None,
            expected: Some(Expected::OneOf(expected)),
            at: None,
        }
    }
}

/// Deserializes `T` from a tree, collecting unknown keys and coerced values.
pub fn from_node<'a, T: Deserialize<'a>>(node: &'a Node) -> Result<(T, Notes), ShapeError> {
    from_node_at(node, "")
}

/// Deserializes `T` from a subtree that sits at `path` in its document (errors and unknown
/// keys carry full document paths).
pub fn from_node_at<'a, T: Deserialize<'a>>(
    node: &'a Node,
    path: &str,
) -> Result<(T, Notes), ShapeError> {
    let notes = RefCell::new(Notes::default());
    let result = T::deserialize(NodeDeserializer {
        node,
        path: path.to_string(),
        unknown: &notes,
    });
    match result {
        Ok(value) => Ok((value, notes.into_inner())),
        Err(err) => {
            let (path, pos) = err.at.unwrap_or((String::new(), node.pos));
            Err(ShapeError {
                kind: err.kind,
                path,
                pos,
                message: err.message,
                expected: err.expected,
            })
        }
    }
}

/// Appends a key to a diagnostic path.
pub fn join_key(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

/// A serde deserializer over one [`Node`] at a known path.
#[derive(Debug)]
pub struct NodeDeserializer<'a, 'u> {
    node: &'a Node,
    path: String,
    unknown: &'u RefCell<Notes>,
}

impl<'a, 'u> NodeDeserializer<'a, 'u> {
    fn child(&self, node: &'a Node, path: String) -> Self {
        NodeDeserializer {
            node,
            path,
            unknown: self.unknown,
        }
    }

    /// Places an error that has no location yet at this node (or, for a missing field, at the
    /// field's path under this mapping).
    fn locate(&self, mut err: DeError) -> DeError {
        if err.at.is_none() {
            let path = match err.missing.take() {
                Some(field) => join_key(&self.path, field),
                None => self.path.clone(),
            };
            err.at = Some((path, self.node.pos));
        }
        err
    }

    /// Records that this node was read as `portable` although written `found`.
    fn note(&self, found: &str, portable: &str, reason: CoercionReason) {
        self.unknown.borrow_mut().coerced.push(Coercion {
            path: self.path.clone(),
            pos: self.node.pos,
            found: found.to_string(),
            portable: portable.to_string(),
            reason,
        });
    }

    fn wrong_type(&self, expected: Expected) -> DeError {
        let integer = matches!(expected, Expected::Int | Expected::UInt);
        let message = match &self.node.kind {
            // Integers YAML could not fit: above u64 saphyr reads a float, above i64 a UInt.
            NodeKind::UInt(_) if integer => {
                "integer out of range (at most 9223372036854775807)".to_string()
            }
            NodeKind::Float(_)
                if integer && self.node.raw.as_deref().is_some_and(is_integer_text) =>
            {
                "integer out of range (at most 9223372036854775807)".to_string()
            }
            found => format!(
                "expected {}, found {}",
                expected.describe(),
                found.type_name()
            ),
        };
        DeError {
            message,
            kind: if self.node.kind == NodeKind::Null {
                ShapeErrorKind::Null
            } else {
                ShapeErrorKind::WrongType
            },
            missing: None,
            expected: Some(expected),
            at: Some((self.path.clone(), self.node.pos)),
        }
    }
}

impl<'de, 'a: 'de, 'u> Deserializer<'de> for NodeDeserializer<'a, 'u> {
    type Error = DeError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        let result = match &self.node.kind {
            NodeKind::Null => visitor.visit_unit(),
            NodeKind::Bool(b) => visitor.visit_bool(*b),
            NodeKind::Int(i) => visitor.visit_i64(*i),
            NodeKind::UInt(u) => visitor.visit_u64(*u),
            NodeKind::Float(f) => visitor.visit_f64(*f),
            NodeKind::Str(s) => visitor.visit_borrowed_str(s),
            NodeKind::Seq(items) => visitor.visit_seq(SeqDe {
                items: items.iter(),
                index: 0,
                parent: &self,
            }),
            NodeKind::Map(entries) => visitor.visit_map(MapDe {
                entries: entries.iter(),
                value: None,
                parent: &self,
            }),
        };
        result.map_err(|e| self.locate(e))
    }

    /// A boolean field also takes a plain YAML 1.1 spelling (`yes`, `off`, `True`), as the
    /// guide's loader (PyYAML) does, noting it for a warning; a quoted `"yes"` stays a string.
    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        match (&self.node.kind, &self.node.raw) {
            (NodeKind::Bool(b), _) => visitor.visit_bool(*b).map_err(|e| self.locate(e)),
            (NodeKind::Str(s), Some(_)) if yaml11_bool(s).is_some() => {
                let b = yaml11_bool(s).unwrap_or_default();
                self.note(s, &b.to_string(), CoercionReason::Yaml11Bool);
                visitor.visit_bool(b).map_err(|e| self.locate(e))
            }
            _ => Err(self.wrong_type(Expected::Bool)),
        }
    }

    fn deserialize_i64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        match self.node.kind {
            NodeKind::Int(i) => visitor.visit_i64(i).map_err(|e| self.locate(e)),
            _ => Err(self.wrong_type(Expected::Int)),
        }
    }

    fn deserialize_u64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        match self.node.kind {
            NodeKind::Int(i) if i >= 0 => visitor.visit_i64(i).map_err(|e| self.locate(e)),
            NodeKind::UInt(u) => visitor.visit_u64(u).map_err(|e| self.locate(e)),
            _ => Err(self.wrong_type(Expected::UInt)),
        }
    }

    fn deserialize_f64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        match self.node.kind {
            NodeKind::Float(f) => visitor.visit_f64(f),
            // Whole numbers are valid ratios (`critical_claim_support_ratio: 1`).
            NodeKind::Int(i) => visitor.visit_f64(i as f64),
            _ => return Err(self.wrong_type(Expected::Number)),
        }
        .map_err(|e| self.locate(e))
    }

    fn deserialize_f32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.deserialize_f64(visitor)
    }

    /// A string field takes a string, or a plain number/boolean scalar as written
    /// (`version: 1.0` is `"1.0"`, `tags: [2024]` is `["2024"]`): YAML resolved the type, the
    /// author meant the text.
    fn deserialize_str<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        match (&self.node.kind, &self.node.raw) {
            (NodeKind::Str(s), _) => visitor.visit_borrowed_str(s).map_err(|e| self.locate(e)),
            (
                NodeKind::Int(_) | NodeKind::UInt(_) | NodeKind::Float(_) | NodeKind::Bool(_),
                Some(raw),
            ) => visitor.visit_borrowed_str(raw).map_err(|e| self.locate(e)),
            _ => Err(self.wrong_type(Expected::Str)),
        }
    }

    fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.deserialize_str(visitor)
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        match self.node.kind {
            NodeKind::Null => visitor.visit_none(),
            _ => {
                let node = self.node;
                let path = self.path.clone();
                let unknown = self.unknown;
                visitor.visit_some(NodeDeserializer {
                    node,
                    path,
                    unknown,
                })
            }
        }
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        static EMPTY: [Node; 0] = [];
        match &self.node.kind {
            // An empty value (`deliverables:`) reads as an empty list; where a list is required
            // the section's rule refuses it (`depends_on:`, guide "Phases").
            NodeKind::Null => visitor
                .visit_seq(SeqDe {
                    items: EMPTY.iter(),
                    index: 0,
                    parent: &self,
                })
                .map_err(|e| self.locate(e)),
            NodeKind::Seq(items) => visitor
                .visit_seq(SeqDe {
                    items: items.iter(),
                    index: 0,
                    parent: &self,
                })
                .map_err(|e| self.locate(e)),
            _ => Err(self.wrong_type(Expected::Seq)),
        }
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        match &self.node.kind {
            NodeKind::Map(entries) => visitor
                .visit_map(MapDe {
                    entries: entries.iter(),
                    value: None,
                    parent: &self,
                })
                .map_err(|e| self.locate(e)),
            _ => Err(self.wrong_type(Expected::Map)),
        }
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, DeError> {
        let NodeKind::Map(entries) = &self.node.kind else {
            return Err(self.wrong_type(Expected::Map));
        };
        for (key, _) in entries {
            if !fields.contains(&key.name.as_str()) {
                self.unknown.borrow_mut().unknown.push(UnknownKey {
                    path: join_key(&self.path, &key.name),
                    pos: key.pos,
                    expected: fields,
                });
            }
        }
        let known: Vec<&(Key, Node)> = entries
            .iter()
            .filter(|(k, _)| fields.contains(&k.name.as_str()))
            .collect();
        visitor
            .visit_map(MapDe {
                entries: known.into_iter(),
                value: None,
                parent: &self,
            })
            .map_err(|e| self.locate(e))
    }

    /// A string naming a variant; for the enums the guide's loader lower-cases
    /// ([`FOLDED_ENUMS`]) also another letter case or an alias, noted for a warning.
    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, DeError> {
        match &self.node.kind {
            NodeKind::Str(s) if !variants.contains(&s.as_str()) => {
                if let Some((variant, reason)) = fold_enum(name, s, variants) {
                    self.note(s, variant, reason);
                    return visitor
                        .visit_enum(variant.into_deserializer())
                        .map_err(|e: DeError| self.locate(e));
                }
                visitor
                    .visit_enum(s.as_str().into_deserializer())
                    .map_err(|e: DeError| self.locate(e))
            }
            NodeKind::Str(s) => visitor
                .visit_enum(s.as_str().into_deserializer())
                .map_err(|e: DeError| self.locate(e)),
            _ => Err(self.wrong_type(Expected::OneOf(variants))),
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, DeError> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        visitor.visit_unit()
    }

    serde::forward_to_deserialize_any! {
        i8 i16 i32 i128 u8 u16 u32 u128 char bytes byte_buf unit unit_struct tuple
        tuple_struct identifier
    }
}

struct SeqDe<'p, 'a, 'u, I> {
    items: I,
    index: usize,
    parent: &'p NodeDeserializer<'a, 'u>,
}

impl<'de, 'a: 'de, 'u, I: Iterator<Item = &'a Node>> SeqAccess<'de> for SeqDe<'_, 'a, 'u, I> {
    type Error = DeError;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, DeError> {
        let Some(node) = self.items.next() else {
            return Ok(None);
        };
        let path = format!("{}[{}]", self.parent.path, self.index);
        self.index += 1;
        let child = self.parent.child(node, path);
        let located = NodeDeserializer {
            node: child.node,
            path: child.path.clone(),
            unknown: child.unknown,
        };
        seed.deserialize(child)
            .map(Some)
            .map_err(|e| located.locate(e))
    }
}

struct MapDe<'p, 'a, 'u, I> {
    entries: I,
    value: Option<(&'a Node, String)>,
    parent: &'p NodeDeserializer<'a, 'u>,
}

impl<'de, 'a: 'de, 'u, I> MapAccess<'de> for MapDe<'_, 'a, 'u, I>
where
    I: Iterator<Item = &'a (Key, Node)>,
{
    type Error = DeError;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, DeError> {
        let Some((key, value)) = self.entries.next() else {
            return Ok(None);
        };
        let path = join_key(&self.parent.path, &key.name);
        self.value = Some((value, path));
        let key_de: de::value::BorrowedStrDeserializer<'de, DeError> =
            de::value::BorrowedStrDeserializer::new(key.name.as_str());
        seed.deserialize(key_de).map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, DeError> {
        let (node, path) = self
            .value
            .take()
            .ok_or_else(|| <DeError as de::Error>::custom("value requested before key"))?;
        let child = self.parent.child(node, path);
        let located = NodeDeserializer {
            node: child.node,
            path: child.path.clone(),
            unknown: child.unknown,
        };
        seed.deserialize(child).map_err(|e| located.locate(e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::package::model::Process;

    fn shape(yaml: &str) -> ShapeError {
        let node = Node::parse(yaml).expect("parses");
        from_node::<Process>(&node).expect_err("shape error")
    }

    #[test]
    fn positions_are_one_based_and_follow_paths() {
        let node = Node::parse("name: x\nphases:\n  - id: a\n    depends_on: [b]\n").unwrap();
        assert_eq!(node.position_of("name"), Pos { line: 1, column: 7 });
        assert_eq!(
            node.position_of("phases[0].depends_on[0]"),
            Pos {
                line: 4,
                column: 18
            }
        );
        // A missing key points at its nearest present ancestor.
        assert_eq!(
            node.position_of("phases[0].description"),
            Pos { line: 3, column: 5 }
        );
    }

    #[test]
    fn wrong_type_is_located() {
        let err = shape(
            "name: x\nphases:\n  - id: a\n    description: d\n    depends_on: []\n    model_tier: high\n",
        );
        assert_eq!(err.kind, ShapeErrorKind::WrongType);
        assert_eq!(err.path, "phases[0].model_tier");
        assert_eq!(
            err.pos,
            Pos {
                line: 6,
                column: 17
            }
        );
    }

    #[test]
    fn missing_field_is_placed_under_its_mapping() {
        let err = shape("name: x\nphases:\n  - id: a\n    depends_on: []\n");
        assert_eq!(err.kind, ShapeErrorKind::MissingField);
        assert_eq!(err.path, "phases[0].description");
        assert_eq!(err.pos, Pos { line: 3, column: 5 });
    }

    #[test]
    fn unknown_variant_is_located() {
        let err = shape("name: x\nphase_mode: loose\n");
        assert_eq!(err.kind, ShapeErrorKind::UnknownVariant);
        assert_eq!(err.path, "phase_mode");
        assert_eq!(
            err.pos,
            Pos {
                line: 2,
                column: 13
            }
        );
        assert!(err.message.contains("`strict`"), "{}", err.message);
    }

    #[test]
    fn unknown_keys_are_collected_not_fatal() {
        let node = Node::parse("name: x\nfavourite_colour: red\ntools:\n  requird: [a]\n").unwrap();
        let (p, notes) = from_node::<Process>(&node).unwrap();
        assert_eq!(p.name, "x");
        let paths: Vec<_> = notes.unknown.iter().map(|u| u.path.as_str()).collect();
        assert_eq!(paths, ["favourite_colour", "tools.requird"]);
        assert_eq!(notes.unknown[1].pos, Pos { line: 4, column: 3 });
    }

    #[test]
    fn duplicate_keys_and_syntax_errors_fail_parsing_with_a_position() {
        let (msg, pos, dup) = Node::parse("name: a\nname: b\n").unwrap_err();
        assert!(msg.contains("duplicate"), "{msg}");
        assert!(dup);
        assert_eq!(pos.line, 2);
        let (_, pos, dup) = Node::parse("name: [a\n").unwrap_err();
        assert!(!dup);
        assert!(pos.line >= 1);
    }
}
