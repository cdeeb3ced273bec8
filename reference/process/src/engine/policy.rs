//! loop-engine "Task Config Schema": the task config, its `riskPolicy` and the checks that
//! enforce it. Every refusal is a reason string the tool executor turns into an
//! [`Observation`](super::action::Observation) with `ok: false`.
//!
//! Readings of the schema (README "Running"):
//! - `pathPolicy` has one documented value, `workspace_only`; it is the only one accepted.
//! - `commandPolicy`: `allowlist` runs only commands whose argv starts with an allowlisted
//!   prefix; `confirm` runs allowlisted commands and asks a [`Confirm`] for the rest (the CLI's
//!   confirmer is non-interactive and denies, saying so); `deny` runs no command at all.
//! - The allowlist is an extension field `commandAllowlist` (argv prefixes written as
//!   space-separated strings). For the model's `terminal.*` actions it is EMPTY by default, so
//!   under the default `confirm` policy a non-interactive run denies every model command
//!   unless the task config lists it. Runner checks (`command_exit` gates, judge `command`
//!   rules) are admitted by the guide's `command_exit` MVP allowlist (guide "Phase iteration
//!   loops") plus `commandAllowlist` ([`admit_check_command`]). An allowlisted prefix is not a
//!   sandbox: `cargo test` runs code the model wrote.
//! - `workspace_only` also keeps every path out of git metadata: a path with a component
//!   named `.git` (any case) is refused, and writes to `.gitattributes` are refused
//!   (git runs filter/diff drivers named there); writes refuse symlinked components
//!   ([`resolve_for_write`]).
//! - `allowShell` (extension, default `false`) lets `terminal.exec` hand a command line with
//!   shell syntax to `sh -c`.

use serde::{Deserialize, Serialize};
use std::path::{Component, Path, PathBuf};

/// The guide's `command_exit` allowlisted prefixes (guide "Phase iteration loops"): the
/// allowlist of runner checks ([`admit_check_command`]), not of model commands.
pub const DEFAULT_COMMAND_ALLOWLIST: [&str; 11] = [
    "pytest",
    "uv run pytest",
    "python -m pytest",
    "python3 -m pytest",
    "ruff check",
    "npm test",
    "pnpm test",
    "bun test",
    "go test",
    "cargo test",
    "make test",
];

/// `riskPolicy.pathPolicy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub enum PathPolicy {
    /// Every path stays inside the workspace.
    #[default]
    #[serde(rename = "workspace_only")]
    WorkspaceOnly,
}

/// `riskPolicy.commandPolicy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum CommandPolicy {
    /// Only allowlisted commands run.
    Allowlist,
    /// Allowlisted commands run; others need a [`Confirm`].
    #[default]
    Confirm,
    /// No command runs.
    Deny,
}

/// loop-engine "Task Config Schema" `riskPolicy` (default: no network, `confirm`,
/// `workspace_only`, an empty model allowlist, no shell).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RiskPolicy {
    /// `browser.fetch` is refused unless true.
    #[serde(default)]
    pub allow_network: bool,
    /// How commands are admitted.
    #[serde(default)]
    pub command_policy: CommandPolicy,
    /// How paths are confined.
    #[serde(default)]
    pub path_policy: PathPolicy,
    /// Extension: allowlisted argv prefixes (`"cargo test"`) for model commands; empty by
    /// default. Checks also get the guide's list ([`admit_check_command`]).
    #[serde(default)]
    pub command_allowlist: Vec<String>,
    /// Extension: `terminal.exec` may use `sh -c` for shell syntax.
    #[serde(default)]
    pub allow_shell: bool,
}

fn guide_allowlist() -> Vec<String> {
    DEFAULT_COMMAND_ALLOWLIST
        .iter()
        .map(|s| (*s).to_owned())
        .collect()
}

/// loop-engine "Task Config Schema" `budget` (all optional; absent = unlimited), plus a
/// token cap (extension `maxTokens`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TaskBudget {
    /// Model turns across the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_iterations: Option<u64>,
    /// Tool calls across the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tool_calls: Option<u64>,
    /// Wall time across the run, by the injected clock.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_wall_time_ms: Option<u64>,
    /// Tokens across the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u64>,
}

/// loop-engine "Task Config Schema".
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TaskConfig {
    /// Task id.
    #[serde(default)]
    pub task_id: String,
    /// Workspace directory.
    #[serde(default)]
    pub workspace: String,
    /// The goal.
    #[serde(default)]
    pub goal: String,
    /// Completion criteria (free text).
    #[serde(default)]
    pub completion: Vec<String>,
    /// Run-wide budget.
    #[serde(default)]
    pub budget: TaskBudget,
    /// Risk policy.
    #[serde(default)]
    pub risk_policy: RiskPolicy,
    /// Autonomy (`auto` is the only mode the runner has: it never waits for a person).
    #[serde(default = "default_autonomy")]
    pub autonomy: String,
}

fn default_autonomy() -> String {
    "auto".into()
}

impl Default for TaskConfig {
    fn default() -> Self {
        TaskConfig {
            task_id: String::new(),
            workspace: String::new(),
            goal: String::new(),
            completion: Vec::new(),
            budget: TaskBudget::default(),
            risk_policy: RiskPolicy::default(),
            autonomy: default_autonomy(),
        }
    }
}

/// Asks whether a command outside the allowlist may run (`commandPolicy: confirm`).
#[cfg_attr(test, mockall::automock)]
pub trait Confirm: Send + Sync + std::fmt::Debug {
    /// `Ok(())` to run `argv`, `Err(reason)` to refuse.
    fn confirm(&self, argv: &[String]) -> Result<(), String>;
}

/// The non-interactive confirmer: denies every request and says why.
#[derive(Debug, Clone, Copy, Default)]
pub struct DenyConfirm;

impl Confirm for DenyConfirm {
    fn confirm(&self, argv: &[String]) -> Result<(), String> {
        Err(format!(
            "commandPolicy confirm: `{}` is not allowlisted and this non-interactive run has no one to confirm it, so it is denied",
            argv.join(" ")
        ))
    }
}

/// Whether `argv` starts with one of the allowlisted prefixes (token-wise).
pub fn allowlisted(allowlist: &[String], argv: &[String]) -> bool {
    allowlist.iter().any(|prefix| {
        let toks: Vec<&str> = prefix.split_whitespace().collect();
        !toks.is_empty()
            && toks.len() <= argv.len()
            && toks.iter().zip(argv).all(|(a, b)| *a == b.as_str())
    })
}

/// Applies `commandPolicy` to `argv` (loop-engine "Task Config Schema").
pub fn admit_command(
    policy: &RiskPolicy,
    confirm: &dyn Confirm,
    argv: &[String],
) -> Result<(), String> {
    if argv.is_empty() || argv[0].is_empty() {
        return Err("empty command".into());
    }
    match policy.command_policy {
        CommandPolicy::Deny => Err(format!(
            "commandPolicy deny: no command may run (`{}`)",
            argv.join(" ")
        )),
        CommandPolicy::Allowlist if allowlisted(&policy.command_allowlist, argv) => Ok(()),
        CommandPolicy::Allowlist => Err(format!(
            "commandPolicy allowlist: `{}` does not start with an allowlisted prefix ({})",
            argv.join(" "),
            policy.command_allowlist.join(", ")
        )),
        CommandPolicy::Confirm if allowlisted(&policy.command_allowlist, argv) => Ok(()),
        CommandPolicy::Confirm => confirm.confirm(argv),
    }
}

/// Applies `commandPolicy` to a runner check's `argv` (a `command_exit` gate or a judge
/// `command` rule, written by the package or task author, not the model): the allowlist is
/// the guide's `command_exit` MVP list (guide "Phase iteration loops") plus the task's
/// `commandAllowlist`. `deny` still denies.
pub fn admit_check_command(
    policy: &RiskPolicy,
    confirm: &dyn Confirm,
    argv: &[String],
) -> Result<(), String> {
    let mut widened = policy.clone();
    let mut list = guide_allowlist();
    list.extend(policy.command_allowlist.iter().cloned());
    widened.command_allowlist = list;
    admit_command(&widened, confirm, argv)
}

/// `allowNetwork` (loop-engine "Task Config Schema").
pub fn admit_network(policy: &RiskPolicy, url: &str) -> Result<(), String> {
    if policy.allow_network {
        Ok(())
    } else {
        Err(format!(
            "riskPolicy.allowNetwork is false: fetching {url} is refused"
        ))
    }
}

/// Whether a path component names git metadata (`.git`, any case: case-insensitive file
/// systems fold `.GIT` onto it).
fn is_git_dir_name(name: &std::ffi::OsStr) -> bool {
    name.to_string_lossy().eq_ignore_ascii_case(".git")
}

/// Refuses a path that has a `.git` component: git runs hooks, fsmonitor commands and
/// filters named in `.git/config`, so the model may not touch git metadata.
fn refuse_git_metadata(raw: &str, path: &Path) -> Result<(), String> {
    if path.components().any(|c| match c {
        Component::Normal(n) => is_git_dir_name(n),
        _ => false,
    }) {
        return Err(format!(
            "pathPolicy workspace_only: {raw:?} is inside git metadata (.git/); it is off limits"
        ));
    }
    Ok(())
}

/// [`resolve_in_workspace`] for a write (fs.write, fs.applyPatch, checkpoint.restore, the
/// fan-in publish and its rollback): additionally refuses `.gitattributes` (any case; it names
/// filter and diff drivers git would run) and any symlink among the existing components
/// below the workspace, the final one included, so a write never goes through a link.
/// Call it again right before writing when directories were created in between.
pub fn resolve_for_write(workspace: &Path, raw: &str) -> Result<PathBuf, String> {
    let full = resolve_in_workspace(workspace, raw)?;
    if Path::new(raw).components().any(|c| match c {
        Component::Normal(n) => n.to_string_lossy().eq_ignore_ascii_case(".gitattributes"),
        _ => false,
    }) {
        return Err(format!(
            "pathPolicy workspace_only: writing {raw:?} is refused (.gitattributes names programs git would run)"
        ));
    }
    let mut at = workspace.to_path_buf();
    for c in Path::new(raw).components() {
        if let Component::Normal(n) = c {
            at.push(n);
            match at.symlink_metadata() {
                Ok(m) if m.file_type().is_symlink() => {
                    return Err(format!(
                        "pathPolicy workspace_only: {raw:?} goes through a symlink ({}); writes never follow links",
                        at.strip_prefix(workspace).unwrap_or(&at).display()
                    ));
                }
                Ok(_) => {}
                Err(_) => break,
            }
        }
    }
    Ok(full)
}

/// `pathPolicy: workspace_only`: resolves a workspace-relative path to an absolute one inside
/// `workspace` (which must already be canonical). Rejects empty paths, absolute paths, `..`
/// segments, paths into git metadata (`.git`, any case, also when reached through a
/// symlink), and paths whose existing part resolves (through symlinks) outside the workspace.
/// The path need not exist yet (for writes); its nearest existing ancestor is canonicalized.
pub fn resolve_in_workspace(workspace: &Path, raw: &str) -> Result<PathBuf, String> {
    if raw.is_empty() {
        return Err("pathPolicy workspace_only: empty path".into());
    }
    if raw.contains('\0') {
        return Err(format!(
            "pathPolicy workspace_only: {raw:?} contains a NUL byte"
        ));
    }
    let rel = Path::new(raw);
    if rel.is_absolute() || raw.starts_with('/') || raw.starts_with('\\') || rel.has_root() {
        return Err(format!(
            "pathPolicy workspace_only: {raw:?} is absolute; paths must be workspace-relative"
        ));
    }
    let mut clean = PathBuf::new();
    for c in rel.components() {
        match c {
            Component::Normal(p) => clean.push(p),
            Component::CurDir => {}
            Component::ParentDir => {
                return Err(format!(
                    "pathPolicy workspace_only: {raw:?} has a `..` segment"
                ));
            }
            Component::RootDir | Component::Prefix(_) => {
                return Err(format!("pathPolicy workspace_only: {raw:?} is absolute"));
            }
        }
    }
    refuse_git_metadata(raw, &clean)?;
    let full = workspace.join(&clean);
    // Canonicalize the deepest existing ancestor (the path itself when it exists), so a
    // symlink anywhere along the way is followed before the containment check.
    let mut existing = full.clone();
    let mut rest: Vec<std::ffi::OsString> = Vec::new();
    loop {
        if existing.symlink_metadata().is_ok() {
            break;
        }
        match (existing.file_name(), existing.parent()) {
            (Some(name), Some(parent)) => {
                rest.push(name.to_owned());
                existing = parent.to_path_buf();
            }
            _ => break,
        }
    }
    let canon = existing
        .canonicalize()
        .map_err(|e| format!("pathPolicy workspace_only: cannot resolve {raw:?}: {e}"))?;
    if !canon.starts_with(workspace) {
        return Err(format!(
            "pathPolicy workspace_only: {raw:?} resolves outside the workspace (through a symlink)"
        ));
    }
    let mut out = canon;
    for name in rest.into_iter().rev() {
        out.push(name);
    }
    refuse_git_metadata(raw, out.strip_prefix(workspace).unwrap_or(&out))?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_owned).collect()
    }

    #[test]
    fn task_config_parses_the_schema_example() {
        let text = r#"{
          "taskId": "uuid", "workspace": "D:/repo", "goal": "Fix failing tests",
          "completion": ["tests pass", "git clean"],
          "budget": { "maxIterations": 30, "maxToolCalls": 200, "maxWallTimeMs": 3600000 },
          "riskPolicy": { "allowNetwork": false, "commandPolicy": "confirm", "pathPolicy": "workspace_only" },
          "autonomy": "auto"
        }"#;
        let c: TaskConfig = serde_json::from_str(text).unwrap();
        assert_eq!(c.budget.max_tool_calls, Some(200));
        assert_eq!(c.risk_policy.command_policy, CommandPolicy::Confirm);
        assert!(
            c.risk_policy.command_allowlist.is_empty(),
            "model commands have no default allowlist"
        );
        let bad = r#"{"riskPolicy": {"pathPolicy": "anywhere"}}"#;
        let err = serde_json::from_str::<TaskConfig>(bad)
            .unwrap_err()
            .to_string();
        assert!(err.contains("anywhere"), "{err}");
    }

    #[test]
    fn allowlist_matches_whole_tokens_only() {
        let list = guide_allowlist();
        assert!(allowlisted(&list, &argv("cargo test -p x")));
        assert!(allowlisted(&list, &argv("python3 -m pytest -q")));
        assert!(!allowlisted(&list, &argv("cargo testx")));
        assert!(!allowlisted(&list, &argv("cargo")));
        assert!(!allowlisted(&list, &argv("rm -rf /")));
    }

    #[test]
    fn command_policies() {
        let mut p = RiskPolicy {
            command_allowlist: guide_allowlist(),
            ..RiskPolicy::default()
        };
        let deny = DenyConfirm;
        assert!(admit_command(&p, &deny, &argv("cargo test")).is_ok());
        let err = admit_command(&p, &deny, &argv("ls -l")).unwrap_err();
        assert!(
            err.contains("non-interactive") && err.contains("ls -l"),
            "{err}"
        );

        let mut yes = MockConfirm::new();
        yes.expect_confirm()
            .withf(|a| a == ["ls".to_owned(), "-l".to_owned()])
            .times(1)
            .returning(|_| Ok(()));
        assert!(admit_command(&p, &yes, &argv("ls -l")).is_ok());

        p.command_policy = CommandPolicy::Allowlist;
        let err = admit_command(&p, &deny, &argv("ls")).unwrap_err();
        assert!(err.starts_with("commandPolicy allowlist"), "{err}");
        p.command_policy = CommandPolicy::Deny;
        let err = admit_command(&p, &deny, &argv("cargo test")).unwrap_err();
        assert!(err.starts_with("commandPolicy deny"), "{err}");
    }

    /// The default policy denies every model command in a non-interactive run; runner checks
    /// keep the guide's `command_exit` allowlist (plus the task's).
    #[test]
    fn model_commands_have_no_default_allowlist_but_checks_keep_the_guides() {
        let p = RiskPolicy::default();
        let deny = DenyConfirm;
        let err = admit_command(&p, &deny, &argv("cargo test")).unwrap_err();
        assert!(err.contains("non-interactive"), "{err}");
        assert!(admit_check_command(&p, &deny, &argv("cargo test -q")).is_ok());
        assert!(admit_check_command(&p, &deny, &argv("rm -rf x")).is_err());
        let listed = RiskPolicy {
            command_allowlist: vec!["make lint".into()],
            ..RiskPolicy::default()
        };
        assert!(admit_command(&listed, &deny, &argv("make lint")).is_ok());
        assert!(admit_command(&listed, &deny, &argv("cargo test")).is_err());
        assert!(admit_check_command(&listed, &deny, &argv("make lint")).is_ok());
        let denied = RiskPolicy {
            command_policy: CommandPolicy::Deny,
            ..RiskPolicy::default()
        };
        assert!(admit_check_command(&denied, &deny, &argv("cargo test")).is_err());
    }

    #[test]
    fn git_metadata_is_off_limits_in_any_case_and_through_links() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(ws.join(".git/hooks")).unwrap();
        for bad in [
            ".git/config",
            ".git",
            "./.git/hooks/pre-commit",
            "sub/.GIT/config",
            ".Git/hooks/x",
        ] {
            let err = resolve_in_workspace(&ws, bad).unwrap_err();
            assert!(err.contains("git metadata"), "{bad}: {err}");
        }
        assert!(resolve_in_workspace(&ws, ".gitignore").is_ok());
        assert!(resolve_in_workspace(&ws, ".github/x.yml").is_ok());
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(ws.join(".git"), ws.join("meta")).unwrap();
            let err = resolve_in_workspace(&ws, "meta/hooks/pre-commit").unwrap_err();
            assert!(err.contains("git metadata"), "{err}");
        }
        for bad in [".gitattributes", "sub/.GITATTRIBUTES"] {
            let err = resolve_for_write(&ws, bad).unwrap_err();
            assert!(err.contains(".gitattributes"), "{bad}: {err}");
            assert!(resolve_in_workspace(&ws, bad).is_ok(), "reading is fine");
        }
    }

    #[cfg(unix)]
    #[test]
    fn writes_refuse_symlinked_components_even_inside_the_workspace() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().canonicalize().unwrap();
        std::fs::create_dir(ws.join("inner")).unwrap();
        std::fs::write(ws.join("inner/f"), "x").unwrap();
        std::os::unix::fs::symlink(ws.join("inner"), ws.join("alias")).unwrap();
        std::os::unix::fs::symlink(ws.join("inner/f"), ws.join("flink")).unwrap();
        assert!(resolve_in_workspace(&ws, "alias/f").is_ok());
        for bad in ["alias/f", "alias/new", "flink"] {
            let err = resolve_for_write(&ws, bad).unwrap_err();
            assert!(err.contains("symlink"), "{bad}: {err}");
        }
        assert_eq!(
            resolve_for_write(&ws, "inner/new/deeper").unwrap(),
            ws.join("inner/new/deeper")
        );
    }

    #[test]
    fn network_is_off_by_default() {
        let mut p = RiskPolicy::default();
        assert!(
            admit_network(&p, "https://x")
                .unwrap_err()
                .contains("allowNetwork")
        );
        p.allow_network = true;
        assert!(admit_network(&p, "https://x").is_ok());
    }

    #[test]
    fn workspace_only_paths() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().canonicalize().unwrap();
        std::fs::create_dir(ws.join("sub")).unwrap();
        assert_eq!(
            resolve_in_workspace(&ws, "sub/new.txt").unwrap(),
            ws.join("sub/new.txt")
        );
        assert_eq!(resolve_in_workspace(&ws, "./a/b").unwrap(), ws.join("a/b"));
        for bad in ["", "../x", "sub/../../x", "/etc/passwd", "a/../b"] {
            assert!(resolve_in_workspace(&ws, bad).is_err(), "{bad:?} accepted");
        }
    }

    #[cfg(unix)]
    #[test]
    fn symlinks_out_of_the_workspace_are_rejected() {
        let outside = tempfile::tempdir().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().canonicalize().unwrap();
        std::os::unix::fs::symlink(outside.path(), ws.join("out")).unwrap();
        std::fs::write(outside.path().join("secret"), "x").unwrap();
        std::os::unix::fs::symlink(outside.path().join("secret"), ws.join("link")).unwrap();
        std::os::unix::fs::symlink(ws.join("sub-missing"), ws.join("dangling-in")).unwrap();
        let err = resolve_in_workspace(&ws, "out/new.txt").unwrap_err();
        assert!(err.contains("outside the workspace"), "{err}");
        assert!(resolve_in_workspace(&ws, "link").is_err());
        assert!(resolve_in_workspace(&ws, "dangling-in").is_err());
        std::fs::create_dir(ws.join("inner")).unwrap();
        std::os::unix::fs::symlink(ws.join("inner"), ws.join("alias")).unwrap();
        assert_eq!(
            resolve_in_workspace(&ws, "alias/f").unwrap(),
            ws.join("inner/f")
        );
    }
}
