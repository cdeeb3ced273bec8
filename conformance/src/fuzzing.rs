//! Fuzz bodies (DESIGN.md §8, issue 19) for the files an implementer hands the harness: the
//! target profile (TOML, [`crate::profile`]) and the skip file (JSON, [`crate::skips`]).
//! Library functions shared by the `cargo fuzz` targets in `fuzz/` and by `cargo test`, which
//! replays every committed corpus file through them (the test at the end of this module).
//!
//! | target | body | drives |
//! |---|---|---|
//! | `conformance_profile` | [`profile`] | [`Profile::parse`] |
//! | `conformance_skips` | [`skips`] | [`SkipFile::parse`] against the catalogue |

use crate::catalogue;
use crate::profile::Profile;
use crate::skips::SkipFile;
use std::time::Duration;

/// A fuzz body: takes any bytes, panics only on a broken property.
pub type Body = fn(&[u8]);

/// Every fuzz target whose body lives in this crate: `(target name, body)`; the name is the
/// `[[bin]]` of `fuzz/Cargo.toml` and the corpus directory `fuzz/corpus/<name>/`.
pub const TARGETS: &[(&str, Body)] = &[
    ("conformance_profile", profile),
    ("conformance_skips", skips),
];

/// Target profiles: parsing refuses with a message or gives a profile the harness can use as
/// it is — every timeout it derives is a valid [`Duration`], the provisioning mode is one the
/// runner knows, pooled identities have 32-byte seeds — and parsing is deterministic.
pub fn profile(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match Profile::parse(text) {
        Err(e) => assert!(!e.is_empty()),
        Ok(p) => {
            assert!(
                Duration::try_from_secs_f64(p.target.readiness_timeout_secs).is_ok(),
                "readiness_timeout_secs {} is not a duration",
                p.target.readiness_timeout_secs
            );
            // The per-request timeouts are 10 s scaled (ctx.rs, catalogue/transport.rs).
            assert!(
                Duration::try_from_secs_f64(10.0 * p.target.timeout_scale).is_ok(),
                "timeout_scale {} gives no duration",
                p.target.timeout_scale
            );
            assert!(matches!(p.provisioning.mode.as_str(), "register" | "pool"));
            for id in &p.provisioning.identity {
                assert!(
                    hex::decode(&id.seed_hex).is_ok_and(|s| s.len() == 32),
                    "{id:?}"
                );
            }
            assert_eq!(Profile::parse(text), Ok(p), "parsing is deterministic");
        }
    }
}

/// Skip files: parsing refuses with a message naming the problem, or gives one entry per
/// listed case, each a catalogued case id with a reason and an issue URL.
pub fn skips(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let known = |id: &str| catalogue::find(id).is_some();
    match SkipFile::parse(text, &known) {
        Err(e) => assert!(!e.is_empty()),
        Ok(file) => {
            let listed: Vec<serde_json::Value> = serde_json::from_str(text).expect("parsed JSON");
            for entry in &listed {
                let id = entry["id"].as_str().expect("an id string");
                let e = file.get(id).expect("every listed case has its entry");
                assert!(catalogue::find(&e.id).is_some());
                assert!(!e.reason.trim().is_empty() && !e.issue_url.trim().is_empty());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    /// Regression (fuzz target `conformance_profile`, corpus `crash-c5e875b6…`): a profile
    /// with `timeout_scale = 52000200000000e5` parsed, and the harness's `Duration` of 10 s
    /// times that scale panics. The parser now refuses what `loom-conformance run` refuses.
    #[test]
    fn profiles_with_unusable_timeouts_are_refused() {
        for text in [
            "[target]\ntimeout_scale = 52000200000000e5\n",
            "[target]\ntimeout_scale = 1001\n",
            "[target]\ntimeout_scale = nan\n",
            "[target]\nreadiness_timeout_secs = -1\n",
            "[target]\nreadiness_timeout_secs = inf\n",
            "[target]\nreadiness_timeout_secs = 86401\n",
        ] {
            let e = Profile::parse(text).unwrap_err();
            assert!(e.contains("target."), "{text}: {e}");
        }
        let p =
            Profile::parse("[target]\ntimeout_scale = 1000\nreadiness_timeout_secs = 0\n").unwrap();
        assert_eq!(p.target.timeout_scale, 1000.0);
        profile(b"[target]\ntimeout_scale = 52000200000000e5");
    }

    /// Replays `fuzz/corpus/<target>/` for every target of this crate; a missing or empty
    /// corpus fails (issue 19: every target has a committed seed corpus).
    #[test]
    fn every_conformance_target_replays_its_committed_corpus() {
        let fuzz_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz");
        loom_protocol::fuzzing::replay_committed_corpora(&fuzz_dir, TARGETS);
    }
}
