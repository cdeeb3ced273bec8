//! `loom-conformance selftest`: mutation coverage (every MUST case fails against the node with
//! its quirk) and legal-variant coverage (every case passes against the node under each legal
//! variant). Only in builds with the `selftest` feature, which compiles the reference node's
//! quirks in (DESIGN.md §4: release builds carry none).

/// `selftest` options.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Cases in flight at once (per node).
    #[arg(long, default_value_t = 4)]
    jobs: usize,
    /// Only cases whose ID matches (glob; repeatable).
    #[arg(long)]
    only: Vec<String>,
    /// Only variants whose name matches (glob; repeatable).
    #[arg(long)]
    variant: Vec<String>,
    /// Seed for test data (default: fresh).
    #[arg(long)]
    seed: Option<u64>,
}

/// Without the `selftest` feature the mutants and variants do not exist in this build, so the
/// command says how to get a build that has them.
#[cfg(not(feature = "selftest"))]
pub async fn main(_args: Args, _fresh_seed: u64) -> std::process::ExitCode {
    eprintln!(
        "error: this loom-conformance was built without the `selftest` feature, so the reference \
         node's quirks and the legal-variant shim (what the self-test runs against) are not \
         compiled in.\n\
         Run: cargo run --release -p loom-conformance --features selftest -- selftest"
    );
    std::process::ExitCode::from(2)
}

#[cfg(feature = "selftest")]
pub use with_feature::main;

#[cfg(feature = "selftest")]
mod with_feature {
    use super::Args;
    use crate::cli::outln;
    use crate::runner::{self, RunConfig};
    use crate::{Case, catalogue, report};
    use loom_protocol::clock::{Clock, SystemClock};
    use std::process::ExitCode;
    use std::sync::Arc;
    use std::time::Instant;

    /// Runs the self-test and prints both coverages.
    pub async fn main(args: Args, fresh_seed: u64) -> ExitCode {
        let seed = args.seed.unwrap_or(fresh_seed);
        let cfg = RunConfig {
            jobs: args.jobs,
            only: args.only,
            level: 4,
            seed,
            ..RunConfig::default()
        };
        let cases: Vec<&'static Case> = runner::select(&catalogue::all(), &cfg);
        if cases.is_empty() {
            return crate::cli::usage("no case matches --only");
        }
        let variants: Vec<&'static crate::variants::Variant> = crate::variants::all()
            .into_iter()
            .filter(|v| {
                args.variant.is_empty()
                    || args.variant.iter().any(|g| runner::glob_match(g, v.name))
            })
            .collect();
        if variants.is_empty() {
            return crate::cli::usage("no variant matches --variant");
        }
        let clock: Arc<dyn Clock> = Arc::new(SystemClock);
        let started = Instant::now();
        eprintln!(
            "{}",
            report::layout::indented(
                &format!(
                    "loom-conformance selftest (seed {seed}): {} cases against the clean embedded node, each case that names a quirk against that quirk, and all of them under {} legal variants",
                    cases.len(),
                    variants.len()
                ),
                report::layout::width(),
                0,
                2
            )
        );
        let st = match crate::selftest::selftest(&cases, &cfg, clock, &variants).await {
            Ok(st) => st,
            Err(e) => {
                eprintln!("error: the embedded reference node did not start: {e}");
                return ExitCode::from(3);
            }
        };
        outln!(
            "{}",
            report::terminal::mutations(&st, &cases, report::layout::width())
        );
        outln!(
            "{}",
            report::terminal::variants(&st, report::layout::width())
        );
        let (controlled, negative) = st.negative_controls(&cases);
        outln!("negative cases with a passing control: {controlled}/{negative}");
        for id in st.uncontrolled() {
            outln!("  without a control beside each refusal: {id}");
        }
        let judged: usize = st.refuse_all.iter().map(|r| r.cases.len()).sum();
        outln!(
            "vacuous passes under refuse-all mutants: {} ({judged} negative cases under {} mutants)",
            st.vacuous_passes().len(),
            st.refuse_all.len()
        );
        outln!("in {:.1} s", started.elapsed().as_secs_f64());
        let problems = st.problems();
        if problems.is_empty() {
            ExitCode::SUCCESS
        } else {
            outln!("\nproblems ({}):", problems.len());
            for p in &problems {
                outln!(
                    "{}",
                    report::layout::indented(p, report::layout::width(), 2, 4)
                );
            }
            ExitCode::from(1)
        }
    }
}
