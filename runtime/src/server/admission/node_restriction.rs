//! NodeRestriction (`--enable-admission-plugins=NodeRestriction`): what a kubelet may write,
//! as upstream's `plugin/pkg/admission/noderestriction/admission.go` limits it. The Node
//! authorizer lets every node create, update and delete Nodes, mirror pods, pod statuses,
//! evictions, Leases, CSINodes and ResourceSlices; this plugin narrows each to the node's own:
//! its Node (and only the labels a kubelet may set), mirror pods bound to it and owned by its
//! Node, the status of its pods, evictions of its pods, its Lease and CSINode, tokens for
//! pods bound to it, ResourceSlices naming it. Requests of other users pass untouched.
//!
//! It runs on the main resource and its subresources alike (upstream's plugin handles
//! CREATE, UPDATE and DELETE of any subresource), after the ServiceAccount plugin, and reads
//! the pods and nodes it checks through `storage`.

use std::collections::BTreeSet;

use serde_json::{Map, Value};

use crate::server::Call;
use crate::server::auth::node::{NODE_LEASE_NAMESPACE, node_of};
use crate::server::http::error::ApiError;
use crate::server::http::path::Subresource;
use crate::server::state::node_graph::MIRROR_POD_ANNOTATION;

use super::storage;
use super::webhook::Operation;

/// A write as the plugin sees it: the operation, the name (of the object, or of the parent of
/// a subresource), the object written and the object before.
#[derive(Debug, Clone, Copy)]
pub(super) struct Write<'a> {
    pub(super) operation: Operation,
    pub(super) name: &'a str,
    pub(super) object: Option<&'a Value>,
    pub(super) old: Option<&'a Value>,
}

/// Upstream's `Plugin.Admit`: nothing for users other than nodes and for a server that does not
/// run the plugin; else the check of the resource written.
pub(super) async fn admit(call: &Call, write: Write<'_>) -> Result<(), ApiError> {
    if !call.state.admission_plugins.node_restriction() {
        return Ok(());
    }
    let Some(node) = node_of(&call.user) else {
        return Ok(());
    };
    let refuse = |reason: String| Err(super::forbidden(call, write.name, &reason));
    if node.is_empty() {
        return refuse(format!(
            "could not determine node from user {:?}",
            call.user.username
        ));
    }
    let sub = call.target.sub;
    match (call.target.group(), call.target.plural()) {
        ("", "pods") => match sub {
            None => pod(call, node, write).await,
            Some(Subresource::Status) => pod_status(call, node, write),
            Some(Subresource::Eviction) => eviction(call, node, write).await,
            Some(other) => refuse(format!(
                "unexpected pod subresource {:?}, only 'status' and 'eviction' are allowed",
                other.name()
            )),
        },
        ("", "nodes") => node_object(call, node, write),
        ("", "persistentvolumeclaims") => match sub {
            Some(Subresource::Status) => claim_status(call, node, write),
            _ => refuse("may only update PVC status".to_owned()),
        },
        ("", "serviceaccounts") => token(call, node, write).await,
        ("coordination.k8s.io", "leases") => lease(call, node, write),
        ("storage.k8s.io", "csinodes") => csi_node(call, node, write),
        ("resource.k8s.io", "resourceslices") => resource_slice(call, node, write),
        ("certificates.k8s.io", "certificatesigningrequests") => csr(call, node, write),
        _ => Ok(()),
    }
}

fn text<'a>(object: Option<&'a Value>, pointer: &str) -> &'a str {
    object
        .and_then(|o| o.pointer(pointer))
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// The pod `name` of the call's namespace as stored, or upstream's 404.
async fn stored_pod(call: &Call, name: &str) -> Result<Value, ApiError> {
    let namespace = call.target.namespace.as_deref();
    storage::read(call, "", "pods", namespace, name)
        .await?
        .ok_or_else(|| {
            ApiError::not_found(crate::server::http::error::Subject {
                group: "",
                resource: "pods",
                name,
            })
        })
}

/// `admitPod`: mirror pods bound to the node are created, pods bound to it deleted.
async fn pod(call: &Call, node: &str, write: Write<'_>) -> Result<(), ApiError> {
    let refuse = |reason: String| Err(super::forbidden(call, write.name, &reason));
    match write.operation {
        Operation::Create => mirror_pod(call, node, write).await,
        Operation::Delete => {
            let existing = match write.old {
                Some(old) => old.clone(),
                None => stored_pod(call, write.name).await?,
            };
            if text(Some(&existing), "/spec/nodeName") != node {
                return refuse(format!(
                    "node {node:?} can only delete pods with spec.nodeName set to itself"
                ));
            }
            Ok(())
        }
        Operation::Update => refuse(format!(
            "unexpected operation \"UPDATE\", node {node:?} can only create and delete mirror pods"
        )),
        // Upstream's `admitPod` takes a pod's CONNECT subresources elsewhere; none reaches here.
        Operation::Connect => Ok(()),
    }
}

/// `admitPodCreate`: a mirror pod, bound to the node, owned by its Node alone, referencing
/// no other API object.
async fn mirror_pod(call: &Call, node: &str, write: Write<'_>) -> Result<(), ApiError> {
    let refuse = |reason: String| Err(super::forbidden(call, write.name, &reason));
    let pod = write.object.unwrap_or(&Value::Null);
    let mirror = pod
        .pointer("/metadata/annotations")
        .and_then(Value::as_object)
        .is_some_and(|a| a.contains_key(MIRROR_POD_ANNOTATION));
    if !mirror {
        return refuse(format!(
            "pod does not have {MIRROR_POD_ANNOTATION:?} annotation, node {node:?} can only create mirror pods"
        ));
    }
    if text(Some(pod), "/spec/nodeName") != node {
        return refuse(format!(
            "node {node:?} can only create pods with spec.nodeName set to itself"
        ));
    }
    let owners = pod
        .pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let owner = match owners {
        [] => {
            return refuse(format!(
                "node {node:?} can only create pods with an owner reference set to itself"
            ));
        }
        [one] => one,
        _ => {
            return refuse(format!(
                "node {node:?} can only create pods with a single owner reference set to itself"
            ));
        }
    };
    let field = |name: &str| owner.get(name).and_then(Value::as_str).unwrap_or_default();
    if field("apiVersion") != "v1" || field("kind") != "Node" || field("name") != node {
        return refuse(format!(
            "node {node:?} can only create pods with an owner reference set to itself"
        ));
    }
    if owner.get("controller").and_then(Value::as_bool) != Some(true) {
        return refuse(format!(
            "node {node:?} can only create pods with a controller owner reference set to itself"
        ));
    }
    if owner.get("blockOwnerDeletion").and_then(Value::as_bool) == Some(true) {
        return refuse(format!(
            "node {node:?} must not set blockOwnerDeletion on an owner reference"
        ));
    }
    let Some(stored) = storage::read(call, "", "nodes", None, node).await? else {
        return Err(ApiError::not_found(crate::server::http::error::Subject {
            group: "",
            resource: "nodes",
            name: node,
        }));
    };
    let uid = text(Some(&stored), "/metadata/uid");
    if field("uid") != uid {
        return refuse(format!(
            "node {node} UID mismatch: expected {} got {uid}",
            field("uid")
        ));
    }
    if !text(Some(pod), "/spec/serviceAccountName").is_empty() {
        return refuse(format!(
            "node {node:?} can not create pods that reference a service account"
        ));
    }
    let projected = crate::server::state::node_graph::references(pod);
    for (kind, field) in [("secrets", "secrets"), ("configmaps", "configmaps")] {
        if projected[field].as_array().is_some_and(|a| !a.is_empty()) {
            return refuse(format!(
                "node {node:?} can not create pods that reference {kind}"
            ));
        }
    }
    let volumes = pod
        .pointer("/spec/volumes")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let trust_bundles = volumes.iter().any(|volume| {
        volume
            .pointer("/projected/sources")
            .and_then(Value::as_array)
            .is_some_and(|sources| {
                sources
                    .iter()
                    .any(|source| source.get("clusterTrustBundle").is_some())
            })
    });
    if trust_bundles {
        return refuse(format!(
            "node {node:?} can not create pods that reference clustertrustbundles"
        ));
    }
    if volumes
        .iter()
        .any(|volume| volume.get("persistentVolumeClaim").is_some())
    {
        return refuse(format!(
            "node {node:?} can not create pods that reference persistentvolumeclaims"
        ));
    }
    Ok(())
}

/// `admitPodStatus`: the status of a pod bound to the node, without its labels or claims.
fn pod_status(call: &Call, node: &str, write: Write<'_>) -> Result<(), ApiError> {
    let refuse = |reason: String| Err(super::forbidden(call, write.name, &reason));
    if write.operation != Operation::Update {
        return refuse(format!(
            "unexpected operation {:?}",
            write.operation.as_str()
        ));
    }
    if text(write.old, "/spec/nodeName") != node {
        return refuse(format!(
            "node {node:?} can only update pod status for pods with spec.nodeName set to itself"
        ));
    }
    let labels = |object: Option<&Value>| {
        object
            .and_then(|o| o.pointer("/metadata/labels"))
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default()
    };
    if labels(write.old) != labels(write.object) {
        return refuse(format!(
            "node {node:?} cannot update labels through pod status"
        ));
    }
    let claims = |object: Option<&Value>| {
        object
            .and_then(|o| o.pointer("/status/resourceClaimStatuses"))
            .and_then(Value::as_array)
            .map(|statuses| {
                statuses
                    .iter()
                    .map(|s| (s.get("name").cloned(), s.get("resourceClaimName").cloned()))
                    .collect::<Vec<_>>()
            })
            .unwrap_or_default()
    };
    if claims(write.old) != claims(write.object) {
        // Upstream's spelling.
        return refuse(format!(
            "node {node:?} cannot update resource claim statues"
        ));
    }
    Ok(())
}

/// `admitPodEviction`: evictions of pods bound to the node.
async fn eviction(call: &Call, node: &str, write: Write<'_>) -> Result<(), ApiError> {
    let refuse = |reason: String| Err(super::forbidden(call, write.name, &reason));
    let pod_name = if write.name.is_empty() {
        text(write.object, "/metadata/name")
    } else {
        write.name
    };
    if pod_name.is_empty() {
        return refuse("could not determine pod from request data".to_owned());
    }
    let existing = stored_pod(call, pod_name).await?;
    if text(Some(&existing), "/spec/nodeName") != node {
        return refuse(format!(
            "node {node} can only evict pods with spec.nodeName set to itself"
        ));
    }
    Ok(())
}

/// `admitPVCStatus`: only a claim's `status.capacity` and `status.conditions` (and, as
/// RecoverVolumeExpansionFailure is on in the releases that have it, its allocated resources
/// and their statuses) may change.
fn claim_status(call: &Call, node: &str, write: Write<'_>) -> Result<(), ApiError> {
    if write.operation != Operation::Update {
        return Err(super::forbidden(
            call,
            write.name,
            &format!("unexpected operation {:?}", write.operation.as_str()),
        ));
    }
    let comparable = |object: Option<&Value>| {
        let mut object = object.cloned().unwrap_or(Value::Null);
        if let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut) {
            metadata.remove("resourceVersion");
            metadata.remove("managedFields");
        }
        if let Some(status) = object.get_mut("status").and_then(Value::as_object_mut) {
            for field in [
                "capacity",
                "conditions",
                "allocatedResources",
                "allocatedResourceStatuses",
            ] {
                status.remove(field);
            }
        }
        object
    };
    if comparable(write.old) != comparable(write.object) {
        return Err(super::forbidden(
            call,
            write.name,
            &format!(
                "node {node:?} is not allowed to update fields other than status.capacity and status.conditions"
            ),
        ));
    }
    Ok(())
}

/// `admitNode`: only its own Node; on create no labels outside the kubelet's, on update the
/// same and no change to its taints.
fn node_object(call: &Call, node: &str, write: Write<'_>) -> Result<(), ApiError> {
    let refuse = |reason: String| Err(super::forbidden(call, write.name, &reason));
    if write.name != node {
        return refuse(format!(
            "node {node:?} is not allowed to modify node {:?}",
            write.name
        ));
    }
    let labels = |object: Option<&Value>| {
        object
            .and_then(|o| o.pointer("/metadata/labels"))
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default()
    };
    let config_source = |object: Option<&Value>| {
        object
            .and_then(|o| o.pointer("/spec/configSource"))
            .filter(|v| !v.is_null())
            .cloned()
    };
    match write.operation {
        Operation::Create => {
            if config_source(write.object).is_some() {
                // Upstream's wording.
                return refuse(format!(
                    "node {node:?} is not allowed to create pods with a non-nil configSource"
                ));
            }
            let forbidden = forbidden_labels(&modified_labels(&labels(write.object), &Map::new()));
            if !forbidden.is_empty() {
                return refuse(format!(
                    "node {node:?} is not allowed to set the following labels: {}",
                    forbidden.into_iter().collect::<Vec<_>>().join(", ")
                ));
            }
        }
        Operation::Update => {
            let source = config_source(write.object);
            if source.is_some() && source != config_source(write.old) {
                return refuse(format!(
                    "node {node:?} is not allowed to update configSource to a new non-nil configSource"
                ));
            }
            let taints = |object: Option<&Value>| {
                object
                    .and_then(|o| o.pointer("/spec/taints"))
                    .and_then(Value::as_array)
                    .filter(|t| !t.is_empty())
                    .cloned()
            };
            if taints(write.object) != taints(write.old) {
                return refuse(format!("node {node:?} is not allowed to modify taints"));
            }
            let forbidden =
                forbidden_labels(&modified_labels(&labels(write.object), &labels(write.old)));
            if !forbidden.is_empty() {
                return refuse(format!(
                    "is not allowed to modify labels: {}",
                    forbidden.into_iter().collect::<Vec<_>>().join(", ")
                ));
            }
        }
        Operation::Delete | Operation::Connect => {}
    }
    Ok(())
}

/// `getModifiedLabels`: the keys added, removed or changed between `a` and `b`.
fn modified_labels(a: &Map<String, Value>, b: &Map<String, Value>) -> BTreeSet<String> {
    let changed = |from: &Map<String, Value>, to: &Map<String, Value>| {
        from.iter()
            .filter(|(key, value)| to.get(*key) != Some(*value))
            .map(|(key, _)| key.clone())
            .collect::<Vec<_>>()
    };
    changed(a, b).into_iter().chain(changed(b, a)).collect()
}

/// The labels a kubelet may set on its own Node (upstream's `kubeletapis.IsKubeletLabel`,
/// `k8s.io/kubelet/pkg/apis/well_known_labels.go`).
const KUBELET_LABELS: &[&str] = &[
    "kubernetes.io/hostname",
    "topology.kubernetes.io/zone",
    "topology.kubernetes.io/region",
    "failure-domain.beta.kubernetes.io/zone",
    "failure-domain.beta.kubernetes.io/region",
    "beta.kubernetes.io/instance-type",
    "node.kubernetes.io/instance-type",
    "kubernetes.io/os",
    "kubernetes.io/arch",
    "beta.kubernetes.io/os",
    "beta.kubernetes.io/arch",
];

/// The label namespaces a kubelet may set, with their subdomains.
const KUBELET_LABEL_NAMESPACES: &[&str] = &["kubelet.kubernetes.io", "node.kubernetes.io"];

/// The namespace of labels only administrators set (upstream's
/// `LabelNamespaceNodeRestriction`).
const NODE_RESTRICTION_NAMESPACE: &str = "node-restriction.kubernetes.io";

fn label_namespace(key: &str) -> &str {
    key.split_once('/').map(|(prefix, _)| prefix).unwrap_or("")
}

/// Whether `namespace` is `domain` or a subdomain of it.
fn within(namespace: &str, domain: &str) -> bool {
    namespace == domain
        || namespace
            .strip_suffix(domain)
            .is_some_and(|rest| rest.ends_with('.'))
}

/// `getForbiddenLabels`: node-restriction labels, and Kubernetes labels a kubelet does not own.
fn forbidden_labels(modified: &BTreeSet<String>) -> BTreeSet<String> {
    modified
        .iter()
        .filter(|key| {
            let namespace = label_namespace(key);
            let restricted = within(namespace, NODE_RESTRICTION_NAMESPACE);
            let kubernetes = within(namespace, "kubernetes.io") || within(namespace, "k8s.io");
            let kubelets = KUBELET_LABELS.contains(&key.as_str())
                || KUBELET_LABEL_NAMESPACES
                    .iter()
                    .any(|allowed| within(namespace, allowed));
            restricted || (kubernetes && !kubelets)
        })
        .cloned()
        .collect()
}

/// `admitServiceAccount`: a token a node asks for must be bound to a pod of the node.
async fn token(call: &Call, node: &str, write: Write<'_>) -> Result<(), ApiError> {
    if write.operation != Operation::Create || call.target.sub != Some(Subresource::Token) {
        return Ok(());
    }
    let refuse = |reason: &str| Err(super::forbidden(call, write.name, reason));
    let reference = write
        .object
        .and_then(|o| o.pointer("/spec/boundObjectRef"))
        .filter(|r| r.is_object());
    let field = |name: &str| text(reference, &format!("/{name}"));
    if reference.is_none()
        || field("apiVersion") != "v1"
        || field("kind") != "Pod"
        || field("name").is_empty()
    {
        return refuse("node requested token not bound to a pod");
    }
    if field("uid").is_empty() {
        return refuse("node requested token with a pod binding without a uid");
    }
    let pod = stored_pod(call, field("name")).await?;
    if text(Some(&pod), "/metadata/uid") != field("uid") {
        return refuse(&format!(
            "the UID in the bound object reference ({}) does not match the UID in record. The object might have been deleted and then recreated",
            field("uid")
        ));
    }
    if text(Some(&pod), "/spec/nodeName") != node {
        return refuse("node requested token bound to a pod scheduled on a different node");
    }
    Ok(())
}

/// `admitLease`: its own Lease in `kube-node-lease`.
fn lease(call: &Call, node: &str, write: Write<'_>) -> Result<(), ApiError> {
    let refuse = |reason: String| Err(super::forbidden(call, write.name, &reason));
    if call.target.namespace.as_deref() != Some(NODE_LEASE_NAMESPACE) {
        return refuse(format!(
            "can only access leases in the {NODE_LEASE_NAMESPACE:?} system namespace"
        ));
    }
    if write.name != node {
        return refuse(
            "can only access node lease with the same name as the requesting node".to_owned(),
        );
    }
    Ok(())
}

/// `admitCSINode`: its own CSINode.
fn csi_node(call: &Call, node: &str, write: Write<'_>) -> Result<(), ApiError> {
    if write.name != node {
        return Err(super::forbidden(
            call,
            write.name,
            "can only access CSINode with the same name as the requesting node",
        ));
    }
    Ok(())
}

/// `admitResourceSlice`: creates and deletes of slices naming the node.
fn resource_slice(call: &Call, node: &str, write: Write<'_>) -> Result<(), ApiError> {
    let (object, verb) = match write.operation {
        Operation::Create => (write.object, "create"),
        Operation::Delete => (write.old, "delete"),
        Operation::Update | Operation::Connect => return Ok(()),
    };
    if text(object, "/spec/nodeName") != node {
        return Err(super::forbidden(
            call,
            write.name,
            &format!("can only {verb} ResourceSlice with the same NodeName as the requesting node"),
        ));
    }
    Ok(())
}

/// The first release whose NodeRestriction checks a node's CSRs (the
/// AllowInsecureKubeletCertificateSigningRequests gate deprecated and off from 1.31).
const CSR_CHECK_SINCE: crate::KubeVersion = crate::KubeVersion::new(1, 31);

/// The signers whose certificates name a node (upstream's `KubeletServingSignerName` and
/// `KubeAPIServerClientKubeletSignerName`).
const KUBELET_SIGNERS: [&str; 2] = [
    "kubernetes.io/kubelet-serving",
    "kubernetes.io/kube-apiserver-client-kubelet",
];

/// `admitCSR`: a node's CSR for a kubelet signer must have its own common name.
fn csr(call: &Call, node: &str, write: Write<'_>) -> Result<(), ApiError> {
    if write.operation != Operation::Create || call.state.kube_version < CSR_CHECK_SINCE {
        return Ok(());
    }
    if !KUBELET_SIGNERS.contains(&text(write.object, "/spec/signerName")) {
        return Ok(());
    }
    let refuse = |reason: String| Err(super::forbidden(call, write.name, &reason));
    let common_name = match csr_common_name(text(write.object, "/spec/request")) {
        Ok(name) => name,
        Err(error) => return refuse(format!("unable to parse csr: {error}")),
    };
    if common_name != format!("system:node:{node}") {
        return refuse(format!(
            "can only create a node CSR with CN=system:node:{node}"
        ));
    }
    Ok(())
}

/// The subject common name of `request`, a CSR's `spec.request` (base64 of PEM), as upstream's
/// `certapi.ParseCSR` reads it (the last CN attribute, as Go's `pkix.Name` keeps it).
fn csr_common_name(request: &str) -> Result<String, String> {
    use base64::Engine as _;
    use x509_parser::certification_request::X509CertificationRequest;
    use x509_parser::prelude::FromDer;

    const WRONG_BLOCK: &str = "PEM block type must be CERTIFICATE REQUEST";
    let pem = base64::engine::general_purpose::STANDARD
        .decode(request)
        .map_err(|_| WRONG_BLOCK.to_owned())?;
    let (_, block) = x509_parser::pem::parse_x509_pem(&pem).map_err(|_| WRONG_BLOCK.to_owned())?;
    if block.label != "CERTIFICATE REQUEST" {
        return Err(WRONG_BLOCK.to_owned());
    }
    let (_, parsed) = X509CertificationRequest::from_der(&block.contents)
        .map_err(|error| format!("x509: malformed certificate request: {error}"))?;
    Ok(parsed
        .certification_request_info
        .subject
        .iter_common_name()
        .filter_map(|cn| cn.as_str().ok())
        .last()
        .unwrap_or_default()
        .to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(list: &[&str]) -> BTreeSet<String> {
        list.iter().map(|k| (*k).to_owned()).collect()
    }

    // Upstream's `Test_getForbiddenLabels` (`admission_test.go`).
    #[test]
    fn labels_a_kubelet_may_not_set() {
        let modified = keys(&[
            "kubernetes.io/hostname",
            "node.kubernetes.io/exclude-from-external-load-balancers",
            "foo.node.kubernetes.io/bar",
            "kubelet.kubernetes.io/x",
            "node-restriction.kubernetes.io/secure",
            "example.node-restriction.kubernetes.io/secure",
            "node-role.kubernetes.io/master",
            "k8s.io/x",
            "example.com/free",
            "plain",
        ]);
        assert_eq!(
            forbidden_labels(&modified),
            keys(&[
                "example.node-restriction.kubernetes.io/secure",
                "k8s.io/x",
                "node-restriction.kubernetes.io/secure",
                "node-role.kubernetes.io/master",
            ])
        );
    }

    // Upstream's `ParseCSR`: a PEM block of CERTIFICATE REQUEST, whose subject CN is read.
    #[test]
    fn a_csr_common_name() {
        use base64::Engine as _;
        let key = rcgen::KeyPair::generate().unwrap();
        let mut params = rcgen::CertificateParams::default();
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "system:node:n1");
        let request = params.serialize_request(&key).unwrap().pem().unwrap();
        let encoded = base64::engine::general_purpose::STANDARD.encode(request);
        assert_eq!(csr_common_name(&encoded).unwrap(), "system:node:n1");
        let wrong = base64::engine::general_purpose::STANDARD
            .encode("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n");
        assert_eq!(
            csr_common_name(&wrong).unwrap_err(),
            "PEM block type must be CERTIFICATE REQUEST"
        );
    }

    #[test]
    fn modified_labels_both_ways() {
        let object = |value: Value| value.as_object().cloned().unwrap_or_default();
        let a = object(serde_json::json!({"same": "1", "changed": "1", "removed": "1"}));
        let b = object(serde_json::json!({"same": "1", "changed": "2", "added": "1"}));
        assert_eq!(
            modified_labels(&a, &b),
            keys(&["added", "changed", "removed"])
        );
    }
}
