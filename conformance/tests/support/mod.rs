//! What the certification and README-examples tests share: the workspace's binaries and a
//! `loom-node` process started in the background and stopped when the test ends.
//!
//! `CARGO_BIN_EXE_*` exists only for this package's binaries, so the others are built by
//! Cargo into the same target directory, as `tests/external.rs` explains (a no-op when up to
//! date; `loom-node` with `--features quirks`, the feature set a workspace build unifies).

#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// This package's binary.
pub const CONFORMANCE: &str = env!("CARGO_BIN_EXE_loom-conformance");

/// The workspace root.
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace root")
        .to_path_buf()
}

/// The directory the binaries are in (`target/debug` or `target/release`).
pub fn bin_dir() -> PathBuf {
    Path::new(CONFORMANCE)
        .parent()
        .expect("the conformance binary lives in a directory")
        .to_path_buf()
}

/// Builds `bin` of `package` (with `features`) into this test's target directory and returns
/// its path.
pub fn built(package: &str, bin: &str, features: &[&str]) -> PathBuf {
    let dir = bin_dir();
    let path = dir.join(format!("{bin}{}", std::env::consts::EXE_SUFFIX));
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(&cargo);
    cmd.args(["build", "--quiet", "-p", package, "--bin", bin]);
    if !features.is_empty() {
        cmd.args(["--features", &features.join(",")]);
    }
    if dir.file_name().and_then(|n| n.to_str()) == Some("release") {
        cmd.arg("--release");
    }
    if let Some(target_dir) = dir.parent() {
        cmd.env("CARGO_TARGET_DIR", target_dir);
    }
    match cmd.status() {
        Ok(s) if s.success() => {}
        Ok(s) => panic!("`{cargo} build -p {package} --bin {bin}` failed ({s})"),
        Err(e) => eprintln!("cannot run {cargo} ({e}); using {bin} as it is"),
    }
    assert!(path.is_file(), "{} is missing", path.display());
    path
}

/// `loom-node`, built as `tests/external.rs` builds it.
pub fn loom_node() -> PathBuf {
    built("loom-node", "loom-node", &["quirks"])
}

/// A background process, killed when the test ends however it ends.
pub struct Background(pub Child);

impl Drop for Background {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `loom-node` with `args` in `cwd` and waits for its start log line; returns the
/// process and the URL it listens on (`http://127.0.0.1:PORT`).
pub fn start_node(cwd: &Path, args: &[String]) -> (Background, String) {
    let mut child = Command::new(loom_node())
        .args(args)
        .current_dir(cwd)
        .env("LOOM_LOG", "info")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("loom-node starts");
    let stderr = child.stderr.take().expect("piped stderr");
    let node = Background(child);
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        // Keep draining the log so the node never blocks on a full pipe.
        let mut tx = Some(tx);
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if let Some(rest) = line.split("listening on ").nth(1) {
                let url = rest.split_whitespace().next().unwrap_or("").to_owned();
                if let Some(tx) = tx.take() {
                    let _ = tx.send(Ok(url));
                }
            } else if line.contains("error")
                && let Some(tx) = tx.take()
            {
                let _ = tx.send(Err(line));
            }
        }
    });
    match rx.recv_timeout(Duration::from_secs(60)) {
        Ok(Ok(url)) => (node, url),
        Ok(Err(line)) => panic!("loom-node {args:?} did not start: {line}"),
        Err(_) => panic!("loom-node {args:?} logged no bound address within 60 s"),
    }
}

/// A fresh scratch directory for one test.
pub fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("loom-conf-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}
