#!/usr/bin/env bash
# What the built-ins' semantics cost a write (issue 15), measured in one run by bench/load
# (kapi-semantics-load): Deployment creates in closed loop against the in-process server, serving
# the 1.36 apps/v1 Deployment with its types' defaults and checks and the same kind without them
# (sent the body as written, and the body written in full so that it stores the same object),
# alternating rounds on fresh servers. Prints one Markdown table with the ratios, then the cost of
# each semantic step on one Deployment without a server (kapi-semantics-steps).
# Usage: bench/semantics.sh [kapi-semantics-load options, see --help]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
target=${CARGO_TARGET_DIR:-$root/target}
cargo build -q --release --manifest-path "$root/Cargo.toml" -p kapi-load --bin kapi-semantics-load \
  --bin kapi-semantics-steps
echo "== $(nproc) cores; before: $(uptime)"
"$target/release/kapi-semantics-load" "$@"
echo
"$target/release/kapi-semantics-steps"
echo "== after: $(uptime)"
