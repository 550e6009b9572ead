//! `POST .../pods/<name>/binding` and the older `POST .../bindings`: a `Binding` assigns a
//! pod to a node, which is how a scheduler places a pod. As upstream's `BindingREST`
//! (`pkg/registry/core/pod/storage/storage.go`) does it, the binding is checked
//! (`ValidatePodBinding`), then the pod is changed in storage directly, past its update
//! strategy: `spec.nodeName` set, the binding's annotations added and the `PodScheduled`
//! condition made true. A pod that is being deleted, already has a node or still has
//! scheduling gates is a 409 on `pods/binding`. Nothing is stored of the binding itself; the
//! answer is a success `Status` with code 201.

use axum::body::Body;
use axum::http::StatusCode;
use axum::response::Response;
use serde_json::{Value, json};

use crate::meta::{CreateOptions, Status};
use crate::storage::{Storage as _, UpdateError};
use crate::time::Time;

use crate::server::Call;
use crate::server::handlers::object::{RETRIES, check_namespace, read};
use crate::server::handlers::request::write_request;
use crate::server::http::error::{ApiError, Subject};
use crate::server::http::negotiate::{self, Output};
use crate::server::http::path::is_pod_kind;
use crate::server::objects::json::{meta_mut, meta_str, object_mut, set_condition};
use crate::server::objects::stored::{kv_object, to_stored};

/// Serves a `Binding` of the pod named in the URL (`name`), or, on the `bindings` collection
/// (`None`), of the pod the binding names.
pub(crate) async fn serve(
    call: &Call,
    name: Option<&str>,
    body: Body,
    output: Output,
) -> Result<Response, ApiError> {
    let (body, write) = write_request::<CreateOptions>(call, body).await?;
    let binding = negotiate::decode_body(&call.headers, &body, call.state.cbor())?;
    if binding
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or("Binding")
        != "Binding"
    {
        return Err(ApiError::bad_request("not a Binding object"));
    }
    let given = meta_str(&binding, "name").unwrap_or("").to_owned();
    let name = name.unwrap_or(&given);
    if name != given {
        return Err(ApiError::bad_request(
            "name in URL does not match name in Binding object",
        ));
    }
    check_namespace(call, &binding)?;
    // Upstream returns the aggregate of these field errors as a plain error: a 500 without a
    // reason, as its `ErrorToAPIStatus` answers anything that is not an API status.
    let problems = binding_problems(&binding);
    if !problems.is_empty() {
        return Err(ApiError::unstatused(aggregate(&problems)));
    }
    let mut binding = binding;
    crate::server::admission::admit_action(call, &mut binding, name, write.dry_run).await?;
    assign(&pods_call(call)?, name, &binding, write.dry_run).await?;
    let mut status = Status::success();
    status.code = Some(201);
    let value = serde_json::to_value(status).map_err(ApiError::internal)?;
    Ok(negotiate::encode(
        output.format,
        StatusCode::CREATED,
        &value,
    ))
}

/// The call on the pods themselves: a POST to `bindings` targets that collection.
fn pods_call(call: &Call) -> Result<Call, ApiError> {
    if is_pod_kind(call.info()) {
        return Ok(call.clone());
    }
    let Some(pods) = call.registry.get("", "v1", "pods") else {
        return Err(ApiError::no_route());
    };
    let mut on_pods = call.clone();
    on_pods.target.kind = pods.clone();
    on_pods.target.sub = None;
    Ok(on_pods)
}

/// `ValidatePodBinding`: the target is a Node (or names no kind) and has a name.
fn binding_problems(binding: &Value) -> Vec<String> {
    let target = binding.get("target");
    let field = |name: &str| {
        target
            .and_then(|t| t.get(name))
            .and_then(Value::as_str)
            .unwrap_or("")
    };
    let mut problems = Vec::new();
    let kind = field("kind");
    if !kind.is_empty() && kind != "Node" {
        problems.push(format!(
            "target.kind: Unsupported value: {kind:?}: supported values: \"Node\", \"<empty>\""
        ));
    }
    if field("name").is_empty() {
        problems.push("target.name: Required value".to_owned());
    }
    problems
}

/// Go's `ErrorList.ToAggregate().Error()`: one message alone, several in brackets.
fn aggregate(problems: &[String]) -> String {
    match problems {
        [one] => one.clone(),
        many => format!("[{}]", many.join(", ")),
    }
}

/// `setPodHostAndAnnotations` under `GuaranteedUpdate`: the binding's uid and resourceVersion
/// are preconditions on the pod; a lost race reads again unless the binding pinned a version.
async fn assign(call: &Call, name: &str, binding: &Value, dry_run: bool) -> Result<(), ApiError> {
    let node = binding
        .pointer("/target/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    let pinned = meta_str(binding, "resourceVersion").filter(|rv| !rv.is_empty());
    let want_uid = meta_str(binding, "uid").filter(|uid| !uid.is_empty());
    for _ in 0..RETRIES {
        let kv = read(call, name).await?;
        let pod = kv_object(call, &kv).await?;
        let uid = meta_str(&pod, "uid").unwrap_or("");
        if let Some(want) = want_uid
            && want != uid
        {
            return Err(call.uid_precondition_failed(name, want, uid));
        }
        if let Some(want) = pinned
            && want != kv.mod_revision.to_string()
        {
            return Err(call.resource_version_precondition_failed(name, want, kv.mod_revision));
        }
        let next = bound(&pod, node, binding).map_err(|reason| {
            ApiError::conflict(
                Subject {
                    group: "",
                    resource: "pods/binding",
                    name,
                },
                &reason,
            )
        })?;
        if dry_run {
            return Ok(());
        }
        let stored = to_stored(call, &next).await?;
        match call
            .state
            .storage
            .update(&call.key(name), stored, kv.mod_revision)
            .await
        {
            Ok(_) => return Ok(()),
            Err(UpdateError::Conflict { .. }) if pinned.is_none() => continue,
            Err(e) => return Err(ApiError::from_update(e, call.subject(name))),
        }
    }
    Err(ApiError::conflict_modified(call.subject(name)))
}

/// The pod bound to `node` with the binding's annotations and a true `PodScheduled`
/// condition, or why it cannot be.
fn bound(pod: &Value, node: &str, binding: &Value) -> Result<Value, String> {
    let name = meta_str(pod, "name").unwrap_or("");
    if pod.pointer("/metadata/deletionTimestamp").is_some() {
        return Err(format!(
            "pod {name} is being deleted, cannot be assigned to a host"
        ));
    }
    let spec = pod.get("spec");
    let assigned = spec
        .and_then(|s| s.get("nodeName"))
        .and_then(Value::as_str)
        .unwrap_or("");
    if !assigned.is_empty() {
        return Err(format!(
            "pod {name} is already assigned to node {assigned:?}"
        ));
    }
    if spec
        .and_then(|s| s.get("schedulingGates"))
        .and_then(Value::as_array)
        .is_some_and(|gates| !gates.is_empty())
    {
        return Err(format!("pod {name} has non-empty .spec.schedulingGates"));
    }
    let mut next = pod.clone();
    let spec = object_mut(
        object_mut(&mut next)
            .entry("spec")
            .or_insert_with(|| json!({})),
    );
    spec.insert("nodeName".into(), Value::from(node));
    if let Some(Value::Object(added)) = binding.pointer("/metadata/annotations") {
        let meta = meta_mut(&mut next);
        let annotations = object_mut(meta.entry("annotations").or_insert_with(|| json!({})));
        for (key, value) in added {
            annotations.insert(key.clone(), value.clone());
        }
    }
    let status = object_mut(
        object_mut(&mut next)
            .entry("status")
            .or_insert_with(|| json!({})),
    );
    // `UpdatePodCondition`: the new condition carries no reason or message.
    let now = serde_json::to_value(Time::now()).unwrap_or(Value::Null);
    let scheduled = json!({"type": "PodScheduled", "status": "True", "lastProbeTime": null});
    set_condition(status, scheduled, now);
    Ok(next)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_binding_must_name_a_node() {
        // ValidatePodBinding (pkg/apis/core/validation/validation.go).
        assert!(binding_problems(&json!({"target": {"name": "n1"}})).is_empty());
        assert!(binding_problems(&json!({"target": {"kind": "Node", "name": "n1"}})).is_empty());
        let problems = binding_problems(&json!({"target": {"kind": "Pod"}}));
        assert_eq!(
            aggregate(&problems),
            "[target.kind: Unsupported value: \"Pod\": supported values: \"Node\", \"<empty>\", target.name: Required value]"
        );
        assert_eq!(
            aggregate(&binding_problems(&json!({}))),
            "target.name: Required value"
        );
    }

    #[test]
    fn binding_sets_the_node_the_annotations_and_the_scheduled_condition() {
        let pod = json!({
            "metadata": {"name": "web", "annotations": {"a": "1"}},
            "spec": {"containers": []},
            "status": {"phase": "Pending", "conditions": [
                {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                 "lastProbeTime": null, "lastTransitionTime": "2020-01-01T00:00:00Z"}
            ]}
        });
        let binding = json!({"metadata": {"annotations": {"b": "2"}}, "target": {"name": "n1"}});
        let next = bound(&pod, "n1", &binding).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(next["spec"]["nodeName"], "n1");
        assert_eq!(next["metadata"]["annotations"], json!({"a": "1", "b": "2"}));
        let conditions = next["status"]["conditions"]
            .as_array()
            .unwrap_or_else(|| panic!("conditions"));
        assert_eq!(conditions.len(), 1);
        assert_eq!(conditions[0]["status"], "True");
        assert!(conditions[0].get("reason").is_none());
        assert_ne!(conditions[0]["lastTransitionTime"], "2020-01-01T00:00:00Z");
    }

    #[test]
    fn a_pod_with_a_node_gates_or_a_deletion_is_not_bound() {
        let binding = json!({"target": {"name": "n2"}});
        let assigned = json!({"metadata": {"name": "web"}, "spec": {"nodeName": "n1"}});
        assert_eq!(
            bound(&assigned, "n2", &binding).err().as_deref(),
            Some("pod web is already assigned to node \"n1\"")
        );
        let gated =
            json!({"metadata": {"name": "web"}, "spec": {"schedulingGates": [{"name": "g"}]}});
        assert_eq!(
            bound(&gated, "n2", &binding).err().as_deref(),
            Some("pod web has non-empty .spec.schedulingGates")
        );
        let deleting = json!({"metadata": {"name": "web", "deletionTimestamp": "2020-01-01T00:00:00Z"}, "spec": {}});
        assert_eq!(
            bound(&deleting, "n2", &binding).err().as_deref(),
            Some("pod web is being deleted, cannot be assigned to a host")
        );
    }
}
