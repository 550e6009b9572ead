#!/usr/bin/env python3
"""Writes the sources of the custom-resource benchmark: N kinds, each written once for kapi and
once for kube-derive, with the same fields, enum, nested struct, status, short name and printer
columns. One file per kind, as an operator author would lay them out, so the lines a user writes
per kind are the lines of one file. kapi's types derive `kapi::Wire` where kube's derive serde's
Serialize and Deserialize, with the same `#[serde]` attributes. A third crate, plain-crs, has the
types with only serde's and std's derives: the floor kube-derive builds on, so what its
custom-resource derive adds on top can be told apart.

Usage: gen.py OUT_DIR [N]          writes OUT_DIR/{kapi,kube,plain}-crs/src
       gen.py compare KAPI.json KUBE.json  compares the two sides' CRDs: names, columns,
                                  and the property paths and types of their schemas
       gen.py breakdown EXPANDED  prints the non-empty lines per kind of a formatted
                                  `-Zunpretty=expanded` output, by what emitted them
"""

import collections
import json
import pathlib
import re
import sys

# Doc comments, field names and serde attributes shared by both sides; only the derive lines,
# the resource attributes and the Condition import differ.
KAPI = '''\
//! {kind}: a custom resource generated for the benchmark.

use std::collections::BTreeMap;

use kapi::meta::Condition;
use kapi::{{CustomResource, Schema, Wire}};

/// Desired state of a {kind}.
#[derive(Clone, Debug, Wire, CustomResource)]
#[serde(rename_all = "camelCase")]
#[resource(
    group = "bench.example.com",
    version = "v1",
    status = "{kind}Status",
    short_names = ["{short}"]
)]
#[resource(printer_column(name = "Replicas", type = "integer", json_path = ".spec.replicas"))]
#[resource(printer_column(name = "Phase", type = "string", json_path = ".status.phase"))]
pub struct {kind}Spec {{
{spec_fields}
}}

{rest}'''

KUBE = '''\
//! {kind}: a custom resource generated for the benchmark.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{{Deserialize, Serialize}};

/// Desired state of a {kind}.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema, CustomResource)]
#[serde(rename_all = "camelCase")]
#[kube(
    group = "bench.example.com",
    version = "v1",
    kind = "{kind}",
    namespaced,
    status = "{kind}Status",
    shortname = "{short}",
    printcolumn(name = "Replicas", type_ = "integer", json_path = ".spec.replicas"),
    printcolumn(name = "Phase", type_ = "string", json_path = ".status.phase")
)]
pub struct {kind}Spec {{
{spec_fields}
}}

{rest}'''

PLAIN = '''\
//! {kind}: the benchmark's types without custom-resource derives.

use std::collections::BTreeMap;

use kapi::meta::Condition;
use serde::{{Deserialize, Serialize}};

/// Desired state of a {kind}.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct {kind}Spec {{
{spec_fields}
}}

{rest}'''

SPEC_FIELDS = '''\
    /// Desired number of replicas.
    #[serde(default)]
    pub replicas: i32,
    /// Container image to run.
    pub image: String,
    /// How replicas are replaced on update.
    pub strategy: {kind}Strategy,
    /// The backend the replicas talk to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backend: Option<{kind}Backend>,
    /// Labels added to every replica.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// Arguments passed to the container.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,'''

REST = '''\
/// How replicas are replaced on update.
#[derive(Clone, Copy, Debug, PartialEq, Eq, {derives})]
pub enum {kind}Strategy {{
    Recreate,
    RollingUpdate,
    OnDelete,
}}

/// A network backend.
#[derive(Clone, Debug, {derives})]
#[serde(rename_all = "camelCase")]
pub struct {kind}Backend {{
    /// Host name or address.
    pub host: String,
    /// TCP port.
    pub port: i32,
    /// Whether to connect with TLS.
    #[serde(default)]
    pub tls: bool,
}}

/// Observed state of a {kind}.
#[derive(Clone, Debug, Default, {derives})]
#[serde(rename_all = "camelCase")]
pub struct {kind}Status {{
    /// Latest observations of the object's state.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// The generation the controller last acted on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Replicas that are ready.
    #[serde(default)]
    pub ready_replicas: i32,
    /// A one-word summary of the state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
}}
'''


def render(template: str, derives: str, kind: str, short: str) -> str:
    fields = SPEC_FIELDS.format(kind=kind)
    rest = REST.format(kind=kind, derives=derives)
    return template.format(kind=kind, short=short, spec_fields=fields, rest=rest)


STD_DERIVES = {"Clone", "TrivialClone", "Copy", "Debug", "Default", "PartialEq",
               "StructuralPartialEq", "Eq", "AssertParamIsEq"}
ITEM = re.compile(r"(pub )?(struct|enum|type|impl|unsafe impl|const|static|fn|use) ")
IMPL = re.compile(r"impl(?:<[^>]*>)?\s+([\w:<>' ]+?)\s+for\s+(\w+)")


def items(module: list[str]):
    """Splits a module body (indented four spaces) into its top-level items, with the
    attributes and doc comments in front of each."""
    item: list[str] = []
    for line in module:
        if not line.strip():
            continue
        item.append(line)
        top = line.startswith("    ") and not line.startswith("     ")
        text = line.strip()
        if top and not text.startswith(("#", "///", "//")) and (
                text in ("}", "};") or text.endswith((";", "{}"))):
            yield item
            item = []
    if item:
        yield item


def classify(item: list[str], kind: str) -> str:
    """Names who emitted an item: the kind's items come from the CustomResource derive, the
    user's types get the derives written on them."""
    code = [line.strip() for line in item]
    head = next((line for line in code if ITEM.match(line)), "")
    if head.startswith("use "):
        return "user: imports"
    defined = re.match(r"(?:pub )?(?:struct|enum|type) (\w+)", head)
    if defined:
        who = "kind" if defined.group(1) in (kind, kind + "List") else "user"
        return f"{who}: type definition"
    if head.startswith(f"impl {kind} "):
        return "kind: inherent impl (new)"
    impls = [found for line in code if (found := IMPL.search(line))]
    if not impls:
        return "other"
    who = "kind" if impls[0].group(2) in (kind, kind + "List") else "user"
    traits = []
    for found in impls:
        trait = re.sub(r"<.*", "", found.group(1)).split("::")[-1].strip()
        if trait in STD_DERIVES:
            trait = "std derives (Clone, Debug, ...)"
        elif trait in ("Serialize", "Deserialize", "WireFields"):
            trait = f"serde {trait}"
        elif trait in ("Schema", "JsonSchema"):
            trait = f"schema ({trait})"
        if trait not in traits:
            traits.append(trait)
    return f"{who}: {' + '.join(traits)}"


def breakdown(path: str) -> None:
    lines = pathlib.Path(path).read_text().splitlines()
    totals: collections.Counter[str] = collections.Counter()
    modules = 0
    body: list[str] | None = None
    kind = ""
    for line in lines:
        start = re.match(r"pub mod (widget\d+) \{$", line)
        if start:
            body, kind, modules = [], "Widget" + start.group(1)[6:], modules + 1
        elif body is not None and line == "}":
            for item in items(body):
                totals[classify(item, kind)] += len(item)
            body = None
        elif body is not None:
            body.append(line)
    for name, count in sorted(totals.items(), key=lambda kv: (kv[0].split(":")[0], -kv[1])):
        print(f"{name}\t{count / max(modules, 1):.0f}")


def shape(schema: dict, path: str = "") -> set[tuple[str, str]]:
    """The (property path, type) pairs of a schema; `[]` marks list items, `{}` map values."""
    found = {(path or ".", schema.get("type", "-"))}
    for name, child in schema.get("properties", {}).items():
        found |= shape(child, f"{path}.{name}")
    if isinstance(schema.get("items"), dict):
        found |= shape(schema["items"], f"{path}[]")
    if isinstance(schema.get("additionalProperties"), dict):
        found |= shape(schema["additionalProperties"], f"{path}{{}}")
    return found


def summary(crd: dict) -> tuple:
    version = crd["spec"]["versions"][0]
    columns = [(c["name"], c["type"], c["jsonPath"]) for c in version.get("additionalPrinterColumns", [])]
    names = crd["spec"]["names"]
    return (crd["metadata"]["name"], crd["spec"]["scope"], names.get("shortNames"), columns,
            sorted(version.get("subresources", {})))


def compare(kapi_path: str, kube_path: str) -> None:
    kapi = json.loads(pathlib.Path(kapi_path).read_text())
    kube = json.loads(pathlib.Path(kube_path).read_text())
    print(f"kapi {len(kapi)} CRDs ({len(json.dumps(kapi)) // len(kapi)} bytes each), "
          f"kube-derive {len(kube)} CRDs ({len(json.dumps(kube)) // len(kube)} bytes each)")
    only: collections.Counter[str] = collections.Counter()
    same = 0
    for ours, theirs in zip(kapi, kube):
        if summary(ours) != summary(theirs):
            print(f"names/columns differ: {summary(ours)} vs {summary(theirs)}")
        # kube-derive leaves apiVersion, kind and metadata out of the root; kapi lists them.
        a = {p for p in shape(ours["spec"]["versions"][0]["schema"]["openAPIV3Schema"])
             if p[0].startswith((".spec", ".status"))}
        b = {p for p in shape(theirs["spec"]["versions"][0]["schema"]["openAPIV3Schema"])
             if p[0].startswith((".spec", ".status"))}
        same += a == b
        only.update(f"only kapi: {p} {t}" for p, t in a - b)
        only.update(f"only kube-derive: {p} {t}" for p, t in b - a)
    print(f"same names, scope, short names, printer columns, subresources: checked; "
          f"identical spec and status paths and types: {same} of {len(kapi)}")
    for line, n in sorted(only.items()):
        print(f"  {line} (x{n})")


def main() -> None:
    if len(sys.argv) == 4 and sys.argv[1] == "compare":
        compare(sys.argv[2], sys.argv[3])
        return
    if len(sys.argv) == 3 and sys.argv[1] == "breakdown":
        breakdown(sys.argv[2])
        return
    out = pathlib.Path(sys.argv[1])
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 50
    sides = (
        ("kapi-crs", KAPI, "Wire, Schema"),
        ("kube-crs", KUBE, "Serialize, Deserialize, JsonSchema"),
        ("plain-crs", PLAIN, "Serialize, Deserialize"),
    )
    for side, template, derives in sides:
        src = out / side / "src"
        src.mkdir(parents=True, exist_ok=True)
        for old in src.glob("*.rs"):
            old.unlink()
        modules = []
        for i in range(count):
            module = f"widget{i:02}"
            (src / f"{module}.rs").write_text(render(template, derives, f"Widget{i:02}", f"wd{i:02}"))
            modules.append(module)
        lib = f"//! {count} generated custom resources.\n\n"
        lib += "".join(f"pub mod {m};\n" for m in modules)
        (src / "lib.rs").write_text(lib)


if __name__ == "__main__":
    main()
