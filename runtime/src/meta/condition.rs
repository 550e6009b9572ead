//! `Condition` (`metav1.Condition`), the standard shape of an entry in `status.conditions`, and
//! the [`Conditions`] helpers that read and update a list of them with the semantics of
//! apimachinery's `meta/conditions.go`.

use serde::{Deserialize, Serialize};

use crate::Time;
use crate::open_enum;

open_enum! {
    /// The state of a condition (`metav1.ConditionStatus`).
    ///
    /// A missing condition reads as `Unknown`.
    pub enum ConditionStatus {
        /// The condition holds.
        True = "True",
        /// The condition does not hold.
        False = "False",
        /// The controller cannot tell.
        Unknown = "Unknown",
    }
}

impl Default for ConditionStatus {
    /// `Unknown`, the state of a condition nobody has reported.
    fn default() -> Self {
        Self::Unknown
    }
}

impl From<bool> for ConditionStatus {
    fn from(value: bool) -> Self {
        if value { Self::True } else { Self::False }
    }
}

/// One aspect of an object's current state (`metav1.Condition`).
///
/// All fields but `observedGeneration` are required upstream and always written. A missing
/// `lastTransitionTime` is written as `null`, as Go writes a zero time.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Condition {
    /// CamelCase name of the aspect, e.g. `Ready` or `example.com/Synced`.
    #[serde(default, rename = "type")]
    pub type_: String,
    /// Whether the condition holds.
    #[serde(default)]
    pub status: ConditionStatus,
    /// The `metadata.generation` the condition was computed from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// When `status` last changed; [`Conditions::set_condition`] fills it in when `None`.
    #[serde(default)]
    pub last_transition_time: Option<Time>,
    /// CamelCase machine-readable reason for the last transition.
    #[serde(default)]
    pub reason: String,
    /// Human-readable details; may be empty.
    #[serde(default)]
    pub message: String,
}

impl Condition {
    /// A condition without a transition time, ready for [`Conditions::set_condition`].
    pub fn new(
        type_: impl Into<String>,
        status: impl Into<ConditionStatus>,
        reason: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        Self {
            type_: type_.into(),
            status: status.into(),
            observed_generation: None,
            last_transition_time: None,
            reason: reason.into(),
            message: message.into(),
        }
    }

    /// The same condition with `observedGeneration` set.
    pub fn with_observed_generation(mut self, generation: i64) -> Self {
        self.observed_generation = Some(generation);
        self
    }
}

/// Helpers over a list of conditions, as upstream's `meta.SetStatusCondition` and friends.
///
/// Names carry a `_condition` suffix because `Vec` already has an inherent `remove`.
pub trait Conditions {
    /// The first condition of this type.
    fn find_condition(&self, type_: &str) -> Option<&Condition>;

    /// The status of the condition of this type, `Unknown` when it is missing.
    fn condition_status(&self, type_: &str) -> ConditionStatus {
        self.find_condition(type_)
            .map(|c| c.status.clone())
            .unwrap_or_default()
    }

    /// Whether the condition of this type is present with status `True`.
    fn is_condition_true(&self, type_: &str) -> bool {
        self.find_condition(type_)
            .is_some_and(|c| c.status == ConditionStatus::True)
    }

    /// Whether the condition of this type is present with status `False`.
    fn is_condition_false(&self, type_: &str) -> bool {
        self.find_condition(type_)
            .is_some_and(|c| c.status == ConditionStatus::False)
    }

    /// Inserts the condition, or updates the one of the same type, using the current time for
    /// a transition that has no time of its own. Returns whether anything changed.
    ///
    /// See [`Conditions::set_condition_at`].
    fn set_condition(&mut self, condition: Condition) -> bool {
        self.set_condition_at(condition, Time::now())
    }

    /// Inserts the condition, or updates the one of the same type, using `now` for a
    /// transition that has no time of its own. Returns whether anything changed.
    ///
    /// `lastTransitionTime` moves only when the status changes; changing only the reason,
    /// message or observed generation keeps it.
    fn set_condition_at(&mut self, condition: Condition, now: Time) -> bool;

    /// Removes every condition of this type. Returns whether one was present.
    fn remove_condition(&mut self, type_: &str) -> bool;
}

impl Conditions for Vec<Condition> {
    fn find_condition(&self, type_: &str) -> Option<&Condition> {
        self.iter().find(|c| c.type_ == type_)
    }

    fn set_condition_at(&mut self, mut condition: Condition, now: Time) -> bool {
        let Some(existing) = self.iter_mut().find(|c| c.type_ == condition.type_) else {
            condition.last_transition_time.get_or_insert(now);
            self.push(condition);
            return true;
        };
        let mut changed = false;
        if existing.status != condition.status {
            existing.status = condition.status;
            existing.last_transition_time = Some(condition.last_transition_time.unwrap_or(now));
            changed = true;
        }
        if existing.reason != condition.reason {
            existing.reason = condition.reason;
            changed = true;
        }
        if existing.message != condition.message {
            existing.message = condition.message;
            changed = true;
        }
        if existing.observed_generation != condition.observed_generation {
            existing.observed_generation = condition.observed_generation;
            changed = true;
        }
        changed
    }

    fn remove_condition(&mut self, type_: &str) -> bool {
        let before = self.len();
        self.retain(|c| c.type_ != type_);
        self.len() != before
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn t(s: &str) -> Time {
        s.parse().unwrap()
    }

    const T0: &str = "2024-01-01T00:00:00Z";
    const T1: &str = "2024-01-01T00:01:00Z";
    const T2: &str = "2024-01-01T00:02:00Z";

    #[test]
    fn round_trips_with_required_fields_always_written() {
        let input = json!({
            "type": "Ready",
            "status": "True",
            "observedGeneration": 3,
            "lastTransitionTime": T0,
            "reason": "AllGood",
            "message": "ok"
        });
        let c: Condition = serde_json::from_value(input.clone()).unwrap();
        assert_eq!(c.status, ConditionStatus::True);
        assert_eq!(c.last_transition_time, Some(t(T0)));
        assert_eq!(serde_json::to_value(&c).unwrap(), input);

        let bare = Condition::new("Ready", ConditionStatus::Unknown, "", "");
        assert_eq!(
            serde_json::to_value(&bare).unwrap(),
            json!({
                "type": "Ready",
                "status": "Unknown",
                "lastTransitionTime": null,
                "reason": "",
                "message": ""
            })
        );
    }

    #[test]
    fn unknown_status_values_survive() {
        let c: Condition = serde_json::from_value(json!({"type": "X", "status": "Maybe"})).unwrap();
        assert_eq!(c.status, ConditionStatus::Other("Maybe".into()));
        assert_eq!(serde_json::to_value(&c).unwrap()["status"], "Maybe");
    }

    #[test]
    fn set_inserts_with_now_or_given_time() {
        let mut conds = Vec::new();
        assert!(conds.set_condition_at(Condition::new("Ready", true, "Up", ""), t(T1)));
        assert_eq!(conds[0].last_transition_time, Some(t(T1)));

        let mut given = Condition::new("Synced", false, "Pending", "");
        given.last_transition_time = Some(t(T0));
        assert!(conds.set_condition_at(given, t(T1)));
        assert_eq!(conds[1].last_transition_time, Some(t(T0)));
        assert_eq!(conds.len(), 2);
    }

    #[test]
    fn set_keeps_transition_time_unless_status_flips() {
        let mut conds = Vec::new();
        conds.set_condition_at(Condition::new("Ready", true, "Up", "a"), t(T0));

        // Same everything: nothing changes.
        assert!(!conds.set_condition_at(Condition::new("Ready", true, "Up", "a"), t(T1)));

        // Reason, message and generation change; the transition time stays.
        let update = Condition::new("Ready", true, "StillUp", "b").with_observed_generation(2);
        assert!(conds.set_condition_at(update, t(T1)));
        assert_eq!(conds[0].reason, "StillUp");
        assert_eq!(conds[0].message, "b");
        assert_eq!(conds[0].observed_generation, Some(2));
        assert_eq!(conds[0].last_transition_time, Some(t(T0)));

        // The status flips: the transition time moves to now.
        assert!(conds.set_condition_at(Condition::new("Ready", false, "Down", "b"), t(T2)));
        assert_eq!(conds[0].status, ConditionStatus::False);
        assert_eq!(conds[0].last_transition_time, Some(t(T2)));
        assert_eq!(conds[0].observed_generation, None);

        // A flip that brings its own time uses it.
        let mut back = Condition::new("Ready", true, "Up", "");
        back.last_transition_time = Some(t(T1));
        assert!(conds.set_condition_at(back, t(T2)));
        assert_eq!(conds[0].last_transition_time, Some(t(T1)));
        assert_eq!(conds.len(), 1);
    }

    #[test]
    fn set_condition_uses_the_clock_for_new_entries() {
        let before = Time::now();
        let mut conds = Vec::new();
        conds.set_condition(Condition::new("Ready", true, "Up", ""));
        let stamped = conds[0].last_transition_time.unwrap();
        assert!(stamped >= before && stamped <= Time::now());
    }

    #[test]
    fn reads_and_removal() {
        let mut conds = Vec::new();
        conds.set_condition_at(Condition::new("Ready", true, "Up", ""), t(T0));
        conds.set_condition_at(Condition::new("Stalled", false, "No", ""), t(T0));
        conds.set_condition_at(
            Condition::new("Degraded", ConditionStatus::Unknown, "Hm", ""),
            t(T0),
        );

        let cases = [
            ("Ready", ConditionStatus::True, true, false),
            ("Stalled", ConditionStatus::False, false, true),
            ("Degraded", ConditionStatus::Unknown, false, false),
            ("Missing", ConditionStatus::Unknown, false, false),
        ];
        for (ty, status, is_true, is_false) in cases {
            assert_eq!(conds.condition_status(ty), status, "{ty}");
            assert_eq!(conds.is_condition_true(ty), is_true, "{ty}");
            assert_eq!(conds.is_condition_false(ty), is_false, "{ty}");
        }
        assert_eq!(
            conds.find_condition("Stalled").map(|c| c.reason.as_str()),
            Some("No")
        );
        assert!(conds.find_condition("Missing").is_none());

        assert!(conds.remove_condition("Stalled"));
        assert!(!conds.remove_condition("Stalled"));
        assert_eq!(conds.len(), 2);
        assert_eq!(conds.condition_status("Stalled"), ConditionStatus::Unknown);
    }

    mod prop {
        use super::*;
        use proptest::prelude::*;

        fn condition() -> impl Strategy<Value = Condition> {
            (
                "[A-C]",
                prop_oneof![Just("True"), Just("False"), Just("Unknown")],
                "[a-b]",
                proptest::option::of(0i64..3),
            )
                .prop_map(|(ty, status, reason, generation)| Condition {
                    observed_generation: generation,
                    ..Condition::new(ty, status, reason, "")
                })
        }

        proptest! {
            #[test]
            fn set_keeps_one_entry_per_type_and_applies_the_update(
                steps in proptest::collection::vec((condition(), 0i64..100), 1..20)
            ) {
                let mut conds: Vec<Condition> = Vec::new();
                for (cond, second) in steps {
                    let now = Time::from(jiff::Timestamp::from_second(second).unwrap());
                    let before = conds.find_condition(&cond.type_).cloned();
                    let changed = conds.set_condition_at(cond.clone(), now);
                    let after = conds.find_condition(&cond.type_).unwrap().clone();

                    prop_assert_eq!(&after.status, &cond.status);
                    prop_assert_eq!(&after.reason, &cond.reason);
                    prop_assert_eq!(after.observed_generation, cond.observed_generation);
                    let mut types: Vec<&str> = conds.iter().map(|c| c.type_.as_str()).collect();
                    types.sort_unstable();
                    types.dedup();
                    prop_assert_eq!(types.len(), conds.len());

                    match before {
                        None => {
                            prop_assert!(changed);
                            prop_assert_eq!(after.last_transition_time, Some(now));
                        }
                        Some(old) => {
                            let mut expected = cond.clone();
                            expected.last_transition_time = if old.status == cond.status {
                                old.last_transition_time
                            } else {
                                Some(now)
                            };
                            prop_assert_eq!(changed, old != expected);
                            prop_assert_eq!(after, expected);
                        }
                    }
                }
            }
        }
    }
}
