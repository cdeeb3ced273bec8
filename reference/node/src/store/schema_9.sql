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

-- Workflow runs (v1.1 §19.2): the parsed definition and each step's state, as JSON
-- (loom_protocol::workflow::WorkflowRun), moved by the update envelopes of its thread.
CREATE TABLE workflows (
    id          TEXT PRIMARY KEY,            -- parameters.workflow_id
    thread_id   TEXT NOT NULL REFERENCES threads(id),
    status      TEXT NOT NULL,
    run         TEXT NOT NULL,
    updated_at  TEXT NOT NULL
);
CREATE INDEX workflows_by_thread ON workflows(thread_id, id);
