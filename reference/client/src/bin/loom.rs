//! `loom`: a walkthrough CLI for any LOOM v1.1 node — make a key, register, log in, send,
//! list and read. The only OS randomness (key seeds, envelope-id seeds) and the only wall
//! clock are read here (DESIGN.md §3).
//!
//! Exit codes: 0 success; 1 the node refused (its §24.1 error is printed); 2 usage or local
//! input error; 3 the node could not be reached.

use clap::{Args, Parser, Subcommand};
use loom_client::tls::os_random_32;
use loom_client::{Client, ClientError, EnvelopeFactory, Identity, MessageDraft, Trust, e2ee};
use loom_protocol::clock::SystemClock;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

#[derive(Parser, Debug)]
#[command(
    name = "loom",
    version,
    about = "Talk to a LOOM v1.1 node: keygen, register, login, send, threads, get, add-participant, e2ee"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Write a new Ed25519 key (a 32-byte seed, hex) from OS randomness.
    Keygen {
        /// Where to write the key.
        #[arg(long, value_name = "FILE")]
        out: PathBuf,
        /// Overwrite an existing file.
        #[arg(long)]
        force: bool,
    },
    /// Fetch the node document (GET /.well-known/loom.json, v1.1 §15.2).
    Discover {
        #[command(flatten)]
        conn: Conn,
    },
    /// Register an identity with a signed proof (challenge → POST /v1/identity).
    Register {
        #[command(flatten)]
        conn: Conn,
        #[command(flatten)]
        who: Who,
        /// Identity type (v1.1 §6.3).
        #[arg(long = "type", default_value = "human")]
        kind: String,
        /// Display name (default: the local part).
        #[arg(long)]
        display_name: Option<String>,
        /// Type members as a JSON object (v1.1 §6.3): `{"members": [...], "routing_policy":
        /// "all"}` for a team, `{"operator": "Acme Ltd"}` for a service.
        #[arg(long, value_name = "JSON")]
        members: Option<String>,
        /// For `--type agent`: the delegating identity (v1.1 §6.4) …
        #[arg(long, value_name = "LOOM_URI", requires = "delegator_key")]
        delegator: Option<String>,
        /// … its Ed25519 key file (signs `delegation_signature`) …
        #[arg(long, value_name = "FILE", requires = "delegator")]
        delegator_key: Option<PathBuf>,
        /// … the delegated scopes (§13.2) …
        #[arg(long = "scope", value_name = "SCOPE", default_value = "*")]
        scopes: Vec<String>,
        /// … and when the delegation ends (RFC 3339).
        #[arg(long, value_name = "TIME", default_value = "2099-01-01T00:00:00Z")]
        expires: String,
        /// Also publish an X25519 encryption key (`k_enc_…`, derived from the key file) so
        /// others can encrypt for this identity (E2EE threads, v1.1 §7.4).
        #[arg(long)]
        e2ee: bool,
    },
    /// Log in (challenge → signed nonce → tokens, v1.1 §14.2).
    Login {
        #[command(flatten)]
        conn: Conn,
        #[command(flatten)]
        who: Who,
        /// Identity type recorded in the session (used as `from.type` when sending).
        #[arg(long = "type", default_value = "human")]
        kind: String,
        /// Write a session file (node, identity, key file, tokens) instead of printing tokens.
        #[arg(long, value_name = "FILE")]
        session: Option<PathBuf>,
    },
    /// Send a signed message (POST /v1/envelopes).
    Send {
        #[command(flatten)]
        conn: Conn,
        /// Session file from `loom login --session`.
        #[arg(long, value_name = "FILE")]
        session: PathBuf,
        /// Recipient (repeat for several).
        #[arg(long, value_name = "ADDRESS", required = true)]
        to: Vec<String>,
        /// Message text.
        #[arg(long)]
        text: String,
        /// Reply in this thread (default: start a new one).
        #[arg(long, value_name = "thr_…")]
        thread: Option<String>,
        /// The envelope replied to.
        #[arg(long, value_name = "env_…", requires = "thread")]
        parent: Option<String>,
        /// Encrypt the text end to end for the thread's current members at its key epoch
        /// (the thread must be E2EE: `loom e2ee enable`).
        #[arg(long, requires = "thread")]
        encrypt: bool,
        /// Attach a file (uploaded as a blob readable by the thread; sealed for the members
        /// first with `--encrypt`). Repeat for several.
        #[arg(long, value_name = "FILE")]
        attach: Vec<PathBuf>,
        /// Print the node's whole response.
        #[arg(long)]
        json: bool,
    },
    /// Add a participant to a thread (thread.add_participant@v1, v1.1 §11.2); in an E2EE
    /// thread this moves the key epoch (§10.6).
    AddParticipant {
        #[command(flatten)]
        at: OwnerAt,
        /// The identity to add (`loom://…`).
        #[arg(value_name = "WHO")]
        identity: String,
        /// `participant` or `observer`.
        #[arg(long, default_value = "participant")]
        role: String,
    },
    /// End-to-end encryption of a thread (encryption.epoch@v1, v1.1 §7.4, §11.8).
    E2ee {
        #[command(subcommand)]
        op: E2eeOp,
    },
    /// List threads (GET /v1/threads).
    Threads {
        #[command(flatten)]
        conn: Conn,
        /// Session file.
        #[arg(long, value_name = "FILE")]
        session: PathBuf,
        /// Page size.
        #[arg(long)]
        limit: Option<u32>,
        /// Only threads in this state.
        #[arg(long)]
        state: Option<String>,
        /// Print the node's whole response.
        #[arg(long)]
        json: bool,
    },
    /// Tasks (v1.1 §18.3): create one for an identity (an agent), or watch one move.
    Task {
        #[command(subcommand)]
        op: TaskOp,
    },
    /// Read an envelope (env_…), or a thread and its envelopes (thr_…).
    Get {
        #[command(flatten)]
        conn: Conn,
        /// Session file.
        #[arg(long, value_name = "FILE")]
        session: PathBuf,
        /// `env_…` or `thr_…`.
        id: String,
        /// Download the envelope's attachments into this directory, decrypting those sealed
        /// for the session's identity (`env_…` only).
        #[arg(long, value_name = "DIR")]
        save_attachments: Option<PathBuf>,
    },
}

/// What `loom task` does.
#[derive(Subcommand, Debug)]
enum TaskOp {
    /// Send task.create@v1 assigning work to an identity, then the `assigned` update
    /// (only the creator or the thread owner may assign, v1.0 §17.3).
    Create {
        #[command(flatten)]
        conn: Conn,
        /// Session file (the creator's).
        #[arg(long, value_name = "FILE")]
        session: PathBuf,
        /// The assignee (`loom://bot.bob@b.test`).
        #[arg(long, value_name = "ADDRESS")]
        to: String,
        /// What the task is called (default: the goal, or the PLSP program's name).
        #[arg(long)]
        title: Option<String>,
        /// Work: run this process package (by name) …
        #[arg(long, value_name = "NAME", requires = "goal", conflicts_with = "plsp")]
        process: Option<String>,
        /// … with this goal.
        #[arg(long, requires = "process")]
        goal: Option<String>,
        /// Work: run the PLSP program in this JSON file (a loom-plsp scenario without `http`).
        #[arg(long, value_name = "FILE")]
        plsp: Option<PathBuf>,
        /// Create the task in this thread (default: a new one).
        #[arg(long, value_name = "thr_…")]
        thread: Option<String>,
        /// Print only `TASK_ID THREAD_ID` (for scripts).
        #[arg(long)]
        ids: bool,
    },
    /// Print a task's state updates as they arrive, until it reaches a terminal state.
    /// Exit 0 when it completed, 1 when it ended otherwise or did not end in time.
    Watch {
        #[command(flatten)]
        conn: Conn,
        /// Session file.
        #[arg(long, value_name = "FILE")]
        session: PathBuf,
        /// The task's thread.
        #[arg(long, value_name = "thr_…")]
        thread: String,
        /// The task (the id of its task.create@v1 envelope).
        #[arg(value_name = "env_…")]
        task: String,
        /// Give up after this many seconds.
        #[arg(long, value_name = "SECS", default_value_t = 120)]
        wait: u64,
    },
}

/// What `loom e2ee` does.
#[derive(Subcommand, Debug)]
enum E2eeOp {
    /// Make a thread end-to-end encrypted at its current key epoch: an epoch secret wrapped
    /// for every current member (each must publish an encryption key).
    Enable {
        #[command(flatten)]
        at: OwnerAt,
        /// The E2EE profile (an id or alias, v1.1 §7.4.1).
        #[arg(long, default_value = "loom-e2ee-x25519-xchacha20-v1")]
        profile: String,
    },
    /// Move an E2EE thread to the next key epoch, wrapped for the current members.
    Rotate {
        #[command(flatten)]
        at: OwnerAt,
    },
}

/// A thread owner's session and the thread an operation is for.
#[derive(Args, Debug)]
struct OwnerAt {
    #[command(flatten)]
    conn: Conn,
    /// Session file (a thread owner's).
    #[arg(long, value_name = "FILE")]
    session: PathBuf,
    /// The thread.
    #[arg(long, value_name = "thr_…")]
    thread: String,
}

/// How to reach the node.
#[derive(Args, Debug)]
struct Conn {
    /// Node base URL (`http://127.0.0.1:8787`, `https://loom.example.org`); defaults to the
    /// session's node where there is one.
    #[arg(long, value_name = "URL")]
    node: Option<String>,
    /// Trust the certificates in this PEM file (e.g. a dev node's self-signed certificate).
    #[arg(long, value_name = "PEM")]
    ca_cert: Option<PathBuf>,
    /// Accept any TLS certificate (throwaway dev nodes only).
    #[arg(long, conflicts_with = "ca_cert")]
    insecure_tls: bool,
    /// Seconds allowed per request.
    #[arg(long, default_value_t = 30)]
    timeout: u64,
    /// Print every HTTP exchange (request and response) on stderr.
    #[arg(long, short)]
    verbose: bool,
}

/// Which identity and key.
#[derive(Args, Debug)]
struct Who {
    /// The identity (`loom://alice@example.test`).
    #[arg(long, value_name = "ADDRESS")]
    identity: String,
    /// Key file from `loom keygen`.
    #[arg(long, value_name = "FILE")]
    key: PathBuf,
    /// Key id (default `k_sign_<local>_1`).
    #[arg(long, value_name = "k_sign_…")]
    key_id: Option<String>,
}

/// A failure and its exit code.
struct Failure {
    code: u8,
    error: ClientError,
}

impl From<ClientError> for Failure {
    fn from(error: ClientError) -> Self {
        let code = match &error {
            ClientError::Api { .. } | ClientError::BadResponse { .. } | ClientError::Http(_) => 1,
            ClientError::Url(_) | ClientError::Input(_) => 2,
            ClientError::Connect { .. } | ClientError::Tls(_) | ClientError::Timeout { .. } => 3,
        };
        Failure { code, error }
    }
}

fn input(msg: String) -> Failure {
    Failure {
        code: 2,
        error: ClientError::Input(msg),
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("loom: cannot start the runtime: {e}");
            return ExitCode::from(2);
        }
    };
    let verbose = match &cli.command {
        Command::Keygen { .. } => false,
        Command::Discover { conn }
        | Command::Register { conn, .. }
        | Command::Login { conn, .. }
        | Command::Send { conn, .. }
        | Command::Threads { conn, .. }
        | Command::Get { conn, .. }
        | Command::Task {
            op: TaskOp::Create { conn, .. } | TaskOp::Watch { conn, .. },
        } => conn.verbose,
        Command::AddParticipant { at, .. }
        | Command::E2ee {
            op: E2eeOp::Enable { at, .. } | E2eeOp::Rotate { at },
        } => at.conn.verbose,
    };
    match rt.block_on(run(cli.command)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(f) => {
            report(&f.error, verbose);
            ExitCode::from(f.code)
        }
    }
}

/// Prints an error; a node refusal is printed field by field (v1.1 §24.1).
fn report(e: &ClientError, verbose: bool) {
    match e {
        ClientError::Api {
            error: Some(body),
            transcript,
        } => {
            eprintln!(
                "loom: the node refused {} {}: HTTP {}",
                transcript.method, transcript.path, transcript.status
            );
            let line = |k: &str, v: &Option<String>| {
                if let Some(v) = v {
                    eprintln!("  {k:<8} {v}");
                }
            };
            line("code", &body.code);
            line("message", &body.message);
            line("field", &body.field);
            line("reason", &body.reason);
            line("section", &body.section);
            line("request", &body.request_id);
        }
        other => eprintln!("loom: {other}"),
    }
    if verbose && let Some(t) = e.transcript() {
        eprintln!("{t}");
    }
}

/// The session file written by `loom login --session`.
fn write_session(path: &Path, v: &Value) -> Result<(), Failure> {
    let text = serde_json::to_string_pretty(v).map_err(|e| input(e.to_string()))?;
    std::fs::write(path, text + "\n")
        .map_err(|e| input(format!("cannot write session file {}: {e}", path.display())))
}

struct SessionFile {
    node: Option<String>,
    identity: Identity,
    access_token: String,
}

fn read_session(path: &Path) -> Result<SessionFile, Failure> {
    let bad = |why: String| input(format!("session file {}: {why}", path.display()));
    let text = std::fs::read_to_string(path).map_err(|e| bad(e.to_string()))?;
    let v: Value = serde_json::from_str(&text).map_err(|e| bad(format!("not JSON: {e}")))?;
    let s = |k: &str| {
        v.get(k)
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or_else(|| {
                bad(format!(
                    "no string {k:?}; log in again with `loom login --session`"
                ))
            })
    };
    let key_file = PathBuf::from(s("key_file")?);
    let identity = load_identity(&s("identity")?, &key_file, Some(&s("key_id")?))?
        .with_type(&s("type").unwrap_or_else(|_| "human".into()));
    Ok(SessionFile {
        node: v.get("node").and_then(Value::as_str).map(str::to_owned),
        identity,
        access_token: s("access_token")?,
    })
}

fn load_identity(address: &str, key: &Path, key_id: Option<&str>) -> Result<Identity, Failure> {
    let text = std::fs::read_to_string(key)
        .map_err(|e| input(format!("cannot read key file {}: {e}", key.display())))?;
    let seed = loom_client::identity::parse_key_file(&text)
        .map_err(|e| input(format!("{}: {e}", key.display())))?;
    let mut ident = Identity::from_seed(address, &seed)?;
    if let Some(k) = key_id {
        ident = ident.with_key_id(k)?;
    }
    Ok(ident)
}

fn client(conn: &Conn, session_node: Option<&str>) -> Result<Client, Failure> {
    let url = conn
        .node
        .as_deref()
        .or(session_node)
        .ok_or_else(|| input("--node URL is required".into()))?;
    let mut c = Client::tcp(url)?.with_timeout(Duration::from_secs(conn.timeout));
    if let Some(ca) = &conn.ca_cert {
        c = c.with_trust(&Trust::pem_file(ca)?)?;
    } else if conn.insecure_tls {
        c = c.with_trust(&Trust::InsecureAnyCertificate)?;
    }
    Ok(c)
}

fn print_json(v: &Value) {
    println!(
        "{}",
        serde_json::to_string_pretty(v).unwrap_or_else(|_| v.to_string())
    );
}

fn verbose_print(conn: &Conn, t: &loom_client::Transcript) {
    if conn.verbose {
        eprintln!("{t}");
    }
}

async fn run(command: Command) -> Result<(), Failure> {
    match command {
        Command::Keygen { out, force } => {
            if out.exists() && !force {
                return Err(input(format!(
                    "{} exists; pass --force to overwrite it",
                    out.display()
                )));
            }
            let seed = os_random_32()?;
            std::fs::write(&out, format!("{}\n", hex::encode(seed)))
                .map_err(|e| input(format!("cannot write {}: {e}", out.display())))?;
            restrict_permissions(&out);
            println!("wrote a new Ed25519 key to {}", out.display());
            Ok(())
        }
        Command::Discover { conn } => {
            let mut c = client(&conn, None)?;
            let r = c.node_document().await?;
            verbose_print(&conn, &r.transcript);
            print_json(&r.body);
            Ok(())
        }
        Command::Register {
            conn,
            who,
            kind,
            display_name,
            members,
            delegator,
            delegator_key,
            scopes,
            expires,
            e2ee,
        } => {
            let mut ident =
                load_identity(&who.identity, &who.key, who.key_id.as_deref())?.with_type(&kind);
            if e2ee {
                ident = ident.with_encryption_key();
            }
            if let Some(n) = &display_name {
                ident = ident.with_display_name(n);
            }
            if let Some(m) = &members {
                let v: Value = serde_json::from_str(m)
                    .ok()
                    .filter(Value::is_object)
                    .ok_or_else(|| input(format!("--members: not a JSON object: {m}")))?;
                ident = ident.with_members(v);
            }
            if let (Some(d), Some(key)) = (&delegator, &delegator_key) {
                let boss = load_identity(d, key, None)?;
                let m = boss.delegate_agent(ident.address(), &scopes, &expires);
                ident = ident.with_members(m);
            }
            let mut c = client(&conn, None)?;
            let r = ident.register(&mut c).await?;
            verbose_print(&conn, &r.transcript);
            println!(
                "registered {} (type {}, key {})",
                ident.address(),
                ident.kind(),
                ident.key_id()
            );
            Ok(())
        }
        Command::Login {
            conn,
            who,
            kind,
            session,
        } => {
            let ident = load_identity(&who.identity, &who.key, who.key_id.as_deref())?;
            let mut c = client(&conn, None)?;
            let s = ident.login(&mut c).await?;
            let key_file = std::fs::canonicalize(&who.key).unwrap_or(who.key.clone());
            let v = json!({
                "node": c.url().to_string(),
                "identity": s.identity,
                "key_id": s.key_id,
                "type": kind,
                "key_file": key_file.to_string_lossy(),
                "access_token": s.access_token,
                "refresh_token": s.refresh_token,
                "expires_in": s.expires_in,
            });
            match session {
                Some(path) => {
                    write_session(&path, &v)?;
                    restrict_permissions(&path);
                    println!(
                        "logged in as {}; session written to {}",
                        s.identity,
                        path.display()
                    );
                }
                None => print_json(&v),
            }
            Ok(())
        }
        Command::Send {
            conn,
            session,
            to,
            text,
            thread,
            parent,
            encrypt,
            attach,
            json,
        } => {
            let sf = read_session(&session)?;
            let mut c = client(&conn, sf.node.as_deref())?;
            c.set_token(Some(sf.access_token));
            let mut factory = factory()?;
            let draft = MessageDraft {
                thread_id: thread.clone(),
                parent_id: parent,
                to,
                text,
            };
            let thread_id = draft.thread_id.clone();
            let (mut env, keys) = match (encrypt, &thread) {
                (true, Some(t)) => {
                    let keys = e2ee::thread_keys(&mut c, t).await?;
                    let env = e2ee::sealed_message(
                        &mut factory,
                        &sf.identity,
                        &draft,
                        &keys,
                        os_random_32()?,
                    )?;
                    (env, Some(keys))
                }
                _ => (factory.message(&sf.identity, &draft)?, None),
            };
            if !attach.is_empty() {
                let thread_id = env["thread_id"].as_str().map(str::to_owned).or(thread_id);
                let counter = env["content"]["replay_counter"].as_u64().unwrap_or(0);
                let mut entries = Vec::new();
                for path in &attach {
                    let bytes = std::fs::read(path)
                        .map_err(|e| input(format!("--attach {}: {e}", path.display())))?;
                    let filename = path
                        .file_name()
                        .map(|n| n.to_string_lossy().into_owned())
                        .unwrap_or_else(|| "attachment".into());
                    let (upload, encryption) = match &keys {
                        Some(k) => {
                            let (b, e) =
                                e2ee::seal_attachment(k, counter, &bytes, os_random_32()?)?;
                            (b, Some(e))
                        }
                        None => (bytes, None),
                    };
                    let mime = "application/octet-stream";
                    let done = c
                        .upload_blob(&filename, mime, thread_id.as_deref(), &upload)
                        .await?;
                    verbose_print(&conn, &done.transcript);
                    let mut entry = json!({
                        "id": factory.attachment_id(),
                        "filename": filename,
                        "mime_type": mime,
                        "size_bytes": upload.len(),
                        "hash": done.str("hash")?,
                        "blob_id": done.str("blob_id")?,
                        "inline": false,
                    });
                    if let Some(e) = encryption {
                        entry["encryption"] = e;
                    }
                    entries.push(entry);
                }
                env["attachments"] = Value::Array(entries);
                sf.identity.sign(&mut env)?;
            }
            let r = c.send_envelope(&env).await?;
            verbose_print(&conn, &r.transcript);
            if json {
                print_json(&r.body);
            } else {
                let field = |p: &str| {
                    r.body
                        .pointer(p)
                        .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned))
                        .unwrap_or_else(|| "?".into())
                };
                println!(
                    "sent {} in thread {} (event_seq {})",
                    field("/id"),
                    field("/thread_id"),
                    field("/meta/event_seq")
                );
            }
            Ok(())
        }
        Command::Task { op } => task(op).await,
        Command::Threads {
            conn,
            session,
            limit,
            state,
            json,
        } => {
            let sf = read_session(&session)?;
            let mut c = client(&conn, sf.node.as_deref())?;
            c.set_token(Some(sf.access_token));
            let limit = limit.map(|l| l.to_string());
            let mut q: Vec<(&str, &str)> = Vec::new();
            if let Some(l) = &limit {
                q.push(("limit", l));
            }
            if let Some(s) = &state {
                q.push(("state", s));
            }
            let r = c.list_threads(&q).await?;
            verbose_print(&conn, &r.transcript);
            if json {
                print_json(&r.body);
                return Ok(());
            }
            let threads = r
                .body
                .get("threads")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            if threads.is_empty() {
                println!("no threads");
            }
            for t in threads {
                let s = |k: &str| t.get(k).and_then(Value::as_str).unwrap_or("-").to_owned();
                let n = t.get("envelope_count").and_then(Value::as_u64).unwrap_or(0);
                let who: Vec<&str> = t
                    .get("participants")
                    .and_then(Value::as_array)
                    .map(|ps| ps.iter().filter_map(|p| p["identity"].as_str()).collect())
                    .unwrap_or_default();
                // Two lines a thread, each within 80 columns (issue 18): the id, state, size and
                // last update; then the participants, wrapped.
                println!(
                    "{}  {:<8}{:>4} env  {}",
                    s("id"),
                    s("state"),
                    n,
                    s("updated_at")
                );
                for line in wrap_list(&who, 76) {
                    println!("    {line}");
                }
            }
            Ok(())
        }
        Command::Get {
            conn,
            session,
            id,
            save_attachments,
        } => {
            let sf = read_session(&session)?;
            let mut c = client(&conn, sf.node.as_deref())?;
            c.set_token(Some(sf.access_token));
            if id.starts_with("thr_") {
                let t = c.get_thread(&id).await?;
                verbose_print(&conn, &t.transcript);
                let e = c.thread_envelopes(&id).await?;
                verbose_print(&conn, &e.transcript);
                // The list route answers `{envelopes: [...], next_cursor}`; show the array itself.
                let envelopes = match e.body.get("envelopes") {
                    Some(Value::Array(list)) => Value::Array(
                        list.iter()
                            .map(|env| e2ee::with_decrypted(env.clone(), &sf.identity))
                            .collect(),
                    ),
                    _ => e.body,
                };
                print_json(&json!({"thread": t.body, "envelopes": envelopes}));
            } else {
                let r = c.get_envelope(&id).await?;
                verbose_print(&conn, &r.transcript);
                if let Some(dir) = &save_attachments {
                    save_all(&mut c, &r.body, &sf.identity, dir).await?;
                }
                print_json(&e2ee::with_decrypted(r.body, &sf.identity));
            }
            Ok(())
        }
        Command::AddParticipant { at, identity, role } => {
            let OwnerAt {
                conn,
                session,
                thread,
            } = at;
            let sf = read_session(&session)?;
            let mut c = client(&conn, sf.node.as_deref())?;
            c.set_token(Some(sf.access_token));
            let op = factory()?.thread_op(
                &sf.identity,
                &thread,
                "thread.add_participant@v1",
                json!({"identity": identity, "role": role}),
            )?;
            let r = c.send_envelope(&op).await?;
            verbose_print(&conn, &r.transcript);
            println!("added {identity} to {thread} as {role}");
            Ok(())
        }
        Command::E2ee { op } => {
            let (at, profile) = match op {
                E2eeOp::Enable { at, profile } => (at, Some(profile)),
                E2eeOp::Rotate { at } => (at, None),
            };
            let OwnerAt {
                conn,
                session,
                thread,
            } = at;
            let sf = read_session(&session)?;
            let mut c = client(&conn, sf.node.as_deref())?;
            c.set_token(Some(sf.access_token));
            let mut keys = e2ee::thread_keys(&mut c, &thread).await?;
            let epoch = match (&profile, keys.enabled) {
                (Some(_), true) => {
                    return Err(input(format!(
                        "thread {thread} is already end-to-end encrypted (epoch {}); `loom e2ee rotate` moves it to the next epoch",
                        keys.epoch
                    )));
                }
                (None, false) => {
                    return Err(input(format!(
                        "thread {thread} is not end-to-end encrypted; `loom e2ee enable` first"
                    )));
                }
                (Some(_), false) => keys.epoch,
                (None, true) => keys.epoch + 1,
            };
            if let Some(p) = &profile {
                keys.profile = loom_protocol::e2ee::Profile::resolve(p, "--profile")
                    .map_err(|e| input(e.to_string()))?;
            }
            let op = e2ee::epoch_operation(
                &mut factory()?,
                &sf.identity,
                &keys,
                epoch,
                os_random_32()?,
            )?;
            let r = c.send_envelope(&op).await?;
            verbose_print(&conn, &r.transcript);
            println!(
                "thread {thread} is end-to-end encrypted: {} epoch {epoch}, keys for {}",
                keys.profile.id(),
                keys.members
                    .iter()
                    .map(|m| m.to.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            Ok(())
        }
    }
}

/// Downloads `envelope`'s attachments into `dir` (file names reduced to their last
/// component), opening the encrypted ones with `me`'s key; reports each on stderr.
async fn save_all(
    c: &mut Client,
    envelope: &Value,
    me: &Identity,
    dir: &Path,
) -> Result<(), Failure> {
    std::fs::create_dir_all(dir).map_err(|e| input(format!("{}: {e}", dir.display())))?;
    // A node may wrap the envelope (`{envelope: …}`, v1.1 §16.1 leaves the body open).
    let body = envelope
        .get("envelope")
        .filter(|e| e.is_object())
        .unwrap_or(envelope);
    for att in body["attachments"].as_array().into_iter().flatten() {
        let blob = att["blob_id"].as_str().unwrap_or_default();
        let bytes = c.download_blob(blob).await?;
        let bytes = if att.pointer("/encryption/encrypted") == Some(&Value::Bool(true)) {
            e2ee::open_attachment(att, &bytes, me)
                .map_err(|why| input(format!("attachment {blob}: {why}")))?
        } else {
            bytes
        };
        let name = Path::new(att["filename"].as_str().unwrap_or("attachment"))
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| blob.to_owned());
        let path = dir.join(name);
        std::fs::write(&path, &bytes).map_err(|e| input(format!("{}: {e}", path.display())))?;
        eprintln!("saved {} ({} bytes)", path.display(), bytes.len());
    }
    Ok(())
}

/// `loom task create` / `loom task watch`.
async fn task(op: TaskOp) -> Result<(), Failure> {
    match op {
        TaskOp::Create {
            conn,
            session,
            to,
            title,
            process,
            goal,
            plsp,
            thread,
            ids,
        } => {
            let (work, named) = match (process, goal, plsp) {
                (Some(p), Some(g), None) => {
                    (json!({"kind": "process", "package": p, "goal": g}), g)
                }
                (None, None, Some(file)) => {
                    let text = std::fs::read_to_string(&file)
                        .map_err(|e| input(format!("--plsp {}: {e}", file.display())))?;
                    let program: Value = serde_json::from_str(&text)
                        .map_err(|e| input(format!("--plsp {}: {e}", file.display())))?;
                    let name = program["name"]
                        .as_str()
                        .unwrap_or("PLSP program")
                        .to_owned();
                    (json!({"kind": "plsp", "program": program}), name)
                }
                _ => {
                    return Err(input(
                        "name the work: --process NAME --goal TEXT, or --plsp FILE".into(),
                    ));
                }
            };
            let title = title.unwrap_or(named);
            let sf = read_session(&session)?;
            let mut c = client(&conn, sf.node.as_deref())?;
            c.set_token(Some(sf.access_token));
            let mut factory = factory()?;
            let draft = MessageDraft {
                thread_id: thread,
                parent_id: None,
                to: vec![to.clone()],
                text: title.clone(),
            };
            let create = factory.task(
                &sf.identity,
                &draft,
                "task.create@v1",
                json!({"title": title, "assignee": to, "work": work}),
            )?;
            let r = c.send_envelope(&create).await?;
            verbose_print(&conn, &r.transcript);
            let task_id = create["id"].as_str().unwrap_or_default().to_owned();
            let thread_id = create["thread_id"].as_str().unwrap_or_default().to_owned();
            let assign = factory.task(
                &sf.identity,
                &MessageDraft {
                    thread_id: Some(thread_id.clone()),
                    parent_id: Some(task_id.clone()),
                    to: vec![to.clone()],
                    text: format!("assigned to {to}"),
                },
                "task.state_update@v1",
                json!({"task_id": task_id, "state": "assigned", "assignee": to}),
            )?;
            let r = c.send_envelope(&assign).await?;
            verbose_print(&conn, &r.transcript);
            if ids {
                println!("{task_id} {thread_id}");
            } else {
                println!("task {task_id} in thread {thread_id}: created and assigned to {to}");
            }
            Ok(())
        }
        TaskOp::Watch {
            conn,
            session,
            thread,
            task,
            wait,
        } => {
            let sf = read_session(&session)?;
            let mut c = client(&conn, sf.node.as_deref())?;
            c.set_token(Some(sf.access_token));
            let deadline = std::time::Instant::now() + Duration::from_secs(wait);
            let mut shown = 0usize;
            loop {
                let r = c.thread_envelopes(&thread).await?;
                let updates: Vec<&Value> = r.body["envelopes"]
                    .as_array()
                    .map(|a| {
                        a.iter()
                            .filter(|e| {
                                e.pointer("/content/structured/intent")
                                    == Some(&json!("task.state_update@v1"))
                                    && e.pointer("/content/structured/parameters/task_id")
                                        == Some(&json!(task))
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                let mut last = None;
                for e in &updates[shown.min(updates.len())..] {
                    let state = e
                        .pointer("/content/structured/parameters/state")
                        .and_then(Value::as_str)
                        .unwrap_or("?");
                    let from = e
                        .pointer("/from/identity")
                        .and_then(Value::as_str)
                        .unwrap_or("?");
                    let text = e
                        .pointer("/content/human/text")
                        .and_then(Value::as_str)
                        .unwrap_or_default();
                    println!("{state:<12} {from}: {text}");
                    if let Some(res) = e.pointer("/content/structured/parameters/result") {
                        println!("{:<12} result: {res}", "");
                    }
                    last = Some(state.to_owned());
                }
                shown = updates.len();
                if let Some(s) = last
                    && matches!(
                        s.as_str(),
                        "completed" | "failed" | "declined" | "cancelled"
                    )
                {
                    return if s == "completed" {
                        Ok(())
                    } else {
                        Err(Failure {
                            code: 1,
                            error: ClientError::Input(format!("task {task} ended {s}")),
                        })
                    };
                }
                if std::time::Instant::now() >= deadline {
                    return Err(Failure {
                        code: 1,
                        error: ClientError::Input(format!(
                            "task {task} did not reach a terminal state within {wait} s"
                        )),
                    });
                }
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
        }
    }
}

/// An envelope factory on the system clock, seeded from OS randomness.
fn factory() -> Result<EnvelopeFactory<SystemClock>, Failure> {
    let seed = u64::from_le_bytes(
        os_random_32()?[..8]
            .try_into()
            .map_err(|_| input("random seed".into()))?,
    );
    Ok(EnvelopeFactory::new(SystemClock, seed))
}

/// `items` joined with `, ` into lines of at most `width` columns (an item longer than that
/// gets a line of its own).
fn wrap_list(items: &[&str], width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = String::new();
    for item in items {
        let sep = if line.is_empty() { "" } else { ", " };
        if !line.is_empty() && line.chars().count() + sep.len() + item.chars().count() + 1 > width {
            line.push(',');
            lines.push(std::mem::take(&mut line));
            line.push_str(item);
            continue;
        }
        line.push_str(sep);
        line.push_str(item);
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}

/// Keys and tokens are secrets: owner-only on Unix.
fn restrict_permissions(path: &Path) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let _ = std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600));
    }
    #[cfg(not(unix))]
    let _ = path;
}
