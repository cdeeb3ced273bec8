//! A migrated, empty node store, made once per process and copied into every node's
//! directory before its first boot. Opening a fresh store runs every schema migration (table
//! rebuilds, FTS5 renames): about a third of a short run's wall time when each of three nodes
//! did it per seed. The copy is byte for byte what `Store::open` leaves behind (migrations
//! only create tables; the node key, audit chain and everything else are written at boot),
//! so the node sees an up-to-date store and skips straight to start-up.

use loom_node::Storage;
use loom_node::store::Store;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

static TEMPLATE: OnceLock<Result<Vec<u8>, String>> = OnceLock::new();

fn make(scratch: &Path) -> Result<Vec<u8>, String> {
    let _ = std::fs::remove_dir_all(scratch);
    {
        let _store = Store::open(&Storage::Dir(scratch.to_path_buf()))
            .map_err(|e| format!("template store: {e}"))?;
    }
    let db = scratch.join("loom.db");
    // Fold the WAL into the database file so one file is the whole store.
    Store::fold_wal(&db).map_err(|e| format!("template store: {e}"))?;
    let bytes = std::fs::read(&db).map_err(|e| format!("template store: {e}"))?;
    let _ = std::fs::remove_dir_all(scratch);
    Ok(bytes)
}

/// Puts a migrated, empty store into `dir` (created if needed).
pub fn seed_store(dir: &Path, scratch_base: &Path) -> Result<(), String> {
    let bytes = TEMPLATE
        .get_or_init(|| {
            make(&scratch_base.join(format!("loom-sim-template-{}", std::process::id())))
        })
        .as_ref()
        .map_err(Clone::clone)?;
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    std::fs::write(dir.join("loom.db"), bytes)
        .map_err(|e| format!("cannot write {}: {e}", dir.display()))
}

/// Where scratch stores go: `/dev/shm` when present (SQLite's fsyncs cost nothing there).
pub fn scratch_base() -> PathBuf {
    if Path::new("/dev/shm").is_dir() {
        PathBuf::from("/dev/shm")
    } else {
        std::env::temp_dir()
    }
}
