//! The email bridge's state (v1.1 §21): the Message-ID index that threads replies and
//! dedupes re-sent mail. Outbound mail is queued with [`super::federation::Queue::Mail`].

use super::Cached;
use rusqlite::{Connection, OptionalExtension, params};

const RECORD: &str = "INSERT OR IGNORE INTO bridge_messages (message_id, direction, sender, thread_id, envelope_id, at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)";
const FIND: &str = "SELECT thread_id, envelope_id FROM bridge_messages WHERE message_id = ?1 ORDER BY direction DESC LIMIT 1";
const RECEIVED: &str = "SELECT envelope_id FROM bridge_messages WHERE message_id = ?1 AND direction = 'in' AND sender = ?2";
const OF_ENVELOPE: &str = "SELECT message_id FROM bridge_messages WHERE envelope_id = ?1 ORDER BY direction, message_id LIMIT 1";

/// Which way a message went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Received by the bridge.
    In,
    /// Sent by the bridge.
    Out,
}

impl Direction {
    fn as_str(self) -> &'static str {
        match self {
            Direction::In => "in",
            Direction::Out => "out",
        }
    }
}

/// A Message-ID and the envelope it is.
#[derive(Debug, Clone, Copy)]
pub struct MessageRow<'a> {
    /// The Message-ID, without angle brackets.
    pub message_id: &'a str,
    /// In or out.
    pub direction: Direction,
    /// The bridge:// sender (in) or the LOOM sender (out).
    pub sender: &'a str,
    /// Its thread.
    pub thread_id: &'a str,
    /// The (visible) envelope.
    pub envelope_id: &'a str,
    /// When.
    pub at: &'a str,
}

/// Records a message (a second record of the same id and direction is ignored).
pub fn record(conn: &Connection, m: &MessageRow<'_>) -> rusqlite::Result<()> {
    conn.exec(
        RECORD,
        params![
            m.message_id,
            m.direction.as_str(),
            m.sender,
            m.thread_id,
            m.envelope_id,
            m.at
        ],
    )?;
    Ok(())
}

/// The thread and envelope of `message_id` (one the bridge sent first: replies name those).
pub fn find(conn: &Connection, message_id: &str) -> rusqlite::Result<Option<(String, String)>> {
    conn.row(FIND, [message_id], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()
}

/// The envelope an earlier delivery of `message_id` from `sender` became, if any.
pub fn received(
    conn: &Connection,
    message_id: &str,
    sender: &str,
) -> rusqlite::Result<Option<String>> {
    conn.row(RECEIVED, params![message_id, sender], |r| r.get(0))
        .optional()
}

/// A Message-ID the bridge knows for `envelope_id` (to thread an outbound reply to it).
pub fn message_id_of(conn: &Connection, envelope_id: &str) -> rusqlite::Result<Option<String>> {
    conn.row(OF_ENVELOPE, [envelope_id], |r| r.get(0))
        .optional()
}
