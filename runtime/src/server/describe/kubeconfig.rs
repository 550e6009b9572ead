//! What a client needs to reach a server: a kubeconfig for its address, written so that no
//! reader ever sees half of it.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

/// A kubeconfig for a server at `addr`: one cluster over plain http, one user without
/// credentials (the server has no authentication), and a current context named `kapi` joining
/// them, with `default` as its namespace.
pub fn kubeconfig(addr: SocketAddr) -> String {
    let config = serde_json::json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "kapi", "cluster": {"server": format!("http://{addr}")}}],
        "users": [{"name": "kapi", "user": {}}],
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
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)?;
    }
    let mut temp = path.as_os_str().to_owned();
    temp.push(".tmp");
    let temp = PathBuf::from(temp);
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    // Private, as kubectl keeps its own: a kubeconfig is how one reaches the server.
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(&temp)?;
    std::io::Write::write_all(&mut file, kubeconfig(addr).as_bytes())?;
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
    fn the_file_is_written_whole_into_a_new_folder() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nested/config");
        let addr: SocketAddr = "127.0.0.1:1".parse().unwrap();
        write_kubeconfig(&path, addr).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), kubeconfig(addr));
        assert!(!dir.path().join("nested/config.tmp").exists());
    }
}
