#!/usr/bin/env bash
# The in-process test server (kapi-test, issue #12), measured in one run on this machine by
# bench/load's kapi-test-load with release builds:
#   1. start → ready of TestServer::start() (1.36 built-ins, in memory) against the `kapi serve`
#      binary's start → /readyz 200 on an empty data directory, and the ratio;
#   2. a hundred servers started and stopped in one process: threads, descriptors, memory;
#   3. the example operator's whole test (tests/operator.rs of examples/operator), process wall.
# Prints one Markdown table. Usage: bench/test_server.sh [kapi-test-load options, see --help]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
target=${CARGO_TARGET_DIR:-$root/target}
work=$target/bench-test-server
mkdir -p "$work"

cd "$root"
cargo build -q --release -p kapi-apiserver -p kapi-load
# The operator test's executable, as cargo names it.
operator_test=$(cargo test -q --release -p kapi-example-operator --test operator --no-run \
    --message-format=json | python3 -c '
import json, sys
for line in sys.stdin:
    message = json.loads(line)
    if message.get("reason") == "compiler-artifact" and message["target"]["name"] == "operator" \
            and message.get("executable"):
        print(message["executable"])')
echo "== $(nproc) cores; before: $(uptime)"
"$target/release/kapi-test-load" --server "$target/release/kapi" --operator-test "$operator_test" \
    --tmp-dir "$work" "$@"
echo "== after: $(uptime)"
