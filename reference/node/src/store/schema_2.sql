-- LOOM reference node store, migration 2 (issue 14): the search rows are keyed by the rowid
-- of the row they index, so keeping them in step is a rowid lookup instead of a scan of an
-- UNINDEXED column; thread listings get indexes in their sort orders.

CREATE VIRTUAL TABLE thread_search_v2 USING fts5(
    thread_id UNINDEXED, subject, labels, participants,
    tokenize = 'unicode61'
);
INSERT INTO thread_search_v2 (rowid, thread_id, subject, labels, participants)
    SELECT t.rowid, s.thread_id, s.subject, s.labels, s.participants
    FROM thread_search s JOIN threads t ON t.id = s.thread_id;
DROP TABLE thread_search;
ALTER TABLE thread_search_v2 RENAME TO thread_search;

CREATE VIRTUAL TABLE envelope_search_v2 USING fts5(
    envelope_id UNINDEXED, thread_id UNINDEXED, text, intent, parameters,
    tokenize = 'unicode61'
);
INSERT INTO envelope_search_v2 (rowid, envelope_id, thread_id, text, intent, parameters)
    SELECT e.rowid, s.envelope_id, s.thread_id, s.text, s.intent, s.parameters
    FROM envelope_search s JOIN envelopes e ON e.id = s.envelope_id;
DROP TABLE envelope_search;
ALTER TABLE envelope_search_v2 RENAME TO envelope_search;

CREATE INDEX threads_by_updated ON threads(updated_at, id);
CREATE INDEX threads_by_created ON threads(created_at, id);
