//! A simulated disk for the nodes' SQLite files (issue 36, Build 8): a SQLite VFS that the
//! simulator installs as the process's default before any store opens, so every connection
//! of a node, the writer's WAL-gathering VFS ([`crate::store::wal_vfs`]) included, reaches
//! the real files through it. Nothing in the node calls it: the simulator drives it between
//! steps, like the network faults, and a directory it was not told about passes straight
//! through.
//!
//! What it models, per attached data directory:
//! - **Unsynced writes.** Every write and truncate since a file's last successful `fsync` is
//!   logged with the bytes it replaced. A crash with [`Loss::Power`] takes the file back to
//!   its last synced state and then re-applies each logged operation or not, as the seed
//!   draws: kept, lost, or (a write longer than one 512-byte sector) torn after a whole number
//!   of sectors. Bytes outside a write are never touched (SQLite's unix VFS declares
//!   `POWERSAFE_OVERWRITE`). A [`Loss::Process`] crash keeps every write (the page cache
//!   survives a killed process) and leaves them unsynced.
//! - **A dead process.** Between the crash and the recovery every write, truncate, sync and
//!   delete fails, so a closing connection cannot checkpoint or delete its WAL as a graceful
//!   close would: the files are left as `kill -9` leaves them.
//! - **`fsync` errors.** While [`Mode::fsync_fails`] is set, every sync answers
//!   `SQLITE_IOERR_FSYNC` and the writes it should have made durable stay unsynced (lost by
//!   a power loss unless a later sync succeeds). Linux may also drop the dirty pages of a
//!   failed `fsync` at once (the "fsyncgate" behaviour); this model does not, and says so.
//! - **A full disk.** While [`Mode::full`] is set, a write that would grow a file fails with
//!   `SQLITE_FULL` and changes nothing; writes inside a file and truncations still work.
//!
//! Not modelled: directory-entry durability (a deleted or created file stays so), the
//! shared-memory wal-index (SQLite rebuilds it when the first connection opens after a
//! crash), and files other than SQLite's (blobs, the audit checkpoint).

#![allow(unsafe_code)] // SQLite calls these functions through C pointers.

use rand_chacha::ChaCha20Rng;
use rand_core::{Rng, SeedableRng};
use rusqlite::ffi;
use std::collections::BTreeMap;
use std::ffi::{CStr, c_char, c_int, c_void};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, OnceLock};

/// The name the simulated disk is registered under (as the default VFS).
pub const NAME: &CStr = c"loom-sim-disk";

/// The unit a torn write is cut at.
const SECTOR: usize = 512;

/// What a crash does to the writes no `fsync` made durable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Loss {
    /// The process died, the machine did not: every write stays (still unsynced).
    Process,
    /// The power went: each unsynced operation is kept, lost or torn, as the seed draws.
    Power,
}

/// The faults switched on for a directory.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Mode {
    /// Every `fsync` fails with EIO.
    pub fsync_fails: bool,
    /// Every write that would grow a file fails with ENOSPC.
    pub full: bool,
}

/// What the disk of one directory did so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// Successful syncs.
    pub syncs: u64,
    /// Syncs answered with an I/O error ([`Mode::fsync_fails`]).
    pub failed_syncs: u64,
    /// Writes refused for lack of space ([`Mode::full`]).
    pub full_writes: u64,
    /// Operations refused while the process was dead.
    pub dead_ops: u64,
}

/// What one recovery did to the unsynced operations.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Recovery {
    /// Files that had unsynced operations.
    pub files: usize,
    /// Operations that reached the disk whole.
    pub kept: usize,
    /// Operations lost.
    pub lost: usize,
    /// Writes of which only a prefix of whole sectors reached the disk.
    pub torn: usize,
}

/// One unsynced operation, with what it replaced.
#[derive(Debug)]
enum Op {
    Write {
        offset: u64,
        data: Vec<u8>,
        /// The bytes it overwrote (those below the old length).
        before: Vec<u8>,
        old_len: u64,
    },
    Truncate {
        old_len: u64,
        new_len: u64,
        /// The bytes it cut off.
        tail: Vec<u8>,
    },
}

#[derive(Debug, Default)]
struct DirState {
    mode: Mode,
    dead: bool,
    counts: Counts,
    /// Unsynced operations per file, oldest first.
    unsynced: BTreeMap<PathBuf, Vec<Op>>,
}

/// Attached directories (canonical paths) and the files open under them.
#[derive(Default)]
struct Registry {
    dirs: BTreeMap<PathBuf, DirState>,
    /// Open files under an attached directory: file object address → its path and the
    /// default VFS's methods for it.
    open: BTreeMap<usize, (PathBuf, Methods)>,
}

impl Registry {
    fn dir_of(&mut self, path: &Path) -> Option<&mut DirState> {
        self.dirs
            .iter_mut()
            .find(|(d, _)| path.starts_with(d))
            .map(|(_, s)| s)
    }
}

static REGISTRY: Mutex<Option<Registry>> = Mutex::new(None);

fn registry() -> MutexGuard<'static, Option<Registry>> {
    REGISTRY.lock().unwrap_or_else(|p| p.into_inner())
}

fn with_registry<T>(f: impl FnOnce(&mut Registry) -> T) -> T {
    f(registry().get_or_insert_with(Registry::default))
}

/// The VFS this one wraps.
struct Inner {
    vfs: *mut ffi::sqlite3_vfs,
}
// SAFETY: it points to SQLite's static, immutable VFS object, which SQLite itself uses from
// every thread.
unsafe impl Send for Inner {}
unsafe impl Sync for Inner {}

static INNER_VFS: OnceLock<Inner> = OnceLock::new();
/// A default VFS's io methods table (a static object of SQLite's).
#[derive(Debug, Clone, Copy)]
struct Methods(&'static ffi::sqlite3_io_methods);

/// For each io methods table the default VFS gave an attached file (the unix VFS has one
/// per locking style and file kind), the table this module gives it instead: the same
/// methods, with writes, truncates, syncs and close going through this module first.
/// Leaked: a file's methods must outlive it.
static WRAPPED: Mutex<Vec<(usize, &'static ffi::sqlite3_io_methods)>> = Mutex::new(Vec::new());

/// The wrapping table for `theirs`, made on first use.
fn wrapping(theirs: &'static ffi::sqlite3_io_methods) -> &'static ffi::sqlite3_io_methods {
    let key = std::ptr::from_ref(theirs) as usize;
    let mut all = WRAPPED.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((_, ours)) = all.iter().find(|(k, _)| *k == key) {
        return ours;
    }
    let mut m = *theirs;
    m.xWrite = Some(x_write);
    m.xTruncate = Some(x_truncate);
    m.xSync = Some(x_sync);
    m.xClose = Some(x_close);
    let ours: &'static ffi::sqlite3_io_methods = Box::leak(Box::new(m));
    all.push((key, ours));
    ours
}

/// Installs the simulated disk as the default VFS, before anything opens a store in this
/// process (the writer's VFS wraps whatever is the default when it registers), and checks
/// that the writer's VFS wraps it. Idempotent.
pub fn install() -> Result<(), String> {
    register_default()?;
    crate::store::wal_vfs::register()?;
    match crate::store::wal_vfs::wrapped() {
        Some(name) if name == NAME.to_string_lossy() => Ok(()),
        other => Err(format!(
            "the writer's VFS wraps {other:?}, not the simulated disk: a store was opened before the disk was installed"
        )),
    }
}

/// Registers the simulated disk as the process's default VFS (once).
fn register_default() -> Result<(), String> {
    static REGISTERED: OnceLock<Result<(), String>> = OnceLock::new();
    REGISTERED.get_or_init(install_once).clone()
}

fn install_once() -> Result<(), String> {
    // SAFETY: sqlite3_vfs_find(NULL) returns the default VFS, a static object that lives as
    // long as the process.
    let inner = unsafe { ffi::sqlite3_vfs_find(std::ptr::null()) };
    if inner.is_null() {
        return Err("SQLite has no default VFS".into());
    }
    // SAFETY: `inner` is a valid registered VFS. The copy keeps its methods, file size and
    // pAppData and changes the name, xOpen and xDelete; it is leaked on purpose (SQLite keeps
    // a pointer to a registered VFS for the life of the process).
    unsafe {
        let mut vfs = *inner;
        vfs.zName = NAME.as_ptr();
        vfs.xOpen = Some(x_open);
        vfs.xDelete = Some(x_delete);
        vfs.xSleep = Some(x_sleep);
        vfs.pNext = std::ptr::null_mut();
        INNER_VFS.get_or_init(|| Inner { vfs: inner });
        match ffi::sqlite3_vfs_register(Box::into_raw(Box::new(vfs)), 1) {
            ffi::SQLITE_OK => Ok(()),
            rc => Err(format!("sqlite3_vfs_register failed with code {rc}")),
        }
    }
}

/// Starts modelling the disk under `dir` (an existing directory): from now on its SQLite
/// files' unsynced writes are logged and the faults of [`set_mode`] apply to them.
pub fn attach(dir: &Path) -> Result<PathBuf, String> {
    let dir = std::fs::canonicalize(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    with_registry(|r| r.dirs.insert(dir.clone(), DirState::default()));
    Ok(dir)
}

/// Stops modelling `dir` (as [`attach`] returned it); its files pass straight through.
pub fn detach(dir: &Path) {
    with_registry(|r| {
        r.dirs.remove(dir);
    });
}

/// Switches the faults of `dir` on or off.
pub fn set_mode(dir: &Path, mode: Mode) {
    with_registry(|r| {
        if let Some(d) = r.dirs.get_mut(dir) {
            d.mode = mode;
        }
    });
}

/// The faults switched on for `dir`.
pub fn mode(dir: &Path) -> Mode {
    with_registry(|r| r.dirs.get(dir).map(|d| d.mode).unwrap_or_default())
}

/// What the disk of `dir` did so far.
pub fn counts(dir: &Path) -> Counts {
    with_registry(|r| r.dirs.get(dir).map(|d| d.counts).unwrap_or_default())
}

/// The process using `dir` died: every later operation on its files fails until
/// [`recover`]. Call it before the node's software is dropped.
pub fn kill(dir: &Path) {
    with_registry(|r| {
        if let Some(d) = r.dirs.get_mut(dir) {
            d.dead = true;
        }
    });
}

/// After the node's software is gone: applies `loss` to the unsynced operations of `dir`'s
/// files (drawn from `seed`) and lets the next process use them.
pub fn recover(dir: &Path, loss: Loss, seed: u64) -> Result<Recovery, String> {
    let unsynced = with_registry(|r| {
        let d = r.dirs.get_mut(dir)?;
        d.dead = false;
        Some(match loss {
            Loss::Process => BTreeMap::new(),
            Loss::Power => std::mem::take(&mut d.unsynced),
        })
    });
    let mut out = Recovery::default();
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    for (path, ops) in unsynced.unwrap_or_default() {
        if ops.is_empty() {
            continue;
        }
        out.files += 1;
        power_loss(&path, &ops, &mut rng, &mut out)
            .map_err(|e| format!("{}: {e}", path.display()))?;
    }
    Ok(out)
}

/// Takes `path` back to its state at the last sync, then re-applies each operation whole,
/// not at all, or (a write) cut after a whole number of sectors.
fn power_loss(
    path: &Path,
    ops: &[Op],
    rng: &mut ChaCha20Rng,
    out: &mut Recovery,
) -> std::io::Result<()> {
    let file = match std::fs::OpenOptions::new().write(true).open(path) {
        Ok(f) => f,
        // Deleted since (not modelled: see the module docs).
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    for op in ops.iter().rev() {
        match op {
            Op::Write {
                offset,
                before,
                old_len,
                ..
            } => {
                file.write_all_at(before, *offset)?;
                if file.metadata()?.len() > *old_len {
                    file.set_len(*old_len)?;
                }
            }
            Op::Truncate {
                old_len,
                new_len,
                tail,
            } => {
                file.set_len(*old_len)?;
                file.write_all_at(tail, *new_len)?;
            }
        }
    }
    for op in ops {
        let draw = rng.next_u64() % 4;
        match op {
            Op::Write { offset, data, .. } => {
                let sectors = data.len() / SECTOR;
                if draw == 0 {
                    out.lost += 1;
                } else if draw == 1 && sectors > 1 {
                    let keep = SECTOR
                        * usize::try_from(1 + rng.next_u64() % (sectors as u64 - 1)).unwrap_or(1);
                    file.write_all_at(&data[..keep], *offset)?;
                    out.torn += 1;
                } else {
                    file.write_all_at(data, *offset)?;
                    out.kept += 1;
                }
            }
            Op::Truncate { new_len, .. } => {
                if draw == 0 {
                    out.lost += 1;
                } else {
                    file.set_len(*new_len)?;
                    out.kept += 1;
                }
            }
        }
    }
    file.sync_all()
}

/// The path of a wrapped file and the default VFS's methods for it (every file with this
/// module's methods is in the registry from its open to its close).
fn tracked(file: *mut ffi::sqlite3_file) -> Option<(PathBuf, &'static ffi::sqlite3_io_methods)> {
    with_registry(|r| r.open.get(&(file as usize)).map(|(p, m)| (p.clone(), m.0)))
}

unsafe extern "C" fn x_open(
    _vfs: *mut ffi::sqlite3_vfs,
    name: ffi::sqlite3_filename,
    file: *mut ffi::sqlite3_file,
    flags: c_int,
    out_flags: *mut c_int,
) -> c_int {
    let Some(inner) = INNER_VFS.get() else {
        return ffi::SQLITE_ERROR;
    };
    // SAFETY: this VFS's szOsFile is the default VFS's, so `file` is the allocation the
    // default xOpen expects; it sets pMethods on success.
    unsafe {
        let Some(open) = (*inner.vfs).xOpen else {
            return ffi::SQLITE_ERROR;
        };
        let rc = open(inner.vfs, name, file, flags, out_flags);
        if rc != ffi::SQLITE_OK || (*file).pMethods.is_null() || name.is_null() {
            return rc;
        }
        let path = PathBuf::from(CStr::from_ptr(name).to_string_lossy().into_owned());
        let watched = with_registry(|r| r.dir_of(&path).is_some());
        if !watched {
            return rc;
        }
        // SAFETY: the default VFS set a pointer to one of its static methods tables.
        let theirs: &'static ffi::sqlite3_io_methods = &*(*file).pMethods;
        (*file).pMethods = wrapping(theirs);
        with_registry(|r| r.open.insert(file as usize, (path, Methods(theirs))));
        rc
    }
}

/// SQLite sleeps between retries of a lock another connection holds (a reader waiting for
/// a wal-index header that is being rewritten, `busy_timeout`). In the simulator every
/// connection of a run is driven from one thread, so a real sleep only stalls the run: the
/// holder cannot move while the waiter sleeps. The retry loop runs at once instead, and
/// gives up as SQLite does after its count of tries.
unsafe extern "C" fn x_sleep(_vfs: *mut ffi::sqlite3_vfs, microseconds: c_int) -> c_int {
    microseconds
}

unsafe extern "C" fn x_delete(
    _vfs: *mut ffi::sqlite3_vfs,
    name: *const c_char,
    sync_dir: c_int,
) -> c_int {
    let Some(inner) = INNER_VFS.get() else {
        return ffi::SQLITE_ERROR;
    };
    // SAFETY: SQLite passes a NUL-terminated path.
    let path = unsafe { PathBuf::from(CStr::from_ptr(name).to_string_lossy().into_owned()) };
    let refused = with_registry(|r| match r.dir_of(&path) {
        Some(d) if d.dead => {
            d.counts.dead_ops += 1;
            true
        }
        Some(d) => {
            d.unsynced.remove(&path);
            false
        }
        None => false,
    });
    if refused {
        return ffi::SQLITE_IOERR_DELETE;
    }
    // SAFETY: the default VFS's own xDelete with SQLite's arguments.
    unsafe {
        match (*inner.vfs).xDelete {
            Some(delete) => delete(inner.vfs, name, sync_dir),
            None => ffi::SQLITE_IOERR_DELETE,
        }
    }
}

unsafe extern "C" fn x_close(file: *mut ffi::sqlite3_file) -> c_int {
    let theirs = with_registry(|r| r.open.remove(&(file as usize))).map(|(_, m)| m.0);
    match theirs.and_then(|m| m.xClose) {
        // SAFETY: the default VFS's close of its own file object.
        Some(close) => unsafe { close(file) },
        None => ffi::SQLITE_OK,
    }
}

/// The length of `file` through the default VFS.
unsafe fn length(m: &ffi::sqlite3_io_methods, file: *mut ffi::sqlite3_file) -> Option<u64> {
    let mut size: i64 = 0;
    let f = m.xFileSize?;
    // SAFETY: the default VFS's own method on its own file object.
    (unsafe { f(file, &mut size) } == ffi::SQLITE_OK)
        .then(|| u64::try_from(size).ok())
        .flatten()
}

/// The bytes of `file` in `[from, to)` through the default VFS.
unsafe fn bytes(
    m: &ffi::sqlite3_io_methods,
    file: *mut ffi::sqlite3_file,
    from: u64,
    to: u64,
) -> Option<Vec<u8>> {
    let len = usize::try_from(to.saturating_sub(from)).ok()?;
    let mut buf = vec![0u8; len];
    if len == 0 {
        return Some(buf);
    }
    let read = m.xRead?;
    // SAFETY: `buf` has `len` writable bytes; the default VFS's own method.
    let rc = unsafe {
        read(
            file,
            buf.as_mut_ptr().cast(),
            c_int::try_from(len).ok()?,
            i64::try_from(from).ok()?,
        )
    };
    (rc == ffi::SQLITE_OK).then_some(buf)
}

/// The checks before an operation on an attached file: `Err(code)` refuses it.
fn admit(path: &Path, grows: bool, dead_code: c_int) -> Result<(), c_int> {
    with_registry(|r| match r.dir_of(path) {
        Some(d) if d.dead => {
            d.counts.dead_ops += 1;
            Err(dead_code)
        }
        Some(d) if grows && d.mode.full => {
            d.counts.full_writes += 1;
            Err(ffi::SQLITE_FULL)
        }
        _ => Ok(()),
    })
}

fn log(path: &Path, op: Op) {
    with_registry(|r| {
        if let Some(d) = r.dir_of(path) {
            d.unsynced.entry(path.to_path_buf()).or_default().push(op);
        }
    });
}

unsafe extern "C" fn x_write(
    file: *mut ffi::sqlite3_file,
    data: *const c_void,
    amount: c_int,
    offset: i64,
) -> c_int {
    let Some((path, m)) = tracked(file) else {
        return ffi::SQLITE_IOERR_WRITE;
    };
    let Some(write) = m.xWrite else {
        return ffi::SQLITE_IOERR_WRITE;
    };
    let (Ok(len), Ok(at)) = (usize::try_from(amount), u64::try_from(offset)) else {
        return ffi::SQLITE_IOERR_WRITE;
    };
    // SAFETY: the default VFS's own methods on its own file object.
    let Some(old_len) = (unsafe { length(m, file) }) else {
        return ffi::SQLITE_IOERR_FSTAT;
    };
    let end = at + len as u64;
    if let Err(code) = admit(&path, end > old_len, ffi::SQLITE_IOERR_WRITE) {
        return code;
    }
    // SAFETY: as above.
    let Some(before) = (unsafe { bytes(m, file, at.min(old_len), end.min(old_len)) }) else {
        return ffi::SQLITE_IOERR_READ;
    };
    // SAFETY: SQLite passes `amount` readable bytes at `data`.
    let rc = unsafe { write(file, data, amount, offset) };
    if rc == ffi::SQLITE_OK {
        // SAFETY: as above.
        let data = unsafe { std::slice::from_raw_parts(data.cast::<u8>(), len) }.to_vec();
        log(
            &path,
            Op::Write {
                offset: at,
                data,
                before,
                old_len,
            },
        );
    }
    rc
}

unsafe extern "C" fn x_truncate(file: *mut ffi::sqlite3_file, size: i64) -> c_int {
    let Some((path, m)) = tracked(file) else {
        return ffi::SQLITE_IOERR_TRUNCATE;
    };
    let Some(truncate) = m.xTruncate else {
        return ffi::SQLITE_IOERR_TRUNCATE;
    };
    let Ok(new_len) = u64::try_from(size) else {
        return ffi::SQLITE_IOERR_TRUNCATE;
    };
    // SAFETY: the default VFS's own methods on its own file object.
    let Some(old_len) = (unsafe { length(m, file) }) else {
        return ffi::SQLITE_IOERR_FSTAT;
    };
    if let Err(code) = admit(&path, false, ffi::SQLITE_IOERR_TRUNCATE) {
        return code;
    }
    // SAFETY: as above.
    let Some(tail) = (unsafe { bytes(m, file, new_len.min(old_len), old_len) }) else {
        return ffi::SQLITE_IOERR_READ;
    };
    // SAFETY: as above.
    let rc = unsafe { truncate(file, size) };
    if rc == ffi::SQLITE_OK {
        log(
            &path,
            Op::Truncate {
                old_len,
                new_len,
                tail,
            },
        );
    }
    rc
}

unsafe extern "C" fn x_sync(file: *mut ffi::sqlite3_file, flags: c_int) -> c_int {
    let Some((path, m)) = tracked(file) else {
        return ffi::SQLITE_IOERR_FSYNC;
    };
    let Some(sync) = m.xSync else {
        return ffi::SQLITE_IOERR_FSYNC;
    };
    let failing = with_registry(|r| match r.dir_of(&path) {
        Some(d) if d.dead => {
            d.counts.dead_ops += 1;
            true
        }
        Some(d) if d.mode.fsync_fails => {
            d.counts.failed_syncs += 1;
            true
        }
        _ => false,
    });
    if failing {
        return ffi::SQLITE_IOERR_FSYNC;
    }
    // SAFETY: as above.
    let rc = unsafe { sync(file, flags) };
    if rc == ffi::SQLITE_OK {
        with_registry(|r| {
            if let Some(d) = r.dir_of(&path) {
                d.counts.syncs += 1;
                d.unsynced.remove(&path);
            }
        });
    }
    rc
}

#[cfg(test)]
mod tests {
    use super::*;
    use rusqlite::Connection;

    /// A fresh attached directory with a WAL database holding table `t`.
    fn db(name: &str, synchronous: &str) -> (PathBuf, Connection) {
        // Other tests of this process may have opened stores already: these use plain
        // connections, which take whatever is the default VFS when they open.
        register_default().unwrap();
        let dir = std::env::temp_dir().join(format!("loom-disk-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let dir = attach(&dir).unwrap();
        let c = Connection::open(dir.join("t.db")).unwrap();
        c.pragma_update(None, "journal_mode", "WAL").unwrap();
        c.pragma_update(None, "synchronous", "FULL").unwrap();
        c.execute_batch("CREATE TABLE t(x BLOB)").unwrap();
        c.pragma_update(None, "synchronous", synchronous).unwrap();
        (dir, c)
    }

    fn insert(c: &Connection) -> rusqlite::Result<usize> {
        c.execute("INSERT INTO t VALUES (zeroblob(3000))", [])
    }

    fn rows(dir: &Path) -> i64 {
        let c = Connection::open(dir.join("t.db")).unwrap();
        let ok: String = c
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .unwrap();
        assert_eq!(ok, "ok");
        c.query_row("SELECT COUNT(*) FROM t", [], |r| r.get(0))
            .unwrap()
    }

    /// Crash (kill, close, recover) and count what is left.
    fn power_loss(dir: &Path, c: Connection, seed: u64) -> (Recovery, i64) {
        kill(dir);
        drop(c);
        let r = recover(dir, Loss::Power, seed).unwrap();
        let n = rows(dir);
        detach(dir);
        let _ = std::fs::remove_dir_all(dir);
        (r, n)
    }

    #[test]
    fn synced_commits_survive_every_power_loss() {
        for seed in 0..8 {
            let (dir, c) = db(&format!("synced-{seed}"), "FULL");
            for _ in 0..20 {
                insert(&c).unwrap();
            }
            let (r, n) = power_loss(&dir, c, seed);
            assert_eq!(n, 20, "seed {seed}: {r:?}");
            assert_eq!(r.files, 0, "nothing was left unsynced");
        }
    }

    #[test]
    fn unsynced_commits_are_kept_lost_or_torn() {
        let mut lost_some = false;
        for seed in 0..8 {
            let (dir, c) = db(&format!("unsynced-{seed}"), "OFF");
            for _ in 0..20 {
                insert(&c).unwrap();
            }
            let (r, n) = power_loss(&dir, c, seed);
            assert!(r.files > 0 && r.kept + r.lost + r.torn > 0, "{r:?}");
            assert!(n <= 20);
            lost_some |= n < 20;
        }
        assert!(lost_some, "a power loss never lost an unsynced commit");
    }

    #[test]
    fn a_dead_process_writes_nothing_and_a_process_crash_keeps_everything() {
        let (dir, c) = db("dead", "OFF");
        insert(&c).unwrap();
        kill(&dir);
        let e = insert(&c).unwrap_err();
        assert!(e.to_string().contains("disk I/O error"), "{e}");
        assert!(counts(&dir).dead_ops > 0);
        drop(c);
        recover(&dir, Loss::Process, 0).unwrap();
        assert_eq!(rows(&dir), 1);
        detach(&dir);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn failing_fsyncs_fail_the_commit_and_a_full_disk_refuses_growth() {
        let (dir, c) = db("faults", "FULL");
        insert(&c).unwrap();
        set_mode(
            &dir,
            Mode {
                fsync_fails: true,
                full: false,
            },
        );
        let e = insert(&c).unwrap_err();
        assert!(e.to_string().contains("disk I/O error"), "{e}");
        assert!(counts(&dir).failed_syncs > 0);
        set_mode(
            &dir,
            Mode {
                fsync_fails: false,
                full: true,
            },
        );
        // The failed commit's frames left room in the WAL; a few commits fill it.
        let stored = (0..50).take_while(|_| insert(&c).is_ok()).count();
        assert!(stored < 50, "a full disk refused nothing");
        assert!(counts(&dir).full_writes > 0);
        set_mode(&dir, Mode::default());
        insert(&c).unwrap();
        drop(c);
        let want = i64::try_from(stored).unwrap() + 2;
        assert_eq!(rows(&dir), want, "the refused commits left nothing behind");
        detach(&dir);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
