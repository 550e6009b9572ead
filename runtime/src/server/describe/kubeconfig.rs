//! What a client needs to reach a server: a kubeconfig for its address (over http, or over
//! https with the CA and a client certificate), written so that no reader ever sees half of it.

use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};

use base64::Engine as _;

/// What a kubeconfig for a server over https carries: the CA bundle its serving certificate
/// chains to, and the user's client certificate and key, all PEM.
#[derive(Debug, Clone)]
pub struct KubeconfigTls {
    /// The CA bundle clients verify the server with (`certificate-authority-data`); `None`
    /// leaves the choice to the client (the system's roots).
    pub certificate_authority: Option<String>,
    /// The user's client certificate (`client-certificate-data`).
    pub client_certificate: String,
    /// The client certificate's private key (`client-key-data`).
    pub client_key: String,
}

/// A kubeconfig for a server at `addr` over plain http: one cluster, one user without
/// credentials (the server has no authentication), and a current context named `kapi` joining
/// them, with `default` as its namespace.
pub fn kubeconfig(addr: SocketAddr) -> String {
    render(addr, None)
}

/// A kubeconfig for a server at `addr` over https: as [`kubeconfig`], the cluster with `tls`'s
/// CA and the user with its client certificate and key.
pub fn kubeconfig_tls(addr: SocketAddr, tls: &KubeconfigTls) -> String {
    render(addr, Some(tls))
}

/// The address clients dial: a wildcard listen address is reached on loopback.
fn dialed(addr: SocketAddr) -> SocketAddr {
    match addr.ip() {
        IpAddr::V4(ip) if ip.is_unspecified() => {
            SocketAddr::from((std::net::Ipv4Addr::LOCALHOST, addr.port()))
        }
        IpAddr::V6(ip) if ip.is_unspecified() => {
            SocketAddr::from((std::net::Ipv6Addr::LOCALHOST, addr.port()))
        }
        _ => addr,
    }
}

fn render(addr: SocketAddr, tls: Option<&KubeconfigTls>) -> String {
    let base64 = |pem: &str| base64::engine::general_purpose::STANDARD.encode(pem);
    let addr = dialed(addr);
    let (cluster, user) = match tls {
        None => (
            serde_json::json!({"server": format!("http://{addr}")}),
            serde_json::json!({}),
        ),
        Some(tls) => {
            let mut cluster = serde_json::json!({"server": format!("https://{addr}")});
            if let Some(ca) = &tls.certificate_authority {
                cluster["certificate-authority-data"] = base64(ca).into();
            }
            let user = serde_json::json!({
                "client-certificate-data": base64(&tls.client_certificate),
                "client-key-data": base64(&tls.client_key),
            });
            (cluster, user)
        }
    };
    let config = serde_json::json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "kapi", "cluster": cluster}],
        "users": [{"name": "kapi", "user": user}],
        "contexts": [{
            "name": "kapi",
            "context": {"cluster": "kapi", "user": "kapi", "namespace": "default"},
        }],
        "current-context": "kapi",
        "preferences": {},
    });
    // JSON is valid YAML too; YAML is only what people expect to read in a kubeconfig.
    serde_yaml_ng::to_string(&config).unwrap_or_else(|_| config.to_string())
}

/// Writes [`kubeconfig`]`(addr)` to `path` (creating its folder, the file readable by its owner
/// only) through a sibling temporary file renamed into place, so a reader never sees a
/// half-written kubeconfig.
pub fn write_kubeconfig(path: &Path, addr: SocketAddr) -> std::io::Result<()> {
    // Private, as kubectl keeps its own: a kubeconfig is how one reaches the server.
    write_atomically(path, &kubeconfig(addr), 0o600)
}

/// Writes [`kubeconfig_tls`]`(addr, tls)` to `path` as [`write_kubeconfig`] writes.
pub fn write_kubeconfig_tls(
    path: &Path,
    addr: SocketAddr,
    tls: &KubeconfigTls,
) -> std::io::Result<()> {
    write_atomically(path, &kubeconfig_tls(addr, tls), 0o600)
}

/// Writes `text` to `path` with permission bits `mode` (on Unix), creating its folder, through
/// a sibling temporary file synced and renamed into place, so that a reader never sees half of
/// it: kubeconfigs, and certificates and keys.
pub fn write_atomically(path: &Path, text: &str, mode: u32) -> std::io::Result<()> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)?;
    }
    let mut temp = path.as_os_str().to_owned();
    temp.push(".tmp");
    let temp = PathBuf::from(temp);
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, mode);
    #[cfg(not(unix))]
    let _ = mode;
    let mut file = options.open(&temp)?;
    std::io::Write::write_all(&mut file, text.as_bytes())?;
    file.sync_all()?;
    drop(file);
    std::fs::rename(&temp, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kubeconfig_points_at_the_server() {
        let addr: SocketAddr = "127.0.0.1:4321".parse().unwrap();
        let config: serde_json::Value = serde_yaml_ng::from_str(&kubeconfig(addr)).unwrap();
        assert_eq!(
            config["clusters"][0]["cluster"]["server"],
            "http://127.0.0.1:4321"
        );
        assert_eq!(config["current-context"], "kapi");
        assert_eq!(config["contexts"][0]["context"]["user"], "kapi");
        assert_eq!(config["contexts"][0]["context"]["namespace"], "default");
    }

    #[test]
    fn a_tls_kubeconfig_carries_the_ca_and_the_client_certificate() {
        use base64::Engine as _;
        let decode = |value: &serde_json::Value| {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(value.as_str().unwrap())
                .unwrap();
            String::from_utf8(bytes).unwrap()
        };
        let tls = KubeconfigTls {
            certificate_authority: Some("CA PEM".to_owned()),
            client_certificate: "CERT PEM".to_owned(),
            client_key: "KEY PEM".to_owned(),
        };
        // A wildcard listen address is dialed on loopback.
        let addr: SocketAddr = "0.0.0.0:6443".parse().unwrap();
        let config: serde_json::Value =
            serde_yaml_ng::from_str(&kubeconfig_tls(addr, &tls)).unwrap();
        let cluster = &config["clusters"][0]["cluster"];
        assert_eq!(cluster["server"], "https://127.0.0.1:6443");
        assert_eq!(decode(&cluster["certificate-authority-data"]), "CA PEM");
        let user = &config["users"][0]["user"];
        assert_eq!(decode(&user["client-certificate-data"]), "CERT PEM");
        assert_eq!(decode(&user["client-key-data"]), "KEY PEM");
        let v6: SocketAddr = "[::]:1".parse().unwrap();
        let config: serde_json::Value = serde_yaml_ng::from_str(&kubeconfig(v6)).unwrap();
        assert_eq!(config["clusters"][0]["cluster"]["server"], "http://[::1]:1");
    }

    #[test]
    fn the_file_is_written_whole_into_a_new_folder() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nested/config");
        let addr: SocketAddr = "127.0.0.1:1".parse().unwrap();
        write_kubeconfig(&path, addr).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), kubeconfig(addr));
        assert!(!dir.path().join("nested/config.tmp").exists());
    }
}
