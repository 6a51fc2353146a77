//! A kube-rs `kube::Config` as this crate's [`Config`] (feature `kube`): a program configures
//! one thing once, and builds both clients from it.
//!
//! Where it sits: beside the kubeconfig file loader (`client/config/kubeconfig.rs`), as another
//! way to fill in a [`Config`]. kube-rs has read the kubeconfig (or the service account)
//! already; this maps what it read, field by field (the table is on `Config`'s
//! `TryFrom<kube::Config>`), and refuses what this crate's client cannot honour, naming the
//! field and saying what to do.
//!
//! What is refused works through the `kube::Client` itself:
//! `SharedInformerFactory::new(Client::from(kube_client))` lists and watches through kube-rs's own stack.

use std::path::{Path, PathBuf};

use base64::Engine as _;
use secrecy::{ExposeSecret, SecretString};

use crate::api_client::Client;
use crate::config::{Auth, Config, ExecConfig, Identity, IdentityFiles};
use crate::error::{ClientError, ConfigError};

/// What to do instead, for settings only kube-rs's stack honours.
const USE_KUBE_CLIENT: &str = "use the kube::Client itself as this client's transport \
     (Client::from(kube_client), for example SharedInformerFactory::new(Client::from(kube_client))), \
     whose stack sends it";

#[cfg_attr(docsrs, doc(cfg(all(feature = "http", feature = "kube"))))]
impl TryFrom<kube::Config> for Config {
    type Error = ConfigError;

    /// The settings of `config`, field by field:
    ///
    /// | `kube::Config` | [`Config`] |
    /// |---|---|
    /// | `cluster_url`, `default_namespace`, `accept_invalid_certs`, `tls_server_name`, `proxy_url` | the same fields |
    /// | `root_cert` (DER) | [`root_certs_pem`](Config::root_certs_pem), as PEM |
    /// | `root_cert_file` | `root_certs_pem`, read now, and [`root_certs_file`](Config::root_certs_file): read again when it changes (kube-rs reads it again every minute) |
    /// | `accept_invalid_certs` together with `root_cert` or `root_cert_file` | an error, as in a kubeconfig (client-go refuses a CA with the insecure flag) |
    /// | `connect_timeout` | [`connect_timeout`](Config::connect_timeout); `None` (no timeout) keeps the default, 30 s |
    /// | `read_timeout` | [`read_idle_timeout`](Config::read_idle_timeout), which does not apply to watches (they have their own idle deadline); `None` keeps the default, 90 s |
    /// | `write_timeout`, `reset_reader_on_write` | not used: request bodies are small, and the wait for the answer is bounded from the moment the request is sent |
    /// | `disable_compression` | nothing to do: this client never asks for compression |
    /// | `default_retry` | not used: typed requests are not retried; the reflector retries lists and watches with its backoff, honouring `Retry-After` |
    /// | `auth_info`: `username` and `password`, `token`, `token_file`, `exec` (in kube-rs's order of precedence) | [`Auth::Basic`], [`Auth::Bearer`], [`Auth::TokenFile`], [`Auth::Exec`] |
    /// | `auth_info`: `client_certificate(_data)`, `client_key(_data)` | [`Identity`] (data takes precedence over files); both files: also [`identity_files`](Config::identity_files), read again when they change |
    /// | `headers`, `auth_info.impersonate*`, `auth_info.auth_provider`, `exec.drop_env`, `exec.interactive_mode: Always` | an error ([`ConfigError::KubeConfig`]) |
    ///
    /// What is refused works through the `kube::Client` itself:
    /// `SharedInformerFactory::new(Client::from(kube_client))` lists and watches through kube-rs's own stack.
    ///
    /// # Errors
    ///
    /// [`ConfigError::KubeConfig`] for a setting this client cannot honour or an unusable
    /// value (the field is named, never its secret value); [`ConfigError::Io`] when a file it
    /// names (CA bundle, client certificate or key) cannot be read.
    fn try_from(config: kube::Config) -> Result<Self, ConfigError> {
        refuse_unsupported(&config)?;
        let cluster_url = url_of("cluster_url", &config.cluster_url)?;
        if config.accept_invalid_certs
            && (config.root_cert.is_some() || config.root_cert_file.is_some())
        {
            // The kubeconfig loader's words: client-go refuses a CA with the insecure flag.
            return Err(unsupported(
                "accept_invalid_certs",
                "cannot be combined with root_cert or root_cert_file",
            ));
        }
        let mut ours = Config::new(cluster_url);
        ours.default_namespace = config.default_namespace;
        ours.root_certs_pem = match (&config.root_cert_file, &config.root_cert) {
            // kube-rs prefers the file, which it reads again to follow rotation; so does this.
            (Some(path), _) => Some(read(path)?),
            (None, Some(ders)) => Some(pem_certificates(ders)),
            (None, None) => None,
        };
        ours.root_certs_file.clone_from(&config.root_cert_file);
        ours.accept_invalid_certs = config.accept_invalid_certs;
        ours.tls_server_name = config.tls_server_name;
        ours.proxy_url =
            config.proxy_url.as_ref().map(|uri| url_of("proxy_url", uri)).transpose()?;
        if let Some(timeout) = config.connect_timeout {
            ours.connect_timeout = timeout;
        }
        if let Some(timeout) = config.read_timeout {
            ours.read_idle_timeout = timeout;
        }
        ours.identity = identity(&config.auth_info)?;
        if let (Some(certificate), Some(key), None, None) = (
            &config.auth_info.client_certificate,
            &config.auth_info.client_key,
            &config.auth_info.client_certificate_data,
            &config.auth_info.client_key_data,
        ) {
            ours.identity_files = Some(IdentityFiles {
                certificate: PathBuf::from(certificate),
                key: PathBuf::from(key),
            });
        }
        ours.auth = auth(&config.auth_info)?;
        Ok(ours)
    }
}

#[cfg_attr(docsrs, doc(cfg(all(feature = "http", feature = "kube"))))]
impl TryFrom<kube::Config> for Client {
    type Error = ClientError;

    /// A client of this crate for the server and credentials of `config`, mapped onto a
    /// [`Config`] as its `TryFrom<kube::Config>` says: one configuration for a program's
    /// kube-rs client and this crate's.
    ///
    /// # Errors
    ///
    /// [`ClientError::Config`] when the configuration cannot be mapped, and the errors of
    /// [`Client::new`].
    ///
    /// ```no_run
    /// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
    /// let config = kube::Config::infer().await?;
    /// let kube_client = kube::Client::try_from(config.clone())?;
    /// let client = informer_client::Client::try_from(config)?;
    /// # Ok(())
    /// # }
    /// ```
    fn try_from(config: kube::Config) -> Result<Self, ClientError> {
        Client::new(Config::try_from(config)?)
    }
}

fn unsupported(field: &'static str, reason: impl Into<String>) -> ConfigError {
    ConfigError::KubeConfig { field, reason: reason.into() }
}

/// The settings this client cannot honour, refused by name.
fn refuse_unsupported(config: &kube::Config) -> Result<(), ConfigError> {
    if !config.headers.is_empty() {
        return Err(unsupported(
            "headers",
            format!("this crate's client sends no extra headers: {USE_KUBE_CLIENT}"),
        ));
    }
    let info = &config.auth_info;
    let impersonation = [
        ("auth_info.impersonate", info.impersonate.is_some()),
        ("auth_info.impersonate_uid", info.impersonate_uid.is_some()),
        ("auth_info.impersonate_groups", info.impersonate_groups.is_some()),
        ("auth_info.impersonate_user_extra", info.impersonate_user_extra.is_some()),
    ];
    if let Some((field, _)) = impersonation.into_iter().find(|(_, set)| *set) {
        return Err(unsupported(
            field,
            format!("this crate's client does not impersonate: {USE_KUBE_CLIENT}"),
        ));
    }
    if let Some(provider) = &info.auth_provider {
        return Err(unsupported(
            "auth_info.auth_provider",
            format!(
                "the `{}` auth provider is not supported: configure an exec credential plugin \
                 (user.exec) instead, or {USE_KUBE_CLIENT}",
                provider.name
            ),
        ));
    }
    Ok(())
}

/// An `http::Uri` as a URL.
fn url_of(field: &'static str, uri: &http::Uri) -> Result<url::Url, ConfigError> {
    url::Url::parse(&uri.to_string()).map_err(|e| unsupported(field, format!("not a URL: {e}")))
}

fn read(path: &Path) -> Result<Vec<u8>, ConfigError> {
    crate::config::files::read(path)
        .map_err(|source| ConfigError::Io { path: path.to_owned(), source })
}

/// DER certificates as one PEM bundle.
fn pem_certificates(ders: &[Vec<u8>]) -> Vec<u8> {
    let mut pem = String::new();
    for der in ders {
        pem.push_str("-----BEGIN CERTIFICATE-----\n");
        for (i, c) in base64::engine::general_purpose::STANDARD.encode(der).chars().enumerate() {
            if i > 0 && i % 64 == 0 {
                pem.push('\n');
            }
            pem.push(c);
        }
        pem.push_str("\n-----END CERTIFICATE-----\n");
    }
    pem.into_bytes()
}

/// Base64 `data` (kubeconfig's `…-data` fields), else the contents of `file`.
fn data_or_file(
    field: &'static str,
    data: Option<&str>,
    file: Option<&str>,
) -> Result<Option<Vec<u8>>, ConfigError> {
    match (data, file) {
        (Some(data), _) => base64::engine::general_purpose::STANDARD
            .decode(data.trim())
            .map(Some)
            // The decoder's message quotes a byte of the input: say only where.
            .map_err(|_| unsupported(field, "not valid base64")),
        (None, Some(file)) => read(&PathBuf::from(file)).map(Some),
        (None, None) => Ok(None),
    }
}

/// The client certificate and key, when both are set.
fn identity(info: &kube::config::AuthInfo) -> Result<Option<Identity>, ConfigError> {
    let cert = data_or_file(
        "auth_info.client_certificate_data",
        info.client_certificate_data.as_deref(),
        info.client_certificate.as_deref(),
    )?;
    let key = data_or_file(
        "auth_info.client_key_data",
        info.client_key_data.as_ref().map(ExposeSecret::expose_secret),
        info.client_key.as_deref(),
    )?;
    match (cert, key) {
        (None, None) => Ok(None),
        (Some(cert_pem), Some(key)) => {
            let key = String::from_utf8(key)
                .map_err(|_| unsupported("auth_info.client_key_data", "the key is not PEM text"))?;
            Ok(Some(Identity { cert_pem, key_pem: SecretString::from(key) }))
        }
        (Some(_), None) => Err(unsupported(
            "auth_info.client_key",
            "a client certificate is set without its key: set client_key or client_key_data",
        )),
        (None, Some(_)) => Err(unsupported(
            "auth_info.client_certificate",
            "a client key is set without its certificate: set client_certificate or \
             client_certificate_data",
        )),
    }
}

/// The credentials, in kube-rs's order: basic, token, token file, exec plugin.
fn auth(info: &kube::config::AuthInfo) -> Result<Auth, ConfigError> {
    match (&info.username, &info.password) {
        (Some(username), Some(password)) => {
            return Ok(Auth::Basic { username: username.clone(), password: password.clone() });
        }
        (Some(_), None) if info.token.is_none() && info.token_file.is_none() => {
            return Err(unsupported(
                "auth_info.password",
                "a username is set without a password: set both for basic authentication",
            ));
        }
        _ => {}
    }
    if let Some(token) = &info.token {
        return Ok(Auth::Bearer(token.clone()));
    }
    if let Some(file) = &info.token_file {
        return Ok(Auth::TokenFile(PathBuf::from(file)));
    }
    match &info.exec {
        Some(exec) => exec_config(exec).map(Auth::Exec),
        None => Ok(Auth::None),
    }
}

fn exec_config(exec: &kube::config::ExecConfig) -> Result<ExecConfig, ConfigError> {
    let Some(command) = exec.command.clone().filter(|c| !c.is_empty()) else {
        return Err(unsupported("auth_info.exec.command", "the exec plugin names no command"));
    };
    let Some(api_version) = exec.api_version.clone().filter(|v| !v.is_empty()) else {
        return Err(unsupported(
            "auth_info.exec.api_version",
            "the exec plugin names no apiVersion: set client.authentication.k8s.io/v1",
        ));
    };
    if exec.drop_env.as_ref().is_some_and(|names| !names.is_empty()) {
        return Err(unsupported(
            "auth_info.exec.drop_env",
            format!(
                "this crate's client passes its whole environment to plugins: {USE_KUBE_CLIENT}"
            ),
        ));
    }
    if matches!(exec.interactive_mode, Some(kube::config::ExecInteractiveMode::Always)) {
        return Err(unsupported(
            "auth_info.exec.interactive_mode",
            "`Always` needs a terminal, and this crate runs plugins non-interactively: use a \
             plugin that can log in without one (interactiveMode Never or IfAvailable)",
        ));
    }
    let mut env = Vec::new();
    for variable in exec.env.iter().flatten() {
        let (Some(name), Some(value)) = (variable.get("name"), variable.get("value")) else {
            return Err(unsupported(
                "auth_info.exec.env",
                "every variable needs a `name` and a `value`",
            ));
        };
        env.push((name.clone(), value.clone()));
    }
    let mut ours = ExecConfig::new(api_version, command)
        .args(exec.args.iter().flatten().cloned())
        .provide_cluster_info(exec.provide_cluster_info);
    ours.env = env;
    ours.install_hint.clone_from(&exec.install_hint);
    ours.cluster_config = exec.cluster.as_ref().and_then(|cluster| cluster.config.clone());
    Ok(ours)
}

#[cfg(test)]
mod tests {
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject;

    use super::*;

    fn kube_config() -> kube::Config {
        kube::Config::new("https://10.0.0.1:6443".parse().unwrap())
    }

    #[test]
    fn the_connection_settings_map_field_by_field() {
        let mut config = kube_config();
        config.default_namespace = "apps".to_owned();
        config.root_cert = Some(vec![vec![1, 2, 3], vec![4; 100]]);
        config.tls_server_name = Some("kubernetes".to_owned());
        config.proxy_url = Some("http://proxy:3128".parse().unwrap());
        config.read_timeout = Some(std::time::Duration::from_secs(7));
        config.connect_timeout = None;
        let ours = Config::try_from(config).unwrap();
        assert_eq!(ours.cluster_url.as_str(), "https://10.0.0.1:6443/");
        assert_eq!(ours.default_namespace, "apps");
        let pem = String::from_utf8(ours.root_certs_pem.unwrap()).unwrap();
        assert_eq!(pem.matches("-----BEGIN CERTIFICATE-----\n").count(), 2);
        assert!(pem.starts_with("-----BEGIN CERTIFICATE-----\nAQID\n-----END CERTIFICATE-----\n"));
        assert!(pem.lines().all(|line| line.len() <= 64), "{pem}");
        let ders: Vec<Vec<u8>> = CertificateDer::pem_slice_iter(pem.as_bytes())
            .map(|der| der.unwrap().as_ref().to_vec())
            .collect();
        assert_eq!(ders, [vec![1, 2, 3], vec![4; 100]]);
        assert!(!ours.accept_invalid_certs);
        assert_eq!(ours.tls_server_name.as_deref(), Some("kubernetes"));
        assert_eq!(ours.proxy_url.unwrap().as_str(), "http://proxy:3128/");
        assert_eq!(ours.read_idle_timeout, std::time::Duration::from_secs(7));
        assert_eq!(ours.connect_timeout, std::time::Duration::from_secs(30));
    }

    // client-go: "specifying a root certificates file with the insecure flag is not allowed";
    // the kubeconfig loader refuses it too, in the same words.
    #[test]
    fn insecure_mode_with_a_ca_is_refused_as_a_kubeconfig_refuses_it() {
        let mut config = kube_config();
        config.accept_invalid_certs = true;
        assert!(Config::try_from(config.clone()).unwrap().accept_invalid_certs);
        for with_ca in [
            |config: &mut kube::Config| config.root_cert = Some(vec![vec![1, 2, 3]]),
            |config: &mut kube::Config| config.root_cert_file = Some("/etc/ca.crt".into()),
        ] {
            let mut config = config.clone();
            with_ca(&mut config);
            let error = Config::try_from(config).unwrap_err();
            assert_eq!(
                error.to_string(),
                "kube::Config accept_invalid_certs: cannot be combined with root_cert or root_cert_file"
            );
        }
    }

    #[test]
    fn credentials_follow_kube_rs_precedence() {
        let mut config = kube_config();
        config.auth_info.token = Some(SecretString::from("t0ken"));
        config.auth_info.token_file = Some("/var/token".to_owned());
        assert!(
            matches!(Config::try_from(config.clone()).unwrap().auth, Auth::Bearer(t) if t.expose_secret() == "t0ken")
        );
        config.auth_info.token = None;
        assert!(
            matches!(Config::try_from(config.clone()).unwrap().auth, Auth::TokenFile(p) if p == Path::new("/var/token"))
        );
        config.auth_info.username = Some("me".to_owned());
        config.auth_info.password = Some(SecretString::from("pw"));
        assert!(
            matches!(Config::try_from(config).unwrap().auth, Auth::Basic { username, .. } if username == "me")
        );
    }

    #[test]
    fn an_exec_plugin_keeps_its_arguments_environment_and_cluster_extension() {
        let mut config = kube_config();
        config.auth_info.exec = Some(kube::config::ExecConfig {
            api_version: Some("client.authentication.k8s.io/v1".to_owned()),
            command: Some("login".to_owned()),
            args: Some(vec!["--tenant".to_owned(), "a".to_owned()]),
            env: Some(vec![
                [("name".to_owned(), "REGION".to_owned()), ("value".to_owned(), "eu".to_owned())]
                    .into(),
            ]),
            drop_env: None,
            install_hint: Some("install login".to_owned()),
            interactive_mode: Some(kube::config::ExecInteractiveMode::Never),
            provide_cluster_info: true,
            cluster: Some(kube::config::ExecAuthCluster {
                config: Some(serde_json::json!({"audience": "k8s"})),
                ..Default::default()
            }),
            other: std::collections::BTreeMap::new(),
        });
        let Auth::Exec(exec) = Config::try_from(config).unwrap().auth else { panic!("exec") };
        assert_eq!(exec.command, "login");
        assert_eq!(exec.args, ["--tenant", "a"]);
        assert_eq!(exec.env, [("REGION".to_owned(), "eu".to_owned())]);
        assert!(exec.provide_cluster_info);
        assert_eq!(exec.install_hint.as_deref(), Some("install login"));
        assert_eq!(exec.cluster_config, Some(serde_json::json!({"audience": "k8s"})));
    }

    #[test]
    fn a_client_certificate_is_read_from_its_data_and_needs_its_key() {
        let b64 = |text: &str| base64::engine::general_purpose::STANDARD.encode(text);
        let mut config = kube_config();
        config.auth_info.client_certificate_data = Some(b64("CERT PEM"));
        let error = Config::try_from(config.clone()).unwrap_err();
        assert!(error.to_string().contains("auth_info.client_key"), "{error}");
        config.auth_info.client_key_data = Some(SecretString::from(b64("KEY PEM")));
        let identity = Config::try_from(config.clone()).unwrap().identity.unwrap();
        assert_eq!(identity.cert_pem, b"CERT PEM");
        assert_eq!(identity.key_pem.expose_secret(), "KEY PEM");
        config.auth_info.client_key_data = Some(SecretString::from("s3cr3t!not-base64"));
        let error = Config::try_from(config).unwrap_err().to_string();
        assert!(error.contains("client_key_data") && !error.contains("s3cr3t"), "{error}");
    }

    #[test]
    fn what_cannot_be_honoured_is_refused_by_name() {
        let mut config = kube_config();
        config.auth_info.impersonate = Some("admin".to_owned());
        let error = Config::try_from(config).unwrap_err().to_string();
        assert!(error.starts_with("kube::Config auth_info.impersonate: "), "{error}");
        assert!(error.contains("Client::from(kube_client)"), "{error}");

        let mut config = kube_config();
        config
            .headers
            .push((http::HeaderName::from_static("x-tenant"), http::HeaderValue::from_static("a")));
        let error = Config::try_from(config).unwrap_err().to_string();
        assert!(error.starts_with("kube::Config headers: "), "{error}");

        let mut config = kube_config();
        config.auth_info.auth_provider = Some(kube::config::AuthProviderConfig {
            name: "oidc".to_owned(),
            ..Default::default()
        });
        let error = Config::try_from(config).unwrap_err().to_string();
        assert!(error.contains("`oidc` auth provider") && error.contains("user.exec"), "{error}");
    }

    #[test]
    fn secrets_stay_out_of_debug_output() {
        let mut config = kube_config();
        config.auth_info.token = Some(SecretString::from("t0ken-s3cr3t"));
        let ours = Config::try_from(config).unwrap();
        assert!(!format!("{ours:?}").contains("t0ken-s3cr3t"));
    }
}
