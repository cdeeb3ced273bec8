-- Issue 34: the real-time stream (v1.1 §17).
-- The hub reads each committed event once with its readers (`events::live_after`), by event.
CREATE INDEX event_readers_by_event ON event_readers(event_seq);

-- The last cursor each identity acknowledged (§17.2 `ack`): a subscription without `since`
-- resumes after it.
CREATE TABLE realtime_acks (
    identity  TEXT PRIMARY KEY,
    seq       INTEGER NOT NULL,
    at        TEXT NOT NULL
);
