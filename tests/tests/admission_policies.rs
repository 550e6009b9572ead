//! ValidatingAdmissionPolicies and their bindings as kube-apiserver enforces them
//! (`staging/src/k8s.io/apiserver/pkg/admission/plugin/policy/validating/`): policies that
//! deny, warn and audit, parameters from a ConfigMap, a binding limited by a namespace
//! selector, `resourceNames` on deletes, dry runs, a policy whose CEL does not compile refused
//! at creation, type errors against the matched kinds' schemas in a policy's status, the 1.28
//! feature gate, writes through `/scale`, `/token` and `/binding` judged as their own kinds,
//! all with kubectl against `kapi serve`; and a denial's
//! Status read by the official Python client.

#![allow(
    clippy::unwrap_used,
    reason = "helpers of a test: a failed unwrap is a failed test"
)]

use kapi_e2e::{KapiServer, Kubectl, ServerOptions, expect_python_ok};

/// A policy on `resources` of `group`, with `spec` extra fields and one validation.
fn policy(name: &str, group: &str, resources: &str, operations: &str, rest: &str) -> String {
    format!(
        r#"apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: {name}
spec:
  matchConstraints:
    resourceRules:
    - apiGroups: ["{group}"]
      apiVersions: ["v1"]
      operations: [{operations}]
      resources: ["{resources}"]
{rest}"#
    )
}

fn binding(name: &str, policy: &str, rest: &str) -> String {
    format!(
        r#"apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: {name}
spec:
  policyName: {policy}
{rest}"#
    )
}

/// `kubectl <args>`: success and stdout with stderr.
fn run(k: &Kubectl<'_>, args: &[&str]) -> (bool, String) {
    let output = k.run(args);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status.success(), text)
}

fn apply(k: &Kubectl<'_>, name: &str, manifest: &str) {
    let file = k.file(name, manifest);
    k.expect_ok(&["create", "-f", file.to_str().unwrap()]);
}

#[test]
fn kubectl_policies_deny_warn_audit_and_read_params() {
    let dir = tempfile::tempdir().unwrap();
    let audit_policy = dir.path().join("audit-policy.yaml");
    std::fs::write(
        &audit_policy,
        "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n",
    )
    .unwrap();
    let log = dir.path().join("audit.log");
    let server = KapiServer::start(&ServerOptions {
        args: vec![
            format!("--audit-policy-file={}", audit_policy.display()),
            format!("--audit-log-path={}", log.display()),
        ],
        ..ServerOptions::default()
    })
    .unwrap();
    let k = Kubectl::on_path(&server, dir.path());

    // A policy that denies, with its message; creates, patches and dry runs alike.
    apply(
        &k,
        "replicas.yaml",
        &policy(
            "replicas.kapi.test",
            "apps",
            "deployments",
            "CREATE, UPDATE",
            "  validations:\n  - expression: object.spec.replicas <= 5\n    message: at most 5 replicas\n",
        ),
    );
    let stored = k.expect_json(&["get", "validatingadmissionpolicy", "replicas.kapi.test"]);
    assert_eq!(stored["spec"]["failurePolicy"], "Fail", "{stored}");
    assert_eq!(
        stored["spec"]["matchConstraints"]["matchPolicy"], "Equivalent",
        "{stored}"
    );
    // The policy's status follows its generation, as upstream's type-checking controller.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let stored = k.expect_json(&["get", "validatingadmissionpolicy", "replicas.kapi.test"]);
        if stored["status"]["observedGeneration"] == stored["metadata"]["generation"] {
            assert_eq!(
                stored["status"]["typeChecking"],
                serde_json::json!({}),
                "{stored}"
            );
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{stored}");
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    // Without a binding, a policy does nothing.
    k.expect_ok(&[
        "create",
        "deployment",
        "early",
        "--image=nginx",
        "--replicas=6",
    ]);
    apply(
        &k,
        "replicas-binding.yaml",
        &binding(
            "replicas-binding",
            "replicas.kapi.test",
            "  validationActions: [Deny]\n",
        ),
    );
    let denial = "ValidatingAdmissionPolicy 'replicas.kapi.test' with binding 'replicas-binding' denied request: at most 5 replicas";
    let (ok, text) = run(
        &k,
        &[
            "create",
            "deployment",
            "big",
            "--image=nginx",
            "--replicas=6",
        ],
    );
    assert!(!ok, "{text}");
    assert!(
        text.contains(&format!("deployments.apps \"big\" is forbidden: {denial}")),
        "{text}"
    );
    let (ok, text) = run(
        &k,
        &[
            "create",
            "deployment",
            "big",
            "--image=nginx",
            "--replicas=6",
            "--dry-run=server",
        ],
    );
    assert!(!ok && text.contains(denial), "{text}");
    k.expect_ok(&[
        "create",
        "deployment",
        "web",
        "--image=nginx",
        "--replicas=3",
    ]);
    let set_replicas = |name: &str, replicas: u32| {
        let patch = format!(r#"{{"spec":{{"replicas":{replicas}}}}}"#);
        run(&k, &["patch", "deployment", name, "-p", &patch])
    };
    let (ok, text) = set_replicas("web", 7);
    assert!(!ok && text.contains(denial), "{text}");
    // A write that changes nothing is judged all the same, as upstream's `Store.Update` admits
    // it before its storage finds the object unchanged: `early`, made before the binding,
    // still asks for 6.
    let (ok, text) = set_replicas("early", 6);
    assert!(!ok && text.contains(denial), "{text}");
    let raw = k.expect_failure(&[
        "create",
        "-f",
        k.file(
            "raw.json",
            r#"{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"raw"},"spec":{"replicas":8,"selector":{"matchLabels":{"a":"b"}},"template":{"metadata":{"labels":{"a":"b"}},"spec":{"containers":[{"name":"c","image":"nginx"}]}}}}"#,
        )
        .to_str()
        .unwrap(),
    ]);
    // kubectl words a 422 from its details, as with upstream's (`The deployments "raw" is
    // invalid: : ...`).
    assert!(
        raw.contains(&format!("The deployments \"raw\" is invalid: : {denial}")),
        "{raw}"
    );

    // A policy that warns (and audits): the write goes through with upstream's warning.
    apply(
        &k,
        "owner.yaml",
        &policy(
            "owner.kapi.test",
            "",
            "configmaps",
            "CREATE",
            "  validations:\n  - expression: \"has(object.metadata.labels) && 'owner' in object.metadata.labels\"\n    messageExpression: \"'configmap ' + object.metadata.name + ' has no owner'\"\n  auditAnnotations:\n  - key: named\n    valueExpression: object.metadata.name\n",
        ),
    );
    apply(
        &k,
        "owner-binding.yaml",
        &binding(
            "owner-warn",
            "owner.kapi.test",
            "  validationActions: [Warn, Audit]\n",
        ),
    );
    let (ok, text) = run(&k, &["create", "configmap", "loose", "--from-literal=a=b"]);
    assert!(ok, "{text}");
    assert!(
        text.contains("Warning: Validation failed for ValidatingAdmissionPolicy 'owner.kapi.test' with binding 'owner-warn': configmap loose has no owner"),
        "{text}"
    );
    let owned = k.file(
        "owned.json",
        r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"owned","labels":{"owner":"me"}}}"#,
    );
    let (ok, text) = run(&k, &["create", "-f", owned.to_str().unwrap()]);
    assert!(ok && !text.contains("Warning"), "{text}");

    // Parameters from a ConfigMap; the binding limited to namespaces labelled strict.
    k.expect_ok(&["create", "namespace", "strict"]);
    k.expect_ok(&["label", "namespace", "strict", "mode=strict"]);
    k.expect_ok(&["create", "namespace", "relaxed"]);
    k.expect_ok(&[
        "create",
        "configmap",
        "limits",
        "-n",
        "default",
        "--from-literal=most=2",
    ]);
    apply(
        &k,
        "keys.yaml",
        &policy(
            "keys.kapi.test",
            "",
            "secrets",
            "CREATE, UPDATE",
            "  paramKind:\n    apiVersion: v1\n    kind: ConfigMap\n  validations:\n  - expression: \"!has(object.data) || size(object.data) <= int(params.data.most)\"\n    messageExpression: \"'at most ' + params.data.most + ' keys'\"\n    reason: Forbidden\n",
        ),
    );
    apply(
        &k,
        "keys-binding.yaml",
        &binding(
            "keys-strict",
            "keys.kapi.test",
            "  paramRef:\n    name: limits\n    namespace: default\n    parameterNotFoundAction: Deny\n  matchResources:\n    namespaceSelector:\n      matchLabels:\n        mode: strict\n  validationActions: [Deny]\n",
        ),
    );
    let three = [
        "--from-literal=a=1",
        "--from-literal=b=2",
        "--from-literal=c=3",
    ];
    let mut args = vec!["create", "secret", "generic", "many", "-n", "strict"];
    args.extend(three);
    let (ok, text) = run(&k, &args);
    assert!(!ok, "{text}");
    assert!(
        text.contains("secrets \"many\" is forbidden: ValidatingAdmissionPolicy 'keys.kapi.test' with binding 'keys-strict' denied request: at most 2 keys"),
        "{text}"
    );
    let mut args = vec!["create", "secret", "generic", "many", "-n", "relaxed"];
    args.extend(three);
    k.expect_ok(&args);
    k.expect_ok(&[
        "create",
        "secret",
        "generic",
        "few",
        "-n",
        "strict",
        "--from-literal=a=1",
    ]);
    // The parameter gone: `parameterNotFoundAction: Deny` refuses.
    k.expect_ok(&["delete", "configmap", "limits", "-n", "default"]);
    let (ok, text) = run(
        &k,
        &[
            "create",
            "secret",
            "generic",
            "more",
            "-n",
            "strict",
            "--from-literal=a=1",
        ],
    );
    assert!(!ok, "{text}");
    assert!(
        text.contains("denied request: failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction"),
        "{text}"
    );

    // `resourceNames` on deletes.
    let keep = k.file(
        "keep.json",
        r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"keep","labels":{"owner":"me"}}}"#,
    );
    k.expect_ok(&["create", "-f", keep.to_str().unwrap()]);
    apply(
        &k,
        "keep.yaml",
        &policy(
            "keep.kapi.test",
            "",
            "configmaps",
            "DELETE",
            "  validations:\n  - expression: \"request.operation != 'DELETE' || oldObject.metadata.name != 'keep'\"\n    message: keep is kept\n",
        )
        .replace("      resources: [\"configmaps\"]\n", "      resources: [\"configmaps\"]\n      resourceNames: [keep]\n"),
    );
    apply(
        &k,
        "keep-binding.yaml",
        &binding(
            "keep-binding",
            "keep.kapi.test",
            "  validationActions: [Deny]\n",
        ),
    );
    let (ok, text) = run(&k, &["delete", "configmap", "keep"]);
    assert!(!ok && text.contains("keep is kept"), "{text}");
    k.expect_ok(&["delete", "configmap", "owned"]);

    // The audit log carries the policy's annotations.
    let events = std::fs::read_to_string(&log).unwrap();
    assert!(
        events.contains("validation.policy.admission.k8s.io/validation_failure")
            && events.contains("owner.kapi.test/named"),
        "{events}"
    );
}

#[test]
fn kubectl_policies_that_do_not_compile_are_refused() {
    let server = KapiServer::start(&ServerOptions::default()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let k = Kubectl::on_path(&server, dir.path());
    let file = k.file(
        "bad.yaml",
        &policy(
            "bad.kapi.test",
            "apps",
            "deployments",
            "CREATE",
            "  validations:\n  - expression: replicas > 1\n",
        ),
    );
    let text = k.expect_failure(&["create", "-f", file.to_str().unwrap()]);
    assert!(
        text.contains(r#"The ValidatingAdmissionPolicy "bad.kapi.test" is invalid: spec.validations[0].expression: Invalid value: "replicas > 1": compilation failed: ERROR: <input>:1:1: undeclared reference to 'replicas' (in container '')"#),
        "{text}"
    );
    let file = k.file(
        "both.yaml",
        &binding(
            "both",
            "bad.kapi.test",
            "  validationActions: [Deny, Warn]\n",
        ),
    );
    let text = k.expect_failure(&["create", "-f", file.to_str().unwrap()]);
    assert!(
        text.contains("spec.validationActions: Invalid value: [\"Deny\",\"Warn\"]: must not contain both Deny and Warn"),
        "{text}"
    );

    // The `authorizer` variable is of the authz library's types (`library/authz.go`): a check
    // built with arguments of the wrong type does not compile, as cel-go's checker reports it.
    let file = k.file(
        "authz.yaml",
        &policy(
            "authz.kapi.test",
            "apps",
            "deployments",
            "CREATE",
            "  validations:\n  - expression: authorizer.group(1).resource('x').check('get').allowed()\n  - expression: authorizer.requestResource.check('get').reason()\n",
        ),
    );
    let text = k.expect_failure(&["create", "-f", file.to_str().unwrap()]);
    assert!(
        text.contains(r#"spec.validations[0].expression: Invalid value: "authorizer.group(1).resource('x').check('get').allowed()": compilation failed: ERROR: <input>:1:17: found no matching overload for 'group' applied to 'kubernetes.authorization.Authorizer.(int)'"#),
        "{text}"
    );
    assert!(
        text.contains(r#"spec.validations[1].expression: Invalid value: "authorizer.requestResource.check('get').reason()": must evaluate to bool"#),
        "{text}"
    );
}

/// The `authorizer` variable asks the server's authorizers about the requester, a service
/// account or the request's own resource (`k8s.io/apiserver/pkg/cel/library/authz.go`, bound by
/// the policy plugin as `NewAuthorizerVal` and `NewResourceAuthorizerVal`).
#[test]
fn kubectl_policies_ask_the_authorizer() {
    let server = KapiServer::start(&ServerOptions::default()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let k = Kubectl::on_path(&server, dir.path());
    let rules = r#"  validations:
  - expression: "authorizer.group('').resource('secrets').namespace(object.metadata.namespace).check('get').allowed()"
    message: creating configmaps takes reading secrets
  - expression: "authorizer.serviceAccount(object.metadata.namespace, 'builder').group('').resource('configmaps').namespace(object.metadata.namespace).check('create').allowed()"
    message: the builder account must be able to create configmaps too
  - expression: "authorizer.requestResource.check('create').allowed()"
    message: the request resource is the configmaps of the namespace
"#;
    apply(
        &k,
        "policy.yaml",
        &policy("authz.kapi.test", "", "configmaps", "\"CREATE\"", rules),
    );
    apply(
        &k,
        "binding.yaml",
        &binding("authz", "authz.kapi.test", "  validationActions: [Deny]\n"),
    );
    // alice may create configmaps; bob may also read secrets.
    k.expect_ok(&[
        "create",
        "role",
        "cm-writer",
        "--verb=create",
        "--resource=configmaps",
    ]);
    k.expect_ok(&[
        "create",
        "role",
        "secret-reader",
        "--verb=get",
        "--resource=secrets",
    ]);
    for user in ["alice", "bob"] {
        k.expect_ok(&[
            "create",
            "rolebinding",
            &format!("{user}-cm"),
            "--role=cm-writer",
            &format!("--user={user}"),
        ]);
    }
    k.expect_ok(&[
        "create",
        "rolebinding",
        "bob-secrets",
        "--role=secret-reader",
        "--user=bob",
    ]);

    let (ok, text) = run(&k, &["--as=alice", "create", "configmap", "a"]);
    assert!(!ok, "{text}");
    assert!(
        text.contains("ValidatingAdmissionPolicy 'authz.kapi.test' with binding 'authz' denied request: creating configmaps takes reading secrets"),
        "{text}"
    );
    let (ok, text) = run(&k, &["--as=bob", "create", "configmap", "b"]);
    assert!(!ok, "{text}");
    assert!(
        text.contains("denied request: the builder account must be able to create configmaps too"),
        "{text}"
    );
    k.expect_ok(&[
        "create",
        "rolebinding",
        "builder-cm",
        "--role=cm-writer",
        "--serviceaccount=default:builder",
    ]);
    // bob's role names configmaps in `default` only: a request resource with another
    // resource or namespace would refuse it.
    k.expect_ok(&["--as=bob", "create", "configmap", "b"]);
    // The cluster admin may do anything.
    k.expect_ok(&["create", "configmap", "c"]);
}

/// `matchPolicy: Equivalent` (the default): a policy on `autoscaling/v2`
/// HorizontalPodAutoscalers judges one created through `autoscaling/v1` as v2 (its CEL sees
/// the object converted, `request.kind` v2 and `request.requestKind` v1); the same policy with
/// `Exact` does not apply (`policy/matching/matching.go` `matchesResourceRules`, the generic
/// dispatcher's conversion to the matched kind).
#[test]
fn kubectl_policies_match_equivalent_versions() {
    let server = KapiServer::start(&ServerOptions::default()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let k = Kubectl::on_path(&server, dir.path());
    let on_v2 = |name: &str, match_policy: &str, expression: &str| {
        format!(
            r#"apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: {name}
spec:
  matchConstraints:
    matchPolicy: {match_policy}
    resourceRules:
    - apiGroups: ["autoscaling"]
      apiVersions: ["v2"]
      operations: ["CREATE"]
      resources: ["horizontalpodautoscalers"]
  validations:
  - expression: "{expression}"
"#
        )
    };
    let seen_as_v2 = "request.kind.version == 'v2' && request.requestKind.version == 'v1' && object.spec.metrics.all(m, m.resource.target.averageUtilization <= 80)";
    apply(
        &k,
        "equivalent.yaml",
        &on_v2("equivalent.kapi.test", "Equivalent", seen_as_v2),
    );
    apply(
        &k,
        "exact.yaml",
        &on_v2("exact.kapi.test", "Exact", "false"),
    );
    for policy in ["equivalent.kapi.test", "exact.kapi.test"] {
        apply(
            &k,
            &format!("{policy}-binding.yaml"),
            &binding(policy, policy, "  validationActions: [Deny]\n"),
        );
    }
    let hpa = |name: &str, percent: u32| {
        format!(
            r#"{{"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
  "metadata": {{"name": "{name}"}},
  "spec": {{"scaleTargetRef": {{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}},
    "maxReplicas": 5, "targetCPUUtilizationPercentage": {percent}}}}}"#
        )
    };
    apply(&k, "calm.json", &hpa("calm", 70));
    let file = k.file("hot.json", &hpa("hot", 90));
    let text = k.expect_failure(&["create", "-f", file.to_str().unwrap()]);
    assert!(
        text.contains("ValidatingAdmissionPolicy 'equivalent.kapi.test' with binding 'equivalent.kapi.test' denied request: failed expression:"),
        "{text}"
    );
}

// Upstream's type-checking controller (`policy/validating/typechecking.go`) checks each
// validation against the schemas of the kinds the policy matches and writes what the checker
// finds to `status.typeChecking.expressionWarnings`: `<gvk>: <cel-go error>` at the
// expression's field. The policy is created, and its warnings do not stop it.
#[test]
fn kubectl_policies_show_their_type_errors_in_their_status() {
    let server = KapiServer::start(&ServerOptions::default()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let k = Kubectl::on_path(&server, dir.path());
    apply(
        &k,
        "typo.yaml",
        &policy(
            "typo.kapi.test",
            "apps",
            "deployments",
            "CREATE",
            "  validations:\n  - expression: object.spec.replicass > 1\n  \
             - expression: object.spec.replicas > 1\n    messageExpression: object.spec.replicas\n",
        ),
    );
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let stored = loop {
        let stored = k.expect_json(&[
            "get",
            "validatingadmissionpolicy",
            "typo.kapi.test",
            "-o",
            "json",
        ]);
        if stored["status"]["observedGeneration"] == stored["metadata"]["generation"] {
            break stored;
        }
        assert!(std::time::Instant::now() < deadline, "{stored}");
        std::thread::sleep(std::time::Duration::from_millis(200));
    };
    assert_eq!(
        stored["status"]["typeChecking"],
        serde_json::json!({"expressionWarnings": [{
            "fieldRef": "spec.validations[0].expression",
            "warning": "apps/v1, Kind=Deployment: ERROR: <input>:1:12: undefined field 'replicass'\n | object.spec.replicass > 1\n | ...........^\n",
        }]}),
        "{stored}"
    );
    // The YAML kubectl shows carries the warning too.
    let yaml = k.expect_ok(&[
        "get",
        "validatingadmissionpolicy",
        "typo.kapi.test",
        "-o",
        "yaml",
    ]);
    assert!(
        yaml.contains("fieldRef: spec.validations[0].expression"),
        "{yaml}"
    );
    assert!(yaml.contains("undefined field 'replicass'"), "{yaml}");
}

/// In 1.28, ValidatingAdmissionPolicy is beta and off: its kinds are served once
/// `admissionregistration.k8s.io/v1beta1` is enabled, and enforced only with the gate on.
#[test]
fn kubectl_policies_in_1_28_need_their_gate() {
    let manifests = |k: &Kubectl<'_>| {
        let policy = policy(
            "nothing.kapi.test",
            "",
            "configmaps",
            "CREATE",
            "  validations:\n  - expression: \"false\"\n    message: nothing goes\n",
        )
        .replace(
            "admissionregistration.k8s.io/v1\n",
            "admissionregistration.k8s.io/v1beta1\n",
        );
        let binding = binding(
            "nothing",
            "nothing.kapi.test",
            "  validationActions: [Deny]\n",
        )
        .replace(
            "admissionregistration.k8s.io/v1\n",
            "admissionregistration.k8s.io/v1beta1\n",
        );
        apply(k, "policy.yaml", &format!("{policy}---\n{binding}"));
    };
    for (gate, enforced) in [(false, false), (true, true)] {
        let mut args =
            vec!["--runtime-config=admissionregistration.k8s.io/v1beta1=true".to_owned()];
        if gate {
            args.push("--feature-gates=ValidatingAdmissionPolicy=true".to_owned());
        }
        let server = KapiServer::start(&ServerOptions {
            kube_version: Some("1.28".to_owned()),
            args,
            ..ServerOptions::default()
        })
        .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let k = Kubectl::on_path(&server, dir.path());
        manifests(&k);
        let (ok, text) = run(&k, &["create", "configmap", "one"]);
        assert_eq!(ok, !enforced, "gate {gate}: {text}");
        if enforced {
            assert!(text.contains("denied request: nothing goes"), "{text}");
        }
    }
}

/// The denial's Status as the official Python client reads it: 422 Invalid by default, the
/// message with `admission.NewForbidden`'s prefix, and the message as the one cause.
#[test]
fn python_client_reads_a_policy_denial() {
    let server = KapiServer::start(&ServerOptions::default()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let k = Kubectl::on_path(&server, dir.path());
    apply(
        &k,
        "named.yaml",
        &policy(
            "named.kapi.test",
            "",
            "configmaps",
            "CREATE",
            "  validations:\n  - expression: \"object.metadata.name.startsWith('ok-')\"\n",
        ),
    );
    apply(
        &k,
        "named-binding.yaml",
        &binding("named", "named.kapi.test", "  validationActions: [Deny]\n"),
    );
    let script = r#"
import json, sys
from kubernetes import client, config
config.load_kube_config(config_file=sys.argv[1])
api = client.CoreV1Api()
api.create_namespaced_config_map("default", client.V1ConfigMap(metadata=client.V1ObjectMeta(name="ok-one")))
try:
    api.create_namespaced_config_map("default", client.V1ConfigMap(metadata=client.V1ObjectMeta(name="bad")))
    raise SystemExit("created")
except client.ApiException as e:
    assert e.status == 422, e.status
    body = json.loads(e.body)
    message = "ValidatingAdmissionPolicy 'named.kapi.test' with binding 'named' denied request: failed expression: object.metadata.name.startsWith('ok-')"
    assert body["reason"] == "Invalid", body
    assert body["message"] == 'configmaps "bad" is forbidden: ' + message, body
    assert body["details"]["causes"] == [{"message": message}], body
print("ok")
"#;
    expect_python_ok(&server, script, "1.36");
}

/// Writes through subresources are judged as upstream admits them. A `kubectl scale` is an
/// update of `deployments/scale` whose object is the new `autoscaling/v1` Scale and old object
/// the current one (`pkg/registry/apps/deployment/storage/storage.go`, `ScaleREST.Update` and
/// `scaleUpdatedObjectInfo`; `endpoints/handlers/update.go`), so a policy on
/// `deployments/scale` reads `object.spec.replicas` of the Scale and denies a scale over its
/// limit, while a write of the deployment itself is not its to judge. A `kubectl create token`
/// is a create of `serviceaccounts/token` whose object is the TokenRequest
/// (`pkg/registry/core/serviceaccount/storage/token.go`, `TokenREST.Create`, which runs the
/// validating admission once the request is completed); a pod's `binding` a create of its
/// Binding.
#[test]
fn kubectl_policies_judge_scales_and_token_requests() {
    let server = KapiServer::start(&ServerOptions::default()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let k = Kubectl::on_path(&server, dir.path());
    apply(
        &k,
        "scale-limit.yaml",
        &policy(
            "scale-limit.kapi.test",
            "apps",
            "deployments/scale",
            "UPDATE",
            "  validations:\n  - expression: \"request.kind.group == 'autoscaling' && request.kind.kind == 'Scale' && request.subResource == 'scale' && object.kind == 'Scale' && oldObject.kind == 'Scale'\"\n    message: not seen as a Scale\n  - expression: object.spec.replicas <= 20\n    messageExpression: \"'at most 20 replicas, not ' + string(object.spec.replicas) + ' (from ' + string(oldObject.spec.replicas) + ')'\"\n",
        ),
    );
    apply(
        &k,
        "scale-limit-binding.yaml",
        &binding(
            "scale-limit-binding",
            "scale-limit.kapi.test",
            "  validationActions: [Deny]\n",
        ),
    );
    k.expect_ok(&["create", "deployment", "web", "--image=nginx"]);
    let (ok, text) = run(&k, &["scale", "deployment", "web", "--replicas=50"]);
    assert!(!ok, "{text}");
    assert!(
        // kubectl words the 422 from its details, as the other denials above.
        text.contains("The deployments \"web\" is invalid: : ValidatingAdmissionPolicy 'scale-limit.kapi.test' with binding 'scale-limit-binding' denied request: at most 20 replicas, not 50 (from 1)"),
        "{text}"
    );
    let replicas = |k: &Kubectl<'_>| {
        k.expect_ok(&[
            "get",
            "deployment",
            "web",
            "-o",
            "jsonpath={.spec.replicas}",
        ])
    };
    assert_eq!(replicas(&k), "1");
    k.expect_ok(&["scale", "deployment", "web", "--replicas=5"]);
    assert_eq!(replicas(&k), "5");
    // A PUT of the Scale is judged alike.
    let scale = k.file(
        "scale.json",
        r#"{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"web","namespace":"default"},"spec":{"replicas":30}}"#,
    );
    let (ok, text) = run(
        &k,
        &[
            "replace",
            "--raw",
            "/apis/apps/v1/namespaces/default/deployments/web/scale",
            "-f",
            scale.to_str().unwrap(),
        ],
    );
    assert!(
        !ok && text.contains("at most 20 replicas, not 30 (from 5)"),
        "{text}"
    );
    assert_eq!(replicas(&k), "5");
    // The deployment itself is no `deployments/scale`.
    k.expect_ok(&[
        "patch",
        "deployment",
        "web",
        "-p",
        r#"{"spec":{"replicas":40}}"#,
    ]);
    assert_eq!(replicas(&k), "40");
    // A scale that changes nothing is judged all the same: upstream's `Store.Update` runs
    // validating admission before the storage finds the object unchanged.
    let (ok, text) = run(&k, &["scale", "deployment", "web", "--replicas=40"]);
    assert!(
        !ok && text.contains("at most 20 replicas, not 40 (from 40)"),
        "{text}"
    );

    // A token request for the account `blocked` is denied; others are issued.
    apply(
        &k,
        "tokens.yaml",
        &policy(
            "tokens.kapi.test",
            "",
            "serviceaccounts/token",
            "CREATE",
            "  validations:\n  - expression: \"request.kind.kind != 'TokenRequest' || object.metadata.name != 'blocked'\"\n    messageExpression: \"'no ' + request.kind.kind + ' for ' + object.metadata.name + ' lasting ' + string(object.spec.expirationSeconds)\"\n    reason: Forbidden\n",
        ),
    );
    apply(
        &k,
        "tokens-binding.yaml",
        &binding(
            "tokens-binding",
            "tokens.kapi.test",
            "  validationActions: [Deny]\n",
        ),
    );
    k.expect_ok(&["create", "serviceaccount", "blocked"]);
    let (ok, text) = run(&k, &["create", "token", "blocked"]);
    assert!(!ok, "{text}");
    assert!(
        text.contains("serviceaccounts \"blocked\" is forbidden: ValidatingAdmissionPolicy 'tokens.kapi.test' with binding 'tokens-binding' denied request: no TokenRequest for blocked lasting 3600"),
        "{text}"
    );
    let token = k.expect_ok(&["create", "token", "default"]);
    assert_eq!(token.trim().split('.').count(), 3, "{token}");

    // A pod's binding is reviewed as the Binding it takes (`BindingREST.New`,
    // `pkg/registry/core/pod/storage/storage.go`).
    apply(
        &k,
        "bindings.yaml",
        &policy(
            "bindings.kapi.test",
            "",
            "pods/binding",
            "CREATE",
            "  validations:\n  - expression: \"request.kind.kind == 'Binding' && request.kind.version == 'v1' && object.target.name != 'off-limits'\"\n    messageExpression: \"'no ' + request.kind.kind + ' to ' + object.target.name\"\n",
        ),
    );
    apply(
        &k,
        "bindings-binding.yaml",
        &binding(
            "bindings-binding",
            "bindings.kapi.test",
            "  validationActions: [Deny]\n",
        ),
    );
    k.expect_ok(&["run", "pinned", "--image=nginx", "--restart=Never"]);
    let bind = |node: &str| {
        let body = format!(
            r#"{{"apiVersion":"v1","kind":"Binding","metadata":{{"name":"pinned"}},"target":{{"apiVersion":"v1","kind":"Node","name":"{node}"}}}}"#
        );
        let file = k.file(&format!("binding-{node}.json"), &body);
        run(
            &k,
            &[
                "create",
                "--raw",
                "/api/v1/namespaces/default/pods/pinned/binding",
                "-f",
                file.to_str().unwrap(),
            ],
        )
    };
    let (ok, text) = bind("off-limits");
    assert!(!ok && text.contains("no Binding to off-limits"), "{text}");
    let (ok, text) = bind("node-1");
    assert!(ok, "{text}");

    // An eviction sent as policy/v1beta1 is reviewed as the policy/v1 Eviction the endpoint
    // decodes it into (both versions have one shape; upstream's decoder converts the body).
    apply(
        &k,
        "evictions.yaml",
        &policy(
            "evictions.kapi.test",
            "",
            "pods/eviction",
            "CREATE",
            "  validations:\n  - expression: \"request.kind.kind == 'Eviction' && object.kind == 'Eviction' && object.apiVersion == 'policy/v1'\"\n    messageExpression: \"'saw ' + object.apiVersion\"\n",
        ),
    );
    apply(
        &k,
        "evictions-binding.yaml",
        &binding(
            "evictions-binding",
            "evictions.kapi.test",
            "  validationActions: [Deny]\n",
        ),
    );
    k.expect_ok(&["run", "evicted", "--image=nginx", "--restart=Never"]);
    let eviction = k.file(
        "eviction.json",
        r#"{"apiVersion":"policy/v1beta1","kind":"Eviction","metadata":{"name":"evicted","namespace":"default"}}"#,
    );
    let (ok, text) = run(
        &k,
        &[
            "create",
            "--raw",
            "/api/v1/namespaces/default/pods/evicted/eviction",
            "-f",
            eviction.to_str().unwrap(),
        ],
    );
    assert!(ok, "{text}");
    let (ok, text) = run(&k, &["get", "pod", "evicted"]);
    assert!(!ok && text.contains("NotFound"), "{text}");
}
