//! The README's walkthrough, run as written: two `loom-node` processes federating, a human
//! with the `loom` CLI, Bob's `loom-agent`. The block runs with `sh -e` in a scratch
//! directory (`reference/` leads to the repository), the built binaries first on `PATH`, the
//! documented ports replaced by free ones; its background nodes and agent are killed by
//! parent pid when it ends.
//! What it printed must show the first task completed by the agent and the second declined
//! for want of scope, and the agent's token report.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("the workspace root")
}

/// Builds `bin` of `package` into this test's target directory (a no-op when up to date;
/// `loom-node` with `quirks`, as a workspace build unifies it and the conformance tests build
/// it, so no test rebuilds another's binary).
fn built(package: &str, bin: &str, features: &[&str]) -> PathBuf {
    let dir = Path::new(env!("CARGO_BIN_EXE_loom-agent"))
        .parent()
        .expect("bin dir")
        .to_path_buf();
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(&cargo);
    cmd.args(["build", "--quiet", "-p", package, "--bin", bin]);
    if !features.is_empty() {
        cmd.args(["--features", &features.join(",")]);
    }
    if dir.file_name().and_then(|n| n.to_str()) == Some("release") {
        cmd.arg("--release");
    }
    if let Some(target) = dir.parent() {
        cmd.env("CARGO_TARGET_DIR", target);
    }
    let status = cmd.status().expect("run cargo");
    assert!(
        status.success(),
        "cargo build -p {package} --bin {bin} failed"
    );
    dir
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The script's shell: when dropped (however the test ends), its children (the nodes and
/// the agent it started in the background) and the shell itself are killed — by parent pid,
/// so nothing else on the machine can be hit.
struct Shell(u32);

impl Drop for Shell {
    fn drop(&mut self) {
        let pid = self.0.to_string();
        let _ = Command::new("pkill").args(["-KILL", "-P", &pid]).status();
        let _ = Command::new("kill").args(["-KILL", &pid]).status();
    }
}

/// The walkthrough's ```sh block.
fn walkthrough() -> String {
    let readme = std::fs::read_to_string(repo().join("reference/agent/README.md")).unwrap();
    let start = readme
        .find("## Walkthrough")
        .expect("a Walkthrough section");
    let block = &readme[start..];
    let open = block.find("```sh\n").expect("a sh block") + 6;
    let close = block[open..].find("\n```").expect("the block's end");
    block[open..open + close].to_owned()
}

#[test]
fn the_readme_walkthrough_completes_a_task_across_two_nodes() {
    let bin = built("loom-node", "loom-node", &["quirks"]);
    built("loom-client", "loom", &[]);
    let scratch = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(repo().join("reference"), scratch.path().join("reference")).unwrap();
    let (a, b) = (free_port(), free_port());
    let script = walkthrough()
        .replace("127.0.0.1:8787", &format!("127.0.0.1:{a}"))
        .replace("127.0.0.1:8788", &format!("127.0.0.1:{b}"));
    // When the shell exits, however it exits, its background children go with it.
    let script = format!("trap 'pkill -KILL -P $$' EXIT\n{script}\n");
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    // Output goes to files: the background processes hold their copies of the descriptors
    // until the group is killed, so pipes would never reach end of file.
    let out_path = scratch.path().join("stdout.txt");
    let err_path = scratch.path().join("stderr.txt");
    let mut child = Command::new("sh")
        .arg("-ec")
        .arg(&script)
        .current_dir(scratch.path())
        .env("PATH", path)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out_path).unwrap())
        .stderr(std::fs::File::create(&err_path).unwrap())
        .spawn()
        .unwrap();
    let shell = Shell(child.id());
    // The block waits for its own tasks (120 s each at most); this is the test's backstop.
    let deadline = std::time::Instant::now() + Duration::from_secs(400);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break Some(s);
        }
        if std::time::Instant::now() >= deadline {
            break None;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    drop(shell);
    let all = format!(
        "{}\n--- stderr ---\n{}",
        std::fs::read_to_string(&out_path).unwrap_or_default(),
        std::fs::read_to_string(&err_path).unwrap_or_default()
    );
    let status =
        status.unwrap_or_else(|| panic!("the walkthrough did not finish in 400 s:\n{all}"));
    assert!(
        status.success(),
        "the walkthrough failed ({status}):\n{all}"
    );
    for want in [
        "enrolled loom://bot.bob@b.test (type agent) under loom://bob@b.test: scope message.general, process.run.market-sizing, task.state_update",
        "accepted     loom://bot.bob@b.test: accepted: process market-sizing",
        "in_progress  loom://bot.bob@b.test: started",
        "completed    loom://bot.bob@b.test: completed: ",
        "declined     loom://bot.bob@b.test: declined: process code-fix is beyond this agent's delegation: it needs scope \"process.run.code-fix\"",
        "did not complete",
        "token cost: ",
    ] {
        assert!(all.contains(want), "missing {want:?} in:\n{all}");
    }
    // The completed update carried its result in Loom notation (content_encoding).
    assert!(all.contains("package: market-sizing"), "{all}");
}
