//! Serving certificates chosen by the name a client asks for (SNI): kube-apiserver's
//! `--tls-sni-cert-key` (k8s.io/apiserver `pkg/server/dynamiccertificates`,
//! `named_certificates.go`, and Go's `tls.Config.getCertificate`).
//!
//! Each pair serves the names given with it or, without any, the names its certificate holds
//! (the common name when it is a DNS name or `*`, not an IP, and the DNS subject alternative
//! names; SNI never carries an IP). An explicitly given name beats an extracted one, an
//! earlier pair beats a later one. A client's name matches exactly (case-insensitively), else
//! with its first label replaced by `*`; a client that names nothing or no served name gets
//! the default serving certificate.

use std::collections::HashMap;
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;

use super::TlsError;

/// One `--tls-sni-cert-key`: `cert,key` or `cert,key:name,name`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SniFiles {
    /// The certificate file (the chain, leaf first).
    pub cert_file: String,
    /// The private key file.
    pub key_file: String,
    /// The names to serve it for; empty: the names in the certificate.
    pub names: Vec<String>,
}

impl std::str::FromStr for SniFiles {
    type Err = String;

    /// Parses the flag's value as upstream's `NamedCertKey.Set`, with its messages.
    fn from_str(value: &str) -> Result<Self, String> {
        let (pair, names) = match value.split_once(':') {
            Some((pair, names)) => {
                let names = names.trim();
                if names.is_empty() {
                    return Err("empty names list is not allowed".to_owned());
                }
                (
                    pair,
                    names.split(',').map(|n| n.trim().to_owned()).collect(),
                )
            }
            None => (value, Vec::new()),
        };
        let parts: Vec<&str> = pair.trim().split(',').collect();
        let [cert_file, key_file] = parts[..] else {
            return Err("expected comma separated certificate and key file paths".to_owned());
        };
        Ok(Self {
            cert_file: cert_file.trim().to_owned(),
            key_file: key_file.trim().to_owned(),
            names,
        })
    }
}

/// The PEM contents of one SNI pair, as read from its files, and the names it was given.
#[derive(Debug, Clone)]
pub struct SniPem {
    /// The pair's name in messages (upstream's `sni-serving-cert::<cert>::<key>`).
    pub name: String,
    /// The certificate chain, leaf first.
    pub chain: Vec<u8>,
    /// The private key.
    pub key: Vec<u8>,
    /// The names given with the pair; empty: the certificate's.
    pub names: Vec<String>,
}

/// Picks a connection's certificate by the name its client asks for.
#[derive(Debug)]
pub(super) struct ByName {
    default: Arc<CertifiedKey>,
    names: HashMap<String, Arc<CertifiedKey>>,
}

impl ByName {
    /// The certificates of `sni` by name, over the `default` serving certificate.
    pub(super) fn new(default: Arc<CertifiedKey>, sni: &[SniPem]) -> Result<Self, TlsError> {
        let mut extracted = HashMap::new();
        let mut explicit = HashMap::new();
        // Backwards, so that an earlier pair's names win, as upstream's BuildNamedCertificates.
        for (i, pair) in sni.iter().enumerate().rev() {
            let invalid = |error: String| {
                TlsError::Config(format!(
                    "invalid SNI cert keypair [{i}/{:?}]: {error}",
                    pair.name
                ))
            };
            let key = certified_key(&pair.chain, &pair.key).map_err(invalid)?;
            if pair.names.is_empty() {
                for name in certificate_names(&key.cert[0]) {
                    extracted.insert(name.to_ascii_lowercase(), key.clone());
                }
            } else {
                for name in &pair.names {
                    explicit.insert(name.to_ascii_lowercase(), key.clone());
                }
            }
        }
        extracted.extend(explicit);
        Ok(Self {
            default,
            names: extracted,
        })
    }

    /// The certificate for a client asking for `name`, as Go's `getCertificate` picks it.
    fn pick(&self, name: Option<&str>) -> Arc<CertifiedKey> {
        let Some(name) = name.map(str::to_ascii_lowercase) else {
            return self.default.clone();
        };
        if let Some(key) = self.names.get(&name) {
            return key.clone();
        }
        let wildcard = match name.split_once('.') {
            Some((_, rest)) => format!("*.{rest}"),
            None => "*".to_owned(),
        };
        self.names.get(&wildcard).unwrap_or(&self.default).clone()
    }
}

impl ResolvesServerCert for ByName {
    fn resolve(&self, hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.pick(hello.server_name()))
    }
}

/// A certificate chain with its private key, refused when they do not belong together.
pub(super) fn certified_key(chain_pem: &[u8], key_pem: &[u8]) -> Result<Arc<CertifiedKey>, String> {
    let chain = CertificateDer::pem_slice_iter(chain_pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| e.to_string())?;
    if chain.is_empty() {
        return Err("no certificate found".to_owned());
    }
    let key = PrivateKeyDer::from_pem_slice(key_pem).map_err(|e| e.to_string())?;
    let signer = rustls::crypto::ring::sign::any_supported_type(&key).map_err(|e| e.to_string())?;
    let certified = CertifiedKey::new(chain, signer);
    certified.keys_match().map_err(|e| e.to_string())?;
    Ok(Arc::new(certified))
}

/// The names a certificate serves when none are given (upstream's `getCertificateNames`).
fn certificate_names(leaf: &CertificateDer<'_>) -> Vec<String> {
    let Ok((_, cert)) = x509_parser::parse_x509_certificate(leaf) else {
        return Vec::new();
    };
    let mut names = Vec::new();
    if let Some(cn) = cert
        .subject()
        .iter_common_name()
        .next()
        .and_then(|cn| cn.as_str().ok())
    {
        let is_ip = cn.parse::<std::net::IpAddr>().is_ok();
        let is_domain = cn == "*" || crate::names::is_dns_subdomain(cn.trim_start_matches("*."));
        if !is_ip && is_domain {
            names.push(cn.to_owned());
        }
    }
    if let Ok(Some(san)) = cert.subject_alternative_name() {
        for name in &san.value.general_names {
            if let x509_parser::extensions::GeneralName::DNSName(dns) = name {
                names.push((*dns).to_owned());
            }
        }
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair(names: &[&str], cn: &str) -> (Vec<u8>, Vec<u8>) {
        let mut params = rcgen::CertificateParams::new(
            names.iter().map(|n| (*n).to_owned()).collect::<Vec<_>>(),
        )
        .unwrap();
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, cn);
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = params.self_signed(&key).unwrap();
        (cert.pem().into_bytes(), key.serialize_pem().into_bytes())
    }

    fn sni(name: &str, (chain, key): (Vec<u8>, Vec<u8>), names: &[&str]) -> SniPem {
        SniPem {
            name: name.to_owned(),
            chain,
            key,
            names: names.iter().map(|n| (*n).to_owned()).collect(),
        }
    }

    fn which(by_name: &ByName, keys: &[(&str, &Arc<CertifiedKey>)], asked: Option<&str>) -> String {
        let picked = by_name.pick(asked);
        keys.iter()
            .find(|(_, key)| key.cert[0] == picked.cert[0])
            .map(|(name, _)| (*name).to_owned())
            .unwrap_or_default()
    }

    #[test]
    fn flag_values_parse_as_upstreams() {
        // Cases of k8s.io/component-base cli/flag namedcertkey_flag_test.go.
        let parsed: SniFiles = "  foo.crt , foo.key    ".parse().unwrap();
        assert_eq!(
            (parsed.cert_file.as_str(), parsed.key_file.as_str()),
            ("foo.crt", "foo.key")
        );
        assert!(parsed.names.is_empty());
        let parsed: SniFiles = "foo.crt,foo.key:abc,def,ghi".parse().unwrap();
        assert_eq!(parsed.names, ["abc", "def", "ghi"]);
        assert_eq!(
            "foo.crt,foo.key:".parse::<SniFiles>().unwrap_err(),
            "empty names list is not allowed"
        );
        for bad in ["", "   ", "a,b,c"] {
            assert_eq!(
                bad.parse::<SniFiles>().unwrap_err(),
                "expected comma separated certificate and key file paths"
            );
        }
    }

    #[test]
    fn certificates_are_picked_by_exact_then_wildcard_name() {
        let default = pair(&["default.local"], "default");
        let default_key = certified_key(&default.0, &default.1).unwrap();
        let foo = pair(&["foo.example.com"], "foo.example.com");
        let wild = pair(&["*.example.com"], "*.example.com");
        let given = pair(&["ignored.example.org"], "10.0.0.1");
        let by_name = ByName::new(
            default_key.clone(),
            &[
                sni("foo", foo.clone(), &[]),
                sni("wild", wild.clone(), &[]),
                sni(
                    "given",
                    given.clone(),
                    &["api.example.org", "foo.example.com"],
                ),
            ],
        )
        .unwrap();
        let keys = [
            ("default", &default_key),
            ("foo", &certified_key(&foo.0, &foo.1).unwrap()),
            ("wild", &certified_key(&wild.0, &wild.1).unwrap()),
            ("given", &certified_key(&given.0, &given.1).unwrap()),
        ];
        // An explicit name beats the certificate's own.
        assert_eq!(which(&by_name, &keys, Some("foo.example.com")), "given");
        assert_eq!(which(&by_name, &keys, Some("BAR.example.com")), "wild");
        assert_eq!(which(&by_name, &keys, Some("api.example.org")), "given");
        // The given pair's own names are not served, nor its IP common name.
        assert_eq!(
            which(&by_name, &keys, Some("ignored.example.org")),
            "default"
        );
        assert_eq!(which(&by_name, &keys, Some("a.b.example.com")), "default");
        assert_eq!(which(&by_name, &keys, None), "default");
    }

    #[test]
    fn a_key_of_another_certificate_is_refused() {
        let (chain, _) = pair(&["a.example.com"], "a");
        let (_, other_key) = pair(&["b.example.com"], "b");
        let default = pair(&["default.local"], "default");
        let error = ByName::new(
            certified_key(&default.0, &default.1).unwrap(),
            &[sni(
                "sni-serving-cert::a.crt::b.key",
                (chain, other_key),
                &[],
            )],
        )
        .unwrap_err()
        .to_string();
        assert!(
            error.starts_with("invalid TLS configuration: invalid SNI cert keypair [0/\"sni-serving-cert::a.crt::b.key\"]: "),
            "{error}"
        );
    }
}
