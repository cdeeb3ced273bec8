//! Normal builds carry no test-only code. The `loom-node` binary a release build makes
//! carries no quirk (DESIGN.md §4, issue 14):
//! resolving the workspace's normal and build dependencies — what `cargo build --release
//! --workspace` compiles — never turns on `loom-node`'s `quirks` feature. Only dev
//! dependencies (the node's own tests, the conformance self-test) do, and the check below
//! sees that, so it can fail. Without the feature the binary has no way to switch a quirk
//! on: `serve` takes no quirk option and `loom-node quirks` refuses (src/main.rs).

use std::path::Path;
use std::process::Command;

/// `cargo tree` of the workspace inverted on `package`, with features, along `edges`.
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
fn release_builds_never_enable_quirks() {
    let normal = tree("normal,build", "loom-node");
    assert!(normal.contains("loom-node"), "{normal}");
    assert!(
        !normal.contains("loom-node feature \"quirks\""),
        "a normal dependency turns on loom-node/quirks:\n{normal}"
    );
    let with_dev = tree("normal,build,dev", "loom-node");
    assert!(
        with_dev.contains("loom-node feature \"quirks\""),
        "the self-test dev dependencies should turn quirks on (the check must be able to fail):\n{with_dev}"
    );
}

/// The fuzz bodies (issue 31) exist only with each crate's `fuzzing` feature, which only the
/// fuzz crate and the crates' own tests turn on.
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
