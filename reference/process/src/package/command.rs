//! `command_exit` gate commands (guide "Phase iteration loops", MVP constraint 5: "argv tokens
//! (no shell metacharacters) and an allowlisted command prefix").

/// The guide's MVP allowlist ("command_exit allowlisted prefixes (MVP)"), as argv prefixes.
/// The runtime can override it (`execution.iteration_command_exit_allowlisted_prefixes`), so
/// the validator takes the list as an option (`ValidateOptions::command_allowlist`).
pub const DEFAULT_ALLOWLIST: &[&[&str]] = &[
    &["pytest"],
    &["uv", "run", "pytest"],
    &["python", "-m", "pytest"],
    &["python3", "-m", "pytest"],
    &["ruff", "check"],
    &["npm", "test"],
    &["pnpm", "test"],
    &["bun", "test"],
    &["go", "test"],
    &["cargo", "test"],
    &["make", "test"],
];

/// Characters a POSIX shell would interpret (operators, expansions, quoting, globbing,
/// comments, line breaks). The guide names no set; with argv tokens none of them is needed,
/// and each one signals a command written for a shell.
pub const SHELL_METACHARACTERS: &[char] = &[
    ';', '&', '|', '<', '>', '$', '`', '\\', '(', ')', '{', '}', '*', '?', '[', ']', '!', '~', '#',
    '\'', '"', '\n', '\r', '\0',
];

/// The default allowlist as owned token lists.
pub fn default_allowlist() -> Vec<Vec<String>> {
    DEFAULT_ALLOWLIST
        .iter()
        .map(|p| p.iter().map(|t| (*t).to_string()).collect())
        .collect()
}

/// What is wrong with an argv list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommandProblem {
    /// No tokens.
    Empty,
    /// Token `index` contains the metacharacter `ch`.
    Metacharacter {
        /// Token index.
        index: usize,
        /// The character.
        ch: char,
    },
    /// The tokens do not start with any allowlisted prefix.
    NotAllowlisted,
}

/// Checks argv tokens: non-empty, no metacharacter in any token, and an allowlisted prefix
/// matched token by token (`cargo test --lib` matches `cargo test`; `cargo testx` does not).
pub fn check_argv(argv: &[String], allowlist: &[Vec<String>]) -> Result<(), CommandProblem> {
    if argv.is_empty() || argv.iter().all(|t| t.trim().is_empty()) {
        return Err(CommandProblem::Empty);
    }
    for (index, token) in argv.iter().enumerate() {
        if let Some(ch) = token.chars().find(|c| SHELL_METACHARACTERS.contains(c)) {
            return Err(CommandProblem::Metacharacter { index, ch });
        }
    }
    let allowed = allowlist
        .iter()
        .any(|prefix| !prefix.is_empty() && argv.starts_with(prefix));
    if allowed {
        Ok(())
    } else {
        Err(CommandProblem::NotAllowlisted)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(s: &str) -> Vec<String> {
        s.split(' ').map(str::to_string).collect()
    }

    #[test]
    fn allowlisted_prefixes_match_token_by_token() {
        let list = default_allowlist();
        assert_eq!(check_argv(&argv("cargo test --lib"), &list), Ok(()));
        assert_eq!(check_argv(&argv("python3 -m pytest -q"), &list), Ok(()));
        assert_eq!(
            check_argv(&argv("cargo testx"), &list),
            Err(CommandProblem::NotAllowlisted)
        );
        assert_eq!(
            check_argv(&argv("python -m pip"), &list),
            Err(CommandProblem::NotAllowlisted)
        );
        assert_eq!(check_argv(&[], &list), Err(CommandProblem::Empty));
    }

    #[test]
    fn metacharacters_are_found_in_any_token() {
        let list = default_allowlist();
        assert_eq!(
            check_argv(&argv("pytest tests;rm"), &list),
            Err(CommandProblem::Metacharacter { index: 1, ch: ';' })
        );
        assert_eq!(
            check_argv(&["pytest".into(), "-k".into(), "not slow".into()], &list),
            Ok(())
        );
    }
}
