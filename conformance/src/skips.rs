//! The implementer's skip file: cases they expect to fail, each with a reason and an issue
//! URL (DESIGN.md §5). A listed case that fails is `expected-fail`; one that passes is
//! `unexpected-pass`, so a stale entry is noticed.
//!
//! ```json
//! [{"id": "core.envelope.sig.legacy-fallback", "reason": "legacy signatures not yet supported",
//!   "issue_url": "https://tracker.example/123"}]
//! ```

use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::Path;

/// One entry.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SkipEntry {
    /// Case ID.
    pub id: String,
    /// Why it is expected to fail.
    pub reason: String,
    /// Where the fix is tracked.
    pub issue_url: String,
}

/// All entries, by case ID.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SkipFile(BTreeMap<String, SkipEntry>);

impl SkipFile {
    /// Reads a skip file; unknown case IDs are errors (a typo would silently skip nothing).
    pub fn load(path: &Path, known: &dyn Fn(&str) -> bool) -> Result<SkipFile, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("skip file {}: {e}", path.display()))?;
        SkipFile::parse(&text, known).map_err(|e| format!("skip file {}: {e}", path.display()))
    }

    /// Parses skip-file text.
    pub fn parse(text: &str, known: &dyn Fn(&str) -> bool) -> Result<SkipFile, String> {
        let entries: Vec<SkipEntry> = serde_json::from_str(text).map_err(|e| e.to_string())?;
        let mut map = BTreeMap::new();
        for e in entries {
            if !known(&e.id) {
                return Err(format!("no case has the ID {:?}", e.id));
            }
            if e.reason.trim().is_empty() || e.issue_url.trim().is_empty() {
                return Err(format!("{}: reason and issue_url must not be empty", e.id));
            }
            if map.insert(e.id.clone(), e).is_some() {
                return Err("a case is listed twice".into());
            }
        }
        Ok(SkipFile(map))
    }

    /// The entry for `id`.
    pub fn get(&self, id: &str) -> Option<&SkipEntry> {
        self.0.get(id)
    }
}
