//! What a container may set by its place in the pod, which its own type's checks cannot see
//! (`validateContainers`, `validateInitContainers`): a container's restart policy and the rules
//! that override it (`validateContainerRestartPolicy`), the probes and hooks a regular init
//! container may not have, and a hook's sleep against the pod's grace period
//! (`validateSleepAction`), and each container's resize policy (`validateResizePolicy`). A
//! probe's or hook's own fields are the `Probe` and `LifecycleHandler` types' checks
//! (`pods::handler`); both rules here run on the PodSpec.

use serde_json::Value;

use super::super::field::{Errors, FieldPath, Shown};
use super::go_value::{self, GoType, LIFECYCLE, PROBE};
use super::{items, present, text};
use crate::KubeVersion;

/// From 1.28 a regular init container's probes and hooks are `Forbidden` and a regular
/// container's restart policy too (the SidecarContainers change); 1.20 refused the probes and
/// hooks as `Invalid`, printing them.
const SIDECAR_RULES_SINCE: KubeVersion = KubeVersion::new(1, 28);
/// SidecarContainers is beta and on by default from 1.29: an init container's `restartPolicy`
/// counts. In 1.28 (alpha, off) the strategy's `dropDisabledFields` drops it from init
/// containers before validation, so it is as if unset.
const RESTARTABLE_INIT_SINCE: KubeVersion = KubeVersion::new(1, 29);
/// PodLifecycleSleepAction is beta and on by default from 1.30 (the field is dropped before).
const SLEEP_SINCE: KubeVersion = KubeVersion::new(1, 30);

/// ContainerRestartRules: a container's own `restartPolicy` and its `restartPolicyRules` came
/// in 1.34 (alpha, off: the strategy drops them unless the stored pod uses them), beta and on
/// by default from 1.35.
const RESTART_RULES_SINCE: KubeVersion = KubeVersion::new(1, 35);
/// 1.34 reports too many rules or exit codes as `field.TooLong` (in bytes); the 1.36 tree read
/// says `field.TooMany`.
const RESTART_RULES_TOO_MANY_SINCE: KubeVersion = KubeVersion::new(1, 36);
/// `supportedContainerRestartPolicies` and the exit-code operators, sorted as `sets.List` lists
/// them.
const CONTAINER_RESTART_POLICIES: [&str; 3] = ["Always", "Never", "OnFailure"];
const EXIT_CODE_OPERATORS: [&str; 2] = ["In", "NotIn"];
/// A rule's actions: `RestartAllContainers` where RestartAllContainersOnContainerExits is on
/// (alpha in 1.35, beta and on from 1.36, kubernetes#136681) or the stored pod uses it.
const RESTART_ALL_SINCE: KubeVersion = KubeVersion::new(1, 36);
const RESTART_ACTIONS: [&str; 1] = ["Restart"];
const RESTART_ACTIONS_WITH_ALL: [&str; 2] = ["Restart", "RestartAllContainers"];
/// How many rules a container may have, and exit codes a rule may name.
const MAX_RESTART_RULES: usize = 20;
const MAX_EXIT_CODES: usize = 255;

/// InPlacePodVerticalScaling is beta and on by default from 1.33: a container's `resizePolicy`
/// counts. In 1.28 (alpha, off) the strategy's `dropDisabledFields` drops it before validation.
const RESIZE_POLICY_SINCE: KubeVersion = KubeVersion::new(1, 33);
/// `supportedResizeResources` and `supportedResizePolicies`, sorted as upstream lists them.
const RESIZE_RESOURCES: [&str; 2] = ["cpu", "memory"];
const RESIZE_RESTART_POLICIES: [&str; 2] = ["NotRequired", "RestartContainer"];
/// The first release that refuses a non-sidecar init container's `RestartContainer` resize
/// policy on create (ratcheted on update).
const INIT_RESTART_RESIZE_REFUSED_SINCE: KubeVersion = KubeVersion::new(1, 36);

/// What a regular init container may not set, each with the struct 1.20 prints.
const INIT_FORBIDDEN: &[(&str, &GoType)] = &[
    ("lifecycle", &LIFECYCLE),
    ("livenessProbe", &PROBE),
    ("readinessProbe", &PROBE),
    ("startupProbe", &PROBE),
];

/// Whether an init container is a restartable sidecar in `release`.
fn restartable(container: &Value, release: KubeVersion) -> bool {
    release >= RESTARTABLE_INIT_SINCE && text(container, "restartPolicy") == "Always"
}

/// `validateContainers`' restart policies and `validateInitContainers`: a regular container's
/// restart policy and rules where ContainerRestartRules allows them, else no policy ("may not
/// be set for non-init containers"); an init container's policy (`validateInitContainerRestartPolicy`);
/// and an init container without `restartPolicy: Always` has no hooks or probes. `old` is the
/// stored pod spec, on updates.
pub(super) fn init_containers(
    spec: &Value,
    old: Option<&Value>,
    at: &FieldPath,
    errors: &mut Errors,
) {
    let release = errors.release();
    let rules_allowed = release >= RESTART_RULES_SINCE || old.is_some_and(restart_rules_in_use);
    let all_allowed = release >= RESTART_ALL_SINCE
        || (release >= RESTART_RULES_SINCE && old.is_some_and(restart_all_in_use));
    if release >= SIDECAR_RULES_SINCE {
        for (i, container) in items(spec, "containers").iter().enumerate() {
            let at = at.child("containers").index(i);
            if rules_allowed {
                restart_policy_rules(container, &at, all_allowed, errors);
            } else if present(container, "restartPolicy").is_some() {
                errors.forbidden(
                    &at.child("restartPolicy"),
                    "may not be set for non-init containers",
                );
            }
        }
    }
    for (i, container) in items(spec, "initContainers").iter().enumerate() {
        let at = at.child("initContainers").index(i);
        if release >= RESTARTABLE_INIT_SINCE {
            init_restart_policy(container, &at, rules_allowed, all_allowed, errors);
        }
        if restartable(container, release) {
            continue;
        }
        for (field, go_type) in INIT_FORBIDDEN {
            let Some(value) = present(container, field) else {
                continue;
            };
            let path = at.child(field);
            if release >= SIDECAR_RULES_SINCE {
                let detail = "may not be set for init containers without restartPolicy=Always";
                errors.forbidden(&path, detail);
            } else {
                let (go, json) = go_value::render(go_type, value, release);
                errors.invalid(
                    &path,
                    Shown::Go(&go, &json),
                    "must not be set for init containers",
                );
            }
        }
    }
}

/// `validateInitContainerRestartPolicy`: without ContainerRestartRules an init container
/// restarts `Always` (a sidecar) or not at all; with it, a sidecar has no rules (unless
/// `RestartAllContainers` is allowed) and any other policy is checked as a regular container's.
fn init_restart_policy(
    container: &Value,
    at: &FieldPath,
    rules_allowed: bool,
    all_allowed: bool,
    errors: &mut Errors,
) {
    let Some(policy) = present(container, "restartPolicy") else {
        // 1.34 looks at an init container's rules only beside a policy.
        if errors.release() >= RESTART_RULES_SINCE
            && !items(container, "restartPolicyRules").is_empty()
        {
            errors.required(&at.child("restartPolicy"), RULES_NEED_A_POLICY);
        }
        return;
    };
    let sidecar = policy.as_str() == Some("Always");
    if !rules_allowed {
        if !sidecar {
            errors.not_supported(&at.child("restartPolicy"), policy, &["Always"]);
        }
    } else if !sidecar || all_allowed {
        restart_policy_rules(container, at, all_allowed, errors);
    } else if !items(container, "restartPolicyRules").is_empty() {
        errors.forbidden(
            &at.child("restartPolicyRules"),
            "restartPolicyRules are not allowed for init containers with restart policy Always",
        );
    }
}

const RULES_NEED_A_POLICY: &str = "must specify restartPolicy when restart rules are used";

/// `validateContainerRestartPolicy`: a container's own restart policy, required beside rules;
/// at most 20 rules, each with a known action and exit codes (`In` or `NotIn`, at most 255
/// values). The pod's own `restartPolicy` is not consulted.
fn restart_policy_rules(container: &Value, at: &FieldPath, all_allowed: bool, errors: &mut Errors) {
    let rules = items(container, "restartPolicyRules");
    match present(container, "restartPolicy") {
        None if rules.is_empty() => return,
        None => errors.required(&at.child("restartPolicy"), RULES_NEED_A_POLICY),
        Some(policy) => {
            if !policy
                .as_str()
                .is_some_and(|p| CONTAINER_RESTART_POLICIES.contains(&p))
            {
                errors.not_supported(
                    &at.child("restartPolicy"),
                    policy,
                    &CONTAINER_RESTART_POLICIES,
                );
            }
        }
    }
    let rules_at = at.child("restartPolicyRules");
    too_many(&rules_at, rules.len(), MAX_RESTART_RULES, errors);
    let actions: &[&str] = if all_allowed {
        &RESTART_ACTIONS_WITH_ALL
    } else {
        &RESTART_ACTIONS
    };
    for (i, rule) in rules.iter().enumerate() {
        let rule_at = rules_at.index(i);
        let action = text(rule, "action");
        if !actions.contains(&action) {
            errors.not_supported(&rule_at.child("action"), &Value::from(action), actions);
        }
        let Some(codes) = present(rule, "exitCodes") else {
            errors.required(&rule_at.child("exitCodes"), "must be specified");
            continue;
        };
        let codes_at = rule_at.child("exitCodes");
        let operator = text(codes, "operator");
        if !EXIT_CODE_OPERATORS.contains(&operator) {
            errors.not_supported(
                &codes_at.child("operator"),
                &Value::from(operator),
                &EXIT_CODE_OPERATORS,
            );
        }
        too_many(
            &codes_at.child("values"),
            items(codes, "values").len(),
            MAX_EXIT_CODES,
            errors,
        );
    }
}

/// A list longer than `max`: `TooMany` from 1.36, 1.34's `TooLong`.
fn too_many(at: &FieldPath, len: usize, max: usize, errors: &mut Errors) {
    if len <= max {
    } else if errors.release() >= RESTART_RULES_TOO_MANY_SINCE {
        errors.too_many(at, len, max);
    } else {
        errors.too_long(at, max);
    }
}

/// `containerRestartRulesInUse`: a pod spec whose init containers restart other than `Always`
/// or have rules, or whose regular containers have a restart policy of their own.
pub(crate) fn restart_rules_in_use(spec: &Value) -> bool {
    items(spec, "initContainers").iter().any(|c| {
        present(c, "restartPolicy").is_some_and(|p| p.as_str() != Some("Always"))
            || !items(c, "restartPolicyRules").is_empty()
    }) || items(spec, "containers")
        .iter()
        .any(|c| present(c, "restartPolicy").is_some())
}

/// `restartAllContainersActionInUse`: a rule of a regular or init container restarting all
/// containers, or a sidecar with rules.
fn restart_all_in_use(spec: &Value) -> bool {
    let restarts_all = |c: &Value| {
        items(c, "restartPolicyRules")
            .iter()
            .any(|r| text(r, "action") == "RestartAllContainers")
    };
    items(spec, "containers").iter().any(restarts_all)
        || items(spec, "initContainers").iter().any(|c| {
            restarts_all(c)
                || (text(c, "restartPolicy") == "Always"
                    && !items(c, "restartPolicyRules").is_empty())
        })
}

/// `validateSleepAction` for every hook upstream validates (regular containers' and restartable
/// init containers'), when the sleep is the hook's one action: from 0 (PodLifecycleSleepActionAllowZero,
/// on by default from 1.33; kapi serves no release from 1.30 to 1.32, which refused 0) to the
/// pod's `terminationGracePeriodSeconds`, unchecked without one.
pub(super) fn sleep_hooks(spec: &Value, at: &FieldPath, errors: &mut Errors) {
    let release = errors.release();
    if release < SLEEP_SINCE {
        return;
    }
    let Some(grace) = spec
        .get("terminationGracePeriodSeconds")
        .and_then(Value::as_i64)
    else {
        return;
    };
    for list in ["containers", "initContainers"] {
        for (i, container) in items(spec, list).iter().enumerate() {
            if list == "initContainers" && !restartable(container, release) {
                continue;
            }
            for hook in ["postStart", "preStop"] {
                let Some(handler) = container.get("lifecycle").and_then(|l| present(l, hook))
                else {
                    continue;
                };
                // `validateHandler` checks only the first action set; sleep comes last.
                let other = ["exec", "httpGet", "tcpSocket"];
                if other.iter().any(|f| present(handler, f).is_some()) {
                    continue;
                }
                let Some(sleep) = present(handler, "sleep") else {
                    continue;
                };
                let seconds = sleep.get("seconds").and_then(Value::as_i64).unwrap_or(0);
                if seconds < 0 || seconds > grace {
                    let path = at.join(&format!("{list}[{i}].lifecycle.{hook}.sleep"));
                    let detail = format!(
                        "must be non-negative and less than terminationGracePeriodSeconds ({grace})"
                    );
                    errors.invalid(&path, Shown::Plain(&Value::from(seconds)), &detail);
                }
            }
        }
    }
}

/// The first release with ephemeral containers on by default (EphemeralContainers beta); 1.20's
/// strategies drop them from pods and templates alike.
const EPHEMERAL_CONTAINERS_SINCE: KubeVersion = KubeVersion::new(1, 23);

/// `ValidatePodTemplateSpec`'s own check, on a PodTemplateSpec: ephemeral containers are added
/// to running pods only, never templated.
pub(super) fn pod_template(template: &Value, at: &FieldPath, errors: &mut Errors) {
    let containers = template.pointer("/spec/ephemeralContainers");
    let given = containers
        .and_then(Value::as_array)
        .is_some_and(|list| !list.is_empty());
    if given && errors.release() >= EPHEMERAL_CONTAINERS_SINCE {
        errors.forbidden(
            &at.join(".spec.ephemeralContainers"),
            "ephemeral containers not allowed in pod template",
        );
    }
}

/// Whether a field holds its Go zero value, which `validateFieldAllowList` lets pass
/// (`reflect.DeepEqual` with the zero): a list or map present is set even when empty, a
/// pointer to a struct even when `{}`; only `resources`, a struct held by value, is unset when
/// none of its fields is (the defaulted `resources: {}`).
fn unset(field: &str, value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::String(s) => s.is_empty(),
        Value::Array(_) => false,
        Value::Object(fields) => field == "resources" && fields.values().all(Value::is_null),
    }
}

/// `validateEphemeralContainers`: names unique across every container of the pod, a target
/// that is a regular or init container, only the allowed fields, and no volume subpaths (bind
/// mounts that outlive the container until the pod exits). The container's own checks are the
/// `EphemeralContainer` type's (those of a `Container`). On the PodSpec.
pub(super) fn ephemeral_containers(spec: &Value, at: &FieldPath, errors: &mut Errors) {
    let ephemeral = items(spec, "ephemeralContainers");
    if ephemeral.is_empty() {
        return;
    }
    let others: Vec<&str> = ["containers", "initContainers"]
        .into_iter()
        .flat_map(|list| items(spec, list))
        .map(|c| text(c, "name"))
        .collect();
    let mut names: Vec<&str> = others.clone();
    for (i, container) in ephemeral.iter().enumerate() {
        let at = at.child("ephemeralContainers").index(i);
        let name = text(container, "name");
        if names.contains(&name) {
            errors.duplicate(&at.child("name"), &Value::from(name));
        } else {
            names.push(name);
        }
        let target = text(container, "targetContainerName");
        if !target.is_empty() && !others.contains(&target) {
            errors.not_found(&at.child("targetContainerName"), &Value::from(target));
        }
        for (field, allowed) in EPHEMERAL_FIELDS {
            if let Some(value) = container.get(*field)
                && !allowed
                && !unset(field, value)
            {
                errors.forbidden(&at.child(field), "cannot be set for an Ephemeral Container");
            }
        }
        for (m, mount) in items(container, "volumeMounts").iter().enumerate() {
            for field in ["subPath", "subPathExpr"] {
                if !text(mount, field).is_empty() {
                    let path = at.child("volumeMounts").index(m).child(field);
                    errors.forbidden(&path, "cannot be set for an Ephemeral Container");
                }
            }
        }
    }
}

/// `validateResizePolicy` of every container, init and ephemeral container
/// (`validateContainerCommon`), from 1.33: a resource named at most once, `cpu` or `memory`, a
/// restart policy `NotRequired` or `RestartContainer`, `NotRequired` when the pod's
/// `restartPolicy` is `Never`; all but the duplicate reported at the list, as upstream does.
/// From 1.36 a non-sidecar init container may not restart to resize (`validateInitContainers`,
/// kubernetes#137458), unless the stored pod spec `old` already has one that does.
pub(super) fn resize_policies(
    spec: &Value,
    old: Option<&Value>,
    at: &FieldPath,
    errors: &mut Errors,
) {
    let release = errors.release();
    if release < RESIZE_POLICY_SINCE {
        return;
    }
    let refuse_init_restart = release >= INIT_RESTART_RESIZE_REFUSED_SINCE
        && !old.is_some_and(|old| {
            items(old, "initContainers")
                .iter()
                .any(|c| !restartable(c, release) && restarts_to_resize(c))
        });
    let never = text(spec, "restartPolicy") == "Never";
    for list in ["containers", "initContainers", "ephemeralContainers"] {
        for (i, container) in items(spec, list).iter().enumerate() {
            let list_at = at.child(list).index(i).child("resizePolicy");
            let mut named: Vec<&str> = Vec::new();
            for (j, policy) in items(container, "resizePolicy").iter().enumerate() {
                let resource = text(policy, "resourceName");
                if named.contains(&resource) {
                    errors.duplicate(&list_at.index(j), &Value::from(resource));
                }
                named.push(resource);
                one_of(resource, &RESIZE_RESOURCES, &list_at, errors);
                let restart = text(policy, "restartPolicy");
                one_of(restart, &RESIZE_RESTART_POLICIES, &list_at, errors);
                if never && restart != "NotRequired" {
                    let detail = "must be 'NotRequired' when `restartPolicy` is 'Never'";
                    errors.invalid(&list_at, Shown::Plain(&Value::from(restart)), detail);
                }
            }
            if list == "initContainers" && refuse_init_restart && !restartable(container, release) {
                for (j, policy) in items(container, "resizePolicy").iter().enumerate() {
                    if text(policy, "restartPolicy") == "RestartContainer" {
                        errors.invalid(
                            &list_at.index(j).child("restartPolicy"),
                            Shown::Plain(&Value::from("RestartContainer")),
                            "must not be set to 'RestartContainer' for non-sidecar initContainers",
                        );
                    }
                }
            }
        }
    }
}

/// Whether a container restarts to resize some resource (`RestartContainer`).
fn restarts_to_resize(container: &Value) -> bool {
    items(container, "resizePolicy")
        .iter()
        .any(|p| text(p, "restartPolicy") == "RestartContainer")
}

/// A value among `supported`: `Required` when empty, else `Unsupported value`.
fn one_of(value: &str, supported: &[&str], at: &FieldPath, errors: &mut Errors) {
    if value.is_empty() {
        errors.required(at, "");
    } else if !supported.contains(&value) {
        errors.not_supported(at, &Value::from(value), supported);
    }
}

/// `EphemeralContainerCommon`'s fields in declaration order, each with whether an ephemeral
/// container may set it (`allowedEphemeralContainerFields`): no ports, resources, probes,
/// lifecycle hooks or restart policy, which would make it part of the workload rather than a
/// debugging aid.
const EPHEMERAL_FIELDS: &[(&str, bool)] = &[
    ("name", true),
    ("image", true),
    ("command", true),
    ("args", true),
    ("workingDir", true),
    ("ports", false),
    ("envFrom", true),
    ("env", true),
    ("resources", false),
    ("resizePolicy", false),
    ("restartPolicy", false),
    ("restartPolicyRules", false),
    ("volumeMounts", true),
    ("volumeDevices", true),
    ("livenessProbe", false),
    ("readinessProbe", false),
    ("startupProbe", false),
    ("lifecycle", false),
    ("terminationMessagePath", true),
    ("terminationMessagePolicy", true),
    ("imagePullPolicy", true),
    ("securityContext", true),
    ("stdin", true),
    ("stdinOnce", true),
    ("tty", true),
];

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn run(rule: fn(&Value, &FieldPath, &mut Errors), spec: &Value, minor: u16) -> Vec<String> {
        super::super::lines(minor, |errors| rule(spec, &FieldPath::of("spec"), errors))
    }

    /// A rule that also reads the stored pod spec, run on a create (`old` none) or an update.
    type WithOld = fn(&Value, Option<&Value>, &FieldPath, &mut Errors);

    fn run_on(rule: WithOld, spec: &Value, old: Option<&Value>, minor: u16) -> Vec<String> {
        super::super::lines(minor, |errors| {
            rule(spec, old, &FieldPath::of("spec"), errors)
        })
    }

    fn probe() -> Value {
        json!({"httpGet": {"path": "/", "port": 80, "scheme": "HTTP"}, "initialDelaySeconds": 0,
               "timeoutSeconds": 1, "periodSeconds": 10, "successThreshold": 1,
               "failureThreshold": 3})
    }

    #[test]
    fn ephemeral_containers_are_debugging_aids_only() {
        // validateEphemeralContainers: unique names across all containers, a target among the
        // regular and init containers, the allow-list of fields (zero values pass: the
        // defaulted `resources: {}`), no subpaths.
        let spec = json!({
            "containers": [{"name": "app"}],
            "initContainers": [{"name": "init"}],
            "ephemeralContainers": [
                {"name": "debug", "targetContainerName": "init", "resources": {},
                 "stdin": true, "tty": false},
                {"name": "app", "targetContainerName": "debug",
                 "ports": [{"containerPort": 80}], "lifecycle": {"preStop": {}},
                 "resources": {"limits": {"cpu": "1"}},
                 "volumeMounts": [{"name": "v", "mountPath": "/v", "subPath": "x"}]}
            ]
        });
        assert_eq!(
            run(ephemeral_containers, &spec, 34),
            [
                "spec.ephemeralContainers[1].name: Duplicate value: \"app\"",
                "spec.ephemeralContainers[1].targetContainerName: Not found: \"debug\"",
                "spec.ephemeralContainers[1].ports: Forbidden: cannot be set for an Ephemeral Container",
                "spec.ephemeralContainers[1].resources: Forbidden: cannot be set for an Ephemeral Container",
                "spec.ephemeralContainers[1].lifecycle: Forbidden: cannot be set for an Ephemeral Container",
                "spec.ephemeralContainers[1].volumeMounts[0].subPath: Forbidden: cannot be set for an Ephemeral Container",
            ]
        );
    }

    #[test]
    fn resize_policies_name_cpu_or_memory_once() {
        // validateResizePolicy (validateContainerCommon), InPlacePodVerticalScaling on from
        // 1.33; the field is dropped in 1.28.
        let spec = json!({
            "restartPolicy": "Never",
            "containers": [{"name": "app", "resizePolicy": [
                {"resourceName": "cpu", "restartPolicy": "NotRequired"},
                {"resourceName": "cpu", "restartPolicy": "RestartContainer"},
                {"resourceName": "gpu", "restartPolicy": "Sometimes"},
                {"resourceName": "", "restartPolicy": ""},
            ]}],
            "initContainers": [{"name": "init", "resizePolicy": [
                {"resourceName": "memory", "restartPolicy": "NotRequired"}]}],
        });
        let at = "spec.containers[0].resizePolicy";
        assert_eq!(
            run_on(resize_policies, &spec, None, 34),
            [
                format!(r#"{at}[1]: Duplicate value: "cpu""#),
                format!(
                    r#"{at}: Invalid value: "RestartContainer": must be 'NotRequired' when `restartPolicy` is 'Never'"#
                ),
                format!(r#"{at}: Unsupported value: "gpu": supported values: "cpu", "memory""#),
                format!(
                    r#"{at}: Unsupported value: "Sometimes": supported values: "NotRequired", "RestartContainer""#
                ),
                format!(
                    r#"{at}: Invalid value: "Sometimes": must be 'NotRequired' when `restartPolicy` is 'Never'"#
                ),
                format!("{at}: Required value"),
                format!("{at}: Required value"),
                format!(
                    r#"{at}: Invalid value: "": must be 'NotRequired' when `restartPolicy` is 'Never'"#
                ),
            ]
        );
        assert!(run_on(resize_policies, &spec, None, 28).is_empty());
    }

    #[test]
    fn templates_have_no_ephemeral_containers() {
        // ValidatePodTemplateSpec (EphemeralContainers on from 1.23).
        let template =
            json!({"spec": {"ephemeralContainers": [{"name": "debug", "image": "busybox"}]}});
        assert_eq!(
            super::super::lines(28, |e| pod_template(
                &template,
                &FieldPath::of("spec.template"),
                e
            )),
            [
                "spec.template.spec.ephemeralContainers: Forbidden: ephemeral containers not allowed in pod template"
            ]
        );
        assert!(
            super::super::lines(20, |e| pod_template(&template, &FieldPath::root(), e)).is_empty()
        );
    }

    #[test]
    fn regular_init_containers_may_not_have_probes_or_hooks() {
        // validateInitContainers (pkg/apis/core/validation): Invalid with the internal struct in
        // 1.20, Forbidden from the SidecarContainers change (1.28).
        let spec = json!({"containers": [{"name": "web"}], "initContainers": [{
            "name": "init", "readinessProbe": probe(),
            "lifecycle": {"postStart": {"exec": {"command": ["true"]}}}}]});
        assert_eq!(
            run_on(init_containers, &spec, None, 20),
            [
                "spec.initContainers[0].lifecycle: Invalid value: core.Lifecycle{PostStart:(*core.Handler)(0xc000000000), PreStop:(*core.Handler)(nil)}: must not be set for init containers",
                "spec.initContainers[0].readinessProbe: Invalid value: core.Probe{Handler:core.Handler{Exec:(*core.ExecAction)(nil), HTTPGet:(*core.HTTPGetAction)(0xc000000000), TCPSocket:(*core.TCPSocketAction)(nil)}, InitialDelaySeconds:0, TimeoutSeconds:1, PeriodSeconds:10, SuccessThreshold:1, FailureThreshold:3}: must not be set for init containers",
            ]
        );
        for minor in [28, 34, 36] {
            assert_eq!(
                run_on(init_containers, &spec, None, minor),
                [
                    "spec.initContainers[0].lifecycle: Forbidden: may not be set for init containers without restartPolicy=Always",
                    "spec.initContainers[0].readinessProbe: Forbidden: may not be set for init containers without restartPolicy=Always",
                ],
                "1.{minor}"
            );
        }
    }

    #[test]
    fn sidecars_may_have_probes_from_1_29_and_only_init_containers_a_restart_policy() {
        // validateInitContainerRestartPolicy, validateContainers' "non-init containers" where
        // ContainerRestartRules is off: 1.28, and 1.34 when the strategy has not dropped the
        // policies (the stored pod uses none).
        let spec = json!({
            "containers": [{"name": "web", "restartPolicy": "Always"}],
            "initContainers": [
                {"name": "proxy", "restartPolicy": "Always", "startupProbe": probe()},
                {"name": "init", "restartPolicy": "Never"}]});
        assert_eq!(
            run_on(init_containers, &spec, None, 34),
            [
                "spec.containers[0].restartPolicy: Forbidden: may not be set for non-init containers",
                "spec.initContainers[1].restartPolicy: Unsupported value: \"Never\": supported values: \"Always\"",
            ]
        );
        // From 1.35 (ContainerRestartRules beta) every container may have a policy of its own.
        assert!(run_on(init_containers, &spec, None, 36).is_empty());
        // 1.28: SidecarContainers is alpha, the init containers' policy is dropped.
        assert_eq!(
            run_on(init_containers, &spec, None, 28),
            [
                "spec.containers[0].restartPolicy: Forbidden: may not be set for non-init containers",
                "spec.initContainers[0].startupProbe: Forbidden: may not be set for init containers without restartPolicy=Always",
            ]
        );
    }

    #[test]
    fn containers_restart_by_their_own_rules_from_1_35() {
        // validateContainerRestartPolicy and validateInitContainerRestartPolicy, as read in a
        // 1.36 development tree (pkg/apis/core/validation/validation.go): a policy beside
        // rules, known actions and operators, at most 20 rules and 255 exit codes; from 1.36
        // (RestartAllContainersOnContainerExits beta) a rule may restart all containers and a
        // sidecar may have rules.
        let rule = |action: &str, operator: &str, values: usize| json!({"action": action, "exitCodes": {"operator": operator, "values": vec![1; values]}});
        let spec = json!({
            "containers": [
                {"name": "a", "restartPolicyRules": [rule("Restart", "In", 1)]},
                {"name": "b", "restartPolicy": "Sometimes", "restartPolicyRules": [
                    rule("Stop", "Is", 256), {"action": "Restart"}]},
                {"name": "c", "restartPolicy": "Never", "restartPolicyRules": vec![rule("Restart", "NotIn", 2); 21]}],
            "initContainers": [
                {"name": "sidecar", "restartPolicy": "Always", "restartPolicyRules": [rule("Restart", "In", 1)]},
                {"name": "once", "restartPolicy": "OnFailure", "restartPolicyRules": [rule("Restart", "In", 1)]},
                {"name": "bare", "restartPolicyRules": [rule("Restart", "In", 1)]}]});
        let at = "spec.containers";
        assert_eq!(
            run_on(init_containers, &spec, None, 36),
            [
                format!("{at}[0].restartPolicy: Required value: must specify restartPolicy when restart rules are used"),
                format!(r#"{at}[1].restartPolicy: Unsupported value: "Sometimes": supported values: "Always", "Never", "OnFailure""#),
                format!(r#"{at}[1].restartPolicyRules[0].action: Unsupported value: "Stop": supported values: "Restart", "RestartAllContainers""#),
                format!(r#"{at}[1].restartPolicyRules[0].exitCodes.operator: Unsupported value: "Is": supported values: "In", "NotIn""#),
                format!("{at}[1].restartPolicyRules[0].exitCodes.values: Too many: 256: must have at most 255 items"),
                format!("{at}[1].restartPolicyRules[1].exitCodes: Required value: must be specified"),
                format!("{at}[2].restartPolicyRules: Too many: 21: must have at most 20 items"),
                "spec.initContainers[2].restartPolicy: Required value: must specify restartPolicy when restart rules are used".to_owned(),
            ]
        );
        // 1.34, where the strategy keeps the fields only for a stored pod that uses them: its
        // rules are checked then, too many of them `TooLong`.
        let old = json!({"containers": [{"name": "c", "restartPolicy": "Never"}]});
        let lines = run_on(init_containers, &spec, Some(&old), 34);
        assert!(
            lines.contains(&format!(
                "{at}[2].restartPolicyRules: Too long: may not be more than 20 bytes"
            )),
            "{lines:?}"
        );
        assert!(
            !lines.iter().any(|l| l.contains("initContainers[2]")),
            "{lines:?}"
        );
    }

    #[test]
    fn a_regular_init_container_may_not_restart_to_resize_from_1_36() {
        // validateInitContainers from kubernetes#137458 (1.36): `RestartContainer` only for a
        // sidecar, unless the stored pod already has such a policy.
        let policy = json!([{"resourceName": "cpu", "restartPolicy": "RestartContainer"}]);
        let spec = json!({
            "containers": [{"name": "app"}],
            "initContainers": [
                {"name": "init", "resizePolicy": policy},
                {"name": "proxy", "restartPolicy": "Always", "resizePolicy": policy}]});
        assert_eq!(
            run_on(resize_policies, &spec, None, 36),
            [
                r#"spec.initContainers[0].resizePolicy[0].restartPolicy: Invalid value: "RestartContainer": must not be set to 'RestartContainer' for non-sidecar initContainers"#
            ]
        );
        assert!(run_on(resize_policies, &spec, Some(&spec), 36).is_empty());
        assert!(run_on(resize_policies, &spec, None, 34).is_empty());
    }

    #[test]
    fn a_hook_has_one_action_sleep_counted_from_1_30() {
        // validateHandler: sleep is the fifth action type (PodLifecycleSleepAction, beta 1.30).
        let hook = json!({"exec": {"command": ["x"]}, "sleep": {"seconds": 1}});
        let check = |minor| {
            super::super::lines(minor, |errors| {
                super::super::pods::handler(&hook, &FieldPath::of("preStop"), errors);
            })
        };
        assert_eq!(
            check(34),
            ["preStop.sleep: Forbidden: may not specify more than 1 handler type"]
        );
        assert!(check(28).is_empty());
    }

    #[test]
    fn a_sleep_hook_lies_within_the_grace_period() {
        // validateSleepAction with PodLifecycleSleepActionAllowZero (GA in 1.34): 0 allowed.
        let hook = |seconds: i64| json!({"preStop": {"sleep": {"seconds": seconds}}});
        let spec = json!({"terminationGracePeriodSeconds": 30,
            "containers": [{"name": "a", "lifecycle": hook(31)}, {"name": "b", "lifecycle": hook(0)},
                           {"name": "c", "lifecycle": {"postStart": {"sleep": {"seconds": -1}}}}],
            "initContainers": [{"name": "i", "lifecycle": hook(40)},
                               {"name": "s", "restartPolicy": "Always", "lifecycle": hook(40)}]});
        for minor in [34, 36] {
            assert_eq!(
                run(sleep_hooks, &spec, minor),
                [
                    "spec.containers[0].lifecycle.preStop.sleep: Invalid value: 31: must be non-negative and less than terminationGracePeriodSeconds (30)",
                    "spec.containers[2].lifecycle.postStart.sleep: Invalid value: -1: must be non-negative and less than terminationGracePeriodSeconds (30)",
                    "spec.initContainers[1].lifecycle.preStop.sleep: Invalid value: 40: must be non-negative and less than terminationGracePeriodSeconds (30)",
                ]
            );
        }
        // No sleep action before 1.30; a second action is the handler rule's, and unchecked.
        assert!(run(sleep_hooks, &spec, 28).is_empty());
        let both = json!({"terminationGracePeriodSeconds": 30, "containers": [{"name": "a",
            "lifecycle": {"preStop": {"exec": {"command": ["x"]}, "sleep": {"seconds": 99}}}}]});
        assert!(run(sleep_hooks, &both, 34).is_empty());
    }
}
