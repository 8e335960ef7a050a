-- Near repeats. A round's fingerprint (a 64-bit SimHash of what was
-- judged, as sent or computed from a text that is not kept), stored as a
-- signed BIGINT with the same bits; its four 16-bit quarters, each indexed
-- within the run, so the earlier rounds within 3 bits (which share at
-- least one quarter) are found by four index reads instead of a scan of
-- the run; and the answer's `near_seen_at` (a JSON array of round
-- numbers), kept so that a round sent again gets the same answer.
ALTER TABLE rounds ADD COLUMN fingerprint BIGINT;
ALTER TABLE rounds ADD COLUMN fingerprint_q0 BIGINT;
ALTER TABLE rounds ADD COLUMN fingerprint_q1 BIGINT;
ALTER TABLE rounds ADD COLUMN fingerprint_q2 BIGINT;
ALTER TABLE rounds ADD COLUMN fingerprint_q3 BIGINT;
ALTER TABLE rounds ADD COLUMN near_seen_at TEXT;
CREATE INDEX rounds_by_run_fingerprint_q0 ON rounds (run_id, fingerprint_q0, round) WHERE fingerprint_q0 IS NOT NULL;
CREATE INDEX rounds_by_run_fingerprint_q1 ON rounds (run_id, fingerprint_q1, round) WHERE fingerprint_q1 IS NOT NULL;
CREATE INDEX rounds_by_run_fingerprint_q2 ON rounds (run_id, fingerprint_q2, round) WHERE fingerprint_q2 IS NOT NULL;
CREATE INDEX rounds_by_run_fingerprint_q3 ON rounds (run_id, fingerprint_q3, round) WHERE fingerprint_q3 IS NOT NULL;
