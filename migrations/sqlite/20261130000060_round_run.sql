-- Nothing to do on SQLite: its one writer sees every committed round, so
-- the loop's upsert returns the round's run with plain subqueries. This
-- migration keeps both schemas at the same version (see the PostgreSQL
-- one of the same name).
SELECT 1;
