//! The writer connection's SQLite VFS: the platform's default VFS, with the writes to the
//! WAL file gathered so that a group commit reaches the kernel as one `pwrite` instead of
//! two per page.
//!
//! Why (issue 14): SQLite writes each WAL frame with two `write` calls, its 24-byte header
//! and then the page (`walWriteOneFrame` in `sqlite3.c`). A group commit of ~70 frames
//! made ~140 system calls; under load they were 72% of all the node's system calls and the
//! largest single cost in its CPU profile. Frames of one transaction are contiguous in the
//! WAL, so this shim keeps a write that continues the previous one in a buffer and hands
//! the whole run to the default VFS as one write.
//!
//! # When buffered bytes reach the file
//!
//! Before anything can observe the WAL through this file handle: before a sync, a read, a
//! size query, a truncate, a lock change, a file control or a close, and when a write does
//! not continue the buffered run or would grow it past [`BUFFER_LIMIT`]. An error of that
//! delayed write is returned by the call that caused it; SQLite treats it like a failed
//! write of its own and rolls the transaction back.
//!
//! # Why other connections never see a frame that is still buffered
//!
//! Readers (the read-only pool, `audit verify`) open the WAL with their own handles and read
//! a frame only if the wal-index says it belongs to a committed transaction. The writer
//! connection runs with `synchronous = FULL` ([`super::Store::open`] sets it right after
//! opening through this VFS): SQLite then syncs the WAL at every commit *before* it
//! publishes the commit in the wal-index (`walFrames`: sync, then `walIndexWriteHdr`), and
//! the sync flushes the buffer first. Frames written without a commit (a transaction larger
//! than the page cache spills) are invisible to readers until that commit, and the writer
//! reads them back through this handle, which flushes. With `synchronous = NORMAL` or `OFF`
//! a commit would be published before its frames reach the file, so this VFS must only be
//! used with `FULL` (the store's tests check the writer's setting).
//!
//! Durability is unchanged: the bytes reach the file before the `fsync` that makes a commit
//! durable, exactly as without the shim; a crash before that `fsync` loses the transaction
//! either way (`tests/crash.rs`).
//!
//! Every other method, and every method of every other file (the database file, its
//! shared-memory wal-index, journals), goes straight to the default VFS.

#![allow(unsafe_code)] // The only unsafe code of the workspace: SQLite calls these functions through C pointers.

use rusqlite::ffi;
use std::ffi::{CStr, c_int, c_void};
use std::sync::OnceLock;

/// The name this VFS is registered under (never the default VFS).
pub const NAME: &CStr = c"loom-wal-gather";

/// Largest buffered run: a write that would grow it further flushes it first.
pub const BUFFER_LIMIT: usize = 1 << 20;

/// Largest single write handed to the default VFS: the unix VFS masks a write's length with
/// `0x1ffff` (`seekAndWriteFd`), so a write of 128 KiB or more would be cut short. 124 KiB
/// keeps pieces page-aligned.
const WRITE_PIECE: usize = 124 << 10;

/// Registers the VFS once per process; later calls return the first call's result.
pub fn register() -> Result<(), String> {
    static REGISTERED: OnceLock<Result<(), String>> = OnceLock::new();
    REGISTERED.get_or_init(register_once).clone()
}

fn register_once() -> Result<(), String> {
    // SAFETY: sqlite3_vfs_find(NULL) returns the default VFS, a static object that lives as
    // long as the process (nothing unregisters it).
    let inner = unsafe { ffi::sqlite3_vfs_find(std::ptr::null()) };
    if inner.is_null() {
        return Err("SQLite has no default VFS".into());
    }
    // SAFETY: `inner` is a valid registered VFS (above). The copy keeps the default VFS's
    // methods and its pAppData (the unix VFS reads its locking style from there), and
    // changes only the name, the file size and xOpen. It is leaked on purpose: SQLite keeps
    // a pointer to a registered VFS for the life of the process.
    unsafe {
        let inner_file_size = usize::try_from((*inner).szOsFile)
            .map_err(|_| "the default VFS reports a negative file size".to_string())?;
        let mut vfs = *inner;
        vfs.zName = NAME.as_ptr();
        vfs.szOsFile = c_int::try_from(GatherFile::inner_offset() + inner_file_size)
            .map_err(|_| "file object too large".to_string())?;
        vfs.xOpen = Some(x_open);
        vfs.pNext = std::ptr::null_mut();
        let vfs = Box::into_raw(Box::new(vfs));
        INNER.get_or_init(|| VfsPtr(inner));
        match ffi::sqlite3_vfs_register(vfs, 0) {
            ffi::SQLITE_OK => Ok(()),
            rc => Err(format!("sqlite3_vfs_register failed with code {rc}")),
        }
    }
}

/// The default VFS this one wraps.
struct VfsPtr(*mut ffi::sqlite3_vfs);
// SAFETY: a registered VFS is immutable, process-wide state that SQLite itself calls from
// every thread.
unsafe impl Send for VfsPtr {}
unsafe impl Sync for VfsPtr {}
static INNER: OnceLock<VfsPtr> = OnceLock::new();

/// One open file: SQLite allocates `szOsFile` bytes and hands them to `x_open`; this header
/// comes first, the default VFS's own file object follows at [`GatherFile::inner_offset`].
#[repr(C)]
struct GatherFile {
    /// Must be first: SQLite reads the methods through a `*mut sqlite3_file`.
    base: ffi::sqlite3_file,
    /// The default VFS's file object (inside the same allocation).
    inner: *mut ffi::sqlite3_file,
    /// Writes are gathered only for the WAL file.
    wal: bool,
    /// Offset in the file of `buf[0]`.
    buf_offset: i64,
    buf: Vec<u8>,
}

impl GatherFile {
    fn inner_offset() -> usize {
        std::mem::size_of::<GatherFile>().next_multiple_of(16)
    }
}

unsafe extern "C" fn x_open(
    _vfs: *mut ffi::sqlite3_vfs,
    name: ffi::sqlite3_filename,
    file: *mut ffi::sqlite3_file,
    flags: c_int,
    out_flags: *mut c_int,
) -> c_int {
    unsafe {
        let Some(inner_vfs) = INNER.get() else {
            return ffi::SQLITE_ERROR;
        };
        let inner_vfs = inner_vfs.0;
        let this = file.cast::<GatherFile>();
        let inner = file
            .cast::<u8>()
            .add(GatherFile::inner_offset())
            .cast::<ffi::sqlite3_file>();
        // SAFETY: SQLite allocated szOsFile bytes at `file`, aligned for any object; the header
        // is written before anything reads it.
        std::ptr::write(
            this,
            GatherFile {
                base: ffi::sqlite3_file {
                    pMethods: std::ptr::null(),
                },
                inner,
                wal: flags & ffi::SQLITE_OPEN_WAL != 0,
                buf_offset: 0,
                buf: Vec::new(),
            },
        );
        (*inner).pMethods = std::ptr::null();
        let Some(open) = (*inner_vfs).xOpen else {
            std::ptr::drop_in_place(this);
            return ffi::SQLITE_ERROR;
        };
        let rc = open(inner_vfs, name, inner, flags, out_flags);
        if (*inner).pMethods.is_null() {
            // SQLite calls xClose only when pMethods is set: free the header now.
            std::ptr::drop_in_place(this);
            return if rc == ffi::SQLITE_OK {
                ffi::SQLITE_ERROR
            } else {
                rc
            };
        }
        (*this).base.pMethods = &METHODS;
        rc
    }
}

static METHODS: ffi::sqlite3_io_methods = ffi::sqlite3_io_methods {
    iVersion: 3,
    xClose: Some(x_close),
    xRead: Some(x_read),
    xWrite: Some(x_write),
    xTruncate: Some(x_truncate),
    xSync: Some(x_sync),
    xFileSize: Some(x_file_size),
    xLock: Some(x_lock),
    xUnlock: Some(x_unlock),
    xCheckReservedLock: Some(x_check_reserved_lock),
    xFileControl: Some(x_file_control),
    xSectorSize: Some(x_sector_size),
    xDeviceCharacteristics: Some(x_device_characteristics),
    xShmMap: Some(x_shm_map),
    xShmLock: Some(x_shm_lock),
    xShmBarrier: Some(x_shm_barrier),
    xShmUnmap: Some(x_shm_unmap),
    xFetch: Some(x_fetch),
    xUnfetch: Some(x_unfetch),
};

/// The wrapper of a file SQLite passes back to a method.
unsafe fn this<'a>(file: *mut ffi::sqlite3_file) -> &'a mut GatherFile {
    unsafe {
        // SAFETY (callers): `file` was set up by `x_open` and SQLite uses a file object from one
        // thread at a time.
        &mut *file.cast::<GatherFile>()
    }
}

/// The default VFS's methods of the wrapped file.
unsafe fn inner_methods(f: &GatherFile) -> &ffi::sqlite3_io_methods {
    unsafe { &*(*f.inner).pMethods }
}

/// Writes the buffered run, if any, in pieces of at most [`WRITE_PIECE`] bytes. The buffer
/// is emptied even on error: SQLite rolls the transaction back and rewrites those frames.
unsafe fn flush(f: &mut GatherFile) -> c_int {
    unsafe {
        let Some(write) = inner_methods(f).xWrite else {
            f.buf.clear();
            return ffi::SQLITE_IOERR_WRITE;
        };
        let mut rc = ffi::SQLITE_OK;
        let mut offset = f.buf_offset;
        for piece in f.buf.chunks(WRITE_PIECE) {
            // A piece is at most WRITE_PIECE bytes, so the length fits a c_int.
            rc = write(f.inner, piece.as_ptr().cast(), piece.len() as c_int, offset);
            if rc != ffi::SQLITE_OK {
                break;
            }
            offset += piece.len() as i64;
        }
        f.buf.clear();
        rc
    }
}

/// Runs `then` after flushing the buffered run; a flush error wins.
macro_rules! after_flush {
    ($f:expr, $then:expr) => {{
        let rc = flush($f);
        if rc != ffi::SQLITE_OK {
            return rc;
        }
        $then
    }};
}

unsafe extern "C" fn x_close(file: *mut ffi::sqlite3_file) -> c_int {
    unsafe {
        let f = this(file);
        let flushed = flush(f);
        let closed = match inner_methods(f).xClose {
            Some(close) => close(f.inner),
            None => ffi::SQLITE_OK,
        };
        std::ptr::drop_in_place(file.cast::<GatherFile>());
        if flushed != ffi::SQLITE_OK {
            flushed
        } else {
            closed
        }
    }
}

unsafe extern "C" fn x_read(
    file: *mut ffi::sqlite3_file,
    out: *mut c_void,
    amount: c_int,
    offset: i64,
) -> c_int {
    unsafe {
        let f = this(file);
        after_flush!(
            f,
            match inner_methods(f).xRead {
                Some(read) => read(f.inner, out, amount, offset),
                None => ffi::SQLITE_IOERR_READ,
            }
        )
    }
}

unsafe extern "C" fn x_write(
    file: *mut ffi::sqlite3_file,
    data: *const c_void,
    amount: c_int,
    offset: i64,
) -> c_int {
    unsafe {
        let f = this(file);
        let Ok(len) = usize::try_from(amount) else {
            return ffi::SQLITE_IOERR_WRITE;
        };
        if f.wal && len < BUFFER_LIMIT {
            let continues = f.buf_offset + f.buf.len() as i64 == offset;
            if !f.buf.is_empty() && (!continues || f.buf.len() + len > BUFFER_LIMIT) {
                let rc = flush(f);
                if rc != ffi::SQLITE_OK {
                    return rc;
                }
            }
            if f.buf.is_empty() {
                f.buf_offset = offset;
            }
            // SAFETY: SQLite passes `amount` readable bytes at `data`.
            f.buf
                .extend_from_slice(std::slice::from_raw_parts(data.cast::<u8>(), len));
            return ffi::SQLITE_OK;
        }
        after_flush!(
            f,
            match inner_methods(f).xWrite {
                Some(write) => write(f.inner, data, amount, offset),
                None => ffi::SQLITE_IOERR_WRITE,
            }
        )
    }
}

unsafe extern "C" fn x_truncate(file: *mut ffi::sqlite3_file, size: i64) -> c_int {
    unsafe {
        let f = this(file);
        after_flush!(
            f,
            match inner_methods(f).xTruncate {
                Some(truncate) => truncate(f.inner, size),
                None => ffi::SQLITE_IOERR_TRUNCATE,
            }
        )
    }
}

unsafe extern "C" fn x_sync(file: *mut ffi::sqlite3_file, flags: c_int) -> c_int {
    unsafe {
        let f = this(file);
        after_flush!(
            f,
            match inner_methods(f).xSync {
                Some(sync) => sync(f.inner, flags),
                None => ffi::SQLITE_IOERR_FSYNC,
            }
        )
    }
}

unsafe extern "C" fn x_file_size(file: *mut ffi::sqlite3_file, size: *mut i64) -> c_int {
    unsafe {
        let f = this(file);
        after_flush!(
            f,
            match inner_methods(f).xFileSize {
                Some(file_size) => file_size(f.inner, size),
                None => ffi::SQLITE_IOERR_FSTAT,
            }
        )
    }
}

unsafe extern "C" fn x_lock(file: *mut ffi::sqlite3_file, level: c_int) -> c_int {
    unsafe {
        let f = this(file);
        after_flush!(
            f,
            match inner_methods(f).xLock {
                Some(lock) => lock(f.inner, level),
                None => ffi::SQLITE_IOERR_LOCK,
            }
        )
    }
}

unsafe extern "C" fn x_unlock(file: *mut ffi::sqlite3_file, level: c_int) -> c_int {
    unsafe {
        let f = this(file);
        after_flush!(
            f,
            match inner_methods(f).xUnlock {
                Some(unlock) => unlock(f.inner, level),
                None => ffi::SQLITE_IOERR_UNLOCK,
            }
        )
    }
}

unsafe extern "C" fn x_check_reserved_lock(file: *mut ffi::sqlite3_file, out: *mut c_int) -> c_int {
    unsafe {
        let f = this(file);
        match inner_methods(f).xCheckReservedLock {
            Some(check) => check(f.inner, out),
            None => ffi::SQLITE_IOERR_CHECKRESERVEDLOCK,
        }
    }
}

unsafe extern "C" fn x_file_control(
    file: *mut ffi::sqlite3_file,
    op: c_int,
    arg: *mut c_void,
) -> c_int {
    unsafe {
        let f = this(file);
        after_flush!(
            f,
            match inner_methods(f).xFileControl {
                Some(control) => control(f.inner, op, arg),
                None => ffi::SQLITE_NOTFOUND,
            }
        )
    }
}

unsafe extern "C" fn x_sector_size(file: *mut ffi::sqlite3_file) -> c_int {
    unsafe {
        let f = this(file);
        match inner_methods(f).xSectorSize {
            Some(sector_size) => sector_size(f.inner),
            None => 4096,
        }
    }
}

unsafe extern "C" fn x_device_characteristics(file: *mut ffi::sqlite3_file) -> c_int {
    unsafe {
        let f = this(file);
        match inner_methods(f).xDeviceCharacteristics {
            Some(characteristics) => characteristics(f.inner),
            None => 0,
        }
    }
}

unsafe extern "C" fn x_shm_map(
    file: *mut ffi::sqlite3_file,
    region: c_int,
    size: c_int,
    extend: c_int,
    out: *mut *mut c_void,
) -> c_int {
    unsafe {
        let f = this(file);
        match (inner_methods(f).iVersion >= 2, inner_methods(f).xShmMap) {
            (true, Some(map)) => map(f.inner, region, size, extend, out),
            _ => ffi::SQLITE_IOERR_SHMMAP,
        }
    }
}

unsafe extern "C" fn x_shm_lock(
    file: *mut ffi::sqlite3_file,
    offset: c_int,
    n: c_int,
    flags: c_int,
) -> c_int {
    unsafe {
        let f = this(file);
        match (inner_methods(f).iVersion >= 2, inner_methods(f).xShmLock) {
            (true, Some(lock)) => lock(f.inner, offset, n, flags),
            _ => ffi::SQLITE_IOERR_SHMLOCK,
        }
    }
}

unsafe extern "C" fn x_shm_barrier(file: *mut ffi::sqlite3_file) {
    unsafe {
        let f = this(file);
        if let (true, Some(barrier)) =
            (inner_methods(f).iVersion >= 2, inner_methods(f).xShmBarrier)
        {
            barrier(f.inner);
        }
    }
}

unsafe extern "C" fn x_shm_unmap(file: *mut ffi::sqlite3_file, delete: c_int) -> c_int {
    unsafe {
        let f = this(file);
        match (inner_methods(f).iVersion >= 2, inner_methods(f).xShmUnmap) {
            (true, Some(unmap)) => unmap(f.inner, delete),
            _ => ffi::SQLITE_OK,
        }
    }
}

unsafe extern "C" fn x_fetch(
    file: *mut ffi::sqlite3_file,
    offset: i64,
    amount: c_int,
    out: *mut *mut c_void,
) -> c_int {
    unsafe {
        let f = this(file);
        *out = std::ptr::null_mut();
        after_flush!(
            f,
            match (inner_methods(f).iVersion >= 3, inner_methods(f).xFetch) {
                (true, Some(fetch)) => fetch(f.inner, offset, amount, out),
                _ => ffi::SQLITE_OK,
            }
        )
    }
}

unsafe extern "C" fn x_unfetch(
    file: *mut ffi::sqlite3_file,
    offset: i64,
    page: *mut c_void,
) -> c_int {
    unsafe {
        let f = this(file);
        match (inner_methods(f).iVersion >= 3, inner_methods(f).xUnfetch) {
            (true, Some(unfetch)) => unfetch(f.inner, offset, page),
            _ => ffi::SQLITE_OK,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rusqlite::{Connection, OpenFlags};

    fn writer(path: &std::path::Path) -> Connection {
        register().unwrap();
        let c = Connection::open_with_flags_and_vfs(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE,
            NAME,
        )
        .unwrap();
        c.pragma_update(None, "journal_mode", "WAL").unwrap();
        c.pragma_update(None, "synchronous", "FULL").unwrap();
        c
    }

    /// A fresh directory for one test (removed when dropped).
    struct TempDir(std::path::PathBuf);
    impl TempDir {
        fn new(name: &str) -> TempDir {
            let dir =
                std::env::temp_dir().join(format!("loom-wal-vfs-{name}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).unwrap();
            TempDir(dir)
        }
        fn path(&self) -> &std::path::Path {
            &self.0
        }
    }
    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn reader(path: &std::path::Path) -> Connection {
        Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap()
    }

    fn count(c: &Connection) -> i64 {
        c.query_row("SELECT count(*), sum(length(v)) FROM t", [], |r| r.get(0))
            .unwrap()
    }

    #[test]
    fn a_reader_with_its_own_handle_sees_every_commit_at_once() {
        let dir = TempDir::new("reader");
        let path = dir.path().join("db");
        let w = writer(&path);
        w.execute_batch("CREATE TABLE t(v BLOB)").unwrap();
        let r = reader(&path);
        for i in 1..=50i64 {
            w.execute("INSERT INTO t VALUES (randomblob(3000))", [])
                .unwrap();
            assert_eq!(count(&r), i, "commit {i} visible to another connection");
        }
    }

    #[test]
    fn a_transaction_larger_than_the_buffer_and_the_page_cache_commits_whole() {
        let dir = TempDir::new("spill");
        let path = dir.path().join("db");
        let w = writer(&path);
        // A tiny page cache makes SQLite spill uncommitted frames to the WAL and read them
        // back; 8 MB of rows is eight times the buffer limit.
        w.pragma_update(None, "cache_size", 10).unwrap();
        w.execute_batch("CREATE TABLE t(v BLOB)").unwrap();
        let r = reader(&path);
        w.execute_batch("BEGIN").unwrap();
        for _ in 0..2000 {
            w.execute("INSERT INTO t VALUES (randomblob(4000))", [])
                .unwrap();
        }
        assert_eq!(count(&r), 0, "nothing is visible before the commit");
        let sum: i64 = w
            .query_row("SELECT sum(length(v)) FROM t", [], |r| r.get(0))
            .unwrap();
        assert_eq!(sum, 8_000_000, "the writer reads its spilled frames back");
        w.execute_batch("COMMIT").unwrap();
        assert_eq!(count(&r), 2000);
    }

    #[test]
    fn a_rolled_back_transaction_leaves_nothing_and_the_store_reopens_intact() {
        let dir = TempDir::new("rollback");
        let path = dir.path().join("db");
        {
            let w = writer(&path);
            w.pragma_update(None, "cache_size", 10).unwrap();
            w.execute_batch("CREATE TABLE t(v BLOB); INSERT INTO t VALUES (x'01')")
                .unwrap();
            w.execute_batch("BEGIN").unwrap();
            for _ in 0..500 {
                w.execute("INSERT INTO t VALUES (randomblob(4000))", [])
                    .unwrap();
            }
            w.execute_batch("ROLLBACK").unwrap();
            for _ in 0..20 {
                w.execute("INSERT INTO t VALUES (randomblob(100))", [])
                    .unwrap();
            }
            w.execute_batch("PRAGMA wal_checkpoint(TRUNCATE)").unwrap();
            for _ in 0..5 {
                w.execute("INSERT INTO t VALUES (randomblob(100))", [])
                    .unwrap();
            }
        }
        let w = writer(&path);
        assert_eq!(count(&w), 26);
        let check: String = w
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .unwrap();
        assert_eq!(check, "ok");
    }

    /// What a crash right after a commit leaves: the database and WAL files as the kernel
    /// holds them (copied while the writer is still open, so no close flushes anything).
    #[test]
    fn every_commit_is_in_the_files_when_it_returns() {
        let dir = TempDir::new("files");
        let path = dir.path().join("db");
        let w = writer(&path);
        w.execute_batch("CREATE TABLE t(v BLOB)").unwrap();
        for i in 1..=5i64 {
            w.execute_batch("BEGIN").unwrap();
            for _ in 0..i {
                w.execute("INSERT INTO t VALUES (randomblob(2000))", [])
                    .unwrap();
            }
            w.execute_batch("COMMIT").unwrap();
            let copy = dir.path().join(format!("copy{i}"));
            std::fs::create_dir_all(&copy).unwrap();
            std::fs::copy(&path, copy.join("db")).unwrap();
            std::fs::copy(dir.path().join("db-wal"), copy.join("db-wal")).unwrap();
            let c = Connection::open(copy.join("db")).unwrap();
            assert_eq!(count(&c), i * (i + 1) / 2, "rows of commits 1..={i}");
        }
    }

    /// The deferral is safe only with `synchronous = FULL` (module docs): the store's
    /// writer, opened through this VFS, runs with it, in WAL mode.
    #[test]
    fn the_store_writer_runs_in_wal_mode_with_full_sync() {
        let dir = TempDir::new("store");
        let store =
            super::super::Store::open(&crate::config::Storage::Dir(dir.path().into())).unwrap();
        let conn = store.conn();
        let sync: i64 = conn
            .query_row("PRAGMA synchronous", [], |r| r.get(0))
            .unwrap();
        let mode: String = conn
            .query_row("PRAGMA journal_mode", [], |r| r.get(0))
            .unwrap();
        assert_eq!((sync, mode.as_str()), (2, "wal"), "2 is FULL");
    }
}
