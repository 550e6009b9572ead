//! `kube` clients for a [`TestServer`] (feature `kube`).

use crate::TestServer;

impl TestServer {
    /// A `kube::Config` for the server: its URL, namespace `default`, no credentials.
    pub fn kube_config(&self) -> kube::Config {
        let url = self
            .url()
            .parse()
            .expect("an http URL of 127.0.0.1 and a port is a valid URI");
        let mut config = kube::Config::new(url);
        config.default_namespace = "default".to_owned();
        config
    }

    /// A `kube::Client` for the server, as [`TestServer::kube_config`] describes it.
    pub fn client(&self) -> Result<kube::Client, kube::Error> {
        kube::Client::try_from(self.kube_config())
    }
}
