//! The `default/kubernetes` Service and its Endpoints and EndpointSlice, as kube-apiserver's
//! controlplane keeps them (`pkg/controlplane/controller/kubernetesservice` and the endpoint
//! reconcilers of `pkg/controlplane/reconcilers`): the Service has the first address of the
//! service range and port 443 named `https` whose target is the server's own port, and its
//! endpoints point at the server (its advertised address, kube-apiserver's
//! `--advertise-address`, and its port). They are made at start, before
//! the first request, and made again within [`INTERVAL`] (upstream's endpoint interval) when
//! deleted. What differs from how they should be (a server restarted on another port) is
//! corrected at start only: servers sharing one etcd listen on different ports, and
//! correcting on every pass would have them overwrite each other's endpoints forever, where
//! upstream's replicas share one port and list each other's addresses. The server started
//! last wins.
//!
//! Only for a catalog that serves the core Service (and Endpoints, and EndpointSlices in
//! whichever of `discovery.k8s.io` `v1` and `v1beta1` it serves).

use std::net::SocketAddr;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::watch as signal;

use crate::defaulting;
use crate::registry::RegisteredKind;
use crate::storage::{CreateError, Storage, UpdateError};

use crate::server::background::TaskError;
use crate::server::spawn_repeating;
use crate::server::state::State;
use crate::server::state::keys;
use crate::server::state::service_ranges::family_of;

/// How often the objects are checked (upstream's `--endpoint-reconciler` interval, 10 s).
pub(crate) const INTERVAL: Duration = Duration::from_secs(10);

const NAME: &str = "kubernetes";
const NAMESPACE: &str = "default";
/// The Service's port (upstream's `DefaultServicePort`).
const SERVICE_PORT: u16 = 443;

/// Whether a pass corrects objects that exist, or only makes missing ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pass {
    /// At start: make what is missing and correct what differs.
    Start,
    /// Later: make what is missing.
    Keep,
}

/// Makes (and at start corrects) the three objects once; `endpoint` is where the cluster
/// reaches the server (no endpoints without).
pub(crate) async fn reconcile(
    state: &State,
    endpoint: Option<SocketAddr>,
    pass: Pass,
) -> Result<(), TaskError> {
    let registry = state.registry();
    let Some(service) = registry.get("", "v1", "services") else {
        return Ok(());
    };
    reconcile_service(state, service, endpoint.map(|e| e.port()), pass).await?;
    let Some(endpoint) = endpoint else {
        return Ok(());
    };
    let (address, port) = (endpoint.ip(), endpoint.port());
    if let Some(endpoints) = registry.get("", "v1", "endpoints") {
        let subsets = json!([{
            "addresses": [{"ip": address.to_string()}],
            "ports": [{"name": "https", "port": port, "protocol": "TCP"}],
        }]);
        let object = json!({
            "metadata": {"labels": {"endpointslice.kubernetes.io/skip-mirror": "true"}},
            "subsets": subsets,
        });
        ensure(state, endpoints, object, &["subsets"], pass).await?;
    }
    let slices = registry
        .get("discovery.k8s.io", "v1", "endpointslices")
        .or_else(|| registry.get("discovery.k8s.io", "v1beta1", "endpointslices"));
    if let Some(slices) = slices {
        // Upstream's endpointSliceFromEndpoints.
        let object = json!({
            "metadata": {"labels": {"kubernetes.io/service-name": NAME}},
            "addressType": family_of(address),
            "endpoints": [{"addresses": [address.to_string()], "conditions": {"ready": true}}],
            "ports": [{"name": "https", "port": port, "protocol": "TCP"}],
        });
        ensure(
            state,
            slices,
            object,
            &["addressType", "endpoints", "ports"],
            pass,
        )
        .await?;
    }
    Ok(())
}

/// The Service: created with the first address of the range if missing; its type and ports
/// put back if changed (upstream's `CreateOrUpdateMasterServiceIfNeeded` with reconcile on).
async fn reconcile_service(
    state: &State,
    kind: &RegisteredKind,
    port: Option<u16>,
    pass: Pass,
) -> Result<(), TaskError> {
    let target = port.unwrap_or(SERVICE_PORT);
    let ports =
        json!([{"name": "https", "port": SERVICE_PORT, "protocol": "TCP", "targetPort": target}]);
    let key = keys::object_key(&kind.info, Some(NAMESPACE), NAME);
    if let Some(kv) = state.storage.get(&key, None).await? {
        if pass == Pass::Keep {
            return Ok(());
        }
        let mut current: Value =
            serde_json::from_slice(&kv.value).map_err(|source| TaskError::Stored {
                key: key.clone(),
                source,
            })?;
        let spec = current.pointer("/spec");
        let same = spec.and_then(|s| s.get("ports")) == Some(&ports)
            && spec.and_then(|s| s.get("type")).and_then(Value::as_str) == Some("ClusterIP");
        if same {
            return Ok(());
        }
        if let Some(spec) = current.get_mut("spec").and_then(Value::as_object_mut) {
            spec.insert("ports".into(), ports);
            spec.insert("type".into(), Value::from("ClusterIP"));
        }
        return write_back(state, &key, &current, kv.mod_revision).await;
    }
    let allocations = state.storage.services();
    let Some(first) = allocations.cidr().first() else {
        return Ok(());
    };
    // Held until the create is done, as a client's create holds its reservation.
    let mut reservation = allocations.reserve();
    if let Err(refused) = reservation.ip(Some(first)) {
        tracing::warn!(ip = %first, %refused, "cannot create the kubernetes Service");
        return Ok(());
    }
    let ip = first.to_string();
    let mut spec = json!({
        "type": "ClusterIP",
        "clusterIP": ip,
        "clusterIPs": [ip],
        "sessionAffinity": "None",
        "ports": ports,
    });
    // Upstream's IP family fields exist from 1.21 (IPv6DualStack on by default).
    if state.kube_version >= crate::KubeVersion::new(1, 21) {
        spec["ipFamilies"] = json!([allocations.cidr().family()]);
        spec["ipFamilyPolicy"] = json!("SingleStack");
    }
    let object = json!({
        "metadata": {"labels": {"component": "apiserver", "provider": "kubernetes"}},
        "spec": spec,
    });
    create(state, kind, object).await
}

/// Creates the object made of `fields` if missing; otherwise, at start, puts back `owned`
/// (and the labels in `fields`) when they differ.
async fn ensure(
    state: &State,
    kind: &RegisteredKind,
    fields: Value,
    owned: &[&str],
    pass: Pass,
) -> Result<(), TaskError> {
    let key = keys::object_key(&kind.info, Some(NAMESPACE), NAME);
    let Some(kv) = state.storage.get(&key, None).await? else {
        return create(state, kind, fields).await;
    };
    if pass == Pass::Keep {
        return Ok(());
    }
    let mut current: Value =
        serde_json::from_slice(&kv.value).map_err(|source| TaskError::Stored {
            key: key.clone(),
            source,
        })?;
    let mut changed = false;
    for field in owned {
        if current.get(*field) != fields.get(*field)
            && let (Some(map), Some(value)) = (current.as_object_mut(), fields.get(*field))
        {
            map.insert((*field).to_owned(), value.clone());
            changed = true;
        }
    }
    if let (Some(labels), Some(meta)) = (
        fields
            .pointer("/metadata/labels")
            .and_then(Value::as_object),
        current.get_mut("metadata").and_then(Value::as_object_mut),
    ) {
        let have = meta.entry("labels").or_insert_with(|| json!({}));
        for (label, value) in labels {
            if have.get(label) != Some(value)
                && let Some(have) = have.as_object_mut()
            {
                have.insert(label.clone(), value.clone());
                changed = true;
            }
        }
    }
    if changed {
        write_back(state, &key, &current, kv.mod_revision).await?;
    }
    Ok(())
}

/// Writes `object` over the stored one at `revision`; a lost race waits for the next pass.
async fn write_back(
    state: &State,
    key: &str,
    object: &Value,
    revision: u64,
) -> Result<(), TaskError> {
    let bytes = serde_json::to_vec(object).map_err(TaskError::Encode)?;
    match state.storage.update(key, bytes.into(), revision).await {
        Ok(_) | Err(UpdateError::Conflict { .. } | UpdateError::NotFound) => Ok(()),
        Err(source) => Err(TaskError::Update {
            key: key.to_owned(),
            source,
        }),
    }
}

/// Creates `default/kubernetes` of `kind` from `fields`, with the server-set metadata and the
/// kind's defaults for the release.
async fn create(state: &State, kind: &RegisteredKind, fields: Value) -> Result<(), TaskError> {
    let info = &kind.info;
    let mut object = fields;
    if let Some(map) = object.as_object_mut() {
        map.insert("apiVersion".into(), Value::from(info.gvk.api_version()));
        map.insert("kind".into(), Value::from(&*info.gvk.kind));
    }
    if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.insert("name".into(), Value::from(NAME));
        meta.insert("namespace".into(), Value::from(NAMESPACE));
        meta.insert("uid".into(), Value::from(uuid::Uuid::new_v4().to_string()));
        meta.insert(
            "creationTimestamp".into(),
            serde_json::to_value(crate::time::Time::now()).map_err(TaskError::Encode)?,
        );
        if let Some(generation) = info
            .write_rules
            .generation_at(state.kube_version)
            .on_create()
        {
            meta.insert("generation".into(), Value::from(generation));
        }
    }
    defaulting::apply(&info.defaults, &mut object, state.kube_version);
    let key = keys::object_key(info, Some(NAMESPACE), NAME);
    let bytes = serde_json::to_vec(&object).map_err(TaskError::Encode)?;
    match state.storage.create(&key, bytes.into()).await {
        Ok(_) | Err(CreateError::AlreadyExists { .. }) => Ok(()),
        Err(source) => Err(TaskError::Create { key, source }),
    }
}

/// Makes the objects again when missing, checking every [`INTERVAL`], until `stop`.
pub(crate) fn spawn(state: State, endpoint: Option<SocketAddr>, stop: signal::Receiver<bool>) {
    spawn_repeating(stop, INTERVAL, move || {
        let state = state.clone();
        async move {
            if let Err(error) = reconcile(&state, endpoint, Pass::Keep).await {
                tracing::warn!(%error, "reconciling the kubernetes Service failed; retrying");
            }
        }
    });
}
