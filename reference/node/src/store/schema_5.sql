-- Migration 5 (issue 19; numbered 5 because another branch adds migration 4 — renumber at
-- merge time). Token families (v1.1 §14.2, OAuth 2.0 Security BCP §4.14): every token
-- minted by one login and its refreshes shares a family, so a refresh revokes the previous
-- access token and a reused refresh token revokes the whole login. Tokens stored before
-- this migration have no family (each is alone in its own).
ALTER TABLE tokens ADD COLUMN family TEXT;
CREATE INDEX tokens_by_family ON tokens (family) WHERE family IS NOT NULL;

-- §25.1 anchoring (issue 19): the audit log's high-water mark, kept outside `audit_log` and
-- raised in the same transaction as every append, so a sequence number is never handed out
-- twice even after rows were deleted, and `audit verify` sees rows missing from the end.
CREATE TABLE audit_anchor (
    id          INTEGER PRIMARY KEY CHECK (id = 1),
    high_water  INTEGER NOT NULL
);
INSERT INTO audit_anchor (id, high_water) SELECT 1, COALESCE(MAX(seq), 0) FROM audit_log;
