#!/usr/bin/env bash
# The one command that runs every kapi test, from a fresh Debian machine to green.
#
# It installs what the tests need (Debian packages, a Python venv with the official client),
# then runs the whole workspace's tests. Re-running it is cheap: installed things are skipped.
set -euo pipefail
cd "$(dirname "$0")/.."

# Debian packages and the Python venv, installed only when missing.
tests/setup.sh
venv=.venv
export KAPI_PYTHON="$PWD/$venv/bin/python"

# The reference specs live beside the repository unless told otherwise.
export KAPI_SPEC_CORPUS="${KAPI_SPEC_CORPUS:-$PWD/../shared/specs}"
if [ ! -d "$KAPI_SPEC_CORPUS" ]; then
  echo "tests/all.sh: spec corpus not found at $KAPI_SPEC_CORPUS (set KAPI_SPEC_CORPUS)" >&2
  exit 1
fi

# One clean build, so skip incremental caches and debug info (backtraces still name functions):
# both cut the target dir from ~8 GB to a few GB (override either variable to keep them).
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"
export CARGO_PROFILE_DEV_DEBUG="${CARGO_PROFILE_DEV_DEBUG:-0}"

# The storage layer and server live behind the kapi crate's `server` feature, the etcd engine
# behind `etcd`.
features=kapi-runtime/server,kapi-runtime/etcd,kapi-apiserver/etcd,kapi-codegen/cli
cargo test --workspace --locked --features "$features"

# The API suites once more over etcd (each test starts its own etcd; see
# runtime/tests/support/mod.rs for the few tests that stay on the embedded engine).
KAPI_TEST_STORAGE=etcd cargo test --workspace --locked --features "$features" \
  --test server_core --test server_conversion --test server_describe \
  --test server_dry_run --test server_patch --test server_watch --test server_apply \
  --test server_crds --test server_delete --test server_replicas --test server_families

# The API suites once more over encrypted values (every resource with aesgcm; see
# runtime/tests/support/mod.rs).
KAPI_TEST_ENCRYPTION=1 cargo test --workspace --locked --features "$features" \
  --test server_core --test server_watch --test server_patch --test server_apply \
  --test server_crds --test server_services --test server_replicas --test server_families
