//! Defaulting: the fields the API server fills in when a write leaves them out, as
//! kube-apiserver's defaulting functions do for the built-ins (`pkg/apis/*/v1/defaults.go`,
//! called for every nested type by the generated `SetObjectDefaults_*`).
//!
//! A kind's defaults are an ordered list of [`Default`](struct@Default)s over JSON paths,
//! parents before their children, so a step that creates an object (`{}`) is followed by the
//! steps that fill it. A path may go through every item of a list (`containers[*]`). Each step
//! fills a field that is missing or `null`, with a JSON value or with what a named [`Rule`]
//! computes from the object that holds the field (a container's `imagePullPolicy` depends on its
//! image), or removes it (what a defaulting function sets to nil); a step may apply only when a
//! sibling field has a given value (`rollingUpdate` only for the `RollingUpdate` strategy) and
//! only in some releases.
//!
//! Defaults live where upstream keeps them, on types: the built-ins' are data
//! (`specs/defaults/kubernetes.yaml`), which the generator attaches to each type's static
//! [`TypeInfo`], so a PodSpec's defaults exist once however many kinds
//! hold a pod template; [`apply_types`] walks a kind's type tree. A derived kind's
//! `#[resource(default(...))]` steps are paths from its root, in its
//! [`ResourceInfo`](crate::ResourceInfo), applied by [`apply`].

use serde_json::{Map, Value};

use crate::KubeVersion;
use crate::merge::{Pruned, PrunedCache, TypeInfo, Wrap};
use crate::printer::Releases;

pub mod rule;

pub use rule::Rule;

/// One defaulting step: fill the field at `path` when it is missing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Default {
    /// Where the field is: a simple JSON path whose `[*]` steps go through every item of a
    /// list, e.g. `.spec.template.spec.containers[*].imagePullPolicy`.
    pub path: &'static str,
    /// What to fill it with.
    pub fill: Fill,
    /// Fill only when the sibling field named here has this value.
    pub when: Option<When>,
    /// The releases that default the field.
    pub releases: Releases,
}

/// What a defaulted field is filled with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fill {
    /// This JSON text, e.g. `1`, `"RollingUpdate"` or `{}`.
    Json(&'static str),
    /// What the rule computes from the object holding the field; nothing when it returns none.
    Rule(Rule),
    /// Nothing: the field is removed when present (and the step's condition holds), as a
    /// defaulting function that sets a field to nil does (a Service's `sessionAffinityConfig`
    /// under `sessionAffinity: None`).
    Clear,
}

/// A condition on a sibling of the defaulted field, or on a field of the value the default's
/// type describes; `null` also matches a missing one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct When {
    /// The sibling's name, or a JSON pointer (`/spec/hostNetwork`) from the type's value.
    pub field: &'static str,
    /// The JSON text it must equal (after its own default, as steps run in order).
    pub equals: &'static str,
}

impl Default {
    /// Fills the field at `path` with the JSON text `json`, in every release.
    pub const fn value(path: &'static str, json: &'static str) -> Self {
        Self {
            path,
            fill: Fill::Json(json),
            when: None,
            releases: Releases::ALL,
        }
    }

    /// Fills the field at `path` with what `rule` computes, in every release.
    pub const fn rule(path: &'static str, rule: Rule) -> Self {
        Self {
            path,
            fill: Fill::Rule(rule),
            when: None,
            releases: Releases::ALL,
        }
    }

    /// Removes the field at `path`, in every release.
    pub const fn clear(path: &'static str) -> Self {
        Self {
            path,
            fill: Fill::Clear,
            when: None,
            releases: Releases::ALL,
        }
    }

    /// Only when the sibling `field` holds the JSON text `equals`.
    pub const fn when(mut self, field: &'static str, equals: &'static str) -> Self {
        self.when = Some(When { field, equals });
        self
    }

    /// Only from release `major.minor` on.
    pub const fn since(mut self, major: u16, minor: u16) -> Self {
        self.releases.since = Some(KubeVersion::new(major, minor));
        self
    }

    /// Only before release `major.minor`.
    pub const fn until(mut self, major: u16, minor: u16) -> Self {
        self.releases.until = Some(KubeVersion::new(major, minor));
        self
    }
}

/// Applies the defaults of a kind's types to an object: each type's own steps where the
/// object holds a value of that type, parents before the types they hold, as upstream's
/// generated `SetObjectDefaults_<Kind>` calls `SetDefaults_<Type>`.
///
/// The walk follows the kind's type tree cut down to the types that have defaults or lead to
/// some, with each default's JSON parsed once (see `merge::Pruned`), built on the tree's first use.
pub fn apply_types(root: &TypeInfo, object: &mut Value, release: KubeVersion) {
    static TREES: PrunedCache<Compiled> = PrunedCache::new();
    TREES.with(
        root,
        || Pruned::build(root, |ty| !ty.defaults.is_empty(), Compiled::of),
        |tree| apply_node(tree, 0, object, release),
    );
}

/// A type's defaults, each with its path split and its JSON texts parsed.
#[derive(Debug)]
struct Compiled(Vec<CompiledStep>);

#[derive(Debug)]
struct CompiledStep {
    step: &'static Default,
    /// The path to the objects holding the field.
    parent: &'static str,
    /// The field.
    field: &'static str,
    /// The value of a [`Fill::Json`]; none when it does not parse.
    value: Option<Value>,
    /// The value the step's [`When`] wants of the sibling.
    want: Value,
}

impl Compiled {
    fn of(ty: &TypeInfo) -> Self {
        let steps: &'static [Default] = ty.defaults;
        Self(
            steps
                .iter()
                .filter_map(|step| {
                    // A path without a `.` names no field: skipped, as `apply` does.
                    let (parent, field) = step.path.rsplit_once('.')?;
                    Some(CompiledStep {
                        step,
                        parent,
                        field,
                        value: json_value(step),
                        want: wanted(step),
                    })
                })
                .collect(),
        )
    }
}

fn apply_node(tree: &Pruned<Compiled>, node: usize, object: &mut Value, release: KubeVersion) {
    let Some(node) = tree.nodes.get(node) else {
        return;
    };
    for compiled in &node.data.0 {
        let CompiledStep {
            step,
            parent,
            field,
            value,
            want,
        } = compiled;
        if !step.releases.contains(release) || !object_condition(step, want, object) {
            continue;
        }
        let from_object = object_rule(step, object);
        for_each_holder(object, parent, &mut |holder| {
            fill(holder, field, step, want, |holder| {
                filled(step, || value.clone(), &from_object, holder)
            });
        });
    }
    for child in &node.children {
        let Some(value) = object.get_mut(child.field.name) else {
            continue;
        };
        for_each_wrapped(value, child.field.wrap, &mut |held| {
            apply_node(tree, child.node, held, release)
        });
    }
}

/// Calls `f` on every value `wrap` leads to: the value itself, or each item of its lists and
/// each value of its maps, container by container.
pub(crate) fn for_each_wrapped(value: &mut Value, wrap: &[Wrap], f: &mut dyn FnMut(&mut Value)) {
    match (wrap.split_first(), value) {
        (None, value) => f(value),
        (Some((Wrap::List, rest)), Value::Array(items)) => {
            for item in items {
                for_each_wrapped(item, rest, f);
            }
        }
        (Some((Wrap::Map, rest)), Value::Object(map)) => {
            for item in map.values_mut() {
                for_each_wrapped(item, rest, f);
            }
        }
        _ => {}
    }
}

/// Applies a list of defaults to an object, in order, for release `release`.
pub fn apply(defaults: &[Default], object: &mut Value, release: KubeVersion) {
    for step in defaults.iter().filter(|d| d.releases.contains(release)) {
        let Some((parent, field)) = step.path.rsplit_once('.') else {
            continue;
        };
        let want = wanted(step);
        if !object_condition(step, &want, object) {
            continue;
        }
        let from_object = object_rule(step, object);
        for_each_holder(object, parent, &mut |holder| {
            fill(holder, field, step, &want, |holder| {
                filled(step, || json_value(step), &from_object, holder)
            });
        });
    }
}

/// What a step puts in a holder's field: its JSON value (`json`, parsed once by the caller or
/// now), or what its rule computes, from the whole object (`from_object`, see [`object_rule`])
/// for a rule that reads it. A [`Fill::Clear`] step puts nothing: [`fill`] removes the field
/// without asking.
fn filled(
    step: &Default,
    json: impl FnOnce() -> Option<Value>,
    from_object: &Option<Option<Value>>,
    holder: &Map<String, Value>,
) -> Option<Value> {
    match step.fill {
        Fill::Json(_) => json(),
        Fill::Rule(_) if from_object.is_some() => from_object.clone().flatten(),
        Fill::Rule(rule) => rule.compute(holder),
        Fill::Clear => None,
    }
}

/// A [`Fill::Json`] step's value, parsed; none for other steps or text that does not parse.
fn json_value(step: &Default) -> Option<Value> {
    match step.fill {
        Fill::Json(text) => parse(text),
        Fill::Rule(_) | Fill::Clear => None,
    }
}

/// Whether a step's condition on the type's value (a [`When`] whose field is a JSON pointer)
/// holds; steps without one always pass.
fn object_condition(step: &Default, want: &Value, object: &Value) -> bool {
    match step.when {
        Some(when) if when.field.starts_with('/') => {
            object.pointer(when.field).unwrap_or(&Value::Null) == want
        }
        _ => true,
    }
}

/// For a step whose rule reads the whole object (`Rule::reads_object`), what it computes from
/// `object`, before the walk to the field's holders borrows it; none for any other step.
fn object_rule(step: &Default, object: &Value) -> Option<Option<Value>> {
    match step.fill {
        Fill::Rule(rule) if rule.reads_object() => Some(rule.compute_from_object(object)),
        _ => None,
    }
}

/// Calls `f` on every object the dotted path `steps` reaches (through each item at `[*]`);
/// empty steps are skipped.
fn for_each_holder(value: &mut Value, steps: &str, f: &mut dyn FnMut(&mut Map<String, Value>)) {
    let steps = steps.trim_start_matches('.');
    if steps.is_empty() {
        if let Value::Object(map) = value {
            f(map);
        }
        return;
    }
    let (first, rest) = steps.split_once('.').unwrap_or((steps, ""));
    let (name, every) = match first.strip_suffix("[*]") {
        Some(name) => (name, true),
        None => (first, false),
    };
    let Some(next) = value.get_mut(name) else {
        return;
    };
    if every {
        if let Value::Array(items) = next {
            for item in items {
                for_each_holder(item, rest, f);
            }
        }
    } else {
        for_each_holder(next, rest, f);
    }
}

/// The value a step's [`When`] wants of the sibling, `null` for none.
fn wanted(step: &Default) -> Value {
    step.when.map_or(Value::Null, |when| {
        parse(when.equals).unwrap_or(Value::Null)
    })
}

/// Fills `field` of `holder` with what `value` gives, when it is missing or null and the
/// step's condition holds (the sibling equals `want`); a [`Fill::Clear`] step removes it then.
fn fill(
    holder: &mut Map<String, Value>,
    field: &str,
    step: &Default,
    want: &Value,
    value: impl FnOnce(&Map<String, Value>) -> Option<Value>,
) {
    if step.fill == Fill::Clear {
        if sibling_holds(holder, step, want) {
            holder.remove(field);
        }
        return;
    }
    let empty_is_missing = matches!(step.fill, Fill::Rule(rule) if rule.fills_empty());
    let merges = matches!(step.fill, Fill::Rule(rule) if rule.merges_keys());
    match holder.get(field) {
        None | Some(Value::Null) => {}
        Some(Value::Object(map)) if empty_is_missing && map.is_empty() => {}
        Some(Value::Object(_)) if merges => {
            if let Some(Value::Object(computed)) = value(holder)
                && let Some(Value::Object(map)) = holder.get_mut(field)
            {
                for (key, item) in computed {
                    map.entry(key).or_insert(item);
                }
            }
            return;
        }
        Some(_) => return,
    }
    if !sibling_holds(holder, step, want) {
        return;
    }
    if let Some(value) = value(holder) {
        holder.insert(field.to_owned(), value);
    }
}

/// Whether the step's condition on a sibling of the field (not a JSON pointer) holds: the
/// sibling equals `want`, `null` also matching a missing sibling, as Go's nil does.
fn sibling_holds(holder: &Map<String, Value>, step: &Default, want: &Value) -> bool {
    step.when
        .as_ref()
        .filter(|when| !when.field.starts_with('/'))
        .is_none_or(|when| holder.get(when.field).unwrap_or(&Value::Null) == want)
}

/// A default's JSON text as a value; none when it is not JSON.
fn parse(text: &str) -> Option<Value> {
    serde_json::from_str(text).ok()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn step(path: &'static str, json: &'static str) -> Default {
        Default::value(path, json)
    }

    const RELEASE: KubeVersion = KubeVersion::new(1, 36);

    #[test]
    fn a_condition_may_read_the_types_value() {
        // defaultHostNetworkPorts: only on the host's network.
        let steps = [
            Default::rule(".spec.containers[*].ports[*].hostPort", Rule::ContainerPort)
                .when("/spec/hostNetwork", "true"),
        ];
        let mut host = json!({"spec": {"hostNetwork": true, "containers": [{"ports": [{"containerPort": 80}, {"containerPort": 81, "hostPort": 9081}]}]}});
        apply(&steps, &mut host, RELEASE);
        assert_eq!(
            host["spec"]["containers"][0]["ports"],
            json!([{"containerPort": 80, "hostPort": 80}, {"containerPort": 81, "hostPort": 9081}])
        );
        let mut pod = json!({"spec": {"containers": [{"ports": [{"containerPort": 80}]}]}});
        apply(&steps, &mut pod, RELEASE);
        assert_eq!(
            pod["spec"]["containers"][0]["ports"],
            json!([{"containerPort": 80}])
        );
    }

    #[test]
    fn a_pods_containers_request_what_they_limit() {
        // SetDefaults_Pod: requests the container does not name come from its limits.
        let steps = [Default::rule(
            ".spec.containers[*].resources.requests",
            Rule::RequestsFromLimits,
        )];
        let mut pod = json!({"spec": {"containers": [
            {"resources": {"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "500m"}}},
            {"resources": {"limits": {"cpu": "2"}}},
            {"resources": {}},
        ]}});
        apply(&steps, &mut pod, RELEASE);
        let containers = &pod["spec"]["containers"];
        assert_eq!(
            containers[0]["resources"]["requests"],
            json!({"cpu": "500m", "memory": "1Gi"})
        );
        assert_eq!(containers[1]["resources"]["requests"], json!({"cpu": "2"}));
        assert_eq!(containers[2]["resources"], json!({}));
    }

    #[test]
    fn parents_are_created_before_their_fields_are_filled() {
        // SetDefaults_Deployment: the strategy is a value type, its rollingUpdate is filled
        // only for the RollingUpdate type.
        let rolling = step(".spec.strategy.rollingUpdate", "{}").when("type", "\"RollingUpdate\"");
        let defaults = [
            step(".spec.replicas", "1"),
            step(".spec.strategy", "{}"),
            step(".spec.strategy.type", "\"RollingUpdate\""),
            rolling,
            step(".spec.strategy.rollingUpdate.maxSurge", "\"25%\""),
        ];
        let mut deployment = json!({"spec": {}});
        apply(&defaults, &mut deployment, RELEASE);
        assert_eq!(
            deployment,
            json!({"spec": {"replicas": 1, "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%"}}}})
        );
        let mut recreate = json!({"spec": {"replicas": 0, "strategy": {"type": "Recreate"}}});
        apply(&defaults, &mut recreate, RELEASE);
        assert_eq!(
            recreate,
            json!({"spec": {"replicas": 0, "strategy": {"type": "Recreate"}}})
        );
    }

    #[test]
    fn list_items_are_each_defaulted_and_missing_parents_are_left_alone() {
        let defaults = [step(
            ".spec.containers[*].terminationMessagePath",
            "\"/dev/termination-log\"",
        )];
        let mut pod = json!({"spec": {"containers": [{"name": "a"}, {"name": "b", "terminationMessagePath": "/x"}]}});
        apply(&defaults, &mut pod, RELEASE);
        assert_eq!(
            pod["spec"]["containers"],
            json!([{"name": "a", "terminationMessagePath": "/dev/termination-log"}, {"name": "b", "terminationMessagePath": "/x"}])
        );
        let mut empty = json!({"metadata": {}});
        apply(&defaults, &mut empty, RELEASE);
        assert_eq!(empty, json!({"metadata": {}}));
    }

    #[test]
    fn steps_apply_only_in_their_releases() {
        let step = step(".spec.internalTrafficPolicy", "\"Cluster\"").since(1, 22);
        let mut old = json!({"spec": {}});
        apply(
            std::slice::from_ref(&step),
            &mut old,
            KubeVersion::new(1, 20),
        );
        assert_eq!(old, json!({"spec": {}}));
        let mut new = json!({"spec": {}});
        apply(&[step], &mut new, RELEASE);
        assert_eq!(new["spec"]["internalTrafficPolicy"], "Cluster");
    }

    // SetDefaults_Service from 1.34: a session affinity config under `None` is set to nil.
    #[test]
    fn a_clear_step_removes_the_field_when_its_sibling_matches() {
        let steps = [
            Default::value(".spec.sessionAffinity", "\"None\""),
            Default::clear(".spec.sessionAffinityConfig")
                .when("sessionAffinity", "\"None\"")
                .since(1, 34),
        ];
        let config = json!({"clientIP": {"timeoutSeconds": 60}});
        let applied = |spec: Value, minor: u16| {
            let mut object = json!({"spec": spec});
            apply(&steps, &mut object, KubeVersion::new(1, minor));
            object["spec"].clone()
        };
        assert_eq!(
            applied(json!({"sessionAffinityConfig": config}), 34),
            json!({"sessionAffinity": "None"})
        );
        assert_eq!(
            applied(json!({"sessionAffinityConfig": config}), 28),
            json!({"sessionAffinityConfig": config, "sessionAffinity": "None"})
        );
        let sticky = json!({"sessionAffinity": "ClientIP", "sessionAffinityConfig": config});
        assert_eq!(applied(sticky.clone(), 36), sticky);
    }
}
