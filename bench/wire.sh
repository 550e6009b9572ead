#!/usr/bin/env bash
# What answers cost in Kubernetes' protobuf encoding against JSON (issue 16), measured in one run
# by bench/load (kapi-wire-load) against the release `kapi serve` binary: a list of --objects
# ConfigMaps (bytes and server CPU per object) and a watch fan-out (--watchers watches,
# --changes changes: bytes and server CPU per delivered event), in both encodings. Prints one
# Markdown table with the protobuf/JSON ratios. Usage: bench/wire.sh [options]
#
# Environment: KAPI_BENCH_BIN=<dir> measures the `kapi` and `kapi-wire-load` binaries in <dir>
# instead of building this tree (e.g. another commit's, to compare).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
target=${CARGO_TARGET_DIR:-$root/target}
work=$target/bench-wire
mkdir -p "$work"

if [[ -n ${KAPI_BENCH_BIN:-} ]]; then
    bin=$KAPI_BENCH_BIN
else
    cargo build -q --release --manifest-path "$root/Cargo.toml" -p kapi-apiserver -p kapi-load
    bin=$target/release
fi
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
echo "== $(nproc) cores; before: $(uptime)"
"$bin/kapi-wire-load" --server "$bin/kapi" --tmp-dir "$work" "$@"
echo "== after: $(uptime)"
