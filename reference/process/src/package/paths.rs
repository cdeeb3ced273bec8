//! Workspace-relative path rules (guide "Output coordination": `intermediate_root` "must be a
//! normalized workspace-relative path (no absolute or .. segments)"; the same rule is applied
//! to deliverable filenames, which are "enforced by exact filename" inside the workspace).

/// Why `path` is not a normalized workspace-relative path, or `None` if it is one.
///
/// Rejected: empty; absolute (`/x`, `~/x`, `C:\x`, `C:/x`); any backslash (not a portable
/// separator, and on Windows a way around the `..` check); `..` segments; `.` or empty
/// segments (`./x`, `a//b`, `a/`), which a normalized path does not have.
pub fn workspace_relative_problem(path: &str) -> Option<&'static str> {
    let bytes = path.as_bytes();
    if path.trim().is_empty() {
        return Some("is empty");
    }
    if path.starts_with('/') || path.starts_with('~') {
        return Some("is absolute");
    }
    if bytes.len() >= 2 && bytes[0].is_ascii_alphabetic() && bytes[1] == b':' {
        return Some("is absolute (drive letter)");
    }
    if path.contains('\\') {
        return Some("contains a backslash");
    }
    let segments: Vec<&str> = path.split('/').collect();
    if segments.contains(&"..") {
        return Some("has a `..` segment");
    }
    if segments.iter().any(|s| s.is_empty() || *s == ".") {
        return Some("is not normalized (`.` or empty segment)");
    }
    None
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
        ] {
            assert_eq!(problem(ok), None, "{ok}");
        }
    }

    #[test]
    fn rejects_escapes_and_unnormalized_paths() {
        for bad in [
            "", "/tmp/x", "~/x", "C:/x", "a\\b", "../x", "a/../b", "./x", "a//b", "a/",
        ] {
            assert!(problem(bad).is_some(), "{bad}");
        }
    }
}
