-- LOOM reference node store, migration 1. One table per thing the spec names; JSON columns
-- hold the exact signed documents (the wire form is the source of truth, DESIGN.md §3).

CREATE TABLE identities (
    id            TEXT PRIMARY KEY,          -- loom://local@domain (wire form)
    type          TEXT NOT NULL,             -- human | agent | team | service | bridge (§6.3)
    display_name  TEXT,
    document      TEXT NOT NULL,             -- the registered identity document (JSON)
    created_at    TEXT NOT NULL,
    updated_at    TEXT NOT NULL
);

CREATE TABLE identity_keys (
    identity    TEXT NOT NULL REFERENCES identities(id),
    key_id      TEXT NOT NULL,
    purpose     TEXT NOT NULL,               -- signing | encryption
    public_key  TEXT NOT NULL,               -- base64url raw key
    status      TEXT NOT NULL,               -- active | revoked
    created_at  TEXT NOT NULL,
    revoked_at  TEXT,
    PRIMARY KEY (identity, key_id)
);

CREATE TABLE challenges (
    challenge_id TEXT PRIMARY KEY,
    purpose      TEXT NOT NULL,              -- identity.register@v1 | auth
    identity     TEXT NOT NULL,
    key_id       TEXT NOT NULL,
    nonce        TEXT NOT NULL,
    expires_at   TEXT NOT NULL,
    used         INTEGER NOT NULL DEFAULT 0
);

CREATE TABLE tokens (
    token_hash  TEXT PRIMARY KEY,            -- hex SHA-256 of the bearer token
    kind        TEXT NOT NULL,               -- access | refresh
    identity    TEXT NOT NULL,
    key_id      TEXT NOT NULL,
    expires_at  TEXT NOT NULL,
    revoked     INTEGER NOT NULL DEFAULT 0
);

CREATE TABLE threads (
    id              TEXT PRIMARY KEY,
    state           TEXT NOT NULL,           -- serialized ThreadState (§10.1, §11)
    status          TEXT NOT NULL,           -- active | resolved | archived | locked
    subject         TEXT,
    created_at      TEXT NOT NULL,
    updated_at      TEXT NOT NULL,
    last_event_seq  INTEGER NOT NULL DEFAULT 0,
    envelope_count  INTEGER NOT NULL DEFAULT 0
);

CREATE TABLE thread_participants (
    thread_id  TEXT NOT NULL REFERENCES threads(id),
    identity   TEXT NOT NULL,
    role       TEXT NOT NULL,
    active     INTEGER NOT NULL DEFAULT 1,
    PRIMARY KEY (thread_id, identity)
);
CREATE INDEX thread_participants_by_identity ON thread_participants(identity, thread_id);

CREATE TABLE thread_labels (
    thread_id  TEXT NOT NULL REFERENCES threads(id),
    label      TEXT NOT NULL,
    PRIMARY KEY (thread_id, label)
);

CREATE TABLE envelopes (
    id           TEXT PRIMARY KEY,
    thread_id    TEXT NOT NULL REFERENCES threads(id),
    event_seq    INTEGER NOT NULL,           -- meta.event_seq (§11.6)
    parent_id    TEXT,
    type         TEXT NOT NULL,
    intent       TEXT,
    sender       TEXT NOT NULL,
    created_at   TEXT NOT NULL,
    received_at  TEXT NOT NULL,
    body         TEXT,                       -- the envelope JSON as stored; NULL once erased (§25.2)
    body_sha256  TEXT NOT NULL,              -- kept after erasure (audit skeleton)
    erased_at    TEXT,
    retracted_at TEXT,
    UNIQUE (thread_id, event_seq)
);
CREATE INDEX envelopes_by_thread ON envelopes(thread_id, event_seq);

-- Who may read an envelope (§8.3 audience, §20.6 BCC copies): one row per reader.
CREATE TABLE envelope_readers (
    envelope_id  TEXT NOT NULL REFERENCES envelopes(id),
    identity     TEXT NOT NULL,
    role         TEXT NOT NULL,              -- sender | to | cc | bcc | participant
    PRIMARY KEY (envelope_id, identity)
);
CREATE INDEX envelope_readers_by_identity ON envelope_readers(identity);

-- Tasks (§18.3): one row per task.create envelope, moved by task.state_update@v1.
CREATE TABLE tasks (
    id           TEXT PRIMARY KEY,           -- the task.create envelope id
    thread_id    TEXT NOT NULL REFERENCES threads(id),
    creator      TEXT NOT NULL,
    assignee     TEXT,
    state        TEXT NOT NULL,
    updated_at   TEXT NOT NULL
);

CREATE TABLE delegations (
    id          TEXT PRIMARY KEY,
    delegator   TEXT NOT NULL,
    delegate    TEXT NOT NULL,
    document    TEXT NOT NULL,               -- the signed link (JSON)
    created_at  TEXT NOT NULL,
    expires_at  TEXT,
    revoked_at  TEXT,
    link_created_at TEXT                     -- the link's own created_at (normalized), to recognise id-less links
);
CREATE INDEX delegations_by_delegator ON delegations(delegator);
CREATE INDEX delegations_by_link ON delegations(delegator, delegate, link_created_at);

-- Pair revocations (§13.4, v1.0 §12.5): every link from delegator to delegate created at
-- or before revoked_at is void; a link revoked by id is marked in `delegations`.
CREATE TABLE delegation_revocations (
    delegator   TEXT NOT NULL,
    delegate    TEXT NOT NULL,
    revoked_at  TEXT NOT NULL,
    PRIMARY KEY (delegator, delegate)
);

CREATE TABLE capabilities (
    id          TEXT PRIMARY KEY,
    thread_id   TEXT NOT NULL,
    issued_by   TEXT NOT NULL,
    issued_to   TEXT NOT NULL,
    epoch       INTEGER NOT NULL,
    single_use  INTEGER NOT NULL,
    document    TEXT NOT NULL,               -- the signed token (JSON)
    created_at  TEXT NOT NULL,
    spent_at    TEXT,
    revoked_at  TEXT
);
CREATE INDEX capabilities_by_thread ON capabilities(thread_id);

CREATE TABLE idempotency (
    identity      TEXT NOT NULL,
    key           TEXT NOT NULL,
    route         TEXT NOT NULL,
    request_hash  TEXT NOT NULL,
    status        INTEGER NOT NULL,
    response      TEXT NOT NULL,
    created_at    TEXT NOT NULL,
    PRIMARY KEY (identity, key)
);

-- The event log clients catch up from (§16.8, §17): stable ids, total order by seq.
CREATE TABLE events (
    seq          INTEGER PRIMARY KEY AUTOINCREMENT,
    id           TEXT NOT NULL UNIQUE,       -- evt_<ULID>
    type         TEXT NOT NULL,
    thread_id    TEXT,
    envelope_id  TEXT,
    payload      TEXT NOT NULL,
    created_at   TEXT NOT NULL
);

CREATE TABLE event_readers (
    event_seq  INTEGER NOT NULL REFERENCES events(seq),
    identity   TEXT NOT NULL,
    PRIMARY KEY (identity, event_seq)
);

-- §25.1 append-only hash-chained audit log.
CREATE TABLE audit_log (
    seq        INTEGER PRIMARY KEY,
    at         TEXT NOT NULL,
    actor      TEXT NOT NULL,
    action     TEXT NOT NULL,
    subject    TEXT NOT NULL,
    details    TEXT NOT NULL,
    prev_hash  TEXT NOT NULL,
    hash       TEXT NOT NULL
);

CREATE TABLE blobs (
    id          TEXT PRIMARY KEY,
    owner       TEXT NOT NULL,
    thread_id   TEXT,
    filename    TEXT,
    mime_type   TEXT,
    declared_size INTEGER,
    size        INTEGER,
    sha256      TEXT,
    status      TEXT NOT NULL,               -- uploading | complete
    created_at  TEXT NOT NULL,
    completed_at TEXT
);

CREATE TABLE blob_parts (
    blob_id  TEXT NOT NULL REFERENCES blobs(id),
    n        INTEGER NOT NULL,
    data     BLOB NOT NULL,
    PRIMARY KEY (blob_id, n)
);

CREATE TABLE node_keys (
    key_id       TEXT PRIMARY KEY,
    secret_seed  TEXT NOT NULL,              -- hex Ed25519 seed
    public_key   TEXT NOT NULL,
    status       TEXT NOT NULL,
    created_at   TEXT NOT NULL
);

-- Search (§16.6): cleartext human text, intent and parameters; never E2EE content.
CREATE VIRTUAL TABLE envelope_search USING fts5(
    envelope_id UNINDEXED, thread_id UNINDEXED, text, intent, parameters,
    tokenize = 'unicode61'
);
CREATE VIRTUAL TABLE thread_search USING fts5(
    thread_id UNINDEXED, subject, labels, participants,
    tokenize = 'unicode61'
);
