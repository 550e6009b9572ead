//! Upstream's `ServiceAccount` admission plugin (`plugin/pkg/admission/serviceaccount`,
//! `Plugin.Admit`), on pod creates:
//! - a mirror pod (annotated `kubernetes.io/config.mirror`) is left as it is, but may name no
//!   service account, reference no secret and project no token (upstream's `Validate`);
//! - `spec.serviceAccountName` defaults to `default` (the deprecated `spec.serviceAccount`
//!   alias names it when only the alias is given, and is written back as the v1 conversion
//!   does);
//! - the service account must exist (403 `error looking up service account ...`); a missing
//!   `default` one is looked for again, ten times in all at a 100-200 ms interval, since the
//!   service-account controller makes it right after its namespace (`getServiceAccount`);
//! - unless the pod or its service account opts out (`automountServiceAccountToken`), every
//!   container and init container without a mount at
//!   `/var/run/secrets/kubernetes.io/serviceaccount` mounts, read-only, the API access volume:
//!   since 1.21 (BoundServiceAccountTokenVolume) a projected `kube-api-access-<5 random>`
//!   volume of the bound token, the `kube-root-ca.crt` ConfigMap's `ca.crt` and the namespace;
//!   in 1.20 the service account's token Secret, which the tokens controller makes (a pod is
//!   refused with a ServerTimeout until there is one, see `legacy_token`);
//! - a pod without `imagePullSecrets` gets the service account's.

use serde_json::{Map, Value, json};

use crate::KubeVersion;
use crate::server::Call;
use crate::server::http::error::{ApiError, Subject};
use crate::server::objects::generated_names::random_suffix;

use super::{forbidden, storage};

/// The service account a pod without one runs as.
const DEFAULT_ACCOUNT: &str = "default";

/// Where the API credentials are mounted (`DefaultAPITokenMountPath`).
const MOUNT_PATH: &str = "/var/run/secrets/kubernetes.io/serviceaccount";

/// The prefix of the projected volume's name (`ServiceAccountVolumeName`).
const VOLUME_PREFIX: &str = "kube-api-access-";

/// The annotation marking a mirror pod (`MirrorPodAnnotationKey`).
use crate::server::state::node_graph::MIRROR_POD_ANNOTATION as MIRROR_ANNOTATION;

/// The first release whose pods mount a projected token (BoundServiceAccountTokenVolume beta).
const PROJECTED_SINCE: KubeVersion = KubeVersion::new(1, 21);

/// Sets a created pod's service account, its API access volume and image pull secrets.
pub(super) async fn admit(call: &Call, pod: &mut Value, name: &str) -> Result<(), ApiError> {
    if pod
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(MIRROR_ANNOTATION))
        .is_some()
    {
        return check_mirror(pod).map_err(|reason| forbidden(call, name, reason));
    }
    let namespace = call.target.namespace.clone().unwrap_or_default();
    let Some(Value::Object(spec)) = pod.get_mut("spec") else {
        return Ok(());
    };
    let given = |field: &str| {
        spec.get(field)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
    };
    let account_name = given("serviceAccountName")
        .or_else(|| given("serviceAccount"))
        .unwrap_or_else(|| DEFAULT_ACCOUNT.to_owned());
    spec.insert(
        "serviceAccountName".into(),
        Value::from(account_name.as_str()),
    );
    spec.insert("serviceAccount".into(), Value::from(account_name.as_str()));
    if call.registry.get("", "v1", "serviceaccounts").is_none() {
        // A catalog without ServiceAccounts has no account to look up or mount.
        return Ok(());
    }
    let Some(account) = look_up(call, &namespace, &account_name).await? else {
        return Err(forbidden(
            call,
            name,
            &format!(
                "error looking up service account {namespace}/{account_name}: serviceaccount {account_name:?} not found"
            ),
        ));
    };
    if automounts(spec, &account) {
        let volume = if call.state.kube_version >= PROJECTED_SINCE {
            Some(projected_volume(spec))
        } else {
            legacy_token(call, &namespace, &account_name, &account)
                .await?
                .map(|secret| secret_volume(spec, &secret))
        };
        if let Some((volume_name, volume)) = volume {
            mount(spec, &volume_name, volume);
        }
    }
    let no_pull_secrets = spec
        .get("imagePullSecrets")
        .and_then(Value::as_array)
        .is_none_or(Vec::is_empty);
    if no_pull_secrets
        && let Some(secrets) = account
            .get("imagePullSecrets")
            .and_then(Value::as_array)
            .filter(|s| !s.is_empty())
    {
        spec.insert("imagePullSecrets".into(), Value::Array(secrets.clone()));
    }
    Ok(())
}

/// The service account `name` of `namespace`, looked up as upstream's `getServiceAccount` does:
/// once, or for `default`, which its controller is about to make in a new namespace, up to
/// ten times at one interval of 100-200 ms.
async fn look_up(call: &Call, namespace: &str, name: &str) -> Result<Option<Value>, ApiError> {
    let attempts = if name == DEFAULT_ACCOUNT { ATTEMPTS } else { 1 };
    let interval = retry_interval();
    for attempt in 0..attempts {
        if attempt > 0 {
            tokio::time::sleep(interval).await;
        }
        let found = storage::read(call, "", "serviceaccounts", Some(namespace), name).await?;
        if found.is_some() {
            return Ok(found);
        }
    }
    Ok(None)
}

/// How often what a controller is about to make is looked for (`getServiceAccount`'s
/// `numAttempts` for `default`).
const ATTEMPTS: usize = 10;

/// The pause between those looks: one random interval of 100-200 ms per request, as upstream's.
fn retry_interval() -> std::time::Duration {
    let random = uuid::Uuid::new_v4().as_bytes()[0];
    std::time::Duration::from_millis(100 + u64::from(random) % 100)
}

/// `shouldAutomount`: the pod's choice, else the service account's, else yes.
fn automounts(spec: &Map<String, Value>, account: &Value) -> bool {
    spec.get("automountServiceAccountToken")
        .and_then(Value::as_bool)
        .or_else(|| {
            account
                .get("automountServiceAccountToken")
                .and_then(Value::as_bool)
        })
        .unwrap_or(true)
}

/// The projected volume of the bound token, the cluster CA and the namespace (upstream's
/// `TokenVolumeSource`, its default mode written out), named as an existing
/// `kube-api-access-` volume is, else `kube-api-access-<5 random>`. The second value is
/// `None` when the pod already has the volume.
fn projected_volume(spec: &Map<String, Value>) -> (String, Option<Value>) {
    let existing = volumes(spec).find_map(|v| {
        v.get("name")
            .and_then(Value::as_str)
            .filter(|n| n.starts_with(VOLUME_PREFIX))
    });
    if let Some(existing) = existing {
        return (existing.to_owned(), None);
    }
    let name = format!("{VOLUME_PREFIX}{}", random_suffix());
    let volume = json!({
        "name": name,
        "projected": {
            "defaultMode": 420,
            "sources": [
                {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                {"downwardAPI": {"items": [{
                    "path": "namespace",
                    "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"},
                }]}},
            ],
        },
    });
    (name, Some(volume))
}

/// The 1.20 volume of the token Secret `secret`: the pod's volume of that secret if it has
/// one, else a new one named after the secret (with a random suffix when the name is taken).
fn secret_volume(spec: &Map<String, Value>, secret: &str) -> (String, Option<Value>) {
    let existing = volumes(spec)
        .find(|v| v.pointer("/secret/secretName").and_then(Value::as_str) == Some(secret));
    if let Some(name) = existing.and_then(|v| v.get("name")).and_then(Value::as_str) {
        return (name.to_owned(), None);
    }
    let taken = volumes(spec).any(|v| v.get("name").and_then(Value::as_str) == Some(secret));
    let name = if taken {
        format!("{secret}-{}", random_suffix())
    } else {
        secret.to_owned()
    };
    let volume = json!({"name": name, "secret": {"secretName": secret, "defaultMode": 420}});
    (name, Some(volume))
}

fn volumes(spec: &Map<String, Value>) -> impl Iterator<Item = &Value> {
    spec.get("volumes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

/// Mounts `volume_name` in every container and init container that has nothing mounted at
/// the API credentials' path, and adds `volume` when one of them needed it.
fn mount(spec: &mut Map<String, Value>, volume_name: &str, volume: Option<Value>) {
    let mut needed = false;
    for list in ["initContainers", "containers"] {
        let Some(Value::Array(containers)) = spec.get_mut(list) else {
            continue;
        };
        for container in containers.iter_mut().filter_map(Value::as_object_mut) {
            let mounts = container
                .entry("volumeMounts")
                .or_insert_with(|| Value::Array(Vec::new()));
            let Value::Array(mounts) = mounts else {
                continue;
            };
            if mounts
                .iter()
                .any(|m| m.get("mountPath").and_then(Value::as_str) == Some(MOUNT_PATH))
            {
                continue;
            }
            mounts.push(json!({"name": volume_name, "readOnly": true, "mountPath": MOUNT_PATH}));
            needed = true;
        }
    }
    if let (true, Some(volume)) = (needed, volume) {
        let list = spec
            .entry("volumes")
            .or_insert_with(|| Value::Array(Vec::new()));
        if let Value::Array(list) = list {
            list.push(volume);
        }
    }
}

/// The first Secret the service account references that is its token
/// (`getReferencedServiceAccountToken`: type `kubernetes.io/service-account-token`,
/// annotated with the account's name and, when the Secret names one, its uid).
/// The token Secret a 1.20 pod of `account` mounts. The tokens controller
/// (`background::token_secrets`) makes one for every account right after the account, so a
/// server that runs it waits for it as [`look_up`] waits for `default` (upstream answers 500
/// at once and its clients retry), then refuses with upstream's `ServerTimeout`: `No API token
/// found for service account "<name>", retry after the token is automatically created and
/// added to the service account` (`mountServiceAccountToken`, with `Retry-After: 1`). A server
/// that signs no tokens has no such controller and admits the pod without one.
async fn legacy_token(
    call: &Call,
    namespace: &str,
    account_name: &str,
    account: &Value,
) -> Result<Option<String>, ApiError> {
    // Without signed tokens or stored Secrets there is no tokens controller to wait for.
    let controller = call.state.access.service_accounts.is_some()
        && call.registry.get("", "v1", "secrets").is_some();
    if !controller {
        return token_secret(call, namespace, account).await;
    }
    let interval = retry_interval();
    let mut account = account.clone();
    for attempt in 0..ATTEMPTS {
        if attempt > 0 {
            tokio::time::sleep(interval).await;
            match storage::read(call, "", "serviceaccounts", Some(namespace), account_name).await? {
                Some(read) => account = read,
                None => break,
            }
        }
        if let Some(secret) = token_secret(call, namespace, &account).await? {
            return Ok(Some(secret));
        }
    }
    Err(ApiError::server_timeout(
        Subject {
            group: "",
            resource: "serviceaccounts",
            name: "",
        },
        "create pod",
    )
    .reworded(format!(
        "No API token found for service account {account_name:?}, retry after the token is automatically created and added to the service account"
    )))
}

async fn token_secret(
    call: &Call,
    namespace: &str,
    account: &Value,
) -> Result<Option<String>, ApiError> {
    let meta = |v: &Value, f: &str| {
        v.get("metadata")
            .and_then(|m| m.get(f))
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    let account_name = meta(account, "name");
    let account_uid = meta(account, "uid");
    let referenced: Vec<String> = account
        .get("secrets")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|s| s.get("name").and_then(Value::as_str).map(str::to_owned))
        .collect();
    for name in referenced {
        let Some(secret) = storage::read(call, "", "secrets", Some(namespace), &name).await? else {
            continue;
        };
        let annotation = |key: &str| {
            secret
                .pointer("/metadata/annotations")
                .and_then(|a| a.get(key))
                .and_then(Value::as_str)
                .map(str::to_owned)
        };
        let is_token = secret.get("type").and_then(Value::as_str)
            == Some("kubernetes.io/service-account-token")
            && annotation("kubernetes.io/service-account.name") == account_name
            && annotation("kubernetes.io/service-account.uid")
                .is_none_or(|uid| Some(uid) == account_uid);
        if is_token {
            return Ok(Some(name));
        }
    }
    Ok(None)
}

/// Upstream's checks of a mirror pod: no service account, no secret, no projected token.
fn check_mirror(pod: &Value) -> Result<(), &'static str> {
    let spec = pod.get("spec").cloned().unwrap_or(Value::Null);
    if spec
        .get("serviceAccountName")
        .and_then(Value::as_str)
        .is_some_and(|s| !s.is_empty())
    {
        return Err("a mirror pod may not reference service accounts");
    }
    if references_secret(&spec) {
        return Err("a mirror pod may not reference secrets");
    }
    let projects_token = spec
        .get("volumes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|v| v.pointer("/projected/sources").and_then(Value::as_array))
        .flatten()
        .any(|source| source.get("serviceAccountToken").is_some());
    if projects_token {
        return Err("a mirror pod may not use ServiceAccountToken volume projections");
    }
    Ok(())
}

/// Whether a pod spec names a Secret anywhere upstream's `VisitPodSecretNames` looks: image
/// pull secrets, secret volumes and projections, containers' `envFrom` and `env`.
fn references_secret(spec: &Value) -> bool {
    let non_empty = |v: Option<&Value>| v.and_then(Value::as_array).is_some_and(|a| !a.is_empty());
    if non_empty(spec.get("imagePullSecrets")) {
        return true;
    }
    let in_volumes = spec
        .get("volumes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|v| {
            v.get("secret").is_some()
                || v.pointer("/projected/sources")
                    .and_then(Value::as_array)
                    .is_some_and(|s| s.iter().any(|p| p.get("secret").is_some()))
        });
    let in_containers = ["initContainers", "containers", "ephemeralContainers"]
        .iter()
        .filter_map(|list| spec.get(*list).and_then(Value::as_array))
        .flatten()
        .any(|c| {
            let from = c
                .get("envFrom")
                .and_then(Value::as_array)
                .into_iter()
                .flatten();
            let env = c.get("env").and_then(Value::as_array).into_iter().flatten();
            from.clone().any(|e| e.get("secretRef").is_some())
                || env
                    .clone()
                    .any(|e| e.pointer("/valueFrom/secretKeyRef").is_some())
        });
    in_volumes || in_containers
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Mirrors upstream's `TestAutomountsAPIToken` and `TestRespectsExistingMount`
    /// (admission_test.go): every container without a mount at the path mounts the volume;
    /// one mounting something there keeps it.
    #[test]
    fn containers_mount_the_api_access_volume() {
        let mut pod = json!({"containers": [
            {"name": "a"},
            {"name": "b", "volumeMounts": [{"name": "mine", "mountPath": MOUNT_PATH}]},
        ], "initContainers": [{"name": "i"}]});
        let Value::Object(spec) = &mut pod else {
            return;
        };
        let (name, volume) = projected_volume(spec);
        assert!(
            name.starts_with("kube-api-access-") && name.len() == 21,
            "{name}"
        );
        mount(spec, &name, volume);
        let mounted = json!([{"name": name, "readOnly": true, "mountPath": MOUNT_PATH}]);
        assert_eq!(spec["containers"][0]["volumeMounts"], mounted);
        assert_eq!(spec["initContainers"][0]["volumeMounts"], mounted);
        assert_eq!(spec["containers"][1]["volumeMounts"][0]["name"], "mine");
        assert_eq!(
            spec["volumes"][0]["projected"]["sources"][1]["configMap"]["name"],
            "kube-root-ca.crt"
        );
        // The pod's own kube-api-access volume is reused, not doubled.
        let (again, none) = projected_volume(spec);
        assert_eq!((again, none), (name, None));
    }

    /// `shouldAutomount`: the pod's choice wins over the service account's.
    #[test]
    fn automount_follows_pod_then_account() {
        let pod = |v: Value| v.as_object().cloned().unwrap_or_default();
        let off = json!({"automountServiceAccountToken": false});
        assert!(!automounts(&pod(json!({})), &off));
        assert!(automounts(
            &pod(json!({"automountServiceAccountToken": true})),
            &off
        ));
        assert!(automounts(&pod(json!({})), &json!({})));
    }

    /// Upstream's `TestRejectsMirrorPod...` cases.
    #[test]
    fn mirror_pods_reference_no_account_or_secret() {
        let named = json!({"spec": {"serviceAccountName": "x"}});
        assert_eq!(
            check_mirror(&named),
            Err("a mirror pod may not reference service accounts")
        );
        let secret = json!({"spec": {"containers": [{"env": [{"name": "e", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}]}]}});
        assert_eq!(
            check_mirror(&secret),
            Err("a mirror pod may not reference secrets")
        );
        assert_eq!(
            check_mirror(&json!({"spec": {"containers": [{"name": "c"}]}})),
            Ok(())
        );
    }
}
