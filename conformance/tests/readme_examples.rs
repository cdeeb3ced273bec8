//! Every fenced shell command of README.md, conformance/README.md, reference/node/README.md
//! and vectors/README.md runs against the built binaries (issue 18, item 5), so the docs
//! cannot drift from the tools.
//!
//! How a README block is read: each line of a ```sh block is a command (a trailing `\`
//! continues it; a trailing `  # …` is a remark); `#` lines right under a command, with no
//! blank line between, are its documented output: every piece between two `…` must appear in
//! what the command printed, in order. A command runs with `sh -c` in a scratch directory
//! where `reference/`, `conformance/`, `vectors/`, `docs/` and `target/debug/` lead to the
//! repository and the built binaries, with those binaries first on `PATH`:
//! - `cargo run [--release] -p PKG [--bin B] [--features F] -- ARGS` runs PKG's binary with
//!   ARGS (the binary this test already built; no second build);
//! - `loom-node …` (not a subcommand) is a server: it starts in the background on a free
//!   port (its `--listen` replaced by `127.0.0.1:0`) and stops when the README is done; the
//!   documented address (`http://127.0.0.1:8787`, the config file's `listen`) is replaced by
//!   the real one in later commands;
//! - `NAME=VALUE` sets a variable for the later commands of the same README;
//! - `env_01…`, `thr_01…` in a command stand for the last such id an earlier command printed;
//! - `[…]` (an optional argument in the docs) is run with the argument;
//! - `https://node.example` (the conformance README's placeholder for "your node") is a
//!   `loom-node` the test starts with `reference/node/certify.toml`.
//!
//! A command that cannot run here is in [`NOT_RUN`] with the reason. The test fails when a
//! README has a command that neither runs nor is listed (it is run, so it must work), when a
//! listed command is no longer in any README, and when a command's exit code or documented
//! output differs.

mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};
use support::{Background, repo, start_node};

const READMES: [&str; 4] = [
    "README.md",
    "conformance/README.md",
    "reference/node/README.md",
    "vectors/README.md",
];

/// Commands not run, each with the reason (file, command as written, reason).
const NOT_RUN: &[(&str, &str, &str)] = &[
    (
        "README.md",
        "cargo test --workspace",
        "the whole workspace suite, which contains this test",
    ),
    (
        "README.md",
        "cargo run --release -p loom-benches --bin loom-tokens",
        "measures eight tokenizers over every dataset (minutes, release build of loom-benches); benches/tests/tokens.rs checks the report",
    ),
    (
        "README.md",
        "cargo run --release -p loom-benches --bin loom-tokens -- FILE.json",
        "FILE.json is the reader's file; benches/tests/tokens.rs runs loom-tokens on JSON files",
    ),
    (
        "README.md",
        "cargo run --release -p loom-benches --bin loom-tokens -- --check",
        "builds the separate toon-bridge crate and runs every tokenizer; benches/tests/tokens.rs covers --check",
    ),
    (
        "README.md",
        "cargo run --release -p loom-benches --bin loom-tokens -- --write-results",
        "rewrites benches/results/ in the repository",
    ),
    (
        "conformance/README.md",
        "cargo run --release -p loom-conformance --features selftest -- selftest",
        "about 30 s in a debug build; tests/selftest.rs runs the same self-test and asserts both coverages",
    ),
    (
        "reference/node/README.md",
        "cargo build -p loom-node",
        "this test builds loom-node itself (tests/support, the same command with --features quirks)",
    ),
    (
        "reference/node/README.md",
        "cargo build -p loom-client",
        "this test builds loom and loom-vectors itself (tests/support)",
    ),
    (
        "reference/node/README.md",
        "cargo build --release -p loom-node -p loom-client",
        "a release build of two crates (minutes); part of the benchmark recipe",
    ),
    (
        "reference/node/README.md",
        "cargo build --release -p loom-node -p loom-client --bins",
        "release builds of two crates for a benchmark; the debug build the other examples use already builds both",
    ),
    (
        "reference/node/README.md",
        "target/release/loom-node --config reference/node/wsbench.toml &",
        "a release node for loom-wsbench on a fixed port; reference/client/tests/node.rs runs the benchmark against a node",
    ),
    (
        "reference/node/README.md",
        "target/release/loom-wsbench --url http://127.0.0.1:18790 --clients 1000 --messages 100",
        "a benchmark (1,000 connections, release build); reference/client/tests/node.rs runs it at 24 connections",
    ),
    (
        "reference/node/README.md",
        "target/release/loom-wsbench --url http://127.0.0.1:18790 --clients 10000 --identities 50 --messages 50 --seed 2",
        "a benchmark needing 10,000 descriptors on each side; the closing numbers are in the README",
    ),
    (
        "reference/node/README.md",
        "cargo build --release -p loom-node --bin loom-mailbench",
        "a release build (minutes); part of the mail benchmark recipe",
    ),
    (
        "reference/node/README.md",
        "target/release/loom-mailbench --messages 4000 --connections 8 --outbound 1000 [--data DIR] [--rsa]",
        "a benchmark (5,000 mails through a release node); speed is measured, not tested — tests/node/bridge*.rs check the same paths",
    ),
    (
        "reference/node/README.md",
        "mkdir -p /tmp/bins && cp target/release/loom-node target/release/loom-load /tmp/bins/",
        "copies the release binaries of the benchmark recipe",
    ),
    (
        "reference/node/README.md",
        "reference/node/scripts/load-bench.sh /tmp/bins 20000",
        "a benchmark (20,000 envelopes on a release node); speed is measured, not tested",
    ),
    (
        "reference/node/README.md",
        "reference/node/scripts/growth-bench.sh /tmp/bins 200000 20000 101",
        "a benchmark (200,000 envelopes); speed is measured, not tested",
    ),
    (
        "reference/node/README.md",
        "cargo test -p loom-node",
        "the node's whole test suite, run by cargo test itself",
    ),
    (
        "reference/node/README.md",
        "cargo test -p loom-node --test node federation_quirks",
        "a module of the node's test binary, run by cargo test itself",
    ),
    (
        "reference/node/README.md",
        "cargo build -p loom-node -p loom-client",
        "builds loom-node and loom (this test builds them itself, tests/support)",
    ),
    (
        "reference/node/README.md",
        "loom-node --data a-data --domain a.test --listen 127.0.0.1:8787 --peer b.test=http://127.0.0.1:8788 --allow-private-http &",
        "the two-process federation walkthrough; tests/walkthrough_federation.rs in loom-node runs exactly these steps (two loom-node processes on free ports, the loom CLI, a 500 ms retry base)",
    ),
    (
        "reference/node/README.md",
        "loom-node --data b-data --domain b.test --listen 127.0.0.1:8788 --peer a.test=http://127.0.0.1:8787 --allow-private-http &",
        "the two-process federation walkthrough; tests/walkthrough_federation.rs in loom-node runs exactly these steps (two loom-node processes on free ports, the loom CLI, a 500 ms retry base)",
    ),
    (
        "reference/node/README.md",
        "A=http://127.0.0.1:8787 B=http://127.0.0.1:8788",
        "the two-process federation walkthrough; tests/walkthrough_federation.rs in loom-node runs exactly these steps (two loom-node processes on free ports, the loom CLI, a 500 ms retry base)",
    ),
    (
        "reference/node/README.md",
        "loom keygen --out alice.key && loom keygen --out bob.key",
        "the two-process federation walkthrough; tests/walkthrough_federation.rs in loom-node runs exactly these steps (two loom-node processes on free ports, the loom CLI, a 500 ms retry base)",
    ),
    (
        "reference/node/README.md",
        "loom register --node $A --identity loom://alice@a.test --key alice.key",
        "the two-process federation walkthrough; tests/walkthrough_federation.rs in loom-node runs exactly these steps (two loom-node processes on free ports, the loom CLI, a 500 ms retry base)",
    ),
    (
        "reference/node/README.md",
        "loom register --node $B --identity loom://bob@b.test --key bob.key",
        "the two-process federation walkthrough; tests/walkthrough_federation.rs in loom-node runs exactly these steps (two loom-node processes on free ports, the loom CLI, a 500 ms retry base)",
    ),
    (
        "reference/node/README.md",
        "loom login --node $A --identity loom://alice@a.test --key alice.key --session alice.session",
        "the two-process federation walkthrough; tests/walkthrough_federation.rs in loom-node runs exactly these steps (two loom-node processes on free ports, the loom CLI, a 500 ms retry base)",
    ),
    (
        "reference/node/README.md",
        "loom login --node $B --identity loom://bob@b.test --key bob.key --session bob.session",
        "the two-process federation walkthrough; tests/walkthrough_federation.rs in loom-node runs exactly these steps (two loom-node processes on free ports, the loom CLI, a 500 ms retry base)",
    ),
    (
        "reference/node/README.md",
        "loom send --session alice.session --to loom://bob@b.test --text \"hi bob\"",
        "the two-process federation walkthrough; tests/walkthrough_federation.rs in loom-node runs exactly these steps (two loom-node processes on free ports, the loom CLI, a 500 ms retry base)",
    ),
    (
        "reference/node/README.md",
        "loom threads --session bob.session",
        "the two-process federation walkthrough; tests/walkthrough_federation.rs in loom-node runs exactly these steps (two loom-node processes on free ports, the loom CLI, a 500 ms retry base)",
    ),
    (
        "reference/node/README.md",
        "loom send --session bob.session --to loom://alice@a.test --text \"hi alice\" --thread thr_01… --parent env_01…",
        "the two-process federation walkthrough; tests/walkthrough_federation.rs in loom-node runs exactly these steps (two loom-node processes on free ports, the loom CLI, a 500 ms retry base)",
    ),
    (
        "reference/node/README.md",
        "loom get --session alice.session thr_01…",
        "the two-process federation walkthrough; tests/walkthrough_federation.rs in loom-node runs exactly these steps (two loom-node processes on free ports, the loom CLI, a 500 ms retry base)",
    ),
    (
        "vectors/README.md",
        "cargo run -p loom-vectors -- verify --impl \"CMD\"",
        "CMD is the reader's implementation; the next line runs verify with ours",
    ),
];

/// Commands whose documented behaviour is a non-zero exit (file, command prefix, code, why).
const EXIT: &[(&str, &str, i32, &str)] = &[
    (
        "reference/node/README.md",
        "loom send --session alice.session --to loom://bob@e2ee.test --text \"in clear\"",
        1,
        "cleartext into an end-to-end encrypted thread: the node refuses it (ENCRYPTION_REQUIRED, v1.1 §24.2)",
    ),
    (
        "conformance/README.md",
        "loom-conformance run --target https://node.example",
        1,
        "the README's skip file lists core.envelope.sig.tampered-body, which the reference node passes: an unexpected pass fails the run",
    ),
];

/// One command of a README.
#[derive(Debug, Clone)]
struct Example {
    file: &'static str,
    line: usize,
    command: String,
    /// The documented output lines (without `# `).
    output: Vec<String>,
}

/// The commands of one README's ```sh blocks.
fn examples(file: &'static str) -> Vec<Example> {
    let text = std::fs::read_to_string(repo().join(file)).expect("README");
    let mut out: Vec<Example> = Vec::new();
    let mut in_block = false;
    let mut pending: Option<(usize, String)> = None;
    let mut last_was_command = false;
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("```") {
            in_block = !in_block && matches!(trimmed, "```sh" | "```bash" | "```shell");
            last_was_command = false;
            continue;
        }
        if !in_block {
            continue;
        }
        if let Some((start, mut cmd)) = pending.take() {
            let part = strip_remark(line);
            if let Some(more) = part.strip_suffix('\\') {
                cmd.push_str(more.trim_start());
                cmd.push(' ');
                pending = Some((start, cmd));
            } else {
                cmd.push_str(part.trim_start());
                push(&mut out, file, start, cmd);
                last_was_command = true;
            }
            continue;
        }
        if trimmed.is_empty() {
            last_was_command = false;
        } else if let Some(doc) = trimmed.strip_prefix('#') {
            if last_was_command && let Some(e) = out.last_mut() {
                e.output
                    .push(doc.strip_prefix(' ').unwrap_or(doc).to_owned());
            }
        } else {
            let part = strip_remark(line);
            if let Some(more) = part.strip_suffix('\\') {
                pending = Some((i + 1, format!("{} ", more.trim())));
            } else {
                push(&mut out, file, i + 1, part.trim().to_owned());
                last_was_command = true;
            }
        }
    }
    assert!(
        pending.is_none() && !in_block,
        "{file}: an unterminated block or command"
    );
    out
}

fn push(out: &mut Vec<Example>, file: &'static str, line: usize, command: String) {
    out.push(Example {
        file,
        line,
        command: command.split_whitespace().collect::<Vec<_>>().join(" "),
        output: Vec::new(),
    });
}

/// A line without its trailing `  # remark`.
fn strip_remark(line: &str) -> &str {
    match line.find("  #") {
        Some(i) => line[..i].trim_end(),
        None => line.trim_end(),
    }
}

/// Where a README's commands run and what they have set up.
struct Session {
    dir: PathBuf,
    env: BTreeMap<String, String>,
    /// Documented URL → the real one.
    urls: Vec<(String, String)>,
    servers: Vec<Background>,
    /// Everything printed so far (for `env_01…` placeholders).
    printed: String,
}

impl Session {
    fn new(name: &str, bins: &Path) -> Session {
        let dir = support::scratch(&format!("readme-{name}"));
        for d in ["reference", "conformance", "vectors", "docs"] {
            symlink(&repo().join(d), &dir.join(d));
        }
        std::fs::create_dir_all(dir.join("target")).expect("target dir");
        symlink(bins, &dir.join("target/debug"));
        let path = format!(
            "{}:{}",
            bins.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        Session {
            dir,
            env: BTreeMap::from([("PATH".to_owned(), path), ("COLUMNS".into(), "80".into())]),
            urls: Vec::new(),
            servers: Vec::new(),
            printed: String::new(),
        }
    }

    /// The command with documented URLs, `[…]` and id placeholders resolved.
    fn resolve(&self, command: &str) -> String {
        let mut c = command.replace(['[', ']'], "");
        for (doc, real) in &self.urls {
            c = c.replace(doc, real);
        }
        for prefix in ["env_01", "thr_01"] {
            let placeholder = format!("{prefix}…");
            if c.contains(&placeholder) {
                let id = last_id(&self.printed, prefix).unwrap_or_else(|| {
                    panic!("{command}: no {prefix}… printed by an earlier command")
                });
                c = c.replace(&placeholder, &id);
            }
        }
        c
    }

    fn sh(&self, script: &str) -> Output {
        let mut cmd = Command::new("sh");
        cmd.arg("-c")
            .arg(script)
            .current_dir(&self.dir)
            .env_clear()
            .envs(&self.env)
            .stdin(Stdio::null());
        if let Ok(home) = std::env::var("HOME") {
            cmd.env("HOME", home);
        }
        with_timeout(cmd, Duration::from_secs(300), script)
    }

    /// Starts a documented `loom-node …` in the background.
    fn start_server(&mut self, command: &str) {
        let mut words: Vec<String> = command.split_whitespace().map(str::to_owned).collect();
        words.remove(0);
        let mut documented = None;
        if let Some(i) = words.iter().position(|w| w == "--listen") {
            documented = words.get(i + 1).cloned();
            words.drain(i..=i + 1);
        } else if let Some(i) = words.iter().position(|w| w == "--config") {
            let config = std::fs::read_to_string(self.dir.join(&words[i + 1])).expect("config");
            let table: toml::Table = config.parse().expect("the config is TOML");
            documented = table
                .get("listen")
                .and_then(|l| l.as_str())
                .map(str::to_owned);
        }
        words.extend(["--listen".into(), "127.0.0.1:0".into()]);
        let (node, url) = start_node(&self.dir, &words);
        let documented = documented.unwrap_or_else(|| "127.0.0.1:8787".into());
        self.urls.push((format!("http://{documented}"), url));
        self.servers.push(node);
    }
}

fn symlink(from: &Path, to: &Path) {
    #[cfg(unix)]
    std::os::unix::fs::symlink(from, to).expect("symlink");
    #[cfg(not(unix))]
    panic!("the README examples are shell commands: Unix only ({from:?} → {to:?})");
}

/// The last `prefix…` ULID id in `text`.
fn last_id(text: &str, prefix: &str) -> Option<String> {
    text.match_indices(prefix)
        .filter_map(|(i, _)| {
            let id: String = text[i..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            // `env_` / `thr_` and a 26-character ULID.
            (id.len() == prefix.len() - 2 + 26).then_some(id)
        })
        .last()
}

fn with_timeout(mut cmd: Command, limit: Duration, what: &str) -> Output {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(cmd.output());
    });
    match rx.recv_timeout(limit) {
        Ok(out) => out.unwrap_or_else(|e| panic!("{what}: {e}")),
        Err(_) => panic!("{what}: no answer within {limit:?}"),
    }
}

/// `cargo run [--release] -p PKG [--bin B] [--features F] -- ARGS` as the binary and ARGS.
fn cargo_run(command: &str) -> Option<String> {
    let rest = command.strip_prefix("cargo run ")?;
    let (opts, args) = rest.split_once(" -- ").unwrap_or((rest, ""));
    let words: Vec<&str> = opts.split_whitespace().collect();
    let value = |flag: &str| {
        words
            .iter()
            .position(|w| *w == flag)
            .and_then(|i| words.get(i + 1))
            .copied()
    };
    let package = value("-p")?;
    let bin = value("--bin").unwrap_or(match package {
        "loom-client" => "loom",
        p => p,
    });
    Some(format!("{bin} {args}").trim().to_owned())
}

/// Every documented output piece appears in `printed`, in order.
fn check_output(e: &Example, printed: &str) {
    let mut at = 0;
    for line in &e.output {
        for piece in line.split('…').map(str::trim).filter(|p| !p.is_empty()) {
            match printed[at..].find(piece) {
                Some(i) => at += i + piece.len(),
                None => panic!(
                    "{}:{}: `{}` did not print {piece:?} (documented: {:?}); it printed:\n{printed}",
                    e.file, e.line, e.command, e.output
                ),
            }
        }
    }
}

#[test]
fn every_readme_command_runs_as_documented() {
    let started = Instant::now();
    let bins = support::bin_dir();
    support::loom_node();
    support::built("loom-client", "loom", &[]);
    support::built("loom-vectors", "loom-vectors", &[]);
    for tool in ["curl", "jq"] {
        let found = Command::new("sh")
            .args(["-c", &format!("command -v {tool}")])
            .output()
            .is_ok_and(|o| o.status.success());
        assert!(
            found,
            "the node README's walkthrough uses {tool}: install it"
        );
    }

    let mut listed_seen = vec![false; NOT_RUN.len()];
    let mut ran = 0;
    let mut cache: BTreeMap<String, (i32, String)> = BTreeMap::new();
    for file in READMES {
        let name = file.replace('/', "-");
        let mut s = Session::new(&name, &bins);
        if file == "conformance/README.md" {
            prepare_conformance(&mut s);
        }
        for e in examples(file) {
            if let Some(i) = NOT_RUN
                .iter()
                .position(|(f, c, _)| *f == file && *c == e.command)
            {
                listed_seen[i] = true;
                continue;
            }
            ran += 1;
            let command = cargo_run(&e.command).unwrap_or_else(|| e.command.clone());
            let first = command.split_whitespace().next().unwrap_or_default();
            let is_server = first == "loom-node"
                && !matches!(
                    command.split_whitespace().nth(1),
                    Some("audit" | "quirks" | "--help" | "--version")
                );
            if is_server {
                s.start_server(&command);
                continue;
            }
            if let Some((var, value)) = assignment(&command) {
                let value = s.resolve(value);
                let out = s.sh(&format!("{var}={value}; printf %s \"${var}\""));
                assert!(out.status.success(), "{}:{}: {command}", e.file, e.line);
                s.env
                    .insert(var.to_owned(), String::from_utf8_lossy(&out.stdout).into());
                continue;
            }
            let resolved = s.resolve(&command);
            let (code, printed) = match cache.get(&resolved) {
                Some(hit) if !resolved.contains('$') => hit.clone(),
                _ => {
                    let out = s.sh(&resolved);
                    let printed = String::from_utf8_lossy(&out.stdout).into_owned()
                        + &String::from_utf8_lossy(&out.stderr);
                    let r = (out.status.code().unwrap_or(-1), printed);
                    cache.insert(resolved.clone(), r.clone());
                    r
                }
            };
            let want = EXIT
                .iter()
                .find(|(f, prefix, _, _)| *f == file && e.command.starts_with(prefix))
                .map_or(0, |(_, _, code, _)| *code);
            assert_eq!(
                code, want,
                "{}:{}: `{}` (run as `{resolved}`) exited {code}; it printed:\n{printed}",
                e.file, e.line, e.command
            );
            check_output(&e, &printed);
            s.printed.push_str(&printed);
        }
        let _ = std::fs::remove_dir_all(&s.dir);
    }
    let stale: Vec<_> = NOT_RUN
        .iter()
        .zip(&listed_seen)
        .filter(|(_, seen)| !**seen)
        .map(|((f, c, _), _)| format!("{f}: {c}"))
        .collect();
    assert!(
        stale.is_empty(),
        "listed as not run but in no README: {stale:?}"
    );
    eprintln!(
        "README examples: {ran} commands run, {} listed as not run, in {:.1} s",
        NOT_RUN.len(),
        started.elapsed().as_secs_f64()
    );
    assert!(ran >= 25, "only {ran} commands found: the parser lost some");
}

/// `NAME=VALUE` (a shell assignment alone on its line).
fn assignment(command: &str) -> Option<(&str, &str)> {
    let (var, value) = command.split_once('=')?;
    (!var.is_empty()
        && var.chars().all(|c| c.is_ascii_uppercase() || c == '_')
        && (!value.contains(' ') || value.starts_with("$(")))
    .then_some((var, value))
}

/// What the conformance README's commands need: a node for `https://node.example`, the
/// README's own skip file as `known-failures.json`, a profile `my-node.toml`, and three
/// reports `a.json`, `b.json`, `c.json` for `report merge`.
fn prepare_conformance(s: &mut Session) {
    let (node, url) = start_node(
        &s.dir,
        &[
            "--config".into(),
            "reference/node/certify.toml".into(),
            "--listen".into(),
            "127.0.0.1:0".into(),
        ],
    );
    s.servers.push(node);
    s.urls.push(("https://node.example".into(), url.clone()));
    let readme = std::fs::read_to_string(repo().join("conformance/README.md")).expect("README");
    let skips = readme
        .split("### Skip file")
        .nth(1)
        .and_then(|t| t.split("```json\n").nth(1))
        .and_then(|t| t.split("\n```").next())
        .expect("the README's skip file example");
    std::fs::write(s.dir.join("known-failures.json"), skips).expect("skip file");
    std::fs::write(
        s.dir.join("my-node.toml"),
        "[target]\nreadiness_timeout_secs = 30\n",
    )
    .expect("profile");
    for name in ["a", "b", "c"] {
        let out = s.sh(&format!(
            "loom-conformance run --quiet --plain-http --only 'core.auth.*' --report json={name}.json"
        ));
        assert_eq!(out.status.code(), Some(4), "a filtered run: {out:?}");
    }
}
