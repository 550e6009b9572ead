"""The official Kubernetes Python client's patch calls against a running kapi server.

Usage: apply_client.py KUBECONFIG. Exits non-zero with a message on the first failed check.
Covers a dict patch (sent as a strategic merge patch), a list patch (a JSON patch), an
explicit merge patch, server-side apply with its conflict and force, and the managed fields
each write records (the client's default manager comes from its User-Agent).
"""

import sys

from kubernetes import client, config
from kubernetes.client.rest import ApiException

NS = "default"
APPLY = "application/apply-patch+yaml"


def check(condition, message):
    if not condition:
        raise AssertionError(message)


def managers(obj):
    return [(m.manager, m.operation) for m in (obj.metadata.managed_fields or [])]


def main(kubeconfig):
    config.load_kube_config(config_file=kubeconfig)
    core = client.CoreV1Api()

    created = core.create_namespaced_config_map(
        NS,
        client.V1ConfigMap(metadata=client.V1ObjectMeta(name="py-patch"), data={"a": "1"}),
    )
    # Without fieldManager the manager is the User-Agent's product: OpenAPI-Generator.
    check(managers(created) == [("OpenAPI-Generator", "Update")], f"create: {managers(created)}")
    # The create made `data` whole, so its entry owns the map too (upstream's ".").
    created_fields = created.metadata.managed_fields[0].fields_v1
    check(created_fields == {"f:data": {".": {}, "f:a": {}}}, f"create fields: {created_fields}")

    smp = core.patch_namespaced_config_map("py-patch", NS, {"data": {"b": "2"}})
    check(smp.data == {"a": "1", "b": "2"}, f"strategic merge patch: {smp.data}")

    json_patch = core.patch_namespaced_config_map(
        "py-patch", NS, [{"op": "replace", "path": "/data/a", "value": "10"}],
        field_manager="py-json",
    )
    check(json_patch.data["a"] == "10", f"json patch: {json_patch.data}")
    check(("py-json", "Update") in managers(json_patch), f"json patch: {managers(json_patch)}")

    merge = core.patch_namespaced_config_map(
        "py-patch", NS, {"data": {"b": None, "c": "3"}},
        _content_type="application/merge-patch+json",
    )
    check(merge.data == {"a": "10", "c": "3"}, f"merge patch: {merge.data}")

    body = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "py-apply", "namespace": NS},
        "data": {"k": "v"},
    }
    applied = core.patch_namespaced_config_map(
        "py-apply", NS, body, field_manager="py-applier", _content_type=APPLY
    )
    check(applied.data == {"k": "v"}, f"apply create: {applied.data}")
    check(managers(applied) == [("py-applier", "Apply")], f"apply: {managers(applied)}")

    body["data"]["k"] = "other"
    try:
        core.patch_namespaced_config_map(
            "py-apply", NS, body, field_manager="intruder", _content_type=APPLY
        )
        raise AssertionError("a conflicting apply succeeded")
    except ApiException as e:
        check(e.status == 409, f"conflict: {e.status} {e.body}")
        check('conflict with \\"py-applier\\"' in e.body, f"conflict body: {e.body}")
        check("FieldManagerConflict" in e.body, f"conflict body: {e.body}")

    forced = core.patch_namespaced_config_map(
        "py-apply", NS, body, field_manager="intruder", force=True, _content_type=APPLY
    )
    check(forced.data == {"k": "other"}, f"forced apply: {forced.data}")
    check(managers(forced) == [("intruder", "Apply")], f"forced: {managers(forced)}")

    try:
        core.patch_namespaced_config_map("py-apply", NS, body, _content_type=APPLY)
        raise AssertionError("an apply without fieldManager succeeded")
    except ApiException as e:
        check(e.status == 422, f"apply without manager: {e.status} {e.body}")

    # Server-side apply through /scale: the applier owns the replicas, recorded on the
    # Deployment as an Apply entry of subresource "scale".
    apps = client.AppsV1Api()
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "py-scale", "namespace": NS},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "py"}},
            "template": {
                "metadata": {"labels": {"app": "py"}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]},
            },
        },
    }
    apps.patch_namespaced_deployment(
        "py-scale", NS, deployment, field_manager="py-applier", _content_type=APPLY
    )
    scale = {
        "apiVersion": "autoscaling/v1",
        "kind": "Scale",
        "metadata": {"name": "py-scale", "namespace": NS},
        "spec": {"replicas": 5},
    }
    try:
        apps.patch_namespaced_deployment_scale(
            "py-scale", NS, scale, field_manager="py-hpa", _content_type=APPLY
        )
        raise AssertionError("a conflicting scale apply succeeded")
    except ApiException as e:
        check(e.status == 409, f"scale conflict: {e.status} {e.body}")
        check(".spec.replicas" in e.body, f"scale conflict body: {e.body}")
    scaled = apps.patch_namespaced_deployment_scale(
        "py-scale", NS, scale, field_manager="py-hpa", force=True, _content_type=APPLY
    )
    check(scaled.spec.replicas == 5, f"scale apply: {scaled}")
    owner = [
        m for m in apps.read_namespaced_deployment("py-scale", NS).metadata.managed_fields
        if m.manager == "py-hpa"
    ]
    check(len(owner) == 1, f"scale entry: {owner}")
    check(
        (owner[0].operation, owner[0].subresource, owner[0].fields_v1)
        == ("Apply", "scale", {"f:spec": {"f:replicas": {}}}),
        f"scale entry: {owner[0]}",
    )

    print("ok")


if __name__ == "__main__":
    try:
        main(sys.argv[1])
    except AssertionError as e:
        print(f"FAILED: {e}")
        sys.exit(1)
