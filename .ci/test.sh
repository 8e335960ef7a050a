#!/usr/bin/env bash
# Every test of the project, in the order that fails fastest:
# format, lints (host and wasm32), unit and integration tests on SQLite and
# PostgreSQL, then the browser tests against a freshly built site.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/postgres.sh"
cd "$ROOT"

ensure_test_prereqs
export_wasm_env
export CC="${CC:-clang}"

log "rustfmt"
cargo fmt --all -- --check

log "clippy (host, ssr)"
cargo clippy --workspace --all-targets --quiet -- -D warnings
log "clippy (wasm32, hydrate)"
cargo clippy -p app --lib --target wasm32-unknown-unknown --no-default-features --features hydrate \
  --quiet -- -D warnings
log "clippy (wasm32, auditor engine: tree-sitter and the grammars)"
cargo clippy -p auditor -p auditor-wasm --lib --target wasm32-unknown-unknown --quiet -- -D warnings
# A module of one family (the page's worker loads these first): the grammars
# it lacks are compiled out.
cargo clippy -p auditor -p auditor-wasm --lib --target wasm32-unknown-unknown --quiet \
  --no-default-features --features auditor-wasm/python -- -D warnings

ensure_postgres
trap stop_postgres EXIT
drop_stale_test_databases

log "unit and integration tests (SQLite and PostgreSQL at $FIXEDPOINT_TEST_PG)"
cargo test --workspace --quiet

"$ROOT/.ci/build-site.sh" debug
log "browser tests (Debian chromium through playwright-core)"
(cd end2end && FIXEDPOINT_BIN="$TARGET_DIR/debug/fixedpoint" LEPTOS_SITE_ROOT="$SITE_ROOT" \
  node --test --test-concurrency=1 tests/)
log "all tests passed"
du -sh "$TARGET_DIR" 2>/dev/null || true
