//! MutatingAdmissionPolicies and their bindings as kube-apiserver enforces them
//! (`staging/src/k8s.io/apiserver/pkg/admission/plugin/policy/mutating/`): in 1.36, where the
//! plugin is GA, a policy that labels ConfigMaps through an `ApplyConfiguration` and one that
//! sets a field through `JSONPatch`, read back with kubectl; a failing expression under
//! `failurePolicy: Fail` refusing the write; a policy on a pod's `binding` subresource, which
//! stores nothing of its own, changing where the pod lands; and in 1.34, where the plugin is
//! beta and off, the feature gate and the `v1beta1` group-version that turn it on.

use kapi_e2e::{KapiServer, Kubectl, ServerOptions};

/// A mutating policy on ConfigMaps' creates with one mutation (`mutation` is its YAML, indented
/// for the list) and its binding, in `version`.
fn policy_and_binding(version: &str, name: &str, failure: &str, mutation: &str) -> String {
    policy_on(version, name, failure, "configmaps", mutation)
}

/// A mutating policy on the creates of core `resource` with one mutation, and its binding.
fn policy_on(version: &str, name: &str, failure: &str, resource: &str, mutation: &str) -> String {
    format!(
        r#"apiVersion: admissionregistration.k8s.io/{version}
kind: MutatingAdmissionPolicy
metadata:
  name: {name}
spec:
  failurePolicy: {failure}
  reinvocationPolicy: Never
  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: ["v1"]
      operations: ["CREATE"]
      resources: ["{resource}"]
  mutations:
{mutation}
---
apiVersion: admissionregistration.k8s.io/{version}
kind: MutatingAdmissionPolicyBinding
metadata:
  name: {name}
spec:
  policyName: {name}
"#
    )
}

/// Upstream's `ApplyConfiguration` example shape: an `Object{metadata: Object.metadata{...}}`
/// merged into the object (`patch/smd.go`).
const LABEL: &str = r#"  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: >-
        Object{metadata: Object.metadata{labels: {"team": "platform"}}}
"#;

/// A `JSONPatch` list (`patch/json_patch.go`), its path built with `jsonpatch.escapeKey`.
const DATA: &str = r#"  - patchType: JSONPatch
    jsonPatch:
      expression: >-
        [JSONPatch{op: "add", path: "/data/" + jsonpatch.escapeKey("owner"), value: object.metadata.name}]
"#;

fn create(k: &Kubectl<'_>, file: &str, manifest: &str) {
    let path = k.file(file, manifest);
    let path = path
        .to_str()
        .unwrap_or_else(|| panic!("temporary path is not UTF-8"));
    k.expect_ok(&["create", "-f", path]);
}

fn start(release: &str, args: &[&str]) -> KapiServer {
    KapiServer::start(&ServerOptions {
        kube_version: Some(release.to_owned()),
        args: args.iter().map(|a| (*a).to_owned()).collect(),
        ..ServerOptions::default()
    })
    .unwrap_or_else(|e| panic!("server {release}: {e}"))
}

#[test]
fn kubectl_objects_are_mutated_by_policies_in_1_36() {
    let server = start("1.36", &[]);
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let k = Kubectl::on_path(&server, dir.path());
    create(
        &k,
        "label.yaml",
        &policy_and_binding("v1", "label.kapi.test", "Fail", LABEL),
    );
    create(
        &k,
        "data.yaml",
        &policy_and_binding("v1", "data.kapi.test", "Fail", DATA),
    );
    k.expect_ok(&["create", "configmap", "one", "--from-literal=a=1"]);
    let label = k.expect_ok(&[
        "get",
        "configmap",
        "one",
        "-o",
        "jsonpath={.metadata.labels.team}",
    ]);
    assert_eq!(label.trim(), "platform");
    let data = k.expect_ok(&["get", "configmap", "one", "-o", "jsonpath={.data}"]);
    assert!(data.contains(r#""owner":"one""#), "{data}");
    assert!(data.contains(r#""a":"1""#), "{data}");

    // Upstream's dispatcher (`policy/generic/policy_dispatcher.go`): an evaluation error under
    // `failurePolicy: Fail` refuses the write with `policy '<policy>' with binding
    // '<binding>' denied request: <error>`, the error as `plugin/cel/activation.go` words it.
    let failing = r#"  - patchType: JSONPatch
    jsonPatch:
      expression: >-
        [JSONPatch{op: "add", path: "/data/x", value: object.data.missing}]
"#;
    create(
        &k,
        "failing.yaml",
        &policy_and_binding("v1", "failing.kapi.test", "Fail", failing),
    );
    let text = k.expect_failure(&["create", "configmap", "two", "--from-literal=a=1"]);
    assert!(
        text.contains("policy 'failing.kapi.test' with binding 'failing.kapi.test' denied request: expression '[JSONPatch{op: \"add\", path: \"/data/x\", value: object.data.missing}]' resulted in error: no such key: missing"),
        "{text}"
    );
    let missing = k.expect_failure(&["get", "configmap", "two"]);
    assert!(missing.contains("NotFound"), "{missing}");

    // The same policy under `Ignore` lets the write through unmutated by it.
    k.expect_ok(&["delete", "mutatingadmissionpolicy", "failing.kapi.test"]);
    create(
        &k,
        "ignored.yaml",
        &policy_and_binding("v1", "ignored.kapi.test", "Ignore", failing),
    );
    k.expect_ok(&["create", "configmap", "three", "--from-literal=a=1"]);
}

/// A policy's mutation is defaulted as the kind's writes are; and admission runs on a create
/// through a subresource as on any create (upstream's
/// `createHandler` admits the `Binding` a scheduler posts to `pods/<name>/binding` before
/// `BindingREST.Create` acts on it), so a mutating policy matching `pods/binding` changes
/// the node the pod is bound to.
#[test]
fn kubectl_mutations_are_defaulted_and_bindings_mutated() {
    let server = start("1.36", &[]);
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let k = Kubectl::on_path(&server, dir.path());
    let pin = r#"  - patchType: JSONPatch
    jsonPatch:
      expression: >-
        [JSONPatch{op: "replace", path: "/target/name", value: "pinned-" + object.target.name}]
"#;
    let policy = policy_on("v1", "pin.kapi.test", "Fail", "pods/binding", pin);
    create(&k, "pin.yaml", &policy);
    // A mutated object is decoded and defaulted again (upstream's `dispatchOne` runs the
    // kind's defaulter on it): the container a policy adds gets its defaults, and a field no
    // container has is dropped.
    let sidecar = r#"  - patchType: JSONPatch
    jsonPatch:
      expression: >-
        [JSONPatch{op: "add", path: "/spec/containers/-", value: {"name": "log", "image": "busybox", "bogus": 1}}]
"#;
    let sidecar = policy_on("v1", "sidecar.kapi.test", "Fail", "pods", sidecar);
    create(&k, "sidecar.yaml", &sidecar);
    k.expect_ok(&["run", "web", "--image=nginx", "--restart=Never"]);
    let added = k.expect_ok(&["get", "pod", "web", "-o", "jsonpath={.spec.containers[1]}"]);
    assert!(added.contains(r#""imagePullPolicy":"Always""#), "{added}");
    assert!(
        added.contains(r#""terminationMessagePolicy":"File""#),
        "{added}"
    );
    assert!(!added.contains("bogus"), "{added}");
    let binding = r#"{"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "web"},
        "target": {"apiVersion": "v1", "kind": "Node", "name": "node-1"}}"#;
    let path = k.file("binding.json", binding);
    let path = path
        .to_str()
        .unwrap_or_else(|| panic!("temporary path is not UTF-8"));
    k.expect_ok(&[
        "create",
        "--raw",
        "/api/v1/namespaces/default/pods/web/binding",
        "-f",
        path,
    ]);
    let node = k.expect_ok(&["get", "pod", "web", "-o", "jsonpath={.spec.nodeName}"]);
    assert_eq!(node.trim(), "pinned-node-1");
}

/// Upstream's `validateMutatingAdmissionPolicySpec` and `validateMutation`: an expression that
/// does not compile and a missing `reinvocationPolicy` refuse the policy.
/// `matchPolicy: Equivalent`: a policy on `autoscaling/v2` HorizontalPodAutoscalers mutates
/// one created through `autoscaling/v1` as v2 (its `metrics`), and the change comes back to v1
/// (the generic dispatcher converts to the matched kind and back).
#[test]
fn kubectl_mutations_reach_equivalent_versions() {
    let server = start("1.36", &[]);
    let dir = tempfile::tempdir().unwrap();
    let k = Kubectl::on_path(&server, dir.path());
    let policy = r#"apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata:
  name: cap
spec:
  failurePolicy: Fail
  reinvocationPolicy: Never
  matchConstraints:
    resourceRules:
    - apiGroups: ["autoscaling"]
      apiVersions: ["v2"]
      operations: ["CREATE"]
      resources: ["horizontalpodautoscalers"]
  mutations:
  - patchType: JSONPatch
    jsonPatch:
      expression: >-
        [JSONPatch{op: "replace", path: "/spec/metrics/0/resource/target/averageUtilization", value: 60}]
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicyBinding
metadata:
  name: cap
spec:
  policyName: cap
"#;
    create(&k, "cap.yaml", policy);
    let hpa = r#"{"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
  "metadata": {"name": "web", "namespace": "default"},
  "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
    "maxReplicas": 5, "targetCPUUtilizationPercentage": 90}}"#;
    create(&k, "web.json", hpa);
    let stored = k.expect_json(&[
        "get",
        "horizontalpodautoscalers.v1.autoscaling",
        "web",
        "-o",
        "json",
    ]);
    assert_eq!(
        stored["spec"]["targetCPUUtilizationPercentage"], 60,
        "{stored}"
    );
}

#[test]
fn kubectl_mutating_policies_that_do_not_compile_are_refused() {
    let server = start("1.36", &[]);
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let k = Kubectl::on_path(&server, dir.path());
    let manifest = policy_and_binding(
        "v1",
        "bad.kapi.test",
        "Fail",
        "  - patchType: ApplyConfiguration\n    applyConfiguration:\n      expression: Foo{}\n",
    )
    .replace("  reinvocationPolicy: Never\n", "");
    let path = k.file("bad.yaml", &manifest);
    let text = k.expect_failure(&[
        "create",
        "-f",
        path.to_str().unwrap_or_else(|| panic!("path")),
    ]);
    assert!(
        text.contains(r#"spec.mutations[0].applyConfiguration.expression: Invalid value: "Foo{}": compilation failed: ERROR: <input>:1:"#)
            && text.contains("undeclared reference to 'Foo' (in container '')"),
        "{text}"
    );
    assert!(
        text.contains("spec.reinvocationPolicy: Required value"),
        "{text}"
    );

    // An expression that compiles but certainly gives the wrong type is refused too: upstream's
    // `validateMutation` compiles it against its accessor's return type (`Object`,
    // `list(JSONPatch)`, `plugin/cel/compile.go`).
    let mutations = r#"  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: 'Object.metadata{labels: {"team": "a"}}'
  - patchType: JSONPatch
    jsonPatch:
      expression: "[]"
  - patchType: JSONPatch
    jsonPatch:
      expression: "[JSONPatch{op: 'remove', path: '/data'}]"
  - patchType: JSONPatch
    jsonPatch:
      expression: "[JSONPatch{op: 1, path: '/a'}]"
"#;
    let manifest = policy_and_binding("v1", "typed.kapi.test", "Fail", mutations);
    let path = k.file("typed.yaml", &manifest);
    let text = k.expect_failure(&[
        "create",
        "-f",
        path.to_str().unwrap_or_else(|| panic!("path")),
    ]);
    assert!(
        text.contains(r#"spec.mutations[0].applyConfiguration.expression: Invalid value: "Object.metadata{labels: {\"team\": \"a\"}}": must evaluate to Object but got Object.metadata"#),
        "{text}"
    );
    assert!(
        text.contains(r#"spec.mutations[1].jsonPatch.expression: Invalid value: "[]": must evaluate to list(JSONPatch) but got list(dyn)"#),
        "{text}"
    );
    assert!(!text.contains("spec.mutations[2]"), "{text}");
    // The `JSONPatch` type's fields are declared (`op`, `path`, `from` strings).
    assert!(
        text.contains(r#"spec.mutations[3].jsonPatch.expression: Invalid value: "[JSONPatch{op: 1, path: '/a'}]": compilation failed: ERROR: <input>:1:14: expected type of field 'op' is 'string' but provided type is 'int'"#),
        "{text}"
    );
    let missing = k.expect_failure(&["get", "mutatingadmissionpolicy", "typed.kapi.test"]);
    assert!(missing.contains("NotFound"), "{missing}");
}

/// In 1.34 MutatingAdmissionPolicy is beta and off (k8s.io/apiserver `kube_features.go`): its
/// kinds are served once `--runtime-config` enables `admissionregistration.k8s.io/v1beta1`,
/// and enforced only with `--feature-gates=MutatingAdmissionPolicy=true` (the plugin's
/// `InspectFeatureGates`).
#[test]
fn kubectl_mutating_policies_in_1_34_need_their_gate() {
    for (gate, enforced) in [(false, false), (true, true)] {
        let mut args = vec!["--runtime-config=admissionregistration.k8s.io/v1beta1=true"];
        if gate {
            args.push("--feature-gates=MutatingAdmissionPolicy=true");
        }
        let server = start("1.34", &args);
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let k = Kubectl::on_path(&server, dir.path());
        create(
            &k,
            "label.yaml",
            &policy_and_binding("v1beta1", "label.kapi.test", "Fail", LABEL),
        );
        k.expect_ok(&["create", "configmap", "one"]);
        let label = k.expect_ok(&[
            "get",
            "configmap",
            "one",
            "-o",
            "jsonpath={.metadata.labels.team}",
        ]);
        assert_eq!(label.trim() == "platform", enforced, "gate {gate}: {label}");
    }
}
