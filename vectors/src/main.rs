//! `loom-vectors`: counts the shared vectors, drives any implementation through them over the
//! adapter protocol, serves as the reference adapter, and regenerates the generated files.

use clap::{Parser, Subcommand};
use loom_vectors::protocol::{Answer, Judgement, Request, Verdict};
use loom_vectors::{AREA_MINIMUMS, generate, load_all, reference, vectors_dir, verify};
use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

#[derive(Debug, Parser)]
#[command(
    name = "loom-vectors",
    version,
    about = "LOOM shared test vectors (v1)"
)]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Debug, Subcommand)]
enum Cmd {
    /// Vector counts per area, with the minimum each area must meet.
    Stats {
        /// Directory holding the vector files.
        #[arg(long, default_value_os_t = vectors_dir())]
        dir: PathBuf,
    },
    /// Run every vector through an external implementation's adapter and judge its answers.
    Verify {
        /// Shell command starting the adapter (JSON lines on stdin/stdout; see vectors/README.md).
        #[arg(long = "impl", value_name = "CMD")]
        implementation: String,
        /// Directory holding the vector files.
        #[arg(long, default_value_os_t = vectors_dir())]
        dir: PathBuf,
        /// Only these areas (repeatable).
        #[arg(long)]
        area: Vec<String>,
        /// Seconds to wait for each answer.
        #[arg(long, default_value_t = 10.0)]
        timeout: f64,
        /// Print every vector, not only failures.
        #[arg(long, conflicts_with = "summary")]
        verbose: bool,
        /// Print only the counts per area (pass, fail, unsupported), no vector lines.
        #[arg(long)]
        summary: bool,
    },
    /// Answer adapter requests from stdin with loom-protocol (the reference adapter).
    Adapter {
        /// Deliberately answer these vector IDs wrongly (verdict inverted), to demonstrate
        /// how `verify` reports a failure.
        #[arg(long, value_name = "ID")]
        sabotage: Vec<String>,
    },
    /// Rewrite the generated vector files and every schema file.
    Generate {
        /// Compare instead of writing; exit 1 when a file differs.
        #[arg(long)]
        check: bool,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Cmd::Stats { dir } => stats(&dir),
        Cmd::Verify {
            implementation,
            dir,
            area,
            timeout,
            verbose,
            summary,
        } => run_verify(&implementation, &dir, &area, timeout, verbose, summary),
        Cmd::Adapter { sabotage } => adapter(&sabotage),
        Cmd::Generate { check } => run_generate(check),
    }
}

fn stats(dir: &std::path::Path) -> ExitCode {
    let files = match load_all(dir) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    println!(
        "{:<22} {:>7} {:>7} {:>7} {:>7}  kinds",
        "area", "vectors", "valid", "invalid", "minimum"
    );
    let mut total = 0;
    let mut short = Vec::new();
    for (area, min) in AREA_MINIMUMS {
        let Some(f) = files.iter().find(|f| f.area == *area) else {
            println!(
                "{area:<22} {:>7} {:>7} {:>7} {min:>7}  (missing)",
                "-", "-", "-"
            );
            short.push(*area);
            continue;
        };
        let valid = f.tests().filter(|t| t["result"] == "valid").count();
        let mut kinds: Vec<&str> = f.groups.iter().map(|g| g.kind.as_str()).collect();
        kinds.dedup();
        println!(
            "{area:<22} {:>7} {valid:>7} {:>7} {min:>7}  {}",
            f.number_of_tests,
            f.number_of_tests - valid,
            kinds.join(", ")
        );
        total += f.number_of_tests;
        if f.number_of_tests < *min {
            short.push(*area);
        }
    }
    for f in files
        .iter()
        .filter(|f| AREA_MINIMUMS.iter().all(|(a, _)| *a != f.area))
    {
        println!(
            "{:<22} {:>7}  (area without a minimum)",
            f.area, f.number_of_tests
        );
        total += f.number_of_tests;
    }
    println!("{:<22} {total:>7}", "total");
    if short.is_empty() {
        ExitCode::SUCCESS
    } else {
        println!("below minimum or missing: {}", short.join(", "));
        ExitCode::from(1)
    }
}

fn run_verify(
    cmd: &str,
    dir: &std::path::Path,
    areas: &[String],
    timeout: f64,
    verbose: bool,
    summary: bool,
) -> ExitCode {
    let files = match load_all(dir) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let files: Vec<_> = files
        .into_iter()
        .filter(|f| areas.is_empty() || areas.contains(&f.area))
        .collect();
    if files.is_empty() {
        eprintln!("error: no vector file matches --area {}", areas.join(", "));
        return ExitCode::from(2);
    }
    if !(timeout.is_finite() && timeout > 0.0) {
        eprintln!("error: --timeout must be a positive number of seconds");
        return ExitCode::from(2);
    }
    let report = match verify::verify_command(cmd, &files, Duration::from_secs_f64(timeout)) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    for (area, outcomes) in &report.areas {
        let pass = outcomes
            .iter()
            .filter(|o| o.judgement == Judgement::Pass)
            .count();
        let failed = outcomes
            .iter()
            .filter(|o| matches!(o.judgement, Judgement::Fail(_)))
            .count();
        let unsupported = outcomes.len() - pass - failed;
        let mut line = format!("{area:<22} {pass:>5}/{:<5} pass", outcomes.len());
        if failed > 0 {
            line.push_str(&format!(", {failed} fail"));
        }
        if unsupported > 0 {
            line.push_str(&format!(", {unsupported} unsupported"));
        }
        println!("{line}");
        if summary {
            continue;
        }
        for o in outcomes {
            match &o.judgement {
                Judgement::Pass if verbose => println!("  pass        {area}/{}", o.id),
                Judgement::Pass => {}
                Judgement::Fail(why) => println!("  FAIL        {area}/{}: {why}", o.id),
                Judgement::Unsupported(why) => {
                    println!("  unsupported {area}/{}: {why}", o.id)
                }
            }
        }
    }
    let (pass, fail, unsupported) = report.totals();
    println!("{pass} passed, {fail} failed, {unsupported} unsupported");
    if fail == 0 && unsupported == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

fn adapter(sabotage: &[String]) -> ExitCode {
    let stdin = std::io::stdin();
    let mut out = std::io::stdout().lock();
    for line in stdin.lock().lines() {
        let Ok(line) = line else { break };
        if line.trim().is_empty() {
            continue;
        }
        let answer = match serde_json::from_str::<Request>(&line) {
            Ok(req) => {
                let mut a = reference::answer(&req);
                if sabotage.contains(&req.id) {
                    a = match a.result {
                        Verdict::Valid => Answer::invalid("SABOTAGED", "deliberately wrong"),
                        _ => Answer::accepted(),
                    }
                    .for_id(&req.id);
                }
                a
            }
            Err(e) => Answer::unsupported(format!("malformed request line: {e}")),
        };
        let text = serde_json::to_string(&answer).expect("answer serializes");
        if writeln!(out, "{text}").and_then(|_| out.flush()).is_err() {
            break;
        }
    }
    ExitCode::SUCCESS
}

fn run_generate(check: bool) -> ExitCode {
    let dir = vectors_dir();
    let schema_dir = dir
        .parent()
        .expect("vectors/v1 has a parent")
        .join("schema");
    let mut outputs: Vec<(PathBuf, String)> = generate::GENERATED
        .iter()
        .map(|g| (dir.join(format!("{}.json", g.area)), (g.build)().render()))
        .collect();
    for area in generate::all_areas() {
        let text = generate::schema_text(area).expect("every listed area has a schema");
        outputs.push((schema_dir.join(format!("{area}.schema.json")), text));
    }
    let mut stale = 0;
    let files = outputs.len();
    for (path, text) in outputs {
        let current = std::fs::read_to_string(&path).unwrap_or_default();
        if current == text {
            continue;
        }
        if check {
            println!("stale: {}", path.display());
            stale += 1;
        } else if let Err(e) =
            std::fs::create_dir_all(&schema_dir).and_then(|_| std::fs::write(&path, text))
        {
            eprintln!("error: {}: {e}", path.display());
            return ExitCode::from(2);
        } else {
            println!("wrote {}", path.display());
        }
    }
    if check && stale == 0 {
        println!("{files} generated files and schemas are up to date");
    } else if check {
        println!("{stale} of {files} files are stale: run `loom-vectors generate` and commit them");
    }
    if stale == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}
