//! The simulator reads nodes through `loom_node::inspect`, never their schema (issue 31): no
//! source of it names SQL or a database handle, and it does not depend on SQLite itself.

use std::path::{Path, PathBuf};

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).expect("src") {
        let p = e.expect("entry").path();
        if p.is_dir() {
            sources(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

#[test]
fn the_simulator_holds_no_sql() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    sources(&root.join("src"), &mut files);
    let words = [
        "rusqlite",
        "SELECT ",
        "INSERT ",
        "UPDATE ",
        "DELETE FROM",
        "PRAGMA",
        "Connection",
    ];
    let mut found = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).expect("source");
        for (n, line) in text.lines().enumerate() {
            if let Some(w) = words.iter().find(|w| line.contains(*w)) {
                found.push(format!("{}:{}: {w}", f.display(), n + 1));
            }
        }
    }
    assert!(
        found.is_empty(),
        "SQL in the simulator:\n{}",
        found.join("\n")
    );
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).expect("Cargo.toml");
    assert!(
        !manifest.contains("rusqlite"),
        "the simulator depends on SQLite itself"
    );
    // One checker per invariant.
    let checkers = std::fs::read_dir(root.join("src/invariants"))
        .expect("src/invariants")
        .count();
    assert!(checkers >= 7, "{checkers} files in src/invariants");
}
