//! The CEL rules of CRDs (`x-kubernetes-validations`) through kubectl: an object that breaks a
//! rule is refused with 422 and upstream's message at the rule's field path, a transition rule
//! (`self == oldSelf`) refuses an update, a CRD whose rule does not compile (or mixes types, or
//! is estimated to cost too much until `maxItems` bounds its list) is refused, and the
//! Gateway API CRDs of the spec corpus are accepted (every rule of theirs compiles) and enforce
//! their rules.
//!
//! Upstream: `k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel/validation.go` (the
//! messages: `Invalid value: "object": <message>`, `failed rule: <rule>`, `Forbidden: ...`),
//! `k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation/validation.go` (a rule that
//! does not compile: `...x-kubernetes-validations[0].rule: Invalid value: ...: compilation
//! failed: ERROR: <input>:...`).

use std::path::{Path, PathBuf};

use kapi_e2e::kubectl::expect;
use kapi_e2e::{KapiServer, Kubectl, ServerOptions, expect_python_ok, spec_corpus};

fn kubectl<'a>(server: &'a KapiServer, dir: &'a Path) -> Kubectl<'a> {
    Kubectl::new(Path::new("kubectl"), server, dir).with_request_timeout("30s")
}

/// Runs `cycle` against a fresh server, failing with the server's log.
fn on_a_server(cycle: fn(&Kubectl<'_>) -> Result<(), String>) {
    let server = KapiServer::start(&ServerOptions::default()).expect("server starts");
    let dir = tempfile::tempdir().expect("temporary directory");
    if let Err(e) = cycle(&kubectl(&server, dir.path())) {
        panic!("{e}\nserver stderr:\n{}", server.stderr());
    }
}

/// `args` must fail with `needle` in the error.
fn refused(k: &Kubectl<'_>, what: &str, args: &[&str], needle: &str) -> Result<(), String> {
    match k.ok(args) {
        Ok(out) => Err(format!("{what}: accepted: {out}")),
        Err(e) => expect(what, &e, needle),
    }
}

/// A namespaced CRD of the group `cel.example.com` with one version whose schema is
/// `schema` (YAML indented for its place under `openAPIV3Schema`).
fn crd(plural: &str, kind: &str, schema: &str) -> String {
    format!(
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\n\
         metadata: {{name: {plural}.cel.example.com}}\nspec:\n  group: cel.example.com\n  \
         scope: Namespaced\n  names: {{plural: {plural}, kind: {kind}}}\n  versions:\n  \
         - name: v1\n    served: true\n    storage: true\n    schema:\n      openAPIV3Schema:\n{schema}"
    )
}

/// The schema of `widgets`.
const WIDGETS: &str = r#"        type: object
        x-kubernetes-validations:
        - rule: "self.metadata.name.startsWith('w')"
          message: name must start with w
        properties:
          spec:
            type: object
            x-kubernetes-validations:
            - rule: "self.minReplicas <= self.maxReplicas"
            - rule: "self.minReplicas >= 0"
              messageExpression: "'minReplicas is ' + string(self.minReplicas)"
            - rule: "!has(self.legacy)"
              reason: FieldValueForbidden
              fieldPath: .legacy
              message: legacy may not be set
            - rule: "self.mode == oldSelf.mode"
              message: Value is immutable
            properties:
              minReplicas: {type: integer}
              maxReplicas: {type: integer}
              mode: {type: string}
              legacy: {type: string}
              tags:
                type: array
                maxItems: 16
                items: {type: string, maxLength: 32}
                x-kubernetes-validations:
                - rule: "self.all(t, t.matches('^[a-z]+$')) && self.exists_one(t, t == 'main')"
                  message: tags are lower-case words, one of them main
"#;

fn widget(name: &str, spec: &str) -> String {
    format!(
        "apiVersion: cel.example.com/v1\nkind: Widget\nmetadata:\n  name: {name}\nspec:\n{spec}"
    )
}

/// Creates the `widgets` CRD (with `extra` arguments to `kubectl create`) and waits until it
/// is established.
fn create_widgets(k: &Kubectl<'_>, extra: &[&str]) -> Result<(), String> {
    let crd = k.file("crd.yaml", &crd("widgets", "Widget", WIDGETS));
    let path = crd.to_string_lossy();
    let mut args = vec!["create", "-f", &path];
    args.extend_from_slice(extra);
    k.ok(&args)?;
    k.ok(&[
        "wait",
        "--for",
        "condition=Established",
        "crd/widgets.cel.example.com",
        "--timeout=20s",
    ])
    .map(drop)
}

fn widgets_cycle(k: &Kubectl<'_>) -> Result<(), String> {
    create_widgets(k, &[])?;
    let good = k.file(
        "good.yaml",
        &widget(
            "w1",
            "  minReplicas: 1\n  maxReplicas: 3\n  mode: fast\n  tags: [main, extra]\n",
        ),
    );
    k.ok(&["create", "-f", &good.to_string_lossy()])?;

    // Every failed rule is a cause: the root's at `<nil>` (upstream's nil field path), the
    // messageExpression's result, the reason and fieldPath of the third.
    let bad = k.file(
        "bad.yaml",
        &widget(
            "x1",
            "  minReplicas: -1\n  maxReplicas: -3\n  mode: fast\n  legacy: 'yes'\n  tags: [Main]\n",
        ),
    );
    let args = ["create", "-f", &*bad.to_string_lossy()].map(str::to_owned);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let error = match k.ok(&args) {
        Ok(out) => return Err(format!("an object breaking the rules was created: {out}")),
        Err(e) => e,
    };
    for needle in [
        "The Widget \"x1\" is invalid",
        "<nil>: Invalid value: \"object\": name must start with w",
        "spec: Invalid value: \"object\": failed rule: self.minReplicas <= self.maxReplicas",
        "spec: Invalid value: \"object\": minReplicas is -1",
        "spec.legacy: Forbidden: legacy may not be set",
        "spec.tags: Invalid value: \"array\": tags are lower-case words, one of them main",
    ] {
        expect("rules broken on create", &error, needle)?;
    }
    // A dry run is refused alike.
    let dry = k.file(
        "dry.yaml",
        &widget("w2", "  minReplicas: 5\n  maxReplicas: 1\n  mode: fast\n"),
    );
    refused(
        k,
        "dry-run create",
        &["create", "-f", &dry.to_string_lossy(), "--dry-run=server"],
        "failed rule: self.minReplicas <= self.maxReplicas",
    )?;

    // The transition rule: `mode` may not change; the others still hold on the update.
    refused(
        k,
        "patch of an immutable field",
        &[
            "patch",
            "widget",
            "w1",
            "--type=merge",
            "-p",
            r#"{"spec":{"mode":"slow"}}"#,
        ],
        "spec: Invalid value: \"object\": Value is immutable",
    )?;
    let changed = k.file(
        "changed.yaml",
        &widget(
            "w1",
            "  minReplicas: 1\n  maxReplicas: 3\n  mode: slow\n  tags: [main]\n",
        ),
    );
    refused(
        k,
        "apply of an immutable field",
        &["apply", "-f", &changed.to_string_lossy()],
        "Value is immutable",
    )?;
    k.ok(&[
        "patch",
        "widget",
        "w1",
        "--type=merge",
        "-p",
        r#"{"spec":{"maxReplicas":4}}"#,
    ])?;
    let max = k.ok(&["get", "widget", "w1", "-o", "jsonpath={.spec.maxReplicas}"])?;
    expect("patched widget", &max, "4")
}

#[test]
fn crd_rules_refuse_objects_that_break_them() {
    on_a_server(widgets_cycle);
}

/// The schema of `gadgets`, whose rule names what does not exist.
const BROKEN: &str = r#"        type: object
        properties:
          spec:
            type: object
            x-kubernetes-validations:
            - rule: "self.size == nope"
            properties:
              size: {type: integer}
              list:
                type: array
                items:
                  type: string
                  x-kubernetes-validations:
                  - rule: "self == oldSelf"
"#;

fn broken_cycle(k: &Kubectl<'_>) -> Result<(), String> {
    let crd = k.file("crd.yaml", &crd("gadgets", "Gadget", BROKEN));
    let error = match k.ok(&["create", "-f", &crd.to_string_lossy()]) {
        Ok(out) => return Err(format!("a CRD with broken rules was created: {out}")),
        Err(e) => e,
    };
    expect(
        "CRD with an undeclared reference",
        &error,
        "spec.versions[0].schema.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: \
         Invalid value: apiextensions.ValidationRule{Rule:\"self.size == nope\", Message:\"\", \
         MessageExpression:\"\", Reason:(*apiextensions.FieldValueErrorReason)(nil), FieldPath:\"\", \
         OptionalOldSelf:(*bool)(nil)}: compilation failed: ERROR: <input>:1:14: undeclared \
         reference to 'nope' (in container '')",
    )?;
    // A transition rule on the items of a list that is not a map list.
    expect(
        "CRD with an uncorrelatable transition rule",
        &error,
        "spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[list].items.\
         x-kubernetes-validations[0].rule: Invalid value: \"self == oldSelf\": oldSelf cannot be \
         used on the uncorrelatable portion of the schema within \
         spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[list]",
    )
}

#[test]
fn a_crd_whose_rule_does_not_compile_is_refused() {
    on_a_server(broken_cycle);
}

/// A schema whose rule adds a string to an integer.
const MISTYPED: &str = r#"        type: object
        properties:
          spec:
            type: object
            x-kubernetes-validations:
            - rule: "self.replicas + 'a'"
            properties:
              replicas: {type: integer}
"#;

// Upstream's checker (cel-go `checker/errors.go`, `noMatchingOverload`) refuses an operator
// whose operand types have no overload; apiextensions reports it as `compilation failed`.
fn mistyped_cycle(k: &Kubectl<'_>) -> Result<(), String> {
    let crd = k.file("crd.yaml", &crd("things", "Thing", MISTYPED));
    refused(
        k,
        "CRD adding a string to an integer",
        &["create", "-f", &crd.to_string_lossy()],
        "spec.versions[0].schema.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: \
         Invalid value: apiextensions.ValidationRule{Rule:\"self.replicas + 'a'\", Message:\"\", \
         MessageExpression:\"\", Reason:(*apiextensions.FieldValueErrorReason)(nil), FieldPath:\"\", \
         OptionalOldSelf:(*bool)(nil)}: compilation failed: ERROR: <input>:1:15: found no matching \
         overload for '_+_' applied to '(int, string)'",
    )
}

#[test]
fn a_crd_whose_rule_mixes_types_is_refused() {
    on_a_server(mistyped_cycle);
}

/// A schema with a list of integers (`maxItems` as given) whose rule compares every pair.
fn pairs(max_items: &str) -> String {
    format!(
        r#"        type: object
        properties:
          spec:
            type: object
            properties:
              values:
                type: array
                {max_items}
                items: {{type: integer}}
                x-kubernetes-validations:
                - rule: "self.all(x, self.exists_one(y, x == y))"
                  message: values are unique
"#
    )
}

// apiextensions `validation.go`: a rule whose estimated cost (cel-go `checker/cost.go`, the
// list's size estimated from the 3 MiB request limit) passes `StaticEstimatedCostLimit` is
// forbidden, and so is the schema's total; `maxItems` bounds the list, and the CRD is accepted.
fn expensive_cycle(k: &Kubectl<'_>) -> Result<(), String> {
    let unbounded = k.file("unbounded.yaml", &crd("pairs", "Pair", &pairs("")));
    let path = "spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[values].\
                x-kubernetes-validations[0].rule";
    let error = match k.ok(&["create", "-f", &unbounded.to_string_lossy()]) {
        Ok(out) => return Err(format!("an unbounded quadratic rule was accepted: {out}")),
        Err(e) => e,
    };
    expect(
        "rule cost",
        &error,
        &format!(
            "{path}: Forbidden: estimated rule cost exceeds budget by factor of more than 100x \
             (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where \
             arrays, maps, and strings are declared)"
        ),
    )?;
    expect(
        "total cost",
        &error,
        "spec.versions[0].schema.openAPIV3Schema: Forbidden: x-kubernetes-validations estimated \
         rule cost total for entire OpenAPIv3 schema exceeds budget by factor of more than 100x",
    )?;
    let bounded = k.file(
        "bounded.yaml",
        &crd("pairs", "Pair", &pairs("maxItems: 100")),
    );
    k.ok(&["create", "-f", &bounded.to_string_lossy()])?;
    k.ok(&[
        "wait",
        "--for=condition=Established",
        "crd/pairs.cel.example.com",
    ])?;
    let object = k.file(
        "pair.yaml",
        "apiVersion: cel.example.com/v1\nkind: Pair\nmetadata: {name: p}\nspec: {values: [1, 2, 2]}\n",
    );
    refused(
        k,
        "duplicate values",
        &["create", "-f", &object.to_string_lossy()],
        "spec.values: Invalid value: \"array\": values are unique",
    )
}

#[test]
fn an_expensive_rule_is_refused_until_its_list_is_bounded() {
    on_a_server(expensive_cycle);
}

fn gateway_crds() -> Vec<PathBuf> {
    ["gateways", "httproutes"]
        .map(|plural| {
            spec_corpus().join(format!(
                "crds/gateway-api-v1.6.1_gateway.networking.k8s.io_{plural}.yaml"
            ))
        })
        .to_vec()
}

fn gateway_cycle(k: &Kubectl<'_>) -> Result<(), String> {
    // Creating them at all says every rule compiled: the server refuses a CRD whose rule
    // does not.
    for file in gateway_crds() {
        k.ok(&["create", "-f", &file.to_string_lossy()])?;
    }
    k.ok(&[
        "wait",
        "--for",
        "condition=Established",
        "crd/gateways.gateway.networking.k8s.io",
        "crd/httproutes.gateway.networking.k8s.io",
        "--timeout=20s",
    ])?;
    let gateway = |name: &str, listener: &str| {
        format!(
            "apiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\nmetadata:\n  name: {name}\n\
             spec:\n  gatewayClassName: example\n  listeners:\n  - {listener}\n"
        )
    };
    let good = k.file(
        "gw.yaml",
        &gateway("gw", "{name: http, protocol: HTTP, port: 80}"),
    );
    k.ok(&["create", "-f", &good.to_string_lossy()])?;
    let bad = k.file(
        "bad-gw.yaml",
        &gateway(
            "bad",
            "{name: tcp, protocol: TCP, port: 9000, tls: {mode: Terminate}}",
        ),
    );
    refused(
        k,
        "Gateway with TLS on a TCP listener",
        &["create", "-f", &bad.to_string_lossy()],
        "spec.listeners: Invalid value: \"array\": tls must not be specified for protocols ['HTTP', 'TCP', 'UDP']",
    )?;

    let route = |name: &str, rule: &str| {
        format!(
            "apiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata:\n  name: {name}\n\
             spec:\n  parentRefs: [{{name: gw}}]\n  rules:\n  - {rule}\n"
        )
    };
    let good = k.file(
        "route.yaml",
        &route("r", "{backendRefs: [{name: svc, port: 80}]}"),
    );
    k.ok(&["create", "-f", &good.to_string_lossy()])?;
    let no_port = k.file("no-port.yaml", &route("p", "{backendRefs: [{name: svc}]}"));
    refused(
        k,
        "HTTPRoute backend without a port",
        &["create", "-f", &no_port.to_string_lossy()],
        "spec.rules[0].backendRefs[0]: Invalid value: \"object\": Must have port for Service reference",
    )?;
    let redirect = k.file(
        "redirect.yaml",
        &route(
            "redirect",
            "{backendRefs: [{name: svc, port: 80}], filters: [{type: RequestRedirect, requestRedirect: {scheme: https}}]}",
        ),
    );
    refused(
        k,
        "HTTPRoute redirecting and forwarding",
        &["create", "-f", &redirect.to_string_lossy()],
        "spec.rules[0]: Invalid value: \"object\": RequestRedirect filter must not be used together with backendRefs",
    )?;
    // `duration()` of Go-style duration strings.
    let timeouts = |name: &str, backend: &str| {
        k.file(
            &format!("{name}.yaml"),
            &route(
                name,
                &format!(
                    "{{backendRefs: [{{name: svc, port: 80}}], timeouts: {{request: 10s, backendRequest: {backend}}}}}"
                ),
            ),
        )
    };
    k.ok(&["create", "-f", &timeouts("short", "5s").to_string_lossy()])?;
    refused(
        k,
        "HTTPRoute with a backend timeout past the request's",
        &["create", "-f", &timeouts("long", "1m").to_string_lossy()],
        "spec.rules[0].timeouts: Invalid value: \"object\": backendRequest timeout cannot be longer than request timeout",
    )
}

#[test]
fn gateway_api_rules_are_enforced() {
    on_a_server(gateway_cycle);
}

/// 1.20 has no CEL: its CRD type has no `x-kubernetes-validations`, which the server drops,
/// and the objects of the CRD are held to the rest of their schema only.
fn release_1_20_cycle(k: &Kubectl<'_>) -> Result<(), String> {
    let crd = k.file("crd.yaml", &crd("widgets", "Widget", WIDGETS));
    // kubectl's own check knows 1.20's schema, which has no such field.
    refused(
        k,
        "kubectl's validation",
        &["create", "-f", &crd.to_string_lossy()],
        "unknown field \"x-kubernetes-validations\"",
    )?;
    create_widgets(k, &["--validate=false"])?;
    let stored = k.ok(&["get", "crd", "widgets.cel.example.com", "-o", "json"])?;
    if stored.contains("x-kubernetes-validations") {
        return Err(format!("1.20 kept the rules: {stored}"));
    }
    let bad = k.file(
        "bad.yaml",
        &widget("x1", "  minReplicas: 5\n  maxReplicas: 1\n  mode: fast\n"),
    );
    k.ok(&["create", "-f", &bad.to_string_lossy(), "--validate=false"])
        .map(drop)
}

#[test]
fn release_1_20_has_no_crd_rules() {
    let server = KapiServer::start(&ServerOptions::release("1.20")).expect("server starts");
    let dir = tempfile::tempdir().expect("temporary directory");
    if let Err(e) = release_1_20_cycle(&kubectl(&server, dir.path())) {
        panic!("{e}\nserver stderr:\n{}", server.stderr());
    }
}

/// The Python client's view of a refused custom object: a 422 `Invalid` Status whose causes
/// carry the rule's field path and message.
const PYTHON: &str = r#"
import json, sys
from kubernetes import client, config
from kubernetes.client.rest import ApiException

config.load_kube_config(sys.argv[1])
api = client.CustomObjectsApi()
body = {"apiVersion": "cel.example.com/v1", "kind": "Widget", "metadata": {"name": "w9"},
        "spec": {"minReplicas": 4, "maxReplicas": 2, "mode": "fast"}}
try:
    api.create_namespaced_custom_object("cel.example.com", "v1", "default", "widgets", body)
    raise SystemExit("created an object breaking a rule")
except ApiException as e:
    assert e.status == 422, e.status
    status = json.loads(e.body)
    assert status["reason"] == "Invalid", status
    causes = status["details"]["causes"]
    assert causes == [{"reason": "FieldValueInvalid", "field": "spec",
                       "message": "Invalid value: \"object\": failed rule: self.minReplicas <= self.maxReplicas"}], causes
body["spec"]["maxReplicas"] = 5
api.create_namespaced_custom_object("cel.example.com", "v1", "default", "widgets", body)
print("ok")
"#;

#[test]
fn the_python_client_gets_the_rules_causes() {
    let server = KapiServer::start(&ServerOptions::default()).expect("server starts");
    let dir = tempfile::tempdir().expect("temporary directory");
    if let Err(e) = create_widgets(&kubectl(&server, dir.path()), &[]) {
        panic!("{e}\nserver stderr:\n{}", server.stderr());
    }
    expect_python_ok(&server, PYTHON, "1.36");
}

/// The schema of `gauges`: `size` below `limit`.
fn gauges(limit: u32) -> String {
    crd(
        "gauges",
        "Gauge",
        &format!(
            "        type: object\n        properties:\n          spec:\n            type: object\n            \
             properties:\n              note: {{type: string}}\n              size:\n                type: integer\n                \
             x-kubernetes-validations:\n                - rule: \"self < {limit}\"\n"
        ),
    )
}

fn gauge(name: &str, size: u32) -> String {
    format!(
        "apiVersion: cel.example.com/v1\nkind: Gauge\nmetadata:\n  name: {name}\nspec:\n  size: {size}\n"
    )
}

/// A rule tightened after an object was stored: an update that leaves the old value alone is
/// kept where CRDValidationRatcheting is on (1.36), refused where it is off (1.28).
fn ratcheting_cycle(k: &Kubectl<'_>, ratchets: bool) -> Result<(), String> {
    let crd = k.file("crd.yaml", &gauges(100));
    k.ok(&["create", "-f", &crd.to_string_lossy()])?;
    k.ok(&[
        "wait",
        "--for",
        "condition=Established",
        "crd/gauges.cel.example.com",
        "--timeout=20s",
    ])?;
    let stored = k.file("g1.yaml", &gauge("g1", 50));
    k.ok(&["create", "-f", &stored.to_string_lossy()])?;
    let tightened = k.file("crd.yaml", &gauges(10));
    k.ok(&["replace", "-f", &tightened.to_string_lossy()])?;
    // The new rule is served once a new object breaking it is refused.
    let probe = k.file("probe.yaml", &gauge("probe", 20));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        match k.ok(&["create", "-f", &probe.to_string_lossy(), "--dry-run=server"]) {
            Err(e) if e.contains("failed rule: self < 10") => break,
            _ if std::time::Instant::now() > deadline => {
                return Err("the tightened rule was never served".to_owned());
            }
            _ => std::thread::sleep(std::time::Duration::from_millis(200)),
        }
    }
    let patch = [
        "patch",
        "gauge",
        "g1",
        "--type=merge",
        "-p",
        r#"{"spec":{"note":"hello"}}"#,
    ];
    match (k.ok(&patch), ratchets) {
        (Ok(_), true) => {}
        (Err(e), false) => expect("unratcheted update", &e, "spec.size: Invalid value")?,
        (Ok(out), false) => return Err(format!("updated without ratcheting: {out}")),
        (Err(e), true) => return Err(format!("ratcheting refused the update: {e}")),
    }
    // Changing the value itself is held to the rule either way.
    refused(
        k,
        "update of the failing value",
        &[
            "patch",
            "gauge",
            "g1",
            "--type=merge",
            "-p",
            r#"{"spec":{"size":60}}"#,
        ],
        "failed rule: self < 10",
    )
}

#[test]
fn ratcheting_follows_the_release() {
    for (release, ratchets) in [("1.28", false), ("1.36", true)] {
        let server = KapiServer::start(&ServerOptions::release(release)).expect("server starts");
        let dir = tempfile::tempdir().expect("temporary directory");
        if let Err(e) = ratcheting_cycle(&kubectl(&server, dir.path()), ratchets) {
            panic!("{release}: {e}\nserver stderr:\n{}", server.stderr());
        }
    }
}
