//! Workspace-relative path rules (guide "Output coordination": `intermediate_root` "must be a
//! normalized workspace-relative path (no absolute or .. segments)"; the same rule is applied
//! to deliverable filenames, which are "enforced by exact filename" inside the workspace).

/// What is wrong with a workspace path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathProblem {
    /// The path leaves (or does not name a place in) the workspace: empty, absolute, `..`,
    /// backslash.
    Escape(&'static str),
    /// Inside the workspace but not in normalized form: `.` or empty segments (`./x`,
    /// `a//b`, `a/`).
    NotNormalized(&'static str),
}

impl PathProblem {
    /// The description, e.g. "is absolute".
    pub fn describe(self) -> &'static str {
        match self {
            PathProblem::Escape(m) | PathProblem::NotNormalized(m) => m,
        }
    }
}

/// Why `path` is not a normalized workspace-relative path, or `None` if it is one.
///
/// Rejected: empty; absolute (`/x`, `~` or `~/x` — a home directory — `C:\x`, `C:/x`); any
/// backslash (not a portable separator, and on Windows a way around the `..` check); `..`
/// segments; `.` or empty segments (`./x`, `a//b`, `a/`), which a normalized path does not
/// have. `~foo` is an ordinary relative name.
pub fn workspace_relative_problem(path: &str) -> Option<&'static str> {
    path_problem(path).map(PathProblem::describe)
}

/// [`workspace_relative_problem`], telling escapes from mere non-normalized spellings.
pub fn path_problem(path: &str) -> Option<PathProblem> {
    use PathProblem::{Escape, NotNormalized};
    let bytes = path.as_bytes();
    if path.trim().is_empty() {
        return Some(Escape("is empty"));
    }
    if path.starts_with('/') || path == "~" || path.starts_with("~/") {
        return Some(Escape("is absolute"));
    }
    if bytes.len() >= 2 && bytes[0].is_ascii_alphabetic() && bytes[1] == b':' {
        return Some(Escape("is absolute (drive letter)"));
    }
    if path.contains('\\') {
        return Some(Escape("contains a backslash"));
    }
    let segments: Vec<&str> = path.split('/').collect();
    if segments.contains(&"..") {
        return Some(Escape("has a `..` segment"));
    }
    if segments.iter().any(|s| s.is_empty() || *s == ".") {
        return Some(NotNormalized("is not normalized (`.` or empty segment)"));
    }
    None
}

/// The normalized form of a workspace-relative path that has no escape (see [`path_problem`]):
/// `.` and empty segments dropped (`.loom//phase-artifacts/./x/` → `.loom/phase-artifacts/x`),
/// as the guide's loader normalizes `intermediate_root`.
pub fn normalize_relative(path: &str) -> String {
    path.trim()
        .split('/')
        .filter(|s| !s.is_empty() && *s != ".")
        .collect::<Vec<_>>()
        .join("/")
}

#[cfg(test)]
mod tests {
    use super::workspace_relative_problem as problem;

    #[test]
    fn accepts_normalized_relative_paths() {
        for ok in [
            ".loom/phase-artifacts",
            "report.md",
            "out/data.csv",
            "a..b/c",
            "~foo",
            "~foo/bar.md",
        ] {
            assert_eq!(problem(ok), None, "{ok}");
        }
    }

    #[test]
    fn rejects_escapes_and_unnormalized_paths() {
        for bad in [
            "", "/tmp/x", "~", "~/x", "C:/x", "a\\b", "../x", "a/../b", "./x", "a//b", "a/",
        ] {
            assert!(problem(bad).is_some(), "{bad}");
        }
    }

    #[test]
    fn escapes_are_told_from_unnormalized_spellings() {
        use super::{PathProblem, path_problem};
        for escape in ["", "/x", "~/x", "C:/x", "a\\b", "../x", "a/../b"] {
            assert!(
                matches!(path_problem(escape), Some(PathProblem::Escape(_))),
                "{escape}"
            );
        }
        for odd in ["./s.md", "out/", "a//b", "a/./b"] {
            assert!(
                matches!(path_problem(odd), Some(PathProblem::NotNormalized(_))),
                "{odd}"
            );
        }
    }
}
