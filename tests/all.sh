#!/usr/bin/env bash
# The one command that runs every kapi test, from a fresh Debian machine to green.
#
# It installs what the tests need (Debian packages, a Python venv with the official client),
# then runs the whole workspace's tests. Re-running it is cheap: installed things are skipped.
set -euo pipefail
cd "$(dirname "$0")/.."

# Debian packages the tests use, each installed only when its probe fails.
missing=()
command -v python3 >/dev/null 2>&1 || missing+=(python3)
python3 -c 'import venv, ensurepip' >/dev/null 2>&1 || missing+=(python3-venv)
if [ ${#missing[@]} -gt 0 ]; then
  echo "tests/all.sh: installing Debian packages: ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}"
fi

# Python packages the end-to-end tests use, in a venv the tests find through KAPI_PYTHON.
venv=.venv
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
if ! cmp -s tests/requirements.txt "$venv/.requirements"; then
  "$venv/bin/pip" install --quiet --disable-pip-version-check -r tests/requirements.txt
  cp tests/requirements.txt "$venv/.requirements"
fi
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

# The storage layer and server live behind the kapi crate's `server` feature.
cargo test --workspace --locked --features kapi/server
