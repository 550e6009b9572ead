#!/usr/bin/env bash
# The API server over etcd (issue #7), measured in one run on this machine by bench/load's
# kapi-etcd-load against the release `kapi serve` binary: a one-member etcd on loopback (data in
# /dev/shm when present, started by the same helper as the tests) and two replicas over it.
#   1. ConfigMap create and update (PUT) throughput and p50/p99 through one replica, closed loop
#      at --concurrency connections, for --seconds each;
#   2. the same creates and updates as raw etcd transactions (create if absent, update if the
#      mod revision matches) with the same client crate (etcd-client) and concurrency;
#   3. the ratio kapi / raw (target >= 0.5);
#   4. watch fan-out: --watchers watches split over both replicas, --watch-events creates
#      through one replica stamped with their send time, delivery latency per watcher.
# Prints one Markdown table. Usage: bench/etcd.sh [kapi-etcd-load options, see --help]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
target=${CARGO_TARGET_DIR:-$root/target}

command -v etcd >/dev/null || { echo "bench/etcd.sh: etcd is not installed (apt-get install etcd-server)" >&2; exit 1; }
cargo build -q --release --manifest-path "$root/Cargo.toml" -p kapi-apiserver -p kapi-load --features kapi-apiserver/etcd
# Each watch holds a socket in both processes; the servers inherit this limit.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
echo "== $(nproc) cores, $(etcd --version | head -1); before: $(uptime)"
"$target/release/kapi-etcd-load" --server "$target/release/kapi" "$@"
echo "== after: $(uptime)"
