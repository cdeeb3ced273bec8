//! `loom-tokens`: token cost of Loom notation vs JSON, YAML, TOON and PLSP, with eight
//! tokenizers. TOON needs the bridge built by `benches/toon-bridge/build.sh`.
//!
//! Exit codes: 0 done; 1 `--check` found changed counts; 2 usage or I/O error.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Parser;
use loom_benches::tokens::datasets::{Dataset, Doc};
use loom_benches::tokens::tokenizer::Tokenizers;
use loom_benches::tokens::{Run, golden, report, run, run_builtin, svg};

/// Measure what each format costs in LLM tokens (eight offline tokenizers), counting only
/// encodings that decode back to the original value. TOON runs in the bridge process built by
/// `benches/toon-bridge/build.sh` (or the executable named by LOOM_TOON_BRIDGE).
#[derive(Debug, Parser)]
#[command(name = "loom-tokens", version)]
struct Args {
    /// Measure this JSON file in every format instead of the built-in datasets.
    file: Option<PathBuf>,
    /// Write the results as JSON to PATH.
    #[arg(long, value_name = "PATH")]
    json: Option<PathBuf>,
    /// Write an SVG bar chart to PATH.
    #[arg(long, value_name = "PATH")]
    svg: Option<PathBuf>,
    /// Compare with the committed golden counts (benches/results/token-counts.json); exit 1 on any change.
    #[arg(long, conflicts_with_all = ["file", "write_results"])]
    check: bool,
    /// Regenerate benches/results/: token-efficiency.md, token-counts.json, token-efficiency.svg
    /// and charts/DATASET.svg.
    #[arg(long, conflicts_with = "file")]
    write_results: bool,
}

fn results_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("results")
}

fn write(path: &Path, text: &str) -> Result<(), String> {
    std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

fn json_text(run: &Run) -> String {
    let mut s = serde_json::to_string_pretty(&golden::to_json(run)).unwrap_or_default();
    s.push('\n');
    s
}

fn read_file(path: &Path) -> Result<Dataset, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let value: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| format!("{} is not valid JSON: {e}", path.display()))?;
    let name = path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    Ok(Dataset {
        name: name.clone(),
        description: format!("the JSON file {}", path.display()),
        docs: vec![Doc { label: name, value }],
    })
}

fn main_inner(args: Args) -> Result<ExitCode, String> {
    // Read the input before the (slow) tokenizers are built, so a bad path fails at once.
    let input = args.file.as_deref().map(read_file).transpose()?;
    let tok = Tokenizers::new()?;
    let (run, text) = match (&args.file, input) {
        (Some(path), Some(set)) => {
            let run = run(0, &[set], &tok);
            let table = run
                .datasets
                .iter()
                .map(report::dataset_table)
                .collect::<String>();
            (run, format!("## {}\n\n{table}", path.display()))
        }
        _ => {
            let run = run_builtin(&tok);
            let md = report::markdown(&run, &tok, args.write_results);
            (run, md)
        }
    };
    if let Some(p) = &args.json {
        write(p, &json_text(&run))?;
    }
    if let Some(p) = &args.svg {
        write(p, &svg::chart(&run))?;
    }
    if args.write_results {
        let dir = results_dir();
        std::fs::create_dir_all(&dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        write(&dir.join("token-efficiency.md"), &format!("{text}\n"))?;
        write(&dir.join("token-counts.json"), &json_text(&run))?;
        write(&dir.join("token-efficiency.svg"), &svg::chart(&run))?;
        let charts = dir.join("charts");
        std::fs::create_dir_all(&charts)
            .map_err(|e| format!("cannot create {}: {e}", charts.display()))?;
        for r in &run.datasets {
            write(
                &charts.join(format!("{}.svg", r.name)),
                &svg::dataset_chart(r),
            )?;
        }
        eprintln!(
            "wrote {}/token-efficiency.md, token-counts.json, token-efficiency.svg, charts/*.svg",
            dir.display()
        );
        return Ok(ExitCode::SUCCESS);
    }
    if args.check {
        let path = results_dir().join("token-counts.json");
        let committed = std::fs::read_to_string(&path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let committed: serde_json::Value = serde_json::from_str(&committed)
            .map_err(|e| format!("{} is not valid JSON: {e}", path.display()))?;
        let diffs = golden::check(&committed, &golden::to_json(&run));
        if diffs.is_empty() {
            println!("token counts match {}", path.display());
            return Ok(ExitCode::SUCCESS);
        }
        for d in &diffs {
            println!("{d}");
        }
        println!(
            "{} count(s) differ from {}; if the change is intended, run `loom-tokens --write-results`",
            diffs.len(),
            path.display()
        );
        return Ok(ExitCode::from(1));
    }
    println!("{text}");
    Ok(ExitCode::SUCCESS)
}

fn main() -> ExitCode {
    match main_inner(Args::parse()) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("loom-tokens: {e}");
            ExitCode::from(2)
        }
    }
}
