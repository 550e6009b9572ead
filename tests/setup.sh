#!/usr/bin/env bash
# Installs what the tests and the etcd build need on a fresh Debian machine: Debian packages
# (each only when its probe fails) and a Python venv with the official client. `tests/all.sh`
# runs it first; CI runs it before clippy, which builds the etcd engine and so needs `protoc`.
set -euo pipefail
cd "$(dirname "$0")/.."

# Debian packages the tests use, each installed only when its probe fails.
missing=()
command -v python3 >/dev/null 2>&1 || missing+=(python3)
python3 -c 'import venv, ensurepip' >/dev/null 2>&1 || missing+=(python3-venv)
# etcd for the etcd engine's tests (they start their own members), protoc for its client crate.
command -v etcd >/dev/null 2>&1 || missing+=(etcd-server)
command -v etcdctl >/dev/null 2>&1 || missing+=(etcd-client)
command -v protoc >/dev/null 2>&1 || missing+=(protobuf-compiler)
# make (and a C compiler, which Rust's linker needs anyway) for the binary's allocator, jemalloc.
command -v make >/dev/null 2>&1 || missing+=(make)
if [ ${#missing[@]} -gt 0 ]; then
  echo "tests/setup.sh: installing Debian packages: ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}"
fi

# Python packages the end-to-end tests use, in a venv (tests/all.sh points KAPI_PYTHON at it).
venv=.venv
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
if ! cmp -s tests/requirements.txt "$venv/.requirements"; then
  "$venv/bin/pip" install --quiet --disable-pip-version-check -r tests/requirements.txt
  cp tests/requirements.txt "$venv/.requirements"
fi
