//! `loom-wsbench`: WebSocket fan-out of one running node ([`loom_client::wsbench`]): N
//! connections, one thread, events pushed to all of them. The wall clock is read only here
//! (DESIGN.md §3). Exit codes: 0 every delivery arrived; 1 the run failed or deliveries were
//! missing (the message says how many).

use clap::Parser;
use loom_client::wsbench::{WsBenchConfig, run};
use loom_protocol::clock::SystemClock;
use std::process::ExitCode;
use std::time::Duration;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser, Debug)]
#[command(
    name = "loom-wsbench",
    version,
    about = "Measure WebSocket event fan-out of a LOOM node (v1.1 §17)"
)]
struct Cli {
    /// The node's base URL (its auth and envelope rate limits off, its WebSocket caps above
    /// --clients: see the node README).
    #[arg(long, value_name = "URL")]
    url: String,
    /// The node's domain.
    #[arg(long, default_value = "bench.test")]
    domain: String,
    /// WebSocket connections.
    #[arg(long, default_value_t = 1000)]
    clients: usize,
    /// Users the connections are spread over.
    #[arg(long, default_value_t = 20)]
    identities: usize,
    /// Envelopes posted; each reaches every connection.
    #[arg(long, default_value_t = 20)]
    messages: usize,
    /// Connections opened at once.
    #[arg(long, default_value_t = 64)]
    connect_concurrency: usize,
    /// Seed for keys and ids.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Longest wait for one delivery, in seconds.
    #[arg(long, default_value_t = 120)]
    timeout_secs: u64,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let cfg = WsBenchConfig {
        url: cli.url,
        domain: cli.domain,
        clients: cli.clients,
        identities: cli.identities,
        messages: cli.messages,
        connect_concurrency: cli.connect_concurrency,
        seed: cli.seed,
        timeout: Duration::from_secs(cli.timeout_secs),
    };
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("loom-wsbench: {e}");
            return ExitCode::FAILURE;
        }
    };
    match rt.block_on(run(&cfg, SystemClock)) {
        Ok(r) => {
            println!(
                "loom-wsbench {}: {} connections in {:.2} s; {} of {} deliveries in {:.2} s: {:.0} events/s fanned out\n  delivery latency ms: p50 {:.1}  p90 {:.1}  p99 {:.1}  max {:.1}",
                cfg.domain,
                r.connected,
                r.connect_secs,
                r.delivered,
                r.expected,
                r.span_secs,
                r.per_sec,
                r.latency.p50,
                r.latency.p90,
                r.latency.p99,
                r.latency.max
            );
            if r.connected < cfg.clients || r.delivered < r.expected {
                eprintln!(
                    "loom-wsbench: {} of {} connections opened, {} of {} deliveries arrived",
                    r.connected, cfg.clients, r.delivered, r.expected
                );
                return ExitCode::FAILURE;
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("loom-wsbench: {e}");
            ExitCode::FAILURE
        }
    }
}
