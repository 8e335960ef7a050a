-- The run a round belongs to, for the loop's upsert to return.
--
-- The upsert (`INSERT ... ON CONFLICT DO UPDATE ... RETURNING`) locks the
-- loop's row, which serialises the rounds of a loop. Subqueries in its
-- RETURNING list read with the snapshot the statement started with, so a
-- round that waited for the lock would not see the round its holder just
-- committed. A query inside a VOLATILE PL/pgSQL function takes a snapshot
-- of its own (READ COMMITTED), taken after the lock was granted.
--
-- The run is the one named `p_key`, or without a name the loop's current
-- run; the result is a JSON array [id, run_key, state, last_round], or
-- NULL when there is no such run.
CREATE FUNCTION round_run(p_loop BIGINT, p_key TEXT, p_current BIGINT)
RETURNS TEXT
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    found TEXT;
BEGIN
    SELECT json_build_array(r.id, r.run_key, r.state, r.last_round)::TEXT INTO found
    FROM runs r
    WHERE r.loop_id = p_loop
      AND CASE WHEN p_key IS NULL THEN r.id = p_current ELSE r.run_key = p_key END;
    RETURN found;
END
$$;
