#!/usr/bin/env python3
r"""Writes runtime/src/server/http/protobuf/fields.txt, the protobuf field-number table of the
Kubernetes built-in kinds that kapi's server reads protobuf request bodies with: every kind
served by any release kapi serves (1.20, 1.28, 1.34, 1.36), the metadata-only views
meta.k8s.io/v1 and v1beta1 PartialObjectMetadata(List) and aggregated discovery's
apidiscovery.k8s.io/v2 and v2beta1 APIGroupDiscoveryList (EXTRA_DEFINITIONS, as no OpenAPI
document has them).

Field numbers are a fact of Kubernetes' protobuf wire format that no OpenAPI document carries.
They come from upstream's generated.proto files, read either as written (proto2: `message X {
optional T name = N; repeated T name = N; map<string, T> name = N; }`) or through the `k8s-pb`
crate's prost structs generated from them (one `#[prost(..., tag = "N")]` per field). The JSON
field names, the set of types and which fields are required come from the OpenAPI definitions
kapi-k8s hands the registry (generated/k8s/src/definitions/*.rs, the union of its releases), so
every name in the table is one the JSON path knows.

No one source has every release's types, so the script takes several, newest first, each adding
the messages and fields the ones before it lack:

  kubernetes-1.36.0   kubernetes/api and kubernetes/apimachinery at tag kubernetes-1.36.0 (=
                      v0.36.0; commits 545bb975fe66 and debe1eba03a0): what 1.36 added after
                      any k8s-pb (admissionregistration/v1 MutatingAdmissionPolicy*,
                      scheduling/v1alpha2, resource/v1alpha3 ResourcePoolStatusRequest,
                      resource/v1beta2 DeviceTaintRule, PodSpec.schedulingGroup,
                      ListMeta.shardInfo, ...)
  k8s-pb-0.9.0        Kubernetes 1.35.0; also apiextensions-apiserver and kube-aggregator
  kubernetes-1.34.1   as above at tag kubernetes-1.34.1 (77c9e29b068e, b72d93d17433):
                      certificates/v1alpha1 PodCertificateRequest, served by 1.34 only
  k8s-pb-0.8.0, 0.6.0, 0.3.0, 0.2.0, 0.1.0
                      Kubernetes 1.33.1, 1.31.1, 1.30.0, 1.29.0, 1.28.4: APIs and fields since
                      removed (resource/v1alpha2, flowcontrol/v1alpha1, networking/v1alpha1
                      ClusterCIDR and IPAddress, PodResourceClaim.source, ...). 0.4.0 and 0.5.0
                      carry 1.31.1 like 0.6.0, and 0.7.0 1.33.1 like 0.8.0.
  kubernetes-1.20.2   as above at tag kubernetes-1.20.2 (ec3d28350d6e, 2456ebdaba22): what only
                      1.20 serves (policy/v1beta1 PodSecurityPolicy, batch/v2alpha1,
                      ObjectMeta.clusterName, ServiceSpec.topologyKeys, core/v1 Handler, ...)

A field two sources both have must have one number and one shape, and no number may name two
fields of a message: a disagreement in a message the table is made from stops the script (other
messages' are only reported). A message type a release renamed is resolved by field_type().

Regenerate (from the workspace root) after a new k8s-pb or Kubernetes release, or after
regenerating kapi-k8s, then run `cargo test -p kapi-runtime --features server --lib protobuf`, whose
every_served_property_has_a_number fails for any served property the table lacks:

    # 1. k8s-pb's sources, each fetched with a scratch project outside the workspace
    for v in 0.9.0 0.8.0 0.6.0 0.3.0 0.2.0 0.1.0; do
        mkdir -p /tmp/pb-$v/src && touch /tmp/pb-$v/src/lib.rs
        (cd /tmp/pb-$v && printf '[package]\nname = "pb"\nversion = "0.0.0"\n' > Cargo.toml &&
            printf '[workspace]\n[dependencies]\nk8s-pb = "=%s"\n' $v >> Cargo.toml &&
            cargo fetch)
    done
    # 2. upstream's generated.proto files (any copy of those trees at those tags will do)
    for release in 1.36.0 1.34.1 1.20.2; do
        for repo in api apimachinery; do
            git clone -q --depth 1 --branch kubernetes-$release \
                https://github.com/kubernetes/$repo /tmp/k8s-protos/kubernetes-$release/$repo
        done
    done
    # 3. regenerate, the sources newest first (their labels head the table)
    K=$(echo ~/.cargo/registry/src/*/) P=/tmp/k8s-protos
    python3 scripts/protobuf_fields.py $P/kubernetes-1.36.0 $K/k8s-pb-0.9.0/src \
        $P/kubernetes-1.34.1 $K/k8s-pb-0.8.0/src $K/k8s-pb-0.6.0/src $K/k8s-pb-0.3.0/src \
        $K/k8s-pb-0.2.0/src $K/k8s-pb-0.1.0/src $P/kubernetes-1.20.2 \
        > runtime/src/server/http/protobuf/fields.txt

Usage: protobuf_fields.py [--workspace DIR] SOURCE... (DIR defaults to "."). A SOURCE is a
k8s-pb src/ directory (labelled k8s-pb-X.Y.Z from its path) or a tree of generated.proto files
(labelled by its directory's name). The table format is described at the top of
runtime/src/server/http/protobuf/table.rs. On stderr: the counts, OpenAPI definitions no source
has a message for, OpenAPI properties without a field number (both must stay empty but for
apimachinery.pkg.version.Info, the JSON-only /version answer), and proto fields no OpenAPI
definition names (fields of releases kapi does not serve). A VALUE_FIELDS entry the sources
contradict stops the script.

Zero values ("?" in the table). Go writes every non-pointer field on the wire, zero or not, and
a pointer field only when it is set. Its JSON encoder leaves a field out when it is `omitempty`
and zero (a pointer: nil). So a zero that arrives is left out of the JSON exactly when the Go
field is an `omitempty` value (not a pointer); a pointer's explicit zero (`replicas: 0`,
`runAsUser: 0`, `allowPrivilegeEscalation: false`) is a value the JSON keeps. The rule here:

  1. `omitempty` is taken from the OpenAPI definitions: a property in its type's `required`
     list is never omitempty (Kubernetes' convention: required fields are written always,
     optional ones are omitempty), so its zero is kept.
  2. Pointer or value is in none of the sources: the proto fields are all `optional`
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
import textwrap

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
    "api.policy.v1beta1.PodSecurityPolicySpec": {
        "privileged",
        "hostNetwork",
        "hostPID",
        "hostIPC",
        "readOnlyRootFilesystem",
    },
    "api.policy.v1beta1.AllowedHostPath": {"readOnly"},
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


# Kinds that no OpenAPI document describes, with the JSON names of their properties, their
# GVKs and their required (not omitempty) properties: the metadata-only views a client asks
# for with `Accept: ...;as=PartialObjectMetadata[List]`.
# meta.k8s.io/v1beta1's PartialObjectMetadata is v1's type; its List is a message of its own
# (package meta.v1beta1), whose field numbers are not v1's.
META = "apimachinery.pkg.apis.meta"
EXTRA_DEFINITIONS = {
    f"io.k8s.{META}.v1.PartialObjectMetadata": (
        ["metadata"],
        [
            ("meta.k8s.io", "v1", "PartialObjectMetadata"),
            ("meta.k8s.io", "v1beta1", "PartialObjectMetadata"),
        ],
        [],
    ),
    f"io.k8s.{META}.v1.PartialObjectMetadataList": (
        ["metadata", "items"],
        [("meta.k8s.io", "v1", "PartialObjectMetadataList")],
        [],
    ),
    f"io.k8s.{META}.v1beta1.PartialObjectMetadataList": (
        ["metadata", "items"],
        [("meta.k8s.io", "v1beta1", "PartialObjectMetadataList")],
        [],
    ),
    # What a discovery document refers to (APIResourceDiscovery.responseKind); no OpenAPI
    # document has it. Its fields are not omitempty (apimachinery's group_version.go).
    f"io.k8s.{META}.v1.GroupVersionKind": (["group", "version", "kind"], [], ["group", "version", "kind"]),
}

# Aggregated discovery (`Accept: ...;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList` on
# /api and /apis), which no OpenAPI document describes either: properties and the ones that
# are not omitempty (required), from kubernetes/api apidiscovery/v2/types.go; v2beta1 has the
# same fields and numbers.
APIDISCOVERY = {
    "APIGroupDiscoveryList": (["metadata", "items"], ["items"]),
    "APIGroupDiscovery": (["metadata", "versions"], []),
    "APIVersionDiscovery": (["version", "resources", "freshness"], ["version"]),
    "APIResourceDiscovery": (
        ["resource", "responseKind", "scope", "singularResource", "verbs", "shortNames",
         "categories", "subresources"],
        ["resource", "scope", "singularResource", "verbs"],
    ),
    "APISubresourceDiscovery": (
        ["subresource", "responseKind", "acceptedTypes", "verbs"],
        ["subresource", "verbs"],
    ),
}
for version in ("v2", "v2beta1"):
    for type_name, (properties, required) in APIDISCOVERY.items():
        gvks = []
        if type_name.startswith("APIGroupDiscovery"):
            gvks = [("apidiscovery.k8s.io", version, type_name)]
        EXTRA_DEFINITIONS[f"io.k8s.api.apidiscovery.{version}.{type_name}"] = (
            properties,
            gvks,
            required,
        )


def norm(name):
    """Compares names the sources spell differently (externalIPs/external_i_ps, $ref/r#ref)."""
    return re.sub(r"[^a-z0-9]", "", name.lower().removeprefix("r#"))


class Field:
    """One field of a message as a source declares it. `label` is "" (one value), "*"
    (repeated) or "%" (a map from string keys); `value` is a scalar's proto name ("string",
    "int32", ...) or a message's key `(package, lowercased type name)`."""

    def __init__(self, tag, name, label, value, origin):
        self.tag, self.name, self.label, self.value, self.origin = tag, name, label, value, origin
        # The message types older sources give the field, when a release renamed its type
        # (networking/v1beta1 IngressStatus.loadBalancer: IngressLoadBalancerStatus since
        # 1.26, core/v1 LoadBalancerStatus in 1.20).
        self.older_values = []

    def shape(self):
        return self.label + (self.value if isinstance(self.value, str) else "message")


def type_key(package, type_name):
    # Prost spells Go's initialisms as words (JSONSchemaProps → JsonSchemaProps, IPAddress →
    # IpAddress): messages are matched by their lowercased names.
    return (package, type_name.lower())


def parse_prost(root, origin):
    """A k8s-pb crate's src/: {key: (TypeName, [Field])}, one struct per message."""
    out = {}
    for path in sorted(glob.glob(os.path.join(root, "**", "mod.rs"), recursive=True)):
        package = os.path.relpath(os.path.dirname(path), root).replace(os.sep, ".")
        text = open(path, encoding="utf-8").read()
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
                    name = name.removeprefix("pub ").strip().removeprefix("r#")
                    fields.append(prost_field(package, attr, name, ty.strip().rstrip(","), origin))
                i += 1
            out[type_key(package, m.group(1))] = (m.group(1), fields)
    return out


def prost_field(package, attr, name, rust_type, origin):
    tag = int(re.search(r'tag\s*=\s*"(\d+)"', attr).group(1))
    kind_word = attr.split(",")[0].strip()
    label = "*" if re.search(r",\s*repeated", attr) else ""
    if kind_word.startswith("btree_map") or kind_word.startswith("map"):
        key, _, value = attr.split('"')[1].partition(",")
        if key.strip() != "string":
            raise SystemExit(f"{package}: {name}: map key {key}")
        value = value.strip()
        if value == "message":
            value = type_key(*resolve(package, rust_type.split(",", 1)[1].rsplit(">", 1)[0]))
        return Field(tag, name, "%", value, origin)
    if kind_word.startswith("bytes"):
        return Field(tag, name, label, "bytes", origin)
    if kind_word in SCALARS:
        return Field(tag, name, label, kind_word, origin)
    if kind_word == "message":
        return Field(tag, name, label, type_key(*resolve(package, rust_type)), origin)
    raise SystemExit(f"{package}: {name}: unknown prost kind {attr}")


def resolve(package, rust_type):
    """The package-qualified name of the message a field's Rust type names."""
    rust_type = re.sub(r"::core::option::Option<|::prost::alloc::\w+::\w+<|>|,", "", rust_type)
    parts = rust_type.strip().split("::")
    base = package.split(".")
    while parts and parts[0] == "super":
        parts.pop(0)
        base.pop()
    return ".".join(base + parts[:-1]), parts[-1]


PROTO_FIELD = re.compile(r"(optional|repeated) ([\w.]+) (\w+) = (\d+);")
PROTO_MAP = re.compile(r"map<string, ([\w.]+)> (\w+) = (\d+);")


def parse_proto(root, origin):
    """Upstream's generated.proto files under root (proto2, as go-to-protobuf writes them):
    {key: (TypeName, [Field])}. The package is each file's `package k8s.io.<package>;`."""
    out = {}
    paths = sorted(glob.glob(os.path.join(root, "**", "generated.proto"), recursive=True))
    for path in paths:
        text = re.sub(r"/\*.*?\*/", "", open(path, encoding="utf-8").read(), flags=re.S)
        text = re.sub(r"//[^\n]*", "", text)
        package = re.search(r"^package k8s\.io\.([\w.]+);", text, re.M).group(1)

        def value_of(proto_type):
            if proto_type in SCALARS:
                return proto_type
            proto_type = proto_type.removeprefix(".")
            if proto_type.startswith("k8s.io."):
                target, _, name = proto_type[len("k8s.io.") :].rpartition(".")
                return type_key(target, name)
            if "." in proto_type:
                raise SystemExit(f"{path}: type {proto_type}")
            return type_key(package, proto_type)

        for m in re.finditer(r"^message (\w+) \{(.*?)^\}", text, re.M | re.S):
            fields = []
            for line in m.group(2).split("\n"):
                line = " ".join(line.split())
                if not line:
                    continue
                if f := PROTO_FIELD.fullmatch(line):
                    label = "*" if f.group(1) == "repeated" else ""
                    value = value_of(f.group(2))
                    fields.append(Field(int(f.group(4)), f.group(3), label, value, origin))
                elif f := PROTO_MAP.fullmatch(line):
                    value = value_of(f.group(1))
                    fields.append(Field(int(f.group(3)), f.group(2), "%", value, origin))
                else:
                    raise SystemExit(f"{path}: message {m.group(1)}: cannot read {line!r}")
            out[type_key(package, m.group(1))] = (m.group(1), fields)
    return out


def source_label(root):
    """k8s-pb-0.9.0 for a crate's src/, the directory's name for a tree of .proto files."""
    crate = re.search(r"k8s-pb-[0-9.]+[0-9]", os.path.abspath(root))
    return crate.group(0) if crate else os.path.basename(os.path.normpath(root))


def parse_source(root):
    label = source_label(root)
    if glob.glob(os.path.join(root, "**", "generated.proto"), recursive=True):
        return label, parse_proto(root, label)
    if os.path.exists(os.path.join(root, "lib.rs")):
        return label, parse_prost(root, label)
    raise SystemExit(f"{root}: neither a k8s-pb src/ (lib.rs) nor a tree of generated.proto files")


def merge(sources):
    """Messages from sources newest first: each source adds the messages and fields the ones
    before it lack. A field both have must have one number and one shape (a message type may
    be renamed: the first source's is kept); a number one source gives another field of the
    same message is a contradiction too. Returns the merged messages and the contradictions
    by message key: main() stops on those of a message the table is made from."""
    model = {}
    contradictions = {}
    for label, types in sources:
        for key, (display, fields) in types.items():
            if key not in model:
                model[key] = (display, list(fields))
                continue
            known = model[key][1]
            by_name = {norm(f.name): f for f in known}
            by_tag = {f.tag: f for f in known}
            for field in fields:
                where = f"{key[0]}.{model[key][0]}"
                old = by_name.get(norm(field.name))
                if old is not None:
                    if old.tag != field.tag:
                        contradictions.setdefault(key, []).append(
                            f"{where}.{field.name}: number {old.tag} in {old.origin}, "
                            f"{field.tag} in {label}"
                        )
                    elif old.shape() != field.shape():
                        contradictions.setdefault(key, []).append(
                            f"{where}.{field.name}: {old.shape()} in {old.origin}, "
                            f"{field.shape()} in {label}"
                        )
                    elif old.value != field.value and field.value not in old.older_values:
                        old.older_values.append(field.value)
                    continue
                other = by_tag.get(field.tag)
                if other is not None:
                    contradictions.setdefault(key, []).append(
                        f"{where}: number {field.tag} is {other.name} in {other.origin}, "
                        f"{field.name} in {label}"
                    )
                    continue
                known.append(field)
                by_name[norm(field.name)] = field
                by_tag[field.tag] = field
    return model, contradictions


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
    for name, (properties, gvks, required) in EXTRA_DEFINITIONS.items():
        if name in defs:
            raise SystemExit(f"{name} is in the OpenAPI definitions: drop it from EXTRA_...")
        defs[name] = {
            "properties": {p: {} for p in properties},
            "gvk": [{"group": g, "version": v, "kind": k} for g, v, k in gvks],
            "required": set(required),
        }
    return defs


def main():
    args = sys.argv[1:]
    workspace = "."
    if len(args) >= 2 and args[0] == "--workspace":
        workspace, args = args[1], args[2:]
    if not args:
        raise SystemExit(__doc__)
    sources = [parse_source(root) for root in args]
    model, contradictions = merge(sources)
    defs = load_definitions(workspace)
    # OpenAPI name io.k8s.<package>.<Type> → message key. Each entry: (key, JSON properties,
    # GVKs, required).
    wanted = {}
    no_message = []
    for name, schema in defs.items():
        if not name.startswith("io.k8s."):
            continue
        package, _, type_name = name[len("io.k8s.") :].rpartition(".")
        package = package.replace("-", "_")
        full = f"{package}.{type_name}"
        if full in SPECIAL:
            continue
        key = type_key(package, type_name)
        if key in model:
            wanted[full] = (key, schema["properties"], schema["gvk"], schema["required"])
        else:
            no_message.append(full)
    by_key = {v[0]: k for k, v in wanted.items()}
    from_openapi = set(wanted)
    special_keys = {type_key(*k.rsplit(".", 1)): v for k, v in SPECIAL.items()}

    def message_kind(package, key):
        if key in special_keys:
            return special_keys[key]
        full = by_key.get(key)
        if full is None:
            return None
        target_package, _, type_name = full.rpartition(".")
        return "m" + (type_name if target_package == package else full)

    def numbered(key):
        return {(f.tag, norm(f.name)) for f in model[key][1]}

    def field_type(field):
        """The message a field refers to when sources differ (a release renamed its type):
        of the types the table has a message for (OpenAPI names the old type in the releases
        that have it), the newest whose numbered fields include every other's, since numbers
        are never reused and it then reads every release's bytes (core/v1
        PersistentVolumeClaimSpec.resources: ResourceRequirements, with claims = 3, until 1.28;
        VolumeResourceRequirements, without, since). Else the newest."""
        candidates = [
            v for v in [field.value] + field.older_values if message_kind("", v) is not None
        ]
        for candidate in candidates:
            if all(numbered(other) <= numbered(candidate) for other in candidates):
                return candidate
        return candidates[0] if candidates else field.value

    missing_in_openapi = []
    missing_in_proto = []
    contradicted = []
    listed_seen = set()
    emitted = {}
    field_count = 0
    todo = sorted(wanted)
    while todo:
        full = todo.pop()
        if full in emitted:
            continue
        key, props, gvks, required = wanted[full]
        package, _, type_name = full.rpartition(".")
        by_norm = {norm(p): p for p in props}
        lines = []
        seen = set()
        for field in model[key][1]:
            json_name = by_norm.get(norm(field.name))
            if json_name is None and field.label == "" and isinstance(field.value, tuple):
                # A Go embedded struct: its own message on the wire, its fields inline in
                # JSON. OpenAPI has no definition for most of them, so the names come from the
                # embedding type's properties.
                inline_key = field.value
                inline_full = by_key.get(inline_key)
                inline_fields = model.get(inline_key, (None, []))[1]
                if not any(norm(f.name) in by_norm for f in inline_fields):
                    inline_full = None
                elif inline_full is None:
                    inline_full = f"{inline_key[0]}.{model[inline_key][0]}"
                    wanted[inline_full] = (inline_key, props, [], required)
                    by_key[inline_key] = inline_full
                    todo.append(inline_full)
                if inline_full is not None:
                    inline_props = wanted[inline_full][1]
                    seen.update(p for p in inline_props if p in props)
                    ref = message_kind(package, inline_key)[1:]
                    lines.append(f"{field.tag} - ^{ref}")
                    continue
            if json_name is None:
                missing_in_openapi.append(f"{full}.{field.name} ({field.origin})")
                continue
            if isinstance(field.value, str):
                kind = SCALARS[field.value]
            else:
                kind = message_kind(package, field_type(field))
            if kind is None:
                missing_in_openapi.append(f"{full}.{field.name} (type, {field.origin})")
                continue
            seen.add(json_name)
            prefix = field.label
            omitempty = json_name not in required
            listed = json_name in VALUE_FIELDS.get(full, ())
            if listed and not (prefix == "" and kind in ("i", "l", "b", "d") and omitempty):
                contradicted.append(f"{full}.{json_name}: {prefix}{kind}, omitempty={omitempty}")
            zero = ""
            if prefix == "" and omitempty and (kind == "s" or listed):
                zero = "?"
            listed_seen.add((full, json_name))
            lines.append(f"{field.tag} {json_name} {prefix}{kind}{zero}")
        if full in from_openapi:
            for p in props:
                if p not in seen and p not in ("apiVersion", "kind"):
                    missing_in_proto.append(f"{full}.{p}")
        if len(gvks) > 3:
            heads = ["*"]
        else:
            heads = [f"{g['group']}/{g['version']}/{g['kind']}" for g in gvks]
        emitted[full] = [" ".join([type_name] + heads)] + lines
        field_count += len(lines)

    used = {key for key, _, _, _ in wanted.values()}
    disagree = False
    for key, lines in sorted(contradictions.items()):
        for line in lines:
            if key in used:
                disagree = True
                print(f"sources disagree: {line}", file=sys.stderr)
            else:
                print(f"sources disagree (not in the table): {line}", file=sys.stderr)
    if disagree:
        raise SystemExit(1)

    for full, names in VALUE_FIELDS.items():
        for name in names:
            if (full, name) not in listed_seen:
                contradicted.append(f"{full}.{name}: no such field")
    if contradicted:
        for line in contradicted:
            print(f"VALUE_FIELDS entry is not an optional scalar: {line}", file=sys.stderr)
        raise SystemExit(1)

    labels = ", ".join(label for label, _ in sources)
    out = [
        "# Generated by scripts/protobuf_fields.py from kapi-k8s's OpenAPI definitions and these",
        "# protobuf sources, newest first (the script's doc says what each is):",
        *textwrap.wrap(labels, 94, initial_indent="# ", subsequent_indent="# "),
        "# Do not edit, regenerate (see the script's doc).",
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
        f"types: {len(emitted)}; fields: {field_count}; OpenAPI definitions without a message: "
        f"{len(no_message)}; OpenAPI properties without a field number: "
        f"{len(missing_in_proto)}; proto fields without an OpenAPI name: "
        f"{len(missing_in_openapi)}",
        file=sys.stderr,
    )
    for name in sorted(no_message):
        print(f"  no message: {name}", file=sys.stderr)
    for name in missing_in_proto:
        print(f"  no field number: {name}", file=sys.stderr)
    for name in missing_in_openapi:
        print(f"  no OpenAPI property: {name}", file=sys.stderr)


if __name__ == "__main__":
    main()
