-- People: accounts (created on first sign-in), the one-time sign-in links
-- they are mailed, their sessions, team membership, and the outbox every
-- message goes through. Secrets (sign-in tokens, session tokens) are stored
-- only as the SHA-256 of their text.
CREATE TABLE accounts (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    email       TEXT NOT NULL UNIQUE,
    is_operator BIGINT NOT NULL DEFAULT 0,
    created_at  BIGINT NOT NULL
);

CREATE TABLE signin_tokens (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    token_hash TEXT NOT NULL UNIQUE,
    email      TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    used_at    BIGINT
);

CREATE TABLE sessions (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    token_hash   TEXT NOT NULL UNIQUE,
    account_id   BIGINT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    created_at   BIGINT NOT NULL,
    expires_at   BIGINT NOT NULL
);

CREATE INDEX sessions_by_account ON sessions (account_id);

CREATE TABLE team_members (
    team_id    BIGINT NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
    account_id BIGINT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    role       TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (team_id, account_id)
);

CREATE TABLE outbox (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    recipient  TEXT NOT NULL,
    subject    TEXT NOT NULL,
    body       TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    sent_at    BIGINT,
    error      TEXT
);
