//! How to reach an API server: where, with which TLS settings, as whom.
//!
//! [`Config`] is plain data with public fields. The loaders fill it in: [`Config::incluster`]
//! here, and in `kubeconfig` [`Config::infer`] (what kubectl would use, else the in-cluster
//! service account), [`Config::from_kubeconfig`] and [`Config::from_kubeconfig_file`]
//! (kubeconfig files, merged as kubectl merges `KUBECONFIG`).
//! [`Client::new`](crate::Client::new) consumes it; credentials that change at run time
//! (rotated token files, exec plugins) are fetched per request by the client's authenticator.
//!
//! The files of this folder:
//!
//! - this file: [`Config`] and its parts, and the in-cluster loader;
//! - `kubeconfig`: the kubeconfig file format (kubectl's `~/.kube/config`) and its loaders. Not
//!   kube-rs's `kube::Config`, which `client/kube/from_config.rs` maps onto a [`Config`];
//! - `auth`: the credentials of each request (tokens, token files, client certificates), which
//!   runs exec credential plugins through `exec`;
//! - `tls`: the rustls configuration;
//! - `files`: bounded reads of credential and configuration files.

pub(super) mod auth;
pub(super) mod exec;
pub(super) mod files;
pub(super) mod kubeconfig;
pub(super) mod tls;

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use secrecy::SecretString;

// Defined with the client's other errors, below this folder, which the client's error wraps.
use super::error::ConfigError;
use crate::limits::{DEFAULT_MAX_OBJECT_SIZE, DEFAULT_READ_IDLE_TIMEOUT};

/// Where a pod's service account credentials are mounted.
const SERVICE_ACCOUNT_DIR: &str = "/var/run/secrets/kubernetes.io/serviceaccount";

/// Everything the HTTP client needs to talk to one API server.
///
/// `Debug` output redacts secrets (tokens, passwords, private keys, and passwords inside proxy
/// URLs).
#[derive(Clone)]
#[non_exhaustive]
pub struct Config {
    /// The API server's base URL, for example `https://127.0.0.1:6443`.
    pub cluster_url: url::Url,
    /// The namespace of the current context (`default` when none is set).
    pub default_namespace: String,
    /// PEM-encoded CA certificates to trust instead of the system roots; `None`: system roots.
    pub root_certs_pem: Option<Vec<u8>>,
    /// The file `root_certs_pem` was read from (kubeconfig `certificate-authority`, the
    /// in-cluster `ca.crt`). When set, the client reads it again when it changes and trusts
    /// the new bundle on new connections, as client-go does for a CA given only as a file.
    pub root_certs_file: Option<PathBuf>,
    /// A client certificate and key for mutual TLS.
    pub identity: Option<Identity>,
    /// The files `identity` was read from (kubeconfig `client-certificate` and `client-key`,
    /// both files). When set, the client reads them again when they change and presents the
    /// new certificate on new connections, as client-go does.
    pub identity_files: Option<IdentityFiles>,
    /// Skip server certificate verification (kubeconfig `insecure-skip-tls-verify`).
    pub accept_invalid_certs: bool,
    /// The name to verify the server certificate against, instead of the URL's host.
    pub tls_server_name: Option<String>,
    /// An HTTP(S) proxy for every request.
    pub proxy_url: Option<url::Url>,
    /// How requests authenticate.
    pub auth: Auth,
    /// Timeout for establishing connections.
    pub connect_timeout: Duration,
    /// How long an exec credential plugin ([`Auth::Exec`]) may run before it is killed and the
    /// requests waiting for its credential fail (default one minute; see
    /// [`Config::exec_timeout`](Config::exec_timeout())).
    pub exec_timeout: Duration,
    /// How long a response may send nothing before the request fails: the time to its headers,
    /// then each wait for the next bytes of its body. It covers lists (each page, prefetched
    /// or not), typed requests and error bodies; a failed list is retried by the reflector.
    /// Watches are silent by design between events and have their own idle deadline: their
    /// server-side timeout plus 30 seconds.
    ///
    /// Default: 90 seconds, kube-apiserver's own limit for a request (its `--request-timeout`,
    /// one minute) plus the same 30 second margin watches get. Raise it for an API server that
    /// takes longer to start answering very large lists.
    pub read_idle_timeout: Duration,
    /// The largest single object a response may carry, in bytes of JSON: a list item, a watch
    /// event's line, the body of a typed request. A larger one fails the request with an error
    /// naming this limit, instead of being buffered whole.
    ///
    /// Default: 16 MiB. kube-apiserver refuses request bodies over 3 MiB and etcd stores at
    /// most 1.5 MiB per object, so real objects stay well below it; raise it only for an API
    /// server (an aggregated one, say) that serves larger objects.
    pub max_object_size: usize,
    /// How long a watch may receive no bytes before the client ends it and the reflector
    /// watches again from its last version. `None`: the watch's server-side timeout plus 30 s,
    /// so that only a connection gone silent (a dead peer, a stalled proxy) is cut.
    ///
    /// A shorter deadline finds a stalled watch sooner, but it must stay above the server's
    /// bookmark interval (about a minute on kube-apiserver), or quiet watches are cut and
    /// reopened for nothing.
    pub watch_idle_timeout: Option<Duration>,
    /// How many watches share one connection to the API server; another connection is opened
    /// for the next ones. Requests that end (lists, gets, writes, Events, Lease renewals) have
    /// a connection of their own, so open watches never hold them up.
    ///
    /// Over HTTP/2 a server advertises how many streams a connection may carry at once
    /// (`SETTINGS_MAX_CONCURRENT_STREAMS`: kube-apiserver's `--http2-max-streams-per-connection`,
    /// 250 unless set; proxies and load balancers in front of it often 100 or 128). A request
    /// past that limit waits for a stream to end, and a watch holds its stream for minutes.
    /// Keep this below the smallest limit between the client and the server.
    ///
    /// Default: 50, half the smallest limit common in front of kube-apiserver (100, HTTP/2's
    /// recommended minimum), so that streams the server has not counted as closed yet (a watch
    /// just ended, its reset still in flight) leave room. 0 counts as 1. Over HTTP/1.1 every
    /// watch has a connection of its own anyway.
    pub watches_per_connection: usize,
}

/// The default [`Config::watches_per_connection`]; see there for why.
pub(crate) const DEFAULT_WATCHES_PER_CONNECTION: usize = 50;

impl Config {
    /// A config for `cluster_url` with no TLS customisation and no authentication (for example
    /// the embedded API server on loopback).
    #[must_use]
    pub fn new(cluster_url: url::Url) -> Self {
        Self {
            cluster_url,
            default_namespace: "default".to_owned(),
            root_certs_pem: None,
            root_certs_file: None,
            identity: None,
            identity_files: None,
            accept_invalid_certs: false,
            tls_server_name: None,
            proxy_url: None,
            auth: Auth::None,
            connect_timeout: Duration::from_secs(30),
            // client-go sets no limit (kubernetes/kubernetes#108849: it must not kill a slow
            // interactive login). Plugins run here are never interactive, and a minute is far
            // more than a non-interactive token exchange takes.
            exec_timeout: Duration::from_secs(60),
            read_idle_timeout: DEFAULT_READ_IDLE_TIMEOUT,
            max_object_size: DEFAULT_MAX_OBJECT_SIZE,
            // Derived from each watch's own timeout; see the field.
            watch_idle_timeout: None,
            watches_per_connection: DEFAULT_WATCHES_PER_CONNECTION,
        }
    }

    /// Kill an exec credential plugin that has not finished after `timeout`.
    ///
    /// The requests that wait for its credential fail with [`ConfigError::Exec`]; requests
    /// whose cached credential has not expired yet never wait for a plugin. The default, one
    /// minute, suits non-interactive plugins; raise it for a plugin that is slow to log in.
    #[must_use]
    pub fn exec_timeout(mut self, timeout: Duration) -> Self {
        self.exec_timeout = timeout;
        self
    }

    /// Sets [`read_idle_timeout`](Self::read_idle_timeout).
    ///
    /// ```
    /// use std::time::Duration;
    /// use informer_client::Config;
    ///
    /// let config = Config::new("https://127.0.0.1:6443".parse().unwrap())
    ///     .read_idle_timeout(Duration::from_secs(300));
    /// assert_eq!(config.read_idle_timeout, Duration::from_secs(300));
    /// ```
    #[must_use]
    pub fn read_idle_timeout(mut self, timeout: Duration) -> Self {
        self.read_idle_timeout = timeout;
        self
    }

    /// Sets [`max_object_size`](Self::max_object_size), in bytes.
    ///
    /// ```
    /// use informer_client::Config;
    ///
    /// let config = Config::new("https://127.0.0.1:6443".parse().unwrap())
    ///     .max_object_size(64 * 1024 * 1024);
    /// assert_eq!(config.max_object_size, 64 * 1024 * 1024);
    /// ```
    #[must_use]
    pub fn max_object_size(mut self, bytes: usize) -> Self {
        self.max_object_size = bytes;
        self
    }

    /// Sets [`watch_idle_timeout`](Self::watch_idle_timeout).
    ///
    /// ```
    /// use std::time::Duration;
    /// use informer_client::Config;
    ///
    /// let config = Config::new("http://127.0.0.1:8080".parse().unwrap())
    ///     .watch_idle_timeout(Duration::from_secs(90));
    /// assert_eq!(config.watch_idle_timeout, Some(Duration::from_secs(90)));
    /// ```
    #[must_use]
    pub fn watch_idle_timeout(mut self, timeout: Duration) -> Self {
        self.watch_idle_timeout = Some(timeout);
        self
    }

    /// Sets [`watches_per_connection`](Self::watches_per_connection): for a server or proxy
    /// that advertises a stream limit at or below the default of 50.
    ///
    /// ```
    /// use informer_client::Config;
    ///
    /// // Behind a proxy that allows 32 streams per connection.
    /// let config = Config::new("https://127.0.0.1:6443".parse().unwrap()).watches_per_connection(30);
    /// assert_eq!(config.watches_per_connection, 30);
    /// ```
    #[must_use]
    pub fn watches_per_connection(mut self, watches: usize) -> Self {
        self.watches_per_connection = watches;
        self
    }

    /// The configuration of the pod this process runs in: its service account's token and CA,
    /// and the API server from `KUBERNETES_SERVICE_HOST` and `KUBERNETES_SERVICE_PORT`.
    ///
    /// The token is used as [`Auth::TokenFile`], so a rotated token is picked up.
    ///
    /// # Errors
    ///
    /// As [`Config::incluster_with`].
    #[doc(alias = "InClusterConfig")]
    pub fn incluster() -> Result<Self, ConfigError> {
        Self::incluster_with(&InClusterOptions::from_env())
    }

    /// [`Config::incluster`] with the environment and the service account directory given.
    ///
    /// - URL: `https://{service_host}:{service_port}`, an IPv6 host in brackets;
    /// - CA: `{service_account_dir}/ca.crt`, read again when it changes (when it cannot be
    ///   read, a warning is logged and the system roots are used, as client-go does);
    /// - namespace: `namespace`, else `{service_account_dir}/namespace`, else `default`;
    /// - auth: [`Auth::TokenFile`] of `{service_account_dir}/token`.
    ///
    /// # Errors
    ///
    /// - [`ConfigError::NotInCluster`] when the host or the port is unset or empty;
    /// - [`ConfigError::InvalidField`] when they do not form a URL;
    /// - [`ConfigError::Io`] when the token file cannot be read.
    pub fn incluster_with(options: &InClusterOptions) -> Result<Self, ConfigError> {
        let host = options.service_host.as_deref().map(str::trim).filter(|host| !host.is_empty());
        let port = options.service_port.as_deref().map(str::trim).filter(|port| !port.is_empty());
        let (Some(host), Some(port)) = (host, port) else {
            return Err(ConfigError::NotInCluster);
        };
        let host = if host.contains(':') && !host.starts_with('[') {
            format!("[{host}]")
        } else {
            host.to_owned()
        };
        let cluster_url = url::Url::parse(&format!("https://{host}:{port}")).map_err(|err| {
            ConfigError::InvalidField {
                file: PathBuf::new(),
                field: "KUBERNETES_SERVICE_HOST, KUBERNETES_SERVICE_PORT".to_owned(),
                reason: format!("not a valid URL: {err}"),
            }
        })?;

        let token_path = options.service_account_dir.join("token");
        // client-go fails when the token cannot be read; the authenticator reads it again later.
        std::fs::File::open(&token_path)
            .map_err(|source| ConfigError::Io { path: token_path.clone(), source })?;

        let ca_path = options.service_account_dir.join("ca.crt");
        let (root_certs_pem, root_certs_file) = match files::read(&ca_path) {
            Ok(pem) => (Some(pem), Some(ca_path)),
            Err(err) => {
                tracing::warn!(path = %ca_path.display(), error = %err, "cannot read the service account CA; using the system roots");
                (None, None)
            }
        };

        let namespace_path = options.service_account_dir.join("namespace");
        let default_namespace = options
            .namespace
            .as_deref()
            .map(str::trim)
            .filter(|namespace| !namespace.is_empty())
            .map(str::to_owned)
            .or_else(|| {
                files::read_to_string(&namespace_path)
                    .ok()
                    .map(|namespace| namespace.trim().to_owned())
                    .filter(|namespace| !namespace.is_empty())
            })
            .unwrap_or_else(|| "default".to_owned());

        tracing::debug!(url = %cluster_url, namespace = %default_namespace, "using the in-cluster service account");
        Ok(Self {
            default_namespace,
            root_certs_pem,
            root_certs_file,
            auth: Auth::TokenFile(token_path),
            ..Self::new(cluster_url)
        })
    }
}

impl fmt::Debug for Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Config")
            .field("cluster_url", &redact_url(&self.cluster_url))
            .field("default_namespace", &self.default_namespace)
            .field(
                "root_certs_pem",
                &self.root_certs_pem.as_ref().map(|pem| format!("{} bytes", pem.len())),
            )
            .field("root_certs_file", &self.root_certs_file)
            .field("identity", &self.identity)
            .field("identity_files", &self.identity_files)
            .field("accept_invalid_certs", &self.accept_invalid_certs)
            .field("tls_server_name", &self.tls_server_name)
            .field("proxy_url", &self.proxy_url.as_ref().map(redact_url))
            .field("auth", &self.auth)
            .field("connect_timeout", &self.connect_timeout)
            .field("exec_timeout", &self.exec_timeout)
            .field("read_idle_timeout", &self.read_idle_timeout)
            .field("max_object_size", &self.max_object_size)
            .field("watch_idle_timeout", &self.watch_idle_timeout)
            .field("watches_per_connection", &self.watches_per_connection)
            .finish()
    }
}

/// `url` with any password replaced, for display.
pub(crate) fn redact_url(url: &url::Url) -> String {
    if url.password().is_none() {
        return url.to_string();
    }
    let mut redacted = url.clone();
    // Only fails for URLs that cannot have credentials, which this one has.
    let _ = redacted.set_password(Some("REDACTED"));
    redacted.to_string()
}

/// Which context, cluster and user of a kubeconfig to use (kubectl's `--context`, `--cluster`
/// and `--user`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[doc(alias = "ConfigOverrides")]
pub struct KubeconfigOptions {
    /// The context to use instead of `current-context`.
    pub context: Option<String>,
    /// The cluster to use instead of the context's.
    pub cluster: Option<String>,
    /// The user to use instead of the context's.
    pub user: Option<String>,
}

impl KubeconfigOptions {
    /// Use the context `name` instead of `current-context`.
    #[must_use]
    pub fn context(mut self, name: impl Into<String>) -> Self {
        self.context = Some(name.into());
        self
    }

    /// Use the cluster `name` instead of the context's.
    #[must_use]
    pub fn cluster(mut self, name: impl Into<String>) -> Self {
        self.cluster = Some(name.into());
        self
    }

    /// Use the user `name` instead of the context's.
    #[must_use]
    pub fn user(mut self, name: impl Into<String>) -> Self {
        self.user = Some(name.into());
        self
    }
}

/// Where [`Config::incluster_with`] finds the pod's service account and the API server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InClusterOptions {
    /// `KUBERNETES_SERVICE_HOST`.
    pub service_host: Option<String>,
    /// `KUBERNETES_SERVICE_PORT`.
    pub service_port: Option<String>,
    /// `POD_NAMESPACE`, which takes precedence over the service account's namespace file.
    pub namespace: Option<String>,
    /// The directory with `token`, `ca.crt` and `namespace`
    /// (`/var/run/secrets/kubernetes.io/serviceaccount` in a pod).
    pub service_account_dir: PathBuf,
}

impl InClusterOptions {
    /// The process's environment and the standard service account directory.
    #[must_use]
    pub fn from_env() -> Self {
        Self {
            service_host: std::env::var("KUBERNETES_SERVICE_HOST").ok(),
            service_port: std::env::var("KUBERNETES_SERVICE_PORT").ok(),
            namespace: std::env::var("POD_NAMESPACE").ok(),
            service_account_dir: PathBuf::from(SERVICE_ACCOUNT_DIR),
        }
    }
}

/// A client certificate and its private key, PEM-encoded.
#[derive(Clone)]
pub struct Identity {
    /// The certificate chain.
    pub cert_pem: Vec<u8>,
    /// The private key.
    pub key_pem: SecretString,
}

impl fmt::Debug for Identity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Identity")
            .field("cert_pem", &format_args!("{} bytes", self.cert_pem.len()))
            .field("key_pem", &"[REDACTED]")
            .finish()
    }
}

/// Where a client certificate and its key are read from, and read again when they change.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IdentityFiles {
    /// The PEM certificate chain.
    pub certificate: PathBuf,
    /// The PEM private key.
    pub key: PathBuf,
}

/// How requests authenticate.
///
/// `Debug` output redacts tokens and passwords.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub enum Auth {
    /// No credentials (or client certificates only).
    #[default]
    None,
    /// A fixed bearer token.
    Bearer(SecretString),
    /// A bearer token read from a file, and read again when the file changes (service account
    /// tokens rotate).
    TokenFile(PathBuf),
    /// HTTP basic authentication.
    Basic {
        /// User name.
        username: String,
        /// Password.
        password: SecretString,
    },
    /// A client-go credential plugin, run for a token and cached until it expires.
    Exec(ExecConfig),
}

/// A `client.authentication.k8s.io` exec credential plugin, as a kubeconfig `user.exec` names it.
///
/// The plugin always runs non-interactively: its standard input is closed, and
/// `KUBERNETES_EXEC_INFO` says `interactive: false`. `Debug` output shows the names of the
/// environment variables but not their values.
#[derive(Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ExecConfig {
    /// `client.authentication.k8s.io/v1` or `.../v1beta1`.
    pub api_version: String,
    /// The program to run (a name looked up in `PATH`, or a path).
    pub command: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Extra environment variables, added to this process's environment.
    pub env: Vec<(String, String)>,
    /// Whether the plugin wants the cluster information in `KUBERNETES_EXEC_INFO`.
    pub provide_cluster_info: bool,
    /// Directory to run it in; `None`: this process's current directory, as kubectl does (the
    /// kubeconfig loader resolves a relative `command` against the kubeconfig file's directory
    /// instead).
    pub working_dir: Option<PathBuf>,
    /// What to tell the user when the command is not installed (kubeconfig `installHint`).
    pub install_hint: Option<String>,
    /// The cluster's `client.authentication.k8s.io/exec` extension, passed to the plugin as
    /// `spec.cluster.config` when it asks for cluster information.
    pub cluster_config: Option<serde_json::Value>,
}

impl ExecConfig {
    /// A plugin that runs `command` and speaks `api_version`
    /// (`client.authentication.k8s.io/v1` or `.../v1beta1`).
    #[must_use]
    pub fn new(api_version: impl Into<String>, command: impl Into<String>) -> Self {
        Self { api_version: api_version.into(), command: command.into(), ..Self::default() }
    }

    /// Add arguments.
    #[must_use]
    pub fn args(mut self, args: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// Add an environment variable.
    #[must_use]
    pub fn env(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.env.push((name.into(), value.into()));
        self
    }

    /// Pass the cluster information in `KUBERNETES_EXEC_INFO`.
    #[must_use]
    pub fn provide_cluster_info(mut self, provide: bool) -> Self {
        self.provide_cluster_info = provide;
        self
    }
}

impl fmt::Debug for ExecConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ExecConfig")
            .field("api_version", &self.api_version)
            .field("command", &self.command)
            // Plugins take secrets as arguments (`--client-secret=...`): count them only.
            .field("args", &format_args!("[{} arguments]", self.args.len()))
            .field(
                "env",
                &self.env.iter().map(|(name, _)| format!("{name}=[REDACTED]")).collect::<Vec<_>>(),
            )
            .field("provide_cluster_info", &self.provide_cluster_info)
            .field("working_dir", &self.working_dir)
            .field("install_hint", &self.install_hint)
            .field("cluster_config", &self.cluster_config.as_ref().map(|_| "{..}"))
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_debug_redacts_the_proxy_password_and_summarises_the_ca() {
        let mut config = Config::new(url::Url::parse("https://10.0.0.1:6443").unwrap());
        config.proxy_url = Some(url::Url::parse("http://me:hunter2@proxy:3128").unwrap());
        config.root_certs_pem = Some(b"-----BEGIN CERTIFICATE-----".to_vec());
        config.auth =
            Auth::Basic { username: "me".to_owned(), password: SecretString::from("hunter2") };
        let debug = format!("{config:?}");
        assert!(!debug.contains("hunter2"), "{debug}");
        assert!(debug.contains("27 bytes"), "{debug}");
        assert!(debug.contains("proxy:3128"), "{debug}");
    }

    #[test]
    fn exec_config_debug_hides_env_values() {
        let exec =
            ExecConfig::new("client.authentication.k8s.io/v1", "plugin").env("API_KEY", "s3cr3t");
        let debug = format!("{exec:?}");
        assert!(debug.contains("API_KEY"), "{debug}");
        assert!(!debug.contains("s3cr3t"), "{debug}");
    }
}
