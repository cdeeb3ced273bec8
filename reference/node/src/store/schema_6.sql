-- Migration 6 (issue 14: fewer dirty pages per envelope). Three indexes that no statement
-- reads any more, each rewritten by every envelope on the write path:
-- - threads_by_updated, threads_by_created (migration 2): thread listings read the sort
--   keys kept in thread_participants since migration 3 (thread_participants_by_updated,
--   thread_participants_by_created); `updated_at` changes at every envelope.
-- - envelope_readers_by_identity: every reader lookup names the envelope (the primary key
--   (envelope_id, identity)); a thread's readable envelopes are found from the thread
--   (envelopes' UNIQUE (thread_id, event_seq)), not from all of the reader's envelopes.
DROP INDEX IF EXISTS threads_by_updated;
DROP INDEX IF EXISTS threads_by_created;
DROP INDEX IF EXISTS envelope_readers_by_identity;
