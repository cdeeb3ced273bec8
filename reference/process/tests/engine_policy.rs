//! Properties of the workspace path policy (loop-engine "Task Config Schema",
//! `pathPolicy: workspace_only`): every escape is refused, every plain relative path is
//! accepted and stays inside the workspace.

use loom_process::engine::policy::resolve_in_workspace;
use proptest::prelude::*;

fn segment() -> impl Strategy<Value = String> {
    "[a-z0-9_-]{1,8}"
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn plain_relative_paths_stay_inside(parts in proptest::collection::vec(segment(), 1..5)) {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().canonicalize().unwrap();
        let p = resolve_in_workspace(&ws, &parts.join("/")).unwrap();
        prop_assert!(p.starts_with(&ws));
        prop_assert_eq!(p, ws.join(parts.join("/")));
    }

    #[test]
    fn dot_dot_anywhere_is_refused(before in proptest::collection::vec(segment(), 0..4), after in proptest::collection::vec(segment(), 0..3)) {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().canonicalize().unwrap();
        let mut parts = before.clone();
        parts.push("..".into());
        parts.extend(after);
        let err = resolve_in_workspace(&ws, &parts.join("/")).unwrap_err();
        prop_assert!(err.contains("`..`"), "{}", err);
    }

    #[test]
    fn absolute_paths_are_refused(parts in proptest::collection::vec(segment(), 0..4)) {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().canonicalize().unwrap();
        // Even an absolute path that points into the workspace is refused.
        for raw in [format!("/{}", parts.join("/")), format!("{}/{}", ws.display(), parts.join("/"))] {
            let err = resolve_in_workspace(&ws, &raw).unwrap_err();
            prop_assert!(err.contains("absolute"), "{}: {}", raw, err);
        }
    }

    #[cfg(unix)]
    #[test]
    fn symlinks_out_are_refused_at_any_depth(depth in proptest::collection::vec(segment(), 0..3), tail in proptest::collection::vec(segment(), 0..3)) {
        let outside = tempfile::tempdir().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().canonicalize().unwrap();
        let inner = depth.iter().fold(ws.clone(), |p, s| p.join(s));
        std::fs::create_dir_all(&inner).unwrap();
        std::os::unix::fs::symlink(outside.path(), inner.join("door")).unwrap();
        let mut parts = depth.clone();
        parts.push("door".into());
        parts.extend(tail);
        let err = resolve_in_workspace(&ws, &parts.join("/")).unwrap_err();
        prop_assert!(err.contains("outside the workspace"), "{}", err);
    }
}
