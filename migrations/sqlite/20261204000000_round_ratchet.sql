-- The loop's ratchet after each round (the ingest contract's optional
-- `ratchet: {value, best, stall_count}`): the one number the loop must
-- move. NULL for rounds that sent none, and for every round stored before.
ALTER TABLE rounds ADD COLUMN ratchet_value DOUBLE PRECISION;
ALTER TABLE rounds ADD COLUMN ratchet_best DOUBLE PRECISION;
ALTER TABLE rounds ADD COLUMN ratchet_stall_count BIGINT;
