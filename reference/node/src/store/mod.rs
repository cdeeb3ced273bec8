//! Durable storage (SQLite via rusqlite, WAL mode, migrations by `user_version`). The store
//! owns every SQL statement of the node, in typed modules: the envelope path
//! ([`envelopes`], [`threads`], [`events`], [`accept`], [`resolvers`], [`audit`]; [`batch`]
//! runs the writer's group transactions), identities and keys ([`identities`]), sessions
//! ([`tokens`], [`challenges`]), [`capabilities`], [`delegations`], [`blobs`],
//! [`idempotency`], the node's own key ([`node_keys`]) and the read side of threads and
//! events ([`listings`]) and search ([`search`]). The service calls these functions and
//! never writes SQL (`tests/node/service_has_no_sql.rs`).
//!
//! Writes outside the envelope path run in a [`Tx`] ([`Store::begin`]): `COMMIT` on
//! [`Tx::commit`], `ROLLBACK` when dropped. The read side of authentication is cached
//! ([`cache`]); a `Tx` drops what it made stale after its `COMMIT`.
//!
//! Connections: one writer behind a mutex (SQLite serializes writers anyway) and, for a
//! durable store, a pool of read-only connections, so reads (authentication, identity
//! lookups, listings) never wait for a group commit's fsync (WAL readers see the last
//! committed state). An in-memory store has one connection for both.
//!
//! Durability: `journal_mode = WAL`, `synchronous = FULL`: every commit syncs the WAL, so
//! an acknowledged envelope survives a power loss, not only a process crash; the writer
//! commits many envelopes per transaction to share that sync (`service::write_group`). The
//! writer opens the store through [`wal_vfs`], which hands a commit's WAL frames to the
//! kernel in one write instead of two per page. SQLite is built with `HAVE_FDATASYNC`
//! (`.cargo/config.toml`), so a sync is `fdatasync`: the data and the file size, without an
//! inode write for the modification time at every commit.

use crate::config::Storage;
pub mod accept;
pub mod audit;
pub mod batch;
pub mod blobs;
pub mod bridge;
pub mod cache;
pub mod capabilities;
pub mod challenges;
pub mod delegations;
pub mod envelopes;
pub mod events;
pub mod federation;
pub mod idempotency;
pub mod identities;
pub(crate) mod inspect;
pub mod listings;
#[cfg(feature = "quirks")]
pub(crate) mod mutants;
pub mod node_keys;
pub mod resolvers;
pub mod search;
pub mod threads;
pub mod tokens;
pub mod wal_vfs;
pub mod workflows;

/// The SQLite connection type store functions take (a [`Tx`], a [`ReadConn`] or the
/// writer's group transaction all dereference to it).
pub use rusqlite::Connection;
/// The result of a store function.
pub type StoreResult<T> = rusqlite::Result<T>;

use rusqlite::{OpenFlags, OptionalExtension, Params, Row};
use std::cell::RefCell;
use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard};

/// Statements through the connection's prepared-statement cache: the hot paths run the same
/// few statements for every envelope, and preparing each anew costs more than running it.
pub trait Cached {
    /// `execute` with a cached statement.
    fn exec<P: Params>(&self, sql: &str, params: P) -> rusqlite::Result<usize>;
    /// `query_row` with a cached statement.
    fn row<T, P: Params, F: FnOnce(&Row<'_>) -> rusqlite::Result<T>>(
        &self,
        sql: &str,
        params: P,
        f: F,
    ) -> rusqlite::Result<T>;
}

impl Cached for Connection {
    fn exec<P: Params>(&self, sql: &str, params: P) -> rusqlite::Result<usize> {
        self.prepare_cached(sql)?.execute(params)
    }

    fn row<T, P: Params, F: FnOnce(&Row<'_>) -> rusqlite::Result<T>>(
        &self,
        sql: &str,
        params: P,
        f: F,
    ) -> rusqlite::Result<T> {
        self.prepare_cached(sql)?.query_row(params, f)
    }
}

/// The ordered migrations; the index + 1 is the `user_version` after applying it.
const MIGRATIONS: &[&str] = &[
    include_str!("schema.sql"),
    include_str!("schema_2.sql"),
    include_str!("schema_3.sql"),
    include_str!("schema_4.sql"),
    // Issue 19: token families and the audit anchor.
    include_str!("schema_5.sql"),
    // Issue 14: drop indexes no statement reads (fewer dirty pages per envelope).
    include_str!("schema_6.sql"),
    // Issue 14: envelope readers in the envelope row (one B-tree fewer per envelope).
    include_str!("schema_7.sql"),
    // Issue 32: the email bridge's message index and outbound queue.
    include_str!("schema_8.sql"),
    include_str!("schema_9.sql"),
];

/// The writer's page cache, in KiB. Small on purpose: at the end of every write transaction
/// SQLite truncates its page cache to the database size, and with a large cache that walk
/// (`pcache1TruncateUnsafe`) cost ~4% of the node's CPU per group commit; the pages it would
/// keep are in the OS page cache anyway. Measured with `scripts/load-bench.sh` (issue 14):
/// 8 MiB instead of 64 MiB cut node CPU per envelope by ~10% at thread length 1 and 50.
const WRITER_CACHE_KIB: i64 = 8 * 1024;

/// Read-only connections kept open beside the writer (a durable store only).
const MAX_IDLE_READERS: usize = 8;

/// The node's store.
#[derive(Debug)]
pub struct Store {
    conn: Mutex<Connection>,
    /// The database file, when durable: readers open it read-only.
    path: Option<PathBuf>,
    readers: Mutex<Vec<Connection>>,
    /// The read side of authentication (tokens, identities and their keys).
    pub cache: cache::AuthCache,
    /// The exclusive lock on the data directory (`loom.lock`) while this store is open for
    /// writing: a second writer (another node, `node-key rotate`) on the same directory would
    /// keep its own caches of what this one changes (issue 36, item 4).
    _lock: Option<std::fs::File>,
    /// A generation counter bumped after every committed write transaction: the real-time
    /// hub (`service::realtime`) waits on it to read new events once per commit.
    commits: tokio::sync::watch::Sender<u64>,
}

/// The file whose exclusive lock marks a data directory in use by a writer.
pub const LOCK_FILE: &str = "loom.lock";

/// Takes the exclusive lock on `dir`'s [`LOCK_FILE`], held until the returned file is dropped
/// (the operating system releases it when the process ends, however it ends).
fn lock_data_dir(dir: &std::path::Path) -> Result<std::fs::File, StoreError> {
    let path = dir.join(LOCK_FILE);
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|e| StoreError(format!("cannot open {}: {e}", path.display())))?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(std::fs::TryLockError::WouldBlock) => Err(StoreError(format!(
            "the data directory {} is in use by another node (it holds the lock on {}); stop \
             that node first, or give this one its own --data directory",
            dir.display(),
            path.display()
        ))),
        Err(std::fs::TryLockError::Error(e)) => {
            Err(StoreError(format!("cannot lock {}: {e}", path.display())))
        }
    }
}

/// A write transaction on the writer connection ([`Store::begin`]): `COMMIT` on
/// [`Tx::commit`], `ROLLBACK` when dropped uncommitted. Store functions that change tokens or
/// keys take a `Tx` and record what they make stale; the commit drops those cache entries
/// after `COMMIT` returned, while it still holds the writer (module docs of [`cache`]).
#[derive(Debug)]
pub struct Tx<'a> {
    conn: MutexGuard<'a, Connection>,
    cache: &'a cache::AuthCache,
    commits: &'a tokio::sync::watch::Sender<u64>,
    stale: RefCell<Vec<cache::Stale>>,
    open: bool,
}

impl Tx<'_> {
    /// Commits; then drops the cache entries the transaction made stale.
    pub fn commit(mut self) -> StoreResult<()> {
        self.conn.execute_batch("COMMIT")?;
        self.open = false;
        self.cache.apply(&self.stale.borrow());
        self.commits.send_modify(|g| *g += 1);
        Ok(())
    }

    /// Records that `s` changes once this transaction commits.
    pub(crate) fn stale(&self, s: cache::Stale) {
        self.stale.borrow_mut().push(s);
    }
}

impl std::ops::Deref for Tx<'_> {
    type Target = Connection;
    fn deref(&self) -> &Connection {
        &self.conn
    }
}

impl Drop for Tx<'_> {
    fn drop(&mut self) {
        if self.open {
            let _ = self.conn.execute_batch("ROLLBACK");
        }
    }
}

/// A connection for reading: pooled (durable store) or the writer (in memory).
#[derive(Debug)]
pub enum ReadConn<'a> {
    /// A read-only connection, back to the pool on drop.
    Pooled(&'a Store, Option<Connection>),
    /// The writer connection.
    Shared(MutexGuard<'a, Connection>),
}

impl std::ops::Deref for ReadConn<'_> {
    type Target = Connection;
    fn deref(&self) -> &Connection {
        match self {
            ReadConn::Pooled(_, Some(c)) => c,
            ReadConn::Pooled(s, None) => unreachable_conn(s),
            ReadConn::Shared(g) => g,
        }
    }
}

/// A pooled guard holds its connection until drop; this only satisfies the type.
fn unreachable_conn(s: &Store) -> &Connection {
    // Never reached: `Pooled` is built with `Some` and emptied only in `drop`.
    let _ = s;
    panic!("read connection used after release")
}

impl Drop for ReadConn<'_> {
    fn drop(&mut self) {
        if let ReadConn::Pooled(store, conn) = self
            && let Some(c) = conn.take()
        {
            let mut idle = store.readers.lock().unwrap_or_else(|p| p.into_inner());
            if idle.len() < MAX_IDLE_READERS {
                idle.push(c);
            }
        }
    }
}

/// Why the store could not be opened.
#[derive(Debug)]
pub struct StoreError(pub String);

impl std::fmt::Display for StoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for StoreError {}

impl Store {
    /// Opens (creating if needed) and migrates the store.
    pub fn open(storage: &Storage) -> Result<Store, StoreError> {
        let mut lock = None;
        let conn = match storage {
            Storage::Memory => Connection::open_in_memory(),
            Storage::Dir(dir) => {
                std::fs::create_dir_all(dir).map_err(|e| {
                    StoreError(format!(
                        "cannot create data directory {}: {e}",
                        dir.display()
                    ))
                })?;
                lock = Some(lock_data_dir(dir)?);
                // The writer gathers its WAL writes (`wal_vfs`); `prepare` sets the
                // `synchronous = FULL` that VFS relies on.
                wal_vfs::register().map_err(StoreError)?;
                Connection::open_with_flags_and_vfs(
                    dir.join("loom.db"),
                    OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE,
                    wal_vfs::NAME,
                )
            }
        }
        .map_err(|e| StoreError(format!("cannot open store: {e}")))?;
        Self::prepare(&conn, matches!(storage, Storage::Dir(_)))
            .map_err(|e| StoreError(format!("cannot prepare store: {e}")))?;
        Ok(Store {
            conn: Mutex::new(conn),
            path: match storage {
                Storage::Dir(dir) => Some(dir.join("loom.db")),
                Storage::Memory => None,
            },
            readers: Mutex::new(Vec::new()),
            cache: cache::AuthCache::default(),
            _lock: lock,
            commits: tokio::sync::watch::channel(0).0,
        })
    }

    /// Opens an existing store read-only (for `loom-node audit verify`).
    pub fn open_existing(dir: &std::path::Path) -> Result<Store, StoreError> {
        let path = dir.join("loom.db");
        if !path.exists() {
            return Err(StoreError(format!("no store at {}", path.display())));
        }
        let conn = Connection::open_with_flags(&path, OpenFlags::SQLITE_OPEN_READ_ONLY)
            .map_err(|e| StoreError(format!("cannot open {}: {e}", path.display())))?;
        Ok(Store {
            conn: Mutex::new(conn),
            path: None,
            readers: Mutex::new(Vec::new()),
            cache: cache::AuthCache::default(),
            // Read-only: `audit verify` may run beside the node that writes.
            _lock: None,
            commits: tokio::sync::watch::channel(0).0,
        })
    }

    fn prepare(conn: &Connection, durable: bool) -> rusqlite::Result<()> {
        if durable {
            conn.pragma_update(None, "journal_mode", "WAL")?;
            // FULL: a commit returns only after the WAL is fsynced (module docs).
            conn.pragma_update(None, "synchronous", "FULL")?;
            // Checkpoint after ~64 MB of WAL (16,000 pages) instead of SQLite's 4 MB: a
            // checkpoint copies each page once, however many commits rewrote it, and with
            // sixteen senders writing at once every identity's index leaves are rewritten by
            // many groups before they fill. Measured (issue 14, `load-bench.sh`, loom-load
            // dealing each connection its own identities): 4,000 → 16,000 pages took node
            // CPU per envelope from 152–157 to 136–138 µs at thread length 50 and from
            // 176–184 to 162–164 µs at thread length 1; p99 at thread length 1 rose from
            // ~9 to ~12.5 ms (a longer checkpoint now and then).
            conn.pragma_update(None, "wal_autocheckpoint", 16_000)?;
        }
        // Savepoint journals (one per envelope of a group) stay in memory, not a temp file.
        conn.pragma_update(None, "temp_store", "MEMORY")?;
        conn.pragma_update(None, "cache_size", -WRITER_CACHE_KIB)?;
        conn.busy_timeout(std::time::Duration::from_secs(5))?;
        conn.set_prepared_statement_cache_capacity(128);
        let version: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
        let done = usize::try_from(version).unwrap_or(0);
        // Migrations rebuild tables that others reference: foreign keys are checked once,
        // after each migration, instead of on every DROP (the pragma is a no-op inside a
        // transaction, so it is switched here).
        conn.pragma_update(None, "foreign_keys", "OFF")?;
        for (i, sql) in MIGRATIONS.iter().enumerate().skip(done) {
            let tx = conn.unchecked_transaction()?;
            tx.execute_batch(sql)?;
            let broken: Option<String> = tx
                .query_row("PRAGMA foreign_key_check", [], |r| r.get(0))
                .optional()?;
            if let Some(table) = broken {
                return Err(rusqlite::Error::SqliteFailure(
                    rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_CONSTRAINT),
                    Some(format!(
                        "migration {} broke a foreign key of {table}",
                        i + 1
                    )),
                ));
            }
            tx.pragma_update(
                None,
                "user_version",
                i64::try_from(i + 1).unwrap_or(i64::MAX),
            )?;
            tx.commit()?;
        }
        conn.pragma_update(None, "foreign_keys", "ON")?;
        Ok(())
    }

    /// Folds the write-ahead log of the closed store file `db` into the file itself
    /// (`wal_checkpoint(TRUNCATE)`), so that one file is the whole store (the simulator copies
    /// a migrated template this way).
    pub fn fold_wal(db: &std::path::Path) -> rusqlite::Result<()> {
        let c = Connection::open(db)?;
        c.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
    }

    /// The writer connection, for one short critical section.
    pub fn conn(&self) -> MutexGuard<'_, Connection> {
        self.conn.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Marks a write committed outside [`Tx`] (the writer's group transactions), waking the
    /// real-time hub.
    pub fn committed(&self) {
        self.commits.send_modify(|g| *g += 1);
    }

    /// The commit generation now.
    pub fn commit_generation(&self) -> u64 {
        *self.commits.borrow()
    }

    /// A receiver of the commit generation ([`Store::committed`]).
    pub fn watch_commits(&self) -> tokio::sync::watch::Receiver<u64> {
        self.commits.subscribe()
    }

    /// Starts a write transaction on the writer (`BEGIN DEFERRED`). Do not read through
    /// [`Store::read`] or the caches while holding it: an in-memory store has one connection.
    pub fn begin(&self) -> StoreResult<Tx<'_>> {
        let conn = self.conn();
        conn.execute_batch("BEGIN DEFERRED")?;
        Ok(Tx {
            conn,
            cache: &self.cache,
            commits: &self.commits,
            stale: RefCell::new(Vec::new()),
            open: true,
        })
    }

    /// A connection for reads that sees the last committed state (the writer itself for an
    /// in-memory store).
    pub fn read(&self) -> ReadConn<'_> {
        let Some(path) = &self.path else {
            return ReadConn::Shared(self.conn());
        };
        let idle = self.readers.lock().unwrap_or_else(|p| p.into_inner()).pop();
        let conn = match idle {
            Some(c) => c,
            None => match Self::open_reader(path) {
                Ok(c) => c,
                // Reading through the writer is slower under load, never wrong.
                Err(_) => return ReadConn::Shared(self.conn()),
            },
        };
        ReadConn::Pooled(self, Some(conn))
    }

    fn open_reader(path: &std::path::Path) -> rusqlite::Result<Connection> {
        let c = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        c.busy_timeout(std::time::Duration::from_secs(5))?;
        c.set_prepared_statement_cache_capacity(128);
        Ok(c)
    }

    /// A digest of everything stored: every table's row count plus the audit log head, not
    /// counting the `security.*` audit rows a refusal writes on purpose (§23.2). Two equal
    /// fingerprints around a rejected request show it changed nothing else.
    pub fn fingerprint(&self) -> rusqlite::Result<String> {
        let conn = self.conn();
        let mut tables: Vec<String> = conn
            .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '%search_%' ORDER BY name")?
            .query_map([], |r| r.get(0))?
            .collect::<Result<_, _>>()?;
        tables.retain(|t| !t.contains('\''));
        let mut out = String::new();
        // The `security.*` audit rows are what a refusal writes on purpose (§23.2, §25.1).
        let not_security = "WHERE action NOT LIKE 'security.%'";
        for t in tables {
            let only = if t == "audit_log" { not_security } else { "" };
            let n: i64 =
                conn.query_row(&format!("SELECT COUNT(*) FROM '{t}' {only}"), [], |r| {
                    r.get(0)
                })?;
            out.push_str(&format!("{t}={n};"));
        }
        let head: Option<String> = conn
            .query_row(
                &format!("SELECT hash FROM audit_log {not_security} ORDER BY seq DESC LIMIT 1"),
                [],
                |r| r.get(0),
            )
            .or_else(|e| {
                if matches!(e, rusqlite::Error::QueryReturnedNoRows) {
                    Ok(None)
                } else {
                    Err(e)
                }
            })?;
        out.push_str(&format!("audit_head={}", head.unwrap_or_default()));
        Ok(out)
    }

    /// The schema version (number of migrations applied).
    pub fn schema_version(&self) -> rusqlite::Result<i64> {
        self.conn()
            .pragma_query_value(None, "user_version", |r| r.get(0))
    }
}
