//! JSONL sinks for `>` data and the debug trace (spec §4.5, §7). Objects serialize with sorted
//! keys (serde_json's default map), so the same run writes the same bytes.

use std::io::{self, Write};
use std::sync::{Arc, Mutex};

/// Takes one JSON value per line.
pub trait Sink: Send {
    /// Writes `v` as one line.
    fn write(&mut self, v: &serde_json::Value) -> io::Result<()>;
}

/// Writes JSON lines to any writer.
#[derive(Debug)]
pub struct JsonlWriter<W: Write + Send>(pub W);

impl<W: Write + Send> Sink for JsonlWriter<W> {
    fn write(&mut self, v: &serde_json::Value) -> io::Result<()> {
        let mut line = v.to_string();
        line.push('\n');
        self.0.write_all(line.as_bytes())?;
        self.0.flush()
    }
}

/// Keeps the lines in memory; clones share them.
#[derive(Debug, Clone, Default)]
pub struct MemorySink(pub Arc<Mutex<Vec<String>>>);

impl MemorySink {
    /// The lines so far.
    pub fn lines(&self) -> Vec<String> {
        self.0.lock().map(|l| l.clone()).unwrap_or_default()
    }
}

impl Sink for MemorySink {
    fn write(&mut self, v: &serde_json::Value) -> io::Result<()> {
        self.0
            .lock()
            .map_err(|_| io::Error::other("sink lock poisoned"))?
            .push(v.to_string());
        Ok(())
    }
}

/// Discards everything.
#[derive(Debug, Clone, Copy, Default)]
pub struct NullSink;

impl Sink for NullSink {
    fn write(&mut self, _: &serde_json::Value) -> io::Result<()> {
        Ok(())
    }
}
