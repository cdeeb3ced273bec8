//! The core does no IO (ARCHITECTURE.md invariants, issue 31): outside the fuzz bodies, which
//! exist only with the `fuzzing` feature, no source of `loom-protocol` names the file system,
//! the network, processes or an async runtime; and no normal build of the workspace turns the
//! `fuzzing` feature on (only the fuzz crate and the crates' own tests do).

use std::path::{Path, PathBuf};
use std::process::Command;

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

fn tree(edges: &str, package: &str) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let out = Command::new(env!("CARGO"))
        .current_dir(&root)
        .args([
            "tree",
            "--workspace",
            "--offline",
            "--locked",
            "-e",
            edges,
            "-e",
            "features",
            "-i",
            package,
        ])
        .output()
        .expect("cargo runs");
    assert!(
        out.status.success(),
        "cargo tree failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn normal_builds_never_enable_the_fuzz_bodies() {
    for package in [
        "loom-protocol",
        "loom-plsp",
        "loom-process",
        "loom-node",
        "loom-conformance",
    ] {
        let normal = tree("normal,build", package);
        assert!(normal.contains(package), "{normal}");
        let feature = format!("{package} feature \"fuzzing\"");
        assert!(
            !normal.contains(&feature),
            "a normal dependency turns on {package}/fuzzing:\n{normal}"
        );
        let with_dev = tree("normal,build,dev", package);
        assert!(
            with_dev.contains(&feature),
            "{package}'s own tests should turn fuzzing on (the check must be able to fail):\n{with_dev}"
        );
    }
}
