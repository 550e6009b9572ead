//! The short names and categories kube-apiserver gives its built-in resources.
//!
//! OpenAPI specs do not carry them, so kinds generated from a spec arrive without; discovery fills
//! them in from this table, because users type `kubectl get cm` and `kubectl get all`. A kind that
//! declares its own names keeps them.

/// `(short names, categories)` of a built-in resource, by group and plural.
pub(crate) fn builtin_names(
    group: &str,
    plural: &str,
) -> Option<(&'static [&'static str], &'static [&'static str])> {
    const ALL: &[&str] = &["all"];
    const NONE: &[&str] = &[];
    Some(match (group, plural) {
        ("", "componentstatuses") => (&["cs"], NONE),
        ("", "configmaps") => (&["cm"], NONE),
        ("", "endpoints") => (&["ep"], NONE),
        ("", "events") | ("events.k8s.io", "events") => (&["ev"], NONE),
        ("", "limitranges") => (&["limits"], NONE),
        ("", "namespaces") => (&["ns"], NONE),
        ("", "nodes") => (&["no"], NONE),
        ("", "persistentvolumeclaims") => (&["pvc"], NONE),
        ("", "persistentvolumes") => (&["pv"], NONE),
        ("", "pods") => (&["po"], ALL),
        ("", "replicationcontrollers") => (&["rc"], ALL),
        ("", "resourcequotas") => (&["quota"], NONE),
        ("", "serviceaccounts") => (&["sa"], NONE),
        ("", "services") => (&["svc"], ALL),
        ("apps" | "extensions", "daemonsets") => (&["ds"], ALL),
        ("apps" | "extensions", "deployments") => (&["deploy"], ALL),
        ("apps" | "extensions", "replicasets") => (&["rs"], ALL),
        ("apps", "statefulsets") => (&["sts"], ALL),
        ("autoscaling", "horizontalpodautoscalers") => (&["hpa"], ALL),
        ("batch", "cronjobs") => (&["cj"], ALL),
        ("batch", "jobs") => (NONE, ALL),
        ("policy", "poddisruptionbudgets") => (&["pdb"], NONE),
        ("policy" | "extensions", "podsecuritypolicies") => (&["psp"], NONE),
        ("networking.k8s.io" | "extensions", "ingresses") => (&["ing"], NONE),
        ("networking.k8s.io" | "extensions", "networkpolicies") => (&["netpol"], NONE),
        ("storage.k8s.io", "storageclasses") => (&["sc"], NONE),
        ("apiextensions.k8s.io", "customresourcedefinitions") => (&["crd", "crds"], NONE),
        ("certificates.k8s.io", "certificatesigningrequests") => (&["csr"], NONE),
        ("scheduling.k8s.io", "priorityclasses") => (&["pc"], NONE),
        _ => return None,
    })
}

/// Fills `short_names` and `categories` from the table when the kind declared none.
pub(crate) fn fill(
    group: &str,
    plural: &str,
    short_names: &mut Vec<String>,
    categories: &mut Vec<String>,
) {
    let Some((shorts, cats)) = builtin_names(group, plural) else {
        return;
    };
    if short_names.is_empty() {
        short_names.extend(shorts.iter().map(|s| (*s).to_owned()));
    }
    if categories.is_empty() {
        categories.extend(cats.iter().map(|s| (*s).to_owned()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fills_only_what_a_kind_left_empty() {
        let (mut shorts, mut cats) = (Vec::new(), Vec::new());
        fill("", "pods", &mut shorts, &mut cats);
        assert_eq!(
            (shorts, cats),
            (vec!["po".to_owned()], vec!["all".to_owned()])
        );

        let (mut shorts, mut cats) = (vec!["mine".to_owned()], Vec::new());
        fill("apps", "deployments", &mut shorts, &mut cats);
        assert_eq!(
            (shorts, cats),
            (vec!["mine".to_owned()], vec!["all".to_owned()])
        );

        let (mut shorts, mut cats) = (Vec::new(), Vec::new());
        fill("widgets.kapi.dev", "widgets", &mut shorts, &mut cats);
        assert!(shorts.is_empty() && cats.is_empty());
    }
}
