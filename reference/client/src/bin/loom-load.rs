//! `loom-load`: registers N identities on any LOOM v1.1 node, pre-signs M envelopes and
//! posts them over C keep-alive connections; prints envelopes/s, latency percentiles and
//! errors by status and code (`--json` for machines). The wall clock and, without `--seed`,
//! OS randomness are read only here (DESIGN.md §3).
//!
//! `--slice N` runs the growth benchmark instead ([`loom_client::growth`]): slices of N
//! envelopes, each followed by timed reads, and a table per slice.
//!
//! `--acked FILE` writes the id of every acknowledged (201) envelope, one per line, sorted.
//!
//! Exit codes: 0 every post succeeded; 1 some posts failed (the report says which); 2 usage
//! error; 3 setup failed (node unreachable, registration or login refused).

use clap::Parser;
use loom_client::growth::run_growth;
use loom_client::load::{LoadConfig, run};
use loom_client::tls::os_random_32;
use loom_client::{TokioDial, Trust};
use loom_protocol::clock::SystemClock;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

#[derive(Parser, Debug)]
#[command(
    name = "loom-load",
    version,
    about = "Load-test a LOOM v1.1 node: POST /v1/envelopes over keep-alive connections"
)]
struct Cli {
    /// Node base URL.
    #[arg(long, value_name = "URL")]
    target: String,
    /// Identities to register and send as.
    #[arg(long, default_value_t = 4)]
    identities: usize,
    /// Parallel keep-alive connections.
    #[arg(long, default_value_t = 4)]
    concurrency: usize,
    /// Envelopes to post.
    #[arg(long, default_value_t = 1000)]
    count: usize,
    /// Bytes of message text per envelope.
    #[arg(long, default_value_t = 64)]
    payload_bytes: usize,
    /// Envelopes per thread (a root and its chain of replies).
    #[arg(long, default_value_t = 50)]
    thread_length: usize,
    /// Seed for identity names, keys and ids (random when absent).
    #[arg(long)]
    seed: Option<u64>,
    /// Trust the certificates in this PEM file.
    #[arg(long, value_name = "PEM")]
    ca_cert: Option<PathBuf>,
    /// Accept any TLS certificate (throwaway nodes only).
    #[arg(long, conflicts_with = "ca_cert")]
    insecure_tls: bool,
    /// Seconds allowed per request.
    #[arg(long, default_value_t = 30)]
    timeout: u64,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
    /// Growth mode: post in slices of this many envelopes and time a page of threads, a
    /// page of events and a search after each (issue 14's flat-as-data-grows benchmark).
    #[arg(long, value_name = "N")]
    slice: Option<usize>,
    /// Write the id of every envelope the node acknowledged (201) to FILE, one per line,
    /// sorted: what a crash test compares with the store afterwards.
    #[arg(long, value_name = "FILE", conflicts_with = "slice")]
    acked: Option<PathBuf>,
    /// Growth mode: requests per read timing (the median is reported).
    #[arg(long, default_value_t = 7, requires = "slice")]
    reads: usize,
}

/// mimalloc instead of the system allocator: with glibc malloc, allocation and
/// consolidation were about a fifth of the load tool's CPU per envelope (perf, issue 14).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let seed = match cli.seed {
        Some(s) => s,
        None => match os_random_32() {
            Ok(b) => u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]),
            Err(e) => {
                eprintln!("loom-load: {e}");
                return ExitCode::from(2);
            }
        },
    };
    let trust = if let Some(ca) = &cli.ca_cert {
        match Trust::pem_file(ca) {
            Ok(t) => Some(t),
            Err(e) => {
                eprintln!("loom-load: {e}");
                return ExitCode::from(2);
            }
        }
    } else if cli.insecure_tls {
        Some(Trust::InsecureAnyCertificate)
    } else {
        None
    };
    let cfg = LoadConfig {
        target: cli.target,
        identities: cli.identities,
        concurrency: cli.concurrency,
        count: cli.count,
        payload_bytes: cli.payload_bytes,
        thread_length: cli.thread_length,
        seed,
        trust,
        timeout: Duration::from_secs(cli.timeout),
    };
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("loom-load: cannot start the runtime: {e}");
            return ExitCode::from(2);
        }
    };
    if let Some(slice) = cli.slice {
        return match rt.block_on(run_growth(&cfg, slice, cli.reads, TokioDial, SystemClock)) {
            Ok(report) => {
                if cli.json {
                    println!("{}", report.to_json());
                } else {
                    print!("{}", report.render());
                }
                if report.slices.iter().all(|s| s.failures == 0) {
                    ExitCode::SUCCESS
                } else {
                    ExitCode::from(1)
                }
            }
            Err(e) => {
                eprintln!("loom-load: {e}");
                ExitCode::from(3)
            }
        };
    }
    match rt.block_on(run(&cfg, TokioDial, SystemClock)) {
        Ok(report) => {
            if let Some(path) = &cli.acked {
                let mut text = report.acked.join("\n");
                if !text.is_empty() {
                    text.push('\n');
                }
                if let Err(e) = std::fs::write(path, text) {
                    eprintln!("loom-load: --acked {}: {e}", path.display());
                    return ExitCode::from(2);
                }
            }
            if cli.json {
                println!("{}", report.to_json());
            } else {
                print!("{}", report.render());
            }
            if report.failures == 0 {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            }
        }
        Err(e) => {
            eprintln!("loom-load: setup failed: {e}");
            ExitCode::from(3)
        }
    }
}
