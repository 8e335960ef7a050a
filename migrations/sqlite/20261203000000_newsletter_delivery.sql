-- Delivery by email: the subscribers of the mailed newsletter, the tokens of
-- their unsubscribe links, and the delivery ledger (one row per recipient
-- per issue, written in the transaction that queues the send).
--
-- subscribers.status: pending (asked, not confirmed), confirmed (gets mail),
-- unsubscribed, bounced (a relay refused the address for good: no more
-- mail). Email addresses are normalised (trimmed, lowercased). Tokens are
-- stored only as the SHA-256 of their text.
CREATE TABLE subscribers (
    id                 INTEGER PRIMARY KEY AUTOINCREMENT,
    email              TEXT NOT NULL UNIQUE,
    status             TEXT NOT NULL,
    source             TEXT NOT NULL,
    confirm_hash       TEXT UNIQUE,
    confirm_expires_at BIGINT,
    created_at         BIGINT NOT NULL,
    updated_at         BIGINT NOT NULL,
    confirmed_at       BIGINT,
    unsubscribed_at    BIGINT,
    bounced_at         BIGINT
);

CREATE INDEX subscribers_by_status ON subscribers (status, id);

-- One token per message sent (a message's link works whatever was sent
-- later), so a resent message after a crash still unsubscribes.
CREATE TABLE unsubscribe_tokens (
    token_hash    TEXT PRIMARY KEY,
    subscriber_id BIGINT NOT NULL REFERENCES subscribers (id) ON DELETE CASCADE,
    created_at    BIGINT NOT NULL
);

-- state: queued (to send at next_attempt_at; a claim moves next_attempt_at
-- past its lease, so a crashed claim comes due again), sent, failed (gave
-- up, or the address left the list before its turn), bounced (5xx).
CREATE TABLE deliveries (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    issue_id        BIGINT NOT NULL REFERENCES issues (id) ON DELETE CASCADE,
    subscriber_id   BIGINT NOT NULL REFERENCES subscribers (id) ON DELETE CASCADE,
    email           TEXT NOT NULL,
    tier            TEXT NOT NULL,
    state           TEXT NOT NULL,
    attempts        BIGINT NOT NULL DEFAULT 0,
    last_reply      TEXT,
    next_attempt_at BIGINT NOT NULL,
    created_at      BIGINT NOT NULL,
    sent_at         BIGINT,
    updated_at      BIGINT NOT NULL,
    UNIQUE (issue_id, subscriber_id)
);

CREATE INDEX deliveries_due ON deliveries (next_attempt_at, id) WHERE state = 'queued';
CREATE INDEX deliveries_by_issue ON deliveries (issue_id, state);

-- The site-wide send rate: one row whose `next_at_us` is the earliest time
-- (Unix microseconds) the next message may leave. Each claim reserves its
-- messages' slots with one update, so instances share one rate.
CREATE TABLE mail_rate (
    id         BIGINT PRIMARY KEY,
    next_at_us BIGINT NOT NULL
);
INSERT INTO mail_rate (id, next_at_us) VALUES (1, 0);
