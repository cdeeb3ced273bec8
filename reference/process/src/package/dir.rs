//! Package directories and the process search order (guide "Package structure", "Bundled
//! tools", "Where packages live").
//!
//! HOME and the working directory are parameters, never read from the environment here, so
//! that discovery is hermetic and testable.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use super::model::Process;
use super::report::{Diagnostic, Report};
use super::rules;
use super::validate::{ValidateOptions, load_str_with};
use super::yaml_pos::Pos;

/// The definition file every package has (guide "Package structure": "The only required
/// file is process.yaml").
pub const PROCESS_FILE: &str = "process.yaml";

/// A package loaded from a directory (or a lone `process.yaml` file).
#[derive(Debug, Clone, PartialEq)]
pub struct LoadedPackage {
    /// The package directory.
    pub root: PathBuf,
    /// The validated definition.
    pub process: Process,
    /// Its warnings (a loaded package has no errors).
    pub report: Report,
    /// Tool modules Loom registers: `tools/*.py` whose name does not start with `_`
    /// (guide "Tool requirements" 6), package-relative, sorted.
    pub tools: Vec<String>,
    /// The code files under `tools/` (recursively; see [`is_code_file`]), package-relative,
    /// sorted: the bundled code the install review lists.
    pub bundled_code: Vec<String>,
    /// `README.md` if present.
    pub readme: Option<PathBuf>,
    /// `LICENSE` if present.
    pub license: Option<PathBuf>,
}

/// Loads `path`: a package directory containing `process.yaml`, or a `.yaml` file itself.
pub fn load_dir(path: &Path) -> Result<LoadedPackage, Report> {
    load_dir_with(path, &ValidateOptions::default())
}

/// [`load_dir`] with validator options.
pub fn load_dir_with(path: &Path, opts: &ValidateOptions) -> Result<LoadedPackage, Report> {
    let (root, file) = if path.is_dir() {
        (path.to_path_buf(), path.join(PROCESS_FILE))
    } else {
        (
            path.parent().map(Path::to_path_buf).unwrap_or_default(),
            path.to_path_buf(),
        )
    };
    if path.is_dir() && !file.is_file() {
        return Err(io_report(
            &rules::PACKAGE_PROCESS_YAML_MISSING,
            format!("{} has no {PROCESS_FILE}", path.display()),
        ));
    }
    let text = read_process_file(&file)?;
    let validated = load_str_with(&text, opts)?;
    let is_package = path.is_dir();
    let files = if is_package {
        list_files(&root.join("tools"), "tools")
    } else {
        Vec::new()
    };
    let tools = files
        .iter()
        .filter(|f| is_registered_tool(f))
        .cloned()
        .collect();
    let bundled_code = files
        .into_iter()
        .filter(|f| is_code_file(&root.join(f)))
        .collect();
    let optional = |name: &str| {
        let p = root.join(name);
        (is_package && p.is_file()).then_some(p)
    };
    Ok(LoadedPackage {
        readme: optional("README.md"),
        license: optional("LICENSE"),
        root,
        process: validated.process,
        report: validated.report,
        tools,
        bundled_code,
    })
}

/// Reads a `process.yaml`: an unreadable file is `package.io`; an existing file that is not
/// UTF-8 text is `yaml.encoding` (it exists, so it is not "missing").
pub fn read_process_file(file: &Path) -> Result<String, Report> {
    let bytes = fs::read(file).map_err(|e| {
        io_report(
            &rules::PACKAGE_IO,
            format!("cannot read {}: {e}", file.display()),
        )
    })?;
    String::from_utf8(bytes).map_err(|e| {
        let offset = e.utf8_error().valid_up_to();
        io_report(
            &rules::YAML_ENCODING,
            format!(
                "{} is not UTF-8 text (invalid byte sequence at byte offset {offset}); save it as UTF-8",
                file.display()
            ),
        )
    })
}

fn io_report(rule: &rules::Rule, message: String) -> Report {
    Report::new(vec![Diagnostic::new(rule, "", Pos::default(), message)])
}

/// `tools/<name>.py` directly in `tools/`, not starting with `_`.
fn is_registered_tool(rel: &str) -> bool {
    let Some(name) = rel.strip_prefix("tools/") else {
        return false;
    };
    !name.contains('/') && !name.starts_with('_') && name.ends_with(".py")
}

/// Whether a bundled file is code the install review must list (guide "Security review":
/// "bundled code ... executes automatically"): Python modules (`*.py`), and any file that is
/// executable (an executable bit, or a `#!` shebang). `.gitkeep`, docs and data are not.
pub fn is_code_file(path: &Path) -> bool {
    if path.extension().is_some_and(|e| e == "py") {
        return true;
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        if fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0) {
            return true;
        }
    }
    let mut head = [0u8; 2];
    fs::File::open(path)
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut head))
        .is_ok_and(|()| &head == b"#!")
}

/// Regular files under `dir`, as `prefix/...` relative paths, sorted. Symlinks are listed
/// (they are bundled content too) but not followed into directories. Iterative (a work
/// list), so directory depth cannot exhaust the stack.
fn list_files(dir: &Path, prefix: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut todo = vec![(dir.to_path_buf(), prefix.to_string())];
    while let Some((dir, prefix)) = todo.pop() {
        let Ok(entries) = fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let rel = format!("{prefix}/{name}");
            match entry.file_type() {
                Ok(t) if t.is_dir() => {
                    if name != "__pycache__" {
                        todo.push((entry.path(), rel));
                    }
                }
                Ok(_) => out.push(rel),
                Err(_) => {}
            }
        }
    }
    out.sort();
    out
}

/// Where a search directory sits (guide "Where packages live").
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Scope {
    /// `~/.loom/processes/`.
    UserGlobal,
    /// `./loom-processes/`.
    Workspace,
    /// `./.loom/processes/`.
    WorkspaceAlternative,
}

/// The search directories in precedence order, lowest first: later entries override earlier
/// ones. (Loom's built-in processes come before all of these; this crate ships none.)
pub fn search_dirs(home: &Path, cwd: &Path) -> Vec<(Scope, PathBuf)> {
    vec![
        (Scope::UserGlobal, home.join(".loom").join("processes")),
        (Scope::Workspace, cwd.join("loom-processes")),
        (
            Scope::WorkspaceAlternative,
            cwd.join(".loom").join("processes"),
        ),
    ]
}

/// One process found during discovery.
#[derive(Debug, Clone, PartialEq)]
pub struct Found {
    /// The declared `name`.
    pub name: String,
    /// Package directory or YAML file.
    pub path: PathBuf,
    /// The search directory it came from.
    pub scope: Scope,
}

/// The result of scanning the search directories.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Discovery {
    /// The winning definition per name.
    pub processes: BTreeMap<String, Found>,
    /// Definitions hidden by a later one with the same name, in scan order.
    pub overridden: Vec<Found>,
    /// Candidates that failed validation, with their reports.
    pub invalid: Vec<(PathBuf, Report)>,
}

impl Discovery {
    /// The definition `--process NAME` selects.
    pub fn get(&self, name: &str) -> Option<&Found> {
        self.processes.get(name)
    }
}

/// Scans the search directories (each: subdirectories with `process.yaml`, and `*.yaml` /
/// `*.yml` files), keyed by declared name; later directories override earlier ones.
pub fn discover(home: &Path, cwd: &Path) -> Discovery {
    let mut d = Discovery::default();
    for (scope, dir) in search_dirs(home, cwd) {
        for candidate in candidates(&dir) {
            match load_dir(&candidate) {
                Ok(pkg) => {
                    let found = Found {
                        name: pkg.process.name.clone(),
                        path: candidate,
                        scope,
                    };
                    if let Some(old) = d.processes.insert(found.name.clone(), found) {
                        d.overridden.push(old);
                    }
                }
                Err(report) => d.invalid.push((candidate, report)),
            }
        }
    }
    d
}

fn candidates(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            (p.is_dir() && p.join(PROCESS_FILE).is_file())
                || (p.is_file() && p.extension().is_some_and(|e| e == "yaml" || e == "yml"))
        })
        .collect();
    out.sort();
    out
}
