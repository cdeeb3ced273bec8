-- LOOM reference node store, migration 3 (issue 14, write cost): fewer B-trees written per
-- envelope. Every table below keeps its columns, keys and meaning; only the storage changes.
--  * envelopes_by_thread duplicated the UNIQUE (thread_id, event_seq) index.
--  * The reader, participant and label tables become WITHOUT ROWID: their primary key is
--    the table, instead of a rowid table plus a key index.
--  * envelope_readers_by_identity: no query reads readers by identity alone (reads name
--    the envelope, which the primary key leads with).
--  * thread_participants carries its thread's created_at and updated_at, indexed after the
--    identity, so a caller's thread listing walks an index in sort order instead of sorting
--    all the caller's threads (replaces thread_participants_by_identity).
--  * events.seq loses AUTOINCREMENT (a sqlite_sequence write per event): events are never
--    deleted, so max(seq) + 1 is the same next value and a seq is never reused.
-- Foreign keys are off while migrations run (Store::prepare), so tables can be rebuilt.

DROP INDEX envelopes_by_thread;

CREATE TABLE envelope_readers_v3 (
    envelope_id  TEXT NOT NULL REFERENCES envelopes(id),
    identity     TEXT NOT NULL,
    role         TEXT NOT NULL,              -- sender | reader
    PRIMARY KEY (envelope_id, identity)
) WITHOUT ROWID;
INSERT INTO envelope_readers_v3 (envelope_id, identity, role)
    SELECT envelope_id, identity, role FROM envelope_readers;
DROP TABLE envelope_readers;
ALTER TABLE envelope_readers_v3 RENAME TO envelope_readers;

CREATE TABLE thread_participants_v3 (
    thread_id   TEXT NOT NULL REFERENCES threads(id),
    identity    TEXT NOT NULL,
    role        TEXT NOT NULL,
    active      INTEGER NOT NULL DEFAULT 1,
    created_at  TEXT NOT NULL,               -- the thread's, for listings (§16.2 sort)
    updated_at  TEXT NOT NULL,               -- the thread's, kept equal by the writer
    PRIMARY KEY (thread_id, identity)
) WITHOUT ROWID;
INSERT INTO thread_participants_v3 (thread_id, identity, role, active, created_at, updated_at)
    SELECT p.thread_id, p.identity, p.role, p.active, t.created_at, t.updated_at
    FROM thread_participants p JOIN threads t ON t.id = p.thread_id;
DROP TABLE thread_participants;
ALTER TABLE thread_participants_v3 RENAME TO thread_participants;
-- A caller's threads in either sort order are one index range: a page of a listing reads
-- its rows, however many threads the caller or the node has.
CREATE INDEX thread_participants_by_updated
    ON thread_participants(identity, active, updated_at, thread_id);
CREATE INDEX thread_participants_by_created
    ON thread_participants(identity, active, created_at, thread_id);

CREATE TABLE thread_labels_v3 (
    thread_id  TEXT NOT NULL REFERENCES threads(id),
    label      TEXT NOT NULL,
    PRIMARY KEY (thread_id, label)
) WITHOUT ROWID;
INSERT INTO thread_labels_v3 (thread_id, label) SELECT thread_id, label FROM thread_labels;
DROP TABLE thread_labels;
ALTER TABLE thread_labels_v3 RENAME TO thread_labels;

CREATE TABLE events_v3 (
    seq          INTEGER PRIMARY KEY,
    id           TEXT NOT NULL UNIQUE,       -- evt_<ULID>
    type         TEXT NOT NULL,
    thread_id    TEXT,
    envelope_id  TEXT,
    payload      TEXT NOT NULL,
    created_at   TEXT NOT NULL
);
INSERT INTO events_v3 (seq, id, type, thread_id, envelope_id, payload, created_at)
    SELECT seq, id, type, thread_id, envelope_id, payload, created_at FROM events;
DROP TABLE events;
ALTER TABLE events_v3 RENAME TO events;

CREATE TABLE event_readers_v3 (
    event_seq  INTEGER NOT NULL REFERENCES events(seq),
    identity   TEXT NOT NULL,
    PRIMARY KEY (identity, event_seq)
) WITHOUT ROWID;
INSERT INTO event_readers_v3 (event_seq, identity) SELECT event_seq, identity FROM event_readers;
DROP TABLE event_readers;
ALTER TABLE event_readers_v3 RENAME TO event_readers;
