#!/usr/bin/env bash
# Generated bindings vs k8s-openapi 0.29, measured in one run on this machine:
#   1. `cargo check` and debug `cargo build` time of one Kubernetes version's bindings (the bindings
#      crate cold, its dependencies warm), for v1_34 and v1_36: kapi-k8s vs k8s-openapi;
#   2. generated lines per type for v1.36, kapi vs k8s-openapi;
#   3. generation time of the whole v1.36 spec, release build of kapi-codegen.
# Prints each figure and the ratio kapi / k8s-openapi. Usage: bench/codegen.sh [RUNS]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
runs=${1:-3}
corpus=${KAPI_SPEC_CORPUS:-$root/../shared/specs}
work=$root/target/bench-codegen
mkdir -p "$work/peer/src" "$work/ours/src"

cat > "$work/Cargo.toml" <<TOML
[workspace]
resolver = "3"
members = ["peer", "ours"]
TOML
cat > "$work/peer/Cargo.toml" <<TOML
[package]
name = "bench-peer"
version = "0.0.0"
edition = "2024"
publish = false
[dependencies]
k8s-openapi = { version = "=0.29.0" }
[features]
v1_34 = ["k8s-openapi/v1_34"]
v1_36 = ["k8s-openapi/v1_36"]
TOML
cat > "$work/ours/Cargo.toml" <<TOML
[package]
name = "bench-ours"
version = "0.0.0"
edition = "2024"
publish = false
[dependencies]
kapi-k8s = { path = "$root/generated/k8s", default-features = false, features = ["all-groups"] }
[features]
v1_34 = ["kapi-k8s/v1_34"]
v1_36 = ["kapi-k8s/v1_36"]
TOML
echo 'pub use k8s_openapi;' > "$work/peer/src/lib.rs"
echo 'pub use kapi_k8s;' > "$work/ours/src/lib.rs"

export CARGO_TARGET_DIR=$work/target
cd "$work"

# seconds MODE PACKAGE BINDINGS_CRATE FEATURE: the median of $runs cold builds of the bindings crate.
seconds() {
  local mode=$1 pkg=$2 crate=$3 feature=$4 times=()
  cargo "$mode" -q -p "$pkg" --features "$feature" 2>/dev/null # warm the dependencies
  for _ in $(seq "$runs"); do
    cargo clean -q -p "$crate" 2>/dev/null
    local start end
    start=$(date +%s.%N)
    cargo "$mode" -q -p "$pkg" --features "$feature"
    end=$(date +%s.%N)
    times+=("$(echo "$end - $start" | bc)")
  done
  printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END {printf "%.2f", a[int((NR+1)/2)]}'
}

ratio() { echo "scale=2; $1 / $2" | bc; }

echo "== cargo check / build of one version's bindings (median of $runs, dependencies warm)"
printf '%-8s %-6s %10s %12s %7s\n' version mode kapi-k8s k8s-openapi ratio
for feature in v1_34 v1_36; do
  for mode in check build; do
    ours=$(seconds "$mode" bench-ours kapi-k8s "$feature")
    peer=$(seconds "$mode" bench-peer k8s-openapi "$feature")
    printf '%-8s %-6s %9ss %11ss %7s\n' "$feature" "$mode" "$ours" "$peer" "$(ratio "$ours" "$peer")"
  done
done

echo "== generated lines per type, Kubernetes v1.36"
cargo build -q --release --manifest-path "$root/Cargo.toml" -p kapi-codegen --features cli --target-dir "$work/target"
codegen=$work/target/release/kapi-codegen
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$codegen" generate "$corpus/kubernetes/v1.36/swagger.json" --out "$out/v1_36" \
  --lifecycle "$root/specs/lifecycle/kubernetes.yaml" >/dev/null
count() { # LINES TYPES of the .rs files under $1
  local lines types
  lines=$(find "$1" -name '*.rs' -exec cat {} + | wc -l)
  types=$(find "$1" -name '*.rs' -exec cat {} + | grep -cE '^\s*pub (struct|enum) ')
  echo "$lines $types"
}
read -r our_lines our_types < <(count "$out/v1_36")
peer_src=$(find "${CARGO_HOME:-$HOME/.cargo}/registry/src" -maxdepth 1 -mindepth 1 -type d \
  -exec test -d '{}/k8s-openapi-0.29.0' \; -print -quit)/k8s-openapi-0.29.0/src/v1_36
read -r peer_lines peer_types < <(count "$peer_src")
our_per=$(echo "scale=1; $our_lines / $our_types" | bc)
peer_per=$(echo "scale=1; $peer_lines / $peer_types" | bc)
printf 'kapi:        %6d lines / %4d types = %6s lines per type\n' "$our_lines" "$our_types" "$our_per"
printf 'k8s-openapi: %6d lines / %4d types = %6s lines per type\n' "$peer_lines" "$peer_types" "$peer_per"
echo "ratio: $(ratio "$our_per" "$peer_per")"

echo "== generation time of the v1.36 spec (release, median of 5)"
times=()
for _ in 1 2 3 4 5; do
  start=$(date +%s.%N)
  "$codegen" generate "$corpus/kubernetes/v1.36/swagger.json" --out "$out/gen" \
    --lifecycle "$root/specs/lifecycle/kubernetes.yaml" >/dev/null
  end=$(date +%s.%N)
  times+=("$(echo "$end - $start" | bc)")
done
printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END {printf "kapi-codegen generate v1.36: %.3f s\n", a[3]}'
