#!/usr/bin/env bash
# What security costs a request (issue 18), measured in one run by bench/load
# (kapi-secure-load): ConfigMap creates and gets in closed loop against the in-process server,
# over TLS with a bearer token and RBAC and over plain HTTP without authentication, alternating
# rounds on fresh servers. Prints one Markdown table with the ratio.
# Usage: bench/secure.sh [kapi-secure-load options, see --help]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
target=${CARGO_TARGET_DIR:-$root/target}
cargo build -q --release --manifest-path "$root/Cargo.toml" -p kapi-load --bin kapi-secure-load
echo "== $(nproc) cores; before: $(uptime)"
"$target/release/kapi-secure-load" "$@"
echo "== after: $(uptime)"
