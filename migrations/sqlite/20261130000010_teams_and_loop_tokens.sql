-- Teams and the loop tokens their loops report with. A token is shown once
-- and stored only as the SHA-256 of its text, so a leaked database does not
-- leak working tokens.
CREATE TABLE teams (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    slug       TEXT NOT NULL UNIQUE,
    created_at BIGINT NOT NULL
);

CREATE TABLE loop_tokens (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    team_id      BIGINT NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
    name         TEXT NOT NULL,
    token_hash   TEXT NOT NULL UNIQUE,
    created_at   BIGINT NOT NULL,
    last_used_at BIGINT,
    revoked_at   BIGINT
);

CREATE INDEX loop_tokens_by_team ON loop_tokens (team_id);
