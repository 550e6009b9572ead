#!/usr/bin/env python3
"""Writes runtime/src/server/http/protobuf/fields.txt, the protobuf field-number table of the
Kubernetes built-in kinds that kapi's server reads protobuf request bodies with.

Field numbers are a fact of Kubernetes' protobuf wire format that no OpenAPI document carries.
They come from the sources of the `k8s-pb` crate (prost structs generated from upstream's
generated.proto files: one `#[prost(..., tag = "N")]` per field); the JSON field names, the set
of types and which fields are required come from the OpenAPI definitions kapi-k8s hands the
registry (generated/k8s/src/definitions/*.rs), so every name in the table is one the JSON path
knows.

Regenerate (from the workspace root) after bumping k8s-pb or regenerating kapi-k8s:

    # 1. fetch the crate's sources with a scratch project outside the workspace
    mkdir -p /tmp/pb/src && touch /tmp/pb/src/lib.rs
    printf '[package]\nname = "pb"\nversion = "0.0.0"\n[dependencies]\nk8s-pb = "=0.9.0"\n' \
        > /tmp/pb/Cargo.toml
    (cd /tmp/pb && cargo fetch)
    # 2. regenerate, then run `cargo test -p kapi --features server --lib protobuf`
    python3 scripts/protobuf_fields.py ~/.cargo/registry/src/*/k8s-pb-0.9.0/src . \
        > runtime/src/server/http/protobuf/fields.txt

The table format is described at the top of runtime/src/server/http/protobuf/table.rs. Names the two
sources do not agree on are reported on stderr; a VALUE_FIELDS entry the sources contradict
stops the script.

Zero values ("?" in the table). Go writes every non-pointer field on the wire, zero or not, and
a pointer field only when it is set. Its JSON encoder leaves a field out when it is `omitempty`
and zero (a pointer: nil). So a zero that arrives is left out of the JSON exactly when the Go
field is an `omitempty` value (not a pointer); a pointer's explicit zero (`replicas: 0`,
`runAsUser: 0`, `allowPrivilegeEscalation: false`) is a value the JSON keeps. The rule here:

  1. `omitempty` is taken from the OpenAPI definitions: a property in its type's `required`
     list is never omitempty (Kubernetes' convention: required fields are written always,
     optional ones are omitempty), so its zero is kept.
  2. Pointer or value is in none of the sources: k8s-pb's prost fields are all `optional`
     (proto2), the OpenAPI schemas of `replicas` (*int32) and `minReadySeconds` (int32) are
     identical, and kapi-k8s makes both `Option<i32>`. So:
     - an optional string's "" is dropped: a pointer string whose "" means something is rare;
     - an optional number's or bool's zero is dropped only for the fields VALUE_FIELDS lists
       as Go values; every other one is kept, since wrongly dropping a pointer's zero changes
       what the object means while wrongly keeping a value's zero only spells out a default.
"""

import glob
import json
import os
import re
import sys

# Types whose JSON form is not an object of their fields: written as one-letter kinds.
SPECIAL = {
    "apimachinery.pkg.apis.meta.v1.Time": "t",
    "apimachinery.pkg.apis.meta.v1.MicroTime": "u",
    "apimachinery.pkg.api.resource.Quantity": "q",
    "apimachinery.pkg.util.intstr.IntOrString": "n",
    "apimachinery.pkg.runtime.RawExtension": "r",
    "apimachinery.pkg.apis.meta.v1.FieldsV1": "r",
    "apimachinery.pkg.apis.meta.v1.Duration": "v",
    "apimachinery.pkg.apis.meta.v1.Verbs": "x",
    "apiextensions_apiserver.pkg.apis.apiextensions.v1.JSON": "r",
    "apiextensions_apiserver.pkg.apis.apiextensions.v1beta1.JSON": "r",
    "apiextensions_apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrArray": "A",
    "apiextensions_apiserver.pkg.apis.apiextensions.v1beta1.JSONSchemaPropsOrArray": "A",
    "apiextensions_apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrBool": "B",
    "apiextensions_apiserver.pkg.apis.apiextensions.v1beta1.JSONSchemaPropsOrBool": "B",
    "apiextensions_apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrStringArray": "S",
    "apiextensions_apiserver.pkg.apis.apiextensions.v1beta1.JSONSchemaPropsOrStringArray": "S",
}
for group in ("authentication", "authorization", "certificates"):
    for version in ("v1", "v1beta1", "v1alpha1"):
        SPECIAL[f"api.{group}.{version}.ExtraValue"] = "x"

SCALARS = {"string": "s", "bool": "b", "int32": "i", "int64": "l", "double": "d", "bytes": "y"}

# Optional numbers and booleans that are Go values, not pointers (rule 2 in the module doc):
# their zero is how Go writes "unset". Every entry must name an optional scalar of the type, or
# the script stops.
VALUE_FIELDS = {
    "apimachinery.pkg.apis.meta.v1.ObjectMeta": {"generation"},
    "apimachinery.pkg.apis.meta.v1.ListMeta": {"remainingItemCount"},
    "api.core.v1.Container": {"stdin", "stdinOnce", "tty"},
    "api.core.v1.EphemeralContainerCommon": {"stdin", "stdinOnce", "tty"},
    "api.core.v1.PodSpec": {"hostNetwork", "hostPID", "hostIPC"},
    "api.core.v1.ContainerPort": {"hostPort"},
    "api.core.v1.Probe": {
        "initialDelaySeconds",
        "timeoutSeconds",
        "periodSeconds",
        "successThreshold",
        "failureThreshold",
    },
    "api.core.v1.ServiceSpec": {"publishNotReadyAddresses", "healthCheckNodePort"},
    "api.core.v1.ServicePort": {"nodePort"},
    "api.core.v1.VolumeMount": {"readOnly"},
    "api.core.v1.NodeSpec": {"unschedulable"},
    "api.core.v1.Event": {"count"},
    "api.core.v1.EventSeries": {"count"},
    "api.core.v1.ReplicationControllerSpec": {"minReadySeconds"},
    "api.core.v1.ReplicationControllerStatus": {
        "fullyLabeledReplicas",
        "readyReplicas",
        "availableReplicas",
        "observedGeneration",
    },
    "api.apps.v1.DeploymentSpec": {"minReadySeconds", "paused"},
    "api.apps.v1.DeploymentStatus": {
        "observedGeneration",
        "replicas",
        "updatedReplicas",
        "readyReplicas",
        "availableReplicas",
        "unavailableReplicas",
    },
    "api.apps.v1.ReplicaSetSpec": {"minReadySeconds"},
    "api.apps.v1.ReplicaSetStatus": {
        "fullyLabeledReplicas",
        "readyReplicas",
        "availableReplicas",
        "observedGeneration",
    },
    "api.apps.v1.StatefulSetSpec": {"minReadySeconds"},
    "api.apps.v1.StatefulSetStatus": {
        "observedGeneration",
        "readyReplicas",
        "currentReplicas",
        "updatedReplicas",
    },
    "api.apps.v1.DaemonSetSpec": {"minReadySeconds"},
    "api.apps.v1.DaemonSetStatus": {
        "observedGeneration",
        "updatedNumberScheduled",
        "numberAvailable",
        "numberUnavailable",
    },
    "api.batch.v1.JobStatus": {"active", "succeeded", "failed"},
    "api.autoscaling.v1.ScaleSpec": {"replicas"},
    "api.networking.v1.ServiceBackendPort": {"number"},
    "api.scheduling.v1.PriorityClass": {"globalDefault"},
}
# apiextensions' JSONSchemaProps: its booleans are plain `omitempty` values.
for version in ("v1", "v1beta1"):
    VALUE_FIELDS[f"apiextensions_apiserver.pkg.apis.apiextensions.{version}.JSONSchemaProps"] = {
        "exclusiveMaximum",
        "exclusiveMinimum",
        "uniqueItems",
        "nullable",
        "x-kubernetes-embedded-resource",
        "x-kubernetes-int-or-string",
    }


def norm(name):
    """Compares names the two sources spell differently (externalIPs/external_i_ps, $ref/r#ref)."""
    return re.sub(r"[^a-z0-9]", "", name.lower().removeprefix("r#"))


def parse_crate(root):
    """{package: {TypeName: [(tag, rust_name, attr, rust_type)]}}"""
    out = {}
    for path in glob.glob(os.path.join(root, "**", "mod.rs"), recursive=True):
        package = os.path.relpath(os.path.dirname(path), root).replace(os.sep, ".")
        text = open(path, encoding="utf-8").read()
        types = out.setdefault(package, {})
        for m in re.finditer(r"^pub struct (\w+) \{(?:\}|\n(.*?)^\})", text, re.M | re.S):
            fields = []
            lines = (m.group(2) or "").split("\n")
            i = 0
            while i < len(lines):
                line = lines[i].strip()
                if line.startswith("#[prost("):
                    attr = line[len("#[prost(") : -2]
                    decl = ""
                    i += 1
                    while i < len(lines):
                        decl += lines[i].strip()
                        if decl.endswith(",") and decl.count("<") == decl.count(">"):
                            break
                        i += 1
                    name, _, ty = decl.partition(":")
                    name = name.removeprefix("pub ").strip()
                    tag = int(re.search(r'tag = "(\d+)"', attr).group(1))
                    fields.append((tag, name, attr, ty.strip().rstrip(",")))
                i += 1
            types[m.group(1)] = fields
    return out


def resolve(package, rust_type):
    """The package-qualified name of the message a field's Rust type names."""
    rust_type = re.sub(r"::core::option::Option<|::prost::alloc::\w+::\w+<|>|,", "", rust_type)
    parts = rust_type.strip().split("::")
    base = package.split(".")
    while parts and parts[0] == "super":
        parts.pop(0)
        base.pop()
    return ".".join(base + parts[:-1]), parts[-1]


def load_definitions(workspace):
    defs = {}
    for path in sorted(glob.glob(os.path.join(workspace, "generated/k8s/src/definitions/*.rs"))):
        text = open(path, encoding="utf-8").read()
        m = re.search(r'r##"(.*)"##', text, re.S)
        if not m:
            continue
        for name, schema in json.loads(m.group(1)).items():
            seen = defs.setdefault(name, {"properties": {}, "gvk": [], "required": set()})
            seen["properties"].update(schema.get("properties", {}))
            seen["required"].update(schema.get("required", []))
            for gvk in schema.get("x-kubernetes-group-version-kind", []):
                if gvk not in seen["gvk"]:
                    seen["gvk"].append(gvk)
    return defs


def main():
    crate = parse_crate(sys.argv[1])
    workspace = sys.argv[2] if len(sys.argv) > 2 else "."
    defs = load_definitions(workspace)
    # OpenAPI name io.k8s.<package>.<Type> → crate package and struct (prost spells JSON Json).
    # Each entry: (struct, JSON properties, GVKs).
    wanted = {}
    for name, schema in defs.items():
        if not name.startswith("io.k8s."):
            continue
        package, _, type_name = name[len("io.k8s.") :].rpartition(".")
        package = package.replace("-", "_")
        structs = crate.get(package, {})
        match = [s for s in structs if s.lower() == type_name.lower()]
        full = f"{package}.{type_name}"
        if match and full not in SPECIAL:
            wanted[full] = (match[0], schema["properties"], schema["gvk"], schema["required"])
    by_struct = {(k.rpartition(".")[0], v[0]): k for k, v in wanted.items()}
    from_openapi = set(wanted)
    lower_special = {k.lower(): v for k, v in SPECIAL.items()}

    def message_kind(package, rust_type):
        target_package, struct = resolve(package, rust_type)
        for special, kind in lower_special.items():
            sp, _, st = special.rpartition(".")
            if sp == target_package and st == struct.lower():
                return kind
        full = by_struct.get((target_package, struct))
        if full is None:
            return None
        target_package_name, _, type_name = full.rpartition(".")
        return "m" + (type_name if target_package_name == package else full)

    missing_in_openapi = []
    missing_in_proto = []
    contradicted = []
    listed_seen = set()
    emitted = {}
    todo = sorted(wanted)
    while todo:
        full = todo.pop()
        if full in emitted:
            continue
        struct, props, gvks, required = wanted[full]
        package, _, type_name = full.rpartition(".")
        by_norm = {norm(p): p for p in props}
        lines = []
        seen = set()
        for tag, rust_name, attr, rust_type in crate[package][struct]:
            kind_word = attr.split(",")[0].strip()
            json_name = by_norm.get(norm(rust_name))
            if json_name is None and kind_word == "message" and ", repeated" not in attr:
                # A Go embedded struct: its own message on the wire, its fields inline in
                # JSON. OpenAPI has no definition for most of them, so the names come from the
                # embedding type's properties.
                inline_package, inline_struct = resolve(package, rust_type)
                inline_full = by_struct.get((inline_package, inline_struct))
                inline_fields = crate.get(inline_package, {}).get(inline_struct, [])
                if not any(norm(f[1]) in by_norm for f in inline_fields):
                    inline_full = None
                elif inline_full is None:
                    inline_full = f"{inline_package}.{inline_struct}"
                    wanted[inline_full] = (inline_struct, props, [], required)
                    by_struct[(inline_package, inline_struct)] = inline_full
                    todo.append(inline_full)
                if inline_full is not None:
                    inline_props = wanted[inline_full][1]
                    seen.update(p for p in inline_props if p in props)
                    ref = message_kind(package, rust_type)[1:]
                    lines.append(f"{tag} - ^{ref}")
                    continue
            if json_name is None:
                missing_in_openapi.append(f"{full}.{rust_name}")
                continue
            seen.add(json_name)
            prefix = "*" if ", repeated" in attr else ""
            if kind_word.startswith("btree_map") or kind_word.startswith("map"):
                value = attr.split('"')[1].split(",")[1].strip()
                prefix = "%"
                if value in SCALARS:
                    kind = SCALARS[value]
                else:
                    inner = rust_type.split(",", 1)[1].rsplit(">", 1)[0]
                    kind = message_kind(package, inner)
            elif kind_word.startswith("bytes"):
                kind = "y"
            elif kind_word in SCALARS:
                kind = SCALARS[kind_word]
            elif kind_word == "message":
                kind = message_kind(package, rust_type)
            else:
                raise SystemExit(f"{full}.{rust_name}: unknown prost kind {attr}")
            if kind is None:
                missing_in_openapi.append(f"{full}.{rust_name} (type)")
                continue
            omitempty = json_name not in required
            listed = json_name in VALUE_FIELDS.get(full, ())
            if listed and not (prefix == "" and kind in ("i", "l", "b", "d") and omitempty):
                contradicted.append(f"{full}.{json_name}: {prefix}{kind}, omitempty={omitempty}")
            zero = ""
            if prefix == "" and omitempty and (kind == "s" or listed):
                zero = "?"
            listed_seen.add((full, json_name))
            lines.append(f"{tag} {json_name} {prefix}{kind}{zero}")
        if full in from_openapi:
            for p in props:
                if p not in seen and p not in ("apiVersion", "kind"):
                    missing_in_proto.append(f"{full}.{p}")
        if len(gvks) > 3:
            heads = ["*"]
        else:
            heads = [f"{g['group']}/{g['version']}/{g['kind']}" for g in gvks]
        emitted[full] = [" ".join([type_name] + heads)] + lines

    for full, names in VALUE_FIELDS.items():
        for name in names:
            if (full, name) not in listed_seen:
                contradicted.append(f"{full}.{name}: no such field")
    if contradicted:
        for line in contradicted:
            print(f"VALUE_FIELDS entry is not an optional scalar: {line}", file=sys.stderr)
        raise SystemExit(1)

    source = re.search(r"k8s-pb-[0-9.]+", os.path.abspath(sys.argv[1]))
    source = source.group(0) if source else "k8s-pb"
    out = [
        f"# Generated by scripts/protobuf_fields.py from {source} and kapi-k8s's OpenAPI",
        "# definitions; do not edit, regenerate (see the script's doc).",
        "# Kubernetes protobuf field numbers per type; the format is described in table.rs.",
        "# `?`: a zero that arrives is left out of the JSON, as Go's JSON encoder leaves out an",
        "# `omitempty` value field's zero. Set for optional (not OpenAPI-required) strings and for",
        "# the optional numbers and bools the script lists as Go values; a pointer's zero, and",
        "# a required field's, is kept.",
    ]
    current_package = None
    for full in sorted(emitted):
        package = full.rpartition(".")[0]
        if package != current_package:
            out.append(f"@{package}")
            current_package = package
        out.extend(emitted[full])
    print("\n".join(out))
    print(
        f"types: {len(emitted)}; proto fields without an OpenAPI name: "
        f"{len(missing_in_openapi)}; OpenAPI properties without a field number: "
        f"{len(missing_in_proto)}",
        file=sys.stderr,
    )
    for name in missing_in_openapi:
        print(f"  no OpenAPI property: {name}", file=sys.stderr)
    for name in missing_in_proto:
        print(f"  no field number: {name}", file=sys.stderr)


if __name__ == "__main__":
    main()
