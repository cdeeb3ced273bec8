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
//! not continue the buffered run or would grow it past [`BUFFER_LIMIT`]. And before anything
//! can observe it through another handle: the connection's database file flushes its WAL's
//! buffer before every call on the shared-memory wal-index ([`flush_wal_of`]), so before
//! SQLite publishes a commit there (`walIndexWriteHdr` calls `xShmBarrier` between the two
//! header copies) and before it releases the WAL's write lock (`xShmLock`), after which
//! another connection may write at the same offsets. A failed delayed write is reported as
//! `SQLITE_IOERR_WRITE` by the call that caused it (never `SQLITE_FULL`, which SQLite may
//! answer by rolling back only the statement), so SQLite rolls the transaction back.
//!
//! # Why other connections never see a frame that is still buffered
//!
//! Readers (the read-only pool, `audit verify`, another process) open the WAL with their own
//! handles and read a frame only if the wal-index says it belongs to a committed
//! transaction; the flush before the wal-index barrier puts every frame of a commit in the
//! file before the commit is published, whatever `synchronous` says. Frames written
//! without a commit (a transaction larger than the page cache spills) are invisible to
//! readers until that commit, and the writer reads them back through this handle, which
//! flushes; if the transaction rolls back instead, they reach the file while the write lock
//! is still held, beyond the last committed frame, where nobody reads them.
//!
//! The store's writer runs with `synchronous = FULL` ([`super::Store::open`]): SQLite then
//! syncs the WAL at every commit, the sync flushes first, and an error writing a commit's
//! frames fails that commit. (With `NORMAL` the flush at the barrier would be the first
//! write of a commit's frames, and the barrier cannot report an error.)
//!
//! Durability is unchanged: the bytes reach the file before the `fsync` that makes a commit
//! durable, exactly as without the shim; a crash before that `fsync` loses the transaction
//! either way (`tests/node/crash.rs`).
//!
//! Every other method, and every method of every other file (the database file, its
//! shared-memory wal-index, journals), goes straight to the default VFS; the database
//! file's wal-index methods only flush the connection's WAL first.

#![allow(unsafe_code)] // With `sim::disk`, the only unsafe code of the workspace: SQLite calls these functions through C pointers.

use rusqlite::ffi;
use std::ffi::{CStr, c_int, c_void};
use std::sync::{Mutex, OnceLock};

/// The name this VFS is registered under (never the default VFS).
pub const NAME: &CStr = c"loom-wal-gather";

/// Largest buffered run: a write that would grow it further flushes it first.
pub const BUFFER_LIMIT: usize = 1 << 20;

/// Largest single write handed to the default VFS: the unix VFS masks a write's length with
/// `0x1ffff` (`seekAndWriteFd`), so a write of 128 KiB or more would be cut short.
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
        if (*inner).iVersion < 3 {
            return Err(format!(
                "the default VFS has version {}; the WAL needs shared memory (version 3)",
                (*inner).iVersion
            ));
        }
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

/// The name of the VFS this one wraps (the process's default VFS when [`register`] first
/// ran), once registered.
pub fn wrapped() -> Option<String> {
    let inner = INNER.get()?.0;
    // SAFETY: a registered VFS and its name live as long as the process.
    unsafe {
        let name = (*inner).zName;
        (!name.is_null()).then(|| CStr::from_ptr(name).to_string_lossy().into_owned())
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
    /// The address of the database's file name as SQLite passed it to `xOpen` (the main
    /// database file's own name; for a WAL, `sqlite3_filename_database` of its name): one
    /// value per connection, so it pairs a database file with its WAL ([`WALS`]).
    db_key: usize,
    /// Offset in the file of `buf[0]`.
    buf_offset: i64,
    buf: Vec<u8>,
}

impl GatherFile {
    fn inner_offset() -> usize {
        std::mem::size_of::<GatherFile>().next_multiple_of(8)
    }
}

// SQLite allocates file objects 8-byte aligned (ROUND8 in `sqlite3.c`): the header, and the
// default VFS's object after it, need no more.
const _: () = assert!(std::mem::align_of::<GatherFile>() <= 8);

/// The open WAL files of this VFS, by [`GatherFile::db_key`], as addresses (`x_open` adds,
/// `x_close` removes). A connection uses its files from one thread at a time, and only the
/// connection's own database file looks up its WAL.
static WALS: Mutex<Vec<(usize, usize)>> = Mutex::new(Vec::new());

/// Flushes the buffer of the WAL paired with database key `db_key`, if that WAL is open.
unsafe fn flush_wal_of(db_key: usize) -> c_int {
    if db_key == 0 {
        return ffi::SQLITE_OK;
    }
    let wal = WALS
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .iter()
        .find(|(key, _)| *key == db_key)
        .map(|(_, wal)| *wal);
    match wal {
        // SAFETY: the address is a live WAL header of the calling connection (only its own
        // `x_close` removes it, before dropping it), and a connection runs on one thread at
        // a time, so nothing else uses that header now.
        Some(wal) => unsafe { flush(&mut *(wal as *mut GatherFile)) },
        None => ffi::SQLITE_OK,
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
        let wal = flags & ffi::SQLITE_OPEN_WAL != 0;
        let db_key = if wal {
            ffi::sqlite3_filename_database(name) as usize
        } else if flags & ffi::SQLITE_OPEN_MAIN_DB != 0 {
            name as usize
        } else {
            0
        };
        // SAFETY: SQLite allocated szOsFile bytes at `file`, 8-byte aligned (the const
        // assertion above); the header is written before anything reads it.
        std::ptr::write(
            this,
            GatherFile {
                base: ffi::sqlite3_file {
                    pMethods: std::ptr::null(),
                },
                inner,
                wal,
                db_key,
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
        if wal && db_key != 0 {
            WALS.lock()
                .unwrap_or_else(|p| p.into_inner())
                .push((db_key, this as usize));
        }
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
            if write(f.inner, piece.as_ptr().cast(), piece.len() as c_int, offset) != ffi::SQLITE_OK
            {
                // Whatever the cause (a full disk too): an I/O error, so that SQLite rolls
                // the whole transaction back (module docs).
                rc = ffi::SQLITE_IOERR_WRITE;
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
        if f.wal {
            let key = (f.db_key, file as usize);
            WALS.lock()
                .unwrap_or_else(|p| p.into_inner())
                .retain(|entry| *entry != key);
        }
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
        // Before the WAL's write lock is released (or any other lock changes): module docs.
        let rc = flush_wal_of(f.db_key);
        if rc != ffi::SQLITE_OK {
            return rc;
        }
        match (inner_methods(f).iVersion >= 2, inner_methods(f).xShmLock) {
            (true, Some(lock)) => lock(f.inner, offset, n, flags),
            _ => ffi::SQLITE_IOERR_SHMLOCK,
        }
    }
}

unsafe extern "C" fn x_shm_barrier(file: *mut ffi::sqlite3_file) {
    unsafe {
        let f = this(file);
        // Before a commit is published in the wal-index (module docs). The barrier cannot
        // report an error; under `synchronous = FULL` the commit's sync flushed already.
        let _ = flush_wal_of(f.db_key);
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
        let _ = flush_wal_of(f.db_key);
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

    /// Bytes the connection's WAL holds back right now (0 when its WAL is not open or not
    /// opened through this VFS).
    fn buffered(c: &Connection) -> usize {
        let mut wal: *mut ffi::sqlite3_file = std::ptr::null_mut();
        // SAFETY: SQLITE_FCNTL_JOURNAL_POINTER stores the pager's journal file, in WAL mode
        // the WAL (`sqlite3PagerJrnlFile`); it is one of ours when its methods are.
        unsafe {
            let rc = ffi::sqlite3_file_control(
                c.handle(),
                c"main".as_ptr(),
                ffi::SQLITE_FCNTL_JOURNAL_POINTER,
                (&raw mut wal).cast(),
            );
            if rc != ffi::SQLITE_OK || wal.is_null() || !std::ptr::eq((*wal).pMethods, &METHODS) {
                return 0;
            }
            (*wal.cast::<GatherFile>()).buf.len()
        }
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
            assert_eq!(buffered(&w), 0, "nothing held back after commit {i}");
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

    /// A writer through this VFS opened with `uri` and `synchronous = sync`.
    fn writer_with(uri: &str, sync: &str) -> Connection {
        register().unwrap();
        let c = Connection::open_with_flags_and_vfs(
            uri,
            OpenFlags::SQLITE_OPEN_READ_WRITE
                | OpenFlags::SQLITE_OPEN_CREATE
                | OpenFlags::SQLITE_OPEN_URI,
            NAME,
        )
        .unwrap();
        c.pragma_update(None, "journal_mode", "WAL").unwrap();
        c.pragma_update(None, "synchronous", sync).unwrap();
        c
    }

    /// Commits reach the file before SQLite publishes them, whatever the sync setting:
    /// `NORMAL` does not sync at a commit, and without power-safe overwrite (`psow=0`) the
    /// commit's sync falls inside its last padding frame.
    #[test]
    fn a_reader_sees_every_commit_without_a_sync_at_commit_or_with_sector_padding() {
        for (name, query, sync) in [
            ("normal", "", "NORMAL"),
            ("off", "", "OFF"),
            ("psow", "?psow=0", "FULL"),
        ] {
            let dir = TempDir::new(name);
            let path = dir.path().join("db");
            let w = writer_with(&format!("file:{}{query}", path.display()), sync);
            w.execute_batch("CREATE TABLE t(v BLOB)").unwrap();
            let r = reader(&path);
            for i in 1..=30i64 {
                w.execute("INSERT INTO t VALUES (randomblob(3000))", [])
                    .unwrap();
                assert_eq!(
                    buffered(&w),
                    0,
                    "{name}: nothing held back after commit {i}"
                );
                assert_eq!(
                    count(&r),
                    i,
                    "{name}: commit {i} visible to another connection"
                );
            }
        }
    }

    /// Frames a transaction spilled and then rolled back must not reach the file after the
    /// WAL's write lock is released: another writer may have committed at those offsets.
    #[test]
    fn a_rolled_back_spill_never_overwrites_another_writers_commit() {
        let dir = TempDir::new("spill-rollback");
        let path = dir.path().join("db");
        let a = writer(&path);
        a.pragma_update(None, "cache_size", 10).unwrap();
        a.execute_batch(
            "CREATE TABLE t(v BLOB); INSERT INTO t VALUES (x'01');
             CREATE TABLE other(v BLOB);
             WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 200)
             INSERT INTO other SELECT randomblob(3000) FROM n;",
        )
        .unwrap();
        // Everything so far in the database file, so reading `other` below never reads
        // (and so never flushes) the WAL.
        a.execute_batch("PRAGMA wal_checkpoint(TRUNCATE)").unwrap();
        a.execute_batch("BEGIN").unwrap();
        // ~100 pages: the cache of 10 spills them, and they fit the 1 MiB buffer.
        for _ in 0..100 {
            a.execute("INSERT INTO t VALUES (randomblob(4000))", [])
                .unwrap();
        }
        // Reading 200 other pages pushes the spilled ones out of the cache, so the rollback
        // has none to reload from the WAL: only the release of the write lock flushes.
        let _: i64 = a
            .query_row("SELECT sum(length(v)) FROM other", [], |r| r.get(0))
            .unwrap();
        a.execute_batch("ROLLBACK").unwrap();
        assert_eq!(
            buffered(&a),
            0,
            "nothing held back once the write lock is released"
        );
        let b = Connection::open(&path).unwrap();
        b.pragma_update(None, "synchronous", "FULL").unwrap();
        for _ in 0..50 {
            b.execute("INSERT INTO t VALUES (randomblob(3000))", [])
                .unwrap();
        }
        drop(a);
        let r = reader(&path);
        let check: String = r
            .query_row("PRAGMA integrity_check", [], |row| row.get(0))
            .unwrap();
        assert_eq!((count(&r), check.as_str()), (51, "ok"));
    }
}
