-- Connected loops: a loop belongs to one team and is named uniquely within
-- it; a run is one execution of the loop; a round is one report of a run,
-- stored with the classification it was answered with, so that sending the
-- same round again gets the same answer; findings belong to their round.
--
-- Flags are integers (0 or 1) rather than booleans so that both backends
-- decode them the same way through sqlx's Any driver.
CREATE TABLE loops (
    id                  INTEGER PRIMARY KEY AUTOINCREMENT,
    team_id             BIGINT NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
    name                TEXT NOT NULL,
    stall_threshold     BIGINT NOT NULL DEFAULT 2,
    max_rounds          BIGINT,
    heartbeat_window_ms BIGINT NOT NULL DEFAULT 600000,
    current_run_id      BIGINT,
    pending_stop        BIGINT NOT NULL DEFAULT 0,
    pending_steer       TEXT,
    created_at          BIGINT NOT NULL,
    UNIQUE (team_id, name)
);

CREATE TABLE runs (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    loop_id         BIGINT NOT NULL REFERENCES loops (id) ON DELETE CASCADE,
    run_key         TEXT NOT NULL,
    state           TEXT NOT NULL,
    exit            TEXT,
    blocked_reason  TEXT,
    blocked_subject TEXT,
    last_round      BIGINT NOT NULL DEFAULT 0,
    started_at      BIGINT NOT NULL,
    last_seen_at    BIGINT NOT NULL,
    ended_at        BIGINT,
    UNIQUE (loop_id, run_key)
);

-- The lost-run sweeper looks only at live runs, oldest first.
CREATE INDEX runs_live_by_last_seen ON runs (state, last_seen_at);

CREATE TABLE rounds (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id           BIGINT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    loop_id          BIGINT NOT NULL REFERENCES loops (id) ON DELETE CASCADE,
    round            BIGINT NOT NULL,
    state_digest     TEXT NOT NULL,
    body_hash        TEXT NOT NULL,
    spent_tokens     BIGINT,
    spent_usd        DOUBLE PRECISION,
    spent_seconds    DOUBLE PRECISION,
    exit             TEXT,
    error_code       TEXT,
    error_body       TEXT,
    class            TEXT NOT NULL,
    outcome          TEXT NOT NULL,
    advice           TEXT NOT NULL,
    reason           TEXT NOT NULL,
    seen_at          TEXT NOT NULL,
    period           BIGINT,
    consecutive      BIGINT NOT NULL,
    bound_max_rounds BIGINT,
    blocking_count   BIGINT NOT NULL,
    finding_count    BIGINT NOT NULL,
    operator_stop    BIGINT NOT NULL DEFAULT 0,
    operator_steer   TEXT,
    created_at       BIGINT NOT NULL,
    UNIQUE (run_id, round)
);

-- "Have I been here before?" looks a state up across the loop's runs.
CREATE INDEX rounds_by_loop_state ON rounds (loop_id, state_digest);

-- Findings are the bulk of the rows; a plain rowid key spares SQLite the
-- bookkeeping of AUTOINCREMENT on the hottest insert.
CREATE TABLE findings (
    id          INTEGER PRIMARY KEY,
    round_id    BIGINT NOT NULL REFERENCES rounds (id) ON DELETE CASCADE,
    position    BIGINT NOT NULL,
    target_path TEXT,
    start_line  BIGINT,
    end_line    BIGINT,
    target_id   TEXT,
    severity    TEXT NOT NULL,
    criterion   TEXT NOT NULL,
    message     TEXT NOT NULL
);

CREATE INDEX findings_by_round ON findings (round_id, position);
