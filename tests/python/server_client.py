"""The official Kubernetes Python client against a running kapi server.

Usage: server_client.py KUBECONFIG. Exits non-zero with a message on the first failed check.
The server must run with a short compaction interval (the 410 check waits for compaction).
"""

import sys
import time

from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException

NS = "default"


def check(condition, message):
    if not condition:
        raise AssertionError(message)


def config_map(name, data, labels=None):
    return client.V1ConfigMap(
        metadata=client.V1ObjectMeta(name=name, labels=labels or {}), data=data
    )


def expect_status(code, call, *args, **kwargs):
    try:
        call(*args, **kwargs)
    except ApiException as e:
        check(e.status == code, f"expected HTTP {code}, got {e.status}: {e.body}")
        return e
    raise AssertionError(f"expected HTTP {code}, the call succeeded")


def crud(core):
    created = core.create_namespaced_config_map(NS, config_map("py-crud", {"a": "1"}))
    check(created.metadata.uid, "create returned no uid")
    check(created.metadata.resource_version, "create returned no resourceVersion")
    got = core.read_namespaced_config_map("py-crud", NS)
    check(got.data == {"a": "1"}, f"read returned {got.data}")
    got.data["b"] = "2"
    replaced = core.replace_namespaced_config_map("py-crud", NS, got)
    check(replaced.data == {"a": "1", "b": "2"}, f"replace returned {replaced.data}")
    check(
        int(replaced.metadata.resource_version) > int(created.metadata.resource_version),
        "resourceVersion did not grow on update",
    )
    # The object read before the update is now stale: writing it back must conflict.
    got.data["c"] = "3"
    err = expect_status(409, core.replace_namespaced_config_map, "py-crud", NS, got)
    check("Conflict" in err.body, f"409 without reason Conflict: {err.body}")
    check(
        "the object has been modified" in err.body,
        f"409 without the upstream message: {err.body}",
    )
    expect_status(409, core.create_namespaced_config_map, NS, config_map("py-crud", {}))
    core.delete_namespaced_config_map("py-crud", NS)
    expect_status(404, core.read_namespaced_config_map, "py-crud", NS)


def pagination(core):
    names = {f"py-page-{i:02d}" for i in range(7)}
    for name in names:
        core.create_namespaced_config_map(NS, config_map(name, {}, {"suite": "page"}))
    seen, token, pages = [], None, 0
    while True:
        page = core.list_namespaced_config_map(
            NS, label_selector="suite=page", limit=3, _continue=token
        )
        pages += 1
        check(len(page.items) <= 3, f"page of {len(page.items)} items with limit 3")
        seen += [item.metadata.name for item in page.items]
        token = page.metadata._continue
        if not token:
            break
        check(pages < 10, "pagination does not end")
    check(pages == 3, f"7 items with limit 3 took {pages} pages")
    check(sorted(seen) == sorted(names), f"pages held {seen}")


def watch_resume(core):
    first = core.create_namespaced_config_map(NS, config_map("py-watch", {"v": "0"}))
    start = first.metadata.resource_version
    for i in range(1, 4):
        obj = core.read_namespaced_config_map("py-watch", NS)
        obj.data["v"] = str(i)
        core.replace_namespaced_config_map("py-watch", NS, obj)
    core.delete_namespaced_config_map("py-watch", NS)

    # Everything after the create, replayed from history in order.
    events = []
    w = watch.Watch()
    for event in w.stream(
        core.list_namespaced_config_map,
        NS,
        field_selector="metadata.name=py-watch",
        resource_version=start,
        timeout_seconds=5,
    ):
        events.append((event["type"], (event["object"].data or {}).get("v")))
        if event["type"] == "DELETED":
            w.stop()
    check(
        events == [("MODIFIED", "1"), ("MODIFIED", "2"), ("MODIFIED", "3"), ("DELETED", "3")],
        f"watch from {start} saw {events}",
    )

    # Resume in the middle: only what came after that resourceVersion.
    w = watch.Watch()
    resumed = []
    middle = None
    for event in w.stream(
        core.list_namespaced_config_map,
        NS,
        field_selector="metadata.name=py-watch",
        resource_version=start,
        timeout_seconds=5,
    ):
        middle = event["object"].metadata.resource_version
        w.stop()
    for event in watch.Watch().stream(
        core.list_namespaced_config_map,
        NS,
        field_selector="metadata.name=py-watch",
        resource_version=middle,
        timeout_seconds=2,
    ):
        resumed.append(event["type"])
        if event["type"] == "DELETED":
            break
    check(resumed == ["MODIFIED", "MODIFIED", "DELETED"], f"resumed watch saw {resumed}")
    return start


def expired(core, old_rv):
    # Keep writing until the compactor has moved past old_rv (the server runs with a short
    # compaction interval), then a watch from it must end with 410 Gone.
    deadline = time.time() + 20
    while time.time() < deadline:
        core.create_namespaced_config_map(NS, config_map(f"py-tick-{time.time_ns()}", {}))
        try:
            core.list_namespaced_config_map(NS, resource_version=old_rv, resource_version_match="Exact", limit=1)
        except ApiException as e:
            check(e.status == 410, f"list at a compacted version gave {e.status}: {e.body}")
            break
        time.sleep(0.5)
    else:
        raise AssertionError(f"resourceVersion {old_rv} was never compacted")
    try:
        for event in watch.Watch().stream(
            core.list_namespaced_config_map, NS, resource_version=old_rv, timeout_seconds=5
        ):
            raise AssertionError(f"watch from a compacted version delivered {event['type']}")
    except ApiException as e:
        # The client turns the ERROR event's Status 410 into an exception.
        check(e.status == 410, f"watch from a compacted version: {e.status} {e.reason}")
    else:
        raise AssertionError("watch from a compacted version ended without 410")


def main():
    config.load_kube_config(config_file=sys.argv[1])
    core = client.CoreV1Api()
    names = [ns.metadata.name for ns in core.list_namespace().items]
    check("default" in names, f"namespaces: {names}")
    crud(core)
    pagination(core)
    old_rv = watch_resume(core)
    expired(core, old_rv)
    print("ok")


if __name__ == "__main__":
    main()
