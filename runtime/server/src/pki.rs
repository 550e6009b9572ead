//! The certificates `kapi serve` makes when it is given none: a CA named `kapi-ca`, a serving
//! certificate it signs for the server's addresses and names, and the administrator's client
//! certificate (CN `kubernetes-admin`, O `system:masters`, as kubeadm's `admin.conf`) that the
//! written kubeconfig carries. They are kept in the cert dir (kubeadm's file names: `ca.crt`,
//! `ca.key`, `apiserver.crt`, `apiserver.key`, and `admin.crt`, `admin.key`; private keys
//! readable by the owner only) and reused on the next start, so kubeconfigs written earlier stay
//! valid; each is made again only when missing, unreadable, not signed by the CA, expiring within
//! [`RENEW_BEFORE`], or (the serving certificate) not covering every name it must.
//!
//! Upstream's facts: kube-apiserver's self-signed certificate covers its advertise address, the
//! `kubernetes` Service's IP and `kubernetes`, `kubernetes.default`, `kubernetes.default.svc`
//! (`cmd/kube-apiserver/app/server.go`, `MaybeDefaultWithSelfSignedCerts`), adding `localhost`
//! when bound to a wildcard address (k8s.io/apiserver `options/serving.go`); kubeadm's adds
//! `kubernetes.default.svc.cluster.local`. kubeadm's CA lasts 10 years and the certificates it
//! signs one year (`CertificateValidityPeriod`), backdated 5 minutes against clock skew.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose, PublicKeyData as _, SanType,
};
use rustls::client::danger::ServerCertVerifier as _;
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::server::WebPkiClientVerifier;

/// The CA's certificate file in the cert dir.
pub const CA_CERT: &str = "ca.crt";
/// The CA's private key file.
pub const CA_KEY: &str = "ca.key";
/// The serving certificate file.
pub const SERVING_CERT: &str = "apiserver.crt";
/// The serving certificate's private key file.
pub const SERVING_KEY: &str = "apiserver.key";
/// The administrator's client certificate file.
pub const ADMIN_CERT: &str = "admin.crt";
/// The administrator's private key file.
pub const ADMIN_KEY: &str = "admin.key";

/// The CA's common name.
pub const CA_NAME: &str = "kapi-ca";
/// The administrator's user name (kubeadm's `admin.conf` user).
pub const ADMIN_USER: &str = "kubernetes-admin";
/// The administrator's group: every request of its members is allowed (upstream's
/// `system:masters`).
pub const ADMIN_GROUP: &str = "system:masters";

/// The names of the `kubernetes` Service every serving certificate covers (kube-apiserver's
/// and kubeadm's, for the default cluster domain).
pub const SERVICE_NAMES: [&str; 4] = [
    "kubernetes",
    "kubernetes.default",
    "kubernetes.default.svc",
    "kubernetes.default.svc.cluster.local",
];

/// How long the CA is valid (kubeadm: 10 years).
const CA_VALIDITY: Duration = Duration::from_secs(10 * 365 * 24 * 60 * 60);
/// How long a certificate the CA signs is valid (kubeadm: one year).
const LEAF_VALIDITY: Duration = Duration::from_secs(365 * 24 * 60 * 60);
/// Certificates start this long before they are made, against clock skew (kubeadm's
/// `CertificateBackdate`).
const BACKDATE: Duration = Duration::from_secs(5 * 60);
/// A kept certificate expiring sooner than this is made again at start.
pub const RENEW_BEFORE: Duration = Duration::from_secs(30 * 24 * 60 * 60);

/// The addresses and DNS names a serving certificate must cover.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Names {
    /// IP SANs.
    pub ips: Vec<IpAddr>,
    /// DNS SANs.
    pub dns: Vec<String>,
}

impl Names {
    /// What a server listening on `listen` and advertised as `advertise` must be reachable as:
    /// both addresses (a wildcard listen address stands for none), loopback (`127.0.0.1`,
    /// `::1`, `localhost`), the `kubernetes` Service's IP and its names.
    pub fn for_server(listen: IpAddr, advertise: IpAddr, service_ip: Option<IpAddr>) -> Self {
        let mut ips = Vec::new();
        let candidates = [
            Some(listen).filter(|ip| !ip.is_unspecified()),
            Some(advertise).filter(|ip| !ip.is_unspecified()),
            Some(IpAddr::V4(Ipv4Addr::LOCALHOST)),
            Some(IpAddr::V6(Ipv6Addr::LOCALHOST)),
            service_ip,
        ];
        for ip in candidates.into_iter().flatten() {
            if !ips.contains(&ip) {
                ips.push(ip);
            }
        }
        let mut dns = vec!["localhost".to_owned()];
        dns.extend(SERVICE_NAMES.iter().map(|name| (*name).to_owned()));
        Self { ips, dns }
    }
}

/// A certificate and its private key, PEM.
#[derive(Debug, Clone)]
pub struct Pair {
    /// The certificate.
    pub cert: String,
    /// Its private key.
    pub key: String,
}

/// The certificates a server runs with.
#[derive(Debug, Clone)]
pub struct Pki {
    /// The CA's certificate, PEM: clients verify the serving certificate with it, and the server
    /// trusts the client certificates it signs.
    pub ca: String,
    /// The serving certificate and key, when asked for.
    pub serving: Option<Pair>,
    /// The administrator's client certificate and key.
    pub admin: Pair,
    /// The files made on this call (empty when everything was reused).
    pub made: Vec<&'static str>,
}

/// Why the certificates could not be made or kept.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PkiError {
    /// A file of the cert dir could not be written.
    #[error("cannot write {path}: {source}")]
    Write {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A certificate could not be made.
    #[error("cannot make the {what} certificate: {error}")]
    Make {
        /// Which one.
        what: &'static str,
        /// rcgen's account.
        error: String,
    },
}

/// The CA, the serving certificate for `names` (none when `names` is `None`) and the admin's
/// client certificate: those in `dir` that are still good, the others made (and written to
/// `dir` when there is one; without one everything is made in memory for this run only).
pub fn ensure(dir: Option<&Path>, names: Option<&Names>) -> Result<Pki, PkiError> {
    let now = SystemTime::now();
    let horizon = UnixTime::since_unix_epoch(
        (now + RENEW_BEFORE)
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap_or_default(),
    );
    let stored = |cert: &str, key: &str| dir.and_then(|dir| read_pair(dir, cert, key));
    let mut made = Vec::new();
    let kept_ca = stored(CA_CERT, CA_KEY).and_then(|pair| load_ca(&pair, horizon));
    let (ca, issuer) = match kept_ca {
        Some(kept) => kept,
        None => {
            let (pair, issuer) = make_ca(now)?;
            write_pair(dir, CA_CERT, CA_KEY, &pair)?;
            made.extend([CA_CERT, CA_KEY]);
            (pair.cert, issuer)
        }
    };
    let ca_der = first_certificate(&ca).ok_or_else(|| PkiError::Make {
        what: "CA",
        error: "the CA certificate does not parse".to_owned(),
    })?;
    let serving = match names {
        None => None,
        Some(names) => {
            let kept = stored(SERVING_CERT, SERVING_KEY)
                .filter(|pair| serves(pair, &ca_der, names, horizon));
            Some(match kept {
                Some(pair) => pair,
                None => {
                    let pair = make_serving(&issuer, names, now)?;
                    write_pair(dir, SERVING_CERT, SERVING_KEY, &pair)?;
                    made.extend([SERVING_CERT, SERVING_KEY]);
                    pair
                }
            })
        }
    };
    let kept = stored(ADMIN_CERT, ADMIN_KEY).filter(|pair| is_admin(pair, &ca_der, horizon));
    let admin = match kept {
        Some(pair) => pair,
        None => {
            let pair = make_admin(&issuer, now)?;
            write_pair(dir, ADMIN_CERT, ADMIN_KEY, &pair)?;
            made.extend([ADMIN_CERT, ADMIN_KEY]);
            pair
        }
    };
    Ok(Pki {
        ca,
        serving,
        admin,
        made,
    })
}

/// The certificate and key files `cert` and `key` of `dir`, when both are readable.
fn read_pair(dir: &Path, cert: &str, key: &str) -> Option<Pair> {
    Some(Pair {
        cert: std::fs::read_to_string(dir.join(cert)).ok()?,
        key: std::fs::read_to_string(dir.join(key)).ok()?,
    })
}

/// Writes `pair` into `dir` (if any): the key first, private, then the certificate, each through
/// a temporary file renamed into place.
fn write_pair(dir: Option<&Path>, cert: &str, key: &str, pair: &Pair) -> Result<(), PkiError> {
    let Some(dir) = dir else {
        return Ok(());
    };
    write_file(&dir.join(key), &pair.key, 0o600)?;
    write_file(&dir.join(cert), &pair.cert, 0o644)
}

fn write_file(path: &Path, text: &str, mode: u32) -> Result<(), PkiError> {
    kapi::server::write_atomically(path, text, mode).map_err(|source| PkiError::Write {
        path: path.to_path_buf(),
        source,
    })
}

/// The first certificate of `pem`.
fn first_certificate(pem: &str) -> Option<CertificateDer<'static>> {
    CertificateDer::pem_slice_iter(pem.as_bytes()).next()?.ok()
}

/// Whether `key` (PEM) is the private key of `cert` (DER).
fn key_matches(cert: &CertificateDer<'_>, key: &KeyPair) -> bool {
    x509_parser::parse_x509_certificate(cert)
        .is_ok_and(|(_, parsed)| parsed.public_key().raw == key.subject_public_key_info())
}

/// Whether `cert` is valid until `horizon`.
fn lasts_until(cert: &CertificateDer<'_>, horizon: UnixTime) -> bool {
    x509_parser::parse_x509_certificate(cert).is_ok_and(|(_, parsed)| {
        u64::try_from(parsed.validity().not_after.timestamp())
            .is_ok_and(|end| end > horizon.as_secs())
    })
}

/// The kept CA, if its files parse, its key is its own and it lasts past `horizon`.
fn load_ca(pair: &Pair, horizon: UnixTime) -> Option<(String, Issuer<'static, KeyPair>)> {
    let key = KeyPair::from_pem(&pair.key).ok()?;
    let der = first_certificate(&pair.cert)?;
    if !key_matches(&der, &key) || !lasts_until(&der, horizon) {
        return None;
    }
    let issuer = Issuer::from_ca_cert_der(&der, key).ok()?;
    Some((pair.cert.clone(), issuer))
}

/// Whether the kept serving pair is signed by the CA, matches its key, and is valid for every
/// one of `names` until `horizon` (a changed listen address makes it invalid).
fn serves(pair: &Pair, ca: &CertificateDer<'static>, names: &Names, horizon: UnixTime) -> bool {
    let Some(leaf) = first_certificate(&pair.cert) else {
        return false;
    };
    if !KeyPair::from_pem(&pair.key).is_ok_and(|key| key_matches(&leaf, &key)) {
        return false;
    }
    let mut roots = rustls::RootCertStore::empty();
    if roots.add(ca.clone()).is_err() {
        return false;
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let Ok(verifier) =
        rustls::client::WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider)
            .build()
    else {
        return false;
    };
    let ip_names = names.ips.iter().map(|ip| ServerName::from(*ip));
    let dns_names = names
        .dns
        .iter()
        .filter_map(|name| ServerName::try_from(name.clone()).ok());
    ip_names.chain(dns_names).all(|name| {
        verifier
            .verify_server_cert(&leaf, &[], &name, &[], horizon)
            .is_ok()
    })
}

/// Whether the kept admin pair is a client certificate of the CA for `kubernetes-admin` in
/// `system:masters`, with its key, valid until `horizon`.
fn is_admin(pair: &Pair, ca: &CertificateDer<'static>, horizon: UnixTime) -> bool {
    let Some(leaf) = first_certificate(&pair.cert) else {
        return false;
    };
    if !KeyPair::from_pem(&pair.key).is_ok_and(|key| key_matches(&leaf, &key)) {
        return false;
    }
    let named = x509_parser::parse_x509_certificate(&leaf).is_ok_and(|(_, parsed)| {
        let subject = parsed.subject();
        let common_name = subject.iter_common_name().filter_map(|a| a.as_str().ok());
        let mut organizations = subject.iter_organization().filter_map(|a| a.as_str().ok());
        common_name.last() == Some(ADMIN_USER) && organizations.any(|o| o == ADMIN_GROUP)
    });
    let mut roots = rustls::RootCertStore::empty();
    if !named || roots.add(ca.clone()).is_err() {
        return false;
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
        .build()
        .is_ok_and(|verifier| verifier.verify_client_cert(&leaf, &[], horizon).is_ok())
}

/// Parameters valid from a little before `now` for `validity`, with `common_name`.
fn params(common_name: &str, now: SystemTime, validity: Duration) -> CertificateParams {
    let mut params = CertificateParams::default();
    params.distinguished_name = DistinguishedName::new();
    params
        .distinguished_name
        .push(DnType::CommonName, common_name);
    params.not_before = (now - BACKDATE).into();
    params.not_after = (now + validity).into();
    params.use_authority_key_identifier_extension = true;
    params
}

fn make_error(what: &'static str) -> impl Fn(rcgen::Error) -> PkiError {
    move |error| PkiError::Make {
        what,
        error: error.to_string(),
    }
}

/// A new CA: its certificate and key, and the issuer that signs with it.
fn make_ca(now: SystemTime) -> Result<(Pair, Issuer<'static, KeyPair>), PkiError> {
    let error = make_error("CA");
    let mut params = params(CA_NAME, now, CA_VALIDITY);
    params.use_authority_key_identifier_extension = false;
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
    ];
    let key = KeyPair::generate().map_err(&error)?;
    let cert = params.self_signed(&key).map_err(&error)?;
    let pair = Pair {
        cert: cert.pem(),
        key: key.serialize_pem(),
    };
    Ok((pair, Issuer::new(params, key)))
}

/// A certificate the CA signs, valid for a year.
fn make_leaf(
    issuer: &Issuer<'static, KeyPair>,
    params: &CertificateParams,
    what: &'static str,
) -> Result<Pair, PkiError> {
    let error = make_error(what);
    let key = KeyPair::generate().map_err(&error)?;
    let cert = params.signed_by(&key, issuer).map_err(&error)?;
    Ok(Pair {
        cert: cert.pem(),
        key: key.serialize_pem(),
    })
}

/// A serving certificate (`kube-apiserver`, kubeadm's common name) for `names`.
fn make_serving(
    issuer: &Issuer<'static, KeyPair>,
    names: &Names,
    now: SystemTime,
) -> Result<Pair, PkiError> {
    let mut params = params("kube-apiserver", now, LEAF_VALIDITY);
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    let mut sans: Vec<SanType> = names.ips.iter().map(|ip| SanType::IpAddress(*ip)).collect();
    for name in &names.dns {
        let name = name.as_str().try_into().map_err(make_error("serving"))?;
        sans.push(SanType::DnsName(name));
    }
    params.subject_alt_names = sans;
    make_leaf(issuer, &params, "serving")
}

/// The administrator's client certificate: `kubernetes-admin` in `system:masters`.
fn make_admin(issuer: &Issuer<'static, KeyPair>, now: SystemTime) -> Result<Pair, PkiError> {
    let mut params = params(ADMIN_USER, now, LEAF_VALIDITY);
    params
        .distinguished_name
        .push(DnType::OrganizationName, ADMIN_GROUP);
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    make_leaf(issuer, &params, "admin")
}

/// The CA a kubeconfig should trust for a serving chain given by the operator: its last
/// certificate when it is self-issued (a root shipped with the chain), else none (the client's
/// own roots decide).
pub fn chain_root(chain_pem: &str) -> Option<String> {
    let last = CertificateDer::pem_slice_iter(chain_pem.as_bytes())
        .filter_map(Result::ok)
        .last()?;
    let (_, parsed) = x509_parser::parse_x509_certificate(&last).ok()?;
    if parsed.subject().as_raw() != parsed.issuer().as_raw() {
        return None;
    }
    Some(pem_certificate(&last))
}

/// `der` as a PEM certificate block.
fn pem_certificate(der: &[u8]) -> String {
    use base64::Engine as _;
    let encoded = base64::engine::general_purpose::STANDARD.encode(der);
    let mut pem = String::from("-----BEGIN CERTIFICATE-----\n");
    for line in encoded.as_bytes().chunks(64) {
        pem.push_str(&String::from_utf8_lossy(line));
        pem.push('\n');
    }
    pem.push_str("-----END CERTIFICATE-----\n");
    pem
}

#[cfg(test)]
mod tests {
    use super::*;

    const DAY: Duration = Duration::from_secs(24 * 60 * 60);

    fn names() -> Names {
        let loopback = IpAddr::V4(Ipv4Addr::LOCALHOST);
        Names::for_server(
            loopback,
            loopback,
            Some(IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1))),
        )
    }

    fn now_plus(duration: Duration) -> UnixTime {
        UnixTime::since_unix_epoch(
            (SystemTime::now() + duration)
                .duration_since(SystemTime::UNIX_EPOCH)
                .unwrap(),
        )
    }

    /// kube-apiserver's names (`kubernetes`, `kubernetes.default`, `kubernetes.default.svc`, the
    /// Service IP) and kubeadm's `kubernetes.default.svc.cluster.local`, loopback, the listen
    /// address unless it is a wildcard, and the advertised address (upstream's self-signed
    /// certificate names its public address: `MaybeDefaultWithSelfSignedCerts`).
    #[test]
    fn the_serving_names_cover_the_server() {
        let listen = "192.0.2.7".parse().unwrap();
        let names = Names::for_server(listen, listen, Some("10.96.0.1".parse().unwrap()));
        let ips: Vec<String> = names.ips.iter().map(ToString::to_string).collect();
        assert_eq!(ips, ["192.0.2.7", "127.0.0.1", "::1", "10.96.0.1"]);
        assert_eq!(
            names.dns,
            [
                "localhost",
                "kubernetes",
                "kubernetes.default",
                "kubernetes.default.svc",
                "kubernetes.default.svc.cluster.local"
            ]
        );
        let wildcard = Names::for_server(
            "0.0.0.0".parse().unwrap(),
            "198.51.100.4".parse().unwrap(),
            None,
        );
        let ips: Vec<String> = wildcard.ips.iter().map(ToString::to_string).collect();
        assert_eq!(ips, ["198.51.100.4", "127.0.0.1", "::1"]);
        let advertised_elsewhere = Names::for_server(
            "127.0.0.1".parse().unwrap(),
            "198.51.100.4".parse().unwrap(),
            None,
        );
        let ips: Vec<String> = advertised_elsewhere
            .ips
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(ips, ["127.0.0.1", "198.51.100.4", "::1"]);
    }

    #[test]
    fn certificates_are_made_once_and_reused() {
        let dir = tempfile::tempdir().unwrap();
        let pki = dir.path().join("pki");
        let first = ensure(Some(&pki), Some(&names())).unwrap();
        assert_eq!(
            first.made,
            [
                CA_CERT,
                CA_KEY,
                SERVING_CERT,
                SERVING_KEY,
                ADMIN_CERT,
                ADMIN_KEY
            ]
        );
        #[cfg(unix)]
        for (file, mode) in [
            (CA_KEY, 0o600),
            (SERVING_KEY, 0o600),
            (ADMIN_KEY, 0o600),
            (CA_CERT, 0o644),
        ] {
            use std::os::unix::fs::PermissionsExt as _;
            let meta = std::fs::metadata(pki.join(file)).unwrap();
            assert_eq!(meta.permissions().mode() & 0o777, mode, "{file}");
        }
        let again = ensure(Some(&pki), Some(&names())).unwrap();
        assert!(again.made.is_empty(), "{:?}", again.made);
        assert_eq!(again.ca, first.ca);
        assert_eq!(again.admin.cert, first.admin.cert);
        let serving = again.serving.unwrap();
        assert_eq!(serving.cert, first.serving.unwrap().cert);
        let ca = first_certificate(&again.ca).unwrap();
        assert!(serves(&serving, &ca, &names(), now_plus(RENEW_BEFORE)));
        assert!(is_admin(&again.admin, &ca, now_plus(RENEW_BEFORE)));
        // Not valid past a year (kubeadm's validity).
        assert!(!is_admin(&again.admin, &ca, now_plus(LEAF_VALIDITY + DAY)));
    }

    /// A new listen address the serving certificate does not cover makes it again, signed by
    /// the same CA; the admin certificate stays.
    #[test]
    fn a_new_address_remakes_the_serving_certificate_only() {
        let dir = tempfile::tempdir().unwrap();
        let first = ensure(Some(dir.path()), Some(&names())).unwrap();
        let moved_to = "192.0.2.7".parse().unwrap();
        let moved = Names::for_server(moved_to, moved_to, None);
        let ca = first_certificate(&first.ca).unwrap();
        assert!(!serves(
            first.serving.as_ref().unwrap(),
            &ca,
            &moved,
            now_plus(Duration::ZERO)
        ));
        let second = ensure(Some(dir.path()), Some(&moved)).unwrap();
        assert_eq!(second.made, [SERVING_CERT, SERVING_KEY]);
        assert_eq!(second.ca, first.ca);
        assert_eq!(second.admin.cert, first.admin.cert);
        assert!(serves(
            second.serving.as_ref().unwrap(),
            &ca,
            &moved,
            now_plus(Duration::ZERO)
        ));
    }

    /// A replaced CA remakes everything it signed; broken files are made again.
    #[test]
    fn certificates_of_another_ca_or_broken_files_are_remade() {
        let dir = tempfile::tempdir().unwrap();
        let first = ensure(Some(dir.path()), Some(&names())).unwrap();
        std::fs::remove_file(dir.path().join(CA_KEY)).unwrap();
        let second = ensure(Some(dir.path()), Some(&names())).unwrap();
        assert_eq!(second.made.len(), 6, "{:?}", second.made);
        assert_ne!(second.ca, first.ca);
        std::fs::write(dir.path().join(ADMIN_KEY), "garbage").unwrap();
        let third = ensure(Some(dir.path()), None).unwrap();
        assert_eq!(third.made, [ADMIN_CERT, ADMIN_KEY]);
        assert!(third.serving.is_none());
        // Without a dir nothing is written and everything is new.
        let memory = ensure(None, Some(&names())).unwrap();
        assert_eq!(memory.made.len(), 6);
        assert_ne!(memory.ca, third.ca);
    }

    #[test]
    fn a_self_issued_root_at_the_end_of_a_chain_is_trusted() {
        let pki = ensure(None, Some(&names())).unwrap();
        let serving = pki.serving.unwrap().cert;
        assert_eq!(chain_root(&serving), None);
        let chain = format!("{serving}{}", pki.ca);
        let root = chain_root(&chain).unwrap();
        assert_eq!(first_certificate(&root), first_certificate(&pki.ca));
    }
}
