//! How to reach an API server: where, with which TLS settings, as whom.
//!
//! [`Config`] is plain data with public fields. The loaders (`Config::infer`, kubeconfig files,
//! in-cluster service accounts) fill it in; [`Client::new`](super::Client::new) consumes it.

use std::path::PathBuf;
use std::time::Duration;

use secrecy::SecretString;

/// Everything the HTTP client needs to talk to one API server.
///
/// `Debug` output redacts secrets (tokens, private keys).
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Config {
    /// The API server's base URL, for example `https://127.0.0.1:6443`.
    pub cluster_url: url::Url,
    /// The namespace of the current context (`default` when none is set).
    pub default_namespace: String,
    /// PEM-encoded CA certificates to trust instead of the system roots; `None`: system roots.
    pub root_certs_pem: Option<Vec<u8>>,
    /// A client certificate and key for mutual TLS.
    pub identity: Option<Identity>,
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
}

impl Config {
    /// A config for `cluster_url` with no TLS customisation and no authentication (for example
    /// the embedded API server on loopback).
    #[must_use]
    pub fn new(cluster_url: url::Url) -> Self {
        Self {
            cluster_url,
            default_namespace: "default".to_owned(),
            root_certs_pem: None,
            identity: None,
            accept_invalid_certs: false,
            tls_server_name: None,
            proxy_url: None,
            auth: Auth::None,
            connect_timeout: Duration::from_secs(30),
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

impl std::fmt::Debug for Identity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Identity").field("cert_pem", &format_args!("{} bytes", self.cert_pem.len())).field("key_pem", &"[REDACTED]").finish()
    }
}

/// How requests authenticate.
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
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ExecConfig {
    /// `client.authentication.k8s.io/v1` or `.../v1beta1`.
    pub api_version: String,
    /// The program to run.
    pub command: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Extra environment variables.
    pub env: Vec<(String, String)>,
    /// Whether the plugin wants the cluster information in `KUBERNETES_EXEC_INFO`.
    pub provide_cluster_info: bool,
    /// Directory to run it in (the kubeconfig file's directory, for relative commands).
    pub working_dir: Option<PathBuf>,
}
