# Makes sure a PostgreSQL server answers for the tests and exports
# FIXEDPOINT_TEST_PG (a URL whose user may create databases). Sourced by
# test.sh after lib.sh.
#
# Order: an explicit FIXEDPOINT_TEST_PG; the server these machines run on
# 127.0.0.1:5432; else a throwaway cluster from the Debian binaries
# (installed when missing), started as the postgres user and stopped when
# the tests end. It fails loudly rather than letting tests skip.

pg_answers() { pg_isready -q -d "$1" >/dev/null 2>&1 || psql "$1" -Atqc 'select 1' >/dev/null 2>&1; }

ensure_postgres() {
  apt_install postgresql-client
  if [ -n "${FIXEDPOINT_TEST_PG:-}" ]; then
    pg_answers "$FIXEDPOINT_TEST_PG" || die "FIXEDPOINT_TEST_PG=$FIXEDPOINT_TEST_PG does not answer"
    return 0
  fi
  local local_url="postgres://postgres@127.0.0.1:5432/postgres"
  if pg_answers "$local_url"; then
    export FIXEDPOINT_TEST_PG="$local_url"
    log "PostgreSQL: using the server on 127.0.0.1:5432"
    return 0
  fi

  log "PostgreSQL: none answers on 127.0.0.1:5432; starting a throwaway cluster"
  local bindir
  bindir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
  if [ -z "$bindir" ] || [ ! -x "$bindir/initdb" ]; then
    apt_install postgresql
    bindir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
  fi
  [ -x "$bindir/initdb" ] || die "PostgreSQL binaries not found even after installing them"
  id postgres >/dev/null 2>&1 || as_root useradd --system --home-dir /var/lib/postgresql postgres
  PG_TMP=$(mktemp -d /tmp/fixedpoint-pg.XXXXXX)
  chown postgres "$PG_TMP"
  local port=55432
  local run_pg=(runuser -u postgres --)
  [ "$(id -u)" = 0 ] || run_pg=()
  "${run_pg[@]}" "$bindir/initdb" -D "$PG_TMP/data" -A trust -U postgres >"$PG_TMP/initdb.log" 2>&1 \
    || { cat "$PG_TMP/initdb.log" >&2; die "initdb failed"; }
  "${run_pg[@]}" "$bindir/pg_ctl" -D "$PG_TMP/data" -l "$PG_TMP/server.log" -w -t 60 \
    -o "-p $port -c listen_addresses=127.0.0.1 -k $PG_TMP -c fsync=off -c max_connections=300" start >/dev/null \
    || { cat "$PG_TMP/server.log" >&2; die "the throwaway PostgreSQL did not start"; }
  PG_STOP=("${run_pg[@]}" "$bindir/pg_ctl" -D "$PG_TMP/data" -m fast stop)
  export FIXEDPOINT_TEST_PG="postgres://postgres@127.0.0.1:$port/postgres"
  pg_answers "$FIXEDPOINT_TEST_PG" || die "the throwaway PostgreSQL does not answer"
}

stop_postgres() {
  if [ -n "${PG_STOP:-}" ]; then "${PG_STOP[@]}" >/dev/null 2>&1 || true; rm -rf "$PG_TMP"; fi
}

# Databases that earlier test runs created and could not drop.
drop_stale_test_databases() {
  local names
  names=$(psql "$FIXEDPOINT_TEST_PG" -Atqc "select datname from pg_database where datname like 'fp_test_%'" 2>/dev/null || true)
  for name in $names; do psql "$FIXEDPOINT_TEST_PG" -qc "drop database if exists \"$name\" with (force)" >/dev/null 2>&1 || true; done
}
