//! `loom-agent`: enrol an agent under a human's delegation, then run it.
//!
//! Exit codes: 0 ok; 1 the node refused (enrol); 2 usage, config or local input; 3 the node
//! was unreachable.

use clap::{Parser, Subcommand};
use loom_agent::config::AgentConfig;
use loom_agent::enroll::{Enrolment, enroll, leaf_scope};
use loom_agent::host::{AgentEvent, Host, Observer, Setup};
use loom_agent::journal::FileJournal;
use loom_agent::run::Packages;
use loom_client::{Client, Identity, TokioDial, Trust};
use loom_protocol::clock::{Clock, SystemClock};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::Duration;

#[derive(Parser, Debug)]
#[command(
    name = "loom-agent",
    version,
    about = "A LOOM agent: takes tasks from its threads and runs them (process packages, PLSP programs) under a human's delegation."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Register the agent (type agent, v1.1 §6.4) and its delegation link (§13.1, §16.5),
    /// scoped to exactly the work in the config; writes the chain file.
    Enroll {
        /// The agent's config (agent.toml).
        #[arg(long, value_name = "FILE")]
        config: PathBuf,
        /// The delegating human's session file (`loom login --session FILE`).
        #[arg(long, value_name = "FILE")]
        session: PathBuf,
        /// The human's key file (signs the delegation).
        #[arg(long, value_name = "FILE")]
        key: PathBuf,
        /// When the delegation ends (RFC 3339).
        #[arg(long, value_name = "TIME", default_value = "2027-12-31T00:00:00Z")]
        expires: String,
    },
    /// Run the agent until stopped (Ctrl-C) or until --exit-after tasks were answered.
    Run {
        /// The agent's config (agent.toml).
        #[arg(long, value_name = "FILE")]
        config: PathBuf,
        /// Stop after this many tasks were answered for good.
        #[arg(long, value_name = "N")]
        exit_after: Option<usize>,
        /// Print events as JSON lines.
        #[arg(long)]
        json: bool,
    },
}

struct Failure(u8, String);

fn input(msg: impl Into<String>) -> Failure {
    Failure(2, msg.into())
}

fn client_failure(e: &loom_client::ClientError) -> Failure {
    match e.status() {
        Some(_) => Failure(1, e.to_string()),
        None if matches!(e, loom_client::ClientError::Input(_)) => Failure(2, e.to_string()),
        None => Failure(3, e.to_string()),
    }
}

fn read_identity(address: &str, key: &Path) -> Result<Identity, Failure> {
    let text = std::fs::read_to_string(key)
        .map_err(|e| input(format!("cannot read key file {}: {e}", key.display())))?;
    let seed = loom_client::identity::parse_key_file(&text)
        .map_err(|e| input(format!("{}: {e}", key.display())))?;
    Identity::from_seed(address, &seed).map_err(|e| input(e.to_string()))
}

fn node_client(c: &AgentConfig) -> Result<Client<TokioDial>, Failure> {
    let client = Client::tcp(&c.node).map_err(|e| input(format!("node {}: {e}", c.node)))?;
    match &c.ca_cert {
        Some(ca) => client
            .with_trust(&Trust::pem_file(ca).map_err(|e| input(e.to_string()))?)
            .map_err(|e| input(e.to_string())),
        None => Ok(client),
    }
}

fn scopes_of(c: &AgentConfig, packages: &Packages) -> Vec<String> {
    loom_agent::scope::needed_for(&packages.names(), c.plsp.is_some())
}

async fn do_enroll(
    config: &Path,
    session: &Path,
    key: &Path,
    expires: &str,
) -> Result<(), Failure> {
    let c = AgentConfig::load(config).map_err(input)?;
    let packages = Packages::load(&c.packages).map_err(input)?;
    let text = std::fs::read_to_string(session).map_err(|e| {
        input(format!(
            "cannot read session file {}: {e}",
            session.display()
        ))
    })?;
    let s: Value =
        serde_json::from_str(&text).map_err(|e| input(format!("{}: {e}", session.display())))?;
    let field = |k: &str| {
        s[k].as_str()
            .map(str::to_owned)
            .ok_or_else(|| input(format!("{}: no {k:?}", session.display())))
    };
    let human = read_identity(&field("identity")?, key)?;
    let agent = read_identity(&c.identity, &c.key)?;
    let scope = scopes_of(&c, &packages);
    let mut hc = node_client(&c)?;
    hc.set_token(Some(field("access_token")?));
    let mut ac = node_client(&c)?;
    let now = SystemClock.now().to_rfc3339();
    let chain = enroll(
        &Enrolment {
            human: &human,
            agent: &agent,
            scope: &scope,
            created_at: &now,
            expires_at: expires,
        },
        &mut hc,
        &mut ac,
    )
    .await
    .map_err(|e| client_failure(&e))?;
    let out = serde_json::to_string_pretty(&chain).unwrap_or_default();
    std::fs::write(&c.chain, out)
        .map_err(|e| input(format!("cannot write {}: {e}", c.chain.display())))?;
    println!(
        "enrolled {} (type agent) under {}: scope {}; chain written to {}",
        c.identity,
        human.address(),
        scope.join(", "),
        c.chain.display()
    );
    Ok(())
}

/// Prints each event and sums what the agent's messages cost.
#[derive(Debug, Default)]
struct Printer {
    json: bool,
    cost: Mutex<loom_agent::encoding::Cost>,
}

impl Observer for Printer {
    fn event(&self, e: &AgentEvent) {
        if let AgentEvent::Posted { cost, .. } | AgentEvent::Message { cost, .. } = e
            && let Ok(mut c) = self.cost.lock()
        {
            c.merge(cost);
        }
        if self.json {
            println!("{}", serde_json::to_string(e).unwrap_or_default());
            return;
        }
        let line = match e {
            AgentEvent::LoggedIn { node } => format!("logged in to {node}"),
            AgentEvent::Posted {
                task_id,
                state,
                envelope_id,
                ..
            } => format!("task {task_id}: {state} ({envelope_id})"),
            AgentEvent::Refused {
                task_id,
                state,
                error,
            } => format!("task {task_id}: the node refused {state}: {error}"),
            AgentEvent::Message {
                task_id,
                envelope_id,
                ..
            } => format!("task {task_id}: message {envelope_id}"),
            AgentEvent::RunStarted {
                task_id,
                attempt,
                work,
            } => format!("task {task_id}: run {attempt} of {work}"),
            AgentEvent::RunFinished {
                task_id,
                attempt,
                summary,
                ..
            } => format!("task {task_id}: run {attempt} {summary}"),
            AgentEvent::Log { line } => line.clone(),
        };
        println!("{line}");
    }
}

async fn do_run(config: &Path, exit_after: Option<usize>, json: bool) -> Result<(), Failure> {
    let c = AgentConfig::load(config).map_err(input)?;
    let packages = Packages::load(&c.packages).map_err(input)?;
    let agent = read_identity(&c.identity, &c.key)?;
    let text = std::fs::read_to_string(&c.chain).map_err(|e| {
        input(format!(
            "cannot read the chain file {}: {e} (run `loom-agent enroll` first)",
            c.chain.display()
        ))
    })?;
    let chain: Value =
        serde_json::from_str(&text).map_err(|e| input(format!("{}: {e}", c.chain.display())))?;
    let granted = leaf_scope(&chain).map_err(|e| input(format!("{}: {e}", c.chain.display())))?;
    std::fs::create_dir_all(&c.data)
        .map_err(|e| input(format!("cannot create {}: {e}", c.data.display())))?;
    let plsp: Option<Arc<dyn loom_plsp::engine::StateEngine>> = match &c.plsp {
        None => None,
        Some(p) if p.engine == "chat" => {
            let cfg = loom_plsp::engine::chat::ChatConfig::from_env(|k| std::env::var(k).ok())
                .map_err(input)?;
            let dial = Arc::new(loom_plsp::http::HyperDial::new(8 << 20));
            Some(Arc::new(loom_plsp::engine::chat::ChatEngine::new(
                cfg, dial,
            )))
        }
        Some(_) => Some(Arc::new(loom_plsp::engine::reference::ReferenceEngine)),
    };
    let trust = match &c.ca_cert {
        Some(ca) => Some(Trust::pem_file(ca).map_err(|e| input(e.to_string()))?),
        None => None,
    };
    let printer = Arc::new(Printer {
        json,
        ..Printer::default()
    });
    let seed = u64::from_le_bytes(
        loom_client::tls::os_random_32().map_err(|e| input(e.to_string()))?[..8]
            .try_into()
            .map_err(|_| input("random seed"))?,
    );
    if !json {
        println!(
            "{} on {}: delegation grants {}",
            c.identity,
            c.node,
            granted.join(", ")
        );
    }
    let host = Host::new(Setup {
        dial: TokioDial,
        url: c.node.clone(),
        trust,
        identity: agent,
        chain,
        packages: Arc::new(packages),
        plsp,
        encoding: c.content_encoding,
        workdir: c.data.join("runs"),
        poll: Duration::from_millis(c.poll_ms),
        seed,
        clock: Arc::new(SystemClock),
        journal: Arc::new(FileJournal(c.data.join("journal.json"))),
        rules: Box::new(loom_agent::core::SpecRules),
        observer: printer.clone(),
        exit_after,
    })
    .map_err(input)?;
    let stop = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    host.run(stop).await.map_err(input)?;
    if let Ok(cost) = printer.cost.lock()
        && !json
    {
        println!("token cost: {}", cost.line());
    }
    Ok(())
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("loom-agent: cannot start the runtime: {e}");
            return ExitCode::from(2);
        }
    };
    let r = rt.block_on(async {
        match cli.command {
            Command::Enroll {
                config,
                session,
                key,
                expires,
            } => do_enroll(&config, &session, &key, &expires).await,
            Command::Run {
                config,
                exit_after,
                json,
            } => do_run(&config, exit_after, json).await,
        }
    });
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure(code, msg)) => {
            eprintln!("loom-agent: {msg}");
            ExitCode::from(code)
        }
    }
}
