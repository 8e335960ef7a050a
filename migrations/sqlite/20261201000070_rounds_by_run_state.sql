-- Classifying a round reads the earlier rounds of its run that judged the
-- same state ("have I been here before?" within the run) by this index, so
-- that a round costs the same at round 10,000 as at round 10.
CREATE INDEX rounds_by_run_state ON rounds (run_id, state_digest, round);
