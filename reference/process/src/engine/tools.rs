//! Executes loop-engine "Tool Action Schema (v1)" actions in a workspace directory under the
//! task's risk policy (loop-engine "Task Config Schema"). Every outcome, including every
//! refusal, is an [`Observation`]; the executor never panics on model input.
//!
//! Decisions (README "Running"):
//! - `terminal.run` runs argv directly (no shell). `terminal.exec` splits its command line on
//!   whitespace and runs it the same way when it has no shell syntax; with shell syntax
//!   (`| & ; < > ( ) $ \` \ " ' * ? [ ] { } ~ #` or a newline) it runs through `sh -c` only when
//!   `riskPolicy.allowShell` is true, and is admitted by the command policy as `sh -c CMD`.
//! - Commands run with a minimal environment (`minimal_env`: `PATH`, `HOME` = workspace,
//!   `LANG`, `TMPDIR=/tmp`; never the runner's API keys), in the workspace (or a
//!   workspace-relative `cwd`), in their own process group, which is killed after the
//!   executor's timeout (default 120 s, real time: a safety net, not a budget) and once the
//!   command exits; output is capped while it is read ([`run_with_timeout`]).
//! - `git.*` actions are dedicated tools, not arbitrary commands, so the command policy does
//!   not apply to them. They act on `<ws>/.git` only (never an enclosing repository; no
//!   repository means `ok: false`), with every config key that runs a program neutralized,
//!   hooks off, a fixed identity and author and committer dates from the injected clock,
//!   and with user/system git config ignored, so the same run makes the same commit hashes
//!   (`ToolExecutor::git_command`).
//! - Checkpoints are kept in memory for the executor's life: a snapshot of every regular file
//!   except under `.git/` and `.loom/`; ids are `cp-1`, `cp-2`, ... Restoring removes files
//!   created since and rewrites the snapshot's files, through the write path policy
//!   ([`resolve_for_write`]: never through a symlink).
//! - `browser.fetch` is refused unless `allowNetwork`; when allowed it goes through the
//!   injected [`Fetch`] (the CLI wires an HTTP client), and is refused if none is configured.

use super::action::{Observation, ToolAction};
use super::bundled::BundledTools;
use super::clock::Clock;
use super::patch;
use super::policy::{
    Confirm, RiskPolicy, admit_check_command, admit_command, admit_network, resolve_for_write,
    resolve_in_workspace,
};
use super::wave_view::WaveView;
#[cfg(test)]
use serde_json::Value as Json;
use serde_json::json;
use std::collections::{BTreeMap, BTreeSet};
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

/// Structured outputs of tools the package does not bundle — Loom built-ins such as
/// `humanize_writing` (guide "Phase iteration loops" example) — as `tool_metric` gates read
/// them. The scripted backend supplies them in deterministic runs; a package's own bundled
/// tools run for real instead (`engine::bundled`).
pub trait ToolOutputs: Send + Sync + std::fmt::Debug {
    /// The tool's structured data for this phase and attempt, if known.
    fn output(&self, tool: &str, phase: &str, attempt: u32) -> Option<serde_json::Value>;
}

/// The result of running one command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandOutput {
    /// Exit code (`None` when killed by a signal or the timeout).
    pub exit_code: Option<i32>,
    /// Captured stdout (lossy UTF-8, at most [`MAX_OUTPUT_BYTES`] bytes were kept).
    pub stdout: String,
    /// Captured stderr (lossy UTF-8, at most [`MAX_OUTPUT_BYTES`] bytes were kept).
    pub stderr: String,
    /// Whether the timeout killed it.
    pub timed_out: bool,
    /// Whether output past the cap was discarded (or a reader was abandoned).
    pub truncated: bool,
}

/// How long the pipe readers may still take once the command ended: a grandchild that left
/// its own process group may hold a pipe open forever; the runner stops waiting for it.
const READER_GRACE: Duration = Duration::from_millis(500);

/// What a pipe reader has captured so far: kept bytes, whether bytes were discarded, and
/// whether it reached the end of the pipe.
#[derive(Debug, Default)]
struct Capture {
    kept: Vec<u8>,
    truncated: bool,
    done: bool,
}

/// Reads `pipe` to its end on a thread, keeping at most `cap` bytes and discarding the rest
/// (the pipe is drained so the writer never blocks on a full pipe).
fn spawn_reader<R: Read + Send + 'static>(
    pipe: Option<R>,
    cap: usize,
) -> Arc<std::sync::Mutex<Capture>> {
    let shared = Arc::new(std::sync::Mutex::new(Capture::default()));
    let mine = shared.clone();
    std::thread::spawn(move || {
        let mut buf = [0u8; 8192];
        if let Some(mut p) = pipe {
            loop {
                match p.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => {
                        let Ok(mut c) = mine.lock() else { break };
                        let room = cap.saturating_sub(c.kept.len());
                        let take = room.min(n);
                        c.kept.extend_from_slice(&buf[..take]);
                        if take < n {
                            c.truncated = true;
                        }
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(_) => break,
                }
            }
        }
        if let Ok(mut c) = mine.lock() {
            c.done = true;
        }
    });
    shared
}

/// Kills every process of the command's process group (the command was started as its
/// leader, so the group id is its pid). Errors (typically: the group is already gone) are
/// ignored.
fn kill_group(pid: u32) {
    if let Some(pgid) = i32::try_from(pid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
    {
        let _ = rustix::process::kill_process_group(pgid, rustix::process::Signal::KILL);
    }
}

/// Runs `cmd` to completion or until `timeout`, capturing at most [`MAX_OUTPUT_BYTES`] per
/// stream. The command runs in its own process group; the whole group is killed on timeout
/// and again once the command itself has exited (so `sh -c 'sleep 30 &'` leaves nothing
/// behind), and the pipe readers get [`READER_GRACE`] after that before they are abandoned
/// (their output so far is kept and marked truncated).
pub fn run_with_timeout(mut cmd: Command, timeout: Duration) -> Result<CommandOutput, String> {
    use std::os::unix::process::CommandExt;
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let program = format!("{:?}", cmd.get_program());
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("cannot start {program}: {e}"))?;
    let pid = child.id();
    let out = spawn_reader(child.stdout.take(), MAX_OUTPUT_BYTES);
    let err = spawn_reader(child.stderr.take(), MAX_OUTPUT_BYTES);
    let start = Instant::now();
    let mut timed_out = false;
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break Some(s),
            Ok(None) if start.elapsed() >= timeout => {
                kill_group(pid);
                let _ = child.kill();
                timed_out = true;
                break child.wait().ok();
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(5)),
            Err(e) => {
                kill_group(pid);
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("waiting for {program}: {e}"));
            }
        }
    };
    // Whatever the command left running in its group (background jobs) goes too.
    kill_group(pid);
    let grace_end = Instant::now() + READER_GRACE;
    let finished = |c: &Arc<std::sync::Mutex<Capture>>| c.lock().map(|c| c.done).unwrap_or(true);
    while !(finished(&out) && finished(&err)) && Instant::now() < grace_end {
        std::thread::sleep(Duration::from_millis(2));
    }
    let take = |c: &Arc<std::sync::Mutex<Capture>>| -> (String, bool) {
        let (bytes, truncated) = match c.lock() {
            Ok(mut g) => (std::mem::take(&mut g.kept), g.truncated || !g.done),
            Err(_) => (Vec::new(), true),
        };
        let mut s = String::from_utf8_lossy(&bytes).into_owned();
        if truncated {
            s.push_str("\n[output truncated]");
        }
        (s, truncated)
    };
    let (stdout, t1) = take(&out);
    let (stderr, t2) = take(&err);
    Ok(CommandOutput {
        exit_code: if timed_out {
            None
        } else {
            status.and_then(|s| s.code())
        },
        stdout,
        stderr,
        timed_out,
        truncated: t1 || t2,
    })
}

/// The environment every command (model actions, checks, git) starts from: nothing of the
/// runner's own environment except `PATH` (so API keys and tokens never reach a command),
/// `HOME` = the workspace, `LANG=C.UTF-8`, `TMPDIR=/tmp`.
fn minimal_env(cmd: &mut Command, workspace: &Path) {
    cmd.env_clear();
    if let Some(path) = std::env::var_os("PATH") {
        cmd.env("PATH", path);
    } else {
        cmd.env("PATH", "/usr/local/bin:/usr/bin:/bin");
    }
    cmd.env("HOME", workspace)
        .env("LANG", "C.UTF-8")
        .env("TMPDIR", "/tmp");
}

/// Largest file `fs.read` returns (bigger files are cut here, `truncated: true`); also the
/// most `fs.search` reads of one file.
pub const MAX_READ_BYTES: u64 = 1024 * 1024;
/// Most matches `fs.search` reports (`truncated: true` past it).
pub const MAX_SEARCH_MATCHES: usize = 1000;
/// Longest matched line `fs.search` reports, in bytes (longer lines are cut, ending in `…`).
pub const MAX_SEARCH_LINE_BYTES: usize = 500;

/// Opens `path` for reading only if it is a regular file: opened without following a final
/// symlink and without blocking (a FIFO or device is refused, never read).
fn open_regular(path: &Path) -> Result<std::fs::File, String> {
    use rustix::fs::{Mode, OFlags};
    let fd = rustix::fs::open(
        path,
        OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| std::io::Error::from(e).to_string())?;
    let file = std::fs::File::from(fd);
    let meta = file.metadata().map_err(|e| e.to_string())?;
    if !meta.is_file() {
        return Err("not a regular file (FIFOs, devices and sockets are refused)".into());
    }
    Ok(file)
}

/// At most `cap` bytes of `bytes`; the flag says whether there was more.
fn capped(bytes: &[u8], cap: u64) -> (Vec<u8>, bool) {
    let n = usize::try_from(cap).unwrap_or(usize::MAX).min(bytes.len());
    (bytes[..n].to_vec(), bytes.len() > n)
}

/// Reads at most `cap` bytes of a regular file; the flag says whether there was more.
fn read_capped(path: &Path, cap: u64) -> Result<(Vec<u8>, bool), String> {
    let file = open_regular(path)?;
    let mut bytes = Vec::new();
    file.take(cap.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| e.to_string())?;
    let truncated = bytes.len() as u64 > cap;
    bytes.truncate(usize::try_from(cap).unwrap_or(usize::MAX));
    Ok((bytes, truncated))
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
    /// Every workspace-relative path this executor wrote or removed (fs actions, restores).
    written: BTreeSet<String>,
    /// A fork sharing the workspace with concurrently running phases: `checkpoint.restore`
    /// reverts only the paths this executor wrote ([`ToolExecutor::fork`]).
    scoped: bool,
    /// In a concurrent wave: the wave's shared view and this executor's phase id.
    view: Option<(Arc<WaveView>, String)>,
    /// The package's bundled tools (`tool.call`), if any.
    bundled: Option<Arc<BundledTools>>,
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
            written: BTreeSet::new(),
            scoped: false,
            view: None,
            bundled: None,
        })
    }

    /// Sets the package's bundled tools, which `tool.call` runs.
    pub fn with_bundled(mut self, bundled: Arc<BundledTools>) -> Self {
        self.bundled = Some(bundled);
        self
    }

    /// The package's bundled tools, if set.
    pub fn bundled(&self) -> Option<&Arc<BundledTools>> {
        self.bundled.as_ref()
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

    /// An executor for one phase of a concurrent wave (README "Scheduling and phase mode"):
    /// the same workspace, policy, confirmer, fetcher and timeout, with `clock` (the phase's
    /// clock fork), no checkpoints, nothing written yet. Its `checkpoint.restore` reverts only
    /// paths it wrote itself, so restoring one phase's baseline never undoes a sibling's
    /// files (files a command created are not tracked, so a restore leaves them alone).
    /// Its fs writes are recorded in `view` first, and its `fs.read`/`fs.search` see the
    /// wave-start bytes of paths the other phases wrote ([`WaveView`]).
    pub fn fork(&self, clock: Arc<dyn Clock>, view: Arc<WaveView>, phase: &str) -> Self {
        ToolExecutor {
            workspace: self.workspace.clone(),
            policy: self.policy.clone(),
            confirm: self.confirm.clone(),
            clock,
            fetch: self.fetch.clone(),
            timeout: self.timeout,
            checkpoints: BTreeMap::new(),
            changed: Vec::new(),
            written: BTreeSet::new(),
            scoped: true,
            view: Some((view, phase.to_owned())),
            bundled: self.bundled.clone(),
        }
    }

    /// Every workspace-relative path this executor wrote or removed, sorted: what the
    /// runner compares between the phases of a wave to find write races.
    pub fn written_paths(&self) -> &BTreeSet<String> {
        &self.written
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
            ToolAction::FsWrite { path, content, .. } => {
                self.guarded_write(path, |me| me.fs_write(path, content))
            }
            ToolAction::FsApplyPatch { path, patch, .. } => {
                self.guarded_write(path, |me| me.fs_apply_patch(path, patch))
            }
            ToolAction::FsSearch { pattern, paths, .. } => self.fs_search(pattern, paths),
            ToolAction::GitStatus { .. } => self.git_status(),
            ToolAction::GitDiff { path, .. } => self.git_diff(path.as_deref()),
            ToolAction::GitCommit { message, .. } => self.git_commit(message),
            ToolAction::CheckpointCreate { label, .. } => self.checkpoint_create(label.as_deref()),
            ToolAction::CheckpointRestore { checkpoint_id, .. } => {
                self.checkpoint_restore(checkpoint_id)
            }
            ToolAction::BrowserFetch { url, .. } => self.browser_fetch(url),
            ToolAction::ToolCall { tool, args, .. } => self.call_tool(tool, args),
        }
    }

    /// Runs a bundled tool (`tool.call`, or a `tool_metric` gate's own call) under the
    /// command environment policy, in the workspace (`engine::bundled`). The observation's
    /// `raw` holds the `ToolResult` (`data`, `files_changed`, `output`, `error`) and the
    /// interpreter as the package declared it; `files_changed` inside the workspace are
    /// recorded as written by this executor.
    pub fn call_tool(&mut self, tool: &str, args: &serde_json::Value) -> Observation {
        let Some(bundled) = self.bundled.clone() else {
            return Observation::fail(format!(
                "tool.call: no bundled tools (tool {tool:?}); this runner provides the Loop Engine actions and the package's tools/*.py"
            ));
        };
        let subtask = self
            .view
            .as_ref()
            .map(|(_, p)| p.clone())
            .unwrap_or_default();
        let (mut cmd, interp) = match bundled.command(tool, args, &self.workspace, &subtask) {
            Ok(c) => c,
            Err(e) => return Observation::fail(format!("tool.call {tool}: {e}")),
        };
        minimal_env(&mut cmd, &self.workspace);
        for (k, v) in bundled.tool_env() {
            cmd.env(k, v);
        }
        let (run, out) = match super::bundled::run(cmd, self.timeout) {
            Ok(r) => r,
            Err(e) => {
                return Observation::fail(format!("tool.call {tool}: {e}"))
                    .with_raw(json!({"tool": tool, "interpreter": interp.declared}));
            }
        };
        let mut files = Vec::new();
        for f in &run.files_changed {
            if resolve_in_workspace(&self.workspace, f).is_ok() {
                let n = normalize(f);
                if !self.changed.contains(&n) {
                    self.changed.push(n.clone());
                }
                self.written.insert(n.clone());
                files.push(n);
            }
        }
        let summary = if run.ok {
            format!("{tool}: {}", run.output)
        } else {
            format!("{tool} failed: {}", run.error.clone().unwrap_or_default())
        };
        let mut o = if run.ok {
            Observation::ok(summary)
        } else {
            Observation::fail(summary)
        };
        o.exit_code = out.exit_code;
        o.with_artifact("tool", tool).with_raw(json!({
            "tool": tool,
            "interpreter": interp.declared,
            "data": run.data,
            "output": run.output,
            "error": run.error,
            "filesChanged": files,
        }))
    }

    /// Runs a model command's argv under the command policy (`commandAllowlist`, empty by
    /// default).
    pub fn run_argv(&mut self, argv: &[String], cwd: Option<&str>) -> Observation {
        if let Err(reason) = admit_command(&self.policy, self.confirm.as_ref(), argv) {
            return Observation::fail(reason);
        }
        self.run_admitted(argv, cwd, self.timeout)
    }

    /// [`ToolExecutor::run_argv`] with a different timeout.
    pub fn run_argv_with_timeout(
        &mut self,
        argv: &[String],
        cwd: Option<&str>,
        timeout: Duration,
    ) -> Observation {
        if let Err(reason) = admit_command(&self.policy, self.confirm.as_ref(), argv) {
            return Observation::fail(reason);
        }
        self.run_admitted(argv, cwd, timeout)
    }

    /// Runs a runner check's argv (a `command_exit` gate, a judge `command` rule) under the
    /// command policy with the guide's allowlist plus the task's
    /// ([`admit_check_command`]), with `timeout` (a gate's `timeout_seconds`) or the
    /// executor's.
    pub fn run_check_argv(
        &mut self,
        argv: &[String],
        cwd: Option<&str>,
        timeout: Option<Duration>,
    ) -> Observation {
        if let Err(reason) = admit_check_command(&self.policy, self.confirm.as_ref(), argv) {
            return Observation::fail(reason);
        }
        self.run_admitted(argv, cwd, timeout.unwrap_or(self.timeout))
    }

    fn run_admitted(&self, argv: &[String], cwd: Option<&str>, timeout: Duration) -> Observation {
        let dir = match cwd {
            Some(c) => match resolve_in_workspace(&self.workspace, c) {
                Ok(d) => d,
                Err(e) => return Observation::fail(e),
            },
            None => self.workspace.clone(),
        };
        let mut cmd = Command::new(&argv[0]);
        cmd.args(&argv[1..]).current_dir(&dir);
        minimal_env(&mut cmd, &self.workspace);
        self.finish_command(cmd, argv, timeout)
    }

    fn finish_command(&self, cmd: Command, argv: &[String], timeout: Duration) -> Observation {
        let shown = argv.join(" ");
        match run_with_timeout(cmd, timeout) {
            Err(e) => Observation::fail(e),
            Ok(out) => {
                let summary = if out.timed_out {
                    format!(
                        "`{shown}` timed out after {} ms and was killed",
                        timeout.as_millis()
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
                let mut raw = json!({
                    "argv": argv,
                    "stdout": out.stdout,
                    "stderr": out.stderr,
                    "timedOut": out.timed_out,
                });
                if out.truncated {
                    raw["truncated"] = json!(true);
                }
                o.with_raw(raw)
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

    /// Runs `write` (which writes `rel`) with the wave view locked and `rel`'s bytes before
    /// the wave's first write to it recorded ([`WaveView`]); outside a wave just runs it.
    fn guarded_write<R>(&mut self, rel: &str, write: impl FnOnce(&mut Self) -> R) -> R {
        let Some((view, phase)) = self.view.clone() else {
            return write(self);
        };
        let mut guard = view.lock(&phase);
        let ws = &self.workspace;
        guard.note_write(&normalize(rel), || {
            resolve_in_workspace(ws, rel)
                .ok()
                .and_then(|p| read_capped(&p, MAX_RUNNER_READ_BYTES).ok())
                .map(|(b, _)| b)
        });
        write(self)
    }

    fn fs_read(&self, path: &str) -> Observation {
        let full = match resolve_in_workspace(&self.workspace, path) {
            Ok(p) => p,
            Err(e) => return Observation::fail(e),
        };
        let guard = self.view.as_ref().map(|(v, p)| v.lock(p));
        let read = match guard
            .as_ref()
            .and_then(|g| g.sibling_before(&normalize(path)))
        {
            Some(Some(b)) => Ok(capped(b, MAX_READ_BYTES)),
            Some(None) => Err(std::io::Error::from(rustix::io::Errno::NOENT).to_string()),
            None => read_capped(&full, MAX_READ_BYTES),
        };
        drop(guard);
        match read {
            Ok((bytes, truncated)) => {
                let text = String::from_utf8_lossy(&bytes).into_owned();
                let mut raw = json!({ "content": text });
                let summary = if truncated {
                    raw["truncated"] = json!(true);
                    format!(
                        "read the first {} bytes of {path} (the file is larger; fs.read returns at most {MAX_READ_BYTES} bytes)",
                        bytes.len()
                    )
                } else {
                    format!("read {} bytes from {path}", bytes.len())
                };
                Observation::ok(summary)
                    .with_artifact("path", path)
                    .with_raw(raw)
            }
            Err(e) => Observation::fail(format!("fs.read {path}: {e}")),
        }
    }

    fn note_changed(&mut self, path: &str) {
        let clean = normalize(path);
        self.written.insert(clean.clone());
        if !self.changed.contains(&clean) {
            self.changed.push(clean);
        }
    }

    fn fs_write(&mut self, path: &str, content: &str) -> Observation {
        let full = match self.prepare_write(path) {
            Ok(p) => p,
            Err(e) => return Observation::fail(format!("fs.write {path}: {e}")),
        };
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
        let full = match resolve_for_write(&self.workspace, path) {
            Ok(p) => p,
            Err(e) => return Observation::fail(e),
        };
        let original = if full.symlink_metadata().is_err() {
            String::new()
        } else {
            match read_capped(&full, MAX_READ_BYTES) {
                Ok((_, true)) => {
                    return Observation::fail(format!(
                        "fs.applyPatch {path}: the file is larger than {MAX_READ_BYTES} bytes"
                    ));
                }
                Ok((bytes, false)) => match String::from_utf8(bytes) {
                    Ok(s) => s,
                    Err(_) => {
                        return Observation::fail(format!(
                            "fs.applyPatch {path}: the file is not UTF-8 text"
                        ));
                    }
                },
                Err(e) => return Observation::fail(format!("fs.applyPatch {path}: {e}")),
            }
        };
        match patch::apply(&original, patch_text) {
            Err(e) => Observation::fail(format!("fs.applyPatch {path}: {e}")),
            Ok(new) => {
                let full = match self.prepare_write(path) {
                    Ok(p) => p,
                    Err(e) => return Observation::fail(format!("fs.applyPatch {path}: {e}")),
                };
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
        // In a concurrent wave: the wave-start view (files a sibling created are not there,
        // files it changed read as before), held for the whole search.
        let guard = self.view.as_ref().map(|(v, p)| v.lock(p));
        let before = |rel: &Path| {
            guard
                .as_ref()
                .and_then(|g| g.sibling_before(&normalize(&rel.to_string_lossy())))
        };
        files.retain(|rel| before(rel) != Some(None));
        let mut matches = Vec::new();
        let mut truncated = false;
        'files: for rel in &files {
            let read = match before(rel) {
                Some(Some(b)) => Ok(capped(b, MAX_READ_BYTES)),
                _ => read_capped(&self.workspace.join(rel), MAX_READ_BYTES),
            };
            let Ok((bytes, cut)) = read else {
                continue;
            };
            let Ok(text) = String::from_utf8(bytes) else {
                continue;
            };
            truncated |= cut;
            for (i, line) in text.lines().enumerate() {
                match re.is_match(line) {
                    Ok(true) => {
                        if matches.len() == MAX_SEARCH_MATCHES {
                            truncated = true;
                            break 'files;
                        }
                        matches.push(format!("{}:{}:{}", rel.display(), i + 1, clip_line(line)));
                    }
                    Ok(false) => {}
                    Err(e) => return Observation::fail(format!("fs.search: {e}")),
                }
            }
        }
        let mut raw = json!({ "matches": matches });
        if truncated {
            raw["truncated"] = json!(true);
        }
        Observation::ok(format!(
            "{} matches in {} files searched{}",
            matches.len(),
            files.len(),
            if truncated {
                format!(
                    " (truncated: at most {MAX_SEARCH_MATCHES} matches, {MAX_READ_BYTES} bytes per file)"
                )
            } else {
                String::new()
            }
        ))
        .with_raw(raw)
    }

    /// Resolves `path` for a write ([`resolve_for_write`]), creates its parent directories,
    /// and checks again right before the caller writes (nothing may have redirected it).
    fn prepare_write(&self, path: &str) -> Result<PathBuf, String> {
        let full = resolve_for_write(&self.workspace, path)?;
        if let Some(parent) = full.parent() {
            std::fs::create_dir_all(parent).map_err(|e| e.to_string())?;
        }
        resolve_for_write(&self.workspace, path)
    }

    /// Writes `bytes` to workspace-relative `rel`, or removes it when `None`, through the
    /// write path policy ([`resolve_for_write`]: no `.git`, no symlinked component). Used by
    /// `checkpoint.restore` and by the fan-in publish rollback (guide "Output coordination").
    pub fn restore_file(&mut self, rel: &str, bytes: Option<&[u8]>) -> Result<(), String> {
        self.guarded_write(rel, |me| me.restore_file_unguarded(rel, bytes))
    }

    fn restore_file_unguarded(&mut self, rel: &str, bytes: Option<&[u8]>) -> Result<(), String> {
        self.written.insert(normalize(rel));
        match bytes {
            Some(b) => {
                let full = self.prepare_write(rel)?;
                std::fs::write(&full, b).map_err(|e| format!("{rel}: {e}"))
            }
            None => {
                let full = resolve_for_write(&self.workspace, rel)?;
                match std::fs::remove_file(&full) {
                    Ok(()) => Ok(()),
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
                    Err(e) => Err(format!("{rel}: {e}")),
                }
            }
        }
    }

    /// Removes the workspace-relative directory `rel` and everything under it (symlinks
    /// inside are removed, never followed), through the write path policy. A missing
    /// directory is fine. Used to reset fan-in intermediates before a `full_rerun` retry.
    pub fn clear_dir(&self, rel: &str) -> Result<(), String> {
        let full = resolve_for_write(&self.workspace, rel)?;
        match std::fs::remove_dir_all(&full) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(format!("{rel}: {e}")),
        }
    }

    /// The `git` command for the workspace repository. Repository discovery is pinned
    /// (`GIT_DIR=<ws>/.git`, `GIT_WORK_TREE=<ws>`, `GIT_CEILING_DIRECTORIES=<parent>`), the
    /// environment is [`minimal_env`] (no inherited `GIT_*`), user and system config are
    /// ignored, and every config key that makes git run a program is neutralized
    /// (`core.fsmonitor`, `core.hooksPath`, `diff.external`, `core.pager`, `core.editor`,
    /// `core.sshCommand`, `core.askPass`, `sequence.editor`, `gpg.program`), pathspecs are
    /// literal, and the identity and dates are fixed (injected clock).
    fn git_command(&self, args: &[&str]) -> Command {
        let secs = self.clock.now_ms().div_euclid(1000);
        let date = format!("@{secs} +0000");
        let mut cmd = Command::new("git");
        cmd.args([
            "-c",
            "commit.gpgsign=false",
            "-c",
            "core.autocrlf=false",
            "-c",
            "core.fsmonitor=false",
            "-c",
            "core.hooksPath=/dev/null",
            "-c",
            "diff.external=",
            "-c",
            "core.pager=cat",
            "-c",
            "core.editor=true",
            "-c",
            "sequence.editor=true",
            "-c",
            "core.sshCommand=false",
            "-c",
            "core.askPass=",
            "-c",
            "gpg.program=false",
            "-c",
            "core.attributesFile=/dev/null",
        ])
        .args(args)
        .current_dir(&self.workspace);
        minimal_env(&mut cmd, &self.workspace);
        let parent = self.workspace.parent().unwrap_or(&self.workspace);
        cmd.env("GIT_DIR", self.workspace.join(".git"))
            .env("GIT_WORK_TREE", &self.workspace)
            .env("GIT_CEILING_DIRECTORIES", parent)
            .env("GIT_LITERAL_PATHSPECS", "1")
            .env("GIT_TERMINAL_PROMPT", "0")
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
        let mut o = self.finish_command(self.git_command(args), &argv, self.timeout);
        o.summary = format!("{what}: {}", o.summary);
        o
    }

    /// `git.*` act only on the workspace's own repository: `<ws>/.git` must be a real
    /// directory (not a symlink, not a `gitdir:` file). The runner never creates one.
    fn git_repo_check(&self, what: &str) -> Result<(), Observation> {
        match self.workspace.join(".git").symlink_metadata() {
            Ok(m) if m.is_dir() => Ok(()),
            _ => Err(Observation::fail(format!(
                "{what}: the workspace is not a git repository (no .git directory at its root)"
            ))),
        }
    }

    fn git_status(&self) -> Observation {
        if let Err(o) = self.git_repo_check("git status") {
            return o;
        }
        self.git(&["status", "--porcelain=v1"], "git status")
    }

    fn git_diff(&self, path: Option<&str>) -> Observation {
        if let Err(o) = self.git_repo_check("git diff") {
            return o;
        }
        let base = ["diff", "--no-ext-diff", "--no-textconv", "--no-color"];
        match path {
            None => self.git(&base, "git diff"),
            Some(p) if p.starts_with(':') => Observation::fail(format!(
                "git diff: {p:?} starts with ':' (pathspec magic is refused; give a workspace-relative path)"
            )),
            Some(p) => match resolve_in_workspace(&self.workspace, p) {
                Ok(_) => {
                    let clean = normalize(p);
                    let mut args = base.to_vec();
                    args.extend(["--", clean.as_str()]);
                    self.git(&args, "git diff")
                }
                Err(e) => Observation::fail(e),
            },
        }
    }

    fn git_commit(&self, message: &str) -> Observation {
        if let Err(o) = self.git_repo_check("git commit") {
            return o;
        }
        let add = self.git(&["add", "-A"], "git add");
        if !add.ok {
            return add;
        }
        self.git(
            &["commit", "-q", "--no-verify", "-m", message],
            "git commit",
        )
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
        let (snap, now) = if self.scoped {
            let own = |rel: &PathBuf| self.written.contains(&normalize(&rel.to_string_lossy()));
            let snap: Snapshot = snap.into_iter().filter(|(rel, _)| own(rel)).collect();
            let now: Vec<PathBuf> = now.into_iter().filter(|rel| own(rel)).collect();
            (snap, now)
        } else {
            (snap, now)
        };
        let mut removed = 0;
        for rel in now {
            if !snap.contains_key(&rel) {
                if let Err(e) = self.restore_file(&rel.to_string_lossy(), None) {
                    return Observation::fail(format!("checkpoint.restore: {e}"));
                }
                removed += 1;
            }
        }
        for (rel, bytes) in &snap {
            if let Err(e) = self.restore_file(&rel.to_string_lossy(), Some(bytes)) {
                return Observation::fail(format!("checkpoint.restore: {e}"));
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

/// Largest workspace file the runner itself reads (deliverables, fan-in inputs, evidence).
pub const MAX_RUNNER_READ_BYTES: u64 = 16 * 1024 * 1024;

/// A dependency-free check used by tests and the runner: the text of a workspace file
/// (a regular file under the path policy, at most [`MAX_RUNNER_READ_BYTES`], valid UTF-8).
pub fn read_workspace_file(workspace: &Path, rel: &str) -> Option<String> {
    read_workspace_bytes(workspace, rel).and_then(|b| String::from_utf8(b).ok())
}

/// The bytes of a workspace file (a regular file under the path policy, at most
/// [`MAX_RUNNER_READ_BYTES`]; larger files, FIFOs and devices give `None`).
pub fn read_workspace_bytes(workspace: &Path, rel: &str) -> Option<Vec<u8>> {
    let p = resolve_in_workspace(workspace, rel).ok()?;
    match read_capped(&p, MAX_RUNNER_READ_BYTES) {
        Ok((b, false)) => Some(b),
        _ => None,
    }
}

/// `line`, cut to [`MAX_SEARCH_LINE_BYTES`] at a character boundary (ending in `…`).
fn clip_line(line: &str) -> String {
    if line.len() <= MAX_SEARCH_LINE_BYTES {
        return line.to_owned();
    }
    let mut cut = MAX_SEARCH_LINE_BYTES;
    while !line.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}…", &line[..cut])
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
        let mut t = exec(dir.path(), allow(&["cargo test"]));
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

    fn allow(list: &[&str]) -> RiskPolicy {
        RiskPolicy {
            command_allowlist: list.iter().map(|s| (*s).to_owned()).collect(),
            ..RiskPolicy::default()
        }
    }

    fn git_init(t: &ToolExecutor) {
        let init = t.git(&["init", "-q", "-b", "main"], "git init");
        assert!(init.ok, "{init:?}");
    }

    /// Model fs actions cannot reach git metadata (hooks, config) nor write `.gitattributes`.
    #[test]
    fn fs_actions_refuse_git_metadata() {
        let dir = tempfile::tempdir().unwrap();
        let mut t = exec(dir.path(), allow(&["true"]));
        git_init(&t);
        for a in [
            json!({"id": "1", "type": "fs.write", "path": ".git/hooks/pre-commit", "content": "#!/bin/sh\ntouch pwned\n"}),
            json!({"id": "2", "type": "fs.write", "path": ".GIT/config", "content": "[core]\nfsmonitor = touch pwned\n"}),
            json!({"id": "3", "type": "fs.applyPatch", "path": "./.git/config", "patch": "@@ -0,0 +1 @@\n+x\n"}),
            json!({"id": "4", "type": "fs.read", "path": ".git/config"}),
            json!({"id": "5", "type": "fs.search", "pattern": "x", "paths": [".git"]}),
            json!({"id": "6", "type": "fs.write", "path": ".gitattributes", "content": "* filter=evil\n"}),
            json!({"id": "7", "type": "terminal.run", "program": "true", "cwd": ".git/hooks"}),
        ] {
            let o = t.execute(&act(a.clone()));
            assert!(!o.ok, "{a}: {o:?}");
            assert!(
                o.summary.contains("pathPolicy workspace_only"),
                "{a}: {o:?}"
            );
        }
        assert!(!dir.path().join(".git/hooks/pre-commit").exists());
        assert!(!dir.path().join(".gitattributes").exists());
    }

    /// A repository whose config and hooks were planted anyway never runs them.
    #[cfg(unix)]
    #[test]
    fn git_ignores_hooks_and_program_config_of_the_repository() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().canonicalize().unwrap();
        let mut t = exec(&ws, RiskPolicy::default());
        git_init(&t);
        let marker = ws.join("hook-ran");
        let script = format!("#!/bin/sh\ntouch {}\nexit 1\n", marker.display());
        for hook in ["pre-commit", "commit-msg", "post-commit"] {
            let p = ws.join(".git/hooks").join(hook);
            std::fs::write(&p, &script).unwrap();
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        let ext = ws.join("ext.sh");
        std::fs::write(&ext, &script).unwrap();
        std::fs::set_permissions(&ext, std::fs::Permissions::from_mode(0o755)).unwrap();
        let mut cfg = std::fs::OpenOptions::new()
            .append(true)
            .open(ws.join(".git/config"))
            .unwrap();
        use std::io::Write as _;
        writeln!(
            cfg,
            "[core]\n\tfsmonitor = {e}\n\tpager = {e}\n[diff]\n\texternal = {e}",
            e = ext.display()
        )
        .unwrap();
        t.execute(&act(
            json!({"id": "1", "type": "fs.write", "path": "a.txt", "content": "x\n"}),
        ));
        let st = t.execute(&act(json!({"id": "2", "type": "git.status"})));
        assert!(st.ok, "{st:?}");
        let c = t.execute(&act(
            json!({"id": "3", "type": "git.commit", "message": "add a"}),
        ));
        assert!(c.ok, "{c:?}");
        t.execute(&act(
            json!({"id": "4", "type": "fs.write", "path": "a.txt", "content": "y\n"}),
        ));
        let d = t.execute(&act(json!({"id": "5", "type": "git.diff"})));
        assert!(d.raw["stdout"].as_str().unwrap().contains("+y"), "{d:?}");
        assert!(!marker.exists(), "a hook or configured program ran");
    }

    /// `git.*` never walks up to an enclosing repository, and refuses pathspec magic.
    #[test]
    fn git_acts_on_the_workspace_repository_only() {
        let outer = tempfile::tempdir().unwrap();
        let outer_t = exec(outer.path(), RiskPolicy::default());
        git_init(&outer_t);
        let ws = outer.path().join("ws");
        let mut t = exec(&ws, RiskPolicy::default());
        std::fs::write(ws.join("f.txt"), "x").unwrap();
        for a in [
            json!({"id": "1", "type": "git.status"}),
            json!({"id": "2", "type": "git.diff"}),
            json!({"id": "3", "type": "git.commit", "message": "m"}),
        ] {
            let o = t.execute(&act(a.clone()));
            assert!(
                !o.ok && o.summary.contains("not a git repository"),
                "{a}: {o:?}"
            );
        }
        let log = outer_t.git(&["log", "--oneline"], "log");
        assert!(!log.ok, "the outer repository got no commit: {log:?}");
        git_init(&t);
        for p in [":(top)f.txt", ":/", "../f.txt", ".git/config"] {
            let o = t.execute(&act(json!({"id": "4", "type": "git.diff", "path": p})));
            assert!(!o.ok, "{p}: {o:?}");
        }
    }

    /// Commands get a minimal environment: nothing of the runner's (API keys, CARGO_*, ...).
    #[test]
    fn commands_run_with_a_minimal_environment() {
        let dir = tempfile::tempdir().unwrap();
        let mut t = exec(dir.path(), allow(&["env"]));
        assert!(
            std::env::vars().count() > 4,
            "the test process has more variables"
        );
        let o = t.execute(&act(
            json!({"id": "1", "type": "terminal.run", "program": "env"}),
        ));
        assert!(o.ok, "{o:?}");
        let mut keys: Vec<String> = o.raw["stdout"]
            .as_str()
            .unwrap()
            .lines()
            .filter_map(|l| l.split_once('=').map(|(k, _)| k.to_owned()))
            .collect();
        keys.sort();
        assert_eq!(keys, ["HOME", "LANG", "PATH", "TMPDIR"]);
        let ws = t.workspace().display().to_string();
        assert!(
            o.raw["stdout"]
                .as_str()
                .unwrap()
                .contains(&format!("HOME={ws}\n"))
        );
    }

    /// A background job keeps the pipes open; the runner does not wait for it.
    #[test]
    fn background_jobs_neither_hang_the_runner_nor_survive() {
        let dir = tempfile::tempdir().unwrap();
        let mut t = exec(dir.path(), allow(&["sh"])).with_timeout(Duration::from_millis(300));
        let start = Instant::now();
        let o = t.execute(&act(
            json!({"id": "1", "type": "terminal.run", "program": "sh", "args": ["-c", "sleep 30 & echo started"]}),
        ));
        assert!(o.ok, "{o:?}");
        assert_eq!(o.raw["stdout"], "started\n");
        let o = t.execute(&act(
            json!({"id": "2", "type": "terminal.run", "program": "sh", "args": ["-c", "sleep 30 & sleep 30"]}),
        ));
        assert!(!o.ok && o.raw["timedOut"] == true, "{o:?}");
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "took {:?}",
            start.elapsed()
        );
    }

    #[test]
    fn command_output_is_capped_while_reading() {
        let dir = tempfile::tempdir().unwrap();
        let mut t = exec(dir.path(), allow(&["sh"]));
        let o = t.execute(&act(
            json!({"id": "1", "type": "terminal.run", "program": "sh", "args": ["-c", "head -c 300000 /dev/zero | tr '\\0' a"]}),
        ));
        assert!(o.ok, "{o:?}");
        assert_eq!(o.raw["truncated"], true);
        let out = o.raw["stdout"].as_str().unwrap();
        assert!(out.len() <= MAX_OUTPUT_BYTES + 32, "{}", out.len());
        assert!(out.ends_with("[output truncated]"));
        let o = t.execute(&act(
            json!({"id": "2", "type": "terminal.run", "program": "sh", "args": ["-c", "echo short"]}),
        ));
        assert!(o.raw.get("truncated").is_none(), "{o:?}");
    }

    #[test]
    fn fs_read_and_search_are_capped() {
        let dir = tempfile::tempdir().unwrap();
        let mut t = exec(dir.path(), RiskPolicy::default());
        let big = "x".repeat(MAX_READ_BYTES as usize + 10);
        std::fs::write(dir.path().join("big.txt"), &big).unwrap();
        let o = t.execute(&act(
            json!({"id": "1", "type": "fs.read", "path": "big.txt"}),
        ));
        assert!(o.ok, "{o:?}");
        assert_eq!(o.raw["truncated"], true);
        assert_eq!(
            o.raw["content"].as_str().unwrap().len(),
            MAX_READ_BYTES as usize
        );
        let many: String = (0..1500).map(|i| format!("hit {i}\n")).collect();
        std::fs::write(dir.path().join("many.txt"), many).unwrap();
        std::fs::write(
            dir.path().join("long.txt"),
            format!("hit {}", "y".repeat(5000)),
        )
        .unwrap();
        let o = t.execute(&act(
            json!({"id": "2", "type": "fs.search", "pattern": "^hit", "paths": ["long.txt", "many.txt"]}),
        ));
        let m = o.raw["matches"].as_array().unwrap();
        assert_eq!(m.len(), MAX_SEARCH_MATCHES);
        assert_eq!(o.raw["truncated"], true);
        let first = m[0].as_str().unwrap();
        assert!(first.starts_with("long.txt:1:hit yyy") && first.ends_with('…'));
        assert!(first.len() < MAX_SEARCH_LINE_BYTES + 32);
    }

    /// FIFOs (and devices) are refused, never opened for a blocking read.
    #[test]
    fn fs_read_refuses_non_regular_files() {
        let dir = tempfile::tempdir().unwrap();
        let mut t = exec(dir.path(), RiskPolicy::default());
        let made = Command::new("mkfifo")
            .arg(dir.path().join("pipe"))
            .status()
            .unwrap();
        assert!(made.success());
        let o = t.execute(&act(json!({"id": "1", "type": "fs.read", "path": "pipe"})));
        assert!(!o.ok && o.summary.contains("not a regular file"), "{o:?}");
        let o = t.execute(&act(
            json!({"id": "2", "type": "fs.search", "pattern": "x", "paths": ["pipe"]}),
        ));
        assert!(o.ok && o.raw["matches"] == json!([]), "{o:?}");
    }

    /// A directory swapped for a symlink after the checkpoint does not redirect the restore.
    #[cfg(unix)]
    #[test]
    fn checkpoint_restore_never_writes_through_symlinks() {
        let outside = tempfile::tempdir().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let mut t = exec(dir.path(), RiskPolicy::default());
        t.execute(&act(
            json!({"id": "1", "type": "fs.write", "path": "d/f.txt", "content": "v1"}),
        ));
        t.execute(&act(json!({"id": "2", "type": "checkpoint.create"})));
        std::fs::remove_dir_all(dir.path().join("d")).unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("d")).unwrap();
        let o = t.execute(&act(
            json!({"id": "3", "type": "checkpoint.restore", "checkpointId": "cp-1"}),
        ));
        assert!(
            !o.ok && o.summary.contains("outside the workspace"),
            "{o:?}"
        );
        assert!(!outside.path().join("f.txt").exists());
        // A link that stays inside is refused too: writes never follow links.
        std::fs::remove_file(dir.path().join("d")).unwrap();
        std::fs::create_dir(dir.path().join("real")).unwrap();
        std::os::unix::fs::symlink(dir.path().join("real"), dir.path().join("d")).unwrap();
        let o = t.execute(&act(
            json!({"id": "4", "type": "checkpoint.restore", "checkpointId": "cp-1"}),
        ));
        assert!(!o.ok && o.summary.contains("symlink"), "{o:?}");
        assert!(!dir.path().join("real/f.txt").exists());
    }

    /// The fan-in rollback's primitive: neither a removal nor a write follows a link.
    #[cfg(unix)]
    #[test]
    fn restore_file_never_removes_or_writes_through_symlinks() {
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("f.txt"), "keep").unwrap();
        let dir = tempfile::tempdir().unwrap();
        let mut t = exec(dir.path(), RiskPolicy::default());
        std::os::unix::fs::symlink(outside.path(), dir.path().join("d")).unwrap();
        assert!(t.restore_file("d/f.txt", None).is_err());
        assert!(t.restore_file("d/f.txt", Some(b"evil")).is_err());
        assert_eq!(
            std::fs::read_to_string(outside.path().join("f.txt")).unwrap(),
            "keep"
        );
        assert!(t.restore_file(".git/config", Some(b"x")).is_err());
        t.restore_file("e/g.txt", Some(b"y")).unwrap();
        assert_eq!(std::fs::read(dir.path().join("e/g.txt")).unwrap(), b"y");
        t.restore_file("e/g.txt", None).unwrap();
        assert!(!dir.path().join("e/g.txt").exists());
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
