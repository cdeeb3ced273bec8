-- Issue 32: the email bridge (v1.1 §21).
-- Message-IDs the bridge received ('in') or sent ('out') and the envelope each became, so
-- a reply's In-Reply-To / References find their thread (§21.2, §21.3) and a mail that is
-- delivered again (a sender retrying after a lost reply) is stored once.
CREATE TABLE bridge_messages (
    message_id   TEXT NOT NULL,
    direction    TEXT NOT NULL,          -- in | out
    sender       TEXT NOT NULL,          -- bridge:// sender (in) or the LOOM sender (out)
    thread_id    TEXT NOT NULL,
    envelope_id  TEXT NOT NULL,
    at           TEXT NOT NULL,
    PRIMARY KEY (message_id, direction)
);

-- Outbound mail (§21.3): one row per (mail recipient, envelope), the lifecycle of
-- federation_outbox (§15.6) with the recipient's mail domain as destination.
CREATE TABLE bridge_outbox (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    destination      TEXT NOT NULL,          -- the recipient's mail domain
    envelope_id      TEXT NOT NULL,
    sender           TEXT NOT NULL,          -- the local sender, told on failure
    recipients       TEXT NOT NULL,          -- JSON array: the one bridge:// recipient
    queued_at        TEXT NOT NULL,
    queued_ms        INTEGER NOT NULL,
    attempts         INTEGER NOT NULL DEFAULT 0,
    last_failure     TEXT,
    next_attempt_ms  INTEGER NOT NULL,
    state            TEXT NOT NULL,          -- queued | delivered | failed
    reason           TEXT,
    done_at          TEXT,
    UNIQUE (envelope_id, recipients)
);
CREATE INDEX bridge_outbox_due ON bridge_outbox(state, next_attempt_ms);
CREATE INDEX bridge_outbox_by_destination ON bridge_outbox(destination, state);
