//! How the server reaches kubelets, as kube-apiserver's kubelet client does
//! (`pkg/kubelet/client/kubelet_client.go`): always HTTPS, presenting the
//! `--kubelet-client-certificate` and key when given, verifying the kubelet's serving
//! certificate against `--kubelet-certificate-authority` when given and not at all otherwise
//! (upstream sets `Insecure` when HTTPS has no CA), at the node address of the first
//! `--kubelet-preferred-address-types` type the Node reports and the port in its
//! `status.daemonEndpoints.kubeletEndpoint` (10250 when it has none).
//!
//! The connection itself is `backend`'s; this module turns a Node object into where to dial
//! and with which TLS settings.

use std::sync::Arc;

use rustls::RootCertStore;
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use serde_json::Value;

use crate::server::http::backend::{self, Backend, Scheme};

/// The kubelet port used when a Node does not report one (`--kubelet-port`'s default).
pub const DEFAULT_KUBELET_PORT: u16 = 10250;

/// The node address types tried in order when none are configured
/// (`--kubelet-preferred-address-types`' default).
pub const DEFAULT_PREFERRED_ADDRESS_TYPES: [&str; 5] = [
    "Hostname",
    "InternalDNS",
    "InternalIP",
    "ExternalDNS",
    "ExternalIP",
];

/// Why a kubelet client setting was refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum KubeletClientError {
    /// The client certificate or its key could not be read.
    #[error("invalid kubelet client certificate: {0}")]
    Certificate(String),
    /// The certificate authority holds no certificate.
    #[error("invalid kubelet certificate authority: {0}")]
    Authority(String),
}

/// How the server connects to kubelets: kube-apiserver's `--kubelet-client-certificate`,
/// `--kubelet-client-key`, `--kubelet-certificate-authority` and
/// `--kubelet-preferred-address-types`.
#[derive(Clone)]
pub struct KubeletClient {
    /// The TLS settings, or why rustls could not build them (then every kubelet request
    /// fails with it).
    config: Result<Arc<rustls::ClientConfig>, String>,
    /// The same without verifying the kubelet, for a log read with
    /// `insecureSkipTLSVerifyBackend` (upstream's `InsecureSkipTLSVerifyTransport`).
    insecure: Result<Arc<rustls::ClientConfig>, String>,
    preferred_address_types: Vec<String>,
    default_port: u16,
}

impl std::fmt::Debug for KubeletClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the key.
        f.debug_struct("KubeletClient")
            .field("preferred_address_types", &self.preferred_address_types)
            .field("default_port", &self.default_port)
            .finish_non_exhaustive()
    }
}

impl Default for KubeletClient {
    fn default() -> Self {
        Self {
            config: backend::unverified_tls(),
            insecure: backend::unverified_tls(),
            preferred_address_types: DEFAULT_PREFERRED_ADDRESS_TYPES
                .iter()
                .map(|t| (*t).to_owned())
                .collect(),
            default_port: DEFAULT_KUBELET_PORT,
        }
    }
}

/// Settings gathered before the TLS configuration is built.
#[derive(Debug, Default)]
pub struct KubeletClientBuilder {
    certificate: Option<(Vec<u8>, Vec<u8>)>,
    authority: Option<Vec<u8>>,
    preferred_address_types: Option<Vec<String>>,
}

impl KubeletClient {
    /// A builder starting from upstream's defaults: no client certificate, no CA (the
    /// kubelet's certificate is not verified), the default address types and port.
    pub fn builder() -> KubeletClientBuilder {
        KubeletClientBuilder::default()
    }

    /// Where the kubelet of `node` (a Node object as JSON) listens, as upstream's
    /// `NodeConnectionInfoGetter` finds it; the error is upstream's text
    /// (`no preferred addresses found; known addresses: [...]`). `insecure`: reached without
    /// verifying the kubelet's certificate.
    pub(crate) fn endpoint(&self, node: &Value, insecure: bool) -> Result<Backend, String> {
        let host = preferred_address(node, &self.preferred_address_types)?;
        let port = node
            .pointer("/status/daemonEndpoints/kubeletEndpoint/Port")
            .and_then(Value::as_i64)
            .filter(|port| *port > 0)
            .and_then(|port| u16::try_from(port).ok())
            .unwrap_or(self.default_port);
        Ok(Backend {
            scheme: Scheme::Https,
            host,
            port,
            tls: if insecure {
                self.insecure.clone()?
            } else {
                self.config.clone()?
            },
        })
    }
}

impl KubeletClientBuilder {
    /// The certificate chain (PEM, leaf first) and its private key (PEM) presented to
    /// kubelets: `--kubelet-client-certificate` and `--kubelet-client-key`.
    pub fn client_certificate(mut self, chain_pem: &[u8], key_pem: &[u8]) -> Self {
        self.certificate = Some((chain_pem.to_vec(), key_pem.to_vec()));
        self
    }

    /// The CA bundle (PEM) kubelets' serving certificates must chain to:
    /// `--kubelet-certificate-authority`. Without it they are not verified, as upstream.
    pub fn certificate_authority(mut self, pem: &[u8]) -> Self {
        self.authority = Some(pem.to_vec());
        self
    }

    /// The node address types tried in order: `--kubelet-preferred-address-types`.
    pub fn preferred_address_types(
        mut self,
        types: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        self.preferred_address_types = Some(types.into_iter().map(Into::into).collect());
        self
    }

    /// The client, or why its certificate or CA could not be read.
    pub fn build(self) -> Result<KubeletClient, KubeletClientError> {
        let certificate = match self.certificate {
            Some((chain, key)) => {
                let chain = CertificateDer::pem_slice_iter(&chain)
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|e| KubeletClientError::Certificate(e.to_string()))?;
                if chain.is_empty() {
                    return Err(KubeletClientError::Certificate(
                        "no certificate in the PEM".to_owned(),
                    ));
                }
                let key = PrivateKeyDer::from_pem_slice(&key)
                    .map_err(|e| KubeletClientError::Certificate(e.to_string()))?;
                Some((chain, key))
            }
            None => None,
        };
        let roots = match self.authority {
            Some(pem) => {
                let mut roots = RootCertStore::empty();
                for certificate in CertificateDer::pem_slice_iter(&pem) {
                    let certificate =
                        certificate.map_err(|e| KubeletClientError::Authority(e.to_string()))?;
                    roots
                        .add(certificate)
                        .map_err(|e| KubeletClientError::Authority(e.to_string()))?;
                }
                if roots.is_empty() {
                    return Err(KubeletClientError::Authority(
                        "no certificate in the PEM".to_owned(),
                    ));
                }
                Some(roots)
            }
            None => None,
        };
        let insecure = match &certificate {
            Some((chain, key)) => backend::unverified_tls_with((chain.clone(), key.clone_key()))
                .map_err(KubeletClientError::Certificate)?,
            None => backend::unverified_tls().map_err(KubeletClientError::Certificate)?,
        };
        let config = match roots {
            Some(roots) => backend::verified_tls(roots, certificate)
                .map_err(KubeletClientError::Certificate)?,
            None => Arc::clone(&insecure),
        };
        let (config, insecure) = (Ok(config), Ok(insecure));
        let defaults = KubeletClient::default();
        Ok(KubeletClient {
            config,
            insecure,
            preferred_address_types: self
                .preferred_address_types
                .unwrap_or(defaults.preferred_address_types),
            default_port: defaults.default_port,
        })
    }
}

/// The node's address of the first preferred type it reports, a `Hostname` falling back to
/// the `kubernetes.io/hostname` label (upstream's `GetPreferredNodeAddress`).
fn preferred_address(node: &Value, types: &[String]) -> Result<String, String> {
    let addresses = node
        .pointer("/status/addresses")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let field = |address: &Value, name: &str| {
        address
            .get(name)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    for wanted in types {
        if let Some(address) = addresses.iter().find(|a| field(a, "type") == *wanted) {
            return Ok(field(address, "address"));
        }
        if wanted == "Hostname"
            && let Some(hostname) = node
                .pointer("/metadata/labels/kubernetes.io~1hostname")
                .and_then(Value::as_str)
                .filter(|h| !h.is_empty())
        {
            return Ok(hostname.to_owned());
        }
    }
    // Go's `%v` of `[]NodeAddress`: `[{InternalIP 1.2.3.4} {Hostname node-1}]`.
    let known: Vec<String> = addresses
        .iter()
        .map(|a| format!("{{{} {}}}", field(a, "type"), field(a, "address")))
        .collect();
    Err(format!(
        "no preferred addresses found; known addresses: [{}]",
        known.join(" ")
    ))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_first_preferred_type_the_node_reports_wins() {
        let types: Vec<String> = DEFAULT_PREFERRED_ADDRESS_TYPES
            .iter()
            .map(|t| (*t).to_owned())
            .collect();
        let node = json!({"status": {"addresses": [
            {"type": "ExternalIP", "address": "1.2.3.5"},
            {"type": "InternalIP", "address": "1.2.3.4"}]}});
        assert_eq!(preferred_address(&node, &types).as_deref(), Ok("1.2.3.4"));
        let labelled = json!({"metadata": {"labels": {"kubernetes.io/hostname": "label-host"}},
            "status": {"addresses": [{"type": "InternalIP", "address": "1.2.3.4"}]}});
        assert_eq!(
            preferred_address(&labelled, &types).as_deref(),
            Ok("label-host")
        );
        // pkg/util/node's TestGetPreferredAddress: "missing address".
        let missing =
            json!({"status": {"addresses": [{"type": "InternalIP", "address": "1.2.3.4"}]}});
        assert_eq!(
            preferred_address(&missing, &["Hostname".to_owned()]),
            Err("no preferred addresses found; known addresses: [{InternalIP 1.2.3.4}]".to_owned())
        );
        assert_eq!(
            preferred_address(&json!({}), &types),
            Err("no preferred addresses found; known addresses: []".to_owned())
        );
    }

    #[test]
    fn the_port_is_the_nodes_or_the_default() {
        let client = KubeletClient::default();
        let node = |port: Value| {
            json!({"status": {"addresses": [{"type": "InternalIP", "address": "10.0.0.9"}],
                "daemonEndpoints": {"kubeletEndpoint": {"Port": port}}}})
        };
        let endpoint = client.endpoint(&node(json!(10255)), false).map(|b| b.port);
        assert_eq!(endpoint, Ok(10255));
        let endpoint = client.endpoint(&node(json!(0)), false).map(|b| b.port);
        assert_eq!(endpoint, Ok(DEFAULT_KUBELET_PORT));
    }
}
