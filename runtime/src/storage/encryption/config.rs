//! Upstream's `EncryptionConfiguration` file (`apiserver.config.k8s.io/v1`, the one version
//! kube-apiserver's `--encryption-provider-config` decodes): reading it strictly, validating
//! it with upstream's field paths and messages
//! (`staging/src/k8s.io/apiserver/pkg/apis/apiserver/validation/validation_encryption.go`),
//! and building each listed resource's providers as upstream's loader does
//! (`staging/src/k8s.io/apiserver/pkg/server/options/encryptionconfig/config.go`), wildcards
//! (`*.apps`, `*.` for the core group, `*.*`) and the masking refusal included.
//!
//! `kms` providers are read and refused: they need a KMS plugin's socket, which kapi does not
//! talk to.

use std::path::Path;
use std::sync::Arc;

use base64::Engine as _;
use serde::Deserialize;
use serde_json::Value;

use super::ciphers::{AES_KEY_SIZES, Cipher, SECRETBOX_KEY_SIZES};
use super::transformer::{NamedKey, Provider, Transformer};
use crate::KubeVersion;
use crate::validation::{Errors, FieldPath, Shown};

/// The group-version of the file.
const API_VERSION: &str = "apiserver.config.k8s.io/v1";
/// The kind of the file.
const KIND: &str = "EncryptionConfiguration";

const AESCBC_PREFIX: &str = "k8s:enc:aescbc:v1:";
const AESGCM_PREFIX: &str = "k8s:enc:aesgcm:v1:";
const SECRETBOX_PREFIX: &str = "k8s:enc:secretbox:v1:";

// Upstream's validation messages.
const MORE_THAN_ONE: &str = "more than one provider specified in a single element, should split into different list elements";
const NO_PROVIDER: &str = "provider does not contain any of the expected providers: KMS, AESGCM, AESCBC, Secretbox, Identity";
const BASE64: &str = "secrets must be base64 encoded";
const EVENTS_GROUP: &str = "'*.events.k8s.io' objects are stored using the 'events' API group in etcd. Use 'events' instead in the config file";
const EXTENSIONS_GROUP: &str =
    "'extensions' group has been removed and cannot be used for encryption";
const STAR_RESOURCE: &str =
    "use '*.' to encrypt all the resources from core API group or *.* to encrypt all resources";
const OVERLAP: &str = "using overlapping resources such as 'secrets' and '*.' in the same resource list is not allowed as they will be masked";
const NON_REST: &str = "resources which do not have REST API/s cannot be encrypted";
const CAPITALS: &str = "resource name should not contain capital letters";
const ACROSS_GROUPS: &str = "encrypting the same resource across groups is not supported";
const DUPLICATE: &str = "the same resource cannot be specified multiple times";

/// Why an encryption configuration was refused: upstream's message (for a file, what
/// kube-apiserver prints, `error while parsing file: ...` with the field paths at fault).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ConfigError(String);

/// The file as written: `apiVersion`, `kind` and the resource rules.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(rename = "apiVersion")]
    _api_version: String,
    #[serde(rename = "kind")]
    _kind: String,
    #[serde(default)]
    resources: Vec<ResourceConfiguration>,
}

/// One rule: resources and the providers they use, in order.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ResourceConfiguration {
    #[serde(default)]
    resources: Vec<String>,
    #[serde(default)]
    providers: Vec<ProviderConfiguration>,
}

/// One provider: exactly one of these is set.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ProviderConfiguration {
    aesgcm: Option<KeysConfiguration>,
    aescbc: Option<KeysConfiguration>,
    secretbox: Option<KeysConfiguration>,
    identity: Option<IdentityConfiguration>,
    kms: Option<KmsConfiguration>,
}

/// The keys of `aesgcm`, `aescbc` or `secretbox`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct KeysConfiguration {
    #[serde(default)]
    keys: Vec<Key>,
}

/// A named key; the secret is base64 (standard alphabet, padded).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Key {
    #[serde(default)]
    name: String,
    #[serde(default)]
    secret: String,
}

/// `identity: {}`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct IdentityConfiguration {}

/// A `kms` provider's fields, read only to be refused.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code, reason = "read to be refused: kapi talks to no KMS plugin")]
struct KmsConfiguration {
    #[serde(rename = "apiVersion")]
    api_version: Option<String>,
    name: Option<String>,
    cachesize: Option<i64>,
    endpoint: Option<String>,
    timeout: Option<String>,
}

/// A `group`/`resource` pair as upstream's `schema.ParseGroupResource` reads `resource.group`
/// (`secrets` → core `secrets`; `*.apps`, `*.` (every core resource), `*.*`).
#[derive(Debug, Clone, PartialEq, Eq)]
struct GroupResource {
    group: String,
    resource: String,
}

impl GroupResource {
    fn parse(text: &str) -> Self {
        match text.split_once('.') {
            Some((resource, group)) => Self {
                group: group.to_owned(),
                resource: resource.to_owned(),
            },
            None => Self {
                group: String::new(),
                resource: text.to_owned(),
            },
        }
    }

    fn any() -> Self {
        Self {
            group: "*".into(),
            resource: "*".into(),
        }
    }

    /// As upstream's `grYAMLString` writes it in the masking error.
    fn yaml(&self) -> String {
        match (self.group.as_str(), self.resource.as_str()) {
            ("", "*") => "*.".to_owned(),
            ("", resource) => resource.to_owned(),
            (group, resource) => format!("{resource}.{group}"),
        }
    }
}

/// A parsed and validated encryption configuration: for each resource it lists, the providers
/// that encrypt its writes (the first) and read its stored values (any of them).
///
/// Build it from kube-apiserver's file with [`EncryptionConfig::from_file`] (or its text with
/// [`EncryptionConfig::parse`]) and hand it to
/// [`ServerBuilder::encryption`](crate::server::ServerBuilder::encryption), or wrap a store in
/// [`EncryptedStorage`](super::EncryptedStorage) yourself. The default has no rules: every
/// value is stored as it is, and a stored value that is encrypted is refused as upstream's
/// identity transformer refuses it (`identity transformer tried to read encrypted data`), the
/// answer of a server started without the file that encrypted it.
#[derive(Clone, Default)]
pub struct EncryptionConfig {
    rules: Vec<(GroupResource, Arc<Transformer>)>,
}

impl std::fmt::Debug for EncryptionConfig {
    // The resources only; keys stay out of logs.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.rules.iter().map(|(gr, _)| gr.yaml()))
            .finish()
    }
}

impl EncryptionConfig {
    /// Reads and validates kube-apiserver's `--encryption-provider-config` file; field errors
    /// render bad values as release `release` does.
    pub fn from_file(path: &Path, release: KubeVersion) -> Result<Self, ConfigError> {
        let quoted = Value::from(path.display().to_string());
        let text = std::fs::read(path).map_err(|e| {
            ConfigError(format!(
                "error while parsing file: error while loading file: error reading encryption provider configuration file {quoted}: {e}"
            ))
        })?;
        if text.is_empty() {
            return Err(ConfigError(format!(
                "error while parsing file: error while loading file: encryption provider configuration file {quoted} is empty"
            )));
        }
        let text = String::from_utf8_lossy(&text);
        let file = decode(&text).map_err(|e| {
            ConfigError(format!(
                "error while parsing file: error decoding encryption provider configuration file {quoted}: {e}"
            ))
        })?;
        Self::build(file, release)
    }

    /// Parses and validates the text of an `EncryptionConfiguration` (YAML or JSON).
    pub fn parse(text: &str, release: KubeVersion) -> Result<Self, ConfigError> {
        let file = decode(text).map_err(|e| {
            ConfigError(format!(
                "error while parsing file: error decoding encryption provider configuration: {e}"
            ))
        })?;
        Self::build(file, release)
    }

    fn build(file: File, release: KubeVersion) -> Result<Self, ConfigError> {
        let errors = validate(&file, release);
        if !errors.is_empty() {
            let messages: Vec<String> = errors
                .into_causes()
                .into_iter()
                .map(|cause| cause.to_string())
                .collect();
            let message = if messages.len() == 1 {
                messages.concat()
            } else {
                format!("[{}]", messages.join(", "))
            };
            return Err(ConfigError(format!("error while parsing file: {message}")));
        }
        let building = |e: String| ConfigError(format!("error while building transformers: {e}"));
        let mut rules: Vec<(GroupResource, Vec<Provider>)> = Vec::new();
        for entry in &file.resources {
            let providers = entry
                .providers
                .iter()
                .map(provider)
                .collect::<Result<Vec<_>, _>>()
                .map_err(building)?;
            for text in &entry.resources {
                let gr = GroupResource::parse(text);
                let group_wide = GroupResource {
                    group: gr.group.clone(),
                    resource: "*".into(),
                };
                for masking in [group_wide, GroupResource::any()] {
                    if rules.iter().any(|(seen, _)| *seen == masking) {
                        return Err(building(format!(
                            "resource {} is masked by earlier rule {}",
                            Value::from(gr.yaml()),
                            Value::from(masking.yaml())
                        )));
                    }
                }
                // A resource listed again later adds that rule's providers after its own.
                match rules.iter_mut().find(|(seen, _)| *seen == gr) {
                    Some((_, list)) => list.extend(providers.iter().cloned()),
                    None => rules.push((gr, providers.clone())),
                }
            }
        }
        Ok(Self {
            rules: rules
                .into_iter()
                .map(|(gr, providers)| (gr, Arc::new(Transformer { providers })))
                .collect(),
        })
    }

    /// The providers of `resource` in `group` ("" for core), as upstream picks them: the
    /// resource's own rule, else its group's `*.<group>`, else `*.*`; `None` when no rule
    /// lists it (its values are stored as they are).
    pub(crate) fn transformer(&self, group: &str, resource: &str) -> Option<&Arc<Transformer>> {
        let find = |g: &str, r: &str| {
            self.rules
                .iter()
                .find(|(gr, _)| gr.group == g && gr.resource == r)
                .map(|(_, t)| t)
        };
        find(group, resource)
            .or_else(|| find(group, "*"))
            .or_else(|| find("*", "*"))
    }
}

/// The file's apiVersion and kind checked, then the whole read strictly (unknown fields
/// refused, as upstream's strict decoder does).
fn decode(text: &str) -> Result<File, String> {
    let loose: Value = serde_yaml_ng::from_str(text).map_err(|e| e.to_string())?;
    let field = |name: &str| loose.get(name).and_then(Value::as_str).unwrap_or("");
    let (api_version, kind) = (field("apiVersion"), field("kind"));
    if kind.is_empty() {
        return Err("Object 'Kind' is missing".to_owned());
    }
    if api_version != API_VERSION || kind != KIND {
        return Err(format!(
            "no kind {} is registered for version {}",
            Value::from(kind),
            Value::from(api_version)
        ));
    }
    serde_yaml_ng::from_str(text).map_err(|e| format!("strict decoding error: {e}"))
}

/// Upstream's `ValidateEncryptionConfiguration`, and kapi's refusal of `kms`.
fn validate(file: &File, release: KubeVersion) -> Errors {
    let mut errors = Errors::new(release);
    let root = FieldPath::of("resources");
    if file.resources.is_empty() {
        errors.required(&root, "at least one resources is required");
        return errors;
    }
    for (i, entry) in file.resources.iter().enumerate() {
        let r = root.index(i).child("resources");
        let p = root.index(i).child("providers");
        if entry.resources.is_empty() {
            errors.required(&r, &format!("at least one {} is required", r.as_str()));
        }
        check_overlap(&entry.resources, &r, &mut errors);
        check_names(&entry.resources, &r, &mut errors);
        if entry.providers.is_empty() {
            errors.required(&p, &format!("at least one {} is required", p.as_str()));
        }
        for (j, provider) in entry.providers.iter().enumerate() {
            let path = p.index(j);
            if !check_single(provider, &path, &mut errors) {
                continue;
            }
            if provider.kms.is_some() {
                errors.forbidden(
                    &path.child("kms"),
                    "kapi does not talk to KMS plugins; use aescbc, aesgcm or secretbox",
                );
            }
            let keyed = [
                ("aesgcm", &provider.aesgcm, &AES_KEY_SIZES[..]),
                ("aescbc", &provider.aescbc, &AES_KEY_SIZES[..]),
                ("secretbox", &provider.secretbox, &SECRETBOX_KEY_SIZES[..]),
            ];
            for (name, keys, sizes) in keyed {
                if let Some(keys) = keys {
                    check_keys(
                        &keys.keys,
                        &path.child(name).child("keys"),
                        sizes,
                        &mut errors,
                    );
                }
            }
        }
    }
    errors
}

fn string_list(items: &[String]) -> Value {
    Value::Array(items.iter().map(|s| Value::from(s.as_str())).collect())
}

/// `validateResourceOverlap`: a resource twice, or beside a wildcard covering it.
fn check_overlap(resources: &[String], path: &FieldPath, errors: &mut Errors) {
    if resources.len() < 2 {
        return;
    }
    let parsed: Vec<GroupResource> = resources.iter().map(|r| GroupResource::parse(r)).collect();
    let (mut duplicate, mut overlap) = (false, false);
    for (i, a) in parsed.iter().enumerate() {
        for (j, b) in parsed.iter().enumerate() {
            if i == j {
                continue;
            }
            if a == b && !duplicate {
                duplicate = true;
                continue;
            }
            if overlap {
                continue;
            }
            if *a == GroupResource::any() {
                overlap = true;
                continue;
            }
            if a.group == b.group && (a.resource == "*" || b.resource == "*") {
                overlap = true;
            }
        }
    }
    let list = string_list(resources);
    if duplicate {
        errors.invalid(path, Shown::StringList(&list), DUPLICATE);
    }
    if overlap {
        errors.invalid(path, Shown::StringList(&list), OVERLAP);
    }
}

/// `validateResourceNames`: one refusal per name, the first rule that applies.
fn check_names(resources: &[String], path: &FieldPath, errors: &mut Errors) {
    for (j, name) in resources.iter().enumerate() {
        let gr = GroupResource::parse(name);
        let detail = if name.to_lowercase() != *name {
            CAPITALS
        } else if name == "*" {
            STAR_RESOURCE
        } else if matches!(
            name.as_str(),
            "apiserveripinfo" | "serviceipallocations" | "servicenodeportallocations"
        ) {
            NON_REST
        } else if gr.group == "events.k8s.io" {
            EVENTS_GROUP
        } else if gr.group == "extensions" {
            EXTENSIONS_GROUP
        } else if gr.group == "*" && gr.resource != "*" {
            ACROSS_GROUPS
        } else {
            continue;
        };
        let value = Value::from(name.as_str());
        errors.invalid(&path.index(j), Shown::Plain(&value), detail);
    }
}

/// `validateSingleProvider`: exactly one provider per element; whether it holds.
fn check_single(provider: &ProviderConfiguration, path: &FieldPath, errors: &mut Errors) -> bool {
    let found = [
        provider.kms.is_some(),
        provider.aesgcm.is_some(),
        provider.aescbc.is_some(),
        provider.secretbox.is_some(),
        provider.identity.is_some(),
    ]
    .iter()
    .filter(|set| **set)
    .count();
    let detail = match found {
        1 => return true,
        0 => NO_PROVIDER,
        _ => MORE_THAN_ONE,
    };
    let (json, go) = provider_shown(provider);
    errors.invalid(path, Shown::Go(&go, &json), detail);
    false
}

/// A provider element as an error shows it, secrets left out: the JSON form (1.34 on) and an
/// approximation of Go's `%#v` of the internal struct (before).
fn provider_shown(provider: &ProviderConfiguration) -> (Value, String) {
    let keys = |keys: &Option<KeysConfiguration>| {
        keys.as_ref().map(|k| {
            let names: Vec<Value> = k
                .keys
                .iter()
                .map(|key| serde_json::json!({"name": key.name, "secret": "REDACTED"}))
                .collect();
            serde_json::json!({ "keys": names })
        })
    };
    let mut json = serde_json::Map::new();
    let mut go = Vec::new();
    for (name, go_name, value) in [
        ("aesgcm", "AESGCM", keys(&provider.aesgcm)),
        ("aescbc", "AESCBC", keys(&provider.aescbc)),
        ("secretbox", "Secretbox", keys(&provider.secretbox)),
        (
            "identity",
            "Identity",
            provider.identity.as_ref().map(|_| serde_json::json!({})),
        ),
        (
            "kms",
            "KMS",
            provider.kms.as_ref().map(|_| serde_json::json!({})),
        ),
    ] {
        let set = value.is_some();
        if let Some(value) = value {
            json.insert(name.into(), value);
        }
        go.push(format!("{go_name}:{}", if set { "(set)" } else { "nil" }));
    }
    (
        Value::Object(json),
        format!("apiserver.ProviderConfiguration{{{}}}", go.join(", ")),
    )
}

/// `validateKeys` and `validateKey`: at least one key, each named, with a base64 secret of an
/// accepted length.
fn check_keys(keys: &[Key], path: &FieldPath, sizes: &[usize], errors: &mut Errors) {
    if keys.is_empty() {
        errors.required(path, "at least one keys is required");
        return;
    }
    let redacted = Value::from("REDACTED");
    for (i, key) in keys.iter().enumerate() {
        let at = path.index(i);
        if key.name.is_empty() {
            errors.required(&at.child("name"), "name is a mandatory field for a key");
        }
        if key.secret.is_empty() {
            errors.required(&at.child("secret"), "secret is a mandatory field for a key");
            continue;
        }
        let Ok(secret) = base64::engine::general_purpose::STANDARD.decode(&key.secret) else {
            errors.invalid(&at.child("secret"), Shown::Plain(&redacted), BASE64);
            continue;
        };
        if !sizes.contains(&secret.len()) {
            let sizes: Vec<String> = sizes.iter().map(usize::to_string).collect();
            errors.invalid(
                &at.child("secret"),
                Shown::Plain(&redacted),
                &format!(
                    "secret is not of the expected length, got {}, expected one of [{}]",
                    secret.len(),
                    sizes.join(" ")
                ),
            );
        }
    }
}

/// How a provider makes a cipher of a decoded secret.
type MakeCipher = fn(&[u8]) -> Option<Cipher>;

/// One validated provider element as a transformer provider.
fn provider(config: &ProviderConfiguration) -> Result<Provider, String> {
    if config.identity.is_some() {
        return Ok(Provider::Identity);
    }
    let (prefix, keys, make, no_key): (_, _, MakeCipher, _) = if let Some(keys) = &config.aesgcm {
        (
            AESGCM_PREFIX,
            keys,
            Cipher::aes_gcm,
            "no matching key was found for the provided AES transformer",
        )
    } else if let Some(keys) = &config.aescbc {
        (
            AESCBC_PREFIX,
            keys,
            Cipher::aes_cbc,
            "no matching key was found for the provided AES transformer",
        )
    } else if let Some(keys) = &config.secretbox {
        (
            SECRETBOX_PREFIX,
            keys,
            Cipher::secretbox,
            "no matching key was found for the provided Secretbox transformer",
        )
    } else {
        return Err(NO_PROVIDER.to_owned());
    };
    let keys = keys
        .keys
        .iter()
        .map(|key| {
            let secret = base64::engine::general_purpose::STANDARD
                .decode(&key.secret)
                .map_err(|e| format!("could not obtain secret for named key {}: {e}", key.name))?;
            let cipher = make(&secret).ok_or_else(|| {
                format!(
                    "error while creating cipher for named key {}: invalid key size {}",
                    key.name,
                    secret.len()
                )
            })?;
            Ok(NamedKey {
                prefix: format!("{}:", key.name).into_bytes(),
                cipher,
            })
        })
        .collect::<Result<Vec<_>, String>>()?;
    Ok(Provider::Keyed {
        prefix,
        keys,
        no_key,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    const NEW: KubeVersion = KubeVersion::new(1, 36);
    const OLD: KubeVersion = KubeVersion::new(1, 28);
    /// 32 bytes, base64.
    const KEY32: &str = "c2VjcmV0IGlzIHNlY3VyZSwgSSB0aGluayBzbz8/Pz8=";
    /// 16 bytes, base64.
    const KEY16: &str = "MTIzNDU2Nzg5MDEyMzQ1Ng==";

    fn file(resources: &str, providers: &str) -> String {
        format!(
            "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: {resources}\n  providers: {providers}\n"
        )
    }

    fn refusal(text: &str) -> String {
        EncryptionConfig::parse(text, NEW).unwrap_err().to_string()
    }

    #[test]
    fn wildcards_pick_as_upstream() {
        // transformerFromOverrides: the resource, then `*.<group>`, then `*.*`.
        let text = format!(
            "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n\
             - resources: [secrets, widgets.example.com]\n  providers: [{{aescbc: {{keys: [{{name: a, secret: {KEY32}}}]}}}}]\n\
             - resources: ['*.apps', '*.']\n  providers: [{{secretbox: {{keys: [{{name: b, secret: {KEY32}}}]}}}}]\n\
             - resources: ['*.*']\n  providers: [{{identity: {{}}}}, {{aesgcm: {{keys: [{{name: c, secret: {KEY16}}}]}}}}]\n"
        );
        let config = EncryptionConfig::parse(&text, NEW).unwrap();
        let first = |g: &str, r: &str| match config.transformer(g, r).unwrap().providers.first() {
            Some(Provider::Keyed { prefix, .. }) => *prefix,
            Some(Provider::Identity) => "identity",
            None => "none",
        };
        assert_eq!(first("", "secrets"), AESCBC_PREFIX);
        assert_eq!(first("example.com", "widgets"), AESCBC_PREFIX);
        assert_eq!(first("apps", "deployments"), SECRETBOX_PREFIX);
        assert_eq!(first("", "configmaps"), SECRETBOX_PREFIX);
        assert_eq!(first("batch", "jobs"), "identity");
        assert_eq!(first("example.com", "gadgets"), "identity");
        // Nothing listed: no transformer.
        let only_secrets =
            EncryptionConfig::parse(&file("[secrets]", "[{identity: {}}]"), NEW).unwrap();
        assert!(only_secrets.transformer("", "configmaps").is_none());
    }

    #[test]
    fn validation_messages_are_upstreams() {
        // validation_encryption.go, one case per message.
        let aescbc =
            |secret: &str| format!("[{{aescbc: {{keys: [{{name: k, secret: '{secret}'}}]}}}}]");
        let cases = [
            (
                file("[secrets]", &aescbc("c2hvcnQ=")),
                "error while parsing file: resources[0].providers[0].aescbc.keys[0].secret: Invalid value: \"REDACTED\": secret is not of the expected length, got 5, expected one of [16 24 32]",
            ),
            (
                file("[secrets]", &aescbc("not base64!")),
                "error while parsing file: resources[0].providers[0].aescbc.keys[0].secret: Invalid value: \"REDACTED\": secrets must be base64 encoded",
            ),
            (
                file("[secrets]", &format!("[{{secretbox: {{keys: [{{name: k, secret: {KEY16}}}]}}}}]")),
                "error while parsing file: resources[0].providers[0].secretbox.keys[0].secret: Invalid value: \"REDACTED\": secret is not of the expected length, got 16, expected one of [32]",
            ),
            (
                file("[secrets]", "[{aesgcm: {keys: []}}]"),
                "error while parsing file: resources[0].providers[0].aesgcm.keys: Required value: at least one keys is required",
            ),
            (
                file("[secrets]", &format!("[{{aesgcm: {{keys: [{{secret: {KEY16}}}]}}}}]")),
                "error while parsing file: resources[0].providers[0].aesgcm.keys[0].name: Required value: name is a mandatory field for a key",
            ),
            (
                file("[secrets]", "[]"),
                "error while parsing file: resources[0].providers: Required value: at least one resources[0].providers is required",
            ),
            (
                file("[]", "[{identity: {}}]"),
                "error while parsing file: resources[0].resources: Required value: at least one resources[0].resources is required",
            ),
            (
                file("['*']", "[{identity: {}}]"),
                "error while parsing file: resources[0].resources[0]: Invalid value: \"*\": use '*.' to encrypt all the resources from core API group or *.* to encrypt all resources",
            ),
            (
                file("[Secrets]", "[{identity: {}}]"),
                "error while parsing file: resources[0].resources[0]: Invalid value: \"Secrets\": resource name should not contain capital letters",
            ),
            (
                file("[events.events.k8s.io]", "[{identity: {}}]"),
                "error while parsing file: resources[0].resources[0]: Invalid value: \"events.events.k8s.io\": '*.events.k8s.io' objects are stored using the 'events' API group in etcd. Use 'events' instead in the config file",
            ),
            (
                file("[ingresses.extensions]", "[{identity: {}}]"),
                "error while parsing file: resources[0].resources[0]: Invalid value: \"ingresses.extensions\": 'extensions' group has been removed and cannot be used for encryption",
            ),
            (
                file("['secrets.*']", "[{identity: {}}]"),
                "error while parsing file: resources[0].resources[0]: Invalid value: \"secrets.*\": encrypting the same resource across groups is not supported",
            ),
            (
                file("[serviceipallocations]", "[{identity: {}}]"),
                "error while parsing file: resources[0].resources[0]: Invalid value: \"serviceipallocations\": resources which do not have REST API/s cannot be encrypted",
            ),
            (
                file("[secrets, '*.']", "[{identity: {}}]"),
                "error while parsing file: resources[0].resources: Invalid value: [\"secrets\",\"*.\"]: using overlapping resources such as 'secrets' and '*.' in the same resource list is not allowed as they will be masked",
            ),
            (
                file("[secrets, secrets]", "[{identity: {}}]"),
                "error while parsing file: resources[0].resources: Invalid value: [\"secrets\",\"secrets\"]: the same resource cannot be specified multiple times",
            ),
            (
                file("[secrets]", "[{}]"),
                "error while parsing file: resources[0].providers[0]: Invalid value: {}: provider does not contain any of the expected providers: KMS, AESGCM, AESCBC, Secretbox, Identity",
            ),
            (
                "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources: []\n".to_owned(),
                "error while parsing file: resources: Required value: at least one resources is required",
            ),
        ];
        for (text, expected) in cases {
            assert_eq!(refusal(&text), expected, "{text}");
        }
    }

    #[test]
    fn several_errors_are_aggregated_and_values_follow_the_release() {
        let text = file("[secrets, secrets]", "[{identity: {}, aescbc: {keys: []}}]");
        assert_eq!(
            EncryptionConfig::parse(&text, OLD).unwrap_err().to_string(),
            "error while parsing file: [resources[0].resources: Invalid value: []string{\"secrets\", \"secrets\"}: the same resource cannot be specified multiple times, resources[0].providers[0]: Invalid value: apiserver.ProviderConfiguration{AESGCM:nil, AESCBC:(set), Secretbox:nil, Identity:(set), KMS:nil}: more than one provider specified in a single element, should split into different list elements]"
        );
    }

    #[test]
    fn masking_across_rules_is_refused() {
        // getTransformerOverridesAndKMSPluginProbes: an earlier `*.group` or `*.*` masks.
        let text = "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n\
             - resources: ['*.apps']\n  providers: [{identity: {}}]\n\
             - resources: [deployments.apps]\n  providers: [{identity: {}}]\n";
        assert_eq!(
            refusal(text),
            "error while building transformers: resource \"deployments.apps\" is masked by earlier rule \"*.apps\""
        );
        let text = "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n\
             - resources: ['*.*']\n  providers: [{identity: {}}]\n\
             - resources: [secrets]\n  providers: [{identity: {}}]\n";
        assert_eq!(
            refusal(text),
            "error while building transformers: resource \"secrets\" is masked by earlier rule \"*.*\""
        );
    }

    #[test]
    fn kms_wrong_kinds_and_unknown_fields_are_refused() {
        let kms = file(
            "[secrets]",
            "[{kms: {apiVersion: v2, name: k, endpoint: 'unix:///kms.sock'}}]",
        );
        assert_eq!(
            refusal(&kms),
            "error while parsing file: resources[0].providers[0].kms: Forbidden: kapi does not talk to KMS plugins; use aescbc, aesgcm or secretbox"
        );
        let old = "apiVersion: v1\nkind: EncryptionConfig\nresources: []\n";
        assert_eq!(
            refusal(old),
            "error while parsing file: error decoding encryption provider configuration: no kind \"EncryptionConfig\" is registered for version \"v1\""
        );
        assert!(
            refusal("resources: []\n").ends_with("Object 'Kind' is missing"),
            "{}",
            refusal("resources: []\n")
        );
        let unknown = file(
            "[secrets]",
            "[{identity: {}, aescbc: {keys: [], extra: 1}}]",
        );
        let error = refusal(&unknown);
        assert!(
            error.contains("strict decoding error") && error.contains("extra"),
            "{error}"
        );
    }

    #[test]
    fn files_are_read_with_upstreams_messages() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("missing.yaml");
        let error = EncryptionConfig::from_file(&missing, NEW)
            .unwrap_err()
            .to_string();
        assert!(
            error.starts_with(&format!(
                "error while parsing file: error while loading file: error reading encryption provider configuration file \"{}\"",
                missing.display()
            )),
            "{error}"
        );
        let empty = dir.path().join("empty.yaml");
        std::fs::write(&empty, "").unwrap();
        assert_eq!(
            EncryptionConfig::from_file(&empty, NEW)
                .unwrap_err()
                .to_string(),
            format!(
                "error while parsing file: error while loading file: encryption provider configuration file \"{}\" is empty",
                empty.display()
            )
        );
        let good = dir.path().join("good.json");
        std::fs::write(
            &good,
            format!(
                r#"{{"apiVersion":"apiserver.config.k8s.io/v1","kind":"EncryptionConfiguration","resources":[{{"resources":["secrets"],"providers":[{{"aesgcm":{{"keys":[{{"name":"k","secret":"{KEY32}"}}]}}}}]}}]}}"#
            ),
        )
        .unwrap();
        let config = EncryptionConfig::from_file(&good, NEW).unwrap();
        assert!(config.transformer("", "secrets").is_some());
        // Keys never show in the config's Debug.
        assert!(!format!("{config:?}").contains(KEY32));
    }
}
