//! `#[derive(CustomResource)]` end to end: sample kinds (one mirroring cert-manager's
//! Certificate) produce CRDs equal to the committed YAML under `tests/crd_golden/`, pass the
//! structural validator, parse with the real `kubectl`, register, carry merge metadata, and
//! offer condition helpers; versions combine and convert through a hub; oversized CRDs are
//! trimmed with a warning.
//!
//! Regenerate the goldens with `KAPI_BLESS=1 cargo test -p kapi-runtime --test custom_resource`.

// Helpers outside `#[test]` functions unwrap too: a failure here is a test failure.
#![allow(clippy::unwrap_used)]
// Repeated `printer_column(name = .., type = "string", ..)` attributes are distinct columns,
// not the duplicates this lint looks for.
#![allow(clippy::duplicated_attributes)]

use std::path::PathBuf;

use kapi::crd::{
    ANNOTATION_BUDGET, ConditionsExt, Conversions, CustomResourceDefinition, Hub, MergeError,
    fit_to_budget, merge_versions, round_trip, validate_structural,
};
use kapi::meta::{Condition, ConditionStatus, LabelSelector};
use kapi::schema::JSONSchemaProps;
use kapi::{CustomResource, Duration, IntOrString, Quantity, Resource, Schema, Time};
use serde::{Deserialize, Serialize};
use serde_json::json;

mod cert {
    use super::*;

    /// A Certificate is a request for a signed X.509 certificate from an issuer.
    #[derive(Clone, Debug, PartialEq, Serialize, Deserialize, CustomResource)]
    #[serde(rename_all = "camelCase")]
    #[resource(
        group = "cert-manager.io",
        version = "v1",
        status = "CertificateStatus",
        short_names = ["cert", "certs"],
        categories = ["cert-manager"],
        derive = ["PartialEq"]
    )]
    #[resource(printer_column(
        name = "Ready",
        type = "string",
        json_path = ".status.conditions[?(@.type==\"Ready\")].status"
    ))]
    #[resource(printer_column(name = "Secret", type = "string", json_path = ".spec.secretName"))]
    #[resource(printer_column(
        name = "Age",
        type = "date",
        json_path = ".metadata.creationTimestamp",
        description = "Time since creation"
    ))]
    #[schema(validation(
        rule = "has(self.commonName) || size(self.dnsNames) > 0",
        message = "commonName or dnsNames must be set"
    ))]
    pub(crate) struct CertificateSpec {
        /// Common name to include in the certificate; at most 64 characters.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[schema(max_length = 64)]
        pub common_name: Option<String>,
        /// DNS subject alternative names.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        #[schema(list_type = "set")]
        pub dns_names: Vec<String>,
        /// Name of the Secret the signed certificate is stored in.
        pub secret_name: String,
        /// The issuer to obtain the certificate from.
        pub issuer_ref: IssuerReference,
        /// Requested lifetime of the certificate.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub duration: Option<Duration>,
        /// How long before expiry the certificate is renewed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub renew_before: Option<Duration>,
        /// Key usages requested.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        pub usages: Vec<KeyUsage>,
        /// Private key options.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub private_key: Option<PrivateKey>,
        /// How many old CertificateRequests to keep.
        #[serde(default = "default_history")]
        #[schema(minimum = 1)]
        pub revision_history_limit: i32,
    }

    fn default_history() -> i32 {
        1
    }

    /// A reference to an Issuer or ClusterIssuer.
    #[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Schema)]
    #[schema(map_type = "atomic")]
    pub(crate) struct IssuerReference {
        /// Name of the issuer.
        pub name: String,
        /// Kind of the issuer: Issuer or ClusterIssuer.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub kind: Option<String>,
        /// Group of the issuer.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub group: Option<String>,
    }

    /// A key usage of an X.509 certificate.
    #[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Schema)]
    #[serde(rename_all = "kebab-case")]
    pub(crate) enum KeyUsage {
        /// Signing.
        DigitalSignature,
        /// Key encipherment.
        KeyEncipherment,
        /// TLS server.
        ServerAuth,
        /// TLS client.
        ClientAuth,
    }

    /// Options for the private key.
    #[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Schema)]
    #[serde(rename_all = "camelCase")]
    pub(crate) struct PrivateKey {
        /// Key algorithm.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub algorithm: Option<KeyAlgorithm>,
        /// Key size in bits.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[schema(minimum = 256, maximum = 8192)]
        pub size: Option<i32>,
        /// Whether the key is rotated on renewal.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub rotation_policy: Option<String>,
    }

    /// Private key algorithms.
    #[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Schema)]
    pub(crate) enum KeyAlgorithm {
        /// RSA.
        #[serde(rename = "RSA")]
        Rsa,
        /// ECDSA.
        #[serde(rename = "ECDSA")]
        Ecdsa,
        /// Ed25519.
        Ed25519,
    }

    /// The observed state of a Certificate.
    #[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, Schema)]
    #[serde(rename_all = "camelCase")]
    pub(crate) struct CertificateStatus {
        /// Current conditions; `Ready` says whether the certificate is valid and current.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        pub conditions: Vec<Condition>,
        /// Expiry of the current certificate.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub not_after: Option<Time>,
        /// Incremented each time the certificate is issued.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub revision: Option<i32>,
    }
}

mod widget {
    use super::*;

    /// Widgets are scalable things.
    #[derive(Clone, Debug, Serialize, Deserialize, CustomResource)]
    #[serde(rename_all = "camelCase")]
    #[resource(
        group = "example.com",
        version = "v1",
        kind = "Widget",
        cluster,
        status = "WidgetStatus"
    )]
    #[resource(scale(
        spec_replicas_path = ".spec.replicas",
        status_replicas_path = ".status.replicas",
        label_selector_path = ".status.selector"
    ))]
    #[resource(selectable_fields = [".spec.color"], deprecated, deprecation_warning = "use example.com/v2 Widget")]
    pub(crate) struct WidgetSpec {
        /// Desired replicas.
        #[serde(default)]
        pub replicas: i32,
        /// Colour.
        pub color: Color,
        /// Ports served, keyed by name.
        #[serde(default)]
        #[schema(list_type = "map", list_map_keys = ["name"])]
        pub ports: Vec<Port>,
        /// Memory limit.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub memory: Option<Quantity>,
        /// Surge.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub max_surge: Option<IntOrString>,
        /// Labels.
        #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
        pub labels: std::collections::BTreeMap<String, String>,
        /// Arbitrary settings.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub settings: Option<serde_json::Value>,
        /// Where the data comes from.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub source: Option<Source>,
        /// A ratio (floats need an explicit opt-in).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[schema(allow_float)]
        pub ratio: Option<f64>,
        #[serde(flatten)]
        pub extra: Extra,
    }

    /// Colours.
    #[derive(Clone, Debug, Serialize, Deserialize, Schema)]
    pub(crate) enum Color {
        /// Red.
        Red,
        /// Blue.
        Blue,
    }

    /// A named port.
    #[derive(Clone, Debug, Serialize, Deserialize, Schema)]
    #[serde(rename_all = "camelCase")]
    pub(crate) struct Port {
        /// Port name.
        pub name: String,
        /// Port number.
        #[schema(minimum = 1, maximum = 65535)]
        pub port: i32,
    }

    /// The source of a widget's data, internally tagged.
    #[derive(Clone, Debug, Serialize, Deserialize, Schema)]
    #[serde(tag = "type")]
    pub(crate) enum Source {
        /// From git.
        Git {
            /// Repository URL.
            url: String,
        },
        /// From S3.
        S3 {
            /// Bucket.
            bucket: String,
            /// Object key prefix.
            #[serde(default)]
            prefix: Option<String>,
        },
        /// Nothing.
        Empty,
    }

    /// Flattened extras.
    #[derive(Clone, Debug, Default, Serialize, Deserialize, Schema)]
    pub(crate) struct Extra {
        /// Note.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub note: Option<String>,
    }

    /// Observed state.
    #[derive(Clone, Debug, Default, Serialize, Deserialize, Schema)]
    #[serde(rename_all = "camelCase")]
    pub(crate) struct WidgetStatus {
        /// Observed replicas.
        #[serde(default)]
        pub replicas: i32,
        /// Serialized selector.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub selector: Option<String>,
        /// Pod selector.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub pod_selector: Option<LabelSelector>,
        /// Conditions.
        #[serde(default)]
        pub conditions: Vec<kapi::meta::Condition>,
    }
}

fn golden(name: &str, crd: &CustomResourceDefinition) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/crd_golden")
        .join(format!("{name}.yaml"));
    let yaml = serde_yaml_ng::to_string(crd).unwrap();
    if std::env::var_os("KAPI_BLESS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &yaml).unwrap();
    }
    let want = std::fs::read_to_string(&path).unwrap_or_else(|_| {
        panic!(
            "{} is missing; run with KAPI_BLESS=1 to write it",
            path.display()
        )
    });
    assert_eq!(
        yaml,
        want,
        "{name}: CRD differs from {}; KAPI_BLESS=1 regenerates",
        path.display()
    );
    // The committed YAML reads back to the same CRD.
    let parsed: CustomResourceDefinition = serde_yaml_ng::from_str(&want).unwrap();
    assert_eq!(&parsed, crd);
    kubectl_parses(&path);
}

/// `kubectl apply --dry-run=client` needs a server for discovery even with
/// `--validate=false`; `annotate --local` is the offline mode that reads the manifest and
/// decodes it as the CRD kind kubectl knows, so a malformed manifest fails here.
fn kubectl_parses(path: &std::path::Path) {
    let Ok(output) = std::process::Command::new("kubectl")
        .args(["annotate", "--local", "-o", "name", "-f"])
        .arg(path)
        .arg("checked=true")
        .output()
    else {
        return; // kubectl is not installed: nothing to check against.
    };
    assert!(
        output.status.success(),
        "kubectl rejected {}: {}",
        path.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    let name = String::from_utf8_lossy(&output.stdout);
    assert!(
        name.starts_with("customresourcedefinition.apiextensions.k8s.io/"),
        "{name}"
    );
}

fn structural(crd: &CustomResourceDefinition) {
    for version in &crd.spec.versions {
        let schema = version
            .schema
            .as_ref()
            .and_then(|s| s.open_api_v3_schema.as_ref())
            .expect("schema");
        assert_eq!(validate_structural(schema), Ok(()), "{}", version.name);
    }
}

#[test]
fn certificate_crd_matches_golden_and_is_structural() {
    let (crd, warnings) = cert::Certificate::crd_with_warnings();
    assert!(warnings.is_empty());
    structural(&crd);
    golden("certificates.cert-manager.io", &crd);

    let schema = cert::Certificate::openapi_schema().unwrap();
    let spec = &schema.properties["spec"];
    assert_eq!(spec.required, ["secretName", "issuerRef"]);
    assert_eq!(
        spec.properties["dnsNames"]
            .x_kubernetes_list_type
            .as_deref(),
        Some("set")
    );
    assert_eq!(
        spec.properties["revisionHistoryLimit"].default,
        Some(json!(1))
    );
    assert_eq!(
        spec.properties["usages"].items_schema().unwrap().enum_,
        [
            json!("digital-signature"),
            json!("key-encipherment"),
            json!("server-auth"),
            json!("client-auth")
        ]
    );
    assert_eq!(
        spec.properties["privateKey"].properties["algorithm"].enum_,
        [json!("RSA"), json!("ECDSA"), json!("Ed25519")]
    );
    let conditions = &schema.properties["status"].properties["conditions"];
    assert_eq!(conditions.x_kubernetes_list_type.as_deref(), Some("map"));
    assert_eq!(conditions.x_kubernetes_list_map_keys, ["type"]);
    assert_eq!(crd.spec.names.short_names, ["cert", "certs"]);
    assert_eq!(crd.spec.versions[0].additional_printer_columns.len(), 3);
}

#[test]
fn widget_crd_matches_golden_and_is_structural() {
    let crd = widget::Widget::crd();
    structural(&crd);
    golden("widgets.example.com", &crd);

    let version = &crd.spec.versions[0];
    assert!(version.deprecated);
    assert_eq!(
        version.deprecation_warning.as_deref(),
        Some("use example.com/v2 Widget")
    );
    assert_eq!(crd.spec.scope, "Cluster");
    let scale = version
        .subresources
        .as_ref()
        .unwrap()
        .scale
        .as_ref()
        .unwrap();
    assert_eq!(
        scale.label_selector_path.as_deref(),
        Some(".status.selector")
    );
    let spec = serde_json::to_value(
        &version
            .schema
            .as_ref()
            .unwrap()
            .open_api_v3_schema
            .as_ref()
            .unwrap()
            .properties["spec"],
    )
    .unwrap();
    assert_eq!(spec["required"], json!(["color"]));
    assert_eq!(
        spec["properties"]["note"]["type"], "string",
        "flattened field"
    );
    assert_eq!(
        spec["properties"]["source"]["properties"]["type"]["enum"],
        json!(["Git", "S3", "Empty"])
    );
    assert_eq!(
        spec["properties"]["source"]["oneOf"][0],
        json!({"properties": {"type": {"enum": ["Git"]}}, "required": ["url"]})
    );
    assert_eq!(
        spec["properties"]["memory"]["x-kubernetes-int-or-string"],
        true
    );
    assert_eq!(
        spec["properties"]["settings"],
        json!({"description": "Arbitrary settings.", "x-kubernetes-preserve-unknown-fields": true})
    );
    assert_eq!(spec["properties"]["replicas"]["default"], json!(0));
}

#[test]
fn kinds_serialize_register_and_carry_merge_metadata() {
    let mut cert = cert::Certificate::new(
        "web",
        cert::CertificateSpec {
            common_name: None,
            dns_names: vec!["example.com".into()],
            secret_name: "web-tls".into(),
            issuer_ref: cert::IssuerReference {
                name: "le".into(),
                kind: None,
                group: None,
            },
            duration: None,
            renew_before: None,
            usages: vec![cert::KeyUsage::ServerAuth],
            private_key: None,
            revision_history_limit: 1,
        },
    );
    cert.metadata.namespace = Some("default".into());
    let value = serde_json::to_value(&cert).unwrap();
    assert_eq!(value["apiVersion"], "cert-manager.io/v1");
    assert_eq!(value["kind"], "Certificate");
    assert_eq!(value["spec"]["usages"], json!(["server-auth"]));
    assert!(value.get("status").is_none());
    let back: cert::Certificate = serde_json::from_value(value).unwrap();
    assert_eq!(back, cert);

    let mut registry = kapi::Registry::new();
    registry
        .register::<cert::Certificate>()
        .register::<widget::Widget>();
    let registered = registry
        .get("cert-manager.io", "v1", "certificates")
        .unwrap();
    let merge = registered.merge.expect("merge metadata");
    let spec = merge.field("spec").and_then(|f| f.ty).unwrap();
    assert_eq!(
        spec.field("dnsNames").unwrap().list_type,
        Some(kapi::merge::ListType::Set)
    );
    assert_eq!(
        spec.field("issuerRef").and_then(|f| f.ty).unwrap().map_type,
        Some(kapi::merge::MapType::Atomic)
    );
    let status = merge.field("status").and_then(|f| f.ty).unwrap();
    assert_eq!(status.field("conditions").unwrap().list_map_keys, ["type"]);
    assert!(merge.field("metadata").is_some());
    let ports = widget::Widget::merge_info()
        .unwrap()
        .field("spec")
        .and_then(|f| f.ty)
        .unwrap()
        .field("ports")
        .unwrap();
    assert_eq!(ports.list_map_keys, ["name"]);
    assert_eq!(ports.wrap, [kapi::merge::Wrap::List]);
    assert_eq!(cert::Certificate::info().short_names.len(), 2);
    let _list: cert::CertificateList = kapi::List::default();
}

#[test]
fn condition_helpers_stamp_generation_and_move_transition_time_only_on_change() {
    #[derive(Clone, Copy)]
    enum CertCondition {
        Ready,
        Issuing,
    }
    impl AsRef<str> for CertCondition {
        fn as_ref(&self) -> &str {
            match self {
                Self::Ready => "Ready",
                Self::Issuing => "Issuing",
            }
        }
    }
    impl From<CertCondition> for String {
        fn from(c: CertCondition) -> String {
            c.as_ref().to_owned()
        }
    }
    let t = |s: &str| s.parse::<Time>().unwrap();
    let mut widget = widget::Widget::new(
        "w",
        serde_json::from_value(json!({"color": "Red"})).unwrap(),
    );
    widget.metadata.generation = Some(4);
    assert!(!widget.is_condition_true(CertCondition::Ready));
    assert_eq!(
        widget.condition_status(CertCondition::Ready),
        ConditionStatus::Unknown
    );

    assert!(widget.set_condition_at(
        Condition::new(CertCondition::Ready, true, "Issued", ""),
        t("2024-01-01T00:00:00Z")
    ));
    let ready = widget.condition(CertCondition::Ready).unwrap();
    assert_eq!(ready.observed_generation, Some(4));
    assert_eq!(ready.last_transition_time, Some(t("2024-01-01T00:00:00Z")));
    assert!(widget.is_condition_true("Ready"));

    // Same status, new reason and generation: the transition time stays.
    widget.metadata.generation = Some(5);
    assert!(widget.set_condition_at(
        Condition::new(CertCondition::Ready, true, "Renewed", ""),
        t("2024-01-02T00:00:00Z")
    ));
    let ready = widget.condition(CertCondition::Ready).unwrap();
    assert_eq!(
        (ready.reason.as_str(), ready.observed_generation),
        ("Renewed", Some(5))
    );
    assert_eq!(ready.last_transition_time, Some(t("2024-01-01T00:00:00Z")));
    // Nothing changed: false.
    assert!(!widget.set_condition_at(
        Condition::new(CertCondition::Ready, true, "Renewed", ""),
        t("2024-01-03T00:00:00Z")
    ));
    // The status flips: the transition time moves.
    assert!(widget.set_condition_at(
        Condition::new(CertCondition::Ready, false, "Expired", ""),
        t("2024-01-04T00:00:00Z")
    ));
    assert_eq!(
        widget
            .condition(CertCondition::Ready)
            .unwrap()
            .last_transition_time,
        Some(t("2024-01-04T00:00:00Z"))
    );
    // An explicit observedGeneration wins over metadata.generation.
    widget.set_condition_at(
        Condition::new(CertCondition::Issuing, true, "Pending", "").with_observed_generation(2),
        t("2024-01-04T00:00:00Z"),
    );
    assert_eq!(
        widget
            .condition(CertCondition::Issuing)
            .unwrap()
            .observed_generation,
        Some(2)
    );
    assert!(widget.remove_condition(CertCondition::Issuing));
    assert!(!widget.remove_condition(CertCondition::Issuing));
}

#[test]
fn oversized_crd_is_trimmed_under_the_budget_with_a_warning() {
    let mut crd = cert::Certificate::crd();
    let mut nodes = 0;
    fn inflate(s: &mut JSONSchemaProps, nodes: &mut usize) {
        s.description = Some("This description is long. ".repeat(600));
        *nodes += 1;
        // Root metadata may carry nothing but its type; the validator would say so.
        for (name, child) in &mut s.properties {
            if name != "metadata" {
                inflate(child, nodes);
            }
        }
    }
    let root = crd.spec.versions[0]
        .schema
        .as_mut()
        .unwrap()
        .open_api_v3_schema
        .as_mut()
        .unwrap();
    inflate(root, &mut nodes);
    let before = serde_json::to_vec(&crd).unwrap().len();
    assert!(before > ANNOTATION_BUDGET, "{before}");
    let warnings = fit_to_budget(&mut crd);
    let after = serde_json::to_vec(&crd).unwrap().len();
    assert!(after <= ANNOTATION_BUDGET, "{after}");
    let [warning] = warnings.as_slice() else {
        panic!("{warnings:?}")
    };
    assert_eq!((warning.before, warning.after), (before, after));
    assert!(warning.trimmed > 0 && !warning.still_too_large());
    assert!(
        warning
            .to_string()
            .contains("over the 262144-byte annotation budget"),
        "{warning}"
    );
    // Trimming stops once the CRD fits and starts deepest: the root keeps its whole text,
    // a leaf three levels down is cut to its first sentence.
    let root = crd.spec.versions[0]
        .schema
        .as_ref()
        .unwrap()
        .open_api_v3_schema
        .as_ref()
        .unwrap();
    assert_eq!(root.description.as_ref().map(String::len), Some(26 * 600));
    let leaf = &root.properties["spec"].properties["privateKey"].properties["size"];
    assert_eq!(
        leaf.description.as_deref(),
        Some("This description is long.")
    );
    structural(&crd);
    // A CRD within the budget is left alone.
    let mut small = cert::Certificate::crd();
    assert!(fit_to_budget(&mut small).is_empty());
    assert_eq!(small, cert::Certificate::crd());
    assert!(nodes > 10);
}

mod v1alpha1 {
    use super::*;

    /// Old gadgets.
    #[derive(Clone, Debug, PartialEq, Serialize, Deserialize, CustomResource)]
    #[resource(group = "example.com", version = "v1alpha1", storage = false, deprecated, derive = ["PartialEq"])]
    pub(crate) struct GadgetSpec {
        /// Size in "S", "M" or "L".
        pub size: String,
    }
}

mod v1 {
    use super::*;

    /// Gadgets.
    #[derive(Clone, Debug, PartialEq, Serialize, Deserialize, CustomResource)]
    #[resource(group = "example.com", version = "v1", derive = ["PartialEq"])]
    pub(crate) struct GadgetSpec {
        /// Size in millimetres.
        pub size_mm: i32,
        /// The size as written in v1alpha1, kept so the round trip is lossless.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub legacy_size: Option<String>,
    }

    impl Hub for Gadget {}

    impl From<v1alpha1::Gadget> for Gadget {
        fn from(old: v1alpha1::Gadget) -> Self {
            let size_mm = match old.spec.size.as_str() {
                "S" => 10,
                "M" => 20,
                _ => 30,
            };
            Gadget {
                metadata: old.metadata,
                ..Gadget::new(
                    "",
                    GadgetSpec {
                        size_mm,
                        legacy_size: Some(old.spec.size),
                    },
                )
            }
        }
    }

    impl From<Gadget> for v1alpha1::Gadget {
        fn from(new: Gadget) -> Self {
            let size = new.spec.legacy_size.unwrap_or_else(|| {
                if new.spec.size_mm <= 10 {
                    "S"
                } else if new.spec.size_mm <= 20 {
                    "M"
                } else {
                    "L"
                }
                .to_owned()
            });
            v1alpha1::Gadget {
                metadata: new.metadata,
                ..v1alpha1::Gadget::new("", v1alpha1::GadgetSpec { size })
            }
        }
    }
}

#[test]
fn versions_merge_into_one_crd_and_convert_through_the_hub() {
    let (crd, warnings) = merge_versions(&[v1alpha1::Gadget::crd(), v1::Gadget::crd()]).unwrap();
    assert!(warnings.is_empty());
    let names: Vec<_> = crd
        .spec
        .versions
        .iter()
        .map(|v| (v.name.as_str(), v.storage, v.deprecated))
        .collect();
    assert_eq!(names, [("v1", true, false), ("v1alpha1", false, true)]);
    assert_eq!(crd.storage_version().unwrap().name, "v1");
    structural(&crd);
    golden("gadgets.example.com", &crd);

    assert_eq!(
        merge_versions(&[v1::Gadget::crd(), v1::Gadget::crd()]).unwrap_err(),
        MergeError::Duplicate("v1".into())
    );
    let mut unstored = v1alpha1::Gadget::crd();
    unstored.spec.versions[0].name = "v2".into();
    assert_eq!(
        merge_versions(&[v1alpha1::Gadget::crd(), unstored]).unwrap_err(),
        MergeError::Storage(0)
    );
    assert!(matches!(
        merge_versions(&[v1::Gadget::crd(), cert::Certificate::crd()]),
        Err(MergeError::Mismatch { field: "group", .. })
    ));

    // v1alpha1 -> v1 -> v1alpha1 gives the identical object.
    let mut old = v1alpha1::Gadget::new("g", v1alpha1::GadgetSpec { size: "M".into() });
    old.metadata.labels = [("a".to_owned(), "b".to_owned())].into();
    assert_eq!(round_trip::<_, v1::Gadget>(old.clone()), old);

    let conversions = Conversions::<v1::Gadget>::new().spoke::<v1alpha1::Gadget>();
    let stored = conversions
        .convert(serde_json::to_value(&old).unwrap(), "v1")
        .unwrap();
    assert_eq!(stored["apiVersion"], "example.com/v1");
    assert_eq!(stored["spec"], json!({"size_mm": 20, "legacy_size": "M"}));
    let served = conversions.convert(stored, "v1alpha1").unwrap();
    assert_eq!(served, serde_json::to_value(&old).unwrap());
    assert!(conversions.convert(served, "v9").is_err());
}

#[test]
fn deprecated_flag_uses_the_servers_default_warning() {
    let info = v1alpha1::Gadget::info();
    assert_eq!(
        info.lifecycle.warning.as_deref(),
        Some("example.com/v1alpha1 Gadget is deprecated")
    );
    let version = v1alpha1::Gadget::crd_version();
    assert!(version.deprecated);
    assert_eq!(version.deprecation_warning, None);
}

/// Rules the derive type-checks at compile time: typed by the fields they read, using
/// Kubernetes' libraries (regex, quantity, semver) and the lists macros, `oldSelf` in a transition
/// rule, a string `messageExpression`.
mod checked_rules {
    use super::*;

    #[derive(Clone, Debug, Serialize, Deserialize, Schema)]
    #[serde(rename_all = "camelCase")]
    #[schema(validation(rule = "self.name.matches('^[a-z]+$')"))]
    #[schema(validation(rule = "self.items.all(x, x.size() < 10)"))]
    #[schema(validation(
        rule = "!has(self.limit) || quantity(self.limit).compareTo(quantity('1Gi')) <= 0"
    ))]
    #[schema(validation(
        rule = "self.replicas >= oldSelf.replicas",
        message_expression = "'replicas may not go down to ' + string(self.replicas)"
    ))]
    #[schema(validation(
        rule = "!has(self.release) || semver(self.release, true).isGreaterThan(semver('1.0.0'))"
    ))]
    pub(crate) struct Pool {
        pub name: String,
        #[schema(max_items = 8)]
        pub items: Vec<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub limit: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub release: Option<String>,
        #[schema(validation(rule = "self >= 0"))]
        pub replicas: i32,
        #[serde(default)]
        #[schema(validation(rule = "self.all(k, k.startsWith('x-') && self[k] != '')"))]
        pub labels: std::collections::BTreeMap<String, String>,
        /// A type the derive cannot see into: its fields are checked when the CRD is applied.
        #[serde(default)]
        #[schema(validation(rule = "!has(self.note) || self.note != ''"))]
        pub extra: Option<super::widget::Extra>,
    }
}

#[test]
fn checked_rules_land_in_the_schema_unchanged() {
    let schema = serde_json::to_value(checked_rules::Pool::schema()).unwrap();
    let rules: Vec<&str> = schema["x-kubernetes-validations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["rule"].as_str().unwrap())
        .collect();
    assert_eq!(
        rules,
        [
            "self.name.matches('^[a-z]+$')",
            "self.items.all(x, x.size() < 10)",
            "!has(self.limit) || quantity(self.limit).compareTo(quantity('1Gi')) <= 0",
            "self.replicas >= oldSelf.replicas",
            "!has(self.release) || semver(self.release, true).isGreaterThan(semver('1.0.0'))",
        ]
    );
    assert_eq!(
        schema["x-kubernetes-validations"][3]["messageExpression"],
        "'replicas may not go down to ' + string(self.replicas)"
    );
    assert_eq!(
        schema["properties"]["replicas"]["x-kubernetes-validations"],
        json!([{"rule": "self >= 0"}])
    );
    assert_eq!(
        schema["properties"]["labels"]["x-kubernetes-validations"][0]["rule"],
        "self.all(k, k.startsWith('x-') && self[k] != '')"
    );
}

/// What the derive let through, the runtime's CRD-creation check accepts too.
#[cfg(feature = "server")]
#[test]
fn checked_rules_pass_the_crd_creation_check() {
    let errors = kapi::cel::validation::compile_errors(&checked_rules::Pool::schema());
    assert!(errors.is_empty(), "{errors:?}");
}
