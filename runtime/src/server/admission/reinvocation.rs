//! Upstream's admission reinvocation (`staging/src/k8s.io/apiserver/pkg/admission/`
//! `reinvocation.go`, and each mutating plugin's `reinvocationcontext.go`): the chain of
//! mutating plugins runs once and, if a MutatingAdmissionPolicy or a mutating webhook changed
//! the object, once more, never a third time. In the second pass the built-in plugins run
//! again and the policies and webhooks run only those of their invocations that asked for it
//! (`reinvocationPolicy: IfNeeded`) and that ran before something changed the object: a later
//! invocation of the same plugin in either pass, or anything else (the other plugin, a
//! built-in one) since the plugin last ran.
//!
//! [`Reinvocation`] is one request's record of that; [`Plugin`] is one plugin's share of it,
//! keyed by what identifies an invocation there (a policy, binding and parameter; a webhook's
//! configuration and place).

use std::collections::BTreeSet;

use serde_json::Value;

/// One mutating plugin's reinvocation context (upstream's `webhookReinvokeContext` and
/// `policyReinvokeContext`, which are the same).
#[derive(Debug, Default)]
pub(crate) struct Plugin {
    /// The object as the plugin last left it (`lastWebhookOutput`, `lastPolicyOutput`).
    last_output: Option<Value>,
    /// The invocations with `IfNeeded` that ran and that nothing changed the object after yet.
    invoked: BTreeSet<String>,
    /// The invocations to run in the second pass.
    due: BTreeSet<String>,
}

impl Plugin {
    /// At the start of the plugin's run in `pass`: in the second pass, if something else changed
    /// the object since the plugin last ran, every invocation that asked for it is due.
    pub(crate) fn start(&mut self, pass: Pass, object: &Value) {
        if pass == Pass::Second && self.last_output.as_ref() != Some(object) {
            self.require_invoked();
        }
    }

    /// Whether the invocation `key` runs in `pass`: always in the first, in the second only if
    /// it is due (so an invocation that did not run in the first pass never runs in the
    /// second, as upstream's dispatchers skip it).
    pub(crate) fn runs(&self, pass: Pass, key: &str) -> bool {
        pass == Pass::First || self.due.contains(key)
    }

    /// After the invocation `key` ran: if it `changed` the object, every invocation that ran
    /// before it and asked for it is due; then it is one of those if it asks for it
    /// (`if_needed`).
    pub(crate) fn ran(&mut self, key: String, changed: bool, if_needed: bool) {
        if changed {
            self.require_invoked();
        }
        if if_needed {
            self.invoked.insert(key);
        }
    }

    /// At the end of the plugin's run: the object as it leaves it, kept only while some
    /// invocation may be due because of a later change (no copy of every object written).
    pub(crate) fn finish(&mut self, object: &Value) {
        self.last_output = (!self.invoked.is_empty()).then(|| object.clone());
    }

    /// Upstream's `RequireReinvokingPreviouslyInvokedPlugins`.
    fn require_invoked(&mut self) {
        self.due.append(&mut self.invoked);
    }
}

/// Which pass of the mutating plugins runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Pass {
    #[default]
    First,
    Second,
}

/// One request's reinvocation context (upstream's `admission.ReinvocationContext`).
#[derive(Debug, Default)]
pub(crate) struct Reinvocation {
    pub(crate) pass: Pass,
    /// Whether a policy or a webhook changed the object in the first pass.
    changed: bool,
    pub(crate) policies: Plugin,
    pub(crate) webhooks: Plugin,
}

impl Reinvocation {
    /// Records that a policy or a webhook changed the object (`SetShouldReinvoke`).
    pub(crate) fn changed(&mut self) {
        self.changed = true;
    }

    /// Whether a second pass follows the pass that just ran, which it then becomes: once, after
    /// a first pass that changed the object (upstream's `reinvoker.Admit`).
    pub(crate) fn next_pass(&mut self) -> bool {
        if self.pass == Pass::First && self.changed {
            self.pass = Pass::Second;
            true
        } else {
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{Pass, Plugin, Reinvocation};

    #[test]
    fn an_invocation_is_due_when_a_later_one_changes_the_object() {
        let mut plugin = Plugin::default();
        let object = json!({"a": 1});
        plugin.start(Pass::First, &object);
        plugin.ran("first".into(), false, true);
        plugin.ran("never".into(), false, false);
        plugin.ran("second".into(), true, true);
        plugin.ran("third".into(), false, true);
        plugin.finish(&object);
        // Unchanged since: only what ran before the change.
        plugin.start(Pass::Second, &object);
        assert!(plugin.runs(Pass::Second, "first"));
        assert!(!plugin.runs(Pass::Second, "never"));
        assert!(!plugin.runs(Pass::Second, "second"));
        assert!(!plugin.runs(Pass::Second, "third"));
        assert!(plugin.runs(Pass::First, "third"));
    }

    #[test]
    fn every_invocation_asking_is_due_when_another_plugin_changed_the_object() {
        let mut plugin = Plugin::default();
        plugin.start(Pass::First, &json!({}));
        plugin.ran("first".into(), false, true);
        plugin.ran("never".into(), false, false);
        plugin.ran("last".into(), true, true);
        plugin.finish(&json!({"a": 1}));
        plugin.start(Pass::Second, &json!({"a": 2}));
        assert!(plugin.runs(Pass::Second, "first"));
        assert!(plugin.runs(Pass::Second, "last"));
        assert!(!plugin.runs(Pass::Second, "never"));
    }

    #[test]
    fn there_is_one_second_pass_after_a_change() {
        let mut unchanged = Reinvocation::default();
        assert!(!unchanged.next_pass());
        let mut changed = Reinvocation::default();
        changed.changed();
        assert!(changed.next_pass());
        assert_eq!(changed.pass, Pass::Second);
        changed.changed();
        assert!(!changed.next_pass());
    }
}
