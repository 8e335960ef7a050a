-- OpenTelemetry traces in (POST /v1/traces): spans wait here, durably, until
-- their round is complete; then the round is stored through the ingest path
-- and its spans are marked with it.
--
-- A traced run is a run of a loop fed by traces: the loop is the agent's
-- name (else the service's), the run the conversation id (else the trace
-- id). `sealed_ns` is the span start time before which the run's rounds
-- are stored: a span that starts earlier and arrives later is too late.
-- `due_at` is when time alone may let more of its rounds be stored (a
-- complete round settling, or the heartbeat window ending), for the
-- sweeper; NULL when none of its spans waits.
CREATE TABLE traced_runs (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    team_id       BIGINT NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
    loop_name     TEXT NOT NULL,
    run_key       TEXT NOT NULL,
    last_round    BIGINT NOT NULL DEFAULT 0,
    sealed_ns     BIGINT NOT NULL DEFAULT 0,
    last_span_at  BIGINT NOT NULL,
    dropped_spans BIGINT NOT NULL DEFAULT 0,
    due_at        BIGINT,
    UNIQUE (team_id, loop_name, run_key)
);

CREATE INDEX traced_runs_due ON traced_runs (due_at) WHERE due_at IS NOT NULL;

-- Which traced run a trace feeds, decided once: when a span of the trace
-- names its agent, when its root span arrives, or when it has been silent
-- for the heartbeat window. `ended_ns` is the latest end of its agent and
-- root spans, `ended_at` when the first of them arrived (NULL: none yet).
CREATE TABLE traced_traces (
    team_id       BIGINT NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
    trace_id      TEXT NOT NULL,
    traced_run_id BIGINT NOT NULL REFERENCES traced_runs (id) ON DELETE CASCADE,
    ended_ns      BIGINT,
    ended_at      BIGINT,
    PRIMARY KEY (team_id, trace_id)
);

-- One row per span ever accepted, so a span sent again (an exporter's
-- retry) is recognised. `kind` is model, tool, agent or root; `detail` is
-- what the round needs of the span (JSON), dropped once it is stored;
-- `root` is 1 for a span without a parent; `round` is the round that took
-- the span, 0 for agent and root spans (they only say that a trace ended)
-- and for spans dropped (too late, or their round refused), NULL while the
-- span waits.
CREATE TABLE trace_spans (
    team_id         BIGINT NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
    trace_id        TEXT NOT NULL,
    span_id         TEXT NOT NULL,
    kind            TEXT NOT NULL,
    root            BIGINT NOT NULL,
    start_ns        BIGINT NOT NULL,
    end_ns          BIGINT NOT NULL,
    agent_name      TEXT,
    conversation_id TEXT,
    service_name    TEXT,
    detail          TEXT,
    arrived_at      BIGINT NOT NULL,
    traced_run_id   BIGINT REFERENCES traced_runs (id) ON DELETE CASCADE,
    round           BIGINT,
    PRIMARY KEY (team_id, trace_id, span_id)
);

-- The waiting spans of a run, in start order; and those of traces not yet
-- given a run, by arrival, for the sweeper.
CREATE INDEX trace_spans_waiting ON trace_spans (traced_run_id, start_ns) WHERE round IS NULL;
CREATE INDEX trace_spans_waiting_by_arrival ON trace_spans (arrived_at) WHERE round IS NULL;
-- Stored spans are forgotten after a day (an exporter retries for minutes).
CREATE INDEX trace_spans_by_arrival ON trace_spans (arrived_at);
