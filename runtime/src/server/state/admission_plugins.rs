//! Which admission plugins run: kube-apiserver's `--enable-admission-plugins` and
//! `--disable-admission-plugins` resolved over the default set, as upstream's
//! `AdmissionOptions` resolves them (`staging/src/k8s.io/apiserver/pkg/server/options/admission.go`,
//! `Validate` and `enabledPluginNames`).
//!
//! kapi always runs the plugins of upstream's default set that it has (the admission package
//! lists them); what the flags switch is the one plugin kapi has that upstream leaves off by
//! default: NodeRestriction, which kubeadm turns on. Naming a default plugin in
//! `--enable-admission-plugins` changes nothing, as upstream; turning one of them off is refused,
//! since kapi's handlers run them unconditionally.

use std::collections::BTreeSet;

/// The plugins of upstream's default set that kapi runs, always (`DefaultOffAdmissionPlugins`'
/// complement, restricted to what kapi has).
const ALWAYS_ON: &[&str] = &[
    "NamespaceLifecycle",
    "LimitRanger",
    "ServiceAccount",
    "Priority",
    "DefaultTolerationSeconds",
    "DefaultStorageClass",
    "StorageObjectInUseProtection",
    "MutatingAdmissionPolicy",
    "MutatingAdmissionWebhook",
    "ValidatingAdmissionPolicy",
    "ValidatingAdmissionWebhook",
    "ResourceQuota",
];

/// The NodeRestriction plugin's name (upstream's `noderestriction.PluginName`).
pub(crate) const NODE_RESTRICTION: &str = "NodeRestriction";

/// Which admission plugins a server runs beyond those it always runs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AdmissionPlugins {
    node_restriction: bool,
}

impl AdmissionPlugins {
    /// The plugins `enable` and `disable` (the flags' comma-separated names) leave on, or the
    /// errors upstream's validation gives (and kapi's for a plugin it cannot turn off or does
    /// not have), joined as upstream's aggregate joins them.
    pub fn from_flags(enable: &[String], disable: &[String]) -> Result<Self, String> {
        let known = |name: &str| name == NODE_RESTRICTION || ALWAYS_ON.contains(&name);
        let mut errors = Vec::new();
        for name in enable {
            if !known(name) {
                errors.push(format!(
                    "enable-admission-plugins plugin {name:?} is unknown"
                ));
            }
        }
        for name in disable {
            if !known(name) {
                errors.push(format!(
                    "disable-admission-plugins plugin {name:?} is unknown"
                ));
            } else if name != NODE_RESTRICTION {
                errors.push(format!(
                    "disable-admission-plugins plugin {name:?} cannot be turned off: kapi always runs it"
                ));
            }
        }
        let enabled: BTreeSet<&str> = enable.iter().map(String::as_str).collect();
        let disabled: BTreeSet<&str> = disable.iter().map(String::as_str).collect();
        let both: Vec<&str> = enabled.intersection(&disabled).copied().collect();
        if !both.is_empty() {
            errors.push(format!(
                "[{}] in enable-admission-plugins and disable-admission-plugins overlapped",
                both.join(" ")
            ));
        }
        match errors.as_slice() {
            [] => Ok(Self {
                node_restriction: enabled.contains(NODE_RESTRICTION),
            }),
            [one] => Err(one.clone()),
            many => Err(format!("[{}]", many.join(", "))),
        }
    }

    /// The default set and NodeRestriction: kube-apiserver as kubeadm runs it.
    pub fn with_node_restriction() -> Self {
        Self {
            node_restriction: true,
        }
    }

    /// Whether NodeRestriction runs.
    pub(crate) fn node_restriction(&self) -> bool {
        self.node_restriction
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|n| (*n).to_owned()).collect()
    }

    // Upstream's `AdmissionOptions.Validate` messages.
    #[test]
    fn flags_resolve_as_upstream() {
        assert_eq!(
            AdmissionPlugins::from_flags(&[], &[]),
            Ok(AdmissionPlugins::default())
        );
        assert_eq!(
            AdmissionPlugins::from_flags(&names(&["NodeRestriction", "ResourceQuota"]), &[]),
            Ok(AdmissionPlugins::with_node_restriction())
        );
        assert_eq!(
            AdmissionPlugins::from_flags(&names(&["Nope"]), &[]),
            Err(r#"enable-admission-plugins plugin "Nope" is unknown"#.to_owned())
        );
        assert_eq!(
            AdmissionPlugins::from_flags(
                &names(&["NodeRestriction"]),
                &names(&["NodeRestriction"])
            ),
            Err("[NodeRestriction] in enable-admission-plugins and disable-admission-plugins overlapped".to_owned())
        );
        assert!(
            AdmissionPlugins::from_flags(&[], &names(&["ResourceQuota", "Nope"]))
                .is_err_and(|e| e.starts_with('[') && e.contains("cannot be turned off"))
        );
    }
}
