//! The harness against `loom-node` running as a separate process (issue 5, item 8): start the
//! node on 127.0.0.1:0 with an in-memory store, read the bound address from its start log,
//! run `loom-conformance run --target http://127.0.0.1:PORT` and require exit code 0 and a
//! JSON report that validates against the schema.
//!
//! Where the `loom-node` binary comes from: Cargo sets `CARGO_BIN_EXE_<name>` only for the
//! binaries of the package under test, and artifact dependencies (`bindeps`) are unstable, so
//! a dev-dependency on `loom-node` would build its library, not its binary. The test therefore
//! asks Cargo for the binary itself — `$CARGO build -p loom-node --bin loom-node --features
//! quirks` into this test's own target directory (derived from the conformance binary's path)
//! — which is a no-op when it is up to date and never runs a stale node. `--features quirks`
//! matches the feature set a workspace build unifies (loom-conformance turns it on), so the
//! binary is not rebuilt back and forth; quirks stay off unless asked for at run time. When
//! Cargo is not available, an existing `loom-node` next to the conformance binary is used.

use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_loom-conformance");

/// Kills the node when the test ends, however it ends.
struct NodeProcess(Child);

impl Drop for NodeProcess {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn loom_node_binary() -> PathBuf {
    let profile_dir = Path::new(BIN)
        .parent()
        .expect("the conformance binary lives in a directory");
    let node = profile_dir.join(format!("loom-node{}", std::env::consts::EXE_SUFFIX));
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(&cargo);
    cmd.args([
        "build",
        "--quiet",
        "-p",
        "loom-node",
        "--bin",
        "loom-node",
        "--features",
        "quirks",
    ]);
    if profile_dir.file_name().and_then(|n| n.to_str()) == Some("release") {
        cmd.arg("--release");
    }
    if let Some(target_dir) = profile_dir.parent() {
        cmd.env("CARGO_TARGET_DIR", target_dir);
    }
    match cmd.status() {
        Ok(s) if s.success() => {}
        Ok(s) => panic!("`{cargo} build -p loom-node` failed ({s})"),
        Err(e) => eprintln!("cannot run {cargo} ({e}); using the loom-node binary as it is"),
    }
    assert!(
        node.is_file(),
        "{} is missing: run `cargo build -p loom-node` first",
        node.display()
    );
    node
}

/// Starts the node and returns it with its base URL.
fn start_node(dir: &Path) -> (NodeProcess, String) {
    let config = dir.join("node.toml");
    // The harness registers fresh identities for every case; a per-IP auth limit would
    // throttle the harness, not test the node.
    std::fs::write(
        &config,
        "domain = \"node.test\"\n[rate_limits]\nauth_per_ip = 0\n",
    )
    .expect("config written");
    let mut child = Command::new(loom_node_binary())
        .arg("serve")
        .arg("--config")
        .arg(&config)
        .args(["--listen", "127.0.0.1:0", "--memory", "--seed", "5"])
        .env("LOOM_LOG", "info")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("loom-node starts");
    let stderr = child.stderr.take().expect("piped stderr");
    let node = NodeProcess(child);
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        // Keep draining the log so the node never blocks on a full pipe.
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if let Some(rest) = line.split("listening on ").nth(1) {
                let url = rest.split_whitespace().next().unwrap_or("").to_owned();
                let _ = tx.send(url);
            }
        }
    });
    let url = rx
        .recv_timeout(Duration::from_secs(60))
        .expect("loom-node logs its bound address within 60 s");
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");
    (node, url)
}

/// Runs the harness against `url` without `--seed`; returns the JSON report.
fn certify(url: &str, report: &Path) -> Value {
    let out = Command::new(BIN)
        .args([
            "run", "--quiet", "--level", "1", "--target", url, "--report",
        ])
        .arg(format!("json={}", report.display()))
        .output()
        .expect("the harness runs");
    assert_eq!(
        out.status.code(),
        Some(0),
        "stdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("reproduce with --seed"), "{stderr}");
    serde_json::from_str(&std::fs::read_to_string(report).expect("report"))
        .expect("the report is JSON")
}

/// Every case passed, or was skipped with a reason (plain http: the §14.1 transport cases).
fn all_passed(v: &Value) {
    for c in v["cases"].as_array().expect("cases") {
        let o = c["outcome"].as_str().unwrap_or_default();
        assert!(
            o == "pass" || (o == "skipped" && c["message"].is_string()),
            "{}: {o}: {}",
            c["id"],
            c["message"]
        );
    }
}

/// Two runs in a row against the same node process, neither given `--seed` (issue 13): each
/// draws a fresh seed, so the second registers fresh identities and passes like the first.
#[test]
fn the_harness_certifies_loom_node_running_as_a_separate_process_twice() {
    let dir = std::env::temp_dir().join(format!("loom-conf-external-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    let (_node, url) = start_node(&dir);
    let schema: Value =
        serde_json::from_str(include_str!("../schema/report-1.schema.json")).expect("schema");
    let validator = jsonschema::validator_for(&schema).expect("valid schema");
    let mut seeds = Vec::new();
    for run in ["first", "second"] {
        let v = certify(&url, &dir.join(format!("{run}.json")));
        let errors: Vec<String> = validator.iter_errors(&v).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{run}: {}", errors.join("\n"));
        assert_eq!(v["target"]["url"], Value::from(url.as_str()));
        assert_eq!(v["target"]["embedded"], Value::Bool(false));
        assert_eq!(v["target"]["node"], Value::from("node.test"));
        assert_eq!(v["summary"]["level_achieved"], Value::from(1), "{run} run");
        all_passed(&v);
        seeds.push(v["run"]["seed"].clone());
    }
    assert_ne!(seeds[0], seeds[1], "each run draws a fresh seed");
    let _ = std::fs::remove_dir_all(&dir);
}
