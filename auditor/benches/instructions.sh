#!/usr/bin/env bash
# Instructions per audit of the benchmark's 2,000-line sources, counted by
# cachegrind: unlike wall-clock time on a shared 2-core machine (which moves
# by a third between runs), the count is the same from run to run, so small
# changes show.
#
#   auditor/benches/instructions.sh [BASELINE_FIXEDPOINT]
#
# Audits each language's source with `target/release/fixedpoint audit
# --format json` (built first), the whole process as a user runs it. Given a
# baseline binary (an earlier build of `fixedpoint`), it counts that too and
# prints the ratio. Needs valgrind (`apt-get install valgrind`).
#
# Build the baseline with the C compiler this script builds with (`CC=clang
# cargo build --release -p server` in a worktree of the earlier commit, with
# a target directory of its own): the grammars are C, and a baseline built
# with gcc moves the ratios by a few percent (Bash 1.153 against 1.129).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
command -v valgrind >/dev/null || { echo "error: valgrind is not installed (apt-get install valgrind)" >&2; exit 2; }
baseline="${1:-}"
if [ -n "$baseline" ] && [ ! -x "$baseline" ]; then
  echo "error: the baseline $baseline is not an executable" >&2
  exit 2
fi
CC="${CC:-clang}" cargo build --release -p server --quiet
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
cargo run --release -p auditor --example bench_sources --quiet -- "$dir"
# `fixedpoint` starts itself again with mimalloc's two options unless they
# are set (server/src/main.rs); under valgrind that exec would leave the
# count at zero, so both binaries are given them, as the server runs.
count() {
  MIMALLOC_PURGE_DELAY=0 MIMALLOC_ALLOW_THP=0 valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=/dev/null \
    "$1" audit --format json "$2" 2>&1 >/dev/null | awk '/I *refs/ { gsub(",", "", $NF); print $NF }'
}
binary="${CARGO_TARGET_DIR:-target}/release/fixedpoint"
printf '%-12s %7s %15s %12s' language lines instructions per-line
[ -n "$baseline" ] && printf ' %15s %7s' baseline ratio
printf '\n'
for file in "$dir"/*; do
  lines=$(wc -l < "$file")
  now=$(count "$binary" "$file")
  printf '%-12s %7d %15d %12d' "$(basename "${file%.*}")" "$lines" "$now" $((now / lines))
  if [ -n "$baseline" ]; then
    before=$(count "$baseline" "$file")
    printf ' %15d %7s' "$before" "$(awk -v a="$now" -v b="$before" 'BEGIN { printf "%.3f", a / b }')"
  fi
  printf '\n'
done
