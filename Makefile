# The two commands of the README. Both install what they need on a fresh
# Debian machine (Rust itself excepted), then do their work.

.PHONY: run test build

## run: build the site (release) and serve it on http://127.0.0.1:3000 (SQLite default)
run:
	@bash -c 'source .ci/lib.sh && ensure_build_prereqs'
	@.ci/build-site.sh release
	$${CARGO_TARGET_DIR:-target}/release/fixedpoint serve

## test: format, lints, unit + integration tests on SQLite and PostgreSQL, browser tests
test:
	@.ci/test.sh

## build: the release binary and site bundle without serving
build:
	@bash -c 'source .ci/lib.sh && ensure_build_prereqs'
	@.ci/build-site.sh release
