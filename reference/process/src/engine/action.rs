//! loop-engine "Tool Action Schema (v1)": the actions a model may propose, and the
//! observation each one produces.
//!
//! Parsing is strict: the `type` must be one of the listed actions, every required field must
//! be present with the right JSON type, and unknown fields are rejected, each with a message
//! naming the action type and field.
//!
//! One reading of the schema: its `checkpoint.restore` example has two `id` keys (the
//! action's and the checkpoint's), which JSON cannot hold. Here `id` is always the action id
//! and the checkpoint to restore is `checkpointId`.
//!
//! One extension: `{"id", "type": "tool.call", "tool": NAME, "args": {...}}` calls one of the
//! package's bundled tools (guide "Bundled tools"; `engine::bundled`), which the v1 schema
//! has no action for.

use serde::{Deserialize, Serialize};
use serde_json::Value as Json;
use std::collections::BTreeMap;

/// A tool action (loop-engine "Tool Action Schema (v1)").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", try_from = "Json")]
pub enum ToolAction {
    /// Run `program` with `args` (no shell).
    #[serde(rename = "terminal.run")]
    TerminalRun {
        /// Action id.
        id: String,
        /// The program.
        program: String,
        /// Its arguments.
        #[serde(default)]
        args: Vec<String>,
        /// Working directory, workspace-relative.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cwd: Option<String>,
    },
    /// Run a command line (see `tools` for when a shell is used).
    #[serde(rename = "terminal.exec")]
    TerminalExec {
        /// Action id.
        id: String,
        /// The command line.
        cmd: String,
        /// Working directory, workspace-relative.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cwd: Option<String>,
    },
    /// Read a file.
    #[serde(rename = "fs.read")]
    FsRead {
        /// Action id.
        id: String,
        /// Workspace-relative path.
        path: String,
    },
    /// Create or replace a file.
    #[serde(rename = "fs.write")]
    FsWrite {
        /// Action id.
        id: String,
        /// Workspace-relative path.
        path: String,
        /// The whole new content.
        content: String,
    },
    /// Apply a unified diff to one file.
    #[serde(rename = "fs.applyPatch")]
    FsApplyPatch {
        /// Action id.
        id: String,
        /// Workspace-relative path.
        path: String,
        /// Unified diff text.
        patch: String,
    },
    /// Search files for a regex.
    #[serde(rename = "fs.search")]
    FsSearch {
        /// Action id.
        id: String,
        /// Regular expression (the packages' Python `re` dialect, `package::pattern`), matched per line.
        pattern: String,
        /// Workspace-relative files or directories; the whole workspace when empty.
        #[serde(default)]
        paths: Vec<String>,
    },
    /// `git status`.
    #[serde(rename = "git.status")]
    GitStatus {
        /// Action id.
        id: String,
    },
    /// `git diff`, optionally of one path.
    #[serde(rename = "git.diff")]
    GitDiff {
        /// Action id.
        id: String,
        /// Workspace-relative path.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        path: Option<String>,
    },
    /// Stage everything and commit.
    #[serde(rename = "git.commit")]
    GitCommit {
        /// Action id.
        id: String,
        /// Commit message.
        message: String,
    },
    /// Snapshot the workspace.
    #[serde(rename = "checkpoint.create")]
    CheckpointCreate {
        /// Action id.
        id: String,
        /// Optional label.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        label: Option<String>,
    },
    /// Restore a snapshot.
    #[serde(rename = "checkpoint.restore")]
    CheckpointRestore {
        /// Action id.
        id: String,
        /// The checkpoint to restore (see the module note).
        #[serde(rename = "checkpointId")]
        checkpoint_id: String,
    },
    /// Fetch a URL (refused unless the network is allowed).
    #[serde(rename = "browser.fetch")]
    BrowserFetch {
        /// Action id.
        id: String,
        /// The URL.
        url: String,
    },
    /// Extension: call a bundled tool of the package with `args` (a JSON object).
    #[serde(rename = "tool.call")]
    ToolCall {
        /// Action id.
        id: String,
        /// The tool's `name`.
        tool: String,
        /// The tool's arguments (`{}` when absent).
        #[serde(default = "empty_args")]
        args: Json,
    },
}

fn empty_args() -> Json {
    Json::Object(Default::default())
}

/// Action types beyond the v1 schema that this runtime accepts.
pub const EXTENSION_ACTION_TYPES: [&str; 1] = ["tool.call"];

/// Every action type name, in schema order.
pub const ACTION_TYPES: [&str; 12] = [
    "terminal.run",
    "terminal.exec",
    "fs.read",
    "fs.write",
    "fs.applyPatch",
    "fs.search",
    "git.status",
    "git.diff",
    "git.commit",
    "checkpoint.create",
    "checkpoint.restore",
    "browser.fetch",
];

/// Required and optional fields per action type (besides `id` and `type`), with their JSON
/// kind: `s` string, `a` array of strings, `o` object.
fn fields_of(kind: &str) -> &'static [(&'static str, bool, char)] {
    match kind {
        "terminal.run" => &[
            ("program", true, 's'),
            ("args", false, 'a'),
            ("cwd", false, 's'),
        ],
        "terminal.exec" => &[("cmd", true, 's'), ("cwd", false, 's')],
        "fs.read" => &[("path", true, 's')],
        "fs.write" => &[("path", true, 's'), ("content", true, 's')],
        "fs.applyPatch" => &[("path", true, 's'), ("patch", true, 's')],
        "fs.search" => &[("pattern", true, 's'), ("paths", false, 'a')],
        "git.diff" => &[("path", false, 's')],
        "git.commit" => &[("message", true, 's')],
        "checkpoint.create" => &[("label", false, 's')],
        "checkpoint.restore" => &[("checkpointId", true, 's')],
        "browser.fetch" => &[("url", true, 's')],
        "tool.call" => &[("tool", true, 's'), ("args", false, 'o')],
        _ => &[],
    }
}

/// Why a proposed action is not a valid Tool Action v1.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActionError(pub String);

impl std::fmt::Display for ActionError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} (loop-engine \"Tool Action Schema (v1)\")", self.0)
    }
}

impl std::error::Error for ActionError {}

impl TryFrom<Json> for ToolAction {
    type Error = ActionError;

    fn try_from(v: Json) -> Result<Self, ActionError> {
        ToolAction::from_json(&v)
    }
}

impl ToolAction {
    /// Strictly parses one action, with an error naming the type and field at fault.
    pub fn from_json(v: &Json) -> Result<ToolAction, ActionError> {
        let obj = v
            .as_object()
            .ok_or_else(|| ActionError(format!("an action must be a JSON object, got {v}")))?;
        let kind = match obj.get("type") {
            Some(Json::String(s)) => s.as_str(),
            Some(other) => {
                return Err(ActionError(format!("`type` must be a string, got {other}")));
            }
            None => return Err(ActionError("missing `type`".into())),
        };
        if !ACTION_TYPES.contains(&kind) && !EXTENSION_ACTION_TYPES.contains(&kind) {
            return Err(ActionError(format!(
                "unknown action type {kind:?}; expected one of {}, {}",
                ACTION_TYPES.join(", "),
                EXTENSION_ACTION_TYPES.join(", ")
            )));
        }
        match obj.get("id") {
            Some(Json::String(s)) if !s.is_empty() => {}
            Some(Json::String(_)) => return Err(ActionError(format!("{kind}: `id` is empty"))),
            Some(other) => {
                return Err(ActionError(format!(
                    "{kind}: `id` must be a string, got {other}"
                )));
            }
            None => return Err(ActionError(format!("{kind}: missing `id`"))),
        }
        let fields = fields_of(kind);
        for key in obj.keys() {
            if key != "id" && key != "type" && !fields.iter().any(|(f, _, _)| f == key) {
                let allowed: Vec<&str> = fields.iter().map(|(f, _, _)| *f).collect();
                return Err(ActionError(format!(
                    "{kind}: unknown field `{key}` (allowed: id, type{}{})",
                    if allowed.is_empty() { "" } else { ", " },
                    allowed.join(", ")
                )));
            }
        }
        for (name, required, shape) in fields {
            match (obj.get(*name), shape) {
                (None, _) if *required => {
                    return Err(ActionError(format!("{kind}: missing `{name}`")));
                }
                (None, _) | (Some(Json::String(_)), 's') => {}
                (Some(Json::Array(items)), 'a') if items.iter().all(Json::is_string) => {}
                (Some(Json::Object(_)), 'o') => {}
                (Some(other), 'o') => {
                    return Err(ActionError(format!(
                        "{kind}: `{name}` must be an object, got {other}"
                    )));
                }
                (Some(other), 's') => {
                    return Err(ActionError(format!(
                        "{kind}: `{name}` must be a string, got {other}"
                    )));
                }
                (Some(other), _) => {
                    return Err(ActionError(format!(
                        "{kind}: `{name}` must be an array of strings, got {other}"
                    )));
                }
            }
        }
        let mut plain = serde_json::Map::new();
        for (k, val) in obj {
            plain.insert(k.clone(), val.clone());
        }
        serde_json::from_value::<Tagged>(Json::Object(plain))
            .map(|t| t.0)
            .map_err(|e| ActionError(format!("{kind}: {e}")))
    }

    /// The action id.
    pub fn id(&self) -> &str {
        match self {
            ToolAction::TerminalRun { id, .. }
            | ToolAction::TerminalExec { id, .. }
            | ToolAction::FsRead { id, .. }
            | ToolAction::FsWrite { id, .. }
            | ToolAction::FsApplyPatch { id, .. }
            | ToolAction::FsSearch { id, .. }
            | ToolAction::GitStatus { id }
            | ToolAction::GitDiff { id, .. }
            | ToolAction::GitCommit { id, .. }
            | ToolAction::CheckpointCreate { id, .. }
            | ToolAction::CheckpointRestore { id, .. }
            | ToolAction::BrowserFetch { id, .. }
            | ToolAction::ToolCall { id, .. } => id,
        }
    }

    /// The action type name (`fs.read`, ...).
    pub fn type_name(&self) -> &'static str {
        match self {
            ToolAction::TerminalRun { .. } => "terminal.run",
            ToolAction::TerminalExec { .. } => "terminal.exec",
            ToolAction::FsRead { .. } => "fs.read",
            ToolAction::FsWrite { .. } => "fs.write",
            ToolAction::FsApplyPatch { .. } => "fs.applyPatch",
            ToolAction::FsSearch { .. } => "fs.search",
            ToolAction::GitStatus { .. } => "git.status",
            ToolAction::GitDiff { .. } => "git.diff",
            ToolAction::GitCommit { .. } => "git.commit",
            ToolAction::CheckpointCreate { .. } => "checkpoint.create",
            ToolAction::CheckpointRestore { .. } => "checkpoint.restore",
            ToolAction::BrowserFetch { .. } => "browser.fetch",
            ToolAction::ToolCall { .. } => "tool.call",
        }
    }

    /// The action as its schema JSON.
    pub fn to_json(&self) -> Json {
        serde_json::to_value(self).unwrap_or(Json::Null)
    }
}

/// The derive-generated tagged decoding, used after the strict checks above.
struct Tagged(ToolAction);

impl<'de> Deserialize<'de> for Tagged {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(remote = "ToolAction", tag = "type")]
        enum Raw {
            #[serde(rename = "terminal.run")]
            TerminalRun {
                id: String,
                program: String,
                #[serde(default)]
                args: Vec<String>,
                #[serde(default)]
                cwd: Option<String>,
            },
            #[serde(rename = "terminal.exec")]
            TerminalExec {
                id: String,
                cmd: String,
                #[serde(default)]
                cwd: Option<String>,
            },
            #[serde(rename = "fs.read")]
            FsRead { id: String, path: String },
            #[serde(rename = "fs.write")]
            FsWrite {
                id: String,
                path: String,
                content: String,
            },
            #[serde(rename = "fs.applyPatch")]
            FsApplyPatch {
                id: String,
                path: String,
                patch: String,
            },
            #[serde(rename = "fs.search")]
            FsSearch {
                id: String,
                pattern: String,
                #[serde(default)]
                paths: Vec<String>,
            },
            #[serde(rename = "git.status")]
            GitStatus { id: String },
            #[serde(rename = "git.diff")]
            GitDiff {
                id: String,
                #[serde(default)]
                path: Option<String>,
            },
            #[serde(rename = "git.commit")]
            GitCommit { id: String, message: String },
            #[serde(rename = "checkpoint.create")]
            CheckpointCreate {
                id: String,
                #[serde(default)]
                label: Option<String>,
            },
            #[serde(rename = "checkpoint.restore")]
            CheckpointRestore {
                id: String,
                #[serde(rename = "checkpointId")]
                checkpoint_id: String,
            },
            #[serde(rename = "browser.fetch")]
            BrowserFetch { id: String, url: String },
            #[serde(rename = "tool.call")]
            ToolCall {
                id: String,
                tool: String,
                #[serde(default = "empty_args")]
                args: Json,
            },
        }
        Raw::deserialize(d).map(Tagged)
    }
}

/// loop-engine "Tool Action Schema (v1)", "Tool result -> observation".
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Observation {
    /// Whether the action succeeded.
    pub ok: bool,
    /// One-line summary (for refusals: the reason).
    pub summary: String,
    /// Process exit code, for commands.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// Named artifacts (e.g. `path`).
    #[serde(default)]
    pub artifacts: BTreeMap<String, Json>,
    /// Tool-specific raw output.
    #[serde(default)]
    pub raw: Json,
}

impl Observation {
    /// A success with a summary.
    pub fn ok(summary: impl Into<String>) -> Self {
        Observation {
            ok: true,
            summary: summary.into(),
            exit_code: None,
            artifacts: BTreeMap::new(),
            raw: Json::Object(Default::default()),
        }
    }

    /// A failure or refusal with its reason.
    pub fn fail(summary: impl Into<String>) -> Self {
        Observation {
            ok: false,
            ..Observation::ok(summary)
        }
    }

    /// Adds an artifact.
    pub fn with_artifact(mut self, key: &str, value: impl Into<Json>) -> Self {
        self.artifacts.insert(key.to_owned(), value.into());
        self
    }

    /// Sets the raw output.
    pub fn with_raw(mut self, raw: Json) -> Self {
        self.raw = raw;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_schema_example_parses_and_round_trips() {
        let examples = [
            json!({ "id": "1", "type": "terminal.run", "program": "npm", "args": ["test"], "cwd": "sub" }),
            json!({ "id": "2", "type": "terminal.exec", "cmd": "dir" }),
            json!({ "id": "3", "type": "fs.read", "path": "src/main.ts" }),
            json!({ "id": "4", "type": "fs.write", "path": "src/main.ts", "content": "x" }),
            json!({ "id": "5", "type": "fs.applyPatch", "path": "src/main.ts", "patch": "@@" }),
            json!({ "id": "6", "type": "fs.search", "pattern": "TODO", "paths": ["src"] }),
            json!({ "id": "7", "type": "git.status" }),
            json!({ "id": "8", "type": "git.diff", "path": "a" }),
            json!({ "id": "9", "type": "git.commit", "message": "m" }),
            json!({ "id": "10", "type": "checkpoint.create", "label": "before" }),
            json!({ "id": "11", "type": "checkpoint.restore", "checkpointId": "cp-1" }),
            json!({ "id": "12", "type": "browser.fetch", "url": "https://example.org" }),
        ];
        let mut kinds = Vec::new();
        for ex in examples {
            let a = ToolAction::from_json(&ex).unwrap_or_else(|e| panic!("{ex}: {e}"));
            assert_eq!(a.to_json(), ex, "round trip");
            let via_serde: ToolAction = serde_json::from_value(ex.clone()).unwrap();
            assert_eq!(via_serde, a);
            kinds.push(a.type_name());
        }
        assert_eq!(kinds, ACTION_TYPES);
    }

    #[test]
    fn strict_errors_name_type_and_field() {
        let cases = [
            (
                json!({"id": "1", "type": "fs.delete", "path": "x"}),
                "unknown action type \"fs.delete\"",
            ),
            (
                json!({"id": "1", "type": "fs.read"}),
                "fs.read: missing `path`",
            ),
            (
                json!({"id": "1", "type": "fs.read", "path": "x", "mode": "r"}),
                "fs.read: unknown field `mode`",
            ),
            (json!({"type": "git.status"}), "git.status: missing `id`"),
            (
                json!({"id": "1", "type": "terminal.run", "program": "ls", "args": "-l"}),
                "terminal.run: `args` must be an array of strings",
            ),
            (
                json!({"id": 3, "type": "git.status"}),
                "git.status: `id` must be a string",
            ),
            (json!({"id": "1"}), "missing `type`"),
            (json!(["x"]), "must be a JSON object"),
        ];
        for (v, want) in cases {
            let err = ToolAction::from_json(&v).unwrap_err().to_string();
            assert!(err.contains(want), "{v}: {err}");
            assert!(err.contains("Tool Action Schema"), "{err}");
        }
    }

    #[test]
    fn observation_uses_camel_case_exit_code() {
        let mut o = Observation::ok("ran").with_artifact("path", "a.txt");
        o.exit_code = Some(0);
        let v = serde_json::to_value(&o).unwrap();
        assert_eq!(
            v,
            json!({"ok": true, "summary": "ran", "exitCode": 0, "artifacts": {"path": "a.txt"}, "raw": {}})
        );
    }
}
