-- Where each round came from: the ingest API (`api`), the connector
-- (`connector`, which speaks the ingest API) or OpenTelemetry traces
-- (`traces`). Rounds stored before this column came through the API.
ALTER TABLE rounds ADD COLUMN source TEXT NOT NULL DEFAULT 'api';
-- The tool calls of a round from traces, as a JSON array of
-- {"name", "arguments", "failed"}; NULL for the other rounds.
ALTER TABLE rounds ADD COLUMN tool_calls TEXT;
