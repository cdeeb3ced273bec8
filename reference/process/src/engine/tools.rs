//! Executes loop-engine "Tool Action Schema (v1)" actions in a workspace directory under the
//! task's risk policy (loop-engine "Task Config Schema"). Every outcome, including every
//! refusal, is an [`Observation`]; the executor never panics on model input.
//!
//! Decisions (README "Running"):
//! - `terminal.run` runs argv directly (no shell). `terminal.exec` splits its command line on
//!   whitespace and runs it the same way when it has no shell syntax; with shell syntax
//!   (`| & ; < > ( ) $ \` \ " ' * ? [ ] { } ~ #` or a newline) it runs through `sh -c` only when
//!   `riskPolicy.allowShell` is true, and is admitted by the command policy as `sh -c CMD`.
//! - Commands inherit the runner's environment, run in the workspace (or a workspace-relative
//!   `cwd`), and are killed after the executor's timeout (default 120 s, real time: a safety
//!   net, not a budget).
//! - `git.*` actions are dedicated tools, not arbitrary commands, so the command policy does
//!   not apply to them. They run the `git` binary with a fixed identity and with author and
//!   committer dates from the injected clock, and with user/system git config ignored, so the
//!   same run makes the same commit hashes.
//! - Checkpoints are kept in memory for the executor's life: a snapshot of every regular file
//!   except under `.git/` and `.loom/`; ids are `cp-1`, `cp-2`, ... Restoring removes files
//!   created since and rewrites the snapshot's files.
//! - `browser.fetch` is refused unless `allowNetwork`; when allowed it goes through the
//!   injected [`Fetch`] (the CLI wires an HTTP client), and is refused if none is configured.

use super::action::{Observation, ToolAction};
use super::clock::Clock;
use super::patch;
use super::policy::{Confirm, RiskPolicy, admit_command, admit_network, resolve_in_workspace};
#[cfg(test)]
use serde_json::Value as Json;
use serde_json::json;
use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Characters that make a `terminal.exec` command line need a shell.
pub const SHELL_METACHARACTERS: &[char] = &[
    '|', '&', ';', '<', '>', '(', ')', '$', '`', '\\', '"', '\'', '*', '?', '[', ']', '{', '}',
    '~', '#', '\n',
];

/// Output kept per stream in an observation's `raw`.
const MAX_OUTPUT_BYTES: usize = 64 * 1024;

/// Fetches a URL for `browser.fetch` when the network is allowed.
pub trait Fetch: Send + Sync + std::fmt::Debug {
    /// `(status, body)` or a transport error.
    fn fetch(&self, url: &str) -> Result<(u16, String), String>;
}

/// Structured outputs of tools this runner cannot execute itself — the package's bundled
/// Python tools (guide "Bundled tools") — as `tool_metric` gates read them. The scripted
/// backend supplies them in deterministic runs.
pub trait ToolOutputs: Send + Sync + std::fmt::Debug {
    /// The tool's structured data for this phase and attempt, if known.
    fn output(&self, tool: &str, phase: &str, attempt: u32) -> Option<serde_json::Value>;
}

/// The result of running one command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandOutput {
    /// Exit code (`None` when killed by a signal or the timeout).
    pub exit_code: Option<i32>,
    /// Captured stdout (lossy UTF-8, truncated).
    pub stdout: String,
    /// Captured stderr (lossy UTF-8, truncated).
    pub stderr: String,
    /// Whether the timeout killed it.
    pub timed_out: bool,
}

/// Runs `cmd` to completion or until `timeout`, capturing output.
pub fn run_with_timeout(mut cmd: Command, timeout: Duration) -> Result<CommandOutput, String> {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let program = format!("{:?}", cmd.get_program());
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("cannot start {program}: {e}"))?;
    let mut out_pipe = child.stdout.take();
    let mut err_pipe = child.stderr.take();
    let out_thread = std::thread::spawn(move || {
        let mut b = Vec::new();
        if let Some(p) = out_pipe.as_mut() {
            let _ = p.read_to_end(&mut b);
        }
        b
    });
    let err_thread = std::thread::spawn(move || {
        let mut b = Vec::new();
        if let Some(p) = err_pipe.as_mut() {
            let _ = p.read_to_end(&mut b);
        }
        b
    });
    let start = Instant::now();
    let mut timed_out = false;
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break Some(s),
            Ok(None) if start.elapsed() >= timeout => {
                let _ = child.kill();
                timed_out = true;
                break child.wait().ok();
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(5)),
            Err(e) => return Err(format!("waiting for {program}: {e}")),
        }
    };
    let text = |b: Vec<u8>| {
        let mut s = String::from_utf8_lossy(&b).into_owned();
        if s.len() > MAX_OUTPUT_BYTES {
            let mut cut = MAX_OUTPUT_BYTES;
            while !s.is_char_boundary(cut) {
                cut -= 1;
            }
            s.truncate(cut);
            s.push_str("\n[output truncated]");
        }
        s
    };
    Ok(CommandOutput {
        exit_code: if timed_out {
            None
        } else {
            status.and_then(|s| s.code())
        },
        stdout: text(out_thread.join().unwrap_or_default()),
        stderr: text(err_thread.join().unwrap_or_default()),
        timed_out,
    })
}

/// A workspace snapshot: relative path -> bytes.
type Snapshot = BTreeMap<PathBuf, Vec<u8>>;

/// Executes tool actions in one workspace.
pub struct ToolExecutor {
    workspace: PathBuf,
    policy: RiskPolicy,
    confirm: Arc<dyn Confirm>,
    clock: Arc<dyn Clock>,
    fetch: Option<Arc<dyn Fetch>>,
    timeout: Duration,
    checkpoints: BTreeMap<String, Snapshot>,
    /// Workspace-relative paths written by fs actions, in first-write order.
    changed: Vec<String>,
}

impl std::fmt::Debug for ToolExecutor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolExecutor")
            .field("workspace", &self.workspace)
            .field("policy", &self.policy)
            .finish_non_exhaustive()
    }
}

impl ToolExecutor {
    /// An executor for `workspace` (created if missing, then canonicalized).
    pub fn new(
        workspace: &Path,
        policy: RiskPolicy,
        confirm: Arc<dyn Confirm>,
        clock: Arc<dyn Clock>,
    ) -> Result<Self, String> {
        std::fs::create_dir_all(workspace)
            .map_err(|e| format!("cannot create workspace {}: {e}", workspace.display()))?;
        let workspace = workspace
            .canonicalize()
            .map_err(|e| format!("cannot resolve workspace {}: {e}", workspace.display()))?;
        Ok(ToolExecutor {
            workspace,
            policy,
            confirm,
            clock,
            fetch: None,
            timeout: Duration::from_secs(120),
            checkpoints: BTreeMap::new(),
            changed: Vec::new(),
        })
    }

    /// Sets the command timeout.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Sets the fetcher used by `browser.fetch` when the network is allowed.
    pub fn with_fetch(mut self, fetch: Arc<dyn Fetch>) -> Self {
        self.fetch = Some(fetch);
        self
    }

    /// The canonical workspace directory.
    pub fn workspace(&self) -> &Path {
        &self.workspace
    }

    /// The risk policy.
    pub fn policy(&self) -> &RiskPolicy {
        &self.policy
    }

    /// Workspace-relative paths written so far by `fs.write`/`fs.applyPatch`.
    pub fn changed_files(&self) -> &[String] {
        &self.changed
    }

    /// Executes one action.
    pub fn execute(&mut self, action: &ToolAction) -> Observation {
        match action {
            ToolAction::TerminalRun {
                program, args, cwd, ..
            } => {
                let mut argv = vec![program.clone()];
                argv.extend(args.iter().cloned());
                self.run_argv(&argv, cwd.as_deref())
            }
            ToolAction::TerminalExec { cmd, cwd, .. } => self.exec(cmd, cwd.as_deref()),
            ToolAction::FsRead { path, .. } => self.fs_read(path),
            ToolAction::FsWrite { path, content, .. } => self.fs_write(path, content),
            ToolAction::FsApplyPatch { path, patch, .. } => self.fs_apply_patch(path, patch),
            ToolAction::FsSearch { pattern, paths, .. } => self.fs_search(pattern, paths),
            ToolAction::GitStatus { .. } => self.git(&["status", "--porcelain=v1"], "git status"),
            ToolAction::GitDiff { path, .. } => match path {
                Some(p) => match resolve_in_workspace(&self.workspace, p) {
                    Ok(_) => self.git(&["diff", "--", p], "git diff"),
                    Err(e) => Observation::fail(e),
                },
                None => self.git(&["diff"], "git diff"),
            },
            ToolAction::GitCommit { message, .. } => self.git_commit(message),
            ToolAction::CheckpointCreate { label, .. } => self.checkpoint_create(label.as_deref()),
            ToolAction::CheckpointRestore { checkpoint_id, .. } => {
                self.checkpoint_restore(checkpoint_id)
            }
            ToolAction::BrowserFetch { url, .. } => self.browser_fetch(url),
        }
    }

    /// Runs argv under the command policy (also used by command judges and gates).
    pub fn run_argv(&mut self, argv: &[String], cwd: Option<&str>) -> Observation {
        if let Err(reason) = admit_command(&self.policy, self.confirm.as_ref(), argv) {
            return Observation::fail(reason);
        }
        let dir = match cwd {
            Some(c) => match resolve_in_workspace(&self.workspace, c) {
                Ok(d) => d,
                Err(e) => return Observation::fail(e),
            },
            None => self.workspace.clone(),
        };
        let mut cmd = Command::new(&argv[0]);
        cmd.args(&argv[1..]).current_dir(&dir);
        self.finish_command(cmd, argv)
    }

    /// [`ToolExecutor::run_argv`] with a different timeout (a `command_exit` gate's
    /// `timeout_seconds`).
    pub fn run_argv_with_timeout(
        &mut self,
        argv: &[String],
        cwd: Option<&str>,
        timeout: Duration,
    ) -> Observation {
        let saved = std::mem::replace(&mut self.timeout, timeout);
        let o = self.run_argv(argv, cwd);
        self.timeout = saved;
        o
    }

    fn finish_command(&self, cmd: Command, argv: &[String]) -> Observation {
        let shown = argv.join(" ");
        match run_with_timeout(cmd, self.timeout) {
            Err(e) => Observation::fail(e),
            Ok(out) => {
                let summary = if out.timed_out {
                    format!(
                        "`{shown}` timed out after {} ms and was killed",
                        self.timeout.as_millis()
                    )
                } else {
                    match out.exit_code {
                        Some(c) => format!("`{shown}` exited with {c}"),
                        None => format!("`{shown}` was killed by a signal"),
                    }
                };
                let mut o = if out.exit_code == Some(0) {
                    Observation::ok(summary)
                } else {
                    Observation::fail(summary)
                };
                o.exit_code = out.exit_code;
                o.with_raw(json!({
                    "argv": argv,
                    "stdout": out.stdout,
                    "stderr": out.stderr,
                    "timedOut": out.timed_out,
                }))
            }
        }
    }

    fn exec(&mut self, cmd: &str, cwd: Option<&str>) -> Observation {
        if cmd.contains(SHELL_METACHARACTERS) {
            if !self.policy.allow_shell {
                return Observation::fail(format!(
                    "terminal.exec: {cmd:?} uses shell syntax and riskPolicy.allowShell is false; use terminal.run with argv"
                ));
            }
            let argv = vec!["sh".to_owned(), "-c".to_owned(), cmd.to_owned()];
            return self.run_argv(&argv, cwd);
        }
        let argv: Vec<String> = cmd.split_whitespace().map(str::to_owned).collect();
        if argv.is_empty() {
            return Observation::fail("terminal.exec: empty command");
        }
        self.run_argv(&argv, cwd)
    }

    fn fs_read(&self, path: &str) -> Observation {
        let full = match resolve_in_workspace(&self.workspace, path) {
            Ok(p) => p,
            Err(e) => return Observation::fail(e),
        };
        match std::fs::read(&full) {
            Ok(bytes) => {
                let text = String::from_utf8_lossy(&bytes).into_owned();
                Observation::ok(format!("read {} bytes from {path}", bytes.len()))
                    .with_artifact("path", path)
                    .with_raw(json!({ "content": text }))
            }
            Err(e) => Observation::fail(format!("fs.read {path}: {e}")),
        }
    }

    fn note_changed(&mut self, path: &str) {
        let clean = normalize(path);
        if !self.changed.contains(&clean) {
            self.changed.push(clean);
        }
    }

    fn fs_write(&mut self, path: &str, content: &str) -> Observation {
        let full = match resolve_in_workspace(&self.workspace, path) {
            Ok(p) => p,
            Err(e) => return Observation::fail(e),
        };
        if let Some(parent) = full.parent()
            && let Err(e) = std::fs::create_dir_all(parent)
        {
            return Observation::fail(format!("fs.write {path}: {e}"));
        }
        // Re-check after creating directories: nothing may have redirected the path.
        if let Err(e) = resolve_in_workspace(&self.workspace, path) {
            return Observation::fail(e);
        }
        match std::fs::write(&full, content) {
            Ok(()) => {
                self.note_changed(path);
                Observation::ok(format!("wrote {} bytes to {path}", content.len()))
                    .with_artifact("path", normalize(path))
            }
            Err(e) => Observation::fail(format!("fs.write {path}: {e}")),
        }
    }

    fn fs_apply_patch(&mut self, path: &str, patch_text: &str) -> Observation {
        let full = match resolve_in_workspace(&self.workspace, path) {
            Ok(p) => p,
            Err(e) => return Observation::fail(e),
        };
        let original = match std::fs::read_to_string(&full) {
            Ok(s) => s,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(e) => return Observation::fail(format!("fs.applyPatch {path}: {e}")),
        };
        match patch::apply(&original, patch_text) {
            Err(e) => Observation::fail(format!("fs.applyPatch {path}: {e}")),
            Ok(new) => {
                if let Some(parent) = full.parent() {
                    let _ = std::fs::create_dir_all(parent);
                }
                match std::fs::write(&full, &new) {
                    Ok(()) => {
                        self.note_changed(path);
                        Observation::ok(format!("patched {path}"))
                            .with_artifact("path", normalize(path))
                    }
                    Err(e) => Observation::fail(format!("fs.applyPatch {path}: {e}")),
                }
            }
        }
    }

    fn fs_search(&self, pattern: &str, paths: &[String]) -> Observation {
        let re = match crate::package::pattern::Pattern::compile(pattern) {
            Ok(r) => r,
            Err(e) => {
                return Observation::fail(format!("fs.search: invalid regex {pattern:?}: {e}"));
            }
        };
        let roots: Vec<String> = if paths.is_empty() {
            vec![".".into()]
        } else {
            paths.to_vec()
        };
        let mut files = Vec::new();
        for root in &roots {
            match resolve_in_workspace(&self.workspace, root) {
                Ok(p) => collect_files(&self.workspace, &p, &mut files),
                Err(e) => return Observation::fail(e),
            }
        }
        files.sort();
        files.dedup();
        let mut matches = Vec::new();
        for rel in &files {
            let Ok(text) = std::fs::read_to_string(self.workspace.join(rel)) else {
                continue;
            };
            for (i, line) in text.lines().enumerate() {
                match re.is_match(line) {
                    Ok(true) => matches.push(format!("{}:{}:{}", rel.display(), i + 1, line)),
                    Ok(false) => {}
                    Err(e) => return Observation::fail(format!("fs.search: {e}")),
                }
            }
        }
        Observation::ok(format!(
            "{} matches in {} files searched",
            matches.len(),
            files.len()
        ))
        .with_raw(json!({ "matches": matches }))
    }

    fn git_command(&self, args: &[&str]) -> Command {
        let secs = self.clock.now_ms().div_euclid(1000);
        let date = format!("@{secs} +0000");
        let mut cmd = Command::new("git");
        cmd.args(["-c", "commit.gpgsign=false", "-c", "core.autocrlf=false"])
            .args(args)
            .current_dir(&self.workspace)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_AUTHOR_NAME", "loom-process")
            .env("GIT_AUTHOR_EMAIL", "loom-process@localhost")
            .env("GIT_COMMITTER_NAME", "loom-process")
            .env("GIT_COMMITTER_EMAIL", "loom-process@localhost")
            .env("GIT_AUTHOR_DATE", &date)
            .env("GIT_COMMITTER_DATE", &date);
        cmd
    }

    fn git(&self, args: &[&str], what: &str) -> Observation {
        let mut argv: Vec<String> = vec!["git".into()];
        argv.extend(args.iter().map(|s| (*s).to_owned()));
        let mut o = self.finish_command(self.git_command(args), &argv);
        o.summary = format!("{what}: {}", o.summary);
        o
    }

    fn git_commit(&self, message: &str) -> Observation {
        let add = self.git(&["add", "-A"], "git add");
        if !add.ok {
            return add;
        }
        self.git(&["commit", "-q", "-m", message], "git commit")
    }

    fn checkpoint_create(&mut self, label: Option<&str>) -> Observation {
        let mut files = Vec::new();
        collect_files(&self.workspace, &self.workspace, &mut files);
        let mut snap = Snapshot::new();
        for rel in files {
            match std::fs::read(self.workspace.join(&rel)) {
                Ok(b) => {
                    snap.insert(rel, b);
                }
                Err(e) => {
                    return Observation::fail(format!("checkpoint.create: {}: {e}", rel.display()));
                }
            }
        }
        let id = format!("cp-{}", self.checkpoints.len() + 1);
        let n = snap.len();
        self.checkpoints.insert(id.clone(), snap);
        Observation::ok(format!("checkpoint {id} of {n} files"))
            .with_artifact("checkpointId", id.as_str())
            .with_raw(json!({ "label": label }))
    }

    fn checkpoint_restore(&mut self, id: &str) -> Observation {
        let Some(snap) = self.checkpoints.get(id).cloned() else {
            let known: Vec<&str> = self.checkpoints.keys().map(String::as_str).collect();
            return Observation::fail(format!(
                "checkpoint.restore: no checkpoint {id:?} (known: {})",
                if known.is_empty() {
                    "none".to_owned()
                } else {
                    known.join(", ")
                }
            ));
        };
        let mut now = Vec::new();
        collect_files(&self.workspace, &self.workspace, &mut now);
        let mut removed = 0;
        for rel in now {
            if !snap.contains_key(&rel) {
                if let Err(e) = std::fs::remove_file(self.workspace.join(&rel)) {
                    return Observation::fail(format!(
                        "checkpoint.restore: {}: {e}",
                        rel.display()
                    ));
                }
                removed += 1;
            }
        }
        for (rel, bytes) in &snap {
            let full = self.workspace.join(rel);
            if let Some(p) = full.parent() {
                let _ = std::fs::create_dir_all(p);
            }
            if let Err(e) = std::fs::write(&full, bytes) {
                return Observation::fail(format!("checkpoint.restore: {}: {e}", rel.display()));
            }
        }
        Observation::ok(format!(
            "restored {id}: {} files written, {removed} removed",
            snap.len()
        ))
        .with_artifact("checkpointId", id)
    }

    fn browser_fetch(&self, url: &str) -> Observation {
        if let Err(e) = admit_network(&self.policy, url) {
            return Observation::fail(e);
        }
        let Some(fetch) = &self.fetch else {
            return Observation::fail(format!(
                "browser.fetch {url}: the network is allowed but this runner has no HTTP fetcher configured"
            ));
        };
        match fetch.fetch(url) {
            Ok((status, body)) => {
                let mut o = if (200..300).contains(&status) {
                    Observation::ok(format!("GET {url}: HTTP {status}, {} bytes", body.len()))
                } else {
                    Observation::fail(format!("GET {url}: HTTP {status}"))
                };
                o.raw = json!({ "status": status, "body": body });
                o
            }
            Err(e) => Observation::fail(format!("browser.fetch {url}: {e}")),
        }
    }
}

/// `a/./b` -> `a/b`: the workspace-relative spelling used in artifacts and change lists.
pub fn normalize(path: &str) -> String {
    Path::new(path)
        .components()
        .filter_map(|c| match c {
            std::path::Component::Normal(p) => Some(p.to_string_lossy().into_owned()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// Regular files under `from` (a file or directory inside `workspace`), as workspace-relative
/// paths, skipping `.git` and `.loom` and never following symlinks.
pub fn collect_files(workspace: &Path, from: &Path, out: &mut Vec<PathBuf>) {
    let Ok(meta) = from.symlink_metadata() else {
        return;
    };
    if meta.is_file() {
        if let Ok(rel) = from.strip_prefix(workspace) {
            out.push(rel.to_path_buf());
        }
        return;
    }
    if !meta.is_dir() {
        return;
    }
    let Ok(rd) = std::fs::read_dir(from) else {
        return;
    };
    let mut entries: Vec<PathBuf> = rd.filter_map(|e| e.ok().map(|e| e.path())).collect();
    entries.sort();
    for p in entries {
        let name = p
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if name == ".git" || name == ".loom" {
            continue;
        }
        collect_files(workspace, &p, out);
    }
}

/// A dependency-free check used by tests and the runner: the text of a workspace file.
pub fn read_workspace_file(workspace: &Path, rel: &str) -> Option<String> {
    resolve_in_workspace(workspace, rel)
        .ok()
        .and_then(|p| std::fs::read_to_string(p).ok())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::clock::ManualClock;
    use crate::engine::policy::{CommandPolicy, DenyConfirm};

    fn exec(dir: &Path, policy: RiskPolicy) -> ToolExecutor {
        ToolExecutor::new(
            dir,
            policy,
            Arc::new(DenyConfirm),
            Arc::new(ManualClock::new(1_700_000_000_000)),
        )
        .unwrap()
    }

    fn act(v: Json) -> ToolAction {
        ToolAction::from_json(&v).unwrap()
    }

    #[test]
    fn write_read_patch_search() {
        let dir = tempfile::tempdir().unwrap();
        let mut t = exec(dir.path(), RiskPolicy::default());
        let o = t.execute(&act(json!({"id": "1", "type": "fs.write", "path": "src/./a.txt", "content": "alpha\nTODO beta\n"})));
        assert!(o.ok, "{o:?}");
        assert_eq!(o.artifacts["path"], "src/a.txt");
        let o = t.execute(&act(
            json!({"id": "2", "type": "fs.read", "path": "src/a.txt"}),
        ));
        assert_eq!(o.raw["content"], "alpha\nTODO beta\n");
        let o = t.execute(&act(json!({"id": "3", "type": "fs.applyPatch", "path": "src/a.txt", "patch": "@@ -2 +2 @@\n-TODO beta\n+beta\n"})));
        assert!(o.ok, "{o:?}");
        let o = t.execute(&act(json!({"id": "4", "type": "fs.applyPatch", "path": "src/a.txt", "patch": "@@ -2 +2 @@\n-TODO beta\n+beta\n"})));
        assert!(!o.ok && o.summary.contains("does not match"), "{o:?}");
        t.execute(&act(json!({"id": "5", "type": "fs.write", "path": "b.txt", "content": "TODO one\nno\nTODO two\n"})));
        let o = t.execute(&act(
            json!({"id": "6", "type": "fs.search", "pattern": "TODO|beta"}),
        ));
        assert_eq!(
            o.raw["matches"],
            json!(["b.txt:1:TODO one", "b.txt:3:TODO two", "src/a.txt:2:beta"])
        );
        assert_eq!(t.changed_files(), ["src/a.txt", "b.txt"]);
        let o = t.execute(&act(
            json!({"id": "7", "type": "fs.search", "pattern": "("}),
        ));
        assert!(!o.ok && o.summary.contains("invalid regex"));
    }

    #[test]
    fn path_escapes_are_refused_for_every_fs_action() {
        let dir = tempfile::tempdir().unwrap();
        let mut t = exec(dir.path(), RiskPolicy::default());
        for a in [
            json!({"id": "1", "type": "fs.write", "path": "../x", "content": ""}),
            json!({"id": "2", "type": "fs.read", "path": "/etc/passwd"}),
            json!({"id": "3", "type": "fs.applyPatch", "path": "a/../../x", "patch": "@@ -0,0 +1 @@\n+x\n"}),
            json!({"id": "4", "type": "fs.search", "pattern": "x", "paths": [".."]}),
            json!({"id": "5", "type": "terminal.run", "program": "cargo", "args": ["test"], "cwd": "/"}),
        ] {
            let o = t.execute(&act(a.clone()));
            assert!(
                !o.ok && o.summary.contains("pathPolicy workspace_only"),
                "{a}: {o:?}"
            );
        }
    }

    #[test]
    fn commands_follow_the_policy() {
        let dir = tempfile::tempdir().unwrap();
        let mut p = RiskPolicy {
            command_allowlist: vec!["echo".into(), "sh".into()],
            command_policy: CommandPolicy::Allowlist,
            ..RiskPolicy::default()
        };
        let mut t = exec(dir.path(), p.clone());
        let o = t.execute(&act(
            json!({"id": "1", "type": "terminal.run", "program": "echo", "args": ["hi there"]}),
        ));
        assert!(o.ok, "{o:?}");
        assert_eq!(o.exit_code, Some(0));
        assert_eq!(o.raw["stdout"], "hi there\n");
        let o = t.execute(&act(
            json!({"id": "2", "type": "terminal.run", "program": "ls"}),
        ));
        assert!(
            !o.ok && o.summary.starts_with("commandPolicy allowlist"),
            "{o:?}"
        );
        let o = t.execute(&act(
            json!({"id": "3", "type": "terminal.exec", "cmd": "echo a b"}),
        ));
        assert_eq!(o.raw["stdout"], "a b\n");
        let o = t.execute(&act(
            json!({"id": "4", "type": "terminal.exec", "cmd": "echo a | cat"}),
        ));
        assert!(!o.ok && o.summary.contains("allowShell"), "{o:?}");
        p.allow_shell = true;
        let mut t = exec(dir.path(), p);
        let o = t.execute(&act(
            json!({"id": "5", "type": "terminal.exec", "cmd": "echo a | tr a b; exit 3"}),
        ));
        assert_eq!(o.exit_code, Some(3));
        assert_eq!(o.raw["stdout"], "b\n");
        assert!(!o.ok);
    }

    #[test]
    fn commands_time_out() {
        let dir = tempfile::tempdir().unwrap();
        let p = RiskPolicy {
            command_allowlist: vec!["sleep".into()],
            ..RiskPolicy::default()
        };
        let mut t = exec(dir.path(), p).with_timeout(Duration::from_millis(100));
        let o = t.execute(&act(
            json!({"id": "1", "type": "terminal.run", "program": "sleep", "args": ["5"]}),
        ));
        assert!(!o.ok && o.summary.contains("timed out"), "{o:?}");
        assert_eq!(o.raw["timedOut"], true);
    }

    #[test]
    fn checkpoints_restore_contents_and_remove_new_files() {
        let dir = tempfile::tempdir().unwrap();
        let mut t = exec(dir.path(), RiskPolicy::default());
        t.execute(&act(
            json!({"id": "1", "type": "fs.write", "path": "a.txt", "content": "v1"}),
        ));
        let o = t.execute(&act(
            json!({"id": "2", "type": "checkpoint.create", "label": "before"}),
        ));
        assert_eq!(o.artifacts["checkpointId"], "cp-1");
        t.execute(&act(
            json!({"id": "3", "type": "fs.write", "path": "a.txt", "content": "v2"}),
        ));
        t.execute(&act(
            json!({"id": "4", "type": "fs.write", "path": "d/new.txt", "content": "n"}),
        ));
        let o = t.execute(&act(
            json!({"id": "5", "type": "checkpoint.restore", "checkpointId": "cp-1"}),
        ));
        assert!(o.ok, "{o:?}");
        assert_eq!(
            std::fs::read_to_string(dir.path().join("a.txt")).unwrap(),
            "v1"
        );
        assert!(!dir.path().join("d/new.txt").exists());
        let o = t.execute(&act(
            json!({"id": "6", "type": "checkpoint.restore", "checkpointId": "cp-9"}),
        ));
        assert!(!o.ok && o.summary.contains("known: cp-1"), "{o:?}");
    }

    #[test]
    fn fetch_is_refused_without_network() {
        let dir = tempfile::tempdir().unwrap();
        let mut t = exec(dir.path(), RiskPolicy::default());
        let o = t.execute(&act(
            json!({"id": "1", "type": "browser.fetch", "url": "https://example.org"}),
        ));
        assert!(
            !o.ok && o.summary.contains("allowNetwork is false"),
            "{o:?}"
        );
        let p = RiskPolicy {
            allow_network: true,
            ..RiskPolicy::default()
        };
        let mut t = exec(dir.path(), p);
        let o = t.execute(&act(
            json!({"id": "2", "type": "browser.fetch", "url": "https://example.org"}),
        ));
        assert!(!o.ok && o.summary.contains("no HTTP fetcher"), "{o:?}");
    }

    #[test]
    fn git_commits_are_deterministic() {
        let mut hashes = Vec::new();
        for _ in 0..2 {
            let dir = tempfile::tempdir().unwrap();
            let mut t = exec(dir.path(), RiskPolicy::default());
            let init = t.git(&["init", "-q", "-b", "main"], "git init");
            assert!(init.ok, "{init:?}");
            t.execute(&act(
                json!({"id": "1", "type": "fs.write", "path": "a.txt", "content": "x\n"}),
            ));
            let st = t.execute(&act(json!({"id": "2", "type": "git.status"})));
            assert_eq!(st.raw["stdout"], "?? a.txt\n");
            let c = t.execute(&act(
                json!({"id": "3", "type": "git.commit", "message": "add a"}),
            ));
            assert!(c.ok, "{c:?}");
            let head = t.git(&["rev-parse", "HEAD"], "rev-parse");
            hashes.push(head.raw["stdout"].as_str().unwrap().to_owned());
            t.execute(&act(
                json!({"id": "4", "type": "fs.write", "path": "a.txt", "content": "y\n"}),
            ));
            let d = t.execute(&act(
                json!({"id": "5", "type": "git.diff", "path": "a.txt"}),
            ));
            assert!(d.raw["stdout"].as_str().unwrap().contains("+y"), "{d:?}");
        }
        assert_eq!(hashes[0], hashes[1]);
        assert_eq!(hashes[0].len(), 41);
    }
}
