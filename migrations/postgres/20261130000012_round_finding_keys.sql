-- The finding keys of each round as compact JSON, so that classifying the
-- next round reads one row per earlier round instead of one per finding.
-- NULL on rows stored before this column existed; readers then fall back to
-- the findings table.
ALTER TABLE rounds ADD COLUMN finding_keys TEXT;
