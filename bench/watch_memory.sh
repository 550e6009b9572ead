#!/usr/bin/env bash
# What watchers cost the API server in memory (issue 13), measured in one run on this machine by
# bench/load (kapi-watch-memory) against the release `kapi serve` binary: one namespace filled
# with --objects ConfigMaps of --object-bytes (5 MiB by default), then the server's resident set
#   1. with --watchers watches that read their initial events to the end and then stay open
#      (the figure per idle watch), and
#   2. with as many watches that never read a byte (each asked for the whole collection),
# each on a freshly started server, taken once the RSS settles (and the highest seen on the way).
# Prints one Markdown table with the issue's targets. Usage: bench/watch_memory.sh [options]
#
# Environment: KAPI_BENCH_BIN=<dir> measures the `kapi` and `kapi-watch-memory` binaries in <dir>
# instead of building this tree (e.g. another commit's, to compare).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
target=${CARGO_TARGET_DIR:-$root/target}
work=$target/bench-watch-memory
mkdir -p "$work"

if [[ -n ${KAPI_BENCH_BIN:-} ]]; then
    bin=$KAPI_BENCH_BIN
else
    cargo build -q --release --manifest-path "$root/Cargo.toml" -p kapi-apiserver -p kapi-load
    bin=$target/release
fi
# Each watch holds a socket in both processes; the server inherits this limit.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
echo "== $(nproc) cores; before: $(uptime)"
"$bin/kapi-watch-memory" --server "$bin/kapi" --tmp-dir "$work" "$@"
echo "== after: $(uptime)"
