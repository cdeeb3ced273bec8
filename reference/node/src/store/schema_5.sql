-- Migration 5 (issue 19; numbered 5 because another branch adds migration 4 — renumber at
-- merge time). Token families (v1.1 §14.2, OAuth 2.0 Security BCP §4.14): every token
-- minted by one login and its refreshes shares a family, so a refresh revokes the previous
-- access token and a reused refresh token revokes the whole login. Tokens stored before
-- this migration have no family (each is alone in its own).
ALTER TABLE tokens ADD COLUMN family TEXT;
CREATE INDEX tokens_by_family ON tokens (family) WHERE family IS NOT NULL;
