#!/usr/bin/env bash
# kapi-codegen's kube target vs kopium on the same real CRDs, in one run on this machine:
#   1. generated lines for every served version of every CRD in the corpus (crds/, crds-wild/);
#   2. the same after macro expansion (needs a nightly toolchain for `-Zunpretty=expanded`);
#   3. `cargo check` time of a crate holding all of them (dependencies warm, the crate cold),
#      kapi (`generate --kube`, one run per CRD file: all its served versions) vs kopium
#      (default options, one run per served version, as kopium generates one version a run).
# Prints each figure and the ratio kapi / kopium. Files either tool cannot generate, or whose
# output does not compile, are left out of both sides and named.
# Usage: bench/kopium.sh [RUNS]; kopium from $KOPIUM, PATH, or installed into the bench dir.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
runs=${1:-3}
corpus=${KAPI_SPEC_CORPUS:-$root/../shared/specs}
python=${KAPI_PYTHON:-$root/.venv/bin/python}
work=$root/target/bench-kopium
export CARGO_TARGET_DIR=$work/target
rm -rf "$work/ours" "$work/peer"
mkdir -p "$work/ours/src" "$work/peer/src"

kopium=${KOPIUM:-$(command -v kopium || true)}
if [ -z "$kopium" ]; then
  cargo install -q --locked --root "$work/kopium" kopium --version 0.24.1
  kopium=$work/kopium/bin/kopium
fi
# The generator's speed is not measured here: its debug build in the workspace's target will do.
CARGO_TARGET_DIR=$root/target cargo build -q --manifest-path "$root/Cargo.toml" -p kapi-codegen --features cli
codegen=$root/target/debug/kapi-codegen

cat > "$work/Cargo.toml" <<TOML
[workspace]
resolver = "3"
members = ["ours", "peer"]
TOML
cat > "$work/ours/Cargo.toml" <<TOML
[package]
name = "bench-kube-ours"
version = "0.0.0"
edition = "2024"
publish = false
[lints.rust]
warnings = "allow"
[dependencies]
kapi = { path = "$root/runtime", package = "kapi-runtime", features = ["kube"] }
serde_json = "1"
kube = { version = "5", default-features = false, features = ["client"] }
k8s-openapi = { version = "0.29", features = ["v1_34"] }
TOML
cat > "$work/peer/Cargo.toml" <<TOML
[package]
name = "bench-kube-peer"
version = "0.0.0"
edition = "2024"
publish = false
[lints.rust]
warnings = "allow"
[dependencies]
kube = { version = "5", default-features = false, features = ["client", "derive"] }
k8s-openapi = { version = "0.29", features = ["v1_34"] }
serde = { version = "1", features = ["derive"] }
serde_json = "1"
schemars = "1"
TOML
cp "$root/Cargo.lock" "$work/Cargo.lock"

# The served versions of the CRD in a file, one per line.
served() {
  "$python" - "$1" <<'PY'
import sys, yaml
for doc in yaml.safe_load_all(open(sys.argv[1])):
    if isinstance(doc, dict) and doc.get("kind") == "CustomResourceDefinition":
        for v in doc["spec"]["versions"]:
            if v.get("served", True):
                print(v["name"])
PY
}

skipped=()
files=()
for file in "$corpus"/crds/*.yaml "$corpus"/crds-wild/*.yaml; do
  stem=$(basename "$file" .yaml | tr -c 'a-zA-Z0-9\n' '_' | tr 'A-Z' 'a-z')
  stem=m_$stem
  mkdir -p "$work/peer/src/$stem"
  ok=1
  for version in $(served "$file"); do
    if ! "$kopium" -f "$file" --api-version "$version" > "$work/peer/src/$stem/$version.rs" 2>/dev/null; then
      ok=0
    fi
  done
  if ! "$codegen" generate --kube --out "$work/ours/src/$stem" "$file" > /dev/null 2>&1; then
    ok=0
  fi
  if [ $ok = 0 ]; then
    skipped+=("$(basename "$file") (generation failed: kapi-codegen or kopium)")
    rm -rf "$work/peer/src/$stem" "$work/ours/src/$stem"
    continue
  fi
  files+=("$stem")
done

write_libs() {
  : > "$work/ours/src/lib.rs"
  : > "$work/peer/src/lib.rs"
  for stem in "${files[@]}"; do
    echo "pub mod $stem;" >> "$work/ours/src/lib.rs"
    {
      echo "pub mod $stem {"
      for f in "$work/peer/src/$stem"/*.rs; do
        v=$(basename "$f" .rs)
        echo "  #[path = \"$v.rs\"] pub mod $v;"
      done
      echo "}"
    } >> "$work/peer/src/lib.rs"
  done
}

# Drops the modules a failed check names, on both sides; gives up after a few rounds.
cd "$work"
for _ in 1 2 3 4 5; do
  write_libs
  failed=$( { cargo check -q -p bench-kube-ours 2>&1; cargo check -q -p bench-kube-peer 2>&1; } |
    grep -oE '(ours|peer)/src/m_[a-z0-9_]+' | sort -u || true)
  [ -z "$failed" ] && break
  for place in $failed; do
    stem=${place##*/}
    skipped+=("$stem (${place%%/*}: did not compile)")
    files=("${files[@]/$stem}")
    rm -rf "$work/ours/src/$stem" "$work/peer/src/$stem"
  done
  mapfile -t files < <(printf '%s\n' "${files[@]}" | grep . || true)
done

count_lines() { find "$1" -name '*.rs' ! -name lib.rs -exec cat {} + | wc -l; }
versions=$(find "$work/peer/src" -mindepth 2 -name '*.rs' | grep -cE "/($(printf '%s|' "${files[@]}" | sed 's/|$//'))/" || true)
echo "== ${#files[@]} CRD files, $versions served versions"
for s in "${skipped[@]}"; do echo "left out: $s"; done
ours_lines=$(count_lines "$work/ours/src")
peer_lines=$(count_lines "$work/peer/src")
ratio() { echo "scale=2; $1 / $2" | bc; }
printf 'generated lines: kapi %d, kopium %d, ratio %s\n' "$ours_lines" "$peer_lines" "$(ratio "$ours_lines" "$peer_lines")"

# What the compiler reads: each crate after macro expansion (rustc's pretty-printed
# `-Zunpretty=expanded`, non-empty lines), which takes a nightly toolchain.
expanded() {
  cargo +nightly rustc -q -p "$1" --lib --profile=check -- -Zunpretty=expanded | grep -cv '^\s*$'
}
if cargo +nightly --version > /dev/null 2>&1; then
  ours_expanded=$(expanded bench-kube-ours)
  peer_expanded=$(expanded bench-kube-peer)
  printf 'expanded lines: kapi %d, kopium %d, ratio %s\n' "$ours_expanded" "$peer_expanded" \
    "$(ratio "$ours_expanded" "$peer_expanded")"
else
  echo "expanded lines: skipped (no nightly toolchain)"
fi

seconds() { # PACKAGE: the median of $runs cold checks of the package, dependencies warm
  local pkg=$1 times=()
  cargo check -q -p "$pkg"
  for _ in $(seq "$runs"); do
    cargo clean -q -p "$pkg"
    local start end
    start=$(date +%s.%N)
    cargo check -q -p "$pkg"
    end=$(date +%s.%N)
    times+=("$(echo "$end - $start" | bc)")
  done
  printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END {printf "%.2f", a[int((NR+1)/2)]}'
}
ours=$(seconds bench-kube-ours)
peer=$(seconds bench-kube-peer)
printf 'cargo check (median of %d): kapi %ss, kopium %ss, ratio %s\n' "$runs" "$ours" "$peer" "$(ratio "$ours" "$peer")"
