//! A package's bundled Python tools (guide "Bundled tools"), executed for real.
//!
//! A tool is a `Tool` subclass in `tools/<file>.py` (files starting with `_` are skipped). The
//! runner finds a tool by name in the file named after it, or else in the file whose `name`
//! property returns that name as a string literal, and runs it through a small harness
//! ([`HARNESS`]) with a stand-in `loom.tools.registry` ([`REGISTRY`]): the harness imports the
//! file, instantiates the class whose `name` matches, awaits `execute(args, ctx)` with
//! `ctx.workspace` = the workspace, and prints the `ToolResult` as one JSON line. The command
//! runs under the workspace policy of every other command (`engine::tools`): the workspace
//! as working directory, a cleared environment (`PATH`, `HOME` = the workspace, `LANG`,
//! `TMPDIR`, plus `PYTHONPATH` for the stand-in, `PYTHONDONTWRITEBYTECODE=1` so the package
//! directory is never written, `PYTHONHASHSEED=0`), the command timeout, its own process
//! group, capped output. Like an allowlisted command, a bundled tool is package code with the
//! runner's user rights: it is not a sandbox (README "Tools and risk policy").
//!
//! The interpreter is the package's declared one ([`Interpreter::resolve`]): an explicit
//! choice (`--python`), else the package's isolated environment
//! `<install-target>/.deps/<name>/bin/python` (what `loom install --isolated-deps` creates),
//! else the tool file's `#!` line when it names a Python, else `python3`. A bare name is
//! looked up on `PATH` and resolved to the real executable once with the runner's own
//! environment (`sys.executable`), so version-manager shims work under the cleared one.

use super::tools::{CommandOutput, run_with_timeout};
use serde::{Deserialize, Serialize};
use serde_json::Value as Json;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

/// The harness script.
pub const HARNESS: &str = include_str!("bundled_harness.py");
/// The stand-in `loom.tools.registry`.
pub const REGISTRY: &str = include_str!("bundled_registry.py");
/// The line prefix the harness prints its result after.
const RESULT_MARK: &str = "LOOM-TOOL-RESULT ";

/// The interpreter a package's tools run with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Interpreter {
    /// How the package declared it, as shown in events (machine-independent).
    pub declared: String,
    /// What to look up / run (a path, or a name searched on `PATH`).
    pub program: PathBuf,
}

impl Interpreter {
    /// The interpreter for `tool_file` of the package in `package_dir` (see the module docs
    /// for the order).
    pub fn resolve(package_dir: &Path, tool_file: &Path, explicit: Option<&Path>) -> Interpreter {
        if let Some(p) = explicit {
            return Interpreter {
                declared: format!("{} (explicit)", p.display()),
                program: p.to_path_buf(),
            };
        }
        if let (Some(parent), Some(name)) = (package_dir.parent(), package_dir.file_name()) {
            let venv = parent.join(".deps").join(name).join("bin").join("python");
            if venv.is_file() {
                return Interpreter {
                    declared: format!(".deps/{}/bin/python", name.to_string_lossy()),
                    program: venv,
                };
            }
        }
        if let Some(p) = shebang_python(tool_file) {
            return Interpreter {
                declared: format!("{p} (#! line)"),
                program: PathBuf::from(p),
            };
        }
        Interpreter {
            declared: "python3".into(),
            program: PathBuf::from("python3"),
        }
    }
}

/// The Python a `#!` line names: `#!/usr/bin/env python3.11` → `python3.11`,
/// `#!/usr/bin/python3` → `/usr/bin/python3`.
fn shebang_python(file: &Path) -> Option<String> {
    let text = std::fs::read_to_string(file).ok()?;
    let line = text.lines().next()?.strip_prefix("#!")?.trim();
    let mut parts = line.split_whitespace();
    let first = parts.next()?;
    let prog = if first.ends_with("/env") {
        parts.find(|p| !p.starts_with('-'))?
    } else {
        first
    };
    let base = Path::new(prog).file_name()?.to_string_lossy().into_owned();
    base.starts_with("python").then(|| prog.to_owned())
}

/// Finds `name` on `PATH` (a name with a `/` is taken as a path).
fn on_path(name: &Path) -> Option<PathBuf> {
    if name.components().count() > 1 {
        return name.is_file().then(|| name.to_path_buf());
    }
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// The real executable behind `program` (`sys.executable`, asked once with the runner's own
/// environment so shims resolve), or why there is none.
fn real_executable(program: &Path) -> Result<PathBuf, String> {
    let found = on_path(program)
        .ok_or_else(|| format!("no Python interpreter: {} is not found", program.display()))?;
    let out = Command::new(&found)
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .map_err(|e| format!("cannot start {}: {e}", found.display()))?;
    let exe = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    if !out.status.success() || exe.is_empty() {
        return Err(format!(
            "{} does not run as a Python interpreter: {}",
            found.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(PathBuf::from(exe))
}

/// A bundled tool's result, as the harness reports it (`ToolResult`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolRun {
    /// `ToolResult.success`.
    pub ok: bool,
    /// `ToolResult.output` (the text the model sees).
    pub output: String,
    /// `ToolResult.data` (what `tool_metric` gates read).
    pub data: Json,
    /// `ToolResult.error`.
    pub error: Option<String>,
    /// `files_changed` (workspace-relative).
    pub files_changed: Vec<String>,
}

/// The bundled tools of one package.
#[derive(Debug)]
pub struct BundledTools {
    package_dir: PathBuf,
    /// Tool file stems → files (`tools/*.py`, `_*` skipped), sorted.
    files: BTreeMap<String, PathBuf>,
    explicit: Option<PathBuf>,
    /// Environment passed to every tool on top of the policy's (declared auth env keys).
    env: BTreeMap<String, String>,
    support: OnceLock<Result<tempfile::TempDir, String>>,
    /// Interpreter program → real executable (or why none), resolved once.
    cache: std::sync::Mutex<BTreeMap<PathBuf, Result<PathBuf, String>>>,
}

impl BundledTools {
    /// The tools in `package_dir/tools/`; `explicit` is the `--python` choice, `env` the
    /// variables every tool gets (the values of declared `auth.required[].required_env_keys`).
    pub fn new(
        package_dir: &Path,
        explicit: Option<PathBuf>,
        env: BTreeMap<String, String>,
    ) -> BundledTools {
        // Absolute: the tools run with the workspace as their working directory.
        let package_dir = package_dir
            .canonicalize()
            .unwrap_or_else(|_| package_dir.to_path_buf());
        let package_dir = package_dir.as_path();
        let mut files = BTreeMap::new();
        if let Ok(entries) = std::fs::read_dir(package_dir.join("tools")) {
            for e in entries.flatten() {
                let p = e.path();
                let name = e.file_name().to_string_lossy().into_owned();
                if p.is_file() && name.ends_with(".py") && !name.starts_with('_') {
                    files.insert(name.trim_end_matches(".py").to_owned(), p);
                }
            }
        }
        BundledTools {
            package_dir: package_dir.to_path_buf(),
            files,
            explicit,
            env,
            support: OnceLock::new(),
            cache: std::sync::Mutex::new(BTreeMap::new()),
        }
    }

    /// The file defining tool `name`: `tools/<name>.py`, else the file whose `name` property
    /// returns `"name"` as a literal.
    pub fn file_of(&self, name: &str) -> Option<&Path> {
        if let Some(p) = self.files.get(name) {
            return Some(p);
        }
        let needles = [format!("return \"{name}\""), format!("return '{name}'")];
        self.files.values().map(PathBuf::as_path).find(|p| {
            std::fs::read_to_string(p)
                .map(|t| needles.iter().any(|n| t.contains(n.as_str())))
                .unwrap_or(false)
        })
    }

    /// The tools' names: per file, the string its `name` property returns, else the file
    /// stem; sorted.
    pub fn names(&self) -> Vec<String> {
        static NAME: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
            regex::Regex::new(r#"def name\(self\)[^\n]*\n\s*return\s*["']([^"']+)["']"#)
                .expect("static regex")
        });
        let mut out: Vec<String> = self
            .files
            .iter()
            .map(|(stem, p)| {
                std::fs::read_to_string(p)
                    .ok()
                    .and_then(|t| NAME.captures(&t).map(|c| c[1].to_owned()))
                    .unwrap_or_else(|| stem.clone())
            })
            .collect();
        out.sort();
        out.dedup();
        out
    }

    /// Whether the package bundles a tool named `name`.
    pub fn has(&self, name: &str) -> bool {
        self.file_of(name).is_some()
    }

    /// The interpreter `name` runs with (as declared; for events).
    pub fn interpreter_of(&self, name: &str) -> Option<Interpreter> {
        let file = self.file_of(name)?;
        Some(Interpreter::resolve(
            &self.package_dir,
            file,
            self.explicit.as_deref(),
        ))
    }

    /// Whether every tool's declared interpreter exists and runs; `Err` names the first that
    /// does not (tests skip such packages rather than fail them).
    pub fn interpreter_available(&self) -> Result<(), String> {
        for file in self.files.values() {
            let interp = Interpreter::resolve(&self.package_dir, file, self.explicit.as_deref());
            self.executable(&interp)
                .map_err(|e| format!("{} (declared: {})", e, interp.declared))?;
        }
        Ok(())
    }

    fn support_dir(&self) -> Result<&Path, String> {
        let made = self.support.get_or_init(|| {
            let dir = tempfile::Builder::new()
                .prefix("loom-process-tools-")
                .tempdir()
                .map_err(|e| format!("cannot create the tool harness directory: {e}"))?;
            let tools = dir.path().join("loom").join("tools");
            std::fs::create_dir_all(&tools)
                .and_then(|()| std::fs::write(dir.path().join("loom/__init__.py"), ""))
                .and_then(|()| std::fs::write(tools.join("__init__.py"), ""))
                .and_then(|()| std::fs::write(tools.join("registry.py"), REGISTRY))
                .and_then(|()| std::fs::write(dir.path().join("harness.py"), HARNESS))
                .map_err(|e| format!("cannot write the tool harness: {e}"))?;
            Ok(dir)
        });
        made.as_ref().map(|d| d.path()).map_err(|e| e.clone())
    }

    fn executable(&self, interp: &Interpreter) -> Result<PathBuf, String> {
        let mut cache = self
            .cache
            .lock()
            .map_err(|_| "interpreter cache poisoned".to_string())?;
        cache
            .entry(interp.program.clone())
            .or_insert_with(|| real_executable(&interp.program))
            .clone()
    }

    /// The command that runs tool `name` with `args` in `workspace` (environment still to be
    /// restricted by the caller's policy), or why it cannot run.
    pub fn command(
        &self,
        name: &str,
        args: &Json,
        workspace: &Path,
        subtask: &str,
    ) -> Result<(Command, Interpreter), String> {
        let file = self.file_of(name).ok_or_else(|| {
            format!(
                "no bundled tool named {name:?} in {} (tools/*.py)",
                self.package_dir.display()
            )
        })?;
        let interp = Interpreter::resolve(&self.package_dir, file, self.explicit.as_deref());
        let exe = self.executable(&interp)?;
        let support = self.support_dir()?;
        let mut cmd = Command::new(exe);
        cmd.arg(support.join("harness.py"))
            .arg(file)
            .arg(name)
            .arg(workspace)
            .arg(subtask)
            .arg(args.to_string())
            .current_dir(workspace);
        Ok((cmd, interp))
    }

    /// Environment variables the tool gets besides the policy's.
    pub fn tool_env(&self) -> Vec<(String, String)> {
        let mut v: Vec<(String, String)> = self
            .env
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        v.push((
            "PYTHONPATH".into(),
            self.support_dir()
                .map(|p| p.display().to_string())
                .unwrap_or_default(),
        ));
        v.push(("PYTHONDONTWRITEBYTECODE".into(), "1".into()));
        v.push(("PYTHONHASHSEED".into(), "0".into()));
        v.push(("PYTHONIOENCODING".into(), "utf-8".into()));
        v
    }
}

/// Runs `cmd` (already restricted) and reads the harness's result line.
pub fn run(cmd: Command, timeout: Duration) -> Result<(ToolRun, CommandOutput), String> {
    let out = run_with_timeout(cmd, timeout)?;
    if out.timed_out {
        return Err(format!("timed out after {} ms", timeout.as_millis()));
    }
    let line = out
        .stdout
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix(RESULT_MARK))
        .ok_or_else(|| {
            format!(
                "the tool harness printed no result (exit {:?}): {}",
                out.exit_code,
                out.stderr.lines().last().unwrap_or("").trim()
            )
        })?;
    let run: ToolRun = serde_json::from_str(line)
        .map_err(|e| format!("the tool harness printed a malformed result: {e}"))?;
    Ok((run, out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interpreter_order_explicit_venv_shebang_default() {
        let dir = tempfile::tempdir().unwrap();
        let pkg = dir.path().join("pkg");
        std::fs::create_dir_all(pkg.join("tools")).unwrap();
        let tool = pkg.join("tools/t.py");
        std::fs::write(&tool, "#!/usr/bin/env -S python3.11 -u\nx = 1\n").unwrap();
        let i = Interpreter::resolve(&pkg, &tool, None);
        assert_eq!(i.declared, "python3.11 (#! line)");
        std::fs::create_dir_all(dir.path().join(".deps/pkg/bin")).unwrap();
        std::fs::write(dir.path().join(".deps/pkg/bin/python"), "").unwrap();
        assert_eq!(
            Interpreter::resolve(&pkg, &tool, None).declared,
            ".deps/pkg/bin/python"
        );
        let e = Interpreter::resolve(&pkg, &tool, Some(Path::new("/opt/py")));
        assert_eq!(e.program, PathBuf::from("/opt/py"));
        std::fs::write(&tool, "x = 1\n").unwrap();
        std::fs::remove_dir_all(dir.path().join(".deps")).unwrap();
        assert_eq!(Interpreter::resolve(&pkg, &tool, None).declared, "python3");
    }

    #[test]
    fn tools_are_found_by_file_stem_or_name_literal() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("tools")).unwrap();
        std::fs::write(
            dir.path().join("tools/metrics.py"),
            "    def name(self):\n        return \"ga_metrics\"\n",
        )
        .unwrap();
        std::fs::write(dir.path().join("tools/_private.py"), "return \"hidden\"").unwrap();
        let b = BundledTools::new(dir.path(), None, BTreeMap::new());
        assert!(b.has("metrics") && b.has("ga_metrics"));
        assert!(!b.has("hidden") && !b.has("other"));
    }
}
