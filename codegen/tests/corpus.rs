//! Corpus tests: the real upstream specs and CRDs under `$KAPI_SPEC_CORPUS` (default
//! `<workspace>/../shared/specs`) load into the expected kinds and resources.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::Instant;

use kapi_codegen::load_inputs;
use kapi_codegen::model::{Gvk, Model, Schema, SchemaType, Scope, Verb};

fn corpus() -> PathBuf {
    match std::env::var_os("KAPI_SPEC_CORPUS") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/specs"),
    }
}

fn load(rel: &str) -> Model {
    let path = corpus().join(rel);
    let start = Instant::now();
    let model = load_inputs(&[&path]).unwrap_or_else(|e| panic!("{rel}: {e}"));
    eprintln!("loaded {rel} in {:?}", start.elapsed());
    model
}

#[test]
fn swagger_files_load_with_the_documented_gvk_counts() {
    let cases = [
        ("kubernetes/v1.20.2/swagger.json", 283, 654),
        ("kubernetes/v1.28/swagger.json", 262, 570),
        ("kubernetes/v1.34/swagger.json", 305, 730),
        ("kubernetes/v1.36/swagger.json", 311, 771),
    ];
    for (rel, gvks, definitions) in cases {
        let model = load(rel);
        assert_eq!(model.kinds.len(), gvks, "{rel}: distinct GVKs");
        assert_eq!(model.types.len(), definitions, "{rel}: definitions");
        for (kind, _) in model.resources() {
            assert!(
                model
                    .kind_schema(&kind.gvk)
                    .and_then(Schema::as_object)
                    .is_some(),
                "{rel}: served kind {} has an object definition",
                kind.gvk
            );
        }
    }
}

#[test]
fn built_in_spot_checks() {
    let v134 = load("kubernetes/v1.34/swagger.json");
    let deployment = v134.kinds[&Gvk::new("apps", "v1", "Deployment")]
        .resource
        .as_ref()
        .expect("deployments are served");
    assert_eq!(deployment.plural, "deployments");
    assert_eq!(deployment.scope, Scope::Namespaced);
    assert_eq!(deployment.verbs, Verb::ALL.into_iter().collect());
    assert_eq!(
        deployment.subresources.keys().collect::<Vec<_>>(),
        ["scale", "status"]
    );
    assert_eq!(
        deployment.subresources["scale"].kind,
        Some(Gvk::new("autoscaling", "v1", "Scale"))
    );

    let namespace = v134.kinds[&Gvk::new("", "v1", "Namespace")]
        .resource
        .as_ref()
        .expect("namespaces are served");
    assert_eq!(namespace.scope, Scope::Cluster);
    assert!(!namespace.verbs.contains(&Verb::DeleteCollection));

    let pod = v134.kinds[&Gvk::new("", "v1", "Pod")]
        .resource
        .as_ref()
        .expect("pods");
    for sub in ["eviction", "exec", "log", "status"] {
        assert!(pod.subresources.contains_key(sub), "pods/{sub}");
    }
    assert_eq!(
        pod.subresources["exec"].verbs,
        [Verb::Create, Verb::Get].into_iter().collect(),
        "connect maps to the discovery verbs of its HTTP methods"
    );

    // Meta kinds are stamped on every group-version but are not resources.
    for gvk in [
        Gvk::new("apps", "v1", "DeleteOptions"),
        Gvk::new("apps", "v1", "WatchEvent"),
        Gvk::new("autoscaling", "v1", "Scale"),
    ] {
        assert!(v134.kinds[&gvk].resource.is_none(), "{gvk}");
    }
    assert_eq!(
        v134.types["io.k8s.apimachinery.pkg.util.intstr.IntOrString"].ty,
        SchemaType::IntOrString
    );

    let v120 = load("kubernetes/v1.20.2/swagger.json");
    let ingress = v120.kinds[&Gvk::new("extensions", "v1beta1", "Ingress")]
        .resource
        .as_ref()
        .expect("extensions/v1beta1 ingresses are served in 1.20");
    assert_eq!(ingress.plural, "ingresses");
    assert!(ingress.subresources.contains_key("status"));
}

fn strip_defaults(s: &mut Schema) {
    s.default = None;
    match &mut s.ty {
        SchemaType::Object(o) => {
            o.properties
                .iter_mut()
                .for_each(|p| strip_defaults(&mut p.schema));
            if let Some(extra) = &mut o.additional_properties {
                strip_defaults(extra);
            }
        }
        SchemaType::Map(inner) | SchemaType::Array(inner) => strip_defaults(inner),
        _ => {}
    }
}

/// v3 adds zero-value `default`s (`""`, `{}`) that upstream's v2 omits; every default v2 has must
/// be in v3 too.
fn defaults(s: &Schema, at: String, out: &mut BTreeSet<(String, String)>) {
    if let Some(d) = &s.default {
        out.insert((at.clone(), d.to_string()));
    }
    match &s.ty {
        SchemaType::Object(o) => {
            for p in &o.properties {
                defaults(&p.schema, format!("{at}/{}", p.name), out);
            }
        }
        SchemaType::Map(inner) | SchemaType::Array(inner) => {
            defaults(inner, format!("{at}/*"), out)
        }
        _ => {}
    }
}

#[test]
fn v134_openapi3_folder_equals_swagger() {
    let v2 = load("kubernetes/v1.34/swagger.json");
    let v3 = load("kubernetes/v1.34/v3");
    assert_eq!(v3.kinds, v2.kinds, "kinds and resources");
    assert_eq!(
        v3.types.keys().collect::<Vec<_>>(),
        v2.types.keys().collect::<Vec<_>>()
    );
    let (mut v2_defaults, mut v3_defaults) = (BTreeSet::new(), BTreeSet::new());
    for (name, schema) in &v2.types {
        defaults(schema, name.clone(), &mut v2_defaults);
        defaults(&v3.types[name], name.clone(), &mut v3_defaults);
        let (mut a, mut b) = (schema.clone(), v3.types[name].clone());
        strip_defaults(&mut a);
        strip_defaults(&mut b);
        assert_eq!(a, b, "{name}");
    }
    assert!(v2_defaults.is_subset(&v3_defaults));
    assert!(v3_defaults.len() > v2_defaults.len());
}

/// A served kind: GVK as printed, plural, subresources.
type Served<'a> = (&'a str, &'a str, &'a [&'a str]);

#[test]
fn crds_load_with_their_kinds_and_versions() {
    let cases: [(&str, &[Served]); 9] = [
        (
            "argo-workflows-v4.1.2_full_argoproj.io_workflows.yaml",
            &[("argoproj.io/v1alpha1 Workflow", "workflows", &[])],
        ),
        (
            "argo-workflows-v4.1.2_minimal_argoproj.io_workflows.yaml",
            &[("argoproj.io/v1alpha1 Workflow", "workflows", &[])],
        ),
        (
            "cert-manager-v1.21.1_cert-manager.io_certificates.yaml",
            &[(
                "cert-manager.io/v1 Certificate",
                "certificates",
                &["status"],
            )],
        ),
        (
            "cert-manager-v1.21.1_cert-manager.io_issuers.yaml",
            &[("cert-manager.io/v1 Issuer", "issuers", &["status"])],
        ),
        (
            "prometheus-operator-v0.93.0_monitoring.coreos.com_servicemonitors.yaml",
            &[(
                "monitoring.coreos.com/v1 ServiceMonitor",
                "servicemonitors",
                &["status"],
            )],
        ),
        (
            "prometheus-operator-v0.93.0_monitoring.coreos.com_prometheusrules.yaml",
            &[(
                "monitoring.coreos.com/v1 PrometheusRule",
                "prometheusrules",
                &["status"],
            )],
        ),
        (
            "prometheus-operator-v0.93.0_monitoring.coreos.com_alertmanagers.yaml",
            &[(
                "monitoring.coreos.com/v1 Alertmanager",
                "alertmanagers",
                &["scale", "status"],
            )],
        ),
        (
            "gateway-api-v1.6.1_gateway.networking.k8s.io_httproutes.yaml",
            &[
                (
                    "gateway.networking.k8s.io/v1 HTTPRoute",
                    "httproutes",
                    &["status"],
                ),
                (
                    "gateway.networking.k8s.io/v1beta1 HTTPRoute",
                    "httproutes",
                    &["status"],
                ),
            ],
        ),
        (
            "gateway-api-v1.6.1_gateway.networking.k8s.io_gateways.yaml",
            &[
                (
                    "gateway.networking.k8s.io/v1 Gateway",
                    "gateways",
                    &["status"],
                ),
                (
                    "gateway.networking.k8s.io/v1beta1 Gateway",
                    "gateways",
                    &["status"],
                ),
            ],
        ),
    ];
    for (file, want) in cases {
        let model = load(&format!("crds/{file}"));
        let got: Vec<(String, &str, Vec<&str>)> = model
            .resources()
            .map(|(k, r)| {
                (
                    k.gvk.to_string(),
                    r.plural.as_str(),
                    r.subresources.keys().map(String::as_str).collect(),
                )
            })
            .collect();
        let want: Vec<(String, &str, Vec<&str>)> = want
            .iter()
            .map(|(g, p, s)| (g.to_string(), *p, s.to_vec()))
            .collect();
        assert_eq!(got, want, "{file}");
        assert!(model.dangling_refs().is_empty());
    }

    let routes = load("crds/gateway-api-v1.6.1_gateway.networking.k8s.io_httproutes.yaml");
    let v1 = routes.kinds[&Gvk::new("gateway.networking.k8s.io", "v1", "HTTPRoute")].clone();
    assert_eq!(v1.definition, "io.k8s.networking.gateway.v1.HTTPRoute");
    let crd = v1.resource.and_then(|r| r.crd).expect("crd data");
    assert!(crd.served && crd.storage);
    let alertmanagers =
        load("crds/prometheus-operator-v0.93.0_monitoring.coreos.com_alertmanagers.yaml");
    let scale = alertmanagers.kinds[&Gvk::new("monitoring.coreos.com", "v1", "Alertmanager")]
        .resource
        .as_ref()
        .and_then(|r| r.subresources["scale"].scale.clone())
        .expect("scale paths");
    assert_eq!(scale.spec_replicas, ".spec.replicas");
    assert_eq!(scale.status_replicas, ".status.replicas");
    assert_eq!(scale.label_selector.as_deref(), Some(".status.selector"));
}

#[test]
fn inputs_merge_and_disagreements_fail() {
    let root = corpus();
    let merged = load_inputs(&[
        root.join("kubernetes/v1.34/swagger.json"),
        root.join("crds/gateway-api-v1.6.1_gateway.networking.k8s.io_httproutes.yaml"),
    ])
    .expect("merge");
    assert_eq!(merged.kinds.len(), 305 + 2);
    let err = load_inputs(&[
        root.join("crds/argo-workflows-v4.1.2_full_argoproj.io_workflows.yaml"),
        root.join("crds/argo-workflows-v4.1.2_minimal_argoproj.io_workflows.yaml"),
    ])
    .expect_err("two different Workflow schemas");
    let msg = err.to_string();
    assert!(
        msg.starts_with("conflicting definitions of io.argoproj.v1alpha1.Workflow in ")
            && msg.contains("_full_")
            && msg.contains("_minimal_"),
        "{msg}"
    );
}
