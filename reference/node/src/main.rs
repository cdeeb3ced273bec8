//! The `loom-node` binary: serves the reference node on a real socket, verifies a store's
//! §25.1 audit chain, and lists quirks in `quirks` builds.
//!
//! This is the only place that reads the wall clock ([`SystemClock`]) and, when no `--seed`
//! is given, draws the node's seed from operating-system randomness (DESIGN.md §3); the
//! library receives both through [`Env`].

use clap::{Args, Parser, Subcommand, ValueEnum};
use loom_node::config::TlsSettings;
use loom_node::store::{Store, audit};
use loom_node::{Env, Node, NodeConfig, StartError, Storage};

/// The exit code of a node that refuses to start because its audit log does not match its
/// signed checkpoint (v1.1 §25.1); `loom-node audit verify` says why.
const AUDIT_MISMATCH_EXIT: u8 = 3;
use loom_protocol::clock::SystemClock;
use std::io::IsTerminal;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

/// The LOOM v1.1 reference node.
#[derive(Debug, Parser)]
#[command(name = "loom-node", version, args_conflicts_with_subcommands = true)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    serve: ServeArgs,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve the node (the default when no subcommand is given).
    Serve(Box<ServeArgs>),
    /// Audit-log tools (v1.1 §25.1).
    Audit {
        #[command(subcommand)]
        command: AuditCommand,
    },
    /// List the quirks this build can switch on (feature `quirks` only).
    Quirks,
    /// The node's federation signing key (v1.1 §15.2).
    NodeKey {
        #[command(subcommand)]
        command: NodeKeyCommand,
    },
}

#[derive(Debug, Subcommand)]
enum NodeKeyCommand {
    /// Replace the active node signing key by a fresh one (stop the node first); the old key
    /// stays in the node document as `retired` (v1.0 §7.4). Peers pick the new key up when
    /// they next re-fetch the node document (on the first request naming it).
    Rotate {
        /// The data directory holding `loom.db`.
        #[arg(long)]
        data: PathBuf,
    },
}

#[derive(Debug, Subcommand)]
enum AuditCommand {
    /// Walk the hash chain of a store's audit log.
    Verify {
        /// The data directory holding `loom.db`.
        #[arg(long)]
        data: PathBuf,
    },
    /// After review, re-anchor a log the node refused to start on: record an
    /// `audit.reanchored` entry naming the checkpoint it replaces, then sign the head.
    Anchor {
        /// The data directory holding `loom.db` (the node must not be running on it).
        #[arg(long)]
        data: PathBuf,
        /// The node's domain, when the directory has no checkpoint to take it from.
        #[arg(long)]
        domain: Option<String>,
    },
}

#[derive(Debug, Clone, Copy, Default, ValueEnum)]
enum LogFormat {
    /// Human-readable lines.
    #[default]
    Text,
    /// One JSON object per line.
    Json,
}

#[derive(Debug, Clone, Args)]
struct ServeArgs {
    /// TOML configuration file; flags given here override it.
    #[arg(long, value_name = "FILE.toml")]
    config: Option<PathBuf>,
    /// Address to listen on (port 0 picks a free port; the start log names it).
    #[arg(long, value_name = "ADDR")]
    listen: Option<SocketAddr>,
    /// The node's domain (identities `loom://name@DOMAIN` are local).
    #[arg(long)]
    domain: Option<String>,
    /// Data directory for the durable SQLite store.
    #[arg(long, value_name = "DIR", conflicts_with = "memory")]
    data: Option<PathBuf>,
    /// Keep everything in memory (gone when the node stops).
    #[arg(long)]
    memory: bool,
    /// PEM certificate chain (with --tls-key).
    #[arg(
        long,
        value_name = "FILE",
        requires = "tls_key",
        conflicts_with = "tls_self_signed"
    )]
    tls_cert: Option<PathBuf>,
    /// PEM private key (with --tls-cert).
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// Serve TLS 1.3 with a certificate made at start-up for the domain and localhost.
    #[arg(long)]
    tls_self_signed: bool,
    /// Public base URL advertised to clients.
    #[arg(long, value_name = "URL")]
    public_url: Option<String>,
    /// Seed for the node's RNG (IDs, tokens, a new node key); random when absent.
    #[arg(long, value_name = "N")]
    seed: Option<u64>,
    /// A federation peer: `DOMAIN=BASE_URL` (repeatable), e.g. `b.test=http://127.0.0.1:8788`.
    #[arg(long = "peer", value_name = "DOMAIN=URL")]
    peers: Vec<String>,
    /// Allow plain-http peers on loopback or private addresses (development, tests).
    #[arg(long)]
    allow_private_http: bool,
    /// Connect to DOMAIN at IP:PORT instead of resolving it (repeatable, like curl's
    /// `--resolve`); TLS still checks the certificate for DOMAIN.
    #[arg(long = "resolve", value_name = "DOMAIN=IP:PORT")]
    resolve: Vec<String>,
    /// Discover peers not given by --peer through DNS SRV/TXT records (v1.1 §15.1), asking
    /// this server (`IP:PORT`, or `IP` for port 53); off by default.
    #[arg(long, value_name = "ADDR")]
    dns_server: Option<String>,
    /// PEM file of extra trust anchors for peers' TLS certificates (repeatable).
    #[arg(long = "peer-ca", value_name = "FILE.pem")]
    peer_ca: Vec<PathBuf>,
    /// Do not trust the operating system's root certificates for peers (only --peer-ca).
    #[arg(long)]
    no_native_roots: bool,
    /// Federation policy mode: open, allowlist or quarantine (v1.1 §15.2).
    #[arg(long, value_name = "MODE")]
    federation_policy: Option<String>,
    /// Store-and-forward time-to-live in seconds (v1.1 §15.6; default 259200 = 72 h).
    #[arg(long, value_name = "SECS")]
    federation_ttl: Option<u64>,
    /// Delay before the first retry of a failed delivery, in milliseconds (doubles per failure).
    #[arg(long, value_name = "MS")]
    federation_retry_base_ms: Option<u64>,
    /// Log format; the filter comes from `LOOM_LOG` (default `info`).
    #[arg(long, value_enum, default_value_t)]
    log_format: LogFormat,
    #[command(flatten)]
    envelope_limits: EnvelopeLimitArgs,
}

/// Per-envelope limits (`[limits]` in the configuration file; node README). Each refusal is
/// `PAYLOAD_TOO_LARGE` naming the limit (v1.1 §24.2); 0 turns a limit off.
#[derive(Debug, Clone, Args)]
struct EnvelopeLimitArgs {
    /// Largest envelope, in bytes of its RFC 8785 form (default 262144).
    #[arg(long, value_name = "BYTES")]
    max_envelope_bytes: Option<usize>,
    /// Most `to` entries per envelope, every role (default 1000).
    #[arg(long, value_name = "N")]
    max_recipients: Option<usize>,
    /// Most distinct recipient domains per envelope: federation fan-out (default 100).
    #[arg(long, value_name = "N")]
    max_recipient_domains: Option<usize>,
    /// Most `audience.identities` entries (default 1000).
    #[arg(long, value_name = "N")]
    max_audience_identities: Option<usize>,
    /// Most `attachments` entries (default 100).
    #[arg(long, value_name = "N")]
    max_attachments: Option<usize>,
    /// Most `references` entries, all lists together (default 1000).
    #[arg(long, value_name = "N")]
    max_references: Option<usize>,
    /// Deepest JSON nesting in an envelope; the envelope object is 1 (default 32).
    #[arg(long, value_name = "N")]
    max_json_depth: Option<usize>,
    /// Longest array anywhere in an envelope, extension data included (default 1000).
    #[arg(long, value_name = "N")]
    max_array_len: Option<usize>,
    /// Most JSON values in one envelope (default 20000).
    #[arg(long, value_name = "N")]
    max_json_nodes: Option<usize>,
}

impl EnvelopeLimitArgs {
    /// Applies every given flag to `l`.
    fn apply(&self, l: &mut loom_node::config::Limits) {
        let set = |target: &mut usize, flag: Option<usize>| {
            if let Some(v) = flag {
                *target = v;
            }
        };
        set(&mut l.envelope.max_envelope_bytes, self.max_envelope_bytes);
        set(&mut l.envelope.max_recipients, self.max_recipients);
        set(
            &mut l.envelope.max_recipient_domains,
            self.max_recipient_domains,
        );
        set(
            &mut l.envelope.max_audience_identities,
            self.max_audience_identities,
        );
        set(&mut l.envelope.max_attachments, self.max_attachments);
        set(&mut l.envelope.max_references, self.max_references);
        set(&mut l.envelope.max_json_depth, self.max_json_depth);
        set(&mut l.envelope.max_array_len, self.max_array_len);
        set(&mut l.envelope.max_json_nodes, self.max_json_nodes);
    }
}

impl ServeArgs {
    /// The file's configuration (or the defaults) with every given flag applied on top.
    fn config(&self) -> Result<NodeConfig, String> {
        let mut c = match &self.config {
            Some(path) => {
                let text = std::fs::read_to_string(path)
                    .map_err(|e| format!("cannot read config {}: {e}", path.display()))?;
                NodeConfig::from_toml(&text)
                    .map_err(|e| format!("config {}: {e}", path.display()))?
            }
            None => NodeConfig::default(),
        };
        if let Some(l) = self.listen {
            c.listen = l;
        }
        if let Some(d) = &self.domain {
            c.domain.clone_from(d);
        }
        if let Some(dir) = &self.data {
            c.storage = Storage::Dir(dir.clone());
        }
        if self.memory {
            c.storage = Storage::Memory;
        }
        if let (Some(cert), Some(key)) = (&self.tls_cert, &self.tls_key) {
            c.tls = Some(TlsSettings::Files {
                cert: cert.clone(),
                key: key.clone(),
            });
        }
        if self.tls_self_signed {
            c.tls = Some(TlsSettings::SelfSigned);
        }
        if let Some(u) = &self.public_url {
            c.public_url = Some(u.clone());
        }
        if let Some(s) = self.seed {
            c.seed = Some(s);
        }
        for p in &self.peers {
            let (domain, url) = p
                .split_once('=')
                .ok_or_else(|| format!("--peer {p:?}: expected DOMAIN=URL"))?;
            c.federation
                .peers
                .insert(domain.trim().to_ascii_lowercase(), url.trim().to_owned());
        }
        if self.allow_private_http {
            c.federation.allow_private_http = true;
        }
        for r in &self.resolve {
            let (domain, target) = r
                .split_once('=')
                .ok_or_else(|| format!("--resolve {r:?}: expected DOMAIN=IP:PORT"))?;
            c.federation
                .resolve
                .insert(domain.trim().to_ascii_lowercase(), target.trim().to_owned());
        }
        if let Some(d) = &self.dns_server {
            c.federation.dns_server = Some(d.trim().to_owned());
        }
        c.federation.peer_ca.extend(self.peer_ca.iter().cloned());
        if self.no_native_roots {
            c.federation.native_roots = false;
        }
        if let Some(m) = &self.federation_policy {
            c.federation_policy.clone_from(m);
        }
        if let Some(t) = self.federation_ttl {
            c.federation.ttl_secs = t;
        }
        if let Some(ms) = self.federation_retry_base_ms {
            c.federation.retry_base_ms = ms;
        }
        self.envelope_limits.apply(&mut c.limits);
        c.check()?;
        Ok(c)
    }
}

/// mimalloc instead of the system allocator: with glibc malloc, allocation and
/// consolidation were about a fifth of the node's CPU per envelope (perf, issue 14).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        None => serve(cli.serve),
        Some(Command::Serve(args)) => serve(*args),
        Some(Command::Audit {
            command: AuditCommand::Verify { data },
        }) => audit_verify(&data),
        Some(Command::Audit {
            command: AuditCommand::Anchor { data, domain },
        }) => audit_anchor(&data, domain.as_deref()),
        Some(Command::Quirks) => quirks(),
        Some(Command::NodeKey {
            command: NodeKeyCommand::Rotate { data },
        }) => node_key_rotate(&data),
    }
}

fn init_logging(format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_env("LOOM_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    match format {
        LogFormat::Text => builder.with_ansi(std::io::stderr().is_terminal()).init(),
        LogFormat::Json => builder.event_format(json_log::JsonLines).init(),
    }
}

fn serve(args: ServeArgs) -> ExitCode {
    init_logging(args.log_format);
    let config = match args.config() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("loom-node: {e}");
            return ExitCode::from(2);
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("loom-node: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(config)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e @ StartError::Audit(_)) => {
            eprintln!("loom-node: {e}");
            ExitCode::from(AUDIT_MISMATCH_EXIT)
        }
        Err(e) => {
            eprintln!("loom-node: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run(config: NodeConfig) -> Result<(), StartError> {
    // The only OS randomness the node reads: its seed, unless one is given (DESIGN.md §3).
    let seed = config.seed.unwrap_or_else(os_seed);
    let tls = match &config.tls {
        Some(settings) => {
            Some(loom_node::tls::server_tls(settings, &config.domain).map_err(|e| e.to_string())?)
        }
        None => None,
    };
    let listen = config.listen;
    let domain = config.domain.clone();
    let storage = match &config.storage {
        Storage::Memory => "memory".to_owned(),
        Storage::Dir(d) => d.display().to_string(),
    };
    let max_connections = config.connections.max_connections;
    let node = Node::builder(config, Env::new(Arc::new(SystemClock), seed)).build()?;
    if let Some(warning) = loom_node::net::descriptor_limit()
        .and_then(|soft| loom_node::net::descriptor_warning(max_connections, soft))
    {
        tracing::warn!("{warning}");
    }
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .map_err(|e| format!("cannot listen on {listen}: {e}"))?;
    let bound = listener
        .local_addr()
        .map_err(|e| format!("cannot read the bound address: {e}"))?;
    let scheme = if tls.is_some() { "https" } else { "http" };
    // Install the SIGINT handler before announcing the address, so a Ctrl-C that follows the
    // announcement is always a clean shutdown, never the default kill.
    #[cfg(unix)]
    let mut interrupt = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())
        .map_err(|e| format!("cannot watch for Ctrl-C: {e}"))?;
    tracing::info!(
        listen = %bound,
        %scheme,
        %domain,
        %storage,
        "loom-node listening on {scheme}://{bound} for domain {domain}"
    );
    let shutdown = async move {
        #[cfg(unix)]
        interrupt.recv().await;
        #[cfg(not(unix))]
        if let Err(e) = tokio::signal::ctrl_c().await {
            tracing::warn!(error = %e, "cannot watch for Ctrl-C; stop the process to end");
            std::future::pending::<()>().await;
        }
        tracing::info!("Ctrl-C: shutting down");
    };
    let acceptor = tls.map(|t| t.acceptor);
    let smtp = match node.service().bridge() {
        Some(b) => {
            let at = b.config.listen;
            let smtp = tokio::net::TcpListener::bind(at)
                .await
                .map_err(|e| format!("cannot listen for SMTP on {at}: {e}"))?;
            let bound = smtp
                .local_addr()
                .map_err(|e| format!("cannot read the bound SMTP address: {e}"))?;
            tracing::info!(
                smtp = %bound,
                mail_domain = %b.domain,
                "email bridge listening on smtp://{bound}; publish TXT {} \"{}\" for DKIM",
                b.dkim.dns_name(),
                b.dkim.dns_record()
            );
            let (node, acceptor) = (node.clone(), acceptor.clone());
            Some(tokio::spawn(async move {
                node.serve_smtp(smtp, acceptor).await
            }))
        }
        None => None,
    };
    let served = node
        .serve(listener, acceptor, shutdown)
        .await
        .map_err(|e| StartError::Setup(format!("serve: {e}")));
    if let Some(smtp) = smtp {
        smtp.abort();
    }
    served
}

/// A seed from the operating system: the standard library's per-process random hash keys.
fn os_seed() -> u64 {
    use std::hash::{BuildHasher, RandomState};
    RandomState::new().hash_one(0x4c4f_4f4du64)
}

fn node_key_rotate(data: &std::path::Path) -> ExitCode {
    if !data.join("loom.db").exists() {
        eprintln!("loom-node: no store at {}", data.join("loom.db").display());
        return ExitCode::from(2);
    }
    let store = match Store::open(&Storage::Dir(data.to_path_buf())) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("loom-node: {e}");
            return ExitCode::from(2);
        }
    };
    let env = Env::new(Arc::new(SystemClock), os_seed());
    match loom_node::service::Service::rotate_node_key(&store, &env) {
        Ok(key_id) => {
            println!("node signing key rotated: {key_id} is active, the previous key is retired");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("loom-node: {e}");
            ExitCode::from(1)
        }
    }
}

fn audit_anchor(data: &std::path::Path, domain: Option<&str>) -> ExitCode {
    // Writable and locked (no node may run on it meanwhile), but never created here.
    if let Err(e) = Store::open_existing(data) {
        eprintln!("loom-node: {e}");
        return ExitCode::from(2);
    }
    let store = match Store::open(&Storage::Dir(data.to_owned())) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("loom-node: {e}");
            return ExitCode::from(2);
        }
    };
    let at = loom_protocol::clock::Clock::now(&SystemClock).to_rfc3339();
    match audit::reanchor(&store, data, domain, &at) {
        Ok(cp) => {
            println!(
                "audit log re-anchored: signed checkpoint of {} at row {} ({} rows, key {})",
                cp.at, cp.seq, cp.rows, cp.key_id
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("loom-node: {e}");
            ExitCode::from(1)
        }
    }
}

fn audit_verify(data: &std::path::Path) -> ExitCode {
    let store = match Store::open_existing(data) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("loom-node: {e}");
            return ExitCode::from(2);
        }
    };
    let checkpoint = match audit::Checkpoint::read(data) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("loom-node: {e}");
            return ExitCode::from(2);
        }
    };
    // Without a checkpoint only an empty log verifies: a non-empty one has nothing to
    // anchor it (issue 36), and the node refuses to start on it too.
    let verdict = match &checkpoint {
        Some(cp) => audit::verify_anchored(&store.conn(), cp),
        None => audit::verify_at_start(&store.conn(), None).and_then(|v| match v {
            audit::AuditVerdict::Intact { .. } => audit::verify(&store.conn()),
            broken => Ok(broken),
        }),
    };
    match verdict {
        Ok(audit::AuditVerdict::Intact { rows }) => {
            println!("audit log intact: {rows} rows");
            match checkpoint {
                Some(cp) => println!(
                    "anchored: signed checkpoint of {} at row {} ({} rows, key {})",
                    cp.at, cp.seq, cp.rows, cp.key_id
                ),
                None => println!("empty: no checkpoint is needed yet"),
            }
            ExitCode::SUCCESS
        }
        Ok(audit::AuditVerdict::Broken { seq: 0, reason }) => {
            println!("audit log BROKEN: {reason}");
            ExitCode::from(1)
        }
        Ok(audit::AuditVerdict::Broken { seq, reason }) => {
            println!("audit log BROKEN at row {seq}: {reason}");
            ExitCode::from(1)
        }
        Err(e) => {
            eprintln!(
                "loom-node: cannot read the audit log in {}: {e}",
                data.display()
            );
            ExitCode::from(2)
        }
    }
}

#[cfg(feature = "quirks")]
fn quirks() -> ExitCode {
    for q in loom_node::Quirk::ALL {
        println!("{:<36} {}", q.name(), q.reason().replace('\n', " "));
    }
    ExitCode::SUCCESS
}

#[cfg(not(feature = "quirks"))]
fn quirks() -> ExitCode {
    eprintln!("loom-node: this build has no quirks (rebuild with --features quirks)");
    ExitCode::from(2)
}

/// `--log-format json`: one JSON object per event, without extra dependencies.
mod json_log {
    use serde_json::{Map, Value};
    use std::fmt;
    use tracing::field::{Field, Visit};
    use tracing::{Event, Subscriber};
    use tracing_subscriber::fmt::format::Writer;
    use tracing_subscriber::fmt::time::{FormatTime, SystemTime};
    use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
    use tracing_subscriber::registry::LookupSpan;

    /// Formats an event as `{"timestamp", "level", "target", "message", fields…}`.
    #[derive(Debug, Clone, Copy)]
    pub struct JsonLines;

    struct Fields(Map<String, Value>);

    impl Visit for Fields {
        fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
            self.0
                .insert(field.name().to_owned(), Value::String(format!("{value:?}")));
        }
        fn record_str(&mut self, field: &Field, value: &str) {
            self.0
                .insert(field.name().to_owned(), Value::String(value.to_owned()));
        }
        fn record_i64(&mut self, field: &Field, value: i64) {
            self.0.insert(field.name().to_owned(), Value::from(value));
        }
        fn record_u64(&mut self, field: &Field, value: u64) {
            self.0.insert(field.name().to_owned(), Value::from(value));
        }
        fn record_bool(&mut self, field: &Field, value: bool) {
            self.0.insert(field.name().to_owned(), Value::from(value));
        }
    }

    impl<S, N> FormatEvent<S, N> for JsonLines
    where
        S: Subscriber + for<'a> LookupSpan<'a>,
        N: for<'a> FormatFields<'a> + 'static,
    {
        fn format_event(
            &self,
            _ctx: &FmtContext<'_, S, N>,
            mut writer: Writer<'_>,
            event: &Event<'_>,
        ) -> fmt::Result {
            let meta = event.metadata();
            let mut fields = Fields(Map::new());
            let mut ts = String::new();
            if SystemTime.format_time(&mut Writer::new(&mut ts)).is_ok() {
                fields.0.insert("timestamp".into(), ts.into());
            }
            fields
                .0
                .insert("level".into(), meta.level().as_str().into());
            fields.0.insert("target".into(), meta.target().into());
            event.record(&mut fields);
            let line = serde_json::to_string(&Value::Object(fields.0)).map_err(|_| fmt::Error)?;
            writeln!(writer, "{line}")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config_of(args: &[&str]) -> NodeConfig {
        let cli = Cli::try_parse_from(std::iter::once("loom-node").chain(args.iter().copied()))
            .expect("flags parse");
        cli.serve.config().expect("valid config")
    }

    #[test]
    fn per_envelope_limit_flags_override_the_file_and_the_defaults() {
        let defaults = config_of(&["--memory"]).limits;
        assert_eq!(defaults, loom_node::config::Limits::default());
        let dir = std::env::temp_dir().join(format!("loom-node-limits-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("node.toml");
        std::fs::write(&file, "[limits]\nmax_recipients = 50\nmax_array_len = 70\n").unwrap();
        let c = config_of(&[
            "--config",
            file.to_str().unwrap(),
            "--max-recipients",
            "5",
            "--max-recipient-domains",
            "6",
            "--max-audience-identities",
            "7",
            "--max-attachments",
            "8",
            "--max-references",
            "9",
            "--max-json-depth",
            "10",
            "--max-json-nodes",
            "11",
            "--max-envelope-bytes",
            "12",
        ])
        .limits;
        let _ = std::fs::remove_dir_all(&dir);
        let e = c.envelope();
        assert_eq!(
            (
                e.max_recipients,
                e.max_recipient_domains,
                e.max_audience_identities,
                e.max_attachments,
                e.max_references,
                e.max_json_depth,
                e.max_json_nodes,
                e.max_envelope_bytes,
            ),
            (5, 6, 7, 8, 9, 10, 11, 12),
            "flags win"
        );
        assert_eq!(
            e.max_array_len, 70,
            "the file's value where no flag is given"
        );
    }
}
