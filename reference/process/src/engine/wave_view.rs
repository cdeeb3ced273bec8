//! The wave-start view of a shared workspace (README "Scheduling and phase mode").
//!
//! The phases of one dependency wave run concurrently in the same workspace. So that what a
//! phase's fs tools *read* does not depend on how far its siblings have got, every path a
//! phase writes is recorded here (with its bytes before the wave's first write to it) before
//! the write happens, under one lock; an `fs.read`/`fs.search` of another phase then sees
//! that recorded pre-image — the workspace as it was at wave start — instead of the sibling's
//! in-progress file. A phase sees its own writes. Commands and checks read the disk directly
//! (independent phases own their outputs, guide "Output coordination"; two phases writing
//! one path is reported as a write race by the runner).

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard};

/// One path written during the wave: who wrote it first and its bytes before that write
/// (`None`: it did not exist).
#[derive(Debug, Clone)]
struct Written {
    writer: String,
    before: Option<Vec<u8>>,
}

/// The paths the phases of one wave have written so far.
#[derive(Debug, Default)]
pub struct WaveView {
    written: Mutex<BTreeMap<String, Written>>,
}

/// The locked view, as one phase sees it.
#[derive(Debug)]
pub struct ViewGuard<'a> {
    written: MutexGuard<'a, BTreeMap<String, Written>>,
    phase: &'a str,
}

impl WaveView {
    /// An empty view for a new wave.
    pub fn new() -> Self {
        WaveView::default()
    }

    /// Locks the view for `phase` (writes and reads through it are serialized with the
    /// siblings' writes, so a pre-image is always recorded before its path changes).
    pub fn lock<'a>(&'a self, phase: &'a str) -> ViewGuard<'a> {
        let written = match self.written.lock() {
            Ok(g) => g,
            // A panicking sibling cannot leave the map half-updated (inserts are atomic).
            Err(poisoned) => poisoned.into_inner(),
        };
        ViewGuard { written, phase }
    }
}

impl ViewGuard<'_> {
    /// Records that this phase is about to write `rel` (normalized), whose current bytes
    /// `read_before` gives, unless some phase already wrote it this wave.
    pub fn note_write(&mut self, rel: &str, read_before: impl FnOnce() -> Option<Vec<u8>>) {
        if !self.written.contains_key(rel) {
            let before = read_before();
            self.written.insert(
                rel.to_owned(),
                Written {
                    writer: self.phase.to_owned(),
                    before,
                },
            );
        }
    }

    /// `Some(bytes at wave start)` when another phase of the wave has written `rel`
    /// (normalized) — the bytes this phase must see; `None` when the disk is what it sees.
    pub fn sibling_before(&self, rel: &str) -> Option<Option<&[u8]>> {
        self.written
            .get(rel)
            .filter(|w| w.writer != self.phase)
            .map(|w| w.before.as_deref())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn siblings_see_the_bytes_before_the_first_write_and_the_writer_sees_the_disk() {
        let v = WaveView::new();
        v.lock("a").note_write("f.txt", || Some(b"old".to_vec()));
        v.lock("b").note_write("f.txt", || Some(b"a's".to_vec()));
        v.lock("a").note_write("new.txt", || None);
        assert_eq!(v.lock("b").sibling_before("f.txt"), Some(Some(&b"old"[..])));
        assert_eq!(v.lock("b").sibling_before("new.txt"), Some(None));
        assert_eq!(v.lock("a").sibling_before("f.txt"), None);
        assert_eq!(v.lock("b").sibling_before("other.txt"), None);
    }
}
