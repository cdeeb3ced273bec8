//! The agent's async shell: it logs in, reads its node's event feed (v1.1 §16.8) — woken by
//! the WebSocket stream (§17) instead of waiting out the poll interval — reads each new
//! envelope once ([`crate::work::read`]), lets [`AgentCore`] decide, and carries the decisions
//! out: signed updates posted (retried with the same bytes and an `Idempotency-Key`, so a
//! retry after a lost answer is not a second update), runs started with the journal saved
//! before and after. Every envelope it signs is an agent envelope: `from.type = "agent"`,
//! the full `from.delegation_chain` (§13.5, §18.2), and an action its chain's leaf scope
//! allows (§13.3 step 6) — checked here before signing.

use crate::core::{AgentCore, Input, Output, Rules, Update};
use crate::encoding::{Cost, Encoding, NOTATION_EXTENSION};
use crate::journal::{Journal, JournalStore};
use crate::run::{LoomOps, Packages, RunReport};
use crate::scope;
use crate::work::{self, Seen, Work};
use loom_client::ws::{self, Frame, TokenIn};
use loom_client::{Client, ClientError, Dial, EnvelopeFactory, Identity, Trust};
use loom_plsp::engine::StateEngine;
use loom_plsp::env::BoxFuture;
use loom_protocol::clock::Clock;
use loom_protocol::task::TaskState;
use serde::Serialize;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What the agent reports as it works (the CLI prints it; the simulator records it).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum AgentEvent {
    /// Logged in to the node.
    LoggedIn {
        /// The node.
        node: String,
    },
    /// An update was accepted by the node.
    Posted {
        /// The task.
        task_id: String,
        /// The state it moved to.
        state: String,
        /// The update's envelope id.
        envelope_id: String,
        /// Its action (§13.3 step 6).
        action: String,
        /// What its parameters cost, JSON vs Loom notation.
        cost: Cost,
    },
    /// The node refused an update for good.
    Refused {
        /// The task.
        task_id: String,
        /// The state the agent tried.
        state: String,
        /// The node's error.
        error: String,
    },
    /// A message of a PLSP run (`!send`, `!page`, `>` data) was accepted.
    Message {
        /// The task.
        task_id: String,
        /// Its envelope id.
        envelope_id: String,
        /// What its parameters cost.
        cost: Cost,
    },
    /// A run started.
    RunStarted {
        /// The task.
        task_id: String,
        /// 1-based.
        attempt: u32,
        /// `process NAME` / `plsp NAME`.
        work: String,
    },
    /// A run ended.
    RunFinished {
        /// The task.
        task_id: String,
        /// 1-based.
        attempt: u32,
        /// It did what it promised.
        ok: bool,
        /// The first line of its outcome.
        summary: String,
        /// The runner's own event log (process events JSONL, or the PLSP trace).
        runner_log: String,
    },
    /// A line for the operator (held tasks, unreachable node).
    Log {
        /// The line.
        line: String,
    },
}

/// Receives [`AgentEvent`]s.
pub trait Observer: Send + Sync + std::fmt::Debug {
    /// One event.
    fn event(&self, e: &AgentEvent);
}

/// Keeps every event; clones share the list.
#[derive(Debug, Clone, Default)]
pub struct Recorder(pub Arc<Mutex<Vec<AgentEvent>>>);

impl Recorder {
    /// The events so far.
    pub fn events(&self) -> Vec<AgentEvent> {
        self.0.lock().map(|v| v.clone()).unwrap_or_default()
    }
}

impl Observer for Recorder {
    fn event(&self, e: &AgentEvent) {
        if let Ok(mut v) = self.0.lock() {
            v.push(e.clone());
        }
    }
}

/// Everything an agent host needs.
#[derive(Debug)]
pub struct Setup<D: Dial + Clone> {
    /// How to reach the node.
    pub dial: D,
    /// The node's base URL.
    pub url: String,
    /// Trust for an `https` node.
    pub trust: Option<Trust>,
    /// The agent (address and key; its type is set to `agent` here).
    pub identity: Identity,
    /// Its delegation chain (`[link, …]`, §13.1).
    pub chain: Value,
    /// The process packages it holds.
    pub packages: Arc<Packages>,
    /// The PLSP engine, when it runs PLSP programs.
    pub plsp: Option<Arc<dyn StateEngine>>,
    /// How results are written.
    pub encoding: Encoding,
    /// Where runs get their workspaces.
    pub workdir: PathBuf,
    /// The longest wait between feed reads.
    pub poll: Duration,
    /// Seed of envelope ids and runs.
    pub seed: u64,
    /// `created_at` of envelopes, and the PLSP trace.
    pub clock: Arc<dyn Clock>,
    /// What survives a restart.
    pub journal: Arc<dyn JournalStore>,
    /// The decisions' rules ([`crate::core::SpecRules`] for a real agent).
    pub rules: Box<dyn Rules>,
    /// Who hears about it.
    pub observer: Arc<dyn Observer>,
    /// Stop once this many tasks were answered for good (terminal, or held); `None`: run
    /// until stopped.
    pub exit_after: Option<usize>,
}

/// Why a post did not land.
#[derive(Debug)]
enum PostError {
    /// The node refused it (a 4xx other than 401, 408 and 429): sending again changes nothing.
    Refused(String),
    /// The node could not be reached or answered 5xx / 401 / 408 / 429: try again later.
    Transient(String),
}

fn describe(e: &ClientError) -> String {
    match (e.status(), e.code()) {
        (Some(s), Some(c)) => format!("{s} {c}: {e}"),
        (Some(s), None) => format!("{s}: {e}"),
        _ => e.to_string(),
    }
}

fn classify(e: ClientError) -> PostError {
    match e.status() {
        Some(s) if (400..500).contains(&s) && ![401, 408, 429].contains(&s) => {
            PostError::Refused(describe(&e))
        }
        _ => PostError::Transient(describe(&e)),
    }
}

/// Signs and posts the agent's envelopes; shared by the main loop and a PLSP run's actions.
#[derive(Debug)]
struct Poster<D: Dial> {
    client: tokio::sync::Mutex<Client<D>>,
    identity: Identity,
    chain: Value,
    scopes: Vec<String>,
    factory: Mutex<EnvelopeFactory<Arc<dyn Clock>>>,
    observer: Arc<dyn Observer>,
}

/// Attempts of one post before it is reported transient (about a minute with the back-off).
const POST_ATTEMPTS: u32 = 8;

impl<D: Dial> Poster<D> {
    /// Finishes `env` as an agent envelope and signs it — or refuses, when its action is
    /// beyond the delegation (the node would refuse it: §13.3 step 6).
    fn sign(&self, mut env: Value) -> Result<Value, String> {
        let action = loom_protocol::delegation::envelope_action(&env);
        if !scope::allows(&self.scopes, &action) {
            return Err(format!(
                "not sent: {action} is beyond the agent's delegation ({}; v1.1 §13.3 step 6)",
                self.scopes.join(", ")
            ));
        }
        env["from"]["type"] = "agent".into();
        env["from"]["delegation_chain"] = self.chain.clone();
        self.identity.sign(&mut env).map_err(|e| e.to_string())?;
        Ok(env)
    }

    /// An envelope skeleton in `thread` to `to`, from the agent.
    fn envelope(&self, thread: &str, parent: Option<&str>, to: &str, kind: &str) -> Value {
        let mut f = self.factory.lock().unwrap_or_else(|p| p.into_inner());
        json!({
            "loom": "1.1",
            "id": f.envelope_id(),
            "thread_id": thread,
            "parent_id": parent,
            "type": kind,
            "from": self.identity.from_object(),
            "to": [{"identity": to, "role": "primary"}],
            "created_at": f.now().to_rfc3339(),
            "priority": "normal",
            "attachments": [],
        })
    }

    /// Posts `env` until the node answers for good; the same bytes and `Idempotency-Key` on
    /// every try.
    async fn post(&self, env: &Value) -> Result<String, PostError> {
        let id = env["id"].as_str().unwrap_or_default().to_owned();
        let mut last = String::new();
        for attempt in 0..POST_ATTEMPTS {
            if attempt > 0 {
                let ms = (250u64 << attempt.min(5)).min(8000);
                tokio::time::sleep(Duration::from_millis(ms)).await;
            }
            let sent = self
                .client
                .lock()
                .await
                .send_envelope_idempotent(env, &id)
                .await;
            match sent.map_err(classify) {
                Ok(_) => return Ok(id),
                Err(PostError::Refused(e)) => return Err(PostError::Refused(e)),
                Err(PostError::Transient(e)) => last = e,
            }
        }
        Err(PostError::Transient(last))
    }

    async fn get(&self, path: &str) -> Result<Value, ClientError> {
        Ok(self
            .client
            .lock()
            .await
            .expect("GET", path, None, 200)
            .await?
            .body)
    }
}

/// The LOOM side of one PLSP run: its thread, its creator.
#[derive(Debug)]
struct TaskOps<D: Dial> {
    poster: Arc<Poster<D>>,
    task_id: String,
    thread_id: String,
    creator: String,
    encoding: Encoding,
}

impl<D: Dial + Clone> LoomOps for TaskOps<D> {
    fn send(&self, text: String, data: Option<Value>) -> BoxFuture<Result<String, String>> {
        let poster = self.poster.clone();
        let (task, thread, creator, encoding) = (
            self.task_id.clone(),
            self.thread_id.clone(),
            self.creator.clone(),
            self.encoding,
        );
        Box::pin(async move {
            let mut env = poster.envelope(&thread, None, &creator, "message");
            let params = json!({"task_id": task, "data": data});
            let text = match (&data, encoding) {
                (Some(d), Encoding::LoomNotation) => match crate::encoding::texts(d).1 {
                    Some(n) => format!("{text}\n\n{n}"),
                    None => text,
                },
                _ => text,
            };
            env["content"] = json!({
                "human": {"text": text, "format": "plaintext"},
                "structured": {"intent": scope::MESSAGE_INTENT, "parameters": params},
                "encrypted": false,
            });
            let env = poster.sign(env)?;
            match poster.post(&env).await {
                Ok(id) => {
                    let mut cost = Cost::default();
                    cost.add(&params);
                    poster.observer.event(&AgentEvent::Message {
                        task_id: task,
                        envelope_id: id.clone(),
                        cost,
                    });
                    Ok(id)
                }
                Err(PostError::Refused(e) | PostError::Transient(e)) => Err(e),
            }
        })
    }

    fn read(&self) -> BoxFuture<Result<Option<String>, String>> {
        let poster = self.poster.clone();
        let path = format!(
            "/v1/threads/{}/envelopes",
            loom_client::api::encode_component(&self.thread_id)
        );
        Box::pin(async move {
            let me = poster.identity.address().to_owned();
            let body = poster.get(&path).await.map_err(|e| describe(&e))?;
            let list = body
                .get("envelopes")
                .or(body.get("items"))
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            Ok(list
                .iter()
                .rev()
                .filter(|e| e.pointer("/from/identity").and_then(Value::as_str) != Some(&me))
                .find_map(|e| e.pointer("/content/human/text").and_then(Value::as_str))
                .map(str::to_owned))
        })
    }
}

/// One agent on one node.
#[derive(Debug)]
pub struct Host<D: Dial + Clone> {
    setup: Setup<D>,
    poster: Arc<Poster<D>>,
    core: AgentCore,
    journal: Journal,
    /// Signed updates waiting for an answer, by (task, state): a retry sends the same bytes.
    unsent: BTreeMap<(String, TaskState), Value>,
    /// Tasks answered for good (terminal or held), for `exit_after`.
    answered: usize,
}

impl<D: Dial + Clone> Host<D> {
    /// Builds the host; the chain's leaf scope is what it may do.
    pub fn new(mut setup: Setup<D>) -> Result<Host<D>, String> {
        let scopes = crate::enroll::leaf_scope(&setup.chain)?;
        let identity = setup.identity.clone().with_type("agent");
        setup.identity = identity.clone();
        let journal = setup.journal.load()?;
        let client = Client::new(&setup.url, setup.dial.clone())
            .map_err(|e| e.to_string())?
            .with_timeout(Duration::from_secs(30));
        let client = match &setup.trust {
            Some(t) => client.with_trust(t).map_err(|e| e.to_string())?,
            None => client,
        };
        let mut packages: Vec<String> = setup.packages.names();
        packages.sort();
        let rules = std::mem::replace(&mut setup.rules, Box::new(crate::core::SpecRules));
        let core = AgentCore::new(
            identity.address(),
            scopes.clone(),
            packages.into_iter().collect(),
        )
        .with_rules(rules);
        let poster = Arc::new(Poster {
            client: tokio::sync::Mutex::new(client),
            identity,
            chain: setup.chain.clone(),
            scopes,
            factory: Mutex::new(EnvelopeFactory::new(setup.clock.clone(), setup.seed)),
            observer: setup.observer.clone(),
        });
        Ok(Host {
            setup,
            poster,
            core,
            journal,
            unsent: BTreeMap::new(),
            answered: 0,
        })
    }

    fn note(&self, e: AgentEvent) {
        self.setup.observer.event(&e);
    }

    fn log(&self, line: String) {
        self.note(AgentEvent::Log { line });
    }

    async fn login(&self) -> Result<String, ClientError> {
        let mut c = self.poster.client.lock().await;
        c.set_token(None);
        let s = self.poster.identity.login(&mut c).await?;
        c.set_token(Some(s.access_token.clone()));
        Ok(s.access_token)
    }

    /// Runs until `stop` resolves (or `exit_after` tasks were answered).
    pub async fn run(mut self, stop: impl std::future::Future<Output = ()>) -> Result<(), String> {
        tokio::pin!(stop);
        tokio::select! {
            r = self.work() => r,
            () = &mut stop => Ok(()),
        }
    }

    async fn work(&mut self) -> Result<(), String> {
        let mut token = self.login_until_ok().await;
        let mut cursor: Option<String> = None;
        let mut stream: Option<ws::WsClient> = None;
        loop {
            let mut progressed = false;
            match self.read_feed(&mut cursor).await {
                Ok(n) => progressed |= n > 0,
                Err(e) if e.status() == Some(401) => {
                    token = self.login_until_ok().await;
                    stream = None;
                    continue;
                }
                Err(e) => self.log(format!("reading the event feed: {}", describe(&e))),
            }
            for out in self.core.poll(&self.journal) {
                progressed = true;
                self.carry_out(out).await?;
            }
            if let Some(n) = self.setup.exit_after
                && self.answered >= n
            {
                return Ok(());
            }
            if progressed {
                continue;
            }
            // Idle: wait for the stream to say something happened, or the poll interval.
            if stream.is_none() {
                stream = self.subscribe(&token).await;
            }
            match &mut stream {
                Some(s) => {
                    if let Some(Frame::Closed(_)) = s.next(self.setup.poll).await {
                        stream = None;
                    }
                }
                None => tokio::time::sleep(self.setup.poll).await,
            }
        }
    }

    async fn login_until_ok(&self) -> String {
        let mut wait = 250u64;
        loop {
            match self.login().await {
                Ok(t) => {
                    self.note(AgentEvent::LoggedIn {
                        node: self.setup.url.clone(),
                    });
                    return t;
                }
                Err(e) => {
                    self.log(format!("login: {}", describe(&e)));
                    tokio::time::sleep(Duration::from_millis(wait)).await;
                    wait = (wait * 2).min(8000);
                }
            }
        }
    }

    async fn subscribe(&self, token: &str) -> Option<ws::WsClient> {
        let mut s = ws::connect(
            &self.setup.dial,
            &self.setup.url,
            self.setup.trust.as_ref(),
            "/ws",
            token,
            TokenIn::Query,
            Duration::from_secs(10),
        )
        .await
        .ok()?;
        s.send(&json!({"action": "subscribe", "channels": [{"type": "all_threads"}]}))
            .await
            .ok()?;
        Some(s)
    }

    /// Reads the feed from `cursor` to its end; answers how many envelopes were read.
    async fn read_feed(&mut self, cursor: &mut Option<String>) -> Result<usize, ClientError> {
        let mut read = 0;
        loop {
            let path = match cursor {
                Some(c) => format!("/v1/events?limit=100&cursor={c}"),
                None => "/v1/events?limit=100".to_owned(),
            };
            let page = self.poster.get(&path).await?;
            let events = page["events"].as_array().cloned().unwrap_or_default();
            for e in &events {
                if e["type"] != "envelope.new" {
                    continue;
                }
                let Some(id) = e["envelope_id"].as_str() else {
                    continue;
                };
                let env = self
                    .poster
                    .get(&format!(
                        "/v1/envelopes/{}",
                        loom_client::api::encode_component(id)
                    ))
                    .await?;
                let seen = work::read(&env);
                let quarantined = match &seen {
                    Seen::Created(c) if c.assignee.as_deref() == Some(self.core.me()) => {
                        self.quarantined(&c.thread_id).await?
                    }
                    _ => false,
                };
                self.core.handle(Input::Seen { seen, quarantined });
                read += 1;
            }
            if let Some(next) = page["next_cursor"].as_str() {
                *cursor = Some(next.to_owned());
            }
            if page["has_more"] != true || events.is_empty() {
                return Ok(read);
            }
        }
    }

    /// Does the thread carry `sys.quarantine` (§18.5)?
    async fn quarantined(&self, thread: &str) -> Result<bool, ClientError> {
        let t = self
            .poster
            .get(&format!(
                "/v1/threads/{}",
                loom_client::api::encode_component(thread)
            ))
            .await?;
        Ok(t["labels"].as_array().is_some_and(|l| {
            l.iter()
                .any(|x| x == loom_protocol::workflow::QUARANTINE_LABEL)
        }))
    }

    async fn carry_out(&mut self, out: Output) -> Result<(), String> {
        match out {
            Output::Log(line) => {
                self.answered += 1;
                self.log(line);
            }
            Output::Post(u) => self.post_update(u).await,
            Output::Run {
                task_id,
                thread_id,
                creator,
                work,
                attempt,
            } => {
                self.journal
                    .tasks
                    .entry(task_id.clone())
                    .or_default()
                    .attempts = attempt;
                self.setup.journal.save(&self.journal)?;
                self.note(AgentEvent::RunStarted {
                    task_id: task_id.clone(),
                    attempt,
                    work: work.label(),
                });
                let report = self
                    .run_work(&task_id, &thread_id, &creator, &work, attempt)
                    .await;
                let rec = self.journal.tasks.entry(task_id.clone()).or_default();
                if report.outcome.ok {
                    rec.completed_runs += 1;
                }
                rec.outcome = Some(report.outcome.clone());
                self.setup.journal.save(&self.journal)?;
                self.note(AgentEvent::RunFinished {
                    task_id: task_id.clone(),
                    attempt,
                    ok: report.outcome.ok,
                    summary: report.outcome.summary.clone(),
                    runner_log: report.events,
                });
                self.core.handle(Input::Finished { task_id });
            }
        }
        Ok(())
    }

    async fn run_work(
        &self,
        task_id: &str,
        thread_id: &str,
        creator: &str,
        work: &Work,
        attempt: u32,
    ) -> RunReport {
        match work {
            Work::Process { package, goal } => {
                let ws = self
                    .setup
                    .workdir
                    .join(task_id)
                    .join(format!("attempt-{attempt}"));
                self.setup
                    .packages
                    .run(package, goal, &ws, self.setup.seed ^ u64::from(attempt))
            }
            Work::Plsp(program) => {
                let Some(engine) = &self.setup.plsp else {
                    // The core declines PLSP work without the plsp.run scope; an agent
                    // configured without an engine fails it here, saying why.
                    return RunReport {
                        outcome: crate::journal::WorkOutcome {
                            ok: false,
                            summary: "failed: this agent has no PLSP engine configured ([plsp] in agent.toml)".into(),
                            result: json!({"error": "no PLSP engine"}),
                        },
                        events: String::new(),
                    };
                };
                let ops = Arc::new(TaskOps {
                    poster: self.poster.clone(),
                    task_id: task_id.to_owned(),
                    thread_id: thread_id.to_owned(),
                    creator: creator.to_owned(),
                    encoding: self.setup.encoding,
                });
                crate::run::run_plsp(
                    program,
                    engine.clone(),
                    ops,
                    &self.poster.scopes,
                    self.setup.clock.clone(),
                )
                .await
            }
        }
    }

    /// The update envelope of `u`, in the configured encoding.
    fn update_envelope(&self, u: &Update) -> Value {
        let mut params = json!({"task_id": u.task_id, "state": u.state.as_str()});
        if matches!(u.state, TaskState::Declined | TaskState::Failed) {
            params["reason"] = u.reason.clone().into();
        }
        let mut text = u.reason.clone();
        if let Some(r) = &u.result {
            match (self.setup.encoding, crate::encoding::texts(r).1) {
                (Encoding::LoomNotation, Some(n)) => {
                    params["result_encoding"] = NOTATION_EXTENSION.into();
                    text = format!("{text}\n\n{n}");
                }
                _ => params["result"] = r.clone(),
            }
        }
        let mut env = self
            .poster
            .envelope(&u.thread_id, Some(&u.parent_id), &u.to, "task");
        env["content"] = json!({
            "human": {"text": text, "format": "plaintext"},
            "structured": {"intent": "task.state_update@v1", "parameters": params},
            "encrypted": false,
        });
        env
    }

    async fn post_update(&mut self, u: Update) {
        let key = (u.task_id.clone(), u.state);
        let env = match self.unsent.get(&key) {
            Some(e) => Ok(e.clone()),
            None => self.poster.sign(self.update_envelope(&u)),
        };
        let env = match env {
            Ok(e) => e,
            Err(why) => {
                self.log(format!("task {}: {why}", u.task_id));
                self.core.handle(Input::Refused {
                    task_id: u.task_id,
                    error: why,
                });
                return;
            }
        };
        self.unsent.insert(key.clone(), env.clone());
        match self.poster.post(&env).await {
            Ok(id) => {
                self.unsent.remove(&key);
                if u.state.is_terminal() {
                    self.answered += 1;
                }
                // The update's parameters with the result in them, as JSON and as notation,
                // whichever form was sent.
                let mut full = env["content"]["structured"]["parameters"].clone();
                if let Some(r) = &u.result {
                    full["result"] = r.clone();
                }
                let mut cost = Cost::default();
                cost.add(&full);
                self.note(AgentEvent::Posted {
                    task_id: u.task_id.clone(),
                    state: u.state.as_str().into(),
                    envelope_id: id.clone(),
                    action: loom_protocol::delegation::envelope_action(&env),
                    cost,
                });
                self.core.handle(Input::Posted {
                    task_id: u.task_id,
                    state: u.state,
                    envelope_id: id,
                });
            }
            Err(PostError::Refused(error)) => {
                self.unsent.remove(&key);
                self.note(AgentEvent::Refused {
                    task_id: u.task_id.clone(),
                    state: u.state.as_str().into(),
                    error: error.clone(),
                });
                self.core.handle(Input::Refused {
                    task_id: u.task_id,
                    error,
                });
            }
            Err(PostError::Transient(e)) => {
                self.log(format!(
                    "task {}: {} not yet posted: {e}",
                    u.task_id,
                    u.state.as_str()
                ));
                self.core.handle(Input::Unsent { task_id: u.task_id });
            }
        }
    }
}
