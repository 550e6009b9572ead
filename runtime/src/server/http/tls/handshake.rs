//! What the handshake may negotiate: kube-apiserver's `--tls-min-version` and
//! `--tls-cipher-suites` (k8s.io/component-base `cli/flag/ciphersuites_flag.go`, applied in
//! k8s.io/apiserver `pkg/server/options/serving.go`).
//!
//! Upstream takes Go's names. Go speaks TLS 1.0 to 1.3 and implements suites rustls
//! deliberately does not (CBC, RSA key exchange, 3DES, RC4); kapi speaks TLS 1.2 and 1.3 with
//! rustls's AEAD suites. So a name Go does not know is refused with upstream's error, and a
//! name Go knows but kapi cannot offer is left out with a warning, as is a minimum below TLS
//! 1.2: a configuration written for kube-apiserver starts, offering what both implement.
//! As in Go, the list only restricts TLS 1.2: TLS 1.3's suites are not configurable and all
//! offered.

use std::sync::Arc;

use rustls::crypto::CryptoProvider;
use rustls::crypto::ring::cipher_suite as ring_suites;
use rustls::{CipherSuite, SupportedCipherSuite};

use super::TlsError;

/// The suites Go's `crypto/tls` calls secure (`tls.CipherSuites()`, with upstream's two legacy
/// ChaCha20 aliases) and insecure (`tls.InsecureCipherSuites()`), as `--tls-cipher-suites`
/// accepts them, with the suite kapi offers for each, if any.
const GO_SUITES: &[(&str, Security, Option<SupportedCipherSuite>)] = &[
    (
        "TLS_AES_128_GCM_SHA256",
        Security::Secure,
        Some(ring_suites::TLS13_AES_128_GCM_SHA256),
    ),
    (
        "TLS_AES_256_GCM_SHA384",
        Security::Secure,
        Some(ring_suites::TLS13_AES_256_GCM_SHA384),
    ),
    (
        "TLS_CHACHA20_POLY1305_SHA256",
        Security::Secure,
        Some(ring_suites::TLS13_CHACHA20_POLY1305_SHA256),
    ),
    (
        "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA",
        Security::Secure,
        None,
    ),
    (
        "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA",
        Security::Secure,
        None,
    ),
    ("TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA", Security::Secure, None),
    ("TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA", Security::Secure, None),
    (
        "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
        Security::Secure,
        Some(ring_suites::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256),
    ),
    (
        "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
        Security::Secure,
        Some(ring_suites::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384),
    ),
    (
        "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
        Security::Secure,
        Some(ring_suites::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256),
    ),
    (
        "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
        Security::Secure,
        Some(ring_suites::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384),
    ),
    (
        "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
        Security::Secure,
        Some(ring_suites::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256),
    ),
    (
        "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
        Security::Secure,
        Some(ring_suites::TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256),
    ),
    (
        "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305",
        Security::Secure,
        Some(ring_suites::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256),
    ),
    (
        "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305",
        Security::Secure,
        Some(ring_suites::TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256),
    ),
    ("TLS_RSA_WITH_RC4_128_SHA", Security::Insecure, None),
    ("TLS_RSA_WITH_3DES_EDE_CBC_SHA", Security::Insecure, None),
    ("TLS_RSA_WITH_AES_128_CBC_SHA", Security::Insecure, None),
    ("TLS_RSA_WITH_AES_256_CBC_SHA", Security::Insecure, None),
    ("TLS_RSA_WITH_AES_128_CBC_SHA256", Security::Insecure, None),
    ("TLS_RSA_WITH_AES_128_GCM_SHA256", Security::Insecure, None),
    ("TLS_RSA_WITH_AES_256_GCM_SHA384", Security::Insecure, None),
    ("TLS_ECDHE_ECDSA_WITH_RC4_128_SHA", Security::Insecure, None),
    ("TLS_ECDHE_RSA_WITH_RC4_128_SHA", Security::Insecure, None),
    (
        "TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA",
        Security::Insecure,
        None,
    ),
    (
        "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256",
        Security::Insecure,
        None,
    ),
    (
        "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256",
        Security::Insecure,
        None,
    ),
];

/// Which of Go's lists a suite is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Security {
    Secure,
    Insecure,
}

/// The protocol versions and TLS 1.2 cipher suites a server's handshakes offer.
#[derive(Debug, Clone, Default)]
pub struct Handshake {
    /// `--tls-min-version=VersionTLS13`: TLS 1.2 is not offered.
    tls13_only: bool,
    /// The TLS 1.2 suites `--tls-cipher-suites` allows; `None`: rustls's defaults.
    tls12_suites: Option<Vec<CipherSuite>>,
    /// What the flags asked for that is not offered, or that upstream warns about, for the log.
    warnings: Vec<String>,
}

impl Handshake {
    /// The handshake `--tls-min-version` (`VersionTLS10` ... `VersionTLS13`, empty for the
    /// default, TLS 1.2) and `--tls-cipher-suites` (Go's names, empty for the defaults) ask
    /// for. Refuses names upstream refuses, with its messages, and a suite list of which kapi
    /// can offer nothing where TLS 1.2 is offered.
    pub fn from_flags(min_version: &str, cipher_suites: &[String]) -> Result<Self, TlsError> {
        let mut handshake = Handshake::default();
        match min_version {
            "" | "VersionTLS12" => {}
            "VersionTLS13" => handshake.tls13_only = true,
            "VersionTLS10" | "VersionTLS11" => handshake.warnings.push(format!(
                "--tls-min-version={min_version}: kapi speaks TLS 1.2 and 1.3 only; TLS 1.2 is the minimum"
            )),
            other => {
                return Err(TlsError::Flag(format!("unknown tls version {other:?}")));
            }
        }
        if cipher_suites.is_empty() {
            return Ok(handshake);
        }
        let mut allowed = Vec::new();
        for name in cipher_suites {
            let Some((_, security, offered)) = GO_SUITES.iter().find(|(n, ..)| n == name) else {
                return Err(TlsError::Flag(format!(
                    "Cipher suite {name} not supported or doesn't exist"
                )));
            };
            if *security == Security::Insecure {
                handshake
                    .warnings
                    .push(format!("Use of insecure cipher '{name}' detected."));
            }
            match offered {
                Some(suite) if suite.tls13().is_none() => allowed.push(suite.suite()),
                // TLS 1.3's suites are always offered, as Go's are.
                Some(_) => {}
                None => handshake.warnings.push(format!(
                    "--tls-cipher-suites: {name} is not offered: kapi's TLS (rustls) implements only AEAD suites with ECDHE key exchange"
                )),
            }
        }
        if allowed.is_empty() && !handshake.tls13_only {
            return Err(TlsError::Flag(format!(
                "--tls-cipher-suites: kapi implements none of the TLS 1.2 suites listed; it offers {}",
                offered_tls12().join(", ")
            )));
        }
        handshake.tls12_suites = Some(allowed);
        Ok(handshake)
    }

    /// What the flags asked for that is not offered, or that upstream warns about.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// `provider` offering only the suites allowed.
    pub(super) fn provider(&self, mut provider: CryptoProvider) -> Arc<CryptoProvider> {
        provider.cipher_suites.retain(|suite| match suite {
            SupportedCipherSuite::Tls13(_) => true,
            SupportedCipherSuite::Tls12(_) => {
                !self.tls13_only
                    && self
                        .tls12_suites
                        .as_ref()
                        .is_none_or(|allowed| allowed.contains(&suite.suite()))
            }
        });
        Arc::new(provider)
    }

    /// The protocol versions offered.
    pub(super) fn versions(&self) -> &'static [&'static rustls::SupportedProtocolVersion] {
        if self.tls13_only {
            TLS13_ONLY
        } else {
            rustls::DEFAULT_VERSIONS
        }
    }
}

/// The versions offered with `--tls-min-version=VersionTLS13`.
const TLS13_ONLY: &[&rustls::SupportedProtocolVersion] = &[&rustls::version::TLS13];

/// Go's names of the TLS 1.2 suites kapi offers.
fn offered_tls12() -> Vec<&'static str> {
    GO_SUITES
        .iter()
        .filter(|(name, _, offered)| {
            offered.is_some_and(|s| s.tls13().is_none()) && !name.ends_with("_POLY1305")
        })
        .map(|(name, ..)| *name)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn suites(names: &[&str]) -> Vec<String> {
        names.iter().map(|n| (*n).to_owned()).collect()
    }

    fn offered(handshake: &Handshake) -> Vec<CipherSuite> {
        handshake
            .provider(rustls::crypto::ring::default_provider())
            .cipher_suites
            .iter()
            .map(|s| s.suite())
            .collect()
    }

    #[test]
    fn versions_are_upstreams_names() {
        assert!(
            Handshake::from_flags("", &[])
                .unwrap()
                .warnings()
                .is_empty()
        );
        assert_eq!(
            Handshake::from_flags("VersionTLS13", &[])
                .unwrap()
                .versions()
                .len(),
            1
        );
        // k8s.io/component-base cli/flag TLSVersion.
        assert_eq!(
            Handshake::from_flags("TLS1.3", &[])
                .unwrap_err()
                .to_string(),
            "unknown tls version \"TLS1.3\""
        );
        let old = Handshake::from_flags("VersionTLS10", &[]).unwrap();
        assert_eq!(old.versions().len(), 2);
        assert_eq!(old.warnings().len(), 1);
    }

    #[test]
    fn suites_restrict_tls_1_2_only() {
        let handshake = Handshake::from_flags(
            "",
            &suites(&[
                "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
                "TLS_AES_128_GCM_SHA256",
            ]),
        )
        .unwrap();
        let offered = offered(&handshake);
        assert!(offered.contains(&CipherSuite::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256));
        assert!(!offered.contains(&CipherSuite::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384));
        // Every TLS 1.3 suite stays, as in Go.
        assert!(offered.contains(&CipherSuite::TLS13_AES_256_GCM_SHA384));
        assert!(offered.contains(&CipherSuite::TLS13_CHACHA20_POLY1305_SHA256));
    }

    #[test]
    fn names_go_knows_but_kapi_cannot_offer_are_left_out_with_a_warning() {
        // A hardened list as commonly given to kube-apiserver, with RSA key exchange suites.
        let handshake = Handshake::from_flags(
            "",
            &suites(&[
                "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305",
                "TLS_RSA_WITH_AES_256_GCM_SHA384",
            ]),
        )
        .unwrap();
        assert_eq!(
            handshake.warnings(),
            [
                "Use of insecure cipher 'TLS_RSA_WITH_AES_256_GCM_SHA384' detected.",
                "--tls-cipher-suites: TLS_RSA_WITH_AES_256_GCM_SHA384 is not offered: kapi's TLS (rustls) implements only AEAD suites with ECDHE key exchange",
            ]
        );
        assert!(
            offered(&handshake)
                .contains(&CipherSuite::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256)
        );
    }

    #[test]
    fn unknown_names_and_lists_with_nothing_to_offer_are_refused() {
        assert_eq!(
            Handshake::from_flags("", &suites(&["TLS_MADE_UP"]))
                .unwrap_err()
                .to_string(),
            "Cipher suite TLS_MADE_UP not supported or doesn't exist"
        );
        let only_cbc = suites(&["TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA"]);
        assert!(Handshake::from_flags("", &only_cbc).is_err());
        // With TLS 1.3 only, the TLS 1.2 list does not matter.
        assert!(Handshake::from_flags("VersionTLS13", &only_cbc).is_ok());
    }
}
