//! [`HttpsServer`]: an HTTPS server a test starts in its own process, for the servers kapi
//! calls (admission webhooks, the issuers of JWT authentication, fake kubelets): bound to
//! 127.0.0.1 on a free port, with its own CA (for `caBundle` and `certificateAuthority`),
//! serving an axum router whose handlers may take over a connection with an upgrade (`101`).
//! [`HttpsServer::plain`] serves the same without TLS (a pod's or a Service's backend).
//! Dropping it stops the server and joins its thread.

use std::net::SocketAddr;
use std::sync::Arc;

use hyper_util::rt::TokioIo;
use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair, SanType};
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// A running HTTPS server.
#[derive(Debug)]
pub struct HttpsServer {
    addr: SocketAddr,
    ca_pem: String,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for HttpsServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl HttpsServer {
    /// Serves `router` over HTTPS with a certificate for 127.0.0.1 of a new CA.
    pub fn start(router: axum::Router) -> Result<Self, String> {
        let failed = |what: &str, e: &dyn std::fmt::Display| format!("{what}: {e}");
        let mut ca_params = CertificateParams::default();
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let ca_key = KeyPair::generate().map_err(|e| failed("CA key", &e))?;
        let ca_pem = ca_params
            .self_signed(&ca_key)
            .map_err(|e| failed("CA certificate", &e))?
            .pem();
        let issuer = Issuer::new(ca_params, ca_key);
        let mut params = CertificateParams::default();
        params.subject_alt_names = vec![SanType::IpAddress([127, 0, 0, 1].into())];
        let key = KeyPair::generate().map_err(|e| failed("serving key", &e))?;
        let cert = params
            .signed_by(&key, &issuer)
            .map_err(|e| failed("serving certificate", &e))?;
        let chain = vec![
            CertificateDer::from_pem_slice(cert.pem().as_bytes())
                .map_err(|e| failed("serving certificate", &e))?,
        ];
        let key = PrivateKeyDer::from_pem_slice(key.serialize_pem().as_bytes())
            .map_err(|e| failed("serving key", &e))?;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| failed("TLS versions", &e))?
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .map_err(|e| failed("TLS config", &e))?;
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        Self::serve(router, Some(acceptor), ca_pem)
    }

    /// Serves `router` over plain HTTP (there is no CA: [`HttpsServer::ca_pem`] is empty and
    /// [`HttpsServer::url`] says `https` all the same; use [`HttpsServer::addr`]).
    pub fn plain(router: axum::Router) -> Result<Self, String> {
        Self::serve(router, None, String::new())
    }

    fn serve(
        router: axum::Router,
        acceptor: Option<tokio_rustls::TlsAcceptor>,
        ca_pem: String,
    ) -> Result<Self, String> {
        let failed = |what: &str, e: &dyn std::fmt::Display| format!("{what}: {e}");
        let listener =
            std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| failed("bind", &e))?;
        listener
            .set_nonblocking(true)
            .map_err(|e| failed("listener", &e))?;
        let addr = listener.local_addr().map_err(|e| failed("listener", &e))?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| failed("runtime", &e))?;
        let (stop, mut stopped) = tokio::sync::oneshot::channel();
        let thread = std::thread::spawn(move || {
            runtime.block_on(async move {
                let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
                    return;
                };
                loop {
                    let accepted = tokio::select! {
                        _ = &mut stopped => break,
                        accepted = listener.accept() => accepted,
                    };
                    let Ok((tcp, _)) = accepted else { continue };
                    let acceptor = acceptor.clone();
                    let router = router.clone();
                    tokio::spawn(async move {
                        let service = hyper_util::service::TowerToHyperService::new(router);
                        let http = hyper::server::conn::http1::Builder::new();
                        match acceptor {
                            Some(acceptor) => {
                                let Ok(tls) = acceptor.accept(tcp).await else {
                                    return;
                                };
                                let _ = http
                                    .serve_connection(TokioIo::new(tls), service)
                                    .with_upgrades()
                                    .await;
                            }
                            None => {
                                let _ = http
                                    .serve_connection(TokioIo::new(tcp), service)
                                    .with_upgrades()
                                    .await;
                            }
                        }
                    });
                }
            });
        });
        Ok(Self {
            addr,
            ca_pem,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// Where it listens.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `https://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("https://{}", self.addr)
    }

    /// The PEM of the CA its certificate is signed by.
    pub fn ca_pem(&self) -> &str {
        &self.ca_pem
    }
}
