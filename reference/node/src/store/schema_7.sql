-- Issue 14: an envelope's recorded readers (§8.3: the sender, its recipients, a custom
-- audience) move from the envelope_readers table into the envelope row, as a JSON array
-- of addresses in string order. Every statement that read them looked them up by envelope
-- (a search candidate, the envelopes of one thread), so the row serves them as well, and
-- each envelope writes one B-tree fewer: a page per envelope less in the WAL and in every
-- checkpoint, with sixteen senders writing at once.
ALTER TABLE envelopes ADD COLUMN readers TEXT NOT NULL DEFAULT '[]';
UPDATE envelopes SET readers = (
    SELECT json_group_array(identity ORDER BY identity)
    FROM envelope_readers r WHERE r.envelope_id = envelopes.id
);
DROP TABLE envelope_readers;
