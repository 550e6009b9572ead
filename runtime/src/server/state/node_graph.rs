//! The Node authorizer's graph (upstream's `plugin/pkg/auth/authorizer/node/graph.go` and
//! `graph_populator.go`): which Secrets, ConfigMaps, claims, volumes, service accounts,
//! VolumeAttachments and ResourceSlices lead to which node.
//!
//! Upstream keeps a graph of vertices and edges fed by informers. kapi keeps the same edges in
//! projected [`mirrors`](super::mirrors): for every Pod, PersistentVolume, VolumeAttachment
//! and ResourceSlice, the few names its edges need (a bound pod's node and what it
//! references, a volume's claim and secrets, an attachment's or slice's node), computed once
//! per change and fed, as admission's mirrors are, by a listing, the watch after it and this
//! server's own writes, so a pod this server just bound is in the graph before the binding's
//! answer leaves. A question walks the namespace's pods, which stands in for upstream's
//! per-vertex index: the projections are small and a namespace's pods few enough.
//!
//! Present only when `--authorization-mode` lists `Node`; read through
//! [`NodeGraph`](crate::server::auth::node::NodeGraph).

use serde_json::{Value, json};

use crate::server::auth::node::{NodeGraph, Vertex};
use crate::server::state::keys::prefix_of;
use crate::server::state::mirrors::{Mirrors, Projection};

/// The resources of the graph, by group and plural, with what is kept of each object.
pub(crate) const MIRRORED: &[(&str, &str, Projection)] = &[
    ("", "pods", project_pod),
    ("", "persistentvolumes", project_volume),
    ("storage.k8s.io", "volumeattachments", project_node_name),
    ("resource.k8s.io", "resourceslices", project_node_name),
];

/// How many objects of one resource the graph holds at most; past it the resource is out of
/// step and the Node authorizer finds no relationship until it is listed again. Projections
/// hold a handful of names each, far less than the objects.
pub(crate) const MOST: usize = 100_000;

/// The annotation of a mirror pod, which a kubelet makes from a static pod's manifest
/// (upstream's `MirrorPodAnnotationKey`).
pub(crate) const MIRROR_POD_ANNOTATION: &str = "kubernetes.io/config.mirror";

/// A pod's edges (`Graph.AddPod`): none before it is bound; its node; and unless it is a
/// mirror pod (which must never grant its node anything), its service account, the Secrets
/// and ConfigMaps it references, its claims (ephemeral volumes' included) and its
/// ResourceClaims.
fn project_pod(pod: &Value) -> Value {
    let node = text(&pod["spec"]["nodeName"]);
    if node.is_empty() {
        return json!({});
    }
    let mirror = pod["metadata"]["annotations"]
        .get(MIRROR_POD_ANNOTATION)
        .is_some();
    if mirror {
        return json!({"node": node});
    }
    references(pod)
}

/// What a pod references, whether bound or not: its node (`node`), service account
/// (`serviceAccount`), and the names of its `secrets`, `configmaps`, `claims` and
/// `resourceClaims`. NodeRestriction reads it too: a mirror pod may reference none of them.
pub(crate) fn references(pod: &Value) -> Value {
    let spec = &pod["spec"];
    let node = text(&spec["nodeName"]);
    let name = text(&pod["metadata"]["name"]);
    let mut secrets = Vec::new();
    visit_pod_secret_names(pod, |secret| secrets.push(secret.to_owned()));
    let mut configmaps = Vec::new();
    visit_pod_configmap_names(pod, |configmap| configmaps.push(configmap.to_owned()));
    let mut claims = Vec::new();
    for volume in items(&spec["volumes"]) {
        if let Some(claim) = volume.get("persistentVolumeClaim") {
            claims.push(text(&claim["claimName"]).to_owned());
        } else if volume.get("ephemeral").is_some() {
            // Upstream's `ephemeral.VolumeClaimName`.
            claims.push(format!("{name}-{}", text(&volume["name"])));
        }
    }
    let mut resource_claims = Vec::new();
    let statuses = items(&pod["status"]["resourceClaimStatuses"]);
    for claim in items(&spec["resourceClaims"]) {
        // Upstream's `resourceclaim.Name`: a claim named outright, or the one made from a
        // template, once the pod's status names it.
        let named = text(&claim["resourceClaimName"]);
        if !named.is_empty() {
            resource_claims.push(named.to_owned());
        } else if let Some(made) = statuses
            .iter()
            .find(|status| status["name"] == claim["name"])
            .map(|status| text(&status["resourceClaimName"]))
            .filter(|made| !made.is_empty())
        {
            resource_claims.push(made.to_owned());
        }
    }
    let extended = text(&pod["status"]["extendedResourceClaimStatus"]["resourceClaimName"]);
    if !extended.is_empty() {
        resource_claims.push(extended.to_owned());
    }
    json!({
        "node": node,
        "serviceAccount": text(&spec["serviceAccountName"]),
        "secrets": secrets,
        "configmaps": configmaps,
        "claims": claims,
        "resourceClaims": resource_claims,
    })
}

/// A PersistentVolume's edges (`Graph.AddPV`): none without a claim; the claim it is bound to,
/// and the secrets a kubelet reads to mount it (`VisitPVSecretNames`' kubelet-visible ones).
fn project_volume(volume: &Value) -> Value {
    let claim = &volume["spec"]["claimRef"];
    if !claim.is_object() {
        return json!({});
    }
    let claim_namespace = text(&claim["namespace"]);
    let mut secrets = Vec::new();
    let spec = &volume["spec"];
    let mut add = |namespace: &str, name: &str| {
        if !name.is_empty() {
            secrets.push(json!([namespace, name]));
        }
    };
    // The secret's namespace when given, else the claim's (volumes persisted before the
    // field existed).
    let in_claim_namespace = |reference: &Value| {
        let namespace = text(&reference["namespace"]);
        if namespace.is_empty() {
            claim_namespace.to_owned()
        } else {
            namespace.to_owned()
        }
    };
    if let Some(azure) = spec.get("azureFile") {
        let namespace = text(&azure["secretNamespace"]);
        let namespace = if namespace.is_empty() {
            claim_namespace
        } else {
            namespace
        };
        add(namespace, text(&azure["secretName"]));
    } else if let Some(source) = ["cephfs", "flexVolume", "rbd", "scaleIO", "iscsi"]
        .iter()
        .find_map(|source| spec.get(*source))
    {
        let reference = &source["secretRef"];
        add(&in_claim_namespace(reference), text(&reference["name"]));
    } else if let Some(source) = ["cinder", "storageos"]
        .iter()
        .find_map(|source| spec.get(*source))
    {
        let reference = &source["secretRef"];
        add(text(&reference["namespace"]), text(&reference["name"]));
    } else if let Some(csi) = spec.get("csi") {
        // The controller's secrets are not the kubelet's to read.
        for field in [
            "nodePublishSecretRef",
            "nodeStageSecretRef",
            "nodeExpandSecretRef",
        ] {
            let reference = &csi[field];
            add(text(&reference["namespace"]), text(&reference["name"]));
        }
    }
    json!({
        "claim": [claim_namespace, text(&claim["name"])],
        "secrets": secrets,
    })
}

/// A VolumeAttachment's or ResourceSlice's edge: the node its `spec.nodeName` names.
fn project_node_name(object: &Value) -> Value {
    json!({"node": text(&object["spec"]["nodeName"])})
}

/// Upstream's `VisitPodSecretNames`: image pull secrets, every container's environment, and
/// the volumes that name a secret.
fn visit_pod_secret_names(pod: &Value, mut visit: impl FnMut(&str)) {
    let spec = &pod["spec"];
    let mut named = |name: &str| {
        if !name.is_empty() {
            visit(name);
        }
    };
    for reference in items(&spec["imagePullSecrets"]) {
        named(text(&reference["name"]));
    }
    for container in containers(spec) {
        for source in items(&container["envFrom"]) {
            named(text(&source["secretRef"]["name"]));
        }
        for variable in items(&container["env"]) {
            named(text(&variable["valueFrom"]["secretKeyRef"]["name"]));
        }
    }
    for volume in items(&spec["volumes"]) {
        if let Some(secret) = volume.get("secret") {
            named(text(&secret["secretName"]));
        } else if let Some(azure) = volume.get("azureFile") {
            named(text(&azure["secretName"]));
        } else if let Some(projected) = volume.get("projected") {
            for source in items(&projected["sources"]) {
                named(text(&source["secret"]["name"]));
            }
        } else if let Some(csi) = volume.get("csi") {
            named(text(&csi["nodePublishSecretRef"]["name"]));
        } else if let Some(source) = [
            "cephfs",
            "cinder",
            "flexVolume",
            "rbd",
            "scaleIO",
            "iscsi",
            "storageos",
        ]
        .iter()
        .find_map(|source| volume.get(*source))
        {
            named(text(&source["secretRef"]["name"]));
        }
    }
}

/// Upstream's `VisitPodConfigmapNames`: every container's environment, ConfigMap volumes and
/// projected sources.
fn visit_pod_configmap_names(pod: &Value, mut visit: impl FnMut(&str)) {
    let spec = &pod["spec"];
    let mut named = |name: &str| {
        if !name.is_empty() {
            visit(name);
        }
    };
    for container in containers(spec) {
        for source in items(&container["envFrom"]) {
            named(text(&source["configMapRef"]["name"]));
        }
        for variable in items(&container["env"]) {
            named(text(&variable["valueFrom"]["configMapKeyRef"]["name"]));
        }
    }
    for volume in items(&spec["volumes"]) {
        if let Some(projected) = volume.get("projected") {
            for source in items(&projected["sources"]) {
                named(text(&source["configMap"]["name"]));
            }
        } else if let Some(configmap) = volume.get("configMap") {
            named(text(&configmap["name"]));
        }
    }
}

/// Init, regular and ephemeral containers (upstream's `AllContainers`).
fn containers(spec: &Value) -> impl Iterator<Item = &Value> {
    ["initContainers", "containers", "ephemeralContainers"]
        .into_iter()
        .flat_map(move |field| items(&spec[field]))
}

fn items(value: &Value) -> &[Value] {
    value.as_array().map(Vec::as_slice).unwrap_or_default()
}

fn text(value: &Value) -> &str {
    value.as_str().unwrap_or_default()
}

/// Whether the projection's string list `field` holds `name`.
fn lists(projection: &Value, field: &str, name: &str) -> bool {
    items(&projection[field]).iter().any(|item| item == name)
}

impl Mirrors {
    /// Whether a pod bound to `node` in `namespace` has `references` true of its projection.
    fn pod_on(&self, node: &str, namespace: &str, references: impl Fn(&Value) -> bool) -> bool {
        let prefix = format!("{}{namespace}/", prefix_of("", "pods"));
        self.visit(&prefix, |_, pod| pod["node"] == node && references(pod))
            .unwrap_or(false)
    }

    /// The projection of the one object at `key` of a projected mirror, if it is known.
    fn projection(&self, key: &str) -> Option<Value> {
        let mut found = None;
        self.visit(key, |at, object| {
            if at == key {
                found = Some(object.clone());
            }
            at == key
        });
        found
    }

    /// pvc → pod → node.
    fn claim_on(&self, node: &str, namespace: &str, name: &str) -> bool {
        self.pod_on(node, namespace, |pod| lists(pod, "claims", name))
    }
}

impl NodeGraph for Mirrors {
    fn related(&self, node: &str, vertex: Vertex, namespace: &str, name: &str) -> bool {
        let named_pod = |field: &'static str| {
            move |pod: &Value| match &pod[field] {
                Value::Array(names) => names.iter().any(|n| n == name),
                single => single == name,
            }
        };
        match vertex {
            Vertex::Secret => {
                if self.pod_on(node, namespace, named_pod("secrets")) {
                    return true;
                }
                // secret → pv → pvc → pod → node; the volumes first, so that no two mirrors'
                // locks are held at once.
                let secret = json!([namespace, name]);
                let mut volumes = Vec::new();
                self.visit(&prefix_of("", "persistentvolumes"), |_, volume| {
                    if items(&volume["secrets"]).contains(&secret) {
                        volumes.push(volume.clone());
                    }
                    false
                });
                volumes.iter().any(|volume| self.claim_of(volume, node))
            }
            Vertex::ConfigMap => self.pod_on(node, namespace, named_pod("configmaps")),
            Vertex::PersistentVolumeClaim => self.claim_on(node, namespace, name),
            Vertex::ResourceClaim => self.pod_on(node, namespace, named_pod("resourceClaims")),
            Vertex::ServiceAccount => self.pod_on(node, namespace, named_pod("serviceAccount")),
            Vertex::PersistentVolume => {
                let key = format!("{}{name}", prefix_of("", "persistentvolumes"));
                self.projection(&key)
                    .is_some_and(|volume| self.claim_of(&volume, node))
            }
            Vertex::Pod => {
                let key = format!("{}{namespace}/{name}", prefix_of("", "pods"));
                self.projection(&key).is_some_and(|pod| pod["node"] == node)
            }
            Vertex::VolumeAttachment => {
                let key = format!("{}{name}", prefix_of("storage.k8s.io", "volumeattachments"));
                self.projection(&key)
                    .is_some_and(|attachment| attachment["node"] == node)
            }
            Vertex::ResourceSlice => {
                let key = format!("{}{name}", prefix_of("resource.k8s.io", "resourceslices"));
                self.projection(&key)
                    .is_some_and(|slice| slice["node"] == node)
            }
        }
    }
}

impl Mirrors {
    /// Whether the claim a volume's projection is bound to is used by a pod of `node`.
    fn claim_of(&self, volume: &Value, node: &str) -> bool {
        let claim = items(&volume["claim"]);
        match claim {
            [namespace, name] => self.claim_on(node, text(namespace), text(name)),
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What an object without edges projects to.
    fn no_edges() -> Value {
        json!({})
    }

    // Upstream's `TestVisitPodSecretNames`/`TestVisitPodConfigmapNames` (`pkg/api/pod`).
    #[test]
    fn a_bound_pod_references() {
        let pod = json!({
            "metadata": {"name": "web"},
            "spec": {
                "nodeName": "n1",
                "serviceAccountName": "sa",
                "imagePullSecrets": [{"name": "pull"}],
                "initContainers": [{"envFrom": [{"secretRef": {"name": "init-env"}}]}],
                "containers": [{
                    "env": [
                        {"name": "A", "valueFrom": {"secretKeyRef": {"name": "key", "key": "k"}}},
                        {"name": "B", "valueFrom": {"configMapKeyRef": {"name": "cm-key", "key": "k"}}}
                    ],
                    "envFrom": [{"configMapRef": {"name": "cm-env"}}]
                }],
                "volumes": [
                    {"name": "s", "secret": {"secretName": "vol"}},
                    {"name": "c", "configMap": {"name": "cm-vol"}},
                    {"name": "p", "projected": {"sources": [
                        {"secret": {"name": "proj"}}, {"configMap": {"name": "cm-proj"}}
                    ]}},
                    {"name": "csi", "csi": {"driver": "d", "nodePublishSecretRef": {"name": "csi"}}},
                    {"name": "data", "persistentVolumeClaim": {"claimName": "claim"}},
                    {"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}}
                ],
                "resourceClaims": [
                    {"name": "gpu", "resourceClaimName": "gpu-claim"},
                    {"name": "tpl", "resourceClaimTemplateName": "t"},
                    {"name": "pending", "resourceClaimTemplateName": "t"}
                ]
            },
            "status": {"resourceClaimStatuses": [{"name": "tpl", "resourceClaimName": "web-tpl-x"}]}
        });
        assert_eq!(
            project_pod(&pod),
            json!({
                "node": "n1",
                "serviceAccount": "sa",
                "secrets": ["pull", "init-env", "key", "vol", "proj", "csi"],
                "configmaps": ["cm-env", "cm-key", "cm-vol", "cm-proj"],
                "claims": ["claim", "web-scratch"],
                "resourceClaims": ["gpu-claim", "web-tpl-x"],
            })
        );
        let mut unbound = pod.clone();
        unbound["spec"]["nodeName"] = Value::Null;
        assert_eq!(project_pod(&unbound), no_edges());
        let mut mirror = pod;
        mirror["metadata"]["annotations"] = json!({MIRROR_POD_ANNOTATION: "x"});
        assert_eq!(project_pod(&mirror), json!({"node": "n1"}));
    }

    fn stored(key: &str, object: &Value, revision: u64) -> crate::storage::KeyValue {
        crate::storage::KeyValue {
            key: key.to_owned(),
            value: crate::storage::Bytes::from(object.to_string()),
            create_revision: revision,
            mod_revision: revision,
        }
    }

    // The paths of upstream's `hasPathFrom`: pod → node, secret → pod, pvc → pod, pv → pvc,
    // secret → pv, attachment → node; kept current by this server's writes.
    #[test]
    fn paths_to_a_node() {
        let mirrors = Mirrors::new(MIRRORED, MOST);
        let pod = |node: &str| {
            json!({
                "metadata": {"name": "web", "namespace": "app"},
                "spec": {
                    "nodeName": node,
                    "containers": [{"envFrom": [{"secretRef": {"name": "env"}}]}],
                    "volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "data"}}]
                }
            })
        };
        let volume = json!({"spec": {
            "claimRef": {"namespace": "app", "name": "data"},
            "csi": {"driver": "d", "nodePublishSecretRef": {"namespace": "ops", "name": "csi"}}
        }});
        let attachment = json!({"spec": {"nodeName": "n1"}});
        mirrors.listed(
            &[
                stored("/registry/core/pods/app/web", &pod(""), 2),
                stored("/registry/core/persistentvolumes/pv1", &volume, 2),
                stored(
                    "/registry/storage.k8s.io/volumeattachments/va1",
                    &attachment,
                    2,
                ),
            ],
            2,
        );
        assert!(mirrors.projections_in_step());
        let related = |vertex, namespace, name| mirrors.related("n1", vertex, namespace, name);
        assert!(!related(Vertex::Secret, "app", "env"), "not bound yet");
        assert!(related(Vertex::VolumeAttachment, "", "va1"));
        mirrors.observe(&stored("/registry/core/pods/app/web", &pod("n1"), 3));
        assert!(related(Vertex::Pod, "app", "web"));
        assert!(related(Vertex::Secret, "app", "env"));
        assert!(!related(Vertex::Secret, "other", "env"));
        assert!(related(Vertex::PersistentVolumeClaim, "app", "data"));
        assert!(related(Vertex::PersistentVolume, "", "pv1"));
        assert!(related(Vertex::Secret, "ops", "csi"), "through the volume");
        assert!(!mirrors.related("n2", Vertex::Secret, "app", "env"));
        mirrors.deleted("/registry/core/pods/app/web", 4);
        assert!(!related(Vertex::Secret, "app", "env"));
        assert!(!related(Vertex::PersistentVolume, "", "pv1"));
        assert_eq!(
            mirrors.get("/registry/core/pods/app/web"),
            None,
            "a projection never answers admission's reads"
        );
    }

    // Upstream's `VisitPVSecretNames`: the kubelet's secrets only, in the claim's namespace
    // unless the reference names one.
    #[test]
    fn a_bound_volume_references() {
        let csi = json!({"spec": {
            "claimRef": {"namespace": "app", "name": "data"},
            "csi": {
                "driver": "d",
                "controllerPublishSecretRef": {"namespace": "ops", "name": "controller"},
                "nodeStageSecretRef": {"namespace": "ops", "name": "stage"}
            }
        }});
        assert_eq!(
            project_volume(&csi),
            json!({"claim": ["app", "data"], "secrets": [["ops", "stage"]]})
        );
        let rbd = json!({"spec": {
            "claimRef": {"namespace": "app", "name": "data"},
            "rbd": {"monitors": ["m"], "image": "i", "secretRef": {"name": "ceph"}}
        }});
        assert_eq!(
            project_volume(&rbd),
            json!({"claim": ["app", "data"], "secrets": [["app", "ceph"]]})
        );
        assert_eq!(project_volume(&json!({"spec": {}})), no_edges());
    }
}
