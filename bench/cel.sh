#!/usr/bin/env bash
# What CEL rules cost a custom resource's create (issue 19), measured in one run by bench/load
# (kapi-cel-load): creates in closed loop against the in-process server of an object whose CRD
# carries ten x-kubernetes-validations rules and of the same CRD without them, alternating rounds
# on fresh servers. Prints one Markdown table with the ratio, then what each rule costs one object
# without a server (kapi-cel-steps).
# Usage: bench/cel.sh [kapi-cel-load options, see --help]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
target=${CARGO_TARGET_DIR:-$root/target}
cargo build -q --release --manifest-path "$root/Cargo.toml" -p kapi-load --bin kapi-cel-load \
  --bin kapi-cel-steps
echo "== $(nproc) cores; before: $(uptime)"
"$target/release/kapi-cel-load" "$@"
echo
"$target/release/kapi-cel-steps"
echo "== after: $(uptime)"
