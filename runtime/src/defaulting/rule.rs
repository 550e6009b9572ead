//! Defaults that depend on the object holding the field, one function per rule.

use serde_json::{Map, Value};

/// A named way to compute a default from the object that holds the field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Rule {
    /// A container's `imagePullPolicy` (`SetDefaults_Container`): `Always` for an image tagged
    /// `latest` or without a tag or digest, else `IfNotPresent`.
    ImagePullPolicy,
    /// A Service port's `targetPort` (`SetDefaults_Service`): the port's own `port`.
    TargetPort,
}

impl Rule {
    /// The default for a field of `holder`, or none to leave it out.
    pub fn compute(self, holder: &Map<String, Value>) -> Option<Value> {
        match self {
            Self::ImagePullPolicy => Some(Value::from(image_pull_policy(
                holder.get("image").and_then(Value::as_str).unwrap_or(""),
            ))),
            Self::TargetPort => holder.get("port").cloned(),
        }
    }
}

/// `SetDefaults_Container`: `Always` when the image's tag is `latest`, which
/// `parsers.ParseImageName` assumes for an image with neither tag nor digest; `IfNotPresent`
/// otherwise, also for a name it cannot parse (the empty one), whose tag it reports empty.
fn image_pull_policy(image: &str) -> &'static str {
    if image.is_empty() {
        return "IfNotPresent";
    }
    let (name, digest) = match image.split_once('@') {
        Some((name, digest)) => (name, Some(digest)),
        None => (image, None),
    };
    // A tag follows the last `:` after the last `/` (a registry's port comes before a `/`).
    let last = name.rsplit('/').next().unwrap_or(name);
    let tag = match last.rsplit_once(':') {
        Some((_, tag)) => tag,
        None if digest.is_some() => "",
        None => "latest",
    };
    if tag == "latest" {
        "Always"
    } else {
        "IfNotPresent"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn image_pull_policy_follows_the_tag() {
        // Cases from SetDefaults_Container and its tests (pkg/apis/core/v1/defaults_test.go).
        for (image, policy) in [
            ("nginx", "Always"),
            ("nginx:latest", "Always"),
            ("nginx:1.25", "IfNotPresent"),
            ("registry:5000/nginx", "Always"),
            ("registry:5000/nginx:1.25", "IfNotPresent"),
            ("nginx@sha256:abc", "IfNotPresent"),
            ("nginx:latest@sha256:abc", "Always"),
            ("", "IfNotPresent"),
        ] {
            assert_eq!(image_pull_policy(image), policy, "{image}");
        }
    }
}
