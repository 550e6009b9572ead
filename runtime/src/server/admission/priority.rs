//! Upstream's `Priority` admission plugin (`plugin/pkg/admission/priority`, `Plugin.admitPod`):
//! on a pod create, `spec.priority` comes from the PriorityClass `spec.priorityClassName`
//! names (upstream's system classes `system-node-critical` and `system-cluster-critical` when
//! no object of that name is stored), or, without a name, from the class marked
//! `globalDefault` (the lowest value when several are; its name is written to the pod), else
//! 0; `spec.preemptionPolicy` from the same class (`PreemptLowerPriority` without one). A
//! class that does not exist, or a priority or policy in the pod that differs from the
//! class's, is refused with upstream's 403. On an update the stored priority and policy stay
//! when the new object leaves them out. Validating (`validatePriorityClass`): a created
//! PriorityClass marked `globalDefault` is refused while another is (kapi checks creates only).

use serde_json::Value;

use crate::server::Call;
use crate::server::http::error::ApiError;

use super::{forbidden, storage};

/// Where PriorityClasses are stored.
const GROUP: &str = "scheduling.k8s.io";
const PLURAL: &str = "priorityclasses";

/// Upstream's system priority classes (`scheduling.SystemPriorityClasses`), which its API
/// server also creates as objects at start.
const SYSTEM_CLASSES: [(&str, i64); 2] = [
    ("system-node-critical", 2_000_001_000),
    ("system-cluster-critical", 2_000_000_000),
];

/// A class's `preemptionPolicy` when it has none (upstream's PriorityClass default and
/// `getDefaultPriority` without a default class).
const PREEMPT_LOWER: &str = "PreemptLowerPriority";

/// What a pod takes from its class.
struct Resolved {
    /// The class name written to the pod (the global default's, when none was named).
    name: Option<String>,
    value: i64,
    policy: String,
}

/// Sets a created pod's priority and preemption policy.
pub(super) async fn admit_create(call: &Call, pod: &mut Value, name: &str) -> Result<(), ApiError> {
    let class = pod
        .pointer("/spec/priorityClassName")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    let resolved = if class.is_empty() {
        default_class(call).await?
    } else {
        named_class(call, &class).await?.ok_or_else(|| {
            forbidden(
                call,
                name,
                &format!("no PriorityClass with name {class} was found"),
            )
        })?
    };
    let Some(Value::Object(spec)) = pod.get_mut("spec") else {
        return Ok(());
    };
    if let Some(given) = spec.get("priority").filter(|v| !v.is_null())
        && given.as_i64() != Some(resolved.value)
    {
        return Err(forbidden(
            call,
            name,
            &format!(
                "the integer value of priority ({given}) must not be provided in pod spec; priority admission controller computed {} from the given PriorityClass name",
                resolved.value
            ),
        ));
    }
    if let Some(given) = spec.get("preemptionPolicy").and_then(Value::as_str)
        && given != resolved.policy
    {
        return Err(forbidden(
            call,
            name,
            &format!(
                "the string value of PreemptionPolicy ({given}) must not be provided in pod spec; priority admission controller computed {} from the given PriorityClass name",
                resolved.policy
            ),
        ));
    }
    if let Some(class) = resolved.name {
        spec.insert("priorityClassName".into(), Value::from(class));
    }
    spec.insert("priority".into(), Value::from(resolved.value));
    spec.insert("preemptionPolicy".into(), Value::from(resolved.policy));
    Ok(())
}

/// Refuses a second global default class (upstream's `validatePriorityClass` on create).
pub(super) async fn validate_class_create(
    call: &Call,
    class: &Value,
    name: &str,
) -> Result<(), ApiError> {
    let writes_classes =
        call.target.sub.is_none() && call.target.group() == GROUP && call.target.plural() == PLURAL;
    if !writes_classes || class.get("globalDefault").and_then(Value::as_bool) != Some(true) {
        return Ok(());
    }
    if let Resolved {
        name: Some(existing),
        ..
    } = default_class(call).await?
    {
        return Err(forbidden(
            call,
            name,
            &format!(
                "PriorityClass {existing} is already marked as default. Only one default can exist"
            ),
        ));
    }
    Ok(())
}

/// Keeps the stored priority and preemption policy when an update leaves them out
/// (validation refuses any other change to them).
pub(super) fn admit_update(pod: &mut Value, old: &Value) {
    let Some(Value::Object(spec)) = pod.get_mut("spec") else {
        return;
    };
    for field in ["priority", "preemptionPolicy"] {
        if spec.get(field).is_none_or(Value::is_null)
            && let Some(kept) = old.get("spec").and_then(|s| s.get(field))
            && !kept.is_null()
        {
            spec.insert(field.into(), kept.clone());
        }
    }
}

/// The class named `class`: the stored object, else one of upstream's system classes.
async fn named_class(call: &Call, class: &str) -> Result<Option<Resolved>, ApiError> {
    if let Some(stored) = storage::read(call, GROUP, PLURAL, None, class).await? {
        return Ok(Some(resolve(&stored, None)));
    }
    Ok(SYSTEM_CLASSES
        .iter()
        .find(|(name, _)| *name == class)
        .map(|(_, value)| Resolved {
            name: None,
            value: *value,
            policy: PREEMPT_LOWER.to_owned(),
        }))
}

/// The global default class (upstream's `getDefaultPriorityClass`: the lowest value among
/// those marked), or priority 0 without one.
async fn default_class(call: &Call) -> Result<Resolved, ApiError> {
    let classes = storage::list(call, GROUP, PLURAL, None).await?;
    let chosen = classes
        .iter()
        .filter(|c| c.get("globalDefault").and_then(Value::as_bool) == Some(true))
        .min_by_key(|c| value_of(c));
    Ok(match chosen {
        Some(class) => {
            let name = class
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .map(str::to_owned);
            resolve(class, name)
        }
        None => Resolved {
            name: None,
            value: 0,
            policy: PREEMPT_LOWER.to_owned(),
        },
    })
}

fn value_of(class: &Value) -> i64 {
    class.get("value").and_then(Value::as_i64).unwrap_or(0)
}

fn resolve(class: &Value, name: Option<String>) -> Resolved {
    Resolved {
        name,
        value: value_of(class),
        policy: class
            .get("preemptionPolicy")
            .and_then(Value::as_str)
            .unwrap_or(PREEMPT_LOWER)
            .to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    /// Upstream's `admitPod` on Update: the stored priority stays when the update drops it.
    #[test]
    fn an_update_keeps_the_stored_priority() {
        let old = json!({"spec": {"priority": 7, "preemptionPolicy": "Never"}});
        let mut pod = json!({"spec": {}});
        super::admit_update(&mut pod, &old);
        assert_eq!(
            pod["spec"],
            json!({"priority": 7, "preemptionPolicy": "Never"})
        );
        let mut given = json!({"spec": {"priority": 9}});
        super::admit_update(&mut given, &old);
        assert_eq!(given["spec"]["priority"], 9);
    }

    /// The global default with the lowest value wins (`getDefaultPriorityClass`).
    #[test]
    fn classes_resolve_to_their_value_and_policy() {
        let class = json!({"value": 1000, "preemptionPolicy": "Never"});
        let resolved = super::resolve(&class, Some("high".into()));
        assert_eq!(resolved.value, 1000);
        assert_eq!(resolved.policy, "Never");
        let bare = super::resolve(&json!({"value": 5}), None);
        assert_eq!(bare.policy, super::PREEMPT_LOWER);
    }
}
