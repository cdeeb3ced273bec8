//! The core does no IO (ARCHITECTURE.md invariants, issue 31): outside the fuzz bodies, which
//! exist only with the `fuzzing` feature, no source of `loom-protocol` names the file system,
//! the network, processes or an async runtime. (That no normal build turns `fuzzing` on is
//! checked with the release-build checks, `reference/node/tests/node/release_has_no_quirks.rs`.)

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
fn the_core_names_no_io_outside_the_fuzz_bodies() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    let fuzzing = src.join("fuzzing");
    let io = [
        "std::fs",
        "std::net",
        "std::process",
        "std::env::var",
        "tokio",
        "File::open",
    ];
    let mut found = Vec::new();
    for f in files.iter().filter(|f| !f.starts_with(&fuzzing)) {
        let text = std::fs::read_to_string(f).expect("source");
        for (n, line) in text.lines().enumerate() {
            if line.trim_start().starts_with("//") {
                continue;
            }
            if let Some(what) = io.iter().find(|w| line.contains(*w)) {
                found.push(format!("{}:{}: {what}", f.display(), n + 1));
            }
        }
    }
    assert!(found.is_empty(), "IO in the core:\n{}", found.join("\n"));
    let lib = std::fs::read_to_string(src.join("lib.rs")).expect("lib.rs");
    assert!(
        lib.contains("#[cfg(feature = \"fuzzing\")]\npub mod fuzzing;"),
        "the fuzz bodies must be behind the `fuzzing` feature"
    );
}
