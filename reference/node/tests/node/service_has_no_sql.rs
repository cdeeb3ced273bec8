//! The store owns every SQL statement (issue 14, ARCHITECTURE.md "service holds no SQL"):
//! this reads the sources of `src/service/` and fails on SQL text in a string literal or on
//! database handling in code (rusqlite, raw connections, statements). The service loads
//! views through typed `store` functions, calls loom-protocol and hands changes to the
//! store.

use std::path::{Path, PathBuf};

/// Files that still open the writer connection themselves (no SQL text): they belong to the
/// write-path work (`service/envelopes.rs`: retraction's transaction; `write_group.rs`: the
/// group transaction over `store::batch`). Each entry must still be needed — the test fails
/// when a listed file is clean, so the list can only shrink.
const PENDING_HANDLE_USE: &[(&str, &str)] = &[
    (
        "envelopes.rs",
        "retraction opens its transaction with rusqlite's unchecked_transaction",
    ),
    (
        "write_group.rs",
        "the group commit takes the writer connection for store::batch",
    ),
];

/// Words that start an SQL statement.
const STATEMENTS: [&str; 14] = [
    "SELECT",
    "INSERT",
    "UPDATE",
    "DELETE",
    "CREATE",
    "PRAGMA",
    "REPLACE",
    "BEGIN",
    "COMMIT",
    "ROLLBACK",
    "SAVEPOINT",
    "RELEASE",
    "ALTER",
    "DROP",
];

/// Fragments of SQL that appear in statement pieces (`" AND x = ?2"`).
const FRAGMENTS: [&str; 11] = [
    " FROM ",
    " WHERE ",
    " JOIN ",
    " ORDER BY ",
    " LIMIT ",
    " MATCH ",
    " VALUES ",
    " SET ",
    " AND ",
    " OR ",
    "= ?",
];

/// Database handling in code.
const HANDLE_USE: [&str; 16] = [
    "rusqlite",
    ".prepare(",
    ".prepare_cached(",
    ".execute(",
    ".execute_batch(",
    ".query_row(",
    ".query_map(",
    ".query(",
    "unchecked_transaction",
    ".transaction(",
    ".pragma_",
    "last_insert_rowid",
    ".exec(",
    ".row(",
    "store.conn()",
    "Cached",
];

/// String literals and code (comments dropped) of a Rust source, roughly: enough for this
/// source tree (no raw strings with quotes inside; char literals of `"` are skipped).
fn split(src: &str) -> (Vec<String>, String) {
    let mut strings = Vec::new();
    let mut code = String::new();
    let chars: Vec<char> = src.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '/' && chars.get(i + 1) == Some(&'/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '\'' && chars.get(i + 1) == Some(&'"') && chars.get(i + 2) == Some(&'\'') {
            i += 3;
        } else if c == '"' {
            let mut s = String::new();
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                if chars[i] == '\\' {
                    // `\` + newline continues the literal; keep a space for the gap.
                    if chars.get(i + 1) == Some(&'\n') {
                        s.push(' ');
                    }
                    i += 2;
                    continue;
                }
                s.push(chars[i]);
                i += 1;
            }
            strings.push(s);
            code.push_str("\"\"");
            i += 1;
        } else {
            code.push(c);
            i += 1;
        }
    }
    (strings, code)
}

/// What in `src` is SQL text or database handling.
fn findings(src: &str) -> (Vec<String>, Vec<String>) {
    let (strings, code) = split(src);
    let sql = strings
        .into_iter()
        .filter(|s| {
            let t = s.trim_start();
            STATEMENTS.iter().any(|k| {
                t.strip_prefix(k)
                    .is_some_and(|rest| rest.is_empty() || rest.starts_with([' ', '\n']))
            }) || FRAGMENTS.iter().any(|f| s.contains(f))
        })
        .collect();
    let handles = HANDLE_USE
        .iter()
        .filter(|h| code.contains(**h))
        .map(|h| (*h).to_owned())
        .collect();
    (sql, handles)
}

fn service_sources() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/service");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("src/service")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "rs"))
        .collect();
    files.sort();
    files
}

#[test]
fn the_service_holds_no_sql() {
    let files = service_sources();
    assert!(files.len() >= 10, "found only {files:?}");
    let mut problems = Vec::new();
    for path in &files {
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        let src = std::fs::read_to_string(path).expect("read");
        let (sql, handles) = findings(&src);
        for s in sql {
            problems.push(format!("{name}: SQL in a string literal: {s:?}"));
        }
        let pending = PENDING_HANDLE_USE.iter().any(|(f, _)| *f == name);
        match (handles.is_empty(), pending) {
            (false, false) => problems.push(format!(
                "{name}: database handling in the service: {handles:?} (use a typed store function)"
            )),
            (true, true) => problems.push(format!(
                "{name}: no longer uses the database directly; remove it from PENDING_HANDLE_USE"
            )),
            _ => {}
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_check_sees_sql_and_database_handling() {
    // What service/identity.rs held before the store took its statements.
    let before = r#"
        let exists: bool = tx
            .row(
                "SELECT 1 FROM identities WHERE id = ?1",
                [id.to_string()],
                |_| Ok(()),
            )
            .optional()?
            .is_some();
        let mut sql = format!(
            "SELECT t.id FROM threads t \
             JOIN thread_participants p ON p.thread_id = t.id WHERE 1=1"
        );
        sql += &format!(" AND t.status = ?{}", 2);
        use rusqlite::params;
        let tx = conn.unchecked_transaction()?;
    "#;
    let (sql, handles) = findings(before);
    assert_eq!(sql.len(), 3, "{sql:?}");
    for h in ["rusqlite", "unchecked_transaction", ".row("] {
        assert!(
            handles.contains(&h.to_owned()),
            "{h} not seen in {handles:?}"
        );
    }
    // Error texts and comments are not SQL.
    let clean = r#"
        // SELECT in a comment is fine
        let e = ApiError::bad_request("role", "role must be delegator or delegate", "v1.1 §16.5");
        let q = '"';
    "#;
    assert_eq!(findings(clean), (vec![], vec![]));
}
