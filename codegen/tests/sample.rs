//! Samples over the real corpus (`$KAPI_SPEC_CORPUS`, default `<workspace>/../shared/specs`):
//! every served kind of v1.36 and of the nine CRDs gets a deterministic sample in every variant,
//! and each sample passes an independent schema checker that also round-trips special values
//! through the runtime types they map to.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use kapi_codegen::load_inputs;
use kapi_codegen::model::{Gvk, ListType, Model, Schema, SchemaType, Scope};
use kapi_codegen::sample::{
    MICRO_TIME_SAMPLE, QUANTITY_PATTERN, Variant, sample_definition, sample_kind,
};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

const VARIANTS: [Variant; 3] = [Variant::Full, Variant::Minimal, Variant::Empty];

const CRDS: [&str; 9] = [
    "argo-workflows-v4.1.2_full_argoproj.io_workflows.yaml",
    "argo-workflows-v4.1.2_minimal_argoproj.io_workflows.yaml",
    "cert-manager-v1.21.1_cert-manager.io_certificates.yaml",
    "cert-manager-v1.21.1_cert-manager.io_issuers.yaml",
    "gateway-api-v1.6.1_gateway.networking.k8s.io_gateways.yaml",
    "gateway-api-v1.6.1_gateway.networking.k8s.io_httproutes.yaml",
    "prometheus-operator-v0.93.0_monitoring.coreos.com_alertmanagers.yaml",
    "prometheus-operator-v0.93.0_monitoring.coreos.com_prometheusrules.yaml",
    "prometheus-operator-v0.93.0_monitoring.coreos.com_servicemonitors.yaml",
];

fn corpus() -> PathBuf {
    match std::env::var_os("KAPI_SPEC_CORPUS") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/specs"),
    }
}

fn load(rel: &str) -> Model {
    load_inputs(&[corpus().join(rel)]).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// A value must decode into the runtime type and encode back to exactly itself.
fn round_trips<T: DeserializeOwned + Serialize>(v: &Value) -> Result<(), String> {
    let decoded: T = serde_json::from_value(v.clone()).map_err(|e| e.to_string())?;
    let again = serde_json::to_value(&decoded).map_err(|e| e.to_string())?;
    if &again == v {
        Ok(())
    } else {
        Err(format!("re-encodes as {again}"))
    }
}

/// An independent validator: shapes, formats, enums, required fields, list-map keys, and no
/// property a structural schema would prune.
struct Checker<'m> {
    model: &'m Model,
    errors: Vec<String>,
    /// Runtime values must re-encode unchanged; off for [`Variant::Empty`], whose `[]` and `{}`
    /// the runtime types drop as Go's `omitempty` does.
    exact: bool,
}

impl Checker<'_> {
    fn fail(&mut self, at: &str, what: impl std::fmt::Display) {
        self.errors.push(format!("{at}: {what}"));
    }

    fn runtime<T: DeserializeOwned + Serialize>(&mut self, at: &str, v: &Value, ty: &str) {
        let outcome = if self.exact {
            round_trips::<T>(v)
        } else {
            decodes::<T>(v)
        };
        if let Err(e) = outcome {
            self.fail(at, format!("{v} is not a {ty} that round-trips: {e}"));
        }
    }

    fn check(&mut self, v: &Value, s: &Schema, at: &str) {
        if v.is_null() && s.nullable {
            return;
        }
        if !s.enum_values.is_empty() && !s.enum_values.contains(v) {
            self.fail(at, format!("{v} is not in the enum"));
        }
        match &s.ty {
            SchemaType::Any => {}
            SchemaType::Ref(name) => self.check_ref(v, name, at),
            SchemaType::Object(o) => {
                let Some(map) = v.as_object() else {
                    return self.fail(at, "expected an object");
                };
                for r in &o.required {
                    if !map.contains_key(r) {
                        self.fail(at, format!("required {r:?} missing"));
                    }
                }
                for (k, item) in map {
                    let here = format!("{at}/{k}");
                    if let Some(p) = o.properties.iter().find(|p| &p.name == k) {
                        self.check(item, &p.schema, &here);
                    } else if let Some(extra) = &o.additional_properties {
                        self.check(item, extra, &here);
                    } else if !s.ext.preserve_unknown_fields {
                        self.fail(&here, "not declared by the schema");
                    }
                }
            }
            SchemaType::Map(values) => match v.as_object() {
                Some(map) => {
                    for (k, item) in map {
                        self.check(item, values, &format!("{at}/{k}"));
                    }
                }
                None => self.fail(at, "expected a map"),
            },
            SchemaType::Array(items) => {
                let Some(list) = v.as_array() else {
                    return self.fail(at, "expected an array");
                };
                for (i, item) in list.iter().enumerate() {
                    let here = format!("{at}/{i}");
                    self.check(item, items, &here);
                    if s.ext.list_type == Some(ListType::Map) {
                        for key in &s.ext.list_map_keys {
                            // v1.28's CSIStorageCapacityList names a key its items lack.
                            if self.declares(items, key) && item.get(key).is_none() {
                                self.fail(&here, format!("list-map key {key:?} missing"));
                            }
                        }
                    }
                }
            }
            SchemaType::String { format } => {
                if !v.is_string() {
                    return self.fail(at, "expected a string");
                }
                match format.as_deref() {
                    Some("byte") => self.runtime::<kapi::ByteString>(at, v, "base64 string"),
                    Some("date-time") => self.runtime::<kapi::Time>(at, v, "Time"),
                    _ => {}
                }
            }
            SchemaType::Integer { format } => match (v.as_i64(), format.as_deref()) {
                (Some(i), Some("int32")) if i32::try_from(i).is_err() => {
                    self.fail(at, "outside int32")
                }
                (Some(_), _) => {}
                (None, _) => self.fail(at, "expected an integer"),
            },
            SchemaType::Number { .. } => {
                // A whole number would come back from f64 as `2.0`, which is not `2` in JSON.
                if !v.as_f64().is_some_and(|f| f.fract() != 0.0) {
                    self.fail(at, "expected a fractional number");
                }
            }
            SchemaType::Boolean => {
                if !v.is_boolean() {
                    self.fail(at, "expected a boolean");
                }
            }
            SchemaType::IntOrString => {
                self.runtime::<kapi::IntOrString>(at, v, "IntOrString");
                if s.constraints.get("pattern").and_then(Value::as_str) == Some(QUANTITY_PATTERN) {
                    self.runtime::<kapi::Quantity>(at, v, "Quantity");
                }
            }
        }
    }

    /// Whether an object schema (or the definition it refers to) declares a property.
    fn declares(&self, schema: &Schema, name: &str) -> bool {
        let resolved = match &schema.ty {
            SchemaType::Ref(target) => self.model.types.get(target),
            _ => Some(schema),
        };
        resolved
            .and_then(Schema::as_object)
            .is_some_and(|o| o.properties.iter().any(|p| p.name == name))
    }

    fn check_ref(&mut self, v: &Value, name: &str, at: &str) {
        let meta = "io.k8s.apimachinery.pkg.apis.meta.v1.";
        match name {
            "io.k8s.apimachinery.pkg.api.resource.Quantity" => {
                return self.runtime::<kapi::Quantity>(at, v, "Quantity");
            }
            "io.k8s.apimachinery.pkg.util.intstr.IntOrString" => {
                return self.runtime::<kapi::IntOrString>(at, v, "IntOrString");
            }
            "io.k8s.apimachinery.pkg.runtime.RawExtension" => {
                return self.runtime::<kapi::RawExtension>(at, v, "RawExtension");
            }
            _ => {}
        }
        match name.strip_prefix(meta) {
            Some("Time") => return self.runtime::<kapi::Time>(at, v, "Time"),
            Some("MicroTime") => {
                self.runtime::<kapi::MicroTime>(at, v, "MicroTime");
                if let Some(s) = v.as_str()
                    && !(s.len() == 27 && s.ends_with('Z') && s.as_bytes()[19] == b'.')
                {
                    self.fail(at, format!("{s} lacks six fractional digits"));
                }
                return;
            }
            Some("Duration") => return self.runtime::<kapi::Duration>(at, v, "Duration"),
            Some("FieldsV1") => return self.runtime::<kapi::meta::FieldsV1>(at, v, "FieldsV1"),
            Some("ObjectMeta") => self.runtime::<kapi::meta::ObjectMeta>(at, v, "ObjectMeta"),
            _ => {}
        }
        match self.model.types.get(name) {
            Some(def) => self.check(v, def, at),
            None => self.fail(at, format!("dangling ref {name}")),
        }
    }

    /// A kind sample: type meta from the GVK, ObjectMeta, and the rest by the schema. A CRD's
    /// root `metadata` is a bare object the API server reads as ObjectMeta.
    fn check_kind(&mut self, v: &Value, gvk: &Gvk, namespaced: bool, at: &str) {
        let Some(def) = self.model.kind_schema(gvk) else {
            return self.fail(at, "no definition");
        };
        let Some(map) = v.as_object() else {
            return self.fail(at, "not an object");
        };
        let api_version = gvk.group_version().to_string();
        if map.get("apiVersion").and_then(Value::as_str) != Some(api_version.as_str())
            || map.get("kind").and_then(Value::as_str) != Some(gvk.kind.as_str())
        {
            self.fail(at, "apiVersion/kind differ from the GVK");
        }
        let Some(meta) = map.get("metadata") else {
            return self.fail(at, "no metadata");
        };
        self.runtime::<kapi::meta::ObjectMeta>(&format!("{at}/metadata"), meta, "ObjectMeta");
        if meta.get("name").is_none() || meta.get("namespace").is_some() != namespaced {
            self.fail(at, format!("metadata name/namespace wrong: {meta}"));
        }
        let mut rest = v.clone();
        let inline_meta = def
            .as_object()
            .and_then(|o| o.properties.iter().find(|p| p.name == "metadata"))
            .is_some_and(|p| matches!(p.schema.ty, SchemaType::Object(_)));
        if inline_meta && let Some(m) = rest.as_object_mut() {
            m.insert("metadata".into(), Value::Object(Default::default()));
        }
        self.check(&rest, def, at);
    }
}

/// Samples and checks every served kind of a model in every variant; returns the Full samples.
fn check_served(rel: &str, model: &Model) -> BTreeMap<Gvk, Value> {
    let mut checker = Checker {
        model,
        errors: Vec::new(),
        exact: true,
    };
    let mut full = BTreeMap::new();
    for (kind, resource) in model.resources() {
        let gvk = &kind.gvk;
        for variant in VARIANTS {
            let at = format!("{rel} {gvk} {variant:?}");
            let sample = sample_kind(model, gvk, variant).unwrap_or_else(|e| panic!("{at}: {e}"));
            let again = sample_kind(model, gvk, variant).expect("second sample");
            assert_eq!(
                serde_json::to_string(&sample).expect("json"),
                serde_json::to_string(&again).expect("json"),
                "{at}: not deterministic"
            );
            let namespaced = resource.scope == Scope::Namespaced;
            checker.exact = variant != Variant::Empty;
            checker.check_kind(&sample, gvk, namespaced, &at);
            if variant == Variant::Full {
                full.insert(gvk.clone(), sample);
            }
        }
    }
    assert!(!full.is_empty(), "{rel}: no served kinds");
    let shown: Vec<&String> = checker.errors.iter().take(30).collect();
    assert!(
        checker.errors.is_empty(),
        "{rel}: {} schema violations, first: {shown:#?}",
        checker.errors.len()
    );
    full
}

fn get<'v>(v: &'v Value, path: &str) -> &'v Value {
    v.pointer(path)
        .unwrap_or_else(|| panic!("{path} missing in {v:#}"))
}

/// Every JSON value of a sample, for coverage checks.
fn leaves<'v>(v: &'v Value, out: &mut Vec<&'v Value>) {
    match v {
        Value::Object(m) => m.values().for_each(|x| leaves(x, out)),
        Value::Array(a) => a.iter().for_each(|x| leaves(x, out)),
        other => out.push(other),
    }
}

#[test]
fn every_served_kind_of_v1_36_has_valid_deterministic_samples() {
    let rel = "kubernetes/v1.36/swagger.json";
    let model = load(rel);
    let full = check_served(rel, &model);
    assert!(full.len() >= 90, "only {} served kinds", full.len());

    // Both int-or-string forms, both quantity forms and every special format appear somewhere.
    let mut all = Vec::new();
    for v in full.values() {
        leaves(v, &mut all);
    }
    for want in [
        Value::from(3),
        Value::from("25%"),
        Value::from("1500m"),
        Value::from("2Gi"),
        Value::from(MICRO_TIME_SAMPLE),
        Value::from("aGVsbG8="),
        Value::from(5_000_000_000_i64),
        Value::from(1.5),
    ] {
        assert!(all.contains(&&want), "no sample contains {want}");
    }
}

#[test]
fn every_served_kind_of_the_nine_crds_has_valid_deterministic_samples() {
    for file in CRDS {
        let rel = format!("crds/{file}");
        let model = load(&rel);
        check_served(&rel, &model);
    }
}

#[test]
fn every_definition_of_every_spec_samples_without_error() {
    let specs = [
        "kubernetes/v1.20.2/swagger.json",
        "kubernetes/v1.28/swagger.json",
        "kubernetes/v1.34/swagger.json",
        "kubernetes/v1.34/v3",
        "kubernetes/v1.36/swagger.json",
    ];
    for rel in specs {
        let model = load(rel);
        let mut checker = Checker {
            model: &model,
            errors: Vec::new(),
            exact: true,
        };
        for name in model.types.keys() {
            for variant in VARIANTS {
                let v = sample_definition(&model, name, variant)
                    .unwrap_or_else(|e| panic!("{rel} {name} {variant:?}: {e}"));
                checker.exact = variant != Variant::Empty;
                checker.check_ref(&v, name, &format!("{rel} {name} {variant:?}"));
            }
        }
        for (gvk, kind) in &model.kinds {
            let namespaced = kind
                .resource
                .as_ref()
                .is_some_and(|r| r.scope == Scope::Namespaced);
            let v = sample_kind(&model, gvk, Variant::Full)
                .unwrap_or_else(|e| panic!("{rel} {gvk}: {e}"));
            if kind.resource.is_some() {
                checker.exact = true;
                checker.check_kind(&v, gvk, namespaced, &format!("{rel} {gvk}"));
            }
        }
        let shown: Vec<&String> = checker.errors.iter().take(30).collect();
        assert!(checker.errors.is_empty(), "{rel}: {shown:#?}");
    }
}

#[test]
fn deployment_sample_covers_containers_quantities_and_int_or_string() {
    let model = load("kubernetes/v1.36/swagger.json");
    let d = sample_kind(&model, &Gvk::new("apps", "v1", "Deployment"), Variant::Full)
        .expect("deployment sample");
    let container = get(&d, "/spec/template/spec/containers/0");
    assert!(get(container, "/name").is_string());
    let limits = get(container, "/resources/limits")
        .as_object()
        .expect("limits map");
    let (_, limit) = limits.iter().next().expect("one limit");
    round_trips::<kapi::Quantity>(limit).expect("limit is a canonical quantity");
    let surge = get(&d, "/spec/strategy/rollingUpdate/maxSurge");
    let unavailable = get(&d, "/spec/strategy/rollingUpdate/maxUnavailable");
    round_trips::<kapi::IntOrString>(surge).expect("maxSurge");
    round_trips::<kapi::IntOrString>(unavailable).expect("maxUnavailable");
    assert_ne!(
        surge.is_number(),
        unavailable.is_number(),
        "the two int-or-string fields should show both forms: {surge} {unavailable}"
    );

    let meta = get(&d, "/metadata");
    for key in [
        "name",
        "namespace",
        "labels",
        "annotations",
        "creationTimestamp",
        "resourceVersion",
        "uid",
        "generation",
        "ownerReferences",
        "finalizers",
    ] {
        assert!(meta.get(key).is_some(), "metadata.{key} missing: {meta:#}");
    }
    assert!(get(meta, "/managedFields/0/fieldsV1").is_object());
    round_trips::<kapi::meta::ObjectMeta>(meta).expect("metadata round-trips");

    // The template's own metadata is an ObjectMeta too, without a namespace of its own.
    let template_meta = get(&d, "/spec/template/metadata");
    assert!(template_meta.get("labels").is_some());
    assert!(template_meta.get("namespace").is_none());

    // A list's items are Deployments, which always write their type meta and metadata.
    let list = sample_kind(
        &model,
        &Gvk::new("apps", "v1", "DeploymentList"),
        Variant::Full,
    )
    .expect("list sample");
    assert_eq!(get(&list, "/kind"), "DeploymentList");
    assert_eq!(get(&list, "/items/0/apiVersion"), "apps/v1");
    assert_eq!(get(&list, "/items/0/kind"), "Deployment");
    assert_eq!(get(&list, "/items/0/metadata/namespace"), "sample-ns");

    let minimal = sample_kind(
        &model,
        &Gvk::new("apps", "v1", "Deployment"),
        Variant::Minimal,
    )
    .expect("minimal");
    let keys: BTreeSet<&str> = minimal
        .as_object()
        .expect("object")
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(keys, BTreeSet::from(["apiVersion", "kind", "metadata"]));
}

#[test]
fn httproute_sample_takes_path_type_from_its_enum() {
    let model = load("crds/gateway-api-v1.6.1_gateway.networking.k8s.io_httproutes.yaml");
    let gvk = Gvk::new("gateway.networking.k8s.io", "v1", "HTTPRoute");
    let route = sample_kind(&model, &gvk, Variant::Full).expect("httproute sample");
    assert_eq!(get(&route, "/apiVersion"), "gateway.networking.k8s.io/v1");
    let path_type = get(&route, "/spec/rules/0/matches/0/path/type");
    let schema = model.kind_schema(&gvk).expect("schema");
    let enum_values = ["spec", "rules", "matches", "path", "type"]
        .iter()
        .try_fold(schema, |s, name| {
            let s = match &s.ty {
                SchemaType::Array(items) => items.as_ref(),
                _ => s,
            };
            s.as_object()?
                .properties
                .iter()
                .find(|p| p.name == *name)
                .map(|p| &p.schema)
        })
        .expect("path.type schema")
        .enum_values
        .clone();
    assert!(!enum_values.is_empty());
    assert_eq!(path_type, &enum_values[0]);
    assert_eq!(get(&route, "/metadata/namespace"), "sample-ns");
}

#[test]
fn microtime_and_lease_fields_use_their_runtime_forms() {
    let model = load("kubernetes/v1.36/swagger.json");
    let lease = sample_kind(
        &model,
        &Gvk::new("coordination.k8s.io", "v1", "Lease"),
        Variant::Full,
    )
    .expect("lease");
    assert_eq!(get(&lease, "/spec/renewTime"), MICRO_TIME_SAMPLE);
    round_trips::<kapi::MicroTime>(get(&lease, "/spec/renewTime")).expect("MicroTime");
    let namespace =
        sample_kind(&model, &Gvk::new("", "v1", "Namespace"), Variant::Full).expect("namespace");
    assert!(get(&namespace, "/metadata").get("namespace").is_none());
}

type RoundTrip = fn(&Value) -> Result<(), String>;

/// Decodes without comparing: for the Empty variant, where Go-style `omitempty` fields may drop
/// `[]` and `{}`.
fn decodes<T: DeserializeOwned>(v: &Value) -> Result<(), String> {
    serde_json::from_value::<T>(v.clone())
        .map(drop)
        .map_err(|e| e.to_string())
}

#[test]
fn runtime_meta_types_round_trip_samples_of_their_definitions() {
    use kapi::meta;
    let model = load("kubernetes/v1.36/swagger.json");
    let m = "io.k8s.apimachinery.pkg.apis.meta.v1.";
    let cases: [(&str, RoundTrip, RoundTrip); 17] = [
        (
            "ObjectMeta",
            round_trips::<meta::ObjectMeta>,
            decodes::<meta::ObjectMeta>,
        ),
        (
            "ListMeta",
            round_trips::<meta::ListMeta>,
            decodes::<meta::ListMeta>,
        ),
        (
            "OwnerReference",
            round_trips::<meta::OwnerReference>,
            decodes::<meta::OwnerReference>,
        ),
        (
            "ManagedFieldsEntry",
            round_trips::<meta::ManagedFieldsEntry>,
            decodes::<meta::ManagedFieldsEntry>,
        ),
        (
            "LabelSelector",
            round_trips::<meta::LabelSelector>,
            decodes::<meta::LabelSelector>,
        ),
        (
            "LabelSelectorRequirement",
            round_trips::<meta::LabelSelectorRequirement>,
            decodes::<meta::LabelSelectorRequirement>,
        ),
        (
            "Condition",
            round_trips::<meta::Condition>,
            decodes::<meta::Condition>,
        ),
        (
            "Status",
            round_trips::<meta::Status>,
            decodes::<meta::Status>,
        ),
        (
            "StatusDetails",
            round_trips::<meta::StatusDetails>,
            decodes::<meta::StatusDetails>,
        ),
        (
            "StatusCause",
            round_trips::<meta::StatusCause>,
            decodes::<meta::StatusCause>,
        ),
        (
            "DeleteOptions",
            round_trips::<meta::DeleteOptions>,
            decodes::<meta::DeleteOptions>,
        ),
        (
            "Preconditions",
            round_trips::<meta::Preconditions>,
            decodes::<meta::Preconditions>,
        ),
        (
            "APIResource",
            round_trips::<meta::APIResource>,
            decodes::<meta::APIResource>,
        ),
        (
            "APIResourceList",
            round_trips::<meta::APIResourceList>,
            decodes::<meta::APIResourceList>,
        ),
        (
            "APIGroup",
            round_trips::<meta::APIGroup>,
            decodes::<meta::APIGroup>,
        ),
        (
            "APIGroupList",
            round_trips::<meta::APIGroupList>,
            decodes::<meta::APIGroupList>,
        ),
        (
            "APIVersions",
            round_trips::<meta::APIVersions>,
            decodes::<meta::APIVersions>,
        ),
    ];
    // Where a runtime type knowingly re-encodes a sample differently, and why. Each entry must
    // still differ, so a fix shows up here as a failure asking to drop the entry.
    let deviations: [(&str, Variant, &str); 2] = [
        (
            "Status",
            Variant::Minimal,
            "Go writes the struct `metadata` even when empty, and kapi follows",
        ),
        (
            "APIGroup",
            Variant::Minimal,
            "Go writes the struct `preferredVersion` even when empty, and kapi follows",
        ),
    ];
    let mut failures = Vec::new();
    for (short, exact, decode) in cases {
        let name = format!("{m}{short}");
        for variant in VARIANTS {
            let v = sample_definition(&model, &name, variant)
                .unwrap_or_else(|e| panic!("{name} {variant:?}: {e}"));
            let check = if variant == Variant::Empty {
                decode
            } else {
                exact
            };
            let known = deviations
                .iter()
                .find(|(n, var, _)| *n == short && *var == variant);
            match (check(&v), known) {
                (Ok(()), None) => {}
                (Err(e), None) => {
                    failures.push(format!("{short} {variant:?}: {e}\n  sample: {v}"));
                }
                (Err(_), Some(_)) => {
                    // The deviation holds, but the sample must still decode.
                    if let Err(e) = decode(&v) {
                        failures.push(format!("{short} {variant:?} does not decode: {e}"));
                    }
                }
                (Ok(()), Some((_, _, why))) => {
                    failures.push(format!(
                        "{short} {variant:?} now round-trips ({why}): drop it"
                    ));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}
