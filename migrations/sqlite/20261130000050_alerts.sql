-- Alerts: a team's outgoing webhook (its signing secret is kept as is: the
-- server needs it to sign, and it grants nothing here) and the deliveries,
-- queued in the same transaction as the round or sweep that caused them.
CREATE TABLE team_webhooks (
    team_id    BIGINT PRIMARY KEY REFERENCES teams (id) ON DELETE CASCADE,
    url        TEXT NOT NULL,
    secret     TEXT NOT NULL,
    created_at BIGINT NOT NULL
);

-- status: pending (to send at next_attempt_at), delivered, failed (gave up).
CREATE TABLE alert_deliveries (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    team_id         BIGINT NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
    loop_name       TEXT NOT NULL,
    kind            TEXT NOT NULL,
    payload         TEXT NOT NULL,
    status          TEXT NOT NULL,
    attempts        BIGINT NOT NULL DEFAULT 0,
    next_attempt_at BIGINT NOT NULL,
    last_status     BIGINT,
    last_error      TEXT,
    created_at      BIGINT NOT NULL,
    delivered_at    BIGINT
);

CREATE INDEX alert_deliveries_due ON alert_deliveries (status, next_attempt_at);
CREATE INDEX alert_deliveries_by_team ON alert_deliveries (team_id, id);
