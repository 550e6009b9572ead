#!/usr/bin/env bash
# The API server under load, over its embedded store (issue #5), measured in one run on this machine
# by bench/load (kapi-load) against the release `kapi serve` binary on a fresh data directory:
#   1. start → ready (the "serving on" line, then /readyz 200), empty and again with the objects;
#   2. ConfigMap create, get and update (PUT): open loop at --rate per second for --seconds, latency
#      from each request's due time (no coordinated omission), and closed loop at --concurrency
#      connections for throughput; the creates fill the store to --objects;
#   3. server RSS and data directory size per stored object; the gets once more beside
#      --slow-connections connections that send a request head a line a second (slowloris);
#   4. list of all --objects whole and in pages of --page-limit, end to end with the body read;
#   5. watch delivery to --watchers concurrent watches: creates at --watch-rate stamped with their
#      send time, latency from the stamp to the event line read by each watcher
#      (--watch-streams-per-connection N: as HTTP/2 streams, N per connection); then the floor
#      of this machine for the same fan-out: bare loopback sockets, one task and write each;
# Prints one Markdown table with the issue's targets beside the figures; exits 0 whether or not
# they are met. Usage: bench/server.sh [kapi-load options, see --help]
#
# Environment: KAPI_BENCH_RUNS=<n> repeats the whole run n times (the machine is shared: compare
# medians, and the load averages printed around each run); KAPI_BENCH_BIN=<dir> measures the
# `kapi` and `kapi-load` binaries in <dir> instead of building this tree (to compare two builds
# on the same machine at the same time, e.g. one of another commit's tree).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
target=${CARGO_TARGET_DIR:-$root/target}
work=$target/bench-server
mkdir -p "$work"

if [[ -n ${KAPI_BENCH_BIN:-} ]]; then
    bin=$KAPI_BENCH_BIN
else
    cargo build -q --release --manifest-path "$root/Cargo.toml" -p kapi-apiserver -p kapi-load
    bin=$target/release
fi
# Each watch holds a socket in both processes; the server inherits this limit.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
runs=${KAPI_BENCH_RUNS:-1}
for ((run = 1; run <= runs; run++)); do
    echo "== run $run of $runs; $(nproc) cores; before: $(uptime)"
    "$bin/kapi-load" --server "$bin/kapi" --tmp-dir "$work" "$@"
    echo "== after: $(uptime)"
done
