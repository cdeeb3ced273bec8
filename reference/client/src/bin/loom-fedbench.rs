//! `loom-fedbench`: federated delivery throughput and latency between two running nodes
//! that know each other as peers ([`loom_client::fedbench`]). The wall clock is read only
//! here (DESIGN.md §3). Exit codes: 0 done; 1 the run failed (the message says why).

use clap::Parser;
use loom_client::fedbench::{FedBenchConfig, run};
use loom_protocol::clock::SystemClock;
use std::process::ExitCode;
use std::time::Duration;

#[derive(Parser, Debug)]
#[command(
    name = "loom-fedbench",
    version,
    about = "Measure federated delivery between two LOOM nodes"
)]
struct Cli {
    /// Sending node: base URL.
    #[arg(long, value_name = "URL")]
    a: String,
    /// Sending node: domain.
    #[arg(long, default_value = "a.test")]
    a_domain: String,
    /// Receiving node: base URL.
    #[arg(long, value_name = "URL")]
    b: String,
    /// Receiving node: domain.
    #[arg(long, default_value = "b.test")]
    b_domain: String,
    /// Messages to send.
    #[arg(long, default_value_t = 5000)]
    count: usize,
    /// Connections to the sending node.
    #[arg(long, default_value_t = 16)]
    concurrency: usize,
    /// Seed for keys and ids.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Longest wait for the last delivery, in seconds.
    #[arg(long, default_value_t = 300)]
    timeout_secs: u64,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let cfg = FedBenchConfig {
        a: (cli.a, cli.a_domain),
        b: (cli.b, cli.b_domain),
        count: cli.count,
        concurrency: cli.concurrency,
        seed: cli.seed,
        timeout: Duration::from_secs(cli.timeout_secs),
    };
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("loom-fedbench: {e}");
            return ExitCode::FAILURE;
        }
    };
    match rt.block_on(run(&cfg, SystemClock)) {
        Ok(r) => {
            println!(
                "loom-fedbench {} → {}: {} envelopes delivered in {:.2} s: {:.0} envelopes/s (posting took {:.2} s)\n  delivery latency ms: p50 {:.0}  p90 {:.0}  p99 {:.0}  max {:.0}",
                cfg.a.1,
                cfg.b.1,
                r.delivered,
                r.span_secs,
                r.per_sec,
                r.post_secs,
                r.latency.p50,
                r.latency.p90,
                r.latency.p99,
                r.latency.max
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("loom-fedbench: {e}");
            ExitCode::FAILURE
        }
    }
}
