//! The agent's decisions, with no IO (quinn-proto's `handle(input)` / `poll()` shape): the
//! host feeds what it read and what happened ([`Input`]); [`AgentCore::poll`] returns what to
//! do next ([`Output`]) given the journal. One task at a time moves along the v1.0 §17.3 table
//! v1.1 §18.3 keeps: `assigned → accepted → in_progress → completed | failed`, or
//! `assigned → declined` with the reason.
//!
//! Safety (v1.1 §18.5, §21.2, extension registry "Negotiation and Safety" 3): a task in a
//! quarantined thread, or asked for by bridged (non-authoritative) content, is held — no
//! update, no run, a line in the agent's log. Work beyond the delegation is declined with a
//! reply naming the scope it would need ([`crate::scope`]). A restart is explicit: an outcome
//! the journal holds is posted, an interrupted run is started again at most
//! [`MAX_ATTEMPTS`] times in all, then the task fails saying so.

use crate::journal::{Journal, WorkOutcome};
use crate::scope;
use crate::work::{Provenance, Seen, TaskCreated, Work};
use loom_protocol::task::TaskState;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

/// Runs of one task an agent starts at most (the first and one after a restart).
pub const MAX_ATTEMPTS: u32 = 2;

/// Where a defect may change the agent's behaviour (the self-test seam, as the node's
/// `Rules`): a real agent uses [`SpecRules`].
pub trait Rules: Send + Sync + std::fmt::Debug {
    /// Does the delegation allow this work? (§13.2)
    fn work_allowed(&self, scopes: &[String], work_scope: &str) -> bool {
        scope::allows(scopes, work_scope)
    }
    /// Run a task's work again although it already completed.
    fn rerun_completed(&self) -> bool {
        false
    }
}

/// The rules as written.
#[derive(Debug, Clone, Copy, Default)]
pub struct SpecRules;
impl Rules for SpecRules {}

/// What the host tells the core.
#[derive(Debug, Clone)]
pub enum Input {
    /// An envelope the agent read; `quarantined`: its thread carries `sys.quarantine`.
    Seen {
        /// The envelope, read.
        seen: Seen,
        /// The thread is quarantined (§18.5).
        quarantined: bool,
    },
    /// The node accepted our update (201): the task is now in `state`.
    Posted {
        /// The task.
        task_id: String,
        /// Its new state.
        state: TaskState,
        /// The update's envelope id.
        envelope_id: String,
    },
    /// The node refused our update for good (a 4xx other than a rate limit), or the agent
    /// would not sign it: `poll` does not try again until the task's state changes.
    Refused {
        /// The task.
        task_id: String,
        /// The node's error.
        error: String,
    },
    /// A run of the task's work ended (the host saved the outcome in the journal first).
    Finished {
        /// The task.
        task_id: String,
    },
    /// An update could not reach the node yet: `poll` decides it again.
    Unsent {
        /// The task.
        task_id: String,
    },
}

/// A `task.state_update@v1` the host signs and posts (§18.3).
#[derive(Debug, Clone, PartialEq)]
pub struct Update {
    /// The task.
    pub task_id: String,
    /// Its thread.
    pub thread_id: String,
    /// The recipient: the task's creator.
    pub to: String,
    /// The last envelope of the task the agent knows (the create or the last update).
    pub parent_id: String,
    /// The new state.
    pub state: TaskState,
    /// Why, for a person (`content.human.text`, and `parameters.reason` when declining or
    /// failing).
    pub reason: String,
    /// `parameters.result` of a `completed` / `failed` update.
    pub result: Option<Value>,
}

/// What the core decided.
#[derive(Debug, Clone)]
pub enum Output {
    /// Post this update.
    Post(Update),
    /// Run the task's work (the `attempt`-th run); report with [`Input::Finished`].
    Run {
        /// The task.
        task_id: String,
        /// Its thread.
        thread_id: String,
        /// Who asked.
        creator: String,
        /// The work.
        work: Work,
        /// 1-based.
        attempt: u32,
    },
    /// A line for the agent's own log (held tasks, refusals).
    Log(String),
}

#[derive(Debug, Clone)]
struct Task {
    created: TaskCreated,
    quarantined: bool,
    state: TaskState,
    /// The last envelope of the task seen (a new update's `parent_id`).
    last: String,
    /// An update or a run is under way: nothing else for this task until it reports.
    busy: bool,
    /// Held: said once, never acted on.
    settled: bool,
    /// The node refused what the agent decided in this state: wait for the state to change.
    stuck: Option<TaskState>,
}

/// The decisions of one agent.
#[derive(Debug)]
pub struct AgentCore {
    me: String,
    scopes: Vec<String>,
    packages: BTreeSet<String>,
    tasks: BTreeMap<String, Task>,
    /// Updates seen before their task's create (another node may deliver out of order).
    early: BTreeMap<String, Vec<(TaskState, String)>>,
    rules: Box<dyn Rules>,
}

impl AgentCore {
    /// The agent `me` with its delegation's `scopes` and the process packages it holds.
    pub fn new(me: &str, scopes: Vec<String>, packages: BTreeSet<String>) -> AgentCore {
        AgentCore {
            me: me.to_owned(),
            scopes,
            packages,
            tasks: BTreeMap::new(),
            early: BTreeMap::new(),
            rules: Box::new(SpecRules),
        }
    }

    /// Uses `rules` instead of the spec's (the quirks of the self-test).
    pub fn with_rules(mut self, rules: Box<dyn Rules>) -> AgentCore {
        self.rules = rules;
        self
    }

    /// The agent's address.
    pub fn me(&self) -> &str {
        &self.me
    }

    /// The state of task `id` as far as the agent knows.
    pub fn state(&self, id: &str) -> Option<TaskState> {
        self.tasks.get(id).map(|t| t.state)
    }

    /// Tasks assigned to this agent that are not in a terminal state and not held.
    pub fn open_tasks(&self) -> usize {
        self.tasks
            .values()
            .filter(|t| !t.state.is_terminal() && !t.settled)
            .count()
    }

    /// Takes one input.
    pub fn handle(&mut self, input: Input) {
        match input {
            Input::Seen { seen, quarantined } => self.seen(seen, quarantined),
            Input::Posted {
                task_id,
                state,
                envelope_id,
            } => {
                if let Some(t) = self.tasks.get_mut(&task_id) {
                    t.busy = false;
                    Self::advance(t, state, envelope_id);
                }
            }
            Input::Refused { task_id, .. } => {
                if let Some(t) = self.tasks.get_mut(&task_id) {
                    t.busy = false;
                    t.stuck = Some(t.state);
                }
            }
            Input::Finished { task_id } | Input::Unsent { task_id } => {
                if let Some(t) = self.tasks.get_mut(&task_id) {
                    t.busy = false;
                }
            }
        }
    }

    /// Moves a task forward only: an echo of an older update (the feed repeats what a 201
    /// already told) never moves it back.
    fn advance(t: &mut Task, state: TaskState, envelope: String) {
        let rank = |s: TaskState| match s {
            TaskState::Created => 0,
            TaskState::Assigned => 1,
            TaskState::Accepted => 2,
            TaskState::InProgress | TaskState::Blocked => 3,
            _ => 4,
        };
        if rank(state) >= rank(t.state) && !t.state.is_terminal() {
            if state != t.state {
                t.stuck = None;
            }
            t.state = state;
        }
        t.last = envelope;
    }

    fn seen(&mut self, seen: Seen, quarantined: bool) {
        match seen {
            Seen::Created(c) => {
                if c.assignee.as_deref() != Some(self.me.as_str())
                    || self.tasks.contains_key(&c.task_id)
                {
                    return;
                }
                let mut t = Task {
                    last: c.task_id.clone(),
                    created: c,
                    quarantined,
                    state: TaskState::Created,
                    busy: false,
                    settled: false,
                    stuck: None,
                };
                for (state, env) in self.early.remove(&t.created.task_id).unwrap_or_default() {
                    Self::advance(&mut t, state, env);
                }
                self.tasks.insert(t.created.task_id.clone(), t);
            }
            Seen::Moved {
                task_id,
                state,
                envelope_id,
                ..
            } => match self.tasks.get_mut(&task_id) {
                Some(t) => Self::advance(t, state, envelope_id),
                None => self
                    .early
                    .entry(task_id)
                    .or_default()
                    .push((state, envelope_id)),
            },
            Seen::Other => {}
        }
    }

    /// What to do now, given what the journal holds.
    pub fn poll(&mut self, journal: &Journal) -> Vec<Output> {
        let mut out = Vec::new();
        let ids: Vec<String> = self.tasks.keys().cloned().collect();
        for id in ids {
            if let Some(o) = self.decide(&id, journal) {
                out.push(o);
            }
        }
        out
    }

    fn decide(&mut self, id: &str, journal: &Journal) -> Option<Output> {
        let rules = &self.rules;
        let scopes = &self.scopes;
        let packages = &self.packages;
        let t = self.tasks.get_mut(id)?;
        if t.busy || t.settled || t.stuck == Some(t.state) {
            return None;
        }
        let record = journal.tasks.get(id).cloned().unwrap_or_default();
        let update = |t: &Task, state, reason, result| update_of(id, t, state, reason, result);
        let run = |t: &Task, work: Work, attempt: u32| Output::Run {
            task_id: id.to_owned(),
            thread_id: t.created.thread_id.clone(),
            creator: t.created.creator.clone(),
            work,
            attempt,
        };
        // Every update is a task.state_update@v1 envelope: without that scope the agent
        // cannot answer at all (§13.3 step 6 would refuse it), so it only says so locally.
        if !scope::allows(scopes, "task.state_update@v1") && !t.state.is_terminal() {
            t.settled = true;
            return Some(Output::Log(format!(
                "task {id}: not answered: the delegation does not grant {}",
                scope::TASK_UPDATE
            )));
        }
        let out = match t.state {
            TaskState::Created | TaskState::Blocked => return None,
            TaskState::Completed if rules.rerun_completed() && record.completed_runs == 1 => {
                let work = t.created.work.clone().ok()?;
                run(t, work, record.attempts + 1)
            }
            s if s.is_terminal() => return None,
            TaskState::Assigned => {
                if let Some(why) = held(t.quarantined, t.created.provenance) {
                    t.settled = true;
                    return Some(Output::Log(format!(
                        "task {id} from {}: held, no automatic action: {why}",
                        t.created.creator
                    )));
                }
                match refusal(&t.created.work, scopes, packages, rules.as_ref()) {
                    Some(reason) => update(t, TaskState::Declined, reason, None),
                    None => update(
                        t,
                        TaskState::Accepted,
                        format!(
                            "accepted: {}",
                            t.created.work.as_ref().map(Work::label).unwrap_or_default()
                        ),
                        None,
                    ),
                }
            }
            TaskState::Accepted => update(t, TaskState::InProgress, "started".into(), None),
            TaskState::InProgress => match (&record.outcome, t.created.work.as_ref()) {
                (Some(o), _) => finish(id, t, o),
                (None, Ok(work)) if record.attempts < MAX_ATTEMPTS => {
                    run(t, work.clone(), record.attempts + 1)
                }
                (None, _) => update(
                    t,
                    TaskState::Failed,
                    format!(
                        "failed: the run was interrupted {} time(s) (the agent restarted mid-task) and is not started again",
                        record.attempts
                    ),
                    Some(serde_json::json!({"interrupted_runs": record.attempts})),
                ),
            },
            _ => return None,
        };
        t.busy = true;
        Some(out)
    }
}

/// The update moving task `id` to `state`, addressed to its creator after its latest envelope.
fn update_of(
    id: &str,
    t: &Task,
    state: TaskState,
    reason: String,
    result: Option<Value>,
) -> Output {
    Output::Post(Update {
        task_id: id.to_owned(),
        thread_id: t.created.thread_id.clone(),
        to: t.created.creator.clone(),
        parent_id: t.last.clone(),
        state,
        reason,
        result,
    })
}

/// The final update for a run's outcome: `completed` or `failed`, with the result.
fn finish(id: &str, t: &Task, o: &WorkOutcome) -> Output {
    let state = if o.ok {
        TaskState::Completed
    } else {
        TaskState::Failed
    };
    update_of(id, t, state, o.summary.clone(), Some(o.result.clone()))
}

/// Why a task must not be acted on automatically (v1.1 §18.5, §21.2), if it must not.
fn held(quarantined: bool, p: Provenance) -> Option<&'static str> {
    if quarantined {
        Some("its thread is quarantined (sys.quarantine, v1.1 §18.5)")
    } else if p.bridged {
        Some(
            "it came through the email bridge, whose content is non-authoritative (v1.1 §21.2); a LOOM-native request is needed",
        )
    } else {
        None
    }
}

/// Why the agent declines a task, if it does: unreadable work, work it does not hold, or work
/// beyond its delegation.
fn refusal(
    work: &Result<Work, String>,
    scopes: &[String],
    packages: &BTreeSet<String>,
    rules: &dyn Rules,
) -> Option<String> {
    let work = match work {
        Err(e) => return Some(format!("declined: {e}")),
        Ok(w) => w,
    };
    let needed = match work {
        Work::Process { package, .. } => scope::process_run(package),
        Work::Plsp(_) => scope::PLSP_RUN.to_owned(),
    };
    if !rules.work_allowed(scopes, &needed) {
        return Some(format!(
            "declined: {} is beyond this agent's delegation: it needs scope {needed:?}; the delegation grants {} (v1.1 §13.2)",
            work.label(),
            scopes.join(", ")
        ));
    }
    if let Work::Process { package, .. } = work
        && !packages.contains(package)
    {
        return Some(format!(
            "declined: this agent holds no process package named {package:?} (it holds: {})",
            packages.iter().cloned().collect::<Vec<_>>().join(", ")
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::journal::TaskRecord;
    use crate::work;
    use serde_json::json;

    const ME: &str = "loom://bot.alice@a.test";

    fn core() -> AgentCore {
        AgentCore::new(
            ME,
            scope::needed_for(&["market-sizing".into()], true),
            ["market-sizing".to_owned()].into(),
        )
    }

    fn created(work: Value) -> Input {
        Input::Seen {
            seen: work::read(&json!({"id": "env_t", "thread_id": "thr_1",
                "from": {"identity": "loom://alice@a.test", "type": "human"},
                "content": {"structured": {"intent": "task.create@v1",
                    "parameters": {"assignee": ME, "work": work}}}})),
            quarantined: false,
        }
    }

    fn moved(state: &str, env: &str) -> Input {
        Input::Seen {
            seen: work::read(
                &json!({"id": env, "from": {"identity": "loom://alice@a.test"},
                "content": {"structured": {"intent": "task.state_update@v1",
                    "parameters": {"task_id": "env_t", "state": state}}}}),
            ),
            quarantined: false,
        }
    }

    fn process() -> Value {
        json!({"kind": "process", "package": "market-sizing", "goal": "EU"})
    }

    /// Polls once, expects one update, and reports it accepted.
    fn step(c: &mut AgentCore, j: &Journal) -> Update {
        let out = c.poll(j);
        let [Output::Post(u)] = out.as_slice() else {
            panic!("expected one update, got {out:?}")
        };
        c.handle(Input::Posted {
            task_id: u.task_id.clone(),
            state: u.state,
            envelope_id: format!("env_{}", u.state.as_str()),
        });
        u.clone()
    }

    #[test]
    fn a_task_runs_from_assigned_to_completed() {
        let mut c = core();
        let mut j = Journal::default();
        c.handle(created(process()));
        assert!(c.poll(&j).is_empty(), "created, not yet assigned");
        c.handle(moved("assigned", "env_a"));
        let u = step(&mut c, &j);
        assert_eq!(
            (u.state, u.parent_id.as_str()),
            (TaskState::Accepted, "env_a")
        );
        assert_eq!(u.to, "loom://alice@a.test");
        let u = step(&mut c, &j);
        assert_eq!(u.state, TaskState::InProgress);
        let out = c.poll(&j);
        let [Output::Run { attempt: 1, .. }] = out.as_slice() else {
            panic!("{out:?}")
        };
        assert!(c.poll(&j).is_empty(), "one run at a time");
        j.tasks.insert(
            "env_t".into(),
            TaskRecord {
                attempts: 1,
                completed_runs: 1,
                outcome: Some(WorkOutcome {
                    ok: true,
                    summary: "sized".into(),
                    result: json!({"deliverables": 3}),
                }),
            },
        );
        c.handle(Input::Finished {
            task_id: "env_t".into(),
        });
        let u = step(&mut c, &j);
        assert_eq!(u.state, TaskState::Completed);
        assert_eq!(u.result, Some(json!({"deliverables": 3})));
        assert!(c.poll(&j).is_empty());
        // The feed's echo of an older update does not move the task back.
        c.handle(moved("in_progress", "env_old"));
        assert_eq!(c.state("env_t"), Some(TaskState::Completed));
        assert!(c.poll(&j).is_empty());
    }

    #[test]
    fn work_beyond_the_delegation_is_declined_naming_the_scope() {
        let mut c = AgentCore::new(
            ME,
            scope::needed_for(&[], false),
            ["market-sizing".to_owned()].into(),
        );
        c.handle(created(process()));
        c.handle(moved("assigned", "env_a"));
        let u = step(&mut c, &Journal::default());
        assert_eq!(u.state, TaskState::Declined);
        assert!(
            u.reason.contains("process.run.market-sizing"),
            "{}",
            u.reason
        );
        // A package the agent does not hold, and unreadable work.
        for work in [
            json!({"kind": "process", "package": "code-fix", "goal": "x"}),
            json!({"kind": "sql"}),
        ] {
            let mut c = core();
            c.handle(created(work));
            c.handle(moved("assigned", "env_a"));
            let u = step(&mut c, &Journal::default());
            assert_eq!(u.state, TaskState::Declined, "{}", u.reason);
        }
    }

    #[test]
    fn quarantined_and_bridged_tasks_are_held_without_a_word_to_the_thread() {
        let mut c = core();
        let Input::Seen { seen, .. } = created(process()) else {
            unreachable!()
        };
        c.handle(Input::Seen {
            seen,
            quarantined: true,
        });
        c.handle(moved("assigned", "env_a"));
        let out = c.poll(&Journal::default());
        assert!(
            matches!(out.as_slice(), [Output::Log(l)] if l.contains("quarantined")),
            "{out:?}"
        );
        assert!(c.poll(&Journal::default()).is_empty());
        let mut c = core();
        let Input::Seen {
            seen: Seen::Created(mut t),
            ..
        } = created(process())
        else {
            unreachable!()
        };
        t.provenance.bridged = true;
        c.handle(Input::Seen {
            seen: Seen::Created(t),
            quarantined: false,
        });
        c.handle(moved("assigned", "env_a"));
        let out = c.poll(&Journal::default());
        assert!(
            matches!(out.as_slice(), [Output::Log(l)] if l.contains("non-authoritative")),
            "{out:?}"
        );
    }

    #[test]
    fn a_restart_posts_a_saved_outcome_reruns_once_then_fails() {
        let mut j = Journal::default();
        // Restarted with the task in progress and one interrupted run: run again.
        let mut c = core();
        c.handle(created(process()));
        c.handle(moved("in_progress", "env_p"));
        j.tasks.insert(
            "env_t".into(),
            TaskRecord {
                attempts: 1,
                ..TaskRecord::default()
            },
        );
        assert!(matches!(
            c.poll(&j).as_slice(),
            [Output::Run { attempt: 2, .. }]
        ));
        // Interrupted twice: fail, saying so.
        let mut c = core();
        c.handle(created(process()));
        c.handle(moved("in_progress", "env_p"));
        j.tasks.get_mut("env_t").unwrap().attempts = 2;
        let u = step(&mut c, &j);
        assert_eq!(u.state, TaskState::Failed);
        assert!(u.reason.contains("interrupted 2"), "{}", u.reason);
        // The outcome was saved before the crash: post it, do not run again.
        let mut c = core();
        c.handle(created(process()));
        c.handle(moved("in_progress", "env_p"));
        j.tasks.get_mut("env_t").unwrap().outcome = Some(WorkOutcome {
            ok: false,
            summary: "phase top-down failed".into(),
            result: json!({}),
        });
        let u = step(&mut c, &j);
        assert_eq!(u.state, TaskState::Failed);
        assert_eq!(u.reason, "phase top-down failed");
    }

    #[test]
    fn updates_before_their_create_are_kept_and_others_tasks_ignored() {
        let mut c = core();
        c.handle(moved("assigned", "env_a"));
        c.handle(created(process()));
        assert_eq!(c.state("env_t"), Some(TaskState::Assigned));
        let mut other = core();
        other.handle(Input::Seen {
            seen: work::read(&json!({"id": "env_x", "thread_id": "thr_1",
                "from": {"identity": "loom://alice@a.test"},
                "content": {"structured": {"intent": "task.create@v1",
                    "parameters": {"assignee": "loom://bob@a.test", "work": process()}}}})),
            quarantined: false,
        });
        assert_eq!(other.open_tasks(), 0);
    }

    #[test]
    fn a_refused_update_is_not_retried_until_the_state_changes() {
        let mut c = core();
        c.handle(created(process()));
        c.handle(moved("assigned", "env_a"));
        assert_eq!(c.poll(&Journal::default()).len(), 1);
        c.handle(Input::Refused {
            task_id: "env_t".into(),
            error: "409 STATE_TRANSITION_INVALID".into(),
        });
        assert!(c.poll(&Journal::default()).is_empty());
        // The update had landed after all (its answer was lost): the feed shows it.
        c.handle(moved("accepted", "env_acc"));
        let out = c.poll(&Journal::default());
        assert!(
            matches!(out.as_slice(), [Output::Post(u)] if u.state == TaskState::InProgress),
            "{out:?}"
        );
        c.handle(Input::Unsent {
            task_id: "env_t".into(),
        });
        assert_eq!(
            c.poll(&Journal::default()).len(),
            1,
            "an unsent update is decided again"
        );
    }
}
