//! The `kapi` server command: its command line, the catalog it serves, the kubeconfig it
//! writes, and the serve loop from opening the store (the embedded one in a data directory,
//! or etcd with `--etcd-servers`) to a clean shutdown on a signal.
//!
//! `main.rs` only parses and reports; everything here is callable from tests. `logging` sets
//! up the process's log; `pki` makes and keeps the certificates the server serves with by
//! default.

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

pub mod logging;
pub mod pki;
pub mod service_account_key;

use clap::{Args, Parser, Subcommand, ValueEnum};
use kapi::server::{
    AdmissionPlugins, ApiEnablement, Authentication, AuthenticationConfigError, Authorization,
    AuthorizationMode, FeatureGateError, FeatureGates, Features, Handshake, KubeconfigTls,
    NodePortRange, RuntimeConfig, RuntimeConfigError, Server, ServerError, ServiceAccountTokens,
    ServiceCidr, SniPem, Tls, TlsError, TlsPem, TokenFileError,
};
use kapi::storage::encryption::{ConfigError as EncryptionConfigError, EncryptionConfig};
#[cfg(feature = "etcd")]
use kapi::storage::etcd::ConnectError;
use kapi::storage::{EmbeddedOptions, EmbeddedStorage, OpenError, Storage};
#[cfg(feature = "etcd")]
use kapi::storage::{EtcdOptions, EtcdStorage};
use kapi::{KubeVersion, Registry};

/// The `kapi` command line.
#[derive(Debug, Parser)]
#[command(
    name = "kapi",
    version,
    about = "A Kubernetes-compatible API server for typed kinds"
)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands of `kapi`.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve the Kubernetes built-ins and the example API over durable embedded storage, or
    /// over etcd (`--etcd-servers`), where several servers can share one store.
    Serve(ServeArgs),
}

/// Options of `kapi serve`.
#[derive(Debug, Clone, Args)]
#[command(group = clap::ArgGroup::new("audit_backend").multiple(true))]
pub struct ServeArgs {
    /// The address to listen on; port 0 picks a free port.
    #[arg(long, value_name = "ADDR:PORT", default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,

    /// The address the cluster reaches this server by, as kube-apiserver's flag: the
    /// `default/kubernetes` Service's endpoints point at it and the generated serving
    /// certificate names it. Default: the `--listen` address, or for a wildcard `--listen` the
    /// address of the host's default route.
    #[arg(long, value_name = "IP")]
    pub advertise_address: Option<IpAddr>,

    /// The directory holding the embedded store (created if missing; reopened on restart).
    /// Required unless `--etcd-servers` is given.
    #[arg(long, value_name = "DIR", required_unless_present = "etcd_servers")]
    pub data_dir: Option<PathBuf>,

    /// Store objects in etcd at these client URLs (comma-separated) instead of the embedded
    /// store; several servers given the same etcd serve one set of objects.
    #[arg(
        long,
        value_name = "URL,URL",
        value_delimiter = ',',
        conflicts_with = "data_dir"
    )]
    pub etcd_servers: Vec<String>,

    /// Prepended to every key in etcd (the server's own keys start with `/registry`), so
    /// unrelated servers can share one etcd.
    // `conflicts_with` rather than `requires = "etcd_servers"`: clap does not enforce that
    // requirement while `etcd_servers` itself conflicts with a present `--data-dir`, and
    // without a data dir `--data-dir` is required unless etcd servers are given anyway.
    #[arg(long, value_name = "PREFIX", conflicts_with = "data_dir")]
    pub etcd_prefix: Option<String>,

    /// Where to write a kubeconfig pointing at this server (overwritten on every start): over
    /// https it trusts the server's CA and authenticates as `kubernetes-admin` (group
    /// `system:masters`) with a client certificate.
    #[arg(long, value_name = "FILE")]
    pub kubeconfig: PathBuf,

    /// The serving certificate (PEM, leaf first, then intermediates), as kube-apiserver's flag.
    /// Without it the server serves a certificate its own CA signs (see `--cert-dir`).
    #[arg(long, value_name = "FILE", requires = "tls_private_key_file")]
    pub tls_cert_file: Option<PathBuf>,

    /// The private key of `--tls-cert-file` (PEM).
    #[arg(long, value_name = "FILE", requires = "tls_cert_file")]
    pub tls_private_key_file: Option<PathBuf>,

    /// The lowest TLS version served, as kube-apiserver's flag: `VersionTLS12` (the default)
    /// or `VersionTLS13`; `VersionTLS10` and `VersionTLS11` are accepted and serve TLS 1.2 and
    /// up, which is all kapi speaks.
    #[arg(long, value_name = "VERSION", default_value = "")]
    pub tls_min_version: String,

    /// The TLS 1.2 cipher suites offered, by Go's names, as kube-apiserver's flag
    /// (comma-separated); TLS 1.3's are always offered. Names Go knows and kapi does not
    /// implement (CBC, RSA key exchange) are left out with a warning.
    #[arg(long, value_name = "SUITES", value_delimiter = ',')]
    pub tls_cipher_suites: Vec<String>,

    /// A certificate and key served to clients asking for given names (SNI), as
    /// kube-apiserver's flag: `cert,key` serves the names in the certificate, `cert,key:name,*.name`
    /// the names given. Repeat for more; earlier pairs win, given names beat the certificate's.
    #[arg(long, value_name = "CERT,KEY[:NAMES]")]
    pub tls_sni_cert_key: Vec<kapi::server::SniFiles>,

    /// More CAs whose client certificates authenticate users (PEM bundle; CN is the user, O its
    /// groups), as kube-apiserver's flag. The server's own CA, which signs the kubeconfig's
    /// admin certificate, is trusted too.
    #[arg(long, value_name = "FILE")]
    pub client_ca_file: Option<PathBuf>,

    /// Where the generated CA (`ca.crt`, `ca.key`), serving certificate (`apiserver.crt`,
    /// `apiserver.key`) and admin client certificate (`admin.crt`, `admin.key`) are kept and
    /// reused across restarts. Default: `<data-dir>/pki`; required with `--etcd-servers` unless
    /// `--tls-cert-file` is given.
    #[arg(long, value_name = "DIR")]
    pub cert_dir: Option<PathBuf>,

    /// Serve plain HTTP without TLS (and without authentication): only on a loopback
    /// `--listen` address, for tests and local tools.
    #[arg(long, conflicts_with_all = ["tls_cert_file", "tls_private_key_file", "client_ca_file", "cert_dir", "token_auth_file", "authentication_config", "tls_sni_cert_key"])]
    pub plain_http: bool,

    /// Bearer tokens that authenticate users, as kube-apiserver's flag: CSV lines
    /// `token,user,uid[,"group1,group2"]`.
    #[arg(long, value_name = "FILE")]
    pub token_auth_file: Option<PathBuf>,

    /// JWT authenticators, as kube-apiserver's flag: an `AuthenticationConfiguration`
    /// (`apiserver.config.k8s.io/v1beta1` or `v1`) naming issuers, their audiences and how
    /// their tokens' claims map to users (claims or CEL expressions).
    #[arg(long, value_name = "FILE")]
    pub authentication_config: Option<PathBuf>,

    /// `ISSUER=FILE`: the keys of one issuer of `--authentication-config` from a JSON Web Key
    /// Set file instead of the issuer's discovery document, for issuers the server cannot
    /// reach (kapi's own flag; repeat it for several issuers).
    #[arg(long, value_name = "ISSUER=FILE", requires = "authentication_config", value_parser = parse_issuer_keys)]
    pub authentication_config_jwks: Vec<(String, PathBuf)>,

    /// How long a service-account token or JWT that authenticated is remembered rather than
    /// verified again (`0`: not at all, so a deleted account's tokens stop at once): kapi's
    /// flag for kube-apiserver's `TokenSuccessCacheTTL`, 10 s there as here.
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = parse_delay)]
    pub token_success_cache_ttl: Duration,

    /// Whether requests without credentials are served as `system:anonymous` (group
    /// `system:unauthenticated`), whom the bootstrap policy lets read health and version
    /// only; as kube-apiserver's flag, on by default. Not with an `--authentication-config`
    /// whose file has an `anonymous` section, which then decides.
    #[arg(long, value_name = "BOOL", action = clap::ArgAction::Set)]
    pub anonymous_auth: Option<bool>,

    /// The audit policy (an `audit.k8s.io/v1` Policy file), as kube-apiserver's flag: which
    /// requests are audited, and at which level. Needs `--audit-log-path` or
    /// `--audit-webhook-config-file`.
    #[arg(long, value_name = "FILE", requires = "audit_backend")]
    pub audit_policy_file: Option<PathBuf>,

    /// Where audit events are sent as well as, or instead of, the log: a kubeconfig naming the
    /// webhook's server, CA and credentials, as kube-apiserver's flag. Needs
    /// `--audit-policy-file`.
    #[arg(
        long,
        value_name = "FILE",
        requires = "audit_policy_file",
        group = "audit_backend"
    )]
    pub audit_webhook_config_file: Option<PathBuf>,

    /// How events reach the webhook, as kube-apiserver's flag: `batch` (buffered, sent in
    /// batches), `blocking` (each request waits until its events are sent) or
    /// `blocking-strict` (as blocking, and a request fails when its first event cannot be
    /// sent).
    #[arg(long, value_name = "MODE", default_value = "batch")]
    pub audit_webhook_mode: kapi::server::AuditMode,

    /// The most audit events waiting to be sent to the webhook; more are dropped.
    #[arg(long, value_name = "N", default_value_t = 10_000, value_parser = clap::value_parser!(u32).range(1..))]
    pub audit_webhook_batch_buffer_size: u32,

    /// The most audit events in one request to the webhook.
    #[arg(long, value_name = "N", default_value_t = 400, value_parser = clap::value_parser!(u32).range(1..))]
    pub audit_webhook_batch_max_size: u32,

    /// How long a batch waits for more events before it is sent.
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = parse_duration)]
    pub audit_webhook_batch_max_wait: Duration,

    /// Whether batches to the webhook are throttled (`--audit-webhook-batch-throttle-qps`,
    /// `-burst`).
    #[arg(long, value_name = "BOOL", default_value_t = true, action = clap::ArgAction::Set)]
    pub audit_webhook_batch_throttle_enable: bool,

    /// Batches per second sent to the webhook, once the burst is spent.
    #[arg(long, value_name = "QPS", default_value_t = 10.0)]
    pub audit_webhook_batch_throttle_qps: f64,

    /// Batches sent to the webhook at once before the throttle paces them.
    #[arg(long, value_name = "N", default_value_t = 15)]
    pub audit_webhook_batch_throttle_burst: u32,

    /// How long a failed request to the webhook waits before it is tried again (then 1.5 times
    /// longer each time, five tries in all).
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = parse_duration)]
    pub audit_webhook_initial_backoff: Duration,

    /// The audit API version of the events sent to the webhook.
    #[arg(long, value_name = "VERSION", default_value = "audit.k8s.io/v1", value_parser = ["audit.k8s.io/v1"])]
    pub audit_webhook_version: String,

    /// Where audit events are appended, one JSON line each (`-`: standard output), as
    /// kube-apiserver's flag. Needs `--audit-policy-file`.
    #[arg(
        long,
        value_name = "FILE",
        requires = "audit_policy_file",
        group = "audit_backend"
    )]
    pub audit_log_path: Option<PathBuf>,

    /// How events reach the log, as kube-apiserver's flag: `blocking` (each request waits
    /// until its events are written), `blocking-strict` (as blocking, and a request fails when
    /// its first event cannot be written) or `batch` (queued; a full queue drops events).
    #[arg(long, value_name = "MODE", default_value = "blocking")]
    pub audit_log_mode: kapi::server::AuditMode,

    /// The most megabytes the audit log file holds before it is rotated (moved aside as
    /// `<name>-<UTC time><ext>`), as kube-apiserver's flag; 0: never.
    #[arg(long = "audit-log-maxsize", value_name = "MB", default_value_t = 0)]
    pub audit_log_maxsize: u64,

    /// The most rotated audit log files kept, the newest; 0: all. As kube-apiserver's flag.
    #[arg(long = "audit-log-maxbackup", value_name = "N", default_value_t = 0)]
    pub audit_log_maxbackup: usize,

    /// The most days a rotated audit log file is kept, by the time in its name; 0: forever.
    /// As kube-apiserver's flag.
    #[arg(long = "audit-log-maxage", value_name = "DAYS", default_value_t = 0)]
    pub audit_log_maxage: u64,

    /// Whether rotated audit log files are gzipped, as kube-apiserver's flag.
    #[arg(long = "audit-log-compress")]
    pub audit_log_compress: bool,

    /// The `iss` of the service-account tokens issued (`kubectl create token`), and the issuer
    /// whose tokens authenticate; as kube-apiserver's flag.
    #[arg(long, value_name = "URL", default_value = kapi::server::DEFAULT_ISSUER)]
    pub service_account_issuer: String,

    /// The URL of the service-account keys that `/.well-known/openid-configuration` names
    /// (`jwks_uri`), as kube-apiserver's flag; https only. Default: `/openid/v1/jwks` on the
    /// address the document was asked at.
    #[arg(long, value_name = "URL")]
    pub service_account_jwks_uri: Option<String>,

    /// The audiences of the API, comma-separated: tokens are issued for them by default and
    /// authenticate only for one of them. Default: the issuer.
    #[arg(long, value_name = "AUDIENCE,...", value_delimiter = ',')]
    pub api_audiences: Vec<String>,

    /// The private key (PEM: PKCS#8 ECDSA P-256 or RSA, or PKCS#1 RSA) service-account tokens
    /// are signed with. Default: `sa.key` in the cert dir, made on the first start.
    #[arg(long, value_name = "FILE")]
    pub service_account_signing_key_file: Option<PathBuf>,

    /// More public (or private) keys, PEM, that service-account tokens are verified with,
    /// besides the signing key's; may be given more than once.
    #[arg(long, value_name = "FILE")]
    pub service_account_key_file: Vec<PathBuf>,

    /// The longest a requested service-account token lives; longer requests are shortened
    /// (e.g. `24h`).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub service_account_max_token_expiration: Option<Duration>,

    /// Whether a pod's token asked for with the kubelet's 3607 seconds is issued for a year,
    /// stale (logged) after the 3607 seconds, as kube-apiserver's flag (on by default): clients
    /// that never reload their token keep working while they are found.
    #[arg(long, value_name = "BOOL", default_value_t = true, action = clap::ArgAction::Set)]
    pub service_account_extend_token_expiration: bool,

    /// The authorizers asked in order, comma-separated: `Node`, `RBAC`, `AlwaysAllow`,
    /// `AlwaysDeny`. Members of `system:masters` are allowed everything whatever this says.
    /// kubeadm runs `Node,RBAC`: `Node` gives kubelets (`system:node:<name>` in
    /// `system:nodes`) the objects of the pods bound to them.
    #[arg(
        long,
        value_name = "MODE,...",
        value_delimiter = ',',
        default_value = "RBAC"
    )]
    pub authorization_mode: Vec<String>,

    /// The Kubernetes release whose built-in kinds are served and whose deprecation rules apply.
    #[arg(long, value_enum, default_value_t = KubeRelease::V1_36)]
    pub kube_version: KubeRelease,

    /// Turn built-in APIs on or off, as kube-apiserver's flag does: `key=value` pairs,
    /// comma-separated: `v1=true|false` for the core group, `<group>/<version>=true|false`
    /// (e.g. `batch/v1beta1=false`), `<group>/<version>/<resource>=true|false`, and
    /// `api/all`, `api/ga`, `api/beta`, `api/alpha` for every version of that level. Without
    /// it the release's defaults apply: alpha versions off, and betas introduced after 1.24.
    #[arg(long, value_name = "KEY=VALUE,...")]
    pub runtime_config: Vec<String>,

    /// Turn API features on or off, as kube-apiserver's flag does: `Name=true|false` pairs,
    /// comma-separated (`AllAlpha` and `AllBeta` for every alpha or beta gate). The gates are
    /// those of the release's features kapi implements: `CBORServingAndStorage` (1.34, 1.36;
    /// off by default: CBOR requests, answers and watches), `WatchList`,
    /// `AggregatedDiscoveryEndpoint`, `CRDValidationRatcheting` (1.28, off: CEL rules of CRDs
    /// ratchet on updates) where the release can still switch them. Unknown gates and
    /// GA gates set against their locked value are refused with upstream's messages.
    #[arg(long, value_name = "NAME=BOOL,...")]
    pub feature_gates: Vec<String>,
    /// The range Services' cluster IPs are allocated from (a CIDR); its first address is the
    /// `default/kubernetes` Service's. As kube-apiserver's flag.
    #[arg(long, value_name = "CIDR", default_value = "10.0.0.0/24", value_parser = ServiceCidr::parse)]
    pub service_cluster_ip_range: ServiceCidr,

    /// Admission plugins to run besides the default set, comma-separated, as kube-apiserver's
    /// flag: `NodeRestriction` (what kubeadm enables) limits kubelets to their own Node, pods
    /// and Lease. The default plugins kapi runs may be named too; others are refused.
    #[arg(long, value_name = "PLUGIN,...", value_delimiter = ',')]
    pub enable_admission_plugins: Vec<String>,

    /// Admission plugins to turn off, comma-separated, as kube-apiserver's flag: kapi can turn
    /// off only those it does not run by default (`NodeRestriction`).
    #[arg(long, value_name = "PLUGIN,...", value_delimiter = ',')]
    pub disable_admission_plugins: Vec<String>,

    /// Whether containers may be privileged (`securityContext.privileged`). kube-apiserver's
    /// flag, whose default kapi sets as kubeadm, kind and minikube set it (true); false refuses
    /// them as a bare kube-apiserver does.
    #[arg(long, value_name = "BOOL", default_value_t = true, action = clap::ArgAction::Set)]
    pub allow_privileged: bool,

    /// The range node ports are allocated from (`first-last`). As kube-apiserver's flag.
    #[arg(long, value_name = "RANGE", default_value = "30000-32767", value_parser = NodePortRange::parse)]
    pub service_node_port_range: NodePortRange,

    /// The client certificate (PEM) presented to kubelets, for pods' logs, exec, attach and
    /// port forwarding and nodes' proxy. As kube-apiserver's flag.
    #[arg(long, value_name = "FILE", requires = "kubelet_client_key")]
    pub kubelet_client_certificate: Option<PathBuf>,

    /// The private key (PEM) of `--kubelet-client-certificate`.
    #[arg(long, value_name = "FILE", requires = "kubelet_client_certificate")]
    pub kubelet_client_key: Option<PathBuf>,

    /// The CA bundle (PEM) kubelets' serving certificates are verified against; without it
    /// they are not verified, as kube-apiserver does.
    #[arg(long, value_name = "FILE")]
    pub kubelet_certificate_authority: Option<PathBuf>,

    /// The node address types tried in order to reach a kubelet.
    #[arg(
        long,
        value_name = "TYPE,...",
        value_delimiter = ',',
        default_value = "Hostname,InternalDNS,InternalIP,ExternalDNS,ExternalIP"
    )]
    pub kubelet_preferred_address_types: Vec<String>,

    /// Start on a database older than the data directory has served (a backup put back), which
    /// is otherwise refused: its revision jumps past every revision served before and older
    /// history counts as compacted, so resourceVersions keep increasing and clients list
    /// again. Changes made after the copy was taken stay lost. Not needed on later starts.
    #[arg(long, conflicts_with = "etcd_servers")]
    pub accept_restored_database: bool,
    /// The most memory the embedded store's page cache may hold, in bytes (suffixes `Ki`, `Mi`,
    /// `Gi` allowed). The cache fills only with pages the server reads or writes, so resident
    /// memory grows with the data used, up to about this much on top of the rest of the
    /// server; a store smaller than it ends up held whole in memory.
    #[arg(long, value_name = "BYTES", default_value = "1Gi", value_parser = parse_bytes)]
    pub storage_cache_size: usize,

    /// Log verbosity, as kube-apiserver's klog levels: 0-2 startup, shutdown and faults; 3-4
    /// also one `HTTP` line per request; 5+ everything. `RUST_LOG`, when set, replaces it.
    #[arg(short = 'v', long = "v", value_name = "LEVEL", default_value_t = 0)]
    pub verbosity: u8,

    /// How log lines are written to standard error: `text` or `json`.
    #[arg(long, alias = "log-format", value_enum, default_value_t = logging::LogFormat::Text)]
    pub logging_format: logging::LogFormat,

    /// How long to go on serving after SIGTERM or SIGINT with `/readyz` already failing, so
    /// load balancers stop sending first (e.g. `5s`; default 0).
    #[arg(long, value_name = "DURATION", value_parser = parse_delay, default_value = "0")]
    pub shutdown_delay_duration: Duration,

    /// Encrypt the resources an `EncryptionConfiguration` file lists before they are stored, as
    /// kube-apiserver's flag: `apiserver.config.k8s.io/v1` with `aescbc`, `aesgcm`, `secretbox`
    /// or `identity` providers (the first encrypts writes, all read).
    #[arg(long, value_name = "FILE")]
    pub encryption_provider_config: Option<PathBuf>,

    /// How often the store compacts its history (e.g. `1s`, `500ms`, `5m`); for tests.
    #[arg(long, hide = true, value_name = "DURATION", value_parser = parse_duration)]
    pub compaction_interval: Option<Duration>,
}

/// The Kubernetes releases whose built-ins this binary carries (from `kapi-k8s`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum KubeRelease {
    /// Kubernetes 1.20.
    #[value(name = "1.20")]
    V1_20,
    /// Kubernetes 1.28.
    #[value(name = "1.28")]
    V1_28,
    /// Kubernetes 1.34.
    #[value(name = "1.34")]
    V1_34,
    /// Kubernetes 1.36, the newest.
    #[value(name = "1.36")]
    V1_36,
}

impl KubeRelease {
    /// The release as the server's version.
    pub fn version(self) -> KubeVersion {
        match self {
            Self::V1_20 => KubeVersion::new(1, 20),
            Self::V1_28 => KubeVersion::new(1, 28),
            Self::V1_34 => KubeVersion::new(1, 34),
            Self::V1_36 => KubeVersion::new(1, 36),
        }
    }
}

/// Why `kapi serve` stopped with an error.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// The async runtime could not be created.
    #[error("cannot start the async runtime: {0}")]
    Runtime(std::io::Error),
    /// The data directory could not be opened.
    #[error(transparent)]
    Open(#[from] OpenError),
    /// etcd could not be reached.
    #[cfg(feature = "etcd")]
    #[error(transparent)]
    Etcd(#[from] ConnectError),
    /// `--etcd-servers` was given to a binary built without the etcd engine.
    #[cfg(not(feature = "etcd"))]
    #[error(
        "this kapi was built without the etcd engine: build it with `cargo build -p kapi-apiserver --features etcd`"
    )]
    EtcdNotBuilt,
    /// `--runtime-config` was refused.
    #[error("invalid --runtime-config: {0}")]
    RuntimeConfig(#[from] RuntimeConfigError),
    /// `--feature-gates` was refused: pflag's wording around the feature gate's message.
    #[error("invalid argument {value:?} for \"--feature-gates\" flag: {error}")]
    FeatureGates {
        /// The flag's value (every occurrence, comma-joined).
        value: String,
        /// The feature gate's refusal.
        error: FeatureGateError,
    },
    /// `--encryption-provider-config` was refused: upstream's message.
    #[error("invalid --encryption-provider-config {path}: {error}")]
    Encryption {
        /// The file.
        path: PathBuf,
        /// Why, with the field paths at fault.
        error: EncryptionConfigError,
    },
    /// Neither a data directory nor etcd servers were given.
    #[error("give --data-dir for the embedded store or --etcd-servers for etcd")]
    NoStore,
    /// `--service-account-jwks-uri` is no https URL (kube-apiserver's words).
    #[error("service-account-jwks-uri requires https scheme, parsed as: {0}")]
    JwksUri(String),
    /// `--plain-http` on an address other machines can reach.
    #[error(
        "--plain-http serves without TLS or authentication, so it is allowed only on a loopback address, and --listen {listen} is not one: listen on 127.0.0.1 or [::1], or drop --plain-http"
    )]
    PlainHttpNotLoopback {
        /// The listen address.
        listen: SocketAddr,
    },
    /// No place to keep the generated certificates.
    #[error(
        "--etcd-servers without --data-dir needs --cert-dir, where the server's CA, serving and admin certificates are kept across restarts (or --tls-cert-file and --tls-private-key-file)"
    )]
    NoCertDir,
    /// A certificate, key or CA file could not be read.
    #[error("cannot read {path}: {source}")]
    ReadTlsFile {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The certificates could not be made or kept.
    #[error(transparent)]
    Pki(#[from] pki::PkiError),
    /// The kubelet client certificate or CA could not be used.
    #[error(transparent)]
    KubeletClient(#[from] kapi::server::KubeletClientError),
    /// The service-account keys could not be read, made or kept.
    #[error(transparent)]
    ServiceAccountKey(#[from] service_account_key::ServiceAccountKeyError),
    /// `--token-auth-file` could not be read.
    #[error(transparent)]
    TokenFile(#[from] TokenFileError),
    /// `--authentication-config` could not be read or is invalid.
    #[error(transparent)]
    AuthenticationConfig(#[from] AuthenticationConfigError),
    /// `--audit-policy-file` without a backend to send events to.
    #[error("--audit-policy-file needs --audit-log-path or --audit-webhook-config-file")]
    NoAuditBackend,
    /// `--anonymous-auth` given beside a configuration file with an `anonymous` section.
    #[error(
        "anonymous: Forbidden: --anonymous-auth flag cannot be set when anonymous field is configured in authentication configuration file"
    )]
    AnonymousTwice,
    /// The audit policy or log could not be used.
    #[error(transparent)]
    Audit(#[from] kapi::server::AuditError),
    /// `--authorization-mode` names a mode kapi does not have.
    #[error("invalid --authorization-mode: {0}")]
    AuthorizationMode(String),
    /// `--enable-admission-plugins` or `--disable-admission-plugins` was refused.
    #[error("{0}")]
    AdmissionPlugins(String),
    /// The certificates and keys do not make a TLS configuration.
    #[error(transparent)]
    Tls(#[from] TlsError),
    /// The server failed to start or while serving.
    #[error(transparent)]
    Server(#[from] ServerError),
    /// The kubeconfig could not be written.
    #[error("cannot write kubeconfig {path}: {source}")]
    Kubeconfig {
        /// The kubeconfig file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// Waiting for SIGINT/SIGTERM failed.
    #[error("cannot listen for shutdown signals: {0}")]
    Signal(std::io::Error),
}

/// Splits `text` into its leading decimal number and the unit after it; `what` names the
/// expected form in the error.
fn number_and_unit<'a>(text: &'a str, what: &str) -> Result<(u64, &'a str), String> {
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number = number
        .parse()
        .map_err(|_| format!("{text:?} is not {what}"))?;
    Ok((number, unit))
}

/// Parses a duration such as `1s`, `250ms`, `5m` or `1h` (a bare number means seconds).
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let (number, unit) = number_and_unit(text, "a duration like 1s, 500ms or 5m")?;
    let millis = match unit {
        "ms" => Some(number),
        "" | "s" => number.checked_mul(1000),
        "m" => number.checked_mul(60_000),
        "h" => number.checked_mul(3_600_000),
        _ => return Err(format!("{text:?} has an unknown unit (use ms, s, m or h)")),
    };
    match millis {
        Some(0) => Err("the duration must be positive".to_owned()),
        Some(ms) => Ok(Duration::from_millis(ms)),
        None => Err(format!("{text:?} is too long")),
    }
}

/// Parses a delay: a duration as [`parse_duration`] reads it, or `0`.
pub fn parse_delay(text: &str) -> Result<Duration, String> {
    if text.trim().trim_end_matches(['m', 's', 'h']) == "0" {
        return Ok(Duration::ZERO);
    }
    parse_duration(text)
}

/// Parses a size in bytes: a number, optionally followed by `Ki`, `Mi` or `Gi`.
pub fn parse_bytes(text: &str) -> Result<usize, String> {
    let text = text.trim();
    let (number, unit) = number_and_unit(text, "a size like 268435456, 256Mi or 1Gi")?;
    let number = usize::try_from(number).map_err(|_| format!("{text:?} is too large"))?;
    let scale: usize = match unit {
        "" => 1,
        "Ki" => 1 << 10,
        "Mi" => 1 << 20,
        "Gi" => 1 << 30,
        _ => return Err(format!("{text:?} has an unknown unit (use Ki, Mi or Gi)")),
    };
    number
        .checked_mul(scale)
        .ok_or_else(|| format!("{text:?} is too large"))
}

/// The catalog `kapi serve` serves: the built-ins of `release` plus the example API.
pub fn registry_for(release: KubeRelease) -> Registry {
    let mut registry = Registry::new();
    match release {
        KubeRelease::V1_20 => kapi_k8s::v1_20::register(&mut registry),
        KubeRelease::V1_28 => kapi_k8s::v1_28::register(&mut registry),
        KubeRelease::V1_34 => kapi_k8s::v1_34::register(&mut registry),
        KubeRelease::V1_36 => kapi_k8s::v1_36::register(&mut registry),
    }
    kapi_example::register(&mut registry);
    registry
}

/// Runs `kapi serve` to completion on its own runtime; `ready` is called with the bound address
/// once the server accepts requests and the kubeconfig is written.
pub fn run_serve(args: ServeArgs, ready: impl FnOnce(SocketAddr)) -> Result<(), ServeError> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(ServeError::Runtime)?;
    let served = runtime.block_on(async move {
        // Handlers go in before the server is ready, so a signal sent right after the address
        // is printed is a clean shutdown rather than the default action (death).
        let shutdown = shutdown_signal()?;
        serve(args, shutdown, ready).await
    });
    // Background tasks still holding the store end with the runtime; the last handle's drop
    // closes it (the embedded engine joins its writer thread).
    drop(runtime);
    if served.is_ok() {
        tracing::info!("store closed");
    }
    served
}

/// Serves until `shutdown` resolves, then stops the server and closes the store.
pub async fn serve(
    args: ServeArgs,
    shutdown: impl Future<Output = Result<(), ServeError>>,
    ready: impl FnOnce(SocketAddr),
) -> Result<(), ServeError> {
    let registry = registry_for(args.kube_version);
    let enablement = enablement_for(&registry, &args)?;
    let features = features_for(&args)?;
    let security = security_for(&args)?;
    let encryption = encryption_for(&args)?;
    let storage = open_storage(&args).await?;
    // The kubeconfig is in place before the first request is answered: whoever sees the
    // server ready (its `/readyz`, the printed address) can read it.
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .map_err(ServerError::Io)?;
    let addr = listener.local_addr().map_err(ServerError::Io)?;
    let written = match &security {
        None => kapi::server::write_kubeconfig(&args.kubeconfig, addr),
        Some((_, access)) => kapi::server::write_kubeconfig_tls(&args.kubeconfig, addr, access),
    };
    written.map_err(|source| ServeError::Kubeconfig {
        path: args.kubeconfig.clone(),
        source,
    })?;
    let mut builder = Server::builder()
        .authorization(authorization_for(&args)?)
        .service_account_tokens(service_accounts_for(&args)?);
    if let Some(policy) = &args.audit_policy_file {
        builder = builder.audit(audit_for(&args, policy)?);
    }
    if let Some((tls, access)) = security {
        if let Some(ca) = access.certificate_authority {
            builder = builder.root_ca(ca);
        }
        builder = builder.tls(tls).authentication(authentication_for(&args)?);
    }
    let running = builder
        .registry(registry)
        .api_enablement(enablement)
        .features(features)
        .storage(storage)
        .encryption(encryption)
        .kube_version(args.kube_version.version())
        .advertise_address(advertised(&args))
        .service_cluster_ip_range(args.service_cluster_ip_range)
        .service_node_port_range(args.service_node_port_range)
        .allow_privileged(args.allow_privileged)
        .admission_plugins(admission_plugins_for(&args)?)
        .kubelet_client(kubelet_client_for(&args)?)
        .shutdown_delay(args.shutdown_delay_duration)
        .start_on(listener)
        .await?;
    tracing::info!(%addr, kube_version = %args.kube_version.version(), "serving");
    ready(addr);
    let waited = shutdown.await;
    tracing::info!("shutdown requested");
    // Stop serving even when the signal listener failed, then report whichever came first.
    // The server bounds its own drain (60 s, upstream's request timeout).
    let stopped = running.shutdown().await;
    waited?;
    stopped?;
    tracing::info!("server stopped");
    Ok(())
}

/// `ISSUER=FILE` of `--authentication-config-jwks`; the issuer is a URL, so the file is what
/// follows its last `=`.
fn parse_issuer_keys(text: &str) -> Result<(String, PathBuf), String> {
    match text.rsplit_once('=') {
        Some((issuer, file)) if !issuer.is_empty() && !file.is_empty() => {
            Ok((issuer.to_owned(), PathBuf::from(file)))
        }
        _ => Err(format!("{text:?} is not ISSUER=FILE")),
    }
}

/// How requests over TLS are authenticated: client certificates of the trusted CAs (the
/// kubeconfig's admin certificate among them), the bearer tokens of `--token-auth-file`, the
/// JWTs of the issuers of `--authentication-config`, and anonymous requests unless
/// `--anonymous-auth=false`. Over `--plain-http` nothing is: every request is
/// `system:unsecured`, as upstream's old insecure port served it.
pub fn authentication_for(args: &ServeArgs) -> Result<Authentication, ServeError> {
    let mut authentication = Authentication::required()
        .anonymous(args.anonymous_auth != Some(false))
        .token_success_cache_ttl(args.token_success_cache_ttl);
    if let Some(path) = &args.token_auth_file {
        authentication = authentication.token_file(path)?;
    }
    if let Some(path) = &args.authentication_config {
        // No issuer may claim the server's own service-account tokens.
        let own = [args.service_account_issuer.clone()];
        let key_files = args.authentication_config_jwks.iter().cloned().collect();
        authentication = authentication.authentication_config(path, &own, &key_files)?;
        if authentication.anonymous_configured_by_file() && args.anonymous_auth.is_some() {
            // Upstream's words (`ToAuthenticationConfig`), a field error on `anonymous`.
            return Err(ServeError::AnonymousTwice);
        }
    }
    Ok(authentication)
}

/// How service-account tokens are issued and verified: `--service-account-issuer`,
/// `--api-audiences`, the signing key of `--service-account-signing-key-file` or else the cert
/// dir's `sa.key` (made on the first start; in memory for one run over `--plain-http` without
/// a data dir), and the keys of `--service-account-key-file`.
pub fn service_accounts_for(args: &ServeArgs) -> Result<ServiceAccountTokens, ServeError> {
    let key = match &args.service_account_signing_key_file {
        Some(path) => service_account_key::read_signing_key(path)?,
        None => {
            let dir = cert_dir_of(args).filter(|_| !args.plain_http);
            let (key, made) = service_account_key::ensure(dir.as_deref())?;
            if made {
                tracing::info!(cert_dir = ?dir, "generated the service-account signing key");
            }
            key
        }
    };
    let mut extra = Vec::new();
    for path in &args.service_account_key_file {
        extra.extend(service_account_key::read_verification_keys(path)?);
    }
    let mut tokens = ServiceAccountTokens::new(key)
        .issuer(args.service_account_issuer.clone())
        .api_audiences(args.api_audiences.clone())
        .verification_keys(extra)
        .extend_expiration(args.service_account_extend_token_expiration);
    if let Some(max) = args.service_account_max_token_expiration {
        tokens = tokens.max_expiration(max);
    }
    if let Some(uri) = &args.service_account_jwks_uri {
        let host = uri
            .strip_prefix("https://")
            .map(|rest| rest.split('/').next());
        if !matches!(host, Some(Some(host)) if !host.is_empty()) {
            return Err(ServeError::JwksUri(uri.clone()));
        }
        tokens = tokens.jwks_uri(uri.clone());
    }
    Ok(tokens)
}

/// The cert dir: `--cert-dir`, else `<data-dir>/pki`.
/// The audit backends of `--audit-log-path` and `--audit-webhook-config-file` (one of them is
/// there: clap requires it beside the policy).
fn audit_for(
    args: &ServeArgs,
    policy: &std::path::Path,
) -> Result<kapi::server::Audit, ServeError> {
    use kapi::server::{Audit, LogRotation, WebhookOptions};
    let webhook = WebhookOptions {
        buffer_size: args.audit_webhook_batch_buffer_size as usize,
        max_batch_size: args.audit_webhook_batch_max_size as usize,
        max_batch_wait: args.audit_webhook_batch_max_wait,
        throttle: args.audit_webhook_batch_throttle_enable.then_some((
            args.audit_webhook_batch_throttle_qps,
            args.audit_webhook_batch_throttle_burst,
        )),
        initial_backoff: args.audit_webhook_initial_backoff,
        mode: args.audit_webhook_mode,
    };
    let audit = match (&args.audit_log_path, &args.audit_webhook_config_file) {
        (Some(log), webhook_config) => {
            let rotation = LogRotation {
                max_size_mb: args.audit_log_maxsize,
                max_backups: args.audit_log_maxbackup,
                max_age_days: args.audit_log_maxage,
                compress: args.audit_log_compress,
            };
            let audit = Audit::rotated(policy, log, rotation)?.log_mode(args.audit_log_mode);
            match webhook_config {
                Some(config) => audit.and_webhook(config, webhook)?,
                None => audit,
            }
        }
        (None, Some(config)) => Audit::webhook(policy, config, webhook)?,
        (None, None) => return Err(ServeError::NoAuditBackend),
    };
    Ok(audit)
}

/// The advertised address: `--advertise-address`, or what the listen address implies (upstream
/// treats an unspecified one as not given).
fn advertised(args: &ServeArgs) -> IpAddr {
    args.advertise_address
        .filter(|ip| !ip.is_unspecified())
        .unwrap_or_else(|| kapi::server::default_advertise_address(args.listen.ip()))
}

fn cert_dir_of(args: &ServeArgs) -> Option<PathBuf> {
    args.cert_dir
        .clone()
        .or_else(|| args.data_dir.as_ref().map(|data| data.join("pki")))
}

/// The admission plugins of `--enable-admission-plugins` and `--disable-admission-plugins`.
pub fn admission_plugins_for(args: &ServeArgs) -> Result<AdmissionPlugins, ServeError> {
    AdmissionPlugins::from_flags(
        &args.enable_admission_plugins,
        &args.disable_admission_plugins,
    )
    .map_err(ServeError::AdmissionPlugins)
}

/// The authorizers of `--authorization-mode`.
pub fn authorization_for(args: &ServeArgs) -> Result<Authorization, ServeError> {
    let modes = args
        .authorization_mode
        .iter()
        .map(|mode| mode.parse::<AuthorizationMode>())
        .collect::<Result<Vec<_>, _>>()
        .map_err(ServeError::AuthorizationMode)?;
    Ok(Authorization::modes(modes))
}

/// How the server reaches kubelets, from the `--kubelet-*` flags.
pub fn kubelet_client_for(args: &ServeArgs) -> Result<kapi::server::KubeletClient, ServeError> {
    let read = |path: &PathBuf| {
        std::fs::read(path).map_err(|source| ServeError::ReadTlsFile {
            path: path.clone(),
            source,
        })
    };
    let mut builder = kapi::server::KubeletClient::builder()
        .preferred_address_types(args.kubelet_preferred_address_types.iter().cloned());
    if let (Some(cert), Some(key)) = (&args.kubelet_client_certificate, &args.kubelet_client_key) {
        builder = builder.client_certificate(&read(cert)?, &read(key)?);
    }
    if let Some(ca) = &args.kubelet_certificate_authority {
        builder = builder.certificate_authority(&read(ca)?);
    }
    Ok(builder.build()?)
}

/// How the server is reached: `None` for `--plain-http` (refused off loopback), else its TLS
/// configuration and what the kubeconfig carries: the operator's serving certificate or one the
/// server's CA signs ([`pki`]), client certificates trusted when the server's CA or
/// `--client-ca-file` signed them, and the admin's client certificate.
pub fn security_for(args: &ServeArgs) -> Result<Option<(Tls, KubeconfigTls)>, ServeError> {
    if args.plain_http {
        if !args.listen.ip().is_loopback() {
            return Err(ServeError::PlainHttpNotLoopback {
                listen: args.listen,
            });
        }
        return Ok(None);
    }
    let read = |path: &PathBuf| {
        std::fs::read_to_string(path).map_err(|source| ServeError::ReadTlsFile {
            path: path.clone(),
            source,
        })
    };
    let given = match (&args.tls_cert_file, &args.tls_private_key_file) {
        (Some(cert), Some(key)) => Some(pki::Pair {
            cert: read(cert)?,
            key: read(key)?,
        }),
        _ => None,
    };
    let cert_dir = match (&args.cert_dir, &args.data_dir) {
        (Some(dir), _) => Some(dir.clone()),
        (None, Some(data)) => Some(data.join("pki")),
        (None, None) if given.is_some() => None,
        (None, None) => return Err(ServeError::NoCertDir),
    };
    let service_ip = args.service_cluster_ip_range.first();
    let names = pki::Names::for_server(args.listen.ip(), advertised(args), service_ip);
    let made = pki::ensure(cert_dir.as_deref(), given.is_none().then_some(&names))?;
    if !made.made.is_empty() {
        match &cert_dir {
            Some(dir) => {
                tracing::info!(cert_dir = %dir.display(), files = ?made.made, "generated certificates")
            }
            None => tracing::warn!(
                "generated the CA and admin certificate in memory: without --cert-dir they change on every start"
            ),
        }
    }
    let (serving, certificate_authority) = match given {
        Some(given) => {
            let root = pki::chain_root(&given.cert);
            (given, root)
        }
        None => {
            let generated = made.serving.ok_or_else(|| pki::PkiError::Make {
                what: "serving",
                error: "no serving certificate was made".to_owned(),
            })?;
            (generated, Some(made.ca.clone()))
        }
    };
    if let Some(path) = &args.client_ca_file {
        read(path)?;
    }
    // The operator's files are read again when they change, as kube-apiserver's dynamic
    // certificate controllers read them; what the server made itself does not change.
    let operator_pair = args
        .tls_cert_file
        .clone()
        .zip(args.tls_private_key_file.clone());
    let client_ca_file = args.client_ca_file.clone();
    let mut watched: Vec<PathBuf> = client_ca_file.iter().cloned().collect();
    if let Some((cert, key)) = &operator_pair {
        watched.extend([cert.clone(), key.clone()]);
    }
    let sni = args.tls_sni_cert_key.clone();
    for pair in &sni {
        watched.extend([
            PathBuf::from(&pair.cert_file),
            PathBuf::from(&pair.key_file),
        ]);
    }
    let handshake = Handshake::from_flags(&args.tls_min_version, &args.tls_cipher_suites)?;
    for warning in handshake.warnings() {
        tracing::warn!("{warning}");
    }
    let server_ca = made.ca.clone();
    let tls = Tls::reloading(watched, handshake, move || {
        let file = |path: &PathBuf| {
            std::fs::read(path).map_err(|source| TlsError::Read {
                path: path.clone(),
                source,
            })
        };
        let (cert, key) = match &operator_pair {
            Some((cert, key)) => (file(cert)?, file(key)?),
            None => (
                serving.cert.clone().into_bytes(),
                serving.key.clone().into_bytes(),
            ),
        };
        let mut client_cas = server_ca.clone().into_bytes();
        if let Some(path) = &client_ca_file {
            if !client_cas.ends_with(b"\n") {
                client_cas.push(b'\n');
            }
            client_cas.extend(file(path)?);
        }
        let sni = sni
            .iter()
            .map(|pair| {
                Ok(SniPem {
                    name: format!("sni-serving-cert::{}::{}", pair.cert_file, pair.key_file),
                    chain: file(&PathBuf::from(&pair.cert_file))?,
                    key: file(&PathBuf::from(&pair.key_file))?,
                    names: pair.names.clone(),
                })
            })
            .collect::<Result<_, TlsError>>()?;
        Ok(TlsPem {
            chain: cert,
            key,
            client_ca: Some(client_cas),
            sni,
        })
    })?;
    let access = KubeconfigTls {
        certificate_authority,
        client_certificate: made.admin.cert,
        client_key: made.admin.key,
    };
    Ok(Some((tls, access)))
}

/// What the server serves of `registry`: the release's default group-versions, changed by
/// `--runtime-config`.
pub fn enablement_for(registry: &Registry, args: &ServeArgs) -> Result<ApiEnablement, ServeError> {
    let mut config = RuntimeConfig::default();
    for flag in &args.runtime_config {
        config.add(flag);
    }
    Ok(ApiEnablement::for_release(
        registry,
        args.kube_version.version(),
        &config,
    )?)
}

/// The API features on: the release's defaults, changed by `--feature-gates`.
pub fn features_for(args: &ServeArgs) -> Result<Features, ServeError> {
    let value = args.feature_gates.join(",");
    let refused = |error| ServeError::FeatureGates {
        value: value.clone(),
        error,
    };
    let gates = FeatureGates::parse(&value).map_err(refused)?;
    Features::for_release(args.kube_version.version(), &gates).map_err(refused)
}

/// The encryption at rest `--encryption-provider-config` asks for, if any.
pub fn encryption_for(args: &ServeArgs) -> Result<Option<EncryptionConfig>, ServeError> {
    let Some(path) = &args.encryption_provider_config else {
        return Ok(None);
    };
    EncryptionConfig::from_file(path, args.kube_version.version())
        .map(Some)
        .map_err(|error| ServeError::Encryption {
            path: path.clone(),
            error,
        })
}

/// Opens the store the arguments select: etcd when servers are given, else the embedded one.
pub async fn open_storage(args: &ServeArgs) -> Result<Arc<dyn Storage>, ServeError> {
    if !args.etcd_servers.is_empty() {
        #[cfg(feature = "etcd")]
        {
            let mut options = EtcdOptions::new(args.etcd_servers.iter().map(|s| s.trim()))
                .with_prefix(args.etcd_prefix.as_deref().unwrap_or(""));
            if let Some(interval) = args.compaction_interval {
                options = options.with_compaction_interval(Some(interval));
            }
            return Ok(Arc::new(EtcdStorage::connect(options).await?));
        }
        #[cfg(not(feature = "etcd"))]
        return Err(ServeError::EtcdNotBuilt);
    }
    let dir = args.data_dir.as_ref().ok_or(ServeError::NoStore)?;
    let mut options = EmbeddedOptions::default()
        .with_accept_restored_database(args.accept_restored_database)
        .with_cache_size(args.storage_cache_size);
    if let Some(interval) = args.compaction_interval {
        options = options.with_compaction_interval(Some(interval));
    }
    let store = EmbeddedStorage::open(dir, options).await?;
    let opened = store.opened();
    if opened.migrated {
        tracing::info!(data_dir = %dir.display(), "embedded store upgraded to the current format");
    }
    if let Some(from) = opened.bumped_from {
        tracing::warn!(
            data_dir = %dir.display(),
            from_revision = from,
            "restored database accepted: its revision moved past every one served before"
        );
    }
    Ok(Arc::new(store))
}

/// Installs SIGINT and SIGTERM handlers now; the future resolves on the first of them.
/// Must be called inside a tokio runtime.
pub fn shutdown_signal() -> Result<impl Future<Output = Result<(), ServeError>>, ServeError> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let mut interrupt = signal(SignalKind::interrupt()).map_err(ServeError::Signal)?;
        let mut terminate = signal(SignalKind::terminate()).map_err(ServeError::Signal)?;
        Ok(async move {
            tokio::select! {
                _ = interrupt.recv() => Ok(()),
                _ = terminate.recv() => Ok(()),
            }
        })
    }
    #[cfg(not(unix))]
    {
        Ok(async { tokio::signal::ctrl_c().await.map_err(ServeError::Signal) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_with_units() {
        let cases = [
            ("1s", Ok(Duration::from_secs(1))),
            ("250ms", Ok(Duration::from_millis(250))),
            ("5m", Ok(Duration::from_secs(300))),
            ("2h", Ok(Duration::from_secs(7200))),
            ("3", Ok(Duration::from_secs(3))),
        ];
        for (text, want) in cases {
            assert_eq!(parse_duration(text), want, "{text}");
        }
        for bad in ["", "0s", "1d", "s", "-1s", "99999999999999999999h"] {
            assert!(parse_duration(bad).is_err(), "{bad:?} must be rejected");
        }
    }

    #[test]
    fn sizes_parse_with_units() {
        assert_eq!(parse_bytes("4096"), Ok(4096));
        assert_eq!(parse_bytes("256Mi"), Ok(256 << 20));
        assert_eq!(parse_bytes("1Gi"), Ok(1 << 30));
        assert_eq!(parse_bytes("8Ki"), Ok(8192));
        for bad in ["", "1G", "Mi", "-1", "99999999999999999999Gi"] {
            assert!(parse_bytes(bad).is_err(), "{bad:?} must be rejected");
        }
    }

    #[test]
    fn the_command_line_defaults_to_the_newest_release() {
        let cli = Cli::try_parse_from([
            "kapi",
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--data-dir",
            "/tmp/d",
            "--kubeconfig",
            "/tmp/k",
        ])
        .unwrap();
        let Command::Serve(args) = cli.command;
        assert_eq!(args.kube_version, KubeRelease::V1_36);
        assert_eq!(args.listen.port(), 0);
        assert_eq!(args.compaction_interval, None);
        assert_eq!(args.storage_cache_size, 1 << 30);
        assert_eq!(args.verbosity, 0);
        assert_eq!(args.logging_format, logging::LogFormat::Text);
        assert_eq!(args.shutdown_delay_duration, Duration::ZERO);
        let args = serve_args(&[
            "--v=3",
            "--logging-format=json",
            "--shutdown-delay-duration=5s",
        ])
        .unwrap();
        assert_eq!(args.verbosity, 3);
        assert_eq!(args.logging_format, logging::LogFormat::Json);
        assert_eq!(args.shutdown_delay_duration, Duration::from_secs(5));
        let args = serve_args(&["-v", "4", "--log-format", "text"]).unwrap();
        assert_eq!(args.verbosity, 4);
        for (flag, release) in [
            ("1.20", KubeRelease::V1_20),
            ("1.28", KubeRelease::V1_28),
            ("1.34", KubeRelease::V1_34),
            ("1.36", KubeRelease::V1_36),
        ] {
            let args = serve_args(&["--kube-version", flag]).unwrap();
            assert_eq!(args.kube_version, release);
        }
        assert!(serve_args(&["--kube-version", "1.19"]).is_err());
    }

    /// `kapi serve --data-dir d --kubeconfig k` with `extra` after them.
    fn serve_args(extra: &[&str]) -> Result<ServeArgs, clap::Error> {
        let mut argv = vec!["kapi", "serve", "--data-dir", "d", "--kubeconfig", "k"];
        argv.extend_from_slice(extra);
        Cli::try_parse_from(argv).map(|cli| {
            let Command::Serve(args) = cli.command;
            args
        })
    }

    #[test]
    fn the_store_is_chosen_by_flag() {
        let parse = |extra: &[&str]| {
            let mut argv = vec!["kapi", "serve", "--kubeconfig", "k"];
            argv.extend_from_slice(extra);
            Cli::try_parse_from(argv).map(|cli| {
                let Command::Serve(args) = cli.command;
                args
            })
        };
        let embedded = parse(&["--data-dir", "d"]).unwrap();
        assert_eq!(embedded.data_dir, Some(PathBuf::from("d")));
        assert!(embedded.etcd_servers.is_empty());
        assert!(!embedded.accept_restored_database);
        let restored = parse(&["--data-dir", "d", "--accept-restored-database"]).unwrap();
        assert!(restored.accept_restored_database);
        let etcd = parse(&[
            "--etcd-servers",
            "http://127.0.0.1:1,http://127.0.0.1:2",
            "--etcd-prefix",
            "/a",
        ])
        .unwrap();
        assert_eq!(
            etcd.etcd_servers,
            ["http://127.0.0.1:1", "http://127.0.0.1:2"]
        );
        assert_eq!(etcd.etcd_prefix.as_deref(), Some("/a"));
        assert_eq!(etcd.data_dir, None);
        let refused: [&[&str]; 4] = [
            &[],
            &["--data-dir", "d", "--etcd-servers", "http://127.0.0.1:1"],
            &["--data-dir", "d", "--etcd-prefix", "/a"],
            &[
                "--etcd-servers",
                "http://127.0.0.1:1",
                "--accept-restored-database",
            ],
        ];
        for argv in refused {
            assert!(parse(argv).is_err(), "{argv:?} must be refused");
        }
    }

    /// `--plain-http` only on loopback; generated certificates need a place to live.
    #[test]
    fn plain_http_and_the_cert_dir_are_checked() {
        let plain = |listen: &str| {
            let mut args = serve_args(&["--plain-http"]).unwrap();
            args.listen = listen.parse().unwrap();
            security_for(&args).map(|security| security.is_none())
        };
        assert!(plain("127.0.0.1:0").unwrap());
        assert!(plain("[::1]:8080").unwrap());
        let refused = plain("0.0.0.0:0").unwrap_err();
        assert_eq!(
            refused.to_string(),
            "--plain-http serves without TLS or authentication, so it is allowed only on a loopback address, and --listen 0.0.0.0:0 is not one: listen on 127.0.0.1 or [::1], or drop --plain-http"
        );
        assert!(serve_args(&["--plain-http", "--cert-dir", "x"]).is_err());
        assert!(serve_args(&["--tls-cert-file", "x"]).is_err());
        let etcd = Cli::try_parse_from([
            "kapi",
            "serve",
            "--kubeconfig",
            "k",
            "--etcd-servers",
            "http://127.0.0.1:1",
        ])
        .unwrap();
        let Command::Serve(args) = etcd.command;
        assert!(matches!(security_for(&args), Err(ServeError::NoCertDir)));
        // The cert dir defaults to `<data-dir>/pki`, where the certificates are kept.
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        let mut args = serve_args(&[]).unwrap();
        args.data_dir = Some(data.clone());
        let (_, access) = security_for(&args).unwrap().unwrap();
        let ca = std::fs::read_to_string(data.join("pki").join(pki::CA_CERT)).unwrap();
        assert_eq!(access.certificate_authority.as_deref(), Some(ca.as_str()));
        let admin = std::fs::read_to_string(data.join("pki").join(pki::ADMIN_CERT)).unwrap();
        assert_eq!(access.client_certificate, admin);
    }

    #[cfg(feature = "etcd")]
    #[tokio::test]
    async fn an_unreachable_etcd_is_a_clear_error() {
        let args = Cli::try_parse_from([
            "kapi",
            "serve",
            "--kubeconfig",
            "k",
            "--etcd-servers",
            "http://127.0.0.1:9",
        ])
        .unwrap();
        let Command::Serve(mut args) = args.command;
        args.listen = "127.0.0.1:0".parse().unwrap();
        let started = std::time::Instant::now();
        let error = open_storage(&args).await.unwrap_err();
        assert!(matches!(error, ServeError::Etcd(_)), "{error}");
        assert!(error.to_string().contains("127.0.0.1:9"), "{error}");
        assert!(started.elapsed() < Duration::from_secs(30));
    }

    #[test]
    fn registries_follow_the_release() {
        let old = registry_for(KubeRelease::V1_20);
        let new = registry_for(KubeRelease::V1_36);
        assert!(old.get("extensions", "v1beta1", "ingresses").is_some());
        assert!(new.get("extensions", "v1beta1", "ingresses").is_none());
        for registry in [&old, &new] {
            assert!(registry.get("", "v1", "configmaps").is_some());
            assert!(registry.get("widgets.kapi.dev", "v1", "widgets").is_some());
        }
    }

    fn args(release: KubeRelease, runtime_config: &[&str]) -> ServeArgs {
        let mut argv = vec!["kapi", "serve", "--kubeconfig", "k", "--data-dir", "d"];
        for flag in runtime_config {
            argv.extend(["--runtime-config", flag]);
        }
        let Command::Serve(mut args) = Cli::parse_from(argv).command;
        args.kube_version = release;
        args
    }

    /// `--authorization-mode=Node,RBAC` and `--enable-admission-plugins=NodeRestriction`, as
    /// kubeadm runs kube-apiserver; unknown plugins are refused with upstream's
    /// `AdmissionOptions.Validate` message.
    #[test]
    fn kubeadms_authorization_and_admission_flags() {
        let argv = [
            "kapi",
            "serve",
            "--kubeconfig",
            "k",
            "--data-dir",
            "d",
            "--authorization-mode=Node,RBAC",
            "--enable-admission-plugins=NodeRestriction,ResourceQuota",
        ];
        let Command::Serve(args) = Cli::parse_from(argv).command;
        assert_eq!(
            authorization_for(&args).unwrap(),
            Authorization::modes([AuthorizationMode::Node, AuthorizationMode::Rbac])
        );
        assert_eq!(
            admission_plugins_for(&args).unwrap(),
            AdmissionPlugins::with_node_restriction()
        );
        let Command::Serve(defaults) =
            Cli::parse_from(["kapi", "serve", "--kubeconfig", "k", "--data-dir", "d"]).command;
        assert_eq!(
            authorization_for(&defaults).unwrap(),
            Authorization::default()
        );
        assert_eq!(
            admission_plugins_for(&defaults).unwrap(),
            AdmissionPlugins::default()
        );
        let argv = [
            "kapi",
            "serve",
            "--kubeconfig",
            "k",
            "--data-dir",
            "d",
            "--enable-admission-plugins=PodSecurityPolicy",
        ];
        let Command::Serve(unknown) = Cli::parse_from(argv).command;
        assert_eq!(
            admission_plugins_for(&unknown).unwrap_err().to_string(),
            r#"enable-admission-plugins plugin "PodSecurityPolicy" is unknown"#
        );
    }

    /// A refused `--encryption-provider-config` names the file and upstream's field error.
    #[test]
    fn encryption_config_errors_name_the_file_and_field() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("enc.yaml");
        std::fs::write(
            &path,
            "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: [secrets]\n  providers: [{aescbc: {keys: [{name: k, secret: c2hvcnQ=}]}}]\n",
        )
        .unwrap();
        let mut with = args(KubeRelease::V1_36, &[]);
        with.encryption_provider_config = Some(path.clone());
        let error = encryption_for(&with).unwrap_err().to_string();
        assert_eq!(
            error,
            format!(
                "invalid --encryption-provider-config {}: error while parsing file: resources[0].providers[0].aescbc.keys[0].secret: Invalid value: \"REDACTED\": secret is not of the expected length, got 5, expected one of [16 24 32]",
                path.display()
            )
        );
        assert!(
            encryption_for(&args(KubeRelease::V1_36, &[]))
                .unwrap()
                .is_none()
        );
    }

    /// Each release's catalog serves what its kube-apiserver serves by default
    /// (`DefaultAPIResourceConfigSource`): every built-in group-version of the catalog is in the
    /// release table, alpha ones off.
    #[test]
    fn every_built_in_group_version_is_gated() {
        for release in [
            KubeRelease::V1_20,
            KubeRelease::V1_28,
            KubeRelease::V1_34,
            KubeRelease::V1_36,
        ] {
            let registry = registry_for(release);
            let enablement = enablement_for(&registry, &args(release, &[])).unwrap();
            let mut off = 0;
            for kind in registry.kinds() {
                let gvk = &kind.info.gvk;
                let served = enablement.serves(&gvk.group, &gvk.version, &kind.info.plural);
                off += usize::from(!served);
                if gvk.group == "widgets.kapi.dev" {
                    assert!(served, "the example API is not a built-in");
                    continue;
                }
                if gvk.version.contains("alpha") {
                    assert!(!served, "{release:?} {gvk}");
                }
                // The table alone knows the group-version: without the catalog, switching it
                // is not refused as unregistered.
                let key = if gvk.group.is_empty() {
                    "v1=true".to_owned()
                } else {
                    format!("{}/{}=true", gvk.group, gvk.version)
                };
                ApiEnablement::for_release(
                    &Registry::new(),
                    release.version(),
                    &RuntimeConfig::parse(&key),
                )
                .unwrap_or_else(|e| panic!("{release:?} {key}: {e}"));
            }
            assert!(off > 0, "{release:?}");
        }
    }

    #[test]
    fn runtime_config_flags_add_up_and_refusals_name_the_flag() {
        let release = KubeRelease::V1_28;
        let registry = registry_for(release);
        let on = enablement_for(
            &registry,
            &args(release, &["api/all=false,apps/v1=true", "batch/v1"]),
        )
        .unwrap();
        assert!(on.serves("apps", "v1", "deployments"));
        assert!(on.serves("batch", "v1", "jobs"));
        assert!(!on.serves("", "v1", "pods"));
        let err = enablement_for(&registry, &args(release, &["api/all=false"])).unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid --runtime-config: invalid key with only api/all=false"
        );
    }

    /// `--feature-gates` as kube-apiserver's flag: `CBORServingAndStorage` is unknown before
    /// 1.32 and settable in 1.34; refusals are pflag's `invalid argument` around the gate's
    /// message (k8s.io/component-base `featuregate/feature_gate.go`).
    #[test]
    fn feature_gates_follow_the_release() {
        let with = |release, gates: &[&str]| {
            let mut args = args(release, &[]);
            args.feature_gates = gates.iter().map(|g| (*g).to_owned()).collect();
            features_for(&args)
        };
        assert!(with(KubeRelease::V1_34, &["CBORServingAndStorage=true"]).is_ok());
        assert!(
            with(
                KubeRelease::V1_36,
                &["WatchList=false", "CBORServingAndStorage=true"]
            )
            .is_ok()
        );
        assert_eq!(
            with(KubeRelease::V1_28, &["CBORServingAndStorage=true"])
                .unwrap_err()
                .to_string(),
            "invalid argument \"CBORServingAndStorage=true\" for \"--feature-gates\" flag: unrecognized feature gate: CBORServingAndStorage"
        );
        assert_eq!(
            with(KubeRelease::V1_36, &["AggregatedDiscoveryEndpoint=false"])
                .unwrap_err()
                .to_string(),
            "invalid argument \"AggregatedDiscoveryEndpoint=false\" for \"--feature-gates\" flag: cannot set feature gate AggregatedDiscoveryEndpoint to false, feature is locked to true"
        );
    }

    #[tokio::test]
    async fn serve_writes_the_kubeconfig_and_stops_on_shutdown() {
        let dir = tempfile::tempdir().unwrap();
        // Plain HTTP on loopback, everything else as the command line's defaults.
        let args = ServeArgs {
            listen: "127.0.0.1:0".parse().unwrap(),
            data_dir: Some(dir.path().join("data")),
            kubeconfig: dir.path().join("nested/kubeconfig"),
            ..serve_args(&["--plain-http"]).unwrap()
        };
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let mut seen = None;
        let shutdown = async move {
            let _ = rx.await;
            Ok(())
        };
        let serving = serve(args, shutdown, |addr| {
            seen = Some(addr);
            let _ = tx.send(());
        });
        tokio::time::timeout(Duration::from_secs(20), serving)
            .await
            .unwrap()
            .unwrap();
        let addr = seen.unwrap();
        let written = std::fs::read_to_string(dir.path().join("nested/kubeconfig")).unwrap();
        assert!(written.contains(&format!("http://{addr}")), "{written}");
        assert!(
            dir.path()
                .join("data")
                .join(kapi::storage::embedded::DATA_FILE)
                .exists()
        );
    }

    /// Whoever sees `/readyz` answer 200 can read the kubeconfig: the first 200 a client
    /// polling from the very start gets finds the file in place.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_kubeconfig_is_in_place_before_the_server_is_ready() {
        use std::io::{Read, Write};
        let dir = tempfile::tempdir().unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let kubeconfig = dir.path().join("kubeconfig");
        // Plain HTTP on loopback, everything else as the command line's defaults.
        let args = ServeArgs {
            listen: SocketAddr::from(([127, 0, 0, 1], port)),
            data_dir: Some(dir.path().join("data")),
            kubeconfig: kubeconfig.clone(),
            ..serve_args(&["--plain-http"]).unwrap()
        };
        let poller = tokio::task::spawn_blocking(move || {
            let started = std::time::Instant::now();
            while started.elapsed() < Duration::from_secs(20) {
                let Ok(mut stream) = std::net::TcpStream::connect(("127.0.0.1", port)) else {
                    continue;
                };
                let asked = stream.write_all(
                    b"GET /readyz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
                );
                let mut answer = String::new();
                if asked.is_ok()
                    && stream.read_to_string(&mut answer).is_ok()
                    && answer.starts_with("HTTP/1.1 200")
                {
                    return kubeconfig.exists();
                }
            }
            panic!("/readyz never answered 200");
        });
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let serving = tokio::spawn(serve(
            args,
            async move {
                let _ = rx.await;
                Ok(())
            },
            |_| {},
        ));
        let found = poller.await.unwrap();
        let _ = tx.send(());
        serving.await.unwrap().unwrap();
        assert!(found, "/readyz answered 200 before the kubeconfig existed");
    }
}
