//! Where objects live in the store, and the opaque continue tokens of paginated lists.
//!
//! Keys are `/registry/<group or "core">/<plural>/[<namespace>/]<name>`. Every version of a
//! group's resource shares one key space, as upstream stores one version per resource; a
//! built-in served in several groups (a [`Family`](crate::conversion::Family)) is keyed under
//! its storage group, so `extensions` Ingresses live with `networking.k8s.io`'s. Names and
//! namespaces are validated as path segments before they reach a key, so no key can escape its
//! prefix.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde::{Deserialize, Serialize};

use crate::ResourceInfo;

/// The root of every key the server writes.
const ROOT: &str = "/registry";

/// The prefix of every object of a resource, across namespaces, ending in `/`.
pub(crate) fn resource_prefix(info: &ResourceInfo) -> String {
    let group = info.family.map_or(&*info.gvk.group, |f| f.storage_group());
    prefix_of(group, &info.plural)
}

/// The prefix of every object of the resource `plural` of `group` ("" for core), ending in `/`.
pub(crate) fn prefix_of(group: &str, plural: &str) -> String {
    let group = if group.is_empty() { "core" } else { group };
    format!("{ROOT}/{group}/{plural}/")
}

/// The prefix of a collection: one namespace's objects, or every object of the resource.
pub(crate) fn collection_prefix(info: &ResourceInfo, namespace: Option<&str>) -> String {
    let mut prefix = resource_prefix(info);
    if let (true, Some(ns)) = (info.is_namespaced(), namespace) {
        prefix.push_str(ns);
        prefix.push('/');
    }
    prefix
}

/// The first key after `key` in key order: where the next page of a listing starts.
pub(crate) fn after(key: &str) -> String {
    format!("{key}\0")
}

/// The key of one object.
pub(crate) fn object_key(info: &ResourceInfo, namespace: Option<&str>, name: &str) -> String {
    let mut key = collection_prefix(info, namespace);
    key.push_str(name);
    key
}

/// What a continue token carries: the list's revision and where the next page starts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ContinueToken {
    /// Format marker, as upstream's tokens carry one.
    #[serde(rename = "v")]
    pub(crate) version: String,
    /// Revision of the first page; -1 asks for the latest (an "inconsistent" continuation).
    pub(crate) rv: i64,
    /// The next key to read, relative to the collection prefix.
    pub(crate) start: String,
}

const TOKEN_VERSION: &str = "meta.k8s.io/v1";

impl ContinueToken {
    /// A token resuming at `start` (relative to the prefix), at revision `rv`.
    pub(crate) fn new(rv: i64, start: String) -> Self {
        Self {
            version: TOKEN_VERSION.to_owned(),
            rv,
            start,
        }
    }

    /// The token as sent to clients.
    pub(crate) fn encode(&self) -> String {
        // Serializing a struct of strings and integers cannot fail.
        let json = serde_json::to_vec(self).unwrap_or_default();
        STANDARD.encode(json)
    }

    /// Reads a client's token; the error text is the reason it is unusable.
    pub(crate) fn decode(token: &str) -> Result<Self, String> {
        let bytes = STANDARD
            .decode(token)
            .or_else(|_| base64::engine::general_purpose::URL_SAFE.decode(token))
            .map_err(|e| format!("continue key is not valid: {e}"))?;
        let parsed: Self = serde_json::from_slice(&bytes)
            .map_err(|e| format!("continue key is not valid: {e}"))?;
        if parsed.version != TOKEN_VERSION {
            return Err(format!(
                "continue key is not valid: server does not recognize this encoding version {:?}",
                parsed.version
            ));
        }
        // A start key that climbs out of the collection would let a token read other data.
        if parsed.start.starts_with('/') || parsed.start.split('/').any(|s| s == "..") {
            return Err("continue key is not valid: invalid start key".to_owned());
        }
        Ok(parsed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_round_trips_and_rejects_garbage() {
        let token = ContinueToken::new(42, "default/b\0".to_owned());
        assert_eq!(ContinueToken::decode(&token.encode()).unwrap(), token);
        for bad in [
            "",
            "!!!",
            "e30=",
            &STANDARD.encode(br#"{"v":"x","rv":1,"start":"a"}"#),
        ] {
            assert!(ContinueToken::decode(bad).is_err(), "{bad}");
        }
        let escape = ContinueToken::new(1, "../secrets".to_owned()).encode();
        assert!(ContinueToken::decode(&escape).is_err());
    }
}
