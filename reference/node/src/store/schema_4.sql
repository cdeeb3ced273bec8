-- LOOM reference node store, migration 4: federation (v1.1 §15).

-- Peer node documents as fetched (§15.2), for their signing keys and URLs.
CREATE TABLE federation_nodes (
    node        TEXT PRIMARY KEY,            -- normalized node name
    document    TEXT NOT NULL,               -- the node document JSON as fetched
    fetched_at  TEXT NOT NULL
);

-- LOOM-HTTP-SIG-1 nonces seen (§15.3, §23.2): kept 15 minutes, so a restart does not
-- reopen a replay window.
CREATE TABLE federation_nonces (
    node     TEXT NOT NULL,
    nonce    TEXT NOT NULL,
    seen_ms  INTEGER NOT NULL,
    PRIMARY KEY (node, nonce)
);
CREATE INDEX federation_nonces_by_time ON federation_nonces(seen_ms);

-- Remote identities resolved from their home node (node-signed documents, §15.4).
CREATE TABLE remote_identities (
    id          TEXT PRIMARY KEY,            -- loom://local@remote-domain
    node        TEXT NOT NULL,
    type        TEXT,
    keys        TEXT NOT NULL,               -- JSON [[key_id, base64url public key], …] (active keys)
    document    TEXT NOT NULL,
    fetched_at  TEXT NOT NULL
);

-- The store-and-forward outbox (§15.6): one row per (destination node, envelope).
CREATE TABLE federation_outbox (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    destination      TEXT NOT NULL,          -- node domain
    envelope_id      TEXT NOT NULL,
    sender           TEXT NOT NULL,          -- the local sender, told on failure
    recipients       TEXT NOT NULL,          -- JSON array of the recipients on that node
    queued_at        TEXT NOT NULL,
    queued_ms        INTEGER NOT NULL,
    attempts         INTEGER NOT NULL DEFAULT 0,
    last_failure     TEXT,                   -- unreachable | timeout | http:<status> | receipt
    next_attempt_ms  INTEGER NOT NULL,
    state            TEXT NOT NULL,          -- queued | delivered | failed
    reason           TEXT,                   -- §24.2 code when failed
    done_at          TEXT,
    UNIQUE (destination, envelope_id)
);
CREATE INDEX federation_outbox_due ON federation_outbox(state, next_attempt_ms);
CREATE INDEX federation_outbox_by_destination ON federation_outbox(destination, state);

-- Deliveries held under the quarantine policy (§15.2, §23.1): accepted, not threaded.
CREATE TABLE federation_quarantine (
    envelope_id  TEXT NOT NULL,
    node         TEXT NOT NULL,
    envelope     TEXT NOT NULL,
    received_at  TEXT NOT NULL,
    PRIMARY KEY (node, envelope_id)
);
