//! TLS: the serving certificate and key, the client CAs, the handshake's settings, and what a
//! finished handshake tells each request about the client's certificate.
//!
//! Upstream's settings (k8s.io/apiserver `pkg/server/secure_serving.go`, `tlsConfig`): TLS 1.2
//! at least, ALPN offering `h2` then `http/1.1` (HTTP/2 is negotiated, not assumed), and, when a
//! client CA bundle is configured, `tls.RequestClientCert`: the server asks for a certificate
//! (naming the CAs it trusts) but neither requires one nor checks its chain at the handshake,
//! "so certificates can be validated by authenticators, while still allowing other auth types".
//! The handshake still proves the client holds the certificate's key (its `CertificateVerify`
//! signature is checked), as Go's does. The chain is then verified once per connection against
//! the client CAs, for client authentication (upstream's x509 authenticator,
//! `pkg/authentication/request/x509`, verifies with `ExtKeyUsageClientAuth`): each request of
//! the connection carries [`PeerCertificates`] when it chains to a client CA, or
//! [`UnverifiedPeerCertificates`] with the reason when it does not, which upstream's
//! authenticator turns into a failed authentication (401 unless another method succeeds).
//!
//! The handshake must finish within the connection's header read timeout: Go's `http.Server`
//! bounds it by the smallest of `ReadHeaderTimeout`, `ReadTimeout` and `WriteTimeout`
//! (`net/http/server.go`, `tlsHandshakeTimeout`), and kube-apiserver sets only the first (32 s).
//! Failed handshakes are logged at trace level, as upstream logs them at V(5)
//! (`tlsHandshakeErrorWriter`).

mod handshake;
mod sni;

pub use handshake::Handshake;
pub use sni::{SniFiles, SniPem};

use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime};

use rustls::client::danger::HandshakeSignatureValid;
use rustls::crypto::WebPkiSupportedAlgorithms;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, UnixTime};
use rustls::server::WebPkiClientVerifier;
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::{
    CertificateError, DigitallySignedStruct, DistinguishedName, RootCertStore, ServerConfig,
    SignatureScheme,
};

/// The ALPN protocols offered, in the server's order of preference (upstream's `NextProtos`).
const ALPN: [&[u8]; 2] = [b"h2", b"http/1.1"];

/// How a server speaks TLS: its certificate chain and private key, and optionally the CAs whose
/// client certificates identify users (kube-apiserver's `--tls-cert-file`,
/// `--tls-private-key-file` and `--client-ca-file`), fixed ([`Tls::from_pem`]) or read again
/// from their files when they change ([`Tls::reloading`]).
#[derive(Clone)]
pub struct Tls {
    current: Arc<Mutex<Arc<Settings>>>,
    /// Where the settings come from when they are reloaded.
    reload: Option<Arc<Reload>>,
    /// The versions and suites offered, kept over reloads.
    handshake: Arc<Handshake>,
}

/// One version of the settings: what each connection's handshake and client check use.
struct Settings {
    acceptor: tokio_rustls::TlsAcceptor,
    /// Verifies a presented client chain against the client CAs; `None` without client CAs,
    /// when no certificate is asked for.
    client_verifier: Option<Arc<dyn ClientCertVerifier>>,
    chain_len: usize,
    client_cas: usize,
}

/// What [`Tls::reloading`] reads: the default serving certificate's chain and key, the client
/// CA bundle, and the certificates served by name.
#[derive(Debug, Clone, Default)]
pub struct TlsPem {
    /// The default serving certificate chain, leaf first.
    pub chain: Vec<u8>,
    /// Its private key.
    pub key: Vec<u8>,
    /// The CAs client certificates are verified against, if any.
    pub client_ca: Option<Vec<u8>>,
    /// Certificates served to clients asking for their names (`--tls-sni-cert-key`).
    pub sni: Vec<SniPem>,
}

/// How reloaded settings are read: the files watched, the last look at them, and the reader.
struct Reload {
    files: Vec<PathBuf>,
    state: Mutex<Looked>,
    read: Box<dyn Fn() -> Result<TlsPem, TlsError> + Send + Sync>,
}

/// When the files were last looked at, and what they were then (modification time and size).
struct Looked {
    at: Instant,
    stamps: Vec<Option<(SystemTime, u64)>>,
}

/// How often, at most, the watched files are looked at: a connection accepted after a change
/// gets the new certificate within this time (upstream's file watches are immediate, with a
/// one-minute resync).
const RELOAD_CHECK: Duration = Duration::from_secs(1);

impl std::fmt::Debug for Tls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let current = self.settings();
        f.debug_struct("Tls")
            .field("certificates", &current.chain_len)
            .field("client_cas", &current.client_cas)
            .field("reloading", &self.reload.is_some())
            .finish_non_exhaustive()
    }
}

fn stamps(files: &[PathBuf]) -> Vec<Option<(SystemTime, u64)>> {
    files
        .iter()
        .map(|file| {
            let meta = std::fs::metadata(file).ok()?;
            Some((meta.modified().ok()?, meta.len()))
        })
        .collect()
}

/// Why [`Tls::from_pem`] refused its input.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TlsError {
    /// The certificate PEM holds no certificate.
    #[error("no certificate found in the serving certificate PEM")]
    NoCertificate,
    /// The client CA PEM holds no certificate.
    #[error("no certificate found in the client CA PEM")]
    NoClientCa,
    /// A PEM block could not be read.
    #[error("cannot read {what} PEM: {error}")]
    Pem {
        /// Which input.
        what: &'static str,
        /// The parser's account.
        error: String,
    },
    /// The key does not match the certificate, or rustls refused the configuration.
    #[error("invalid TLS configuration: {0}")]
    Config(String),
    /// A TLS flag's value is refused (upstream's message).
    #[error("{0}")]
    Flag(String),
    /// A file [`Tls::reloading`] reads could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

impl Tls {
    /// TLS with the serving certificate chain `chain_pem` (leaf first, then intermediates)
    /// and its private key `key_pem` (PKCS#8, PKCS#1 or SEC1), and, with `client_ca_pem`, the
    /// CA bundle client certificates are verified against (X.509 client authentication).
    /// Refuses PEM without certificates, a key that does not match the leaf, and unusable CAs.
    pub fn from_pem(
        chain_pem: &[u8],
        key_pem: &[u8],
        client_ca_pem: Option<&[u8]>,
    ) -> Result<Self, TlsError> {
        let pem = TlsPem {
            chain: chain_pem.to_vec(),
            key: key_pem.to_vec(),
            client_ca: client_ca_pem.map(<[u8]>::to_vec),
            sni: Vec::new(),
        };
        let handshake = Handshake::default();
        Ok(Self {
            current: Arc::new(Mutex::new(Arc::new(Settings::from_pem(&pem, &handshake)?))),
            reload: None,
            handshake: Arc::new(handshake),
        })
    }

    /// TLS from what `read` answers now, and again whenever one of `files` (those it reads)
    /// changes, as kube-apiserver's dynamic certificate controllers reload
    /// `--tls-cert-file`, `--tls-private-key-file`, `--client-ca-file` and
    /// `--tls-sni-cert-key` (k8s.io/apiserver `pkg/server/dynamiccertificates`): connections
    /// accepted after the change use the new certificates and client CAs; settings that do not
    /// load (a key that no longer matches mid-rotation) are logged and the last good ones
    /// kept. Every handshake offers what `handshake` allows.
    pub fn reloading(
        files: Vec<PathBuf>,
        handshake: Handshake,
        read: impl Fn() -> Result<TlsPem, TlsError> + Send + Sync + 'static,
    ) -> Result<Self, TlsError> {
        let looked = Looked {
            at: Instant::now(),
            stamps: stamps(&files),
        };
        let settings = Settings::from_pem(&read()?, &handshake)?;
        Ok(Self {
            current: Arc::new(Mutex::new(Arc::new(settings))),
            reload: Some(Arc::new(Reload {
                files,
                state: Mutex::new(looked),
                read: Box::new(read),
            })),
            handshake: Arc::new(handshake),
        })
    }

    /// The settings in force.
    fn settings(&self) -> Arc<Settings> {
        Arc::clone(&self.current.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// The settings for a new connection: reloaded first if a watched file changed.
    fn for_connection(&self) -> Arc<Settings> {
        if let Some(reload) = &self.reload {
            self.reload_if_changed(reload);
        }
        self.settings()
    }

    fn reload_if_changed(&self, reload: &Reload) {
        let mut looked = reload.state.lock().unwrap_or_else(PoisonError::into_inner);
        if looked.at.elapsed() < RELOAD_CHECK {
            return;
        }
        looked.at = Instant::now();
        let now = stamps(&reload.files);
        if now == looked.stamps {
            return;
        }
        looked.stamps = now;
        let loaded = (reload.read)().and_then(|pem| Settings::from_pem(&pem, &self.handshake));
        match loaded {
            Ok(settings) => {
                tracing::info!(files = ?reload.files, "loaded the changed TLS certificates");
                *self.current.lock().unwrap_or_else(PoisonError::into_inner) = Arc::new(settings);
            }
            Err(error) => {
                tracing::warn!(%error, files = ?reload.files, "changed TLS certificates do not load; the last ones are kept");
            }
        }
    }

    /// Accepts a TLS connection with the settings in force (see [`Tls::reloading`]), and
    /// answers what the finished handshake says of the client.
    pub(crate) async fn accept(
        &self,
        tcp: tokio::net::TcpStream,
    ) -> std::io::Result<(
        tokio_rustls::server::TlsStream<tokio::net::TcpStream>,
        Option<ClientIdentity>,
    )> {
        let settings = self.for_connection();
        let stream = settings.acceptor.accept(tcp).await?;
        let client = settings.client_identity(stream.get_ref().1.peer_certificates());
        Ok((stream, client))
    }
}

impl Settings {
    fn from_pem(pem: &TlsPem, handshake: &Handshake) -> Result<Self, TlsError> {
        let chain = certificates(&pem.chain, "serving certificate")?;
        if chain.is_empty() {
            return Err(TlsError::NoCertificate);
        }
        let key = PrivateKeyDer::from_pem_slice(&pem.key).map_err(|e| TlsError::Pem {
            what: "private key",
            error: e.to_string(),
        })?;
        let provider = handshake.provider(rustls::crypto::ring::default_provider());
        let config = |e: rustls::Error| TlsError::Config(e.to_string());
        let builder = ServerConfig::builder_with_provider(provider.clone())
            .with_protocol_versions(handshake.versions())
            .map_err(config)?;
        let (builder, client_verifier, client_cas) = match pem.client_ca.as_deref() {
            None => (builder.with_no_client_auth(), None, 0),
            Some(pem) => {
                let cas = certificates(pem, "client CA")?;
                if cas.is_empty() {
                    return Err(TlsError::NoClientCa);
                }
                let mut roots = RootCertStore::empty();
                for ca in &cas {
                    roots.add(ca.clone()).map_err(config)?;
                }
                let hints = roots.subjects();
                let verifier =
                    WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider.clone())
                        .allow_unauthenticated()
                        .build()
                        .map_err(|e| TlsError::Config(e.to_string()))?;
                let request = Arc::new(RequestClientCert {
                    hints,
                    algorithms: provider.signature_verification_algorithms,
                });
                (
                    builder.with_client_cert_verifier(request),
                    Some(verifier),
                    cas.len(),
                )
            }
        };
        let chain_len = chain.len();
        let mut server = if pem.sni.is_empty() {
            builder.with_single_cert(chain, key).map_err(config)?
        } else {
            let default = sni::certified_key(&pem.chain, &pem.key).map_err(TlsError::Config)?;
            builder.with_cert_resolver(Arc::new(sni::ByName::new(default, &pem.sni)?))
        };
        server.alpn_protocols = ALPN.iter().map(|p| p.to_vec()).collect();
        Ok(Self {
            acceptor: tokio_rustls::TlsAcceptor::from(Arc::new(server)),
            client_verifier,
            chain_len,
            client_cas,
        })
    }

    /// What a finished handshake says about the client: `None` when it presented no
    /// certificate (or none was asked for), else whether its chain verifies against the client
    /// CAs now.
    fn client_identity(
        &self,
        presented: Option<&[CertificateDer<'static>]>,
    ) -> Option<ClientIdentity> {
        let verifier = self.client_verifier.as_ref()?;
        let (leaf, intermediates) = presented?.split_first()?;
        let chain: Arc<[CertificateDer<'static>]> = presented?.iter().cloned().collect();
        Some(
            match verifier.verify_client_cert(leaf, intermediates, UnixTime::now()) {
                Ok(_) => ClientIdentity::Verified(PeerCertificates(chain)),
                Err(error) => ClientIdentity::Unverified(UnverifiedPeerCertificates {
                    certificates: chain,
                    error: go_verify_error(&error),
                }),
            },
        )
    }
}

/// Every certificate in `pem`, in order.
fn certificates(pem: &[u8], what: &'static str) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| TlsError::Pem {
            what,
            error: e.to_string(),
        })
}

/// Go's text for a failed chain verification (`crypto/x509`'s error strings), for the log.
fn go_verify_error(error: &rustls::Error) -> String {
    match error {
        rustls::Error::InvalidCertificate(reason) => match reason {
            CertificateError::UnknownIssuer => {
                "x509: certificate signed by unknown authority".to_owned()
            }
            CertificateError::Expired
            | CertificateError::ExpiredContext { .. }
            | CertificateError::NotValidYet
            | CertificateError::NotValidYetContext { .. } => {
                "x509: certificate has expired or is not yet valid".to_owned()
            }
            CertificateError::InvalidPurpose | CertificateError::InvalidPurposeContext { .. } => {
                "x509: certificate specifies an incompatible key usage".to_owned()
            }
            other => format!("x509: {other:?}"),
        },
        other => format!("x509: {other}"),
    }
}

/// What a connection's handshake established about its client certificate.
#[derive(Debug, Clone)]
pub(crate) enum ClientIdentity {
    /// The chain verified against the client CAs.
    Verified(PeerCertificates),
    /// A certificate was presented, but its chain did not verify.
    Unverified(UnverifiedPeerCertificates),
}

/// The client certificate chain of a TLS connection (leaf first), verified against the client
/// CAs, in each of its requests' extensions: what upstream's x509 authenticator reads from
/// `req.TLS.PeerCertificates` once `Verify` succeeded.
#[derive(Debug, Clone)]
pub(crate) struct PeerCertificates(pub(crate) Arc<[CertificateDer<'static>]>);

/// A client certificate chain (leaf first) that does not verify against the client CAs, with
/// Go's reason, in each of the connection's requests' extensions: upstream's x509 authenticator
/// fails such a request with `verifying certificate ... failed: <reason>`.
#[derive(Debug, Clone)]
pub(crate) struct UnverifiedPeerCertificates {
    pub(crate) certificates: Arc<[CertificateDer<'static>]>,
    pub(crate) error: String,
}

/// Go's `tls.RequestClientCert`: asks for a certificate naming the client CAs, accepts none,
/// and accepts any chain at the handshake; the signature proving the client holds the key is
/// still checked.
#[derive(Debug)]
struct RequestClientCert {
    hints: Vec<DistinguishedName>,
    algorithms: WebPkiSupportedAlgorithms,
}

impl ClientCertVerifier for RequestClientCert {
    fn offer_client_auth(&self) -> bool {
        true
    }

    fn client_auth_mandatory(&self) -> bool {
        false
    }

    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        &self.hints
    }

    fn verify_client_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        Ok(ClientCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

/// The parts of a certificate's subject upstream's x509 authenticator reads
/// (`CommonNameUserConversion`: the common name is the user, the organizations its groups).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CertificateSubject {
    /// The subject's common name (CN); Go keeps the last one when there are several, and an
    /// empty string when there is none.
    pub(crate) common_name: String,
    /// Every organization (O) of the subject, in order.
    pub(crate) organizations: Vec<String>,
}

/// The common name and organizations of the DER certificate `der`, read as Go's
/// `pkix.Name.FillFromRDNSequence` reads them; an error when `der` is not an X.509
/// certificate or an attribute is not a string.
pub(crate) fn certificate_subject(der: &[u8]) -> Result<CertificateSubject, String> {
    let (_, certificate) = x509_parser::parse_x509_certificate(der)
        .map_err(|e| format!("cannot parse the certificate: {e}"))?;
    let subject = certificate.subject();
    let text = |attribute: &x509_parser::x509::AttributeTypeAndValue<'_>| {
        attribute
            .as_str()
            .map(str::to_owned)
            .map_err(|e| format!("cannot read the certificate's subject: {e}"))
    };
    let mut common_name = String::new();
    for attribute in subject.iter_common_name() {
        common_name = text(attribute)?;
    }
    let organizations = subject
        .iter_organization()
        .map(text)
        .collect::<Result<Vec<_>, _>>()?;
    Ok(CertificateSubject {
        common_name,
        organizations,
    })
}

/// Certificates for tests, made with rcgen.
#[cfg(test)]
pub(crate) mod test_certs {
    use rcgen::{
        BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer,
        KeyPair, SanType,
    };
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject as _;

    /// A CA: its certificate PEM and its issuer.
    pub(crate) struct Ca {
        pub(crate) pem: String,
        issuer: Issuer<'static, KeyPair>,
    }

    pub(crate) fn ca(name: &str) -> Ca {
        let mut params = CertificateParams::default();
        params.distinguished_name.push(DnType::CommonName, name);
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let key = KeyPair::generate().unwrap();
        let pem = params.self_signed(&key).unwrap().pem();
        Ca {
            pem,
            issuer: Issuer::new(params, key),
        }
    }

    /// A leaf signed by `ca`: (certificate PEM, key PEM).
    pub(crate) fn leaf(ca: &Ca, params: CertificateParams) -> (String, String) {
        let key = KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &ca.issuer).unwrap();
        (cert.pem(), key.serialize_pem())
    }

    pub(crate) fn serving(ca: &Ca) -> (String, String) {
        let mut params = CertificateParams::default();
        params.subject_alt_names = vec![SanType::IpAddress([127, 0, 0, 1].into())];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        leaf(ca, params)
    }

    pub(crate) fn client(ca: &Ca, common_name: &str, organization: &str) -> (String, String) {
        let mut params = CertificateParams::default();
        params.distinguished_name = rcgen::DistinguishedName::new();
        params
            .distinguished_name
            .push(DnType::CommonName, common_name);
        params
            .distinguished_name
            .push(DnType::OrganizationName, organization);
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        leaf(ca, params)
    }

    pub(crate) fn der(pem: &str) -> CertificateDer<'static> {
        CertificateDer::from_pem_slice(pem.as_bytes()).unwrap()
    }
}

#[cfg(test)]
mod tests {
    use rcgen::{CertificateParams, DnType};

    use super::test_certs::{ca, client, der, leaf, serving};
    use super::*;

    /// The subject as Go reads it: the last CN, every O in order
    /// (`crypto/x509/pkix` `FillFromRDNSequence`), as upstream's x509 authenticator maps them
    /// to the user and its groups (`CommonNameUserConversion`).
    #[test]
    fn the_subject_gives_the_common_name_and_organizations() {
        let ca = ca("kapi-ca");
        let (pem, _) = client(&ca, "kubernetes-admin", "system:masters");
        assert_eq!(
            certificate_subject(&der(&pem)).unwrap(),
            CertificateSubject {
                common_name: "kubernetes-admin".to_owned(),
                organizations: vec!["system:masters".to_owned()],
            }
        );
        // rcgen keeps one value per attribute type; the same OIDs as custom types give a
        // second CN and a second O.
        let mut params = CertificateParams::default();
        params.distinguished_name = rcgen::DistinguishedName::new();
        let name = &mut params.distinguished_name;
        name.push(DnType::CommonName, "first");
        name.push(DnType::OrganizationName, "group-a");
        name.push(DnType::CustomDnType(vec![2, 5, 4, 10]), "group-b");
        name.push(DnType::CustomDnType(vec![2, 5, 4, 3]), "last");
        let (pem, _) = leaf(&ca, params);
        let subject = certificate_subject(&der(&pem)).unwrap();
        assert_eq!(subject.common_name, "last");
        assert_eq!(subject.organizations, ["group-a", "group-b"]);
        // No CN: empty, which upstream's conversion refuses as no user.
        let mut params = CertificateParams::default();
        params.distinguished_name = rcgen::DistinguishedName::new();
        let (pem, _) = leaf(&ca, params);
        let subject = certificate_subject(&der(&pem)).unwrap();
        assert_eq!(subject.common_name, "");
        assert!(subject.organizations.is_empty());
        assert!(certificate_subject(b"not a certificate").is_err());
        assert!(certificate_subject(&[]).is_err());
    }

    #[test]
    fn unusable_pem_is_refused() {
        let ca = ca("kapi-ca");
        let (cert, key) = serving(&ca);
        let (_, other_key) = serving(&ca);
        assert!(matches!(
            Tls::from_pem(b"", key.as_bytes(), None),
            Err(TlsError::NoCertificate)
        ));
        assert!(Tls::from_pem(cert.as_bytes(), b"", None).is_err());
        let mismatch = Tls::from_pem(cert.as_bytes(), other_key.as_bytes(), None).unwrap_err();
        assert!(matches!(mismatch, TlsError::Config(_)), "{mismatch}");
        assert!(matches!(
            Tls::from_pem(cert.as_bytes(), key.as_bytes(), Some(b"")),
            Err(TlsError::NoClientCa)
        ));
        let tls = Tls::from_pem(cert.as_bytes(), key.as_bytes(), Some(ca.pem.as_bytes())).unwrap();
        assert_eq!(
            format!("{tls:?}"),
            "Tls { certificates: 1, client_cas: 1, reloading: false, .. }"
        );
    }
}
