//! What an envelope means to an agent, read once (rustls' "parse once into a typed value"):
//! a task created for it, a task moved, or nothing it acts on.
//!
//! The shape of a task's work is this kit's interpretation — v1.1 §18.1 names the intent
//! `task.create@v1` and leaves its parameters open — and is written down in the crate README:
//!
//! ```json
//! {"intent": "task.create@v1",
//!  "parameters": {"title": "…", "assignee": "loom://bot.alice@a.test",
//!                 "work": {"kind": "process", "package": "market-sizing", "goal": "…"}}}
//! {"work": {"kind": "plsp", "program": {"instructions": ["INSTR: …"], "initial": "S{}S",
//!                                       "inputs": {"temp": [75, 82]}, "config": {…}}}}
//! ```

use loom_plsp::scenario::Scenario;
use loom_protocol::task::TaskState;
use serde_json::Value;

/// The work a task asks for.
#[derive(Debug, Clone)]
pub enum Work {
    /// Run the process package `package` (by name, from the agent's configured packages)
    /// with `goal`.
    Process {
        /// The package name (`process.yaml` `name`).
        package: String,
        /// The run's goal.
        goal: String,
    },
    /// Run a PLSP program (a `loom-plsp` scenario without `http`: `!fetch` has no place in
    /// an agent that talks LOOM).
    Plsp(Box<Scenario>),
}

impl Work {
    /// A short name for logs and replies: `process market-sizing`, `plsp temperature`.
    pub fn label(&self) -> String {
        match self {
            Work::Process { package, .. } => format!("process {package}"),
            Work::Plsp(s) => format!("plsp {}", s.name),
        }
    }
}

/// Where a task came from, for the safety defaults (v1.1 §18.5, §21.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Provenance {
    /// Sent by a `bridge` identity or carrying `meta.bridge`: non-authoritative (§21.2).
    pub bridged: bool,
}

/// A task created for someone (v1.1 §18.3).
#[derive(Debug, Clone)]
pub struct TaskCreated {
    /// The task id: the id of the `task.create@v1` envelope.
    pub task_id: String,
    /// Its thread.
    pub thread_id: String,
    /// Who created it.
    pub creator: String,
    /// `parameters.assignee`.
    pub assignee: Option<String>,
    /// `parameters.title` (empty when absent).
    pub title: String,
    /// The work, or why it cannot be read (a reply names the member).
    pub work: Result<Work, String>,
    /// Where it came from.
    pub provenance: Provenance,
}

/// An envelope, as far as the agent is concerned.
#[derive(Debug, Clone)]
pub enum Seen {
    /// `task.create@v1`.
    Created(TaskCreated),
    /// `task.state_update@v1`: `task_id` moved to `state` (sent by `by`, envelope `envelope_id`).
    Moved {
        /// The task.
        task_id: String,
        /// The new state.
        state: TaskState,
        /// The sender.
        by: String,
        /// The update's envelope id (a later update names it as `parent_id`).
        envelope_id: String,
    },
    /// Anything else.
    Other,
}

fn str_at<'a>(v: &'a Value, pointer: &str) -> Option<&'a str> {
    v.pointer(pointer).and_then(Value::as_str)
}

/// Reads an envelope as the node returned it (`GET /v1/envelopes/{id}`).
pub fn read(envelope: &Value) -> Seen {
    if envelope.pointer("/content/encrypted") == Some(&Value::Bool(true)) {
        return Seen::Other;
    }
    let params = envelope
        .pointer("/content/structured/parameters")
        .unwrap_or(&Value::Null);
    let id = str_at(envelope, "/id").unwrap_or_default().to_owned();
    let from = str_at(envelope, "/from/identity")
        .unwrap_or_default()
        .to_owned();
    match str_at(envelope, "/content/structured/intent") {
        Some("task.create@v1") => Seen::Created(TaskCreated {
            task_id: id,
            thread_id: str_at(envelope, "/thread_id")
                .unwrap_or_default()
                .to_owned(),
            creator: from,
            assignee: params
                .get("assignee")
                .and_then(Value::as_str)
                .map(str::to_owned),
            title: params
                .get("title")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            work: parse_work(params.get("work")),
            provenance: Provenance {
                bridged: str_at(envelope, "/from/type") == Some("bridge")
                    || envelope.pointer("/meta/bridge").is_some(),
            },
        }),
        Some("task.state_update@v1") => {
            let state = params
                .get("state")
                .and_then(Value::as_str)
                .and_then(TaskState::parse);
            match (params.get("task_id").and_then(Value::as_str), state) {
                (Some(t), Some(state)) => Seen::Moved {
                    task_id: t.to_owned(),
                    state,
                    by: from,
                    envelope_id: id,
                },
                _ => Seen::Other,
            }
        }
        _ => Seen::Other,
    }
}

const WORK: &str = "content.structured.parameters.work";

/// `parameters.work`: every problem names the member.
fn parse_work(work: Option<&Value>) -> Result<Work, String> {
    let Some(w) = work.and_then(Value::as_object) else {
        return Err(format!(
            "{WORK}: an object naming the work is required (kind \"process\" or \"plsp\"; loom-agent README \"Tasks\")"
        ));
    };
    let text = |k: &str| -> Result<String, String> {
        w.get(k)
            .and_then(Value::as_str)
            .filter(|s| !s.trim().is_empty())
            .map(str::to_owned)
            .ok_or_else(|| format!("{WORK}.{k}: a non-empty string is required"))
    };
    match w.get("kind").and_then(Value::as_str) {
        Some("process") => Ok(Work::Process {
            package: text("package")?,
            goal: text("goal")?,
        }),
        Some("plsp") => {
            let program = w
                .get("program")
                .ok_or_else(|| format!("{WORK}.program: a PLSP program is required"))?;
            if program.get("http").is_some() {
                return Err(format!(
                    "{WORK}.program.http: an agent's PLSP program talks LOOM (!send, !read, !wait), not HTTP"
                ));
            }
            let text = serde_json::to_string(program).unwrap_or_default();
            Scenario::from_json(&text)
                .map(|s| Work::Plsp(Box::new(s)))
                .map_err(|e| format!("{WORK}.program: {e}"))
        }
        Some(other) => Err(format!(
            "{WORK}.kind: {other:?} is not a kind of work this agent runs (\"process\" or \"plsp\")"
        )),
        None => Err(format!("{WORK}.kind: required (\"process\" or \"plsp\")")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn create(params: Value) -> Value {
        json!({"id": "env_1", "thread_id": "thr_1", "type": "task",
               "from": {"identity": "loom://alice@a.test", "type": "human"},
               "content": {"structured": {"intent": "task.create@v1", "parameters": params}, "encrypted": false}})
    }

    #[test]
    fn a_process_task_is_read_with_its_work() {
        let s = read(&create(
            json!({"title": "size it", "assignee": "loom://bot@a.test",
            "work": {"kind": "process", "package": "market-sizing", "goal": "EU B2B"}}),
        ));
        let Seen::Created(t) = s else {
            panic!("not a task")
        };
        assert_eq!(t.task_id, "env_1");
        assert_eq!(t.assignee.as_deref(), Some("loom://bot@a.test"));
        assert!(
            matches!(t.work, Ok(Work::Process { ref package, .. }) if package == "market-sizing")
        );
        assert!(!t.provenance.bridged);
    }

    #[test]
    fn bad_work_names_the_member() {
        for (work, member) in [
            (json!(null), "parameters.work:"),
            (json!({"kind": "shell"}), "work.kind"),
            (json!({"kind": "process", "goal": "x"}), "work.package"),
            (
                json!({"kind": "process", "package": "p", "goal": " "}),
                "work.goal",
            ),
            (json!({"kind": "plsp"}), "work.program"),
            (
                json!({"kind": "plsp", "program": {"instructions": []}}),
                "work.program",
            ),
            (
                json!({"kind": "plsp", "program": {"name": "x", "instructions": ["INSTR: @set:$a=1"], "http": {}}}),
                "work.program.http",
            ),
        ] {
            let Seen::Created(t) = read(&create(json!({"work": work}))) else {
                panic!()
            };
            let e = t.work.unwrap_err();
            assert!(e.contains(member), "{e} should name {member}");
        }
    }

    #[test]
    fn bridged_content_is_marked() {
        let mut e = create(json!({"work": {"kind": "process", "package": "p", "goal": "g"}}));
        e["meta"] = json!({"bridge": {"source": "email"}});
        let Seen::Created(t) = read(&e) else { panic!() };
        assert!(t.provenance.bridged);
        let mut e = create(json!({}));
        e["from"]["type"] = "bridge".into();
        let Seen::Created(t) = read(&e) else { panic!() };
        assert!(t.provenance.bridged);
    }

    #[test]
    fn updates_and_other_envelopes() {
        let e = json!({"id": "env_2", "from": {"identity": "loom://alice@a.test"},
            "content": {"structured": {"intent": "task.state_update@v1",
                        "parameters": {"task_id": "env_1", "state": "assigned"}}}});
        assert!(matches!(
            read(&e),
            Seen::Moved {
                state: TaskState::Assigned,
                ..
            }
        ));
        let bad = json!({"content": {"structured": {"intent": "task.state_update@v1",
                        "parameters": {"task_id": "env_1", "state": "done"}}}});
        assert!(matches!(read(&bad), Seen::Other));
        assert!(matches!(
            read(&json!({"content": {"human": {"text": "hi"}}})),
            Seen::Other
        ));
        let sealed =
            json!({"content": {"encrypted": true, "structured": {"intent": "task.create@v1"}}});
        assert!(matches!(read(&sealed), Seen::Other));
    }
}
