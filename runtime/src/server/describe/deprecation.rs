//! Deprecation warnings and version removal: what a kind's [`Lifecycle`](crate::resource::Lifecycle) means for a request at
//! the server's configured Kubernetes release.
//!
//! The texts are upstream's, word for word:
//! - built-in kinds (k8s.io/apiserver's deprecation warning): `<group>/<version> <Kind> is
//!   deprecated in v<maj>.<min>+`, then `, unavailable in v<maj>.<min>+` when a removal release is
//!   known, then `; use <group>/<version> <Kind>` when a replacement is known;
//! - custom resources (apiextensions-apiserver): the CRD's `deprecationWarning` verbatim, or by
//!   default `<group>/<version> <Kind> is deprecated`, followed by `; use <group>/<version>
//!   <Kind>` naming the highest-priority version of the same kind that is served and not
//!   deprecated and ranks above the deprecated one ([`warning_in`] adds that part, since it needs
//!   the other registered versions).
//!
//! The core sends the text as `Warning: 299 - "<text>"` ([`header_value`] escapes it as
//! upstream does).
//!
//! A kind is served at release `at` when it was introduced at or before `at` (or its
//! introduction is unknown) and is not removed at `at`.

use std::cmp::Ordering;

use axum::http::HeaderValue;

use crate::resource::{KubeVersion, ResourceInfo};
use crate::server::state::release;
use crate::{GroupVersionKind, Registry};

use crate::server::state::release::UNSET;

/// The deprecation warning for a request to `info`'s group/version at release `at`, or `None`
/// when the kind is not deprecated then.
///
/// For custom resources deprecated without their own text this gives upstream's text without
/// the `; use ...` suggestion, which needs the registry: prefer [`warning_in`] where one is at hand.
pub(crate) fn warning(info: &ResourceInfo, at: KubeVersion) -> Option<String> {
    let lifecycle = &info.lifecycle;
    if !lifecycle.is_deprecated_at(at) {
        return None;
    }
    if let Some(text) = &lifecycle.warning {
        return Some(text.to_string());
    }
    // Upstream writes nothing when the deprecation release is the zero value.
    let since = lifecycle.deprecated.filter(|v| *v != UNSET)?;
    let mut text = format!("{} is deprecated in {since}+", info.gvk);
    if let Some(removed) = lifecycle.removed.filter(|v| *v != UNSET) {
        text.push_str(&format!(", unavailable in {removed}+"));
    }
    if let Some(replacement) = lifecycle.replacement.as_ref().filter(|r| !is_empty(r)) {
        text.push_str(&format!("; use {replacement}"));
    }
    Some(text)
}

/// [`warning`], completing a custom resource's default text with upstream's suggestion of a
/// newer version of the same kind registered in `registry`.
pub(crate) fn warning_in(
    registry: &Registry,
    info: &ResourceInfo,
    at: KubeVersion,
) -> Option<String> {
    let text = warning(info, at)?;
    if info.lifecycle.deprecated.is_some() || text != default_custom_warning(info) {
        return Some(text);
    }
    let better = registry
        .kinds()
        .map(|kind| &*kind.info)
        .filter(|other| {
            other.gvk.group == info.gvk.group
                && other.gvk.kind == info.gvk.kind
                && is_served(other, at)
                && !other.lifecycle.is_deprecated_at(at)
                && compare_versions(&other.gvk.version, &info.gvk.version) == Ordering::Greater
        })
        .max_by(|a, b| compare_versions(&a.gvk.version, &b.gvk.version));
    Some(match better {
        Some(other) => format!("{text}; use {}", other.gvk),
        None => text,
    })
}

/// apiextensions-apiserver's text for a version marked deprecated without its own warning:
/// `<group>/<version> <Kind> is deprecated`.
fn default_custom_warning(info: &ResourceInfo) -> String {
    format!("{} is deprecated", info.gvk)
}

/// Whether `info`'s group/version is served at release `at`: introduced by then (or with no
/// known introduction) and not yet removed.
pub(crate) fn is_served(info: &ResourceInfo, at: KubeVersion) -> bool {
    release::is_served(info, at)
}

fn is_empty(gvk: &GroupVersionKind) -> bool {
    gvk.group.is_empty() && gvk.version.is_empty() && gvk.kind.is_empty()
}

/// The value of the `Warning` header carrying `text`: `299 - "<text>"` with `"` and `\`
/// escaped by a backslash, as upstream formats it. `None` for text upstream refuses to send
/// (control characters), which upstream drops rather than fails the request over.
pub(crate) fn header_value(text: &str) -> Option<HeaderValue> {
    HeaderValue::from_bytes(header_text(text)?.as_bytes()).ok()
}

/// [`header_value`] as a string.
pub(crate) fn header_text(text: &str) -> Option<String> {
    if text.chars().any(char::is_control) {
        return None;
    }
    let mut out = String::with_capacity(text.len() + 8);
    out.push_str("299 - \"");
    for c in text.chars() {
        if c == '"' || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
    Some(out)
}

/// Upstream's ordering of Kubernetes-style version names, highest priority first: `v2`, `v1`,
/// `v1beta2`, `v1beta1`, `v1alpha1`, anything else. `Greater` when `a` has priority over `b`. Versions that are
/// not Kubernetes-style rank below all that are, and among themselves in lexicographic order
/// (the smallest string first).
pub(crate) fn compare_versions(a: &str, b: &str) -> Ordering {
    if a == b {
        return Ordering::Equal;
    }
    match (parse_version(a), parse_version(b)) {
        (None, None) => b.cmp(a),
        (None, Some(_)) => Ordering::Less,
        (Some(_), None) => Ordering::Greater,
        (Some(x), Some(y)) => x.cmp(&y),
    }
}

/// `(stability, major, minor)`; stability 0 alpha, 1 beta, 2 GA, so tuples order by priority.
fn parse_version(version: &str) -> Option<(u8, u64, u64)> {
    let rest = version.strip_prefix('v')?;
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    let (major, rest) = rest.split_at(digits);
    let major = parse_number(major)?;
    if rest.is_empty() {
        return Some((2, major, 0));
    }
    let (stability, minor) = if let Some(minor) = rest.strip_prefix("alpha") {
        (0, minor)
    } else if let Some(minor) = rest.strip_prefix("beta") {
        (1, minor)
    } else {
        return None;
    };
    Some((stability, major, parse_number(minor)?))
}

/// A number as upstream's pattern accepts it: digits without a leading zero.
fn parse_number(digits: &str) -> Option<u64> {
    if digits.is_empty() || digits.starts_with('0') || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use super::*;
    use crate::resource::{Lifecycle, Scope, Subresources};
    use crate::server::state::release::lifecycle_served;

    fn info(
        group: &'static str,
        version: &'static str,
        kind: &'static str,
        lifecycle: Lifecycle,
    ) -> ResourceInfo {
        ResourceInfo {
            gvk: GroupVersionKind::new_static(group, version, kind),
            plural: Cow::Owned(format!("{}s", kind.to_lowercase())),
            singular: Cow::Owned(kind.to_lowercase()),
            short_names: Cow::Borrowed(&[]),
            categories: Cow::Borrowed(&[]),
            scope: Scope::Namespaced,
            verbs: Cow::Borrowed(crate::Verb::ALL),
            subresources: Subresources::default(),
            lifecycle,
            printer_columns: Cow::Borrowed(&[]),
            selectable_fields: Cow::Borrowed(&[]),
            defaults: Cow::Borrowed(&[]),
            field_labels: Default::default(),
            write_rules: crate::write_rules::WriteRules::CUSTOM,
            family: None,
        }
    }

    fn v(minor: u16) -> Option<KubeVersion> {
        Some(KubeVersion::new(1, minor))
    }

    fn gvk(
        group: &'static str,
        version: &'static str,
        kind: &'static str,
    ) -> Option<GroupVersionKind> {
        Some(GroupVersionKind::new_static(group, version, kind))
    }

    #[test]
    fn upstream_warning_texts() {
        let ingress = Lifecycle {
            introduced: v(1),
            deprecated: v(14),
            removed: v(22),
            replacement: gvk("networking.k8s.io", "v1", "Ingress"),
            warning: None,
        };
        let pdb = Lifecycle {
            introduced: v(5),
            deprecated: v(21),
            removed: v(25),
            replacement: gvk("policy", "v1", "PodDisruptionBudget"),
            warning: None,
        };
        let cases: Vec<(ResourceInfo, u16, Option<&str>)> = vec![
            (
                info("extensions", "v1beta1", "Ingress", ingress.clone()),
                20,
                Some(
                    "extensions/v1beta1 Ingress is deprecated in v1.14+, unavailable in v1.22+; use networking.k8s.io/v1 Ingress",
                ),
            ),
            (info("extensions", "v1beta1", "Ingress", ingress), 13, None),
            (
                info("policy", "v1beta1", "PodDisruptionBudget", pdb.clone()),
                20,
                None,
            ),
            (
                info("policy", "v1beta1", "PodDisruptionBudget", pdb),
                21,
                Some(
                    "policy/v1beta1 PodDisruptionBudget is deprecated in v1.21+, unavailable in v1.25+; use policy/v1 PodDisruptionBudget",
                ),
            ),
            (
                info(
                    "apps",
                    "v1beta1",
                    "Deployment",
                    Lifecycle {
                        deprecated: v(9),
                        removed: v(16),
                        ..Lifecycle::default()
                    },
                ),
                10,
                Some("apps/v1beta1 Deployment is deprecated in v1.9+, unavailable in v1.16+"),
            ),
            (
                info(
                    "batch",
                    "v2alpha1",
                    "CronJob",
                    Lifecycle {
                        deprecated: v(8),
                        replacement: gvk("batch", "v1", "CronJob"),
                        ..Lifecycle::default()
                    },
                ),
                8,
                Some("batch/v2alpha1 CronJob is deprecated in v1.8+; use batch/v1 CronJob"),
            ),
            (
                info(
                    "",
                    "v1",
                    "ComponentStatus",
                    Lifecycle {
                        deprecated: v(19),
                        ..Lifecycle::default()
                    },
                ),
                30,
                Some("v1 ComponentStatus is deprecated in v1.19+"),
            ),
            (
                info(
                    "",
                    "v1beta1",
                    "Thing",
                    Lifecycle {
                        deprecated: v(3),
                        replacement: gvk("", "v1", "Thing"),
                        ..Lifecycle::default()
                    },
                ),
                3,
                Some("v1beta1 Thing is deprecated in v1.3+; use v1 Thing"),
            ),
            (
                info(
                    "x.io",
                    "v1",
                    "Zero",
                    Lifecycle {
                        deprecated: Some(UNSET),
                        ..Lifecycle::default()
                    },
                ),
                30,
                None,
            ),
            (
                info(
                    "x.io",
                    "v1",
                    "Empty",
                    Lifecycle {
                        deprecated: v(2),
                        removed: Some(UNSET),
                        replacement: Some(GroupVersionKind::new_static("", "", "")),
                        ..Lifecycle::default()
                    },
                ),
                3,
                Some("x.io/v1 Empty is deprecated in v1.2+"),
            ),
            (
                info(
                    "stable.example.com",
                    "v1beta1",
                    "CronTab",
                    Lifecycle {
                        warning: Some(Cow::Borrowed(
                            "stable.example.com/v1beta1 CronTab is deprecated; see https://example.com \"now\"",
                        )),
                        ..Lifecycle::default()
                    },
                ),
                1,
                Some(
                    "stable.example.com/v1beta1 CronTab is deprecated; see https://example.com \"now\"",
                ),
            ),
            (
                info(
                    "apps",
                    "v1beta2",
                    "Deployment",
                    Lifecycle {
                        deprecated: v(9),
                        warning: Some(Cow::Borrowed("use apps/v1 Deployment")),
                        ..Lifecycle::default()
                    },
                ),
                8,
                None,
            ),
            (
                info(
                    "apps",
                    "v1beta2",
                    "Deployment",
                    Lifecycle {
                        deprecated: v(9),
                        warning: Some(Cow::Borrowed("use apps/v1 Deployment")),
                        ..Lifecycle::default()
                    },
                ),
                9,
                Some("use apps/v1 Deployment"),
            ),
            (
                info("apps", "v1", "Deployment", Lifecycle::default()),
                36,
                None,
            ),
        ];
        for (info, minor, expected) in cases {
            assert_eq!(
                warning(&info, KubeVersion::new(1, minor)).as_deref(),
                expected,
                "{} at 1.{minor}",
                info.gvk
            );
        }
    }

    mod crontab {
        use serde::{Deserialize, Serialize};

        use crate::meta::ObjectMeta;
        use crate::type_tag::{ApiVersion, Kind};

        macro_rules! version {
            ($name:ident, $version:literal $(, $extra:meta)*) => {
                #[derive(Clone, Debug, Default, Serialize, Deserialize, crate::Resource)]
                #[resource(crate = "crate", group = "stable.example.com", version = $version, kind = "CronTab", no_list)]
                $(#[resource($extra)])*
                pub(crate) struct $name {
                    #[serde(rename = "apiVersion")]
                    api_version: ApiVersion<Self>,
                    kind: Kind<Self>,
                    #[serde(default)]
                    metadata: ObjectMeta,
                }
            };
        }

        version!(V1alpha1, "v1alpha1");
        version!(
            V1beta1,
            "v1beta1",
            deprecation_warning = "stable.example.com/v1beta1 CronTab is deprecated"
        );
        version!(V1beta2, "v1beta2", deprecation_warning = "custom text");
        version!(V1, "v1");
        version!(
            V2,
            "v2",
            deprecation_warning = "stable.example.com/v2 CronTab is deprecated"
        );
        version!(V3, "v3", deprecated = "1.9", removed = "1.10");
    }

    #[test]
    fn custom_resource_default_text_names_the_best_served_version() {
        use crate::Resource;
        let mut registry = Registry::new();
        registry
            .register::<crontab::V1alpha1>()
            .register::<crontab::V1beta1>()
            .register::<crontab::V1beta2>()
            .register::<crontab::V1>()
            .register::<crontab::V2>()
            .register::<crontab::V3>();
        let at = KubeVersion::new(1, 30);
        // v3 is removed and v2 deprecated, so v1 is the newest served, undeprecated version.
        assert_eq!(
            warning_in(&registry, crontab::V1beta1::info(), at).as_deref(),
            Some(
                "stable.example.com/v1beta1 CronTab is deprecated; use stable.example.com/v1 CronTab"
            )
        );
        // Nothing served ranks above v2 without being deprecated or removed.
        assert_eq!(
            warning_in(&registry, crontab::V2::info(), at).as_deref(),
            Some("stable.example.com/v2 CronTab is deprecated")
        );
        // Custom text is used verbatim.
        assert_eq!(
            warning_in(&registry, crontab::V1beta2::info(), at).as_deref(),
            Some("custom text")
        );
        assert_eq!(warning_in(&registry, crontab::V1::info(), at), None);
        // Before v3's deprecation it is the suggestion.
        assert_eq!(
            warning_in(&registry, crontab::V2::info(), KubeVersion::new(1, 8)).as_deref(),
            Some("stable.example.com/v2 CronTab is deprecated; use stable.example.com/v3 CronTab")
        );
    }

    #[test]
    fn kube_aware_version_order() {
        let mut versions = vec![
            "v1alpha1",
            "v1",
            "foo",
            "v2beta1",
            "v1beta2",
            "v10",
            "v2",
            "v1beta1",
            "bar",
            "v11alpha2",
            "v01",
        ];
        versions.sort_by(|a, b| compare_versions(b, a));
        assert_eq!(
            versions,
            [
                "v10",
                "v2",
                "v1",
                "v2beta1",
                "v1beta2",
                "v1beta1",
                "v11alpha2",
                "v1alpha1",
                "bar",
                "foo",
                "v01"
            ]
        );
    }

    #[test]
    fn header_escapes_quotes_and_backslashes() {
        assert_eq!(
            header_text(r#"a "b" \c"#).as_deref(),
            Some(r#"299 - "a \"b\" \\c""#)
        );
        assert_eq!(header_text("bad\nline"), None);
        assert_eq!(header_text("tab\there"), None);
        let value = header_value("über").expect("utf-8 text is sent");
        assert_eq!(value.as_bytes(), "299 - \"über\"".as_bytes());
    }

    #[test]
    fn served_window() {
        let lifecycle = Lifecycle {
            introduced: Some(KubeVersion::new(1, 19)),
            removed: Some(KubeVersion::new(1, 22)),
            ..Lifecycle::default()
        };
        let served: Vec<u16> = (17..24)
            .filter(|minor| lifecycle_served(&lifecycle, KubeVersion::new(1, *minor)))
            .collect();
        assert_eq!(served, [19, 20, 21]);
        assert!(lifecycle_served(
            &Lifecycle::default(),
            KubeVersion::new(1, 0)
        ));
    }
}
