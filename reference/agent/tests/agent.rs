//! An agent against a real reference node on loopback: Alice (human) gives tasks to her
//! agent `bot.alice`, enrolled with a delegation scoped to exactly its work. Each test reads
//! the thread as Alice sees it and what the agent reported.

use loom_agent::core::SpecRules;
use loom_agent::encoding::Encoding;
use loom_agent::enroll::{Enrolment, enroll};
use loom_agent::host::{AgentEvent, Host, Recorder, Setup};
use loom_agent::journal::{JournalStore, MemoryJournal, TaskRecord};
use loom_agent::run::{PackageSpec, Packages};
use loom_client::{Client, EnvelopeFactory, Identity, MessageDraft, TokioDial};
use loom_node::config::RateLimits;
use loom_node::{Env, Node, NodeConfig};
use loom_protocol::clock::SystemClock;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

const ALICE: &str = "loom://alice@a.test";
const BOT: &str = "loom://bot.alice@a.test";

struct World {
    url: String,
    alice: Identity,
    client: Client<TokioDial>,
    factory: EnvelopeFactory<SystemClock>,
    bot: Identity,
    chain: Value,
    _stop: tokio::sync::oneshot::Sender<()>,
}

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../process/examples")
}

/// A node for a.test on a free port, Alice registered and logged in, her agent enrolled
/// with the scopes for `packages` (and PLSP when `plsp`).
async fn world(packages: &[&str], plsp: bool) -> World {
    let mut config = NodeConfig {
        domain: "a.test".into(),
        ..NodeConfig::default()
    };
    config.rate_limits = RateLimits::unlimited();
    let node = Node::builder(config, Env::new(Arc::new(SystemClock), 7))
        .build()
        .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(async move {
        let _ = node
            .serve(listener, None, async {
                let _ = stopped.await;
            })
            .await;
    });
    let alice = Identity::from_seed(ALICE, &[1; 32]).unwrap();
    let mut client = Client::tcp(&url).unwrap();
    alice.register(&mut client).await.unwrap();
    let s = alice.login(&mut client).await.unwrap();
    client.set_token(Some(s.access_token));
    let bot = Identity::from_seed(BOT, &[2; 32]).unwrap();
    let names: Vec<String> = packages.iter().map(|p| (*p).to_owned()).collect();
    let scope = loom_agent::scope::needed_for(&names, plsp);
    let mut bot_client = Client::tcp(&url).unwrap();
    let chain = enroll(
        &Enrolment {
            human: &alice,
            agent: &bot,
            scope: &scope,
            created_at: &loom_protocol::clock::Clock::now(&SystemClock).to_rfc3339(),
            expires_at: "2099-01-01T00:00:00Z",
        },
        &mut client,
        &mut bot_client,
    )
    .await
    .unwrap();
    World {
        url,
        alice,
        client,
        factory: EnvelopeFactory::new(SystemClock, 11),
        bot,
        chain,
        _stop: stop,
    }
}

fn market_sizing() -> PackageSpec {
    PackageSpec {
        path: examples().join("market-sizing"),
        model: "scripted:scripts/smoke.yaml".into(),
        bundled_tools: false,
    }
}

/// Starts the agent; it stops after `exit_after` tasks were answered.
fn agent(
    w: &World,
    packages: Vec<PackageSpec>,
    plsp: bool,
    journal: Arc<dyn JournalStore>,
    encoding: Encoding,
    workdir: &Path,
    exit_after: usize,
) -> (tokio::task::JoinHandle<Result<(), String>>, Recorder) {
    let rec = Recorder::default();
    let host = Host::new(Setup {
        dial: TokioDial,
        url: w.url.clone(),
        trust: None,
        identity: w.bot.clone(),
        chain: w.chain.clone(),
        packages: Arc::new(Packages::load(&packages).unwrap()),
        plsp: plsp.then(|| {
            Arc::new(loom_plsp::engine::reference::ReferenceEngine)
                as Arc<dyn loom_plsp::engine::StateEngine>
        }),
        encoding,
        workdir: workdir.to_owned(),
        poll: Duration::from_millis(100),
        seed: 5,
        clock: Arc::new(SystemClock),
        journal,
        rules: Box::new(SpecRules),
        observer: Arc::new(rec.clone()),
        exit_after: Some(exit_after),
    })
    .unwrap();
    (tokio::spawn(host.run(std::future::pending::<()>())), rec)
}

/// Alice creates a task for the bot with `work` and assigns it; (task id, thread id).
async fn give(w: &mut World, work: Value) -> (String, String) {
    let draft = MessageDraft {
        to: vec![BOT.into()],
        text: "a task".into(),
        ..MessageDraft::default()
    };
    let create = w
        .factory
        .task(
            &w.alice,
            &draft,
            "task.create@v1",
            json!({"title": "t", "assignee": BOT, "work": work}),
        )
        .unwrap();
    w.client.send_envelope(&create).await.unwrap();
    let (task, thread) = (
        create["id"].as_str().unwrap().to_owned(),
        create["thread_id"].as_str().unwrap().to_owned(),
    );
    let assign = w
        .factory
        .task(
            &w.alice,
            &MessageDraft {
                thread_id: Some(thread.clone()),
                parent_id: Some(task.clone()),
                to: vec![BOT.into()],
                text: "yours".into(),
            },
            "task.state_update@v1",
            json!({"task_id": task, "state": "assigned"}),
        )
        .unwrap();
    w.client.send_envelope(&assign).await.unwrap();
    (task, thread)
}

/// The thread as Alice reads it.
async fn thread(w: &mut World, id: &str) -> Vec<Value> {
    w.client.thread_envelopes(id).await.unwrap().body["envelopes"]
        .as_array()
        .unwrap()
        .clone()
}

fn states(envs: &[Value], task: &str) -> Vec<String> {
    envs.iter()
        .filter(|e| e.pointer("/content/structured/parameters/task_id") == Some(&json!(task)))
        .filter_map(|e| e.pointer("/content/structured/parameters/state")?.as_str())
        .map(str::to_owned)
        .collect()
}

async fn finished(h: tokio::task::JoinHandle<Result<(), String>>) {
    tokio::time::timeout(Duration::from_secs(120), h)
        .await
        .expect("the agent answered in time")
        .unwrap()
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_process_task_is_run_and_reported_under_the_delegation() {
    let mut w = world(&["market-sizing"], false).await;
    let dir = tempfile::tempdir().unwrap();
    let journal = MemoryJournal::default();
    let (h, rec) = agent(
        &w,
        vec![market_sizing()],
        false,
        Arc::new(journal.clone()),
        Encoding::Json,
        dir.path(),
        1,
    );
    let (task, t) = give(
        &mut w,
        json!({"kind": "process", "package": "market-sizing", "goal": "Size the European market for B2B expense software"}),
    )
    .await;
    finished(h).await;
    let envs = thread(&mut w, &t).await;
    assert_eq!(
        states(&envs, &task),
        ["assigned", "accepted", "in_progress", "completed"]
    );
    for e in envs.iter().filter(|e| e["from"]["identity"] == BOT) {
        assert_eq!(e["from"]["type"], "agent", "§18.2: {e}");
        assert_eq!(e["from"]["delegation_chain"], w.chain, "§13.5: {e}");
        assert_eq!(e["to"][0]["identity"], ALICE);
    }
    let done = envs.last().unwrap();
    let result = &done["content"]["structured"]["parameters"]["result"];
    assert_eq!(result["package"], "market-sizing", "{done}");
    assert_eq!(result["status"], "completed");
    assert_eq!(
        result["deliverables"],
        json!(["bottom-up.md", "sizing-brief.md", "top-down.md"])
    );
    assert!(!result["evidence"].as_array().unwrap().is_empty());
    let j = journal.load().unwrap();
    assert_eq!(j.tasks[&task].attempts, 1);
    assert_eq!(j.tasks[&task].completed_runs, 1);
    let ran = rec
        .events()
        .into_iter()
        .find_map(|e| match e {
            AgentEvent::RunFinished { runner_log, .. } => Some(runner_log),
            _ => None,
        })
        .unwrap();
    assert!(
        ran.lines().count() > 10,
        "the runner's own event log: {ran}"
    );
    assert!(
        dir.path()
            .join(&task)
            .join("attempt-1/sizing-brief.md")
            .is_file()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn work_beyond_the_delegation_or_unreadable_is_declined_with_the_reason() {
    let mut w = world(&["market-sizing"], false).await;
    let dir = tempfile::tempdir().unwrap();
    let (h, _) = agent(
        &w,
        vec![market_sizing()],
        false,
        Arc::new(MemoryJournal::default()),
        Encoding::Json,
        dir.path(),
        3,
    );
    let plsp = give(
        &mut w,
        json!({"kind": "plsp", "program": {"name": "p", "instructions": ["INSTR: @set:$a=1"]}}),
    )
    .await;
    let code_fix = give(
        &mut w,
        json!({"kind": "process", "package": "code-fix", "goal": "fix"}),
    )
    .await;
    let bad = give(
        &mut w,
        json!({"kind": "process", "package": "market-sizing"}),
    )
    .await;
    finished(h).await;
    for ((task, t), want) in [
        (plsp, "\"plsp.run\""),
        (code_fix, "\"process.run.code-fix\""),
        (bad, "content.structured.parameters.work.goal"),
    ] {
        let envs = thread(&mut w, &t).await;
        assert_eq!(states(&envs, &task), ["assigned", "declined"]);
        let reason = envs.last().unwrap()["content"]["structured"]["parameters"]["reason"]
            .as_str()
            .unwrap()
            .to_owned();
        assert!(reason.contains(want), "{reason} should name {want}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plsp_program_sends_reads_and_posts_its_data_in_the_thread() {
    let mut w = world(&[], true).await;
    let dir = tempfile::tempdir().unwrap();
    let (h, rec) = agent(
        &w,
        vec![],
        true,
        Arc::new(MemoryJournal::default()),
        Encoding::LoomNotation,
        dir.path(),
        1,
    );
    let program = json!({
        "name": "temperature",
        "instructions": [
            "INSTR: @fetch:temp,$t;@set:$m=\"reading taken\";@log:\"temp\",$t;@sig:!send,$m;@sig:!read"
        ],
        "inputs": {"temp": [70, 95]},
        "config": {"max_cycles": 2}
    });
    let (task, t) = give(&mut w, json!({"kind": "plsp", "program": program})).await;
    finished(h).await;
    let envs = thread(&mut w, &t).await;
    assert_eq!(
        states(&envs, &task),
        ["assigned", "accepted", "in_progress", "completed"]
    );
    let texts: Vec<&str> = envs
        .iter()
        .filter(|e| e["from"]["identity"] == BOT && e["type"] == "message")
        .filter_map(|e| e["content"]["human"]["text"].as_str())
        .collect();
    assert_eq!(
        texts.iter().filter(|t| **t == "reading taken").count(),
        2,
        "one !send per cycle: {texts:?}"
    );
    assert_eq!(
        texts.iter().filter(|t| t.starts_with("> ")).count(),
        2,
        "one > data line per cycle: {texts:?}"
    );
    // Loom notation: the result is the human text, declared by result_encoding.
    let done = envs.last().unwrap();
    assert_eq!(
        done["content"]["structured"]["parameters"]["result_encoding"],
        "loom-ext-notation-v1"
    );
    assert!(
        done["content"]["human"]["text"]
            .as_str()
            .unwrap()
            .contains("cycles: 2"),
        "{done}"
    );
    let costs: Vec<_> = rec
        .events()
        .into_iter()
        .filter_map(|e| match e {
            AgentEvent::Posted { cost, .. } | AgentEvent::Message { cost, .. } => Some(cost),
            _ => None,
        })
        .collect();
    assert_eq!(costs.len(), 7, "3 updates and 4 messages");
    assert!(costs.iter().all(|c| c.json[0] > 0 && c.notation[0] > 0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_restarted_mid_task_runs_it_again_once() {
    let mut w = world(&["market-sizing"], false).await;
    let (task, t) = give(
        &mut w,
        json!({"kind": "process", "package": "market-sizing", "goal": "Size the European market for B2B expense software"}),
    )
    .await;
    // The agent had accepted and started the task, and its run was cut short: its
    // journal says one run started, none ended.
    let mut bot_client = Client::tcp(&w.url).unwrap();
    let s = w
        .bot
        .clone()
        .with_type("agent")
        .login(&mut bot_client)
        .await
        .unwrap();
    bot_client.set_token(Some(s.access_token));
    let bot = w.bot.clone().with_type("agent");
    let mut parent = task.clone();
    for state in ["accepted", "in_progress"] {
        let mut e = w
            .factory
            .task(
                &bot,
                &MessageDraft {
                    thread_id: Some(t.clone()),
                    parent_id: Some(parent.clone()),
                    to: vec![ALICE.into()],
                    text: state.into(),
                },
                "task.state_update@v1",
                json!({"task_id": task, "state": state}),
            )
            .unwrap();
        e["from"]["delegation_chain"] = w.chain.clone();
        bot.sign(&mut e).unwrap();
        bot_client.send_envelope(&e).await.unwrap();
        parent = e["id"].as_str().unwrap().to_owned();
    }
    let journal = MemoryJournal::default();
    let mut before = loom_agent::journal::Journal::default();
    before.tasks.insert(
        task.clone(),
        TaskRecord {
            attempts: 1,
            ..TaskRecord::default()
        },
    );
    journal.save(&before).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (h, _) = agent(
        &w,
        vec![market_sizing()],
        false,
        Arc::new(journal.clone()),
        Encoding::Json,
        dir.path(),
        1,
    );
    finished(h).await;
    let envs = thread(&mut w, &t).await;
    assert_eq!(
        states(&envs, &task),
        ["assigned", "accepted", "in_progress", "completed"]
    );
    let j = journal.load().unwrap();
    assert_eq!(
        (j.tasks[&task].attempts, j.tasks[&task].completed_runs),
        (2, 1)
    );
    assert!(
        dir.path()
            .join(&task)
            .join("attempt-2/sizing-brief.md")
            .is_file()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_that_fails_is_reported_failed_with_its_first_cause() {
    let mut w = world(&["market-sizing"], false).await;
    let dir = tempfile::tempdir().unwrap();
    let (h, _) = agent(
        &w,
        vec![PackageSpec {
            path: examples().join("market-sizing"),
            model: "scripted:scripts/unsupported-synthesis.yaml".into(),
            bundled_tools: false,
        }],
        false,
        Arc::new(MemoryJournal::default()),
        Encoding::Json,
        dir.path(),
        1,
    );
    let (task, t) = give(
        &mut w,
        json!({"kind": "process", "package": "market-sizing", "goal": "Size the market when the brief adds figures nobody checked"}),
    )
    .await;
    finished(h).await;
    let envs = thread(&mut w, &t).await;
    assert_eq!(
        states(&envs, &task),
        ["assigned", "accepted", "in_progress", "failed"]
    );
    let params = &envs.last().unwrap()["content"]["structured"]["parameters"];
    let reason = params["reason"].as_str().unwrap();
    assert!(
        reason.contains("sizing-brief#1 validity:final_gate fail"),
        "the first cause leads: {reason}"
    );
    // The run ended partial (a phase failed): the task is failed, the result says how.
    assert_eq!(params["result"]["status"], "partial", "{params}");
}
