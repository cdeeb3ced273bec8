//! What an agent remembers across a restart: per task, how many runs it started, how many
//! completed and the outcome of the last one. The
//! host saves it before a run starts and after it ends, so an agent restarted mid-task knows
//! whether to post an outcome it already has, run again, or fail the task explicitly
//! ([`crate::core`]).

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// How a run of a task's work ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkOutcome {
    /// The work produced what it promised.
    pub ok: bool,
    /// One line a person reads first: what was done, or the first cause of failure.
    pub summary: String,
    /// The result the `completed` / `failed` update carries (`parameters.result`).
    pub result: serde_json::Value,
}

/// One task's record.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskRecord {
    /// Runs started.
    pub attempts: u32,
    /// Runs that completed (the runner said so); more than one is a defect the simulator's
    /// `agent-tasks` invariant catches.
    pub completed_runs: u32,
    /// The last run's outcome, once it ended.
    pub outcome: Option<WorkOutcome>,
}

/// Everything remembered. The event feed position is not: a restarted agent reads its
/// feed from the start, so what it knows of each task is what the node says now.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Journal {
    /// By task id.
    pub tasks: BTreeMap<String, TaskRecord>,
}

/// Where the journal lives.
pub trait JournalStore: Send + Sync + std::fmt::Debug {
    /// The saved journal (empty when none was saved).
    fn load(&self) -> Result<Journal, String>;
    /// Saves `journal` durably.
    fn save(&self, journal: &Journal) -> Result<(), String>;
}

/// A journal in memory that outlives the agent using it: clones share it, so a simulated
/// agent host restarted by the simulator finds what it saved (its "disk").
#[derive(Debug, Clone, Default)]
pub struct MemoryJournal(pub Arc<Mutex<Journal>>);

impl JournalStore for MemoryJournal {
    fn load(&self) -> Result<Journal, String> {
        Ok(self.0.lock().map_err(|_| "journal lock poisoned")?.clone())
    }

    fn save(&self, journal: &Journal) -> Result<(), String> {
        *self.0.lock().map_err(|_| "journal lock poisoned")? = journal.clone();
        Ok(())
    }
}

/// A journal in a JSON file, replaced atomically (write a sibling, sync it, rename).
#[derive(Debug, Clone)]
pub struct FileJournal(pub PathBuf);

impl JournalStore for FileJournal {
    fn load(&self) -> Result<Journal, String> {
        match std::fs::read_to_string(&self.0) {
            Ok(text) => serde_json::from_str(&text)
                .map_err(|e| format!("journal {}: {e}", self.0.display())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Journal::default()),
            Err(e) => Err(format!("journal {}: {e}", self.0.display())),
        }
    }

    fn save(&self, journal: &Journal) -> Result<(), String> {
        use std::io::Write;
        let tmp = self.0.with_extension("json.tmp");
        let text = serde_json::to_vec_pretty(journal).map_err(|e| e.to_string())?;
        let write = || -> std::io::Result<()> {
            let mut f = std::fs::File::create(&tmp)?;
            f.write_all(&text)?;
            f.sync_all()?;
            std::fs::rename(&tmp, &self.0)
        };
        write().map_err(|e| format!("journal {}: {e}", self.0.display()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_journal_round_trips_and_starts_empty() {
        let dir = tempfile::tempdir().unwrap();
        let j = FileJournal(dir.path().join("journal.json"));
        assert_eq!(j.load().unwrap(), Journal::default());
        let mut saved = Journal::default();
        saved.tasks.insert(
            "env_1".into(),
            TaskRecord {
                attempts: 1,
                completed_runs: 1,
                outcome: Some(WorkOutcome {
                    ok: true,
                    summary: "done".into(),
                    result: serde_json::json!({"a": 1}),
                }),
            },
        );
        j.save(&saved).unwrap();
        assert_eq!(j.load().unwrap(), saved);
        std::fs::write(&j.0, "{not json").unwrap();
        assert!(j.load().unwrap_err().contains("journal.json"));
    }
}
