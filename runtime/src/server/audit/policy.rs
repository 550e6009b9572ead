//! The audit policy: upstream's `audit.k8s.io/v1` `Policy` (kube-apiserver's
//! `--audit-policy-file`) and how it picks a request's level: the first rule that matches the
//! user, groups, verb, resources, namespaces or non-resource URLs decides, and a request no rule
//! matches is not audited (`staging/src/k8s.io/apiserver/pkg/audit/policy/checker.go`).

use serde::Deserialize;

use crate::server::auth::attributes::Attributes;
use crate::server::auth::user::User;

/// How much of a request an event records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize, serde::Serialize)]
pub(crate) enum Level {
    /// Not audited.
    None,
    /// Who, what, when and the answer's status.
    Metadata,
    /// And the request's body.
    Request,
    /// And the response's body.
    RequestResponse,
}

/// The stages of a request an event is written at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
pub(crate) enum Stage {
    RequestReceived,
    ResponseStarted,
    ResponseComplete,
    Panic,
}

/// Resources a rule names: a group and some of its resources (`*`, `pods/log`, `*/status`,
/// `deployments/*`), optionally by name.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct GroupResources {
    #[serde(default)]
    group: String,
    #[serde(default)]
    resources: Vec<String>,
    #[serde(default)]
    resource_names: Vec<String>,
}

/// One rule of a policy.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Rule {
    level: Level,
    #[serde(default)]
    users: Vec<String>,
    #[serde(default)]
    user_groups: Vec<String>,
    #[serde(default)]
    verbs: Vec<String>,
    #[serde(default)]
    resources: Vec<GroupResources>,
    #[serde(default)]
    namespaces: Vec<String>,
    #[serde(default, rename = "nonResourceURLs")]
    non_resource_urls: Vec<String>,
    #[serde(default)]
    omit_stages: Vec<Stage>,
    #[serde(default)]
    omit_managed_fields: Option<bool>,
}

/// An audit policy.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Policy {
    #[serde(default)]
    api_version: String,
    #[serde(default)]
    kind: String,
    #[serde(default)]
    rules: Vec<Rule>,
    #[serde(default)]
    omit_stages: Vec<Stage>,
    #[serde(default)]
    omit_managed_fields: bool,
}

/// What the policy decides for one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Decision {
    pub(crate) level: Level,
    pub(crate) omit_stages: Vec<Stage>,
    pub(crate) omit_managed_fields: bool,
}

impl Policy {
    /// Reads a policy document (YAML or JSON), checked as upstream checks it: its kind and
    /// version, at least one rule.
    pub(crate) fn parse(text: &str) -> Result<Self, String> {
        let policy: Self = serde_yaml_ng::from_str(text).map_err(|e| e.to_string())?;
        if policy.kind != "Policy" {
            return Err(format!("kind {:?} is not Policy", policy.kind));
        }
        if !matches!(policy.api_version.as_str(), "audit.k8s.io/v1") {
            return Err(format!(
                "apiVersion {:?} is not audit.k8s.io/v1",
                policy.api_version
            ));
        }
        if policy.rules.is_empty() {
            // Upstream's loader: "loaded illegal policy with 0 rules".
            return Err("loaded illegal policy with 0 rules".to_owned());
        }
        Ok(policy)
    }

    /// Whether some rule records bodies (level `Request` or `RequestResponse`).
    pub(crate) fn records_bodies(&self) -> bool {
        self.rules.iter().any(|rule| rule.level >= Level::Request)
    }

    /// The level of `request` by `user` (none when unauthenticated), and the stages left out.
    pub(crate) fn decide(&self, user: Option<&User>, request: &Attributes) -> Decision {
        let rule = self.rules.iter().find(|rule| rule.matches(user, request));
        let mut omit_stages = self.omit_stages.clone();
        if let Some(rule) = rule {
            omit_stages.extend(rule.omit_stages.iter().copied());
        }
        Decision {
            level: rule.map_or(Level::None, |rule| rule.level),
            omit_stages,
            omit_managed_fields: rule
                .and_then(|rule| rule.omit_managed_fields)
                .unwrap_or(self.omit_managed_fields),
        }
    }
}

fn has(values: &[String], value: &str) -> bool {
    values.iter().any(|v| v == value)
}

impl Rule {
    fn matches(&self, user: Option<&User>, request: &Attributes) -> bool {
        if !self.users.is_empty() && !user.is_some_and(|u| has(&self.users, &u.username)) {
            return false;
        }
        if !self.user_groups.is_empty()
            && !user.is_some_and(|u| u.groups.iter().any(|g| has(&self.user_groups, g)))
        {
            return false;
        }
        if !self.verbs.is_empty() && !has(&self.verbs, &request.verb) {
            return false;
        }
        if !self.namespaces.is_empty() || !self.resources.is_empty() {
            return self.matches_resource(request);
        }
        if !self.non_resource_urls.is_empty() {
            return !request.resource_request
                && self
                    .non_resource_urls
                    .iter()
                    .any(|spec| path_matches(&request.path, spec));
        }
        true
    }

    fn matches_resource(&self, request: &Attributes) -> bool {
        if !request.resource_request {
            return false;
        }
        if !self.namespaces.is_empty() && !has(&self.namespaces, &request.namespace) {
            return false;
        }
        if self.resources.is_empty() {
            return true;
        }
        let sub = &request.subresource;
        let combined = if sub.is_empty() {
            request.resource.clone()
        } else {
            format!("{}/{sub}", request.resource)
        };
        self.resources
            .iter()
            .filter(|gr| gr.group == request.api_group)
            .any(|gr| {
                gr.resources.is_empty()
                    || gr.resources.iter().any(|res| {
                        (gr.resource_names.is_empty() || has(&gr.resource_names, &request.name))
                            && (*res == combined
                                || res == "*"
                                || (!sub.is_empty() && res.strip_prefix("*/") == Some(sub))
                                || res.strip_suffix("/*") == Some(request.resource.as_str()))
                    })
            })
    }
}

/// `*`, the path, or a prefix of it ending in `*`.
fn path_matches(path: &str, spec: &str) -> bool {
    spec == "*"
        || spec == path
        || spec
            .strip_suffix('*')
            .is_some_and(|prefix| path.starts_with(prefix))
}

#[cfg(test)]
mod tests {
    use axum::http::Method;

    use super::*;

    fn request(method: Method, uri: &str) -> Attributes {
        Attributes::of(&method, &uri.parse().unwrap())
    }

    // The shape of upstream's example policy (`audit-policy.yaml` of the auditing docs).
    const POLICY: &str = r#"
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
  - level: RequestResponse
    resources:
    - group: ""
      resources: ["pods"]
  - level: Metadata
    resources:
    - group: ""
      resources: ["pods/log", "pods/status"]
  - level: None
    resources:
    - group: ""
      resources: ["configmaps"]
      resourceNames: ["controller-leader"]
  - level: None
    users: ["system:kube-proxy"]
    verbs: ["watch"]
  - level: None
    userGroups: ["system:authenticated"]
    nonResourceURLs: ["/api*", "/version"]
  - level: Request
    resources:
    - group: ""
      resources: ["configmaps"]
    namespaces: ["kube-system"]
  - level: Metadata
    resources:
    - group: ""
      resources: ["secrets", "configmaps"]
  - level: Request
    resources:
    - group: ""
    - group: "extensions"
  - level: Metadata
    omitStages: ["RequestReceived", "ResponseStarted"]
"#;

    #[test]
    fn the_first_matching_rule_decides() {
        let policy = Policy::parse(POLICY).unwrap();
        let alice = User::new("alice", &["system:authenticated"]);
        let level = |method, uri: &str| policy.decide(Some(&alice), &request(method, uri)).level;
        for (method, uri, want) in [
            (
                Method::GET,
                "/api/v1/namespaces/a/pods",
                Level::RequestResponse,
            ),
            (
                Method::GET,
                "/api/v1/namespaces/a/pods/p/log",
                Level::Metadata,
            ),
            (
                Method::PUT,
                "/api/v1/namespaces/a/configmaps/controller-leader",
                Level::None,
            ),
            (
                Method::GET,
                "/api/v1/namespaces/a/configmaps/x",
                Level::Metadata,
            ),
            (
                Method::GET,
                "/api/v1/namespaces/kube-system/configmaps/x",
                Level::Request,
            ),
            (Method::GET, "/api/v1/namespaces/a/secrets", Level::Metadata),
            (Method::GET, "/api/v1/namespaces/a/services", Level::Request),
            (Method::GET, "/apis/apps/v1/deployments", Level::Metadata),
            (Method::GET, "/apis", Level::None),
            (Method::GET, "/healthz", Level::Metadata),
        ] {
            assert_eq!(level(method, uri), want, "{uri}");
        }
        let last = policy.decide(Some(&alice), &request(Method::GET, "/healthz"));
        assert_eq!(
            last.omit_stages,
            [
                Stage::RequestReceived,
                Stage::RequestReceived,
                Stage::ResponseStarted
            ]
        );
        let proxy = User::new("system:kube-proxy", &[]);
        let watch = request(Method::GET, "/api/v1/endpoints?watch=true");
        assert_eq!(policy.decide(Some(&proxy), &watch).level, Level::None);
        assert_eq!(
            policy.decide(None, &request(Method::GET, "/version")).level,
            Level::Metadata
        );
    }

    #[test]
    fn policies_are_checked() {
        assert!(Policy::parse("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: []").is_err());
        assert!(Policy::parse("apiVersion: v1\nkind: Policy\nrules: [{level: None}]").is_err());
        let unknown = "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: [{level: Loud}]";
        assert!(Policy::parse(unknown).is_err());
    }
}
