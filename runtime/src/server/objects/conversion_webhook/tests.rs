//! The review and the checks of its answer, with upstream's texts
//! (`webhook_converter.go`, `converter.go`).

use serde_json::{Value, json};

use super::*;
use crate::crd::WebhookClientConfig;

const RELEASE: KubeVersion = KubeVersion::new(1, 34);

fn hook() -> ConversionWebhook {
    ConversionWebhook {
        crd: "widgets.example.com".into(),
        group: "example.com".into(),
        plural: "widgets".into(),
        kind: "Widget".into(),
        versions: vec!["v1".into(), "v2".into()],
        storage: "v1".into(),
        client_config: WebhookClientConfig::default(),
        review_versions: vec!["v1".into()],
    }
}

fn stored() -> Value {
    json!({"apiVersion": "example.com/v1", "kind": "Widget",
           "metadata": {"name": "a", "namespace": "ns", "uid": "u-1", "generation": 2,
                        "labels": {"app": "x"}},
           "spec": {"size": 3}})
}

/// A JSON merge patch of objects, enough for these cases.
fn merge(target: &mut Value, patch: &Value) {
    match (target, patch) {
        (Value::Object(target), Value::Object(patch)) => {
            for (key, value) in patch {
                merge(target.entry(key.clone()).or_insert(Value::Null), value);
            }
        }
        (target, patch) => *target = patch.clone(),
    }
}

fn answer(uid: &str, objects: Value) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
        "response": {"uid": uid, "convertedObjects": objects, "result": {"status": "Success"}},
    }))
    .unwrap()
}

/// `createConversionReviewObjects`: the first version the server speaks, the request's uid,
/// desired version and objects.
#[test]
fn the_review_is_in_the_first_known_version() {
    let versions = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    assert_eq!(
        review_version(&versions(&["v2", "v1beta1", "v1"])),
        Some("v1beta1")
    );
    assert_eq!(review_version(&versions(&["v1", "v1beta1"])), Some("v1"));
    assert_eq!(review_version(&versions(&["v9"])), None);
    let review = request("v1", "uid-1", "example.com/v2", &[stored()]);
    assert_eq!(review["apiVersion"], "apiextensions.k8s.io/v1");
    assert_eq!(review["kind"], "ConversionReview");
    assert_eq!(review["request"]["uid"], "uid-1");
    assert_eq!(review["request"]["desiredAPIVersion"], "example.com/v2");
    assert_eq!(review["request"]["objects"][0], stored());
}

/// `getConvertedObjectsFromResponse`: kind and uid of a v1 answer, the result's status.
#[test]
fn answers_are_checked_as_upstream_checks_them() {
    let objects = converted_objects(&answer("u", json!([{"a": 1}])), "u", "v1").unwrap();
    assert_eq!(objects, [json!({"a": 1})]);
    let cases: Vec<(Value, &str)> = vec![
        (
            json!({"apiVersion": "apiextensions.k8s.io/v1beta1", "kind": "ConversionReview",
                   "response": {"uid": "u"}}),
            "expected webhook response of apiextensions.k8s.io/v1, Kind=ConversionReview, got apiextensions.k8s.io/v1beta1, Kind=ConversionReview",
        ),
        (
            json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview"}),
            "no response provided",
        ),
        (
            json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
                   "response": {"uid": "other", "result": {"status": "Success"}}}),
            r#"expected response.uid="u", got "other""#,
        ),
        (
            json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
                   "response": {"uid": "u", "result": {"status": "Failure", "message": "no way"}}}),
            "no way",
        ),
        (
            json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
                   "response": {"uid": "u", "result": {"status": "Failure"}}}),
            "response.result.status was 'Failure', not 'Success'",
        ),
    ];
    for (body, want) in cases {
        let error = converted_objects(&serde_json::to_vec(&body).unwrap(), "u", "v1").unwrap_err();
        assert_eq!(error, want, "{body}");
    }
    // A v1beta1 answer is not checked for its kind or uid, for compatibility.
    let old =
        json!({"response": {"uid": "x", "convertedObjects": [], "result": {"status": "Success"}}});
    assert_eq!(
        converted_objects(&serde_json::to_vec(&old).unwrap(), "u", "v1beta1").unwrap(),
        Vec::<Value>::new()
    );
    assert!(
        converted_objects(b"not json", "u", "v1")
            .unwrap_err()
            .starts_with("couldn't get version/kind; json parse error: ")
    );
}

/// The converted object: one of them, the desired version, the kind and identity unchanged;
/// its metadata restored but for labels and annotations (`restoreObjectMeta`).
#[test]
fn converted_objects_keep_their_metadata_but_labels_and_annotations() {
    let converted = json!({"apiVersion": "example.com/v2", "kind": "Widget",
        "metadata": {"name": "a", "namespace": "ns", "uid": "u-1", "generation": 99,
                     "labels": {"app": "y"}, "annotations": {"example.com/size": "3"}},
        "spec": {"size": "3"}});
    let out = checked(&stored(), vec![converted], "example.com/v2", RELEASE).unwrap();
    assert_eq!(
        out,
        json!({"apiVersion": "example.com/v2", "kind": "Widget",
               "metadata": {"name": "a", "namespace": "ns", "uid": "u-1", "generation": 2,
                            "labels": {"app": "y"}, "annotations": {"example.com/size": "3"}},
               "spec": {"size": "3"}})
    );
    // Labels the answer leaves out are gone, as upstream deletes them.
    let bare = json!({"apiVersion": "example.com/v2", "kind": "Widget",
        "metadata": {"name": "a", "namespace": "ns", "uid": "u-1"}});
    let out = checked(&stored(), vec![bare], "example.com/v2", RELEASE).unwrap();
    assert!(out["metadata"].get("labels").is_none());
    assert_eq!(out["metadata"]["generation"], 2);
}

#[test]
fn invalid_converted_objects_fail_with_upstreams_messages() {
    let with = |patch: Value| {
        let mut object = json!({"apiVersion": "example.com/v2", "kind": "Widget",
            "metadata": {"name": "a", "namespace": "ns", "uid": "u-1"}});
        merge(&mut object, &patch);
        object
    };
    let prefix = "conversion webhook for example.com/v1, Kind=Widget";
    let cases: Vec<(Vec<Value>, String)> = vec![
        (vec![], format!("{prefix} returned 0 objects, expected 1")),
        (
            vec![with(json!({})), with(json!({}))],
            format!("{prefix} returned 2 objects, expected 1"),
        ),
        (
            vec![with(json!({"apiVersion": "example.com/v1"}))],
            format!(
                "{prefix} returned invalid object at index 0: invalid groupVersion (expected example.com/v2, received example.com/v1)"
            ),
        ),
        (
            vec![with(json!({"kind": "Gadget"}))],
            format!(
                "{prefix} returned invalid object at index 0: invalid kind (expected Widget, received Gadget)"
            ),
        ),
        (
            vec![with(json!({"metadata": {"name": "b"}}))],
            format!("{prefix} returned invalid object: must have the same name: a != b"),
        ),
        (
            vec![with(json!({"metadata": {"uid": "u-2"}}))],
            format!("{prefix} returned invalid object: must have the same UID: u-1 != u-2"),
        ),
        (
            vec![with(json!({"metadata": {"labels": {"app": 1}}}))],
            format!(
                "{prefix} returned invalid metadata: metadata.labels[app] must be a string, but is int64 in converted object"
            ),
        ),
        (
            vec![with(json!({"metadata": {"annotations": ["x"]}}))],
            format!(
                "{prefix} returned invalid metadata: invalid metadata.annotations of type []interface {{}} in converted object"
            ),
        ),
        (
            vec![with(json!({"metadata": {"labels": {"app": "bad value!"}}}))],
            format!(
                "{prefix} returned invalid metadata: metadata.labels: Invalid value: \"bad value!\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
            ),
        ),
        (
            vec![json!({"apiVersion": "example.com/v2"})],
            "Object 'Kind' is missing in '{\"apiVersion\":\"example.com/v2\"}'".to_owned(),
        ),
    ];
    for (objects, want) in cases {
        let error = checked(&stored(), objects.clone(), "example.com/v2", RELEASE).unwrap_err();
        assert_eq!(error, want, "{objects:?}");
    }
}

/// `crConverter.ConvertToVersion`: both versions must be the CRD's; empty objects are only
/// renamed (`isEmptyUnstructuredObject`).
#[test]
fn versions_outside_the_crd_are_refused() {
    assert_eq!(
        check_versions(&hook(), "example.com/v1", "example.com/v2"),
        Ok(())
    );
    assert_eq!(
        check_versions(&hook(), "example.com/v1", "example.com/v3"),
        Err("request to convert CR to an invalid group/version: example.com/v3".to_owned())
    );
    assert_eq!(
        check_versions(&hook(), "other.com/v1", "example.com/v2"),
        Err("request to convert CR from an invalid group/version: other.com/v1".to_owned())
    );
    assert!(is_empty(
        &json!({"apiVersion": "example.com/v1", "kind": "Widget"})
    ));
    assert!(!is_empty(&stored()));
}

/// The CRD's service reference gets v1's default port, and its bundle travels as base64.
#[test]
fn client_configs_default_the_service_port() {
    let mut h = hook();
    h.client_config = serde_json::from_value(json!({
        "service": {"namespace": "ns", "name": "conv"}, "caBundle": "cGVt"
    }))
    .unwrap();
    let config = client_config(&h);
    let service = config.service.unwrap();
    assert_eq!((service.name.as_str(), service.port), ("conv", Some(443)));
    assert_eq!(config.ca_bundle.as_deref(), Some("cGVt"));
}
