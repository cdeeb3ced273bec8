//! Python dependency specifiers (guide "Dependencies": "Python packages installed
//! automatically by loom install. Pin versions when possible").
//!
//! The accepted forms are PEP 508 (what pip installs) plus pip's VCS form:
//!
//! - `name`, `name[extra, other]` — unpinned;
//! - `name>=2.28`, `name (>=2.28,<3)`, `name[socks]==2.31.0` — pinned (a version constraint);
//! - `name @ https://host/pkg.whl` — pinned (a direct reference names one artifact);
//! - `git+https://host/repo.git@v1.2#egg=name` — pinned only with `@<rev>`;
//! - any of the above followed by an environment marker, `; python_version >= "3.8"`.
//!
//! The parser is a flat scan (no recursion), so any input length is safe.

/// A parsed requirement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Requirement {
    /// The distribution name.
    pub name: String,
    /// Whether it names a version (constraint, direct URL, or VCS revision).
    pub pinned: bool,
}

const VERSION_OPS: [&str; 8] = ["===", "==", "!=", "~=", ">=", "<=", ">", "<"];
const MARKER_VARS: [&str; 13] = [
    "python_version",
    "python_full_version",
    "os_name",
    "sys_platform",
    "platform_release",
    "platform_system",
    "platform_version",
    "platform_machine",
    "platform_python_implementation",
    "implementation_name",
    "implementation_version",
    "extra",
    "os.name",
];

/// Parses one `dependencies[]` entry; the error says what is malformed.
pub fn parse(dep: &str) -> Result<Requirement, String> {
    let dep = dep.trim();
    let (body, marker) = match dep.split_once(';') {
        // `name @ url ; marker` needs whitespace before `;` in PEP 508, but a `;` inside a URL
        // is rare enough that we split on the first one.
        Some((b, m)) => (b.trim(), Some(m.trim())),
        None => (dep, None),
    };
    if let Some(m) = marker {
        check_marker(m)?;
    }
    if is_vcs_url(body) {
        return vcs(body);
    }
    let name_len = body
        .char_indices()
        .take_while(|(_, c)| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
        .count();
    let name = &body[..name_len];
    if !valid_name(name) {
        return Err("does not start with a distribution name".into());
    }
    let mut rest = body[name_len..].trim_start();
    if let Some(r) = rest.strip_prefix('[') {
        let end = r.find(']').ok_or("has an unclosed extras list `[`")?;
        let extras = &r[..end];
        if !extras.split(',').map(str::trim).all(valid_name) {
            return Err(format!("has a malformed extras list [{extras}]"));
        }
        rest = r[end + 1..].trim_start();
    }
    if let Some(url) = rest.strip_prefix('@') {
        let url = url.trim();
        if !url.contains("://") && !url.starts_with("file:") {
            return Err(format!("has a direct reference {url:?} that is not a URL"));
        }
        if url.contains(char::is_whitespace) {
            return Err("has whitespace inside its URL".into());
        }
        return Ok(Requirement {
            name: name.to_string(),
            pinned: true,
        });
    }
    let spec = match rest.strip_prefix('(') {
        Some(r) => r
            .strip_suffix(')')
            .ok_or("has an unclosed version constraint `(`")?
            .trim(),
        None => rest,
    };
    if spec.is_empty() {
        return Ok(Requirement {
            name: name.to_string(),
            pinned: false,
        });
    }
    for clause in spec.split(',') {
        let clause = clause.trim();
        let op = VERSION_OPS
            .iter()
            .find(|op| clause.starts_with(**op))
            .ok_or_else(|| format!("has a malformed version constraint {clause:?}"))?;
        let version = clause[op.len()..].trim();
        let ok = !version.is_empty()
            && version.chars().all(|c| {
                c.is_ascii_alphanumeric() || matches!(c, '.' | '*' | '+' | '!' | '_' | '-')
            })
            && !version.starts_with(['<', '>', '=', '!', '~']);
        if !ok {
            return Err(format!("has a malformed version {version:?} in {clause:?}"));
        }
    }
    Ok(Requirement {
        name: name.to_string(),
        pinned: true,
    })
}

/// PEP 508 names: letters/digits, with `.`, `_`, `-` inside.
fn valid_name(name: &str) -> bool {
    let b = name.as_bytes();
    !b.is_empty()
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b'-'))
}

fn is_vcs_url(s: &str) -> bool {
    ["git+", "hg+", "svn+", "bzr+"]
        .iter()
        .any(|p| s.starts_with(p))
}

/// `git+https://host/repo.git@rev#egg=name`: the name comes from `#egg=`, and only an
/// `@<rev>` after the host pins it.
fn vcs(url: &str) -> Result<Requirement, String> {
    if url.contains(char::is_whitespace) {
        return Err("has whitespace inside its URL".into());
    }
    let (location, fragment) = url.split_once('#').unwrap_or((url, ""));
    let name = fragment
        .split('&')
        .find_map(|kv| kv.strip_prefix("egg="))
        .ok_or("is a VCS URL without #egg=<name>")?;
    if !valid_name(name) {
        return Err(format!("has a malformed #egg name {name:?}"));
    }
    let after_scheme = location
        .split_once("://")
        .map(|(_, r)| r)
        .ok_or("is a VCS URL without a scheme (git+https://...)")?;
    let path = after_scheme.split_once('/').map_or("", |(_, p)| p);
    let pinned = path
        .rsplit_once('@')
        .is_some_and(|(_, rev)| !rev.is_empty());
    Ok(Requirement {
        name: name.to_string(),
        pinned,
    })
}

/// PEP 508 environment markers: `value op value` comparisons joined by `and`/`or`, with
/// parentheses; a value is a marker variable or a quoted string. Checked by a flat state
/// machine with a depth counter.
fn check_marker(m: &str) -> Result<(), String> {
    #[derive(PartialEq)]
    enum Want {
        Left,
        Op,
        Right,
        Joiner,
    }
    let bad = || format!("has a malformed environment marker {m:?}");
    let mut want = Want::Left;
    let mut depth = 0usize;
    let mut rest = m.trim();
    if rest.is_empty() {
        return Err(bad());
    }
    while !rest.is_empty() {
        match want {
            Want::Left | Want::Right => {
                if want == Want::Left && rest.starts_with('(') {
                    depth += 1;
                    rest = rest[1..].trim_start();
                    continue;
                }
                let len = marker_value(rest).ok_or_else(bad)?;
                rest = rest[len..].trim_start();
                want = if want == Want::Left {
                    Want::Op
                } else {
                    Want::Joiner
                };
            }
            Want::Op => {
                let ops = [
                    "===", "==", "!=", "~=", ">=", "<=", ">", "<", "not in", "in",
                ];
                let op = ops.iter().find(|o| rest.starts_with(**o)).ok_or_else(bad)?;
                rest = rest[op.len()..].trim_start();
                want = Want::Right;
            }
            Want::Joiner => {
                if let Some(r) = rest.strip_prefix(')') {
                    depth = depth.checked_sub(1).ok_or_else(bad)?;
                    rest = r.trim_start();
                } else if let Some(r) = rest
                    .strip_prefix("and ")
                    .or_else(|| rest.strip_prefix("or "))
                {
                    rest = r.trim_start();
                    want = Want::Left;
                } else {
                    return Err(bad());
                }
            }
        }
    }
    if want == Want::Joiner && depth == 0 {
        Ok(())
    } else {
        Err(bad())
    }
}

/// Length of a marker value at the start of `s`: a quoted string or a marker variable.
fn marker_value(s: &str) -> Option<usize> {
    if let Some(q) = s.chars().next().filter(|c| *c == '"' || *c == '\'') {
        return s[1..].find(q).map(|end| end + 2);
    }
    MARKER_VARS
        .iter()
        .filter(|v| {
            s.starts_with(**v)
                && !s[v.len()..]
                    .chars()
                    .next()
                    .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
        })
        .map(|v| v.len())
        .max()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pinned(dep: &str) -> bool {
        parse(dep).unwrap_or_else(|e| panic!("{dep}: {e}")).pinned
    }

    #[test]
    fn pep_508_forms_are_accepted() {
        assert!(!pinned("pyyaml"));
        assert!(!pinned("requests[socks, security]"));
        assert!(pinned("requests>=2.28"));
        assert!(pinned("requests (>=2.28)"));
        assert!(pinned("requests (>=2.28, <3)"));
        assert!(pinned("requests[socks]==2.31.0"));
        assert!(pinned("pyyaml>=6,<7"));
        assert!(pinned(
            "pip @ https://github.com/pypa/pip/archive/22.0.2.zip"
        ));
        assert!(pinned("pkg @ file:///tmp/pkg-1.0.whl"));
        assert!(pinned("requests>=2.28; python_version >= \"3.8\""));
        assert!(!pinned("tomli ; python_version < '3.11'"));
        assert!(pinned(
            "numpy>=1.24; (sys_platform == 'linux' or sys_platform == 'darwin') and python_version >= '3.9'"
        ));
        assert!(pinned(
            "git+https://github.com/org/repo.git@v1.2.0#egg=repo"
        ));
        assert!(!pinned("git+https://github.com/org/repo.git#egg=repo"));
        assert!(!pinned("git+https://user@github.com/org/repo.git#egg=repo"));
        assert_eq!(
            parse("git+https://h/r.git@abc#egg=my-pkg").unwrap().name,
            "my-pkg"
        );
    }

    #[test]
    fn malformed_specifiers_are_errors() {
        for bad in [
            "",
            "requests>>2",
            "requests >=",
            "-requests",
            "requests[socks",
            "requests (>=2.28",
            "pkg @ not a url",
            "pkg @ relative/path.whl",
            "requests; python_version >=",
            "requests; bogus_var == '1'",
            "requests; (python_version > '3'",
            "git+https://github.com/org/repo.git",
            "requests 2.28",
        ] {
            assert!(parse(bad).is_err(), "{bad:?} accepted");
        }
    }
}
