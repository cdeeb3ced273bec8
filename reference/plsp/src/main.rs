//! `loom-plsp`: check a block, run a scenario, replay a trace (spec §2, §4, §5, §7).

use clap::{Parser, Subcommand, ValueEnum};
use loom_plsp::engine::StateEngine;
use loom_plsp::engine::chat::{ChatConfig, ChatEngine};
use loom_plsp::engine::reference::ReferenceEngine;
use loom_plsp::http::HyperDial;
use loom_plsp::scenario::{self, Scenario};
use loom_plsp::{Limits, parse, validate_block, validate_transition};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

#[derive(Parser, Debug)]
#[command(
    name = "loom-plsp",
    version,
    about = "PLSP v0.5 state blocks, instruction micro-format and middleware loop"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// Parse and validate a block (`-` reads stdin); prints its canonical form.
    Check {
        /// The block text, or `-`.
        block: String,
        /// The previous block, to check that no variable was dropped (§5).
        #[arg(long)]
        previous: Option<String>,
    },
    /// Run a scenario file; the trace goes to --trace or stdout.
    Run {
        /// The scenario (JSON; see reference/plsp/examples/).
        #[arg(long)]
        script: PathBuf,
        /// Where to write the JSONL trace (default: stdout).
        #[arg(long)]
        trace: Option<PathBuf>,
        /// Where to write the `>` data as JSONL.
        #[arg(long)]
        data: Option<PathBuf>,
        /// Which engine produces the blocks.
        #[arg(long, value_enum, default_value_t = EngineKind::Reference)]
        engine: EngineKind,
    },
    /// Re-validate a recorded trace.
    Replay {
        /// The JSONL trace file.
        trace: PathBuf,
    },
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum EngineKind {
    /// The deterministic IMF engine (no model).
    Reference,
    /// An OpenAI-compatible chat-completions model: PLSP_BASE_URL, PLSP_MODEL, PLSP_API_KEY.
    Chat,
}

fn read_arg(a: &str) -> Result<String, String> {
    if a == "-" {
        std::io::read_to_string(std::io::stdin()).map_err(|e| format!("stdin: {e}"))
    } else {
        Ok(a.to_owned())
    }
}

fn caret(text: &str, offset: usize) -> String {
    let start = text[..offset.min(text.len())]
        .rfind('\n')
        .map_or(0, |i| i + 1);
    let end = text[start..].find('\n').map_or(text.len(), |i| start + i);
    let col = text[start..offset.min(text.len())].chars().count();
    format!("  {}\n  {}^", &text[start..end], " ".repeat(col))
}

fn check(block: &str, previous: Option<&str>) -> Result<ExitCode, String> {
    let text = read_arg(block)?;
    let b = match parse(&text) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("error: {e}\n{}", caret(&text, e.offset));
            return Ok(ExitCode::from(1));
        }
    };
    let limits = Limits::default();
    let violations = match previous {
        Some(p) => {
            let p = parse(&read_arg(p)?).map_err(|e| format!("--previous: {e}"))?;
            validate_transition(&p, &b, &limits)
        }
        None => validate_block(&b, &limits),
    };
    println!("{b}");
    for v in &violations {
        eprintln!("violation: {v}");
    }
    Ok(if violations.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

async fn run(
    script: PathBuf,
    trace: Option<PathBuf>,
    data: Option<PathBuf>,
    engine: EngineKind,
) -> Result<ExitCode, String> {
    let text =
        std::fs::read_to_string(&script).map_err(|e| format!("{}: {e}", script.display()))?;
    let sc = Scenario::from_json(&text)?;
    let engine: Arc<dyn StateEngine> = match engine {
        EngineKind::Reference => Arc::new(ReferenceEngine),
        EngineKind::Chat => {
            let cfg = ChatConfig::from_env(|k| std::env::var(k).ok())?;
            Arc::new(ChatEngine::new(cfg, Arc::new(HyperDial::new(1 << 20))))
        }
    };
    let out = scenario::run(&sc, engine).await;
    let join = |l: &[String]| l.iter().map(|s| format!("{s}\n")).collect::<String>();
    match trace {
        Some(p) => {
            std::fs::write(&p, join(&out.trace)).map_err(|e| format!("{}: {e}", p.display()))?
        }
        None => print!("{}", join(&out.trace)),
    }
    if let Some(p) = data {
        std::fs::write(&p, join(&out.data)).map_err(|e| format!("{}: {e}", p.display()))?;
    }
    for (t, m) in &out.pages {
        eprintln!("page {t}: {m}");
    }
    match out.result {
        Ok(s) => {
            eprintln!("{}: {} cycles, last {}", sc.name, s.cycles, s.last);
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            eprintln!("error: {e}");
            Ok(ExitCode::from(1))
        }
    }
}

fn replay(trace: PathBuf) -> Result<ExitCode, String> {
    let text = std::fs::read_to_string(&trace).map_err(|e| format!("{}: {e}", trace.display()))?;
    let r = loom_plsp::replay::replay(&text, &Limits::default());
    for p in &r.problems {
        eprintln!("{p}");
    }
    println!("{} cycles, {} problems", r.cycles, r.problems.len());
    Ok(if r.problems.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let r = match cli.cmd {
        Cmd::Check { block, previous } => check(&block, previous.as_deref()),
        Cmd::Replay { trace } => replay(trace),
        Cmd::Run {
            script,
            trace,
            data,
            engine,
        } => tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| e.to_string())
            .and_then(|rt| rt.block_on(run(script, trace, data, engine))),
    };
    r.unwrap_or_else(|e| {
        eprintln!("error: {e}");
        ExitCode::from(2)
    })
}
