//! What a kind's writes do to an object's generation and status, as upstream's registry
//! strategies decide per kind (`pkg/registry/<group>/<kind>/strategy.go`: `PrepareForCreate`,
//! `PrepareForUpdate`). The default is a custom resource's: generation 1 on create, bumped by
//! any change outside `metadata` and `status`, and a status sent on create dropped when the
//! kind has a status subresource.

use serde_json::Value;

use crate::KubeVersion;

/// A kind's generation and status rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriteRules {
    /// When `metadata.generation` is set and bumped.
    pub generation: Generation,
    /// The first release whose strategy keeps a generation; before it, as [`Generation::None`]
    /// (Jobs and CronJobs have one since 1.27, Pods since 1.33).
    pub generation_since: Option<KubeVersion>,
    /// What a create does with the `status` it is sent, for a kind with a status subresource.
    pub status_on_create: StatusOnCreate,
}

impl WriteRules {
    /// A custom resource's rules.
    pub const CUSTOM: Self = Self {
        generation: Generation::Spec,
        generation_since: None,
        status_on_create: StatusOnCreate::Remove,
    };

    /// The generation rule in release `at`.
    pub fn generation_at(&self, at: KubeVersion) -> Generation {
        match self.generation_since {
            Some(since) if at < since => Generation::None,
            _ => self.generation,
        }
    }
}

impl Default for WriteRules {
    fn default() -> Self {
        Self::CUSTOM
    }
}

/// When `metadata.generation` is set and bumped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Generation {
    /// Never set by the server (a ConfigMap, a Service): a create keeps what the client sent.
    None,
    /// 1 on create, bumped when anything outside `metadata` and `status` changes.
    Spec,
    /// As [`Generation::Spec`], and bumped when the annotations change (a Deployment's are
    /// copied to its ReplicaSets).
    SpecAndAnnotations,
    /// As [`Generation::Spec`], and bumped when the labels change (an EndpointSlice's).
    SpecAndLabels,
    /// 1 on create and never bumped (a PriorityClass).
    CreateOnly,
}

impl Generation {
    /// The generation on create; `None` leaves the client's value.
    pub fn on_create(self) -> Option<i64> {
        match self {
            Self::None => None,
            _ => Some(1),
        }
    }

    /// Whether an update from `old` to `new` bumps the generation.
    pub fn bumps(self, old: &Value, new: &Value) -> bool {
        let meta =
            |object: &Value, field: &str| object.pointer(&format!("/metadata/{field}")).cloned();
        match self {
            Self::None | Self::CreateOnly => false,
            Self::Spec => outside_metadata(old) != outside_metadata(new),
            Self::SpecAndAnnotations => {
                outside_metadata(old) != outside_metadata(new)
                    || meta(old, "annotations") != meta(new, "annotations")
            }
            Self::SpecAndLabels => {
                outside_metadata(old) != outside_metadata(new)
                    || meta(old, "labels") != meta(new, "labels")
            }
        }
    }
}

/// Everything but `metadata`, `status`, `apiVersion` and `kind`: what a generation counts
/// changes of.
pub(crate) fn outside_metadata(object: &Value) -> serde_json::Map<String, Value> {
    let mut map = object.as_object().cloned().unwrap_or_default();
    for key in ["metadata", "status", "apiVersion", "kind"] {
        map.remove(key);
    }
    map
}

/// What a create does with the `status` it is sent, for a kind with a status subresource.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StatusOnCreate {
    /// Kept (a Node's).
    Keep,
    /// Dropped (a custom resource's).
    Remove,
    /// Replaced by an empty status, as a built-in's Go status struct is written: `status: {}`.
    Empty,
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn each_rule_bumps_on_what_its_strategy_compares() {
        let old = json!({"metadata": {"labels": {"a": "1"}, "annotations": {"n": "1"}}, "spec": {"x": 1}, "status": {"s": 1}});
        let annotated = json!({"metadata": {"labels": {"a": "1"}, "annotations": {"n": "2"}}, "spec": {"x": 1}, "status": {"s": 1}});
        let labelled = json!({"metadata": {"labels": {"a": "2"}, "annotations": {"n": "1"}}, "spec": {"x": 1}, "status": {"s": 1}});
        let respecced = json!({"metadata": {"labels": {"a": "1"}, "annotations": {"n": "1"}}, "spec": {"x": 2}, "status": {"s": 2}});
        let status_only = json!({"metadata": {"labels": {"a": "1"}, "annotations": {"n": "1"}}, "spec": {"x": 1}, "status": {"s": 2}});
        // (rule, annotations changed, labels changed, spec changed, status changed)
        let rows = [
            (Generation::None, false, false, false, false),
            (Generation::CreateOnly, false, false, false, false),
            (Generation::Spec, false, false, true, false),
            (Generation::SpecAndAnnotations, true, false, true, false),
            (Generation::SpecAndLabels, false, true, true, false),
        ];
        for (rule, a, l, s, st) in rows {
            assert_eq!(rule.bumps(&old, &annotated), a, "{rule:?} annotations");
            assert_eq!(rule.bumps(&old, &labelled), l, "{rule:?} labels");
            assert_eq!(rule.bumps(&old, &respecced), s, "{rule:?} spec");
            assert_eq!(rule.bumps(&old, &status_only), st, "{rule:?} status");
        }
    }

    #[test]
    fn a_generation_starts_in_its_release() {
        let job = WriteRules {
            generation_since: Some(KubeVersion::new(1, 27)),
            ..WriteRules::CUSTOM
        };
        assert_eq!(job.generation_at(KubeVersion::new(1, 20)), Generation::None);
        assert_eq!(job.generation_at(KubeVersion::new(1, 28)), Generation::Spec);
        assert_eq!(Generation::None.on_create(), None);
        assert_eq!(Generation::CreateOnly.on_create(), Some(1));
    }
}
