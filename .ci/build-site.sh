#!/usr/bin/env bash
# Builds the site: the hydrate bundle (wasm + JS glue, split at the app's
# lazy routes into one main module and a module per page), the auditor's
# worker and wasm, the stylesheet, and the static files into target/site, and
# the `fixedpoint` binary. The bundle's files go to target/site/pkg/<id>/,
# <id> a hash of them all, and pkg/build-id names the build the server is to
# serve (read at its start): a build's files never change at their address.
#   .ci/build-site.sh release   what `make run` serves (optimised binary)
#   .ci/build-site.sh debug     what the tests drive (debug binary, same bundle)
# The browser bundle is always built with the size-optimised `wasm-release`
# profile, so the tests exercise (and measure) what users download.
source "$(dirname "$0")/lib.sh"
mode="${1:-release}"
script="$(realpath "$0")"
cd "$ROOT"
export_wasm_env
# wasm-opt comes from the npm package binaryen (Debian's is too old).
ensure_node_modules
command -v wasm-opt >/dev/null || die "wasm-opt not found: end2end/node_modules should provide it"

log "building the browser bundle (app, feature hydrate)"
# Relocations let wasm-split-cli move each lazy route's code (and what only
# it uses) into a module of its own.
CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUSTFLAGS="-C link-args=--emit-relocs" \
  cargo build -p app --lib --target wasm32-unknown-unknown --no-default-features --features hydrate \
  --profile wasm-release --quiet
# The bundle is put together here, then copied under its build id.
pkg="$TARGET_DIR/site-bundle"
mkdir -p "$pkg"

# when_changed INPUT OUTPUT STAMP COMMAND...: runs COMMAND unless INPUT and
# this script are what they were when it last succeeded, and OUTPUT is still
# there. Splitting, wasm-bindgen and wasm-opt over 125 modules take minutes;
# a warm build with nothing changed skips them. STAMP holds the checksums.
when_changed() {
  local input="$1" output="$2" stamp="$3" sums
  shift 3
  sums="$(sha256sum "$input" "$script" | awk '{print $1}' | tr '\n' ' ')"
  if [ -f "$stamp" ] && [ -f "$output" ] && [ "$(cat "$stamp")" = "$sums" ]; then
    log "$(basename "$output") is up to date with $(basename "$input"): kept"
    return 0
  fi
  rm -f "$stamp"
  "$@"
  printf '%s' "$sums" > "$stamp"
}

split_app_bundle() {
  split="$TARGET_DIR/wasm-split"
  rm -rf "$split" && mkdir -p "$split"
  rm -f "$pkg"/split_*.wasm* "$pkg"/chunk_*.wasm* "$pkg"/__wasm_split*
  log "splitting the bundle at the lazy routes"
  wasm-split-cli "$TARGET_DIR/wasm32-unknown-unknown/wasm-release/app.wasm" "$split" --out-name fixedpoint
  wasm-bindgen --target web --no-typescript --keep-lld-exports --out-dir "$pkg" --out-name fixedpoint \
    "$split/fixedpoint.wasm"
  # wasm-opt warns once per split module about the linker's name subsection 3
  # (it drops names anyway); other output, and failures, still show.
  for module in "$pkg/fixedpoint_bg.wasm" "$split"/split_*.wasm "$split"/chunk_*.wasm; do
    [ -f "$module" ] || continue
    if ! output=$(wasm-opt -Oz --enable-bulk-memory --enable-nontrapping-float-to-int --enable-sign-ext \
      --enable-mutable-globals "$module" -o "$pkg/$(basename "$module")" 2>&1); then
      printf '%s\n' "$output" >&2
      die "wasm-opt failed on $module"
    fi
    printf '%s\n' "$output" | grep -v -e '^warning: unknown name subsection with id 3 at' -e '^$' >&2 || true
  done
  cp "$split/__wasm_split.js" "$pkg/"
  # The loader under the name Leptos preloads, the manifest of each page's
  # modules, and the loader's recovery for a page of an earlier build.
  node "$ROOT/.ci/link-split-loader.mjs" "$pkg"
}
when_changed "$TARGET_DIR/wasm32-unknown-unknown/wasm-release/app.wasm" "$pkg/fixedpoint_bg.wasm" \
  "$pkg/.app.stamp" split_app_bundle
log "building the auditor for the browser (auditor-wasm: loaded only by /audit, in a worker)"
# A module per family of grammars and one with them all: the worker fetches
# the family a paste most likely is and the whole one only when that family
# cannot tell (auditor/wasm/audit-worker.js). Each is its own cargo build
# (the features differ), kept apart under engines/ before the next one
# replaces cargo's output.
engines="$TARGET_DIR/auditor-engines"
mkdir -p "$engines"
for family in all python javascript bash go rust; do
  cargo build -p auditor-wasm --lib --target wasm32-unknown-unknown --profile wasm-engine --quiet \
    --no-default-features --features "$family"
  built="$TARGET_DIR/wasm32-unknown-unknown/wasm-engine/auditor_wasm.wasm"
  cmp -s "$built" "$engines/$family.wasm" || cp -p "$built" "$engines/$family.wasm"
done
# bind_engine FAMILY: the module's JavaScript glue and its wasm, under the
# name the worker imports (`auditor` for all, `auditor-<family>`).
bind_engine() {
  local family="$1" name=auditor
  [ "$family" = all ] || name="auditor-$family"
  wasm-bindgen --target web --no-typescript --out-dir "$pkg" --out-name "$name" "$engines/$family.wasm"
  # A grammar's scanner that calls a libc function outside tree-sitter's shim
  # would import it from "env" and the module would fail to instantiate.
  node -e '
    const imports = WebAssembly.Module.imports(new WebAssembly.Module(require("fs").readFileSync(process.argv[1])));
    const env = imports.filter((i) => i.module === "env").map((i) => i.name);
    if (env.length) { console.error(process.argv[1] + " imports from env: " + env.join(", ")); process.exit(1); }
  ' "$pkg/${name}_bg.wasm"
}
for family in all python javascript bash go rust; do
  name=auditor
  [ "$family" = all ] || name="auditor-$family"
  when_changed "$engines/$family.wasm" "$pkg/${name}_bg.wasm" "$pkg/.$name.stamp" bind_engine "$family"
done
cp -p style/main.css "$pkg/fixedpoint.css"
cp -p auditor/wasm/audit-worker.js "$pkg/audit-worker.js"
# Precompressed copies, served in place of compressing on every request:
# brotli (quality 11) is about a quarter smaller than gzip on the grammars.
# A file whose gzip copy holds its very bytes is not compressed again (by
# content, not by time: a copy newer than its file can hold another
# content, after a checkout of an older file or a target directory copied
# from another checkout, and would then be served in its place).
log "precompressing the bundle (brotli and gzip)"
node -e '
  const zlib = require("zlib"), fs = require("fs"), path = require("path");
  const dir = process.argv[1];
  const holds = (copy, data) => { try { return zlib.gunzipSync(fs.readFileSync(copy)).equals(data); } catch { return false; } };
  for (const name of fs.readdirSync(dir)) {
    if (!/\.(wasm|js|css)$/.test(name)) continue;
    const file = path.join(dir, name);
    const data = fs.readFileSync(file);
    if (fs.existsSync(file + ".br") && holds(file + ".gz", data)) continue;
    fs.writeFileSync(file + ".br", zlib.brotliCompressSync(data, { params: {
      [zlib.constants.BROTLI_PARAM_QUALITY]: 11, [zlib.constants.BROTLI_PARAM_SIZE_HINT]: data.length } }));
    fs.writeFileSync(file + ".gz", zlib.gzipSync(data, { level: 9 }));
  }
' "$pkg"

# The build id: a hash of every file of the bundle. A build with the same
# files keeps its directory; the previous build's stays too (a server still
# running serves it until it restarts), older ones go, and so do the files of
# the layout before build ids (pkg/*.wasm).
site_pkg="$SITE_ROOT/pkg"
mkdir -p "$site_pkg"
# (end2end/tests/deploy.test.mjs computes it again from the files.)
id=$(cd "$pkg" && find . -maxdepth 1 -type f ! -name '.*' -print0 | LC_ALL=C sort -z | xargs -0 sha256sum \
  | sha256sum | cut -c1-16)
previous=$(cat "$site_pkg/build-id" 2>/dev/null || true)
if [ ! -d "$site_pkg/$id" ]; then
  rm -rf "$site_pkg/.incoming"
  mkdir "$site_pkg/.incoming"
  find "$pkg" -maxdepth 1 -type f ! -name '.*' -exec cp -p {} "$site_pkg/.incoming/" \;
  mv "$site_pkg/.incoming" "$site_pkg/$id"
fi
printf '%s\n' "$id" > "$site_pkg/.build-id" && mv "$site_pkg/.build-id" "$site_pkg/build-id"
for entry in "$site_pkg"/*; do
  case "$(basename "$entry")" in "$id" | "$previous" | build-id) ;; *) rm -rf "$entry" ;; esac
done
rm -f "$site_pkg"/.*.stamp
# The worker was a file of public/ before it was one of the bundle.
rm -f "$SITE_ROOT/audit-worker.js"
log "bundle build $id: $(find "$site_pkg/$id" -type f ! -name '*.br' ! -name '*.gz' | wc -l) files in $site_pkg/$id"
cp -r public/. "$SITE_ROOT/"

if [ "$mode" = release ]; then
  log "building fixedpoint (release)"
  CC="${CC:-clang}" cargo build -p server --release --quiet
else
  log "building fixedpoint (debug)"
  CC="${CC:-clang}" cargo build -p server --quiet
fi
raw=$(stat -c %s "$pkg/fixedpoint_bg.wasm")
gz=$(gzip -9 -c "$pkg/fixedpoint_bg.wasm" | wc -c)
log "site bundle: fixedpoint_bg.wasm $raw bytes raw, $gz bytes gzip -9 (what the home page loads)"
count=$(ls "$pkg"/split_*.wasm "$pkg"/chunk_*.wasm | wc -l)
raw=$(cat "$pkg"/split_*.wasm "$pkg"/chunk_*.wasm | wc -c)
log "lazy route modules: $count files, $raw bytes raw in all (each page loads its own)"
raw=$(stat -c %s "$pkg/auditor_bg.wasm")
gz=$(gzip -9 -c "$pkg/auditor_bg.wasm" | wc -c)
br=$(stat -c %s "$pkg/auditor_bg.wasm.br")
log "audit page engine: auditor_bg.wasm (every grammar) $raw bytes raw, $gz bytes gzip -9, $br bytes brotli"
for family in python javascript bash go rust; do
  log "  auditor-${family}_bg.wasm: $(stat -c %s "$pkg/auditor-${family}_bg.wasm") bytes raw, $(stat -c %s "$pkg/auditor-${family}_bg.wasm.br") bytes brotli"
done
