//! Defaulting: the fields the API server fills in when a write leaves them out, as
//! kube-apiserver's defaulting functions do for the built-ins (`pkg/apis/*/v1/defaults.go`,
//! called for every nested type by the generated `SetObjectDefaults_*`).
//!
//! A kind's defaults are an ordered list of [`Default`](struct@Default)s over JSON paths, parents before their
//! children, so a step that creates an object (`{}`) is followed by the steps that fill it. A
//! path may go through every item of a list (`containers[*]`). Each step fills a field that is
//! missing or `null`, with a JSON value or with what a named [`Rule`] computes from the object
//! that holds the field (a container's `imagePullPolicy` depends on its image); a step may apply
//! only when a sibling field has a given value (`rollingUpdate` only for the `RollingUpdate`
//! strategy) and only in some releases. The built-ins' defaults are data
//! (`specs/defaults/kubernetes.yaml`, per type), which the generator lays out along each kind's
//! schema into its [`ResourceInfo`](crate::ResourceInfo).

use std::borrow::Cow;

use serde_json::{Map, Value};

use crate::KubeVersion;
use crate::printer::Releases;

pub mod rule;

pub use rule::Rule;

/// One defaulting step: fill the field at `path` when it is missing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Default {
    /// Where the field is: a simple JSON path whose `[*]` steps go through every item of a
    /// list, e.g. `.spec.template.spec.containers[*].imagePullPolicy`.
    pub path: Cow<'static, str>,
    /// What to fill it with.
    pub fill: Fill,
    /// Fill only when the sibling field named here has this value.
    pub when: Option<When>,
    /// The releases that default the field.
    pub releases: Releases,
}

/// What a defaulted field is filled with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fill {
    /// This JSON text, e.g. `1`, `"RollingUpdate"` or `{}`.
    Json(Cow<'static, str>),
    /// What the rule computes from the object holding the field; nothing when it returns none.
    Rule(Rule),
}

/// A condition on a sibling of the defaulted field; `null` also matches a missing one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct When {
    /// The sibling's name.
    pub field: Cow<'static, str>,
    /// The JSON text it must equal (after its own default, as steps run in order).
    pub equals: Cow<'static, str>,
}

/// Applies a kind's defaults to an object, in order, for release `release`.
pub fn apply(defaults: &[Default], object: &mut Value, release: KubeVersion) {
    for step in defaults.iter().filter(|d| d.releases.contains(release)) {
        let (parent, field) = match step.path.rsplit_once('.') {
            Some((parent, field)) => (parent, field),
            None => continue,
        };
        let steps: Vec<&str> = parent.split('.').filter(|s| !s.is_empty()).collect();
        for_each_holder(object, &steps, &mut |holder| fill(holder, field, step));
    }
}

/// Calls `f` on every object the path `steps` reaches (through each item at `[*]`).
fn for_each_holder(value: &mut Value, steps: &[&str], f: &mut dyn FnMut(&mut Map<String, Value>)) {
    let Some((first, rest)) = steps.split_first() else {
        if let Value::Object(map) = value {
            f(map);
        }
        return;
    };
    let (name, every) = match first.strip_suffix("[*]") {
        Some(name) => (name, true),
        None => (*first, false),
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

fn fill(holder: &mut Map<String, Value>, field: &str, step: &Default) {
    if !matches!(holder.get(field), None | Some(Value::Null)) {
        return;
    }
    if let Some(when) = &step.when {
        let want: Value = serde_json::from_str(&when.equals).unwrap_or(Value::Null);
        // `null` also matches a missing sibling, as Go's nil does.
        let found = holder.get(when.field.as_ref()).unwrap_or(&Value::Null);
        if *found != want {
            return;
        }
    }
    let value = match &step.fill {
        Fill::Json(text) => serde_json::from_str(text).ok(),
        Fill::Rule(rule) => rule.compute(holder),
    };
    if let Some(value) = value {
        holder.insert(field.to_owned(), value);
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn step(path: &'static str, json: &'static str) -> Default {
        Default {
            path: Cow::Borrowed(path),
            fill: Fill::Json(Cow::Borrowed(json)),
            when: None,
            releases: Releases::ALL,
        }
    }

    const RELEASE: KubeVersion = KubeVersion::new(1, 36);

    #[test]
    fn parents_are_created_before_their_fields_are_filled() {
        // SetDefaults_Deployment: the strategy is a value type, its rollingUpdate is filled
        // only for the RollingUpdate type.
        let mut rolling = step(".spec.strategy.rollingUpdate", "{}");
        rolling.when = Some(When {
            field: Cow::Borrowed("type"),
            equals: Cow::Borrowed("\"RollingUpdate\""),
        });
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
        let mut step = step(".spec.internalTrafficPolicy", "\"Cluster\"");
        step.releases.since = Some(KubeVersion::new(1, 22));
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
}
