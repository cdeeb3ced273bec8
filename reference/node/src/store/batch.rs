//! Group transactions for the single writer: one `BEGIN IMMEDIATE … COMMIT` around many
//! envelopes, a savepoint around each, so a failing envelope rolls back only its own
//! effects while the others commit together and share one WAL fsync.

use rusqlite::Connection;

/// Runs `f` inside one write transaction on `conn`; commits when `f` returns `Ok`, rolls
/// back otherwise. The commit returns only once it is durable (`synchronous = FULL`).
pub fn transaction<T>(
    conn: &Connection,
    f: impl FnOnce(&Connection) -> rusqlite::Result<T>,
) -> rusqlite::Result<T> {
    conn.execute_batch("BEGIN IMMEDIATE")?;
    match f(conn) {
        Ok(v) => match conn.execute_batch("COMMIT") {
            Ok(()) => Ok(v),
            Err(e) => {
                let _ = conn.execute_batch("ROLLBACK");
                Err(e)
            }
        },
        Err(e) => {
            let _ = conn.execute_batch("ROLLBACK");
            Err(e)
        }
    }
}

/// Runs `f` inside a savepoint of the current transaction: its changes stay when it returns
/// `Ok` and are undone when it returns `Err` (the outer transaction goes on). An error of
/// the savepoint statements themselves is returned as `Err(Err(..))`.
pub fn savepoint<T, E>(
    conn: &Connection,
    f: impl FnOnce(&Connection) -> Result<T, E>,
) -> rusqlite::Result<Result<T, E>> {
    conn.prepare_cached("SAVEPOINT envelope")?.execute([])?;
    let out = f(conn);
    if out.is_ok() {
        conn.prepare_cached("RELEASE envelope")?.execute([])?;
    } else {
        conn.prepare_cached("ROLLBACK TO envelope")?.execute([])?;
        conn.prepare_cached("RELEASE envelope")?.execute([])?;
    }
    Ok(out)
}
