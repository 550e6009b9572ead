#!/usr/bin/env bash
# Custom resources: kapi's #[derive(CustomResource)] vs kube-derive 5, measured in one run on this
# machine. bench/custom_resources/gen.py writes 50 kinds (spec, status with conditions, a nested
# struct, a string enum, a short name and two printer columns each) twice, once per library, into
# scratch crates under target/bench-crd/ (kapi's types derive kapi::Wire where kube's derive serde's
# Serialize and Deserialize), plus plain-crs: the types with only serde's and std's derives, the
# floor kube-derive builds on. Figures:
#   0. both sides emit a CRD per kind, with the same names, columns, and spec and status
#      property paths and types;
#   a. non-empty lines the user writes per kind (rustfmt-formatted sources);
#   b. non-empty lines of the rustfmt-formatted `-Zunpretty=expanded` output of each crate, and
#      where they come from, per kind;
#   c. `cargo check` time of each crate, its dependencies warm and the crate cold: median of RUNS
#      wall-clock and CPU (user + sys) seconds, the crates taking turns so load hits both alike.
# Prints each figure and the ratio kapi / kube-derive. Usage: bench/custom_resources.sh [RUNS] [N]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
runs=${1:-3}
count=${2:-50}
work=$root/target/bench-crd
out=$work/out
mkdir -p "$work/kapi-crs" "$work/kube-crs" "$work/plain-crs" "$out"

python3 "$root/bench/custom_resources/gen.py" "$work" "$count"

cat > "$work/Cargo.toml" <<TOML
[workspace]
resolver = "3"
members = ["kapi-crs", "kube-crs", "plain-crs"]
TOML
cat > "$work/kapi-crs/Cargo.toml" <<TOML
[package]
name = "kapi-crs"
version = "0.0.0"
edition = "2024"
publish = false
[dependencies]
kapi = { path = "$root/runtime", package = "kapi-runtime" }
[dev-dependencies]
serde_json = "1"
TOML
# The versions kube 5.0.0 requires: k8s-openapi 0.29 (v1_34 of the v1_33..v1_37 it supports) and
# schemars 1, which kube-derive's output names directly.
cat > "$work/kube-crs/Cargo.toml" <<TOML
[package]
name = "kube-crs"
version = "0.0.0"
edition = "2024"
publish = false
[dependencies]
k8s-openapi = { version = "=0.29.0", features = ["v1_34", "schemars"] }
kube = { version = "=5.0.0", default-features = false, features = ["derive"] }
schemars = "1"
serde = { version = "1", features = ["derive"] }
serde_json = "1"
TOML
cat > "$work/plain-crs/Cargo.toml" <<TOML
[package]
name = "plain-crs"
version = "0.0.0"
edition = "2024"
publish = false
[dependencies]
kapi = { path = "$root/runtime", package = "kapi-runtime" }
serde = { version = "1", features = ["derive"] }
TOML

# Examples that print every kind's CRD as one JSON array; not part of what is timed.
mkdir -p "$work/kapi-crs/examples" "$work/kube-crs/examples"
{
  echo 'use kapi::crd::{CustomResource as _, validate_structural};'
  echo 'fn main() {'
  echo '    let crds = vec!['
  for ((i = 0; i < count; i++)); do
    printf '        kapi_crs::widget%02d::Widget%02d::crd(),\n' "$i" "$i"
  done
  echo '    ];'
  echo '    for crd in &crds {'
  echo '        let schema = crd.spec.versions[0].schema.as_ref().and_then(|s| s.open_api_v3_schema.as_ref());'
  echo '        if let Err(e) = validate_structural(schema.expect("schema")) { panic!("{e:?}") }'
  echo '    }'
  echo '    println!("{}", serde_json::to_string(&crds).expect("json"));'
  echo '}'
} > "$work/kapi-crs/examples/crds.rs"
{
  echo 'use kube::CustomResourceExt as _;'
  echo 'fn main() {'
  echo '    let crds = vec!['
  for ((i = 0; i < count; i++)); do
    printf '        kube_crs::widget%02d::Widget%02d::crd(),\n' "$i" "$i"
  done
  echo '    ];'
  echo '    println!("{}", serde_json::to_string(&crds).expect("json"));'
  echo '}'
} > "$work/kube-crs/examples/crds.rs"

for side in kapi kube plain; do
  rustfmt --edition 2024 "$work/$side-crs/src/"*.rs "$work/$side-crs/examples/"*.rs 2>/dev/null || true
done

export CARGO_TARGET_DIR=$work/target
cd "$work"
ratio() { printf '%.2f' "$(echo "scale=4; $1 / $2" | bc)"; }

echo "== 0. CRDs: $count kinds per side"
cargo run -q -p kapi-crs --example crds > "$out/kapi-crds.json"
cargo run -q -p kube-crs --example crds > "$out/kube-crds.json"
python3 "$root/bench/custom_resources/gen.py" compare "$out/kapi-crds.json" "$out/kube-crds.json"

echo "== a. lines the user writes per kind (non-empty, rustfmt)"
per_kind() { cat "$work/$1/src/"widget*.rs | grep -c . | awk -v n="$count" '{printf "%.1f", $1 / n}'; }
kapi_src=$(per_kind kapi-crs)
kube_src=$(per_kind kube-crs)
printf 'kapi %s, kube-derive %s, ratio %s\n' "$kapi_src" "$kube_src" "$(ratio "$kapi_src" "$kube_src")"

echo "== b. expanded lines per crate (non-empty, rustfmt)"
declare -A expanded
for side in kapi kube plain; do
  cargo +nightly rustc -q -p "$side-crs" --lib --profile=check -- -Zunpretty=expanded \
    > "$out/$side-crs.expanded.rs"
  cp "$out/$side-crs.expanded.rs" "$out/$side-crs.fmt.rs"
  rustfmt --edition 2024 "$out/$side-crs.fmt.rs"
  expanded[$side]=$(grep -c . "$out/$side-crs.fmt.rs")
done
printf 'kapi %d, kube-derive %d, ratio %s\n' "${expanded[kapi]}" "${expanded[kube]}" \
  "$(ratio "${expanded[kapi]}" "${expanded[kube]}")"
printf "plain-crs (the types with serde's and std's derives only, kube-derive's floor): %d\n" \
  "${expanded[plain]}"
printf 'kube-derive adds %d over that floor; kapi, whose types derive Wire instead of serde, is %d below it\n' \
  "$((expanded[kube] - expanded[plain]))" "$((expanded[plain] - expanded[kapi]))"
echo "-- per kind, by what emitted them (kind: items of the generated kind struct)"
python3 "$root/bench/custom_resources/gen.py" breakdown "$out/kapi-crs.fmt.rs" > "$out/kapi.breakdown"
python3 "$root/bench/custom_resources/gen.py" breakdown "$out/kube-crs.fmt.rs" > "$out/kube.breakdown"
for side in kapi kube; do
  echo "$side:"
  awk -F'\t' '{printf "  %-52s %6s\n", $1, $2}' "$out/$side.breakdown"
done

echo "== c. cargo check of the crate, dependencies warm (median of $runs)"
cargo check -q -p kapi-crs -p kube-crs -p plain-crs
declare -A wall cpu
for ((run = 0; run < runs; run++)); do
  for side in kapi kube plain; do
    cargo clean -q -p "$side-crs"
    # wall, user and sys of cargo and the rustc it waits for
    read -r w u s < <({ /usr/bin/time -f '%e %U %S' cargo check -q -p "$side-crs" 2>&1 >/dev/null; } | tail -1)
    wall[$side]+="$w "
    cpu[$side]+="$(echo "$u + $s" | bc) "
  done
done
median() { printf '%s\n' $1 | sort -n | awk '{a[NR]=$1} END {printf "%.2f", a[int((NR+1)/2)]}'; }
for side in kapi kube plain; do
  printf '%-6s wall %6ss (runs: %s)  cpu %6ss (runs: %s)\n' "$side" "$(median "${wall[$side]}")" \
    "${wall[$side]% }" "$(median "${cpu[$side]}")" "${cpu[$side]% }"
done
for metric in wall cpu; do
  declare -n m=$metric
  k=$(median "${m[kapi]}")
  u=$(median "${m[kube]}")
  printf '%-4s ratio kapi/kube-derive %s (plain-crs: %s s)\n' "$metric" "$(ratio "$k" "$u")" \
    "$(median "${m[plain]}")"
done
