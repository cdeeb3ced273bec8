//! The example corpus: every example package validates without errors; every invalid variant
//! fails with exactly the rule and path its `# expect:` line names.

use std::path::{Path, PathBuf};

use loom_process::package::review::{InstallRisk, SecurityReview};
use loom_process::package::{discover, load_dir, validate_str};

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples")
}

fn packages() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(examples())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("process.yaml").is_file())
        .collect();
    dirs.sort();
    dirs
}

#[test]
fn every_example_package_loads_without_errors() {
    let dirs = packages();
    assert!(dirs.len() >= 4, "{dirs:?}");
    for dir in dirs {
        let pkg =
            load_dir(&dir).unwrap_or_else(|r| panic!("{}:\n{}", dir.display(), r.to_text("")));
        assert!(pkg.readme.is_some(), "{} has no README.md", dir.display());
        assert!(
            pkg.process
                .tests
                .iter()
                .any(|t| t.mode() == loom_process::package::TestMode::Deterministic),
            "{} has no deterministic test case",
            dir.display()
        );
    }
}

#[test]
fn only_the_legacy_and_loader_form_examples_warn_and_only_about_that() {
    for dir in packages() {
        let pkg = load_dir(&dir).unwrap();
        let rules: Vec<_> = pkg.report.warnings().map(|d| d.rule).collect();
        if pkg.process.schema_version() == 1 {
            assert_eq!(rules, ["schema_version.legacy_v1"], "{}", dir.display());
        } else if dir.ends_with("survey-synthesis") {
            // Written in the forms the guide's loader reads: one warning per form.
            assert_eq!(
                rules,
                [
                    "risk_level.alias",
                    "yaml.enum_case",
                    "output_coordination.intermediate_root.not_normalized",
                    "yaml.bool_yaml11",
                    "yaml.bool_yaml11",
                    "yaml.bool_yaml11",
                    "yaml.bool_yaml11"
                ],
                "{}",
                dir.display()
            );
        } else {
            assert!(rules.is_empty(), "{}: {rules:?}", dir.display());
        }
    }
}

/// Together the examples use every top-level block and every gate type the guide documents.
#[test]
fn the_examples_together_use_every_documented_feature() {
    let processes: Vec<_> = packages()
        .iter()
        .map(|d| load_dir(d).unwrap().process)
        .collect();
    let any = |f: &dyn Fn(&loom_process::package::Process) -> bool| processes.iter().any(f);
    assert!(any(&|p| p.auth.is_some()
        && p.tools.is_some()
        && !p.dependencies.is_empty()));
    assert!(any(&|p| p.output_coordination.is_some()
        && p.evidence.is_some()
        && p.prompt_contracts.is_some()));
    assert!(any(&|p| p.memory.is_some()
        && p.workspace_analysis.is_some()
        && p.replanning.is_some()));
    assert!(any(&|p| !p.planner_examples.is_empty()));
    assert!(any(&|p| p.schema_version() == 1));
    assert!(any(&|p| p.risk_level.is_some_and(|r| r.is_high())));
    for mode in ["strict", "guided", "suggestive"] {
        assert!(
            any(&|p| format!("{:?}", p.phase_mode()).to_lowercase() == mode),
            "{mode}"
        );
    }
    let gates: Vec<String> = processes
        .iter()
        .flat_map(|p| p.phases.iter())
        .filter_map(|ph| ph.iteration.as_ref())
        .flat_map(|it| it.gates.iter().map(|g| format!("{:?}", g.gate_type)))
        .collect();
    for t in [
        "ToolMetric",
        "ArtifactRegex",
        "CommandExit",
        "VerifierField",
    ] {
        assert!(gates.iter().any(|g| g == t), "no {t} gate in the examples");
    }
}

#[test]
fn every_invalid_variant_fails_with_exactly_its_expected_rule_and_path() {
    let mut files: Vec<PathBuf> = std::fs::read_dir(examples().join("invalid"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    files.sort();
    assert!(files.len() >= 15);
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        let expect = text
            .lines()
            .next()
            .and_then(|l| l.strip_prefix("# expect: "))
            .unwrap_or_else(|| {
                panic!(
                    "{}: first line must be `# expect: RULE at PATH`",
                    file.display()
                )
            });
        let (rule, path) = expect.split_once(" at ").unwrap();
        let report = validate_str(&text);
        let errors: Vec<(&str, &str)> =
            report.errors().map(|d| (d.rule, d.path.as_str())).collect();
        assert_eq!(errors, [(rule, path.trim())], "{}", file.display());
        let d = report.errors().next().unwrap();
        assert!(
            d.line > 0 && d.column > 0,
            "{}: no position",
            file.display()
        );
    }
}

#[test]
fn the_install_review_follows_the_guide_levels() {
    let review = |name: &str| {
        let pkg = load_dir(&examples().join(name)).unwrap();
        SecurityReview::of(&pkg, Path::new("/home/u/.loom/processes"))
    };
    let code_fix = review("code-fix");
    assert_eq!(code_fix.risk, InstallRisk::High);
    let files: Vec<_> = code_fix
        .bundled_code
        .iter()
        .map(|f| (f.path.as_str(), f.auto_loaded))
        .collect();
    assert_eq!(
        files,
        [
            ("tools/_helpers.py", false),
            ("tools/ck_diff_stats.py", true)
        ]
    );
    assert!(
        code_fix
            .render()
            .contains("Risk: HIGH — dependencies and bundled code present")
    );
    assert_eq!(review("financial-analysis").risk, InstallRisk::Medium);
    let research = review("research-report");
    assert_eq!(research.risk, InstallRisk::Low);
    assert!(
        research
            .render()
            .ends_with("Risk: LOW — YAML-only, no dependencies, no code\n")
    );
    assert_eq!(research.target, "/home/u/.loom/processes/research-report");
}

#[test]
fn registered_tools_skip_underscore_files() {
    let pkg = load_dir(&examples().join("code-fix")).unwrap();
    assert_eq!(pkg.tools, ["tools/ck_diff_stats.py"]);
    assert!(pkg.license.is_some());
}

#[test]
fn a_directory_without_process_yaml_is_reported() {
    let report = load_dir(&examples().join("invalid")).unwrap_err();
    assert_eq!(report.diagnostics[0].rule, "package.process_yaml.missing");
}

/// guide "Where packages live": later search directories override earlier ones by name.
#[test]
fn search_order_lets_workspace_packages_override_global_ones() {
    let root = std::env::temp_dir().join(format!("loom-process-discovery-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let home = root.join("home");
    let cwd = root.join("work");
    let write = |dir: PathBuf, desc: &str| {
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("process.yaml"),
            format!("name: shared\nschema_version: 2\nrisk_level: low\ndescription: {desc}\nphases: []\n"),
        )
        .unwrap();
    };
    write(home.join(".loom/processes/shared"), "global");
    write(cwd.join("loom-processes/shared"), "workspace");
    write(cwd.join(".loom/processes/shared"), "alternative");
    std::fs::create_dir_all(cwd.join("loom-processes/broken")).unwrap();
    std::fs::write(
        cwd.join("loom-processes/broken/process.yaml"),
        "name: Broken\n",
    )
    .unwrap();
    let found = discover(&home, &cwd);
    let winner = found.get("shared").unwrap();
    assert_eq!(
        winner.scope,
        loom_process::package::dir::Scope::WorkspaceAlternative
    );
    assert_eq!(found.overridden.len(), 2);
    assert_eq!(found.invalid.len(), 1);
    let _ = std::fs::remove_dir_all(&root);
}

/// Only code counts as bundled code: `*.py`, executable files and shebang scripts; not
/// `.gitkeep`, docs or data.
#[test]
fn only_code_files_are_bundled_code() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("process.yaml"),
        "name: x\nschema_version: 2\nrisk_level: low\nphases: []\n",
    )
    .unwrap();
    let tools = dir.path().join("tools");
    std::fs::create_dir_all(tools.join("data")).unwrap();
    for (name, body) in [
        (".gitkeep", ""),
        ("README.md", "# docs"),
        ("data/table.csv", "a,b\n"),
        ("run.sh", "#!/bin/sh\necho hi\n"),
        ("tool.py", "x = 1\n"),
        ("binary", "\x7fELF"),
    ] {
        std::fs::write(tools.join(name), body).unwrap();
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(tools.join("binary"), std::fs::Permissions::from_mode(0o755))
            .unwrap();
    }
    let pkg = load_dir(dir.path()).unwrap();
    let mut want = vec!["tools/run.sh", "tools/tool.py"];
    if cfg!(unix) {
        want.insert(0, "tools/binary");
    }
    assert_eq!(pkg.bundled_code, want);
    let review = SecurityReview::of(&pkg, Path::new("/p"));
    assert_eq!(review.risk, InstallRisk::Medium);
    // Docs and placeholders alone are a YAML-only package.
    for f in ["run.sh", "tool.py", "binary"] {
        std::fs::remove_file(tools.join(f)).unwrap();
    }
    let pkg = load_dir(dir.path()).unwrap();
    assert!(pkg.bundled_code.is_empty(), "{:?}", pkg.bundled_code);
    assert_eq!(
        SecurityReview::of(&pkg, Path::new("/p")).risk,
        InstallRisk::Low
    );
}

/// `examples/warns/`: definitions that load (no errors) with exactly the warnings their
/// `# warns: RULE at PATH` lines name — among them the guide's own complete examples.
#[test]
fn every_warning_variant_loads_with_exactly_its_warnings() {
    let mut files: Vec<PathBuf> = std::fs::read_dir(examples().join("warns"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    files.sort();
    assert!(files.len() >= 4);
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        let mut want: Vec<(String, String)> = text
            .lines()
            .filter_map(|l| l.strip_prefix("# warns: "))
            .map(|l| {
                let (rule, path) = l.split_once(" at ").unwrap();
                (rule.to_owned(), path.trim().to_owned())
            })
            .collect();
        want.sort();
        let report = validate_str(&text);
        assert!(
            report.is_valid(),
            "{}:\n{}",
            file.display(),
            report.to_text("")
        );
        let mut got: Vec<(String, String)> = report
            .warnings()
            .map(|d| (d.rule.to_owned(), d.path.clone()))
            .collect();
        got.sort();
        assert_eq!(got, want, "{}", file.display());
    }
}
