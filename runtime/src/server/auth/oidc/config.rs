//! The `AuthenticationConfiguration` file of `--authentication-config`
//! (`apiserver.config.k8s.io` `v1alpha1`, `v1beta1`, `v1`): its JWT authenticators, read
//! strictly (an unknown field is an error, as upstream's strict decoder makes it) and checked
//! as upstream's `ValidateAuthenticationConfiguration` checks them
//! (`staging/src/k8s.io/apiserver/pkg/apis/apiserver/validation/validation.go`), with its field
//! paths and messages; CEL expressions are compiled here, so a configuration that loads is one
//! whose expressions all compile.

use std::collections::BTreeSet;

use serde::Deserialize;

use crate::cel::{self, Program};
use crate::server::http::client;

/// The configuration's group.
const GROUP: &str = "apiserver.config.k8s.io";
/// The versions of it upstream reads.
const VERSIONS: &[&str] = &["v1alpha1", "v1beta1", "v1"];
/// The most JWT authenticators one configuration may hold.
const MOST_AUTHENTICATORS: usize = 64;
/// The variable claim expressions read the token's claims from.
pub(super) const CLAIMS: &str = "claims";
/// The variable user validation rules read the mapped user from.
pub(super) const USER: &str = "user";

/// The file as written.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct File {
    api_version: String,
    kind: String,
    #[serde(default)]
    jwt: Vec<JwtAuthenticator>,
    /// Anonymous authentication, in place of `--anonymous-auth` (upstream's
    /// `AnonymousAuthConfigurableEndpoints`, 1.32 on).
    #[serde(default)]
    anonymous: Option<AnonymousConfig>,
}

/// The `anonymous` section: upstream's `AnonymousAuthConfig`. Requests without credentials
/// are `system:anonymous` when `enabled`, and then, with `conditions`, only on those paths.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct AnonymousConfig {
    #[serde(default)]
    pub(crate) enabled: bool,
    #[serde(default)]
    pub(crate) conditions: Vec<AnonymousCondition>,
}

/// A path anonymous requests may reach (matched exactly, as upstream's set of paths is).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct AnonymousCondition {
    pub(crate) path: String,
}

/// A configuration file, loaded and checked.
#[derive(Debug)]
pub(crate) struct Loaded {
    /// The JWT authenticators, each with its expressions compiled.
    pub(crate) jwt: Vec<(JwtAuthenticator, Compiled)>,
    /// The `anonymous` section, when the file has one.
    pub(crate) anonymous: Option<AnonymousConfig>,
}

/// One issuer's tokens: upstream's `JWTAuthenticator`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct JwtAuthenticator {
    pub(crate) issuer: Issuer,
    #[serde(default)]
    pub(crate) claim_validation_rules: Vec<ClaimValidationRule>,
    pub(crate) claim_mappings: ClaimMappings,
    #[serde(default)]
    pub(crate) user_validation_rules: Vec<UserValidationRule>,
}

/// Who issues the tokens and for whom.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct Issuer {
    pub(crate) url: String,
    #[serde(default, rename = "discoveryURL")]
    pub(crate) discovery_url: String,
    #[serde(default)]
    pub(crate) certificate_authority: String,
    #[serde(default)]
    pub(crate) audiences: Vec<String>,
    #[serde(default)]
    pub(crate) audience_match_policy: String,
    /// Which egress a fetch of the keys takes (1.34+): read so that files naming it load, and
    /// otherwise unused, since kapi's fetches all take the one network it has.
    #[serde(default)]
    #[expect(
        dead_code,
        reason = "kapi has no egress selector: every egress is the same"
    )]
    egress_selector_type: String,
}

/// A condition on the token's claims: a claim's required value, or a CEL expression.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct ClaimValidationRule {
    #[serde(default)]
    pub(crate) claim: String,
    #[serde(default)]
    pub(crate) required_value: String,
    #[serde(default)]
    pub(crate) expression: String,
    #[serde(default)]
    pub(crate) message: String,
}

/// How the user's fields come from the claims.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct ClaimMappings {
    pub(crate) username: PrefixedClaimOrExpression,
    #[serde(default)]
    pub(crate) groups: PrefixedClaimOrExpression,
    #[serde(default)]
    pub(crate) uid: ClaimOrExpression,
    #[serde(default)]
    pub(crate) extra: Vec<ExtraMapping>,
}

/// A claim with a prefix, or an expression.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct PrefixedClaimOrExpression {
    #[serde(default)]
    pub(crate) claim: String,
    #[serde(default)]
    pub(crate) prefix: Option<String>,
    #[serde(default)]
    pub(crate) expression: String,
}

/// A claim, or an expression.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct ClaimOrExpression {
    #[serde(default)]
    pub(crate) claim: String,
    #[serde(default)]
    pub(crate) expression: String,
}

/// One key of the user's `extra`, from an expression.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct ExtraMapping {
    #[serde(default)]
    pub(crate) key: String,
    #[serde(default)]
    pub(crate) value_expression: String,
}

/// A condition on the mapped user.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct UserValidationRule {
    #[serde(default)]
    pub(crate) expression: String,
    #[serde(default)]
    pub(crate) message: String,
}

/// An authenticator's CEL expressions, compiled.
#[derive(Debug, Default)]
pub(crate) struct Compiled {
    pub(crate) username: Option<Program>,
    pub(crate) groups: Option<Program>,
    pub(crate) uid: Option<Program>,
    /// Each `extra` key's expression.
    pub(crate) extra: Vec<(String, Program)>,
    /// The claim validation rules that are expressions, with their messages.
    pub(crate) claim_rules: Vec<(Program, String)>,
    pub(crate) user_rules: Vec<(Program, String)>,
}

/// Why a configuration file could not be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AuthenticationConfigError {
    /// The file could not be read.
    #[error("failed to read authentication config file {path:?}: {source}")]
    Io {
        /// The file.
        path: String,
        /// What went wrong.
        #[source]
        source: std::io::Error,
    },
    /// The file does not decode as a configuration.
    #[error("failed to load authentication config file {path:?}: {reason}")]
    Decode {
        /// The file.
        path: String,
        /// Why.
        reason: String,
    },
    /// The configuration decodes but upstream's validation refuses it: its field errors.
    #[error("invalid authentication config: {0}")]
    Invalid(String),
}

/// The configuration text `text` (YAML or JSON) read from `path`: its JWT authenticators,
/// each with its expressions compiled, and its `anonymous` section. `disallowed` are issuers
/// no authenticator may claim (the server's own service-account issuers).
pub(crate) fn load(
    text: &[u8],
    path: &str,
    disallowed: &[String],
) -> Result<Loaded, AuthenticationConfigError> {
    let decode = |reason: String| AuthenticationConfigError::Decode {
        path: path.to_owned(),
        reason,
    };
    let file: File = serde_yaml_ng::from_slice(text).map_err(|e| decode(e.to_string()))?;
    let (group, version) = file.api_version.split_once('/').unwrap_or(("", ""));
    if group != GROUP || !VERSIONS.contains(&version) || file.kind != "AuthenticationConfiguration"
    {
        return Err(decode(format!(
            "no kind {:?} is registered for version {:?}",
            file.kind, file.api_version
        )));
    }
    let mut errors = Vec::new();
    let jwt = validate(file.jwt, disallowed, &mut errors);
    if let Some(anonymous) = &file.anonymous {
        validate_anonymous(anonymous, &mut errors);
    }
    match errors.as_slice() {
        [] => Ok(Loaded {
            jwt,
            anonymous: file.anonymous,
        }),
        [one] => Err(AuthenticationConfigError::Invalid(one.clone())),
        many => Err(AuthenticationConfigError::Invalid(format!(
            "[{}]",
            many.join(", ")
        ))),
    }
}

/// Upstream's check of the `anonymous` section: conditions only when enabled. The value is
/// printed as Go's `%#v` prints the internal type, as upstream's field error does.
fn validate_anonymous(anonymous: &AnonymousConfig, errors: &mut Vec<String>) {
    if anonymous.enabled || anonymous.conditions.is_empty() {
        return;
    }
    let conditions: Vec<String> = anonymous
        .conditions
        .iter()
        .map(|c| {
            format!(
                "apiserver.AnonymousAuthCondition{{Path:{}}}",
                crate::field_labels::go_quote(&c.path)
            )
        })
        .collect();
    errors.push(format!(
        "anonymous.conditions: Invalid value: []apiserver.AnonymousAuthCondition{{{}}}: enabled should be set to true when conditions are defined",
        conditions.join(", ")
    ));
}

/// Upstream's checks of every authenticator, their expressions compiled on the way.
fn validate(
    jwt: Vec<JwtAuthenticator>,
    disallowed: &[String],
    errors: &mut Vec<String>,
) -> Vec<(JwtAuthenticator, Compiled)> {
    if jwt.len() > MOST_AUTHENTICATORS {
        errors.push(format!(
            "jwt: Too many: {}: must have at most {MOST_AUTHENTICATORS} items",
            jwt.len()
        ));
    }
    let mut issuers = BTreeSet::new();
    let mut discovery_urls = BTreeSet::new();
    let mut out = Vec::new();
    for (i, authenticator) in jwt.into_iter().enumerate() {
        let at = format!("jwt[{i}]");
        let mut checks = Checks { errors };
        checks.issuer(&authenticator.issuer, &format!("{at}.issuer"), disallowed);
        let mut compiled = Compiled::default();
        checks.claim_rules(
            &authenticator.claim_validation_rules,
            &format!("{at}.claimValidationRules"),
            &mut compiled,
        );
        checks.claim_mappings(
            &authenticator.claim_mappings,
            &format!("{at}.claimMappings"),
            &mut compiled,
        );
        checks.email_verified(
            &compiled,
            &format!("{at}.claimMappings.username.expression"),
            &authenticator.claim_mappings.username.expression,
        );
        checks.user_rules(
            &authenticator.user_validation_rules,
            &format!("{at}.userValidationRules"),
            &mut compiled,
        );
        let url = &authenticator.issuer.url;
        if !issuers.insert(url.clone()) {
            errors.push(format!("{at}.issuer.url: Duplicate value: {url:?}"));
        }
        let discovery = &authenticator.issuer.discovery_url;
        if !discovery.is_empty() && !discovery_urls.insert(discovery.clone()) {
            errors.push(format!(
                "{at}.issuer.discoveryURL: Duplicate value: {discovery:?}"
            ));
        }
        out.push((authenticator, compiled));
    }
    out
}

/// Collects field errors in upstream's `<path>: <reason>: <detail>` text.
struct Checks<'a> {
    errors: &'a mut Vec<String>,
}

impl Checks<'_> {
    fn required(&mut self, path: &str, detail: &str) {
        self.errors
            .push(format!("{path}: Required value: {detail}"));
    }

    fn invalid(&mut self, path: &str, value: &str, detail: &str) {
        self.errors
            .push(format!("{path}: Invalid value: {value:?}: {detail}"));
    }

    fn duplicate(&mut self, path: &str, value: &str) {
        self.errors
            .push(format!("{path}: Duplicate value: {value:?}"));
    }

    /// `expression` compiled with `variable` declared; a failure is upstream's
    /// `compilation failed: <cel-go's errors>`.
    fn compile(&mut self, expression: &str, variable: &str, path: &str) -> Option<Program> {
        match cel::compile(expression, &[variable]) {
            Ok(program) => Some(program),
            Err(error) => {
                self.invalid(path, expression, &format!("compilation failed: {error}"));
                None
            }
        }
    }

    /// `validateIssuer`: the URL, the discovery URL, the audiences and the CA.
    fn issuer(&mut self, issuer: &Issuer, at: &str, disallowed: &[String]) {
        let url_path = format!("{at}.url");
        if issuer.url.is_empty() {
            self.required(&url_path, "reference URL is required");
        } else {
            self.url(&issuer.url, &url_path, disallowed);
        }
        if !issuer.discovery_url.is_empty() {
            let path = format!("{at}.discoveryURL");
            if issuer.discovery_url.trim_end_matches('/') == issuer.url.trim_end_matches('/') {
                self.invalid(
                    &path,
                    &issuer.discovery_url,
                    "discoveryURL must be different from URL",
                );
            }
            self.url(&issuer.discovery_url, &path, &[]);
        }
        self.audiences(issuer, at);
        if !issuer.certificate_authority.is_empty()
            && client::roots_of_pem(issuer.certificate_authority.as_bytes()).is_none()
        {
            self.errors.push(format!(
                "{at}.certificateAuthority: Invalid value: \"<omitted>\": data does not contain any valid RSA or ECDSA certificates"
            ));
        }
    }

    /// `validateURL`: https, without credentials, query or fragment, not a disallowed issuer.
    fn url(&mut self, url: &str, path: &str, disallowed: &[String]) {
        let Some(rest) = url.strip_prefix("https://") else {
            self.invalid(path, url, "URL scheme must be https");
            return;
        };
        let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
        if authority.contains('@') {
            self.invalid(path, url, "URL must not contain a username or password");
        }
        if rest.contains('?') {
            self.invalid(path, url, "URL must not contain a query");
        }
        if rest.contains('#') {
            self.invalid(path, url, "URL must not contain a fragment");
        }
        if disallowed.iter().any(|d| d == url) {
            let mut sorted = disallowed.to_vec();
            sorted.sort();
            self.invalid(
                path,
                url,
                &format!(
                    "URL must not overlap with disallowed issuers: [{}]",
                    sorted.join(" ")
                ),
            );
        }
    }

    /// `validateAudiences`.
    fn audiences(&mut self, issuer: &Issuer, at: &str) {
        let path = format!("{at}.audiences");
        if issuer.audiences.is_empty() {
            self.required(&path, "at least one issuer.audiences is required");
            return;
        }
        let mut seen = BTreeSet::new();
        for (i, audience) in issuer.audiences.iter().enumerate() {
            let item = format!("{path}[{i}]");
            if audience.is_empty() {
                self.required(&item, "audience can't be empty");
            }
            if !seen.insert(audience) {
                self.duplicate(&item, audience);
            }
        }
        let policy = issuer.audience_match_policy.as_str();
        let policy_path = format!("{at}.audienceMatchPolicy");
        if issuer.audiences.len() > 1 && policy != "MatchAny" {
            self.invalid(
                &policy_path,
                policy,
                "audienceMatchPolicy must be MatchAny for multiple audiences",
            );
        }
        if issuer.audiences.len() == 1 && !policy.is_empty() && policy != "MatchAny" {
            self.invalid(
                &policy_path,
                policy,
                "audienceMatchPolicy must be empty or MatchAny for single audience",
            );
        }
    }

    /// `validateClaimValidationRules`.
    fn claim_rules(&mut self, rules: &[ClaimValidationRule], at: &str, out: &mut Compiled) {
        let (mut claims, mut expressions) = (BTreeSet::new(), BTreeSet::new());
        for (i, rule) in rules.iter().enumerate() {
            let path = format!("{at}[{i}]");
            match (rule.claim.is_empty(), rule.expression.is_empty()) {
                (false, false) => {
                    self.invalid(&path, &rule.claim, "claim and expression can't both be set");
                }
                (true, true) => self.required(&path, "claim or expression is required"),
                (false, true) => {
                    if !rule.message.is_empty() {
                        self.invalid(
                            &format!("{path}.message"),
                            &rule.message,
                            "message can't be set when claim is set",
                        );
                    }
                    if !claims.insert(&rule.claim) {
                        self.duplicate(&format!("{path}.claim"), &rule.claim);
                    }
                }
                (true, false) => {
                    if !rule.required_value.is_empty() {
                        self.invalid(
                            &format!("{path}.requiredValue"),
                            &rule.required_value,
                            "requiredValue can't be set when expression is set",
                        );
                    }
                    let expression_path = format!("{path}.expression");
                    if !expressions.insert(&rule.expression) {
                        self.duplicate(&expression_path, &rule.expression);
                    }
                    if let Some(program) = self.compile(&rule.expression, CLAIMS, &expression_path)
                    {
                        out.claim_rules.push((program, rule.message.clone()));
                    }
                }
            }
        }
    }

    /// `validateClaimMappings`.
    fn claim_mappings(&mut self, mappings: &ClaimMappings, at: &str, out: &mut Compiled) {
        out.username = self.prefixed(&mappings.username, &format!("{at}.username"), true);
        out.groups = self.prefixed(&mappings.groups, &format!("{at}.groups"), false);
        let uid = &mappings.uid;
        let uid_path = format!("{at}.uid");
        if !uid.claim.is_empty() && !uid.expression.is_empty() {
            self.invalid(&uid_path, "", "claim and expression can't both be set");
        } else if !uid.expression.is_empty() {
            out.uid = self.compile(&uid.expression, CLAIMS, &format!("{uid_path}.expression"));
        }
        let mut keys = BTreeSet::new();
        for (i, extra) in mappings.extra.iter().enumerate() {
            let path = format!("{at}.extra[{i}]");
            let key_path = format!("{path}.key");
            if extra.key.is_empty() {
                self.required(&key_path, "key is required");
                continue;
            }
            if !keys.insert(&extra.key) {
                self.duplicate(&key_path, &extra.key);
                continue;
            }
            if extra.key != extra.key.to_lowercase() {
                self.invalid(&key_path, &extra.key, "key must be lowercase");
            }
            if extra
                .key
                .split_once('/')
                .is_none_or(|(domain, _)| !domain.contains('.'))
            {
                self.invalid(
                    &key_path,
                    &extra.key,
                    "must be a domain-prefixed path (such as \"acme.io/foo\")",
                );
            }
            let value_path = format!("{path}.valueExpression");
            if extra.value_expression.is_empty() {
                self.required(&value_path, "valueExpression is required");
                continue;
            }
            if let Some(program) = self.compile(&extra.value_expression, CLAIMS, &value_path) {
                out.extra.push((extra.key.clone(), program));
            }
        }
    }

    /// The username or groups mapping: a claim (with a prefix, required for the username's)
    /// or an expression (without one); returns the expression compiled.
    fn prefixed(
        &mut self,
        mapping: &PrefixedClaimOrExpression,
        at: &str,
        required: bool,
    ) -> Option<Program> {
        let prefix_path = format!("{at}.prefix");
        match (mapping.claim.is_empty(), mapping.expression.is_empty()) {
            (false, false) => {
                self.invalid(at, "", "claim and expression can't both be set");
                None
            }
            (true, true) => {
                if required {
                    self.required(at, "claim or expression is required");
                }
                None
            }
            (true, false) => {
                if let Some(prefix) = &mapping.prefix {
                    self.invalid(
                        &prefix_path,
                        prefix,
                        "prefix can't be set when expression is set",
                    );
                }
                self.compile(&mapping.expression, CLAIMS, &format!("{at}.expression"))
            }
            (false, true) => {
                if mapping.prefix.is_none() {
                    self.required(
                        &prefix_path,
                        "prefix is required when claim is set. It can be set to an empty string to disable prefixing",
                    );
                }
                None
            }
        }
    }

    /// A username expression that reads `claims.email` must be accompanied by a check of
    /// `claims.email_verified` somewhere (the username or an extra expression, or a claim
    /// validation rule), or unverified addresses would name users (`validateClaimMappings`).
    fn email_verified(&mut self, compiled: &Compiled, path: &str, expression: &str) {
        let uses_email = compiled
            .username
            .as_ref()
            .is_some_and(|p| p.selects(CLAIMS, "email"));
        let verified = compiled
            .username
            .iter()
            .chain(compiled.extra.iter().map(|(_, p)| p))
            .chain(compiled.claim_rules.iter().map(|(p, _)| p))
            .any(|p| p.selects(CLAIMS, "email_verified"));
        if uses_email && !verified {
            self.invalid(
                path,
                expression,
                "claims.email_verified must be used in claimMappings.username.expression or claimMappings.extra[*].valueExpression or claimValidationRules[*].expression when claims.email is used in claimMappings.username.expression",
            );
        }
    }

    /// `validateUserValidationRules`.
    fn user_rules(&mut self, rules: &[UserValidationRule], at: &str, out: &mut Compiled) {
        let mut seen = BTreeSet::new();
        for (i, rule) in rules.iter().enumerate() {
            let path = format!("{at}[{i}].expression");
            if rule.expression.is_empty() {
                self.required(&path, "expression is required");
                continue;
            }
            if !seen.insert(&rule.expression) {
                self.duplicate(&path, &rule.expression);
                continue;
            }
            if let Some(program) = self.compile(&rule.expression, USER, &path) {
                out.user_rules.push((program, rule.message.clone()));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn errors_of(text: &str) -> String {
        match load(
            text.as_bytes(),
            "auth.yaml",
            &["https://kubernetes.default.svc".into()],
        ) {
            Ok(_) => String::new(),
            Err(error) => error.to_string(),
        }
    }

    /// `anonymous.conditions` only with `enabled` (ValidateAuthenticationConfiguration), the
    /// conditions printed as Go's `%#v` prints them.
    #[test]
    fn anonymous_conditions_need_anonymous_enabled() {
        let text = "apiVersion: apiserver.config.k8s.io/v1\nkind: AuthenticationConfiguration\n\
                    anonymous:\n  conditions:\n  - path: /livez\n";
        assert_eq!(
            errors_of(text),
            r#"invalid authentication config: anonymous.conditions: Invalid value: []apiserver.AnonymousAuthCondition{apiserver.AnonymousAuthCondition{Path:"/livez"}}: enabled should be set to true when conditions are defined"#
        );
        let enabled = text.replace("anonymous:\n", "anonymous:\n  enabled: true\n");
        let loaded = load(enabled.as_bytes(), "auth.yaml", &[]).unwrap();
        assert_eq!(
            loaded.anonymous,
            Some(AnonymousConfig {
                enabled: true,
                conditions: vec![AnonymousCondition {
                    path: "/livez".to_owned()
                }],
            })
        );
        let unknown = text.replace("- path:", "- verb: get\n    path:");
        assert!(
            errors_of(&unknown).contains("unknown field `verb`"),
            "{}",
            errors_of(&unknown)
        );
    }

    #[test]
    fn configurations_are_checked_as_upstream_checks_them() {
        // ValidateAuthenticationConfiguration, validateIssuerURL, validateAudiences,
        // validateClaimMappings (staging/src/k8s.io/apiserver/pkg/apis/apiserver/validation).
        let text = r#"
apiVersion: apiserver.config.k8s.io/v1beta1
kind: AuthenticationConfiguration
jwt:
- issuer: {url: "http://issuer.example", audiences: []}
  claimMappings:
    username: {claim: sub}
- issuer: {url: "https://kubernetes.default.svc", audiences: [a, b]}
  claimMappings:
    username: {claim: sub, prefix: "", expression: "claims.sub"}
"#;
        assert_eq!(
            errors_of(text),
            "invalid authentication config: [\
jwt[0].issuer.url: Invalid value: \"http://issuer.example\": URL scheme must be https, \
jwt[0].issuer.audiences: Required value: at least one issuer.audiences is required, \
jwt[0].claimMappings.username.prefix: Required value: prefix is required when claim is set. It can be set to an empty string to disable prefixing, \
jwt[1].issuer.url: Invalid value: \"https://kubernetes.default.svc\": URL must not overlap with disallowed issuers: [https://kubernetes.default.svc], \
jwt[1].issuer.audienceMatchPolicy: Invalid value: \"\": audienceMatchPolicy must be MatchAny for multiple audiences, \
jwt[1].claimMappings.username: Invalid value: \"\": claim and expression can't both be set]"
        );
    }

    #[test]
    fn expressions_compile_or_the_configuration_is_refused() {
        let text = r#"
apiVersion: apiserver.config.k8s.io/v1
kind: AuthenticationConfiguration
jwt:
- issuer: {url: "https://issuer.example", audiences: [kapi]}
  claimValidationRules:
  - {expression: "claims.hd ==", message: "wrong domain"}
  claimMappings:
    username: {expression: "claims.sub + ':x'"}
    groups: {expression: "nope.groups"}
"#;
        let error = errors_of(text);
        assert!(
            error.starts_with("invalid authentication config: [jwt[0].claimValidationRules[0].expression: Invalid value: \"claims.hd ==\": compilation failed: ERROR: <input>:1:"),
            "{error}"
        );
        assert!(
            error.contains("jwt[0].claimMappings.groups.expression: Invalid value: \"nope.groups\": compilation failed: ERROR: <input>:1:1: undeclared reference to 'nope'"),
            "{error}"
        );
        let good = text
            .replace("claims.hd ==", "claims.hd == 'x'")
            .replace("nope.groups", "claims.groups");
        let loaded = load(good.as_bytes(), "auth.yaml", &[]).unwrap();
        let compiled = &loaded.jwt[0].1;
        assert!(compiled.username.is_some() && compiled.groups.is_some());
        assert_eq!(compiled.claim_rules.len(), 1);
    }

    #[test]
    fn an_email_username_needs_its_verification_checked() {
        // validateClaimMappings' usesEmailClaim / usesEmailVerifiedClaim.
        let config = |rules: &str| {
            format!(
                "apiVersion: apiserver.config.k8s.io/v1\nkind: AuthenticationConfiguration\njwt:\n- issuer: {{url: \"https://issuer.example\", audiences: [kapi]}}\n  claimMappings:\n    username: {{expression: \"claims.email\"}}\n{rules}"
            )
        };
        assert_eq!(
            errors_of(&config("")),
            "invalid authentication config: jwt[0].claimMappings.username.expression: Invalid value: \"claims.email\": claims.email_verified must be used in claimMappings.username.expression or claimMappings.extra[*].valueExpression or claimValidationRules[*].expression when claims.email is used in claimMappings.username.expression"
        );
        let checked = config(
            "  claimValidationRules:\n  - {expression: \"claims.email_verified == true\"}\n",
        );
        assert_eq!(errors_of(&checked), "");
    }

    #[test]
    fn unknown_fields_versions_and_kinds_are_refused() {
        let unknown =
            "apiVersion: apiserver.config.k8s.io/v1\nkind: AuthenticationConfiguration\njwts: []\n";
        assert!(
            errors_of(unknown).contains("unknown field `jwts`"),
            "{}",
            errors_of(unknown)
        );
        let version = "apiVersion: apiserver.config.k8s.io/v2\nkind: AuthenticationConfiguration\n";
        assert_eq!(
            errors_of(version),
            "failed to load authentication config file \"auth.yaml\": no kind \"AuthenticationConfiguration\" is registered for version \"apiserver.config.k8s.io/v2\""
        );
        let empty =
            "apiVersion: apiserver.config.k8s.io/v1beta1\nkind: AuthenticationConfiguration\n";
        assert_eq!(errors_of(empty), "");
    }
}
