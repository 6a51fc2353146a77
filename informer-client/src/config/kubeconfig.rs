//! The kubeconfig file format, and merging several files the way kubectl merges `KUBECONFIG`.
//!
//! Files are read into [`Kubeconfig`] (clusters, users and contexts by name, each remembering the
//! file and list index it came from, so errors can name `users[2].user.client-key-data`), then one
//! context is turned into a [`Config`] by [`Kubeconfig::to_config`]. The merge rules are client-go's
//! `ClientConfigLoadingRules.Load` (tools/clientcmd/loader.go), listed on
//! [`Config::from_kubeconfig`].

use std::collections::HashMap;
use std::collections::hash_map::Entry as MapEntry;
use std::ffi::OsString;
use std::fmt::Display;
use std::path::{Path, PathBuf};

use base64::Engine as _;
use secrecy::{ExposeSecret, SecretString};
use serde::{Deserialize, Deserializer};

use super::{
    Auth, Config, ConfigError, ExecConfig, Identity, IdentityFiles, InClusterOptions,
    KubeconfigOptions,
};

/// PEM data, and the file it was read from when it was not given inline.
type PemAndFile = (Vec<u8>, Option<PathBuf>);

/// A user's client certificate, and its files when both certificate and key are files.
type UserIdentity = (Identity, Option<IdentityFiles>);

/// The cluster extension that holds per-cluster configuration for exec plugins.
const EXEC_EXTENSION: &str = "client.authentication.k8s.io/exec";
/// The exec credential API versions this client speaks.
pub(crate) const EXEC_API_VERSIONS: [&str; 2] =
    ["client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1beta1"];

/// One kubeconfig file as written on disk. Unknown fields (preferences, extensions...) are ignored.
#[derive(Deserialize, Default)]
struct File {
    #[serde(default, deserialize_with = "null_as_default")]
    clusters: Vec<NamedCluster>,
    #[serde(default, deserialize_with = "null_as_default")]
    users: Vec<NamedUser>,
    #[serde(default, deserialize_with = "null_as_default")]
    contexts: Vec<NamedContext>,
    #[serde(default, rename = "current-context")]
    current_context: Option<String>,
}

#[derive(Deserialize)]
struct NamedCluster {
    name: String,
    #[serde(default)]
    cluster: Option<ClusterFields>,
}

#[derive(Deserialize)]
struct NamedUser {
    name: String,
    #[serde(default)]
    user: Option<UserFields>,
}

#[derive(Deserialize)]
struct NamedContext {
    name: String,
    #[serde(default)]
    context: Option<ContextFields>,
}

/// `clusters[].cluster`.
#[derive(Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
struct ClusterFields {
    server: Option<String>,
    certificate_authority: Option<String>,
    certificate_authority_data: Option<String>,
    #[serde(default)]
    insecure_skip_tls_verify: bool,
    tls_server_name: Option<String>,
    proxy_url: Option<String>,
    #[serde(default, deserialize_with = "null_as_default")]
    extensions: Vec<NamedExtension>,
}

#[derive(Deserialize)]
struct NamedExtension {
    name: String,
    #[serde(default)]
    extension: serde_json::Value,
}

/// `users[].user`. Secrets are wrapped as soon as they are read.
#[derive(Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
struct UserFields {
    #[serde(default, deserialize_with = "secret")]
    token: Option<SecretString>,
    #[serde(rename = "tokenFile")]
    token_file: Option<String>,
    username: Option<String>,
    #[serde(default, deserialize_with = "secret")]
    password: Option<SecretString>,
    client_certificate: Option<String>,
    client_certificate_data: Option<String>,
    client_key: Option<String>,
    #[serde(default, deserialize_with = "secret")]
    client_key_data: Option<SecretString>,
    auth_provider: Option<AuthProvider>,
    exec: Option<ExecFields>,
}

/// `users[].user.auth-provider`; its `config` (which caches tokens) is deliberately not read.
#[derive(Deserialize)]
struct AuthProvider {
    #[serde(default)]
    name: String,
}

/// `users[].user.exec`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ExecFields {
    api_version: Option<String>,
    command: Option<String>,
    #[serde(default, deserialize_with = "null_as_default")]
    args: Vec<String>,
    #[serde(default, deserialize_with = "null_as_default")]
    env: Vec<ExecEnv>,
    #[serde(default)]
    provide_cluster_info: bool,
    interactive_mode: Option<String>,
    install_hint: Option<String>,
}

#[derive(Deserialize)]
struct ExecEnv {
    name: Option<String>,
    #[serde(default, deserialize_with = "secret")]
    value: Option<SecretString>,
}

/// `contexts[].context`.
#[derive(Deserialize, Default)]
struct ContextFields {
    cluster: Option<String>,
    user: Option<String>,
    namespace: Option<String>,
}

fn null_as_default<'de, D: Deserializer<'de>, T: Default + Deserialize<'de>>(
    deserializer: D,
) -> Result<T, D::Error> {
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}

/// An optional string, wrapped in a [`SecretString`] straight away.
fn secret<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<SecretString>, D::Error> {
    Ok(Option::<String>::deserialize(deserializer)?.map(SecretString::from))
}

/// A cluster, user or context, with where it was defined.
struct Entry<T> {
    value: T,
    /// The file that defined it.
    file: PathBuf,
    /// The absolute directory of that file, for relative paths.
    dir: PathBuf,
    /// `clusters[3].cluster`, `users[0].user`, `contexts[1].context`.
    prefix: String,
}

impl<T> Entry<T> {
    /// An error about `field` of this entry.
    fn invalid(&self, field: impl Display, reason: impl Into<String>) -> ConfigError {
        ConfigError::InvalidField {
            file: self.file.clone(),
            field: format!("{}.{field}", self.prefix),
            reason: reason.into(),
        }
    }

    /// `path` resolved against the defining file's directory.
    fn resolve(&self, path: &str) -> PathBuf {
        self.dir.join(path)
    }

    /// Read the file named by `field`, resolving a relative `path`.
    fn read_file(&self, field: &str, path: &str) -> Result<(PathBuf, Vec<u8>), ConfigError> {
        let path = self.resolve(path);
        match super::files::read(&path) {
            Ok(data) => Ok((path, data)),
            Err(err) => Err(self.invalid(field, format!("cannot read {}: {err}", path.display()))),
        }
    }

    /// Decode the base64 `value` of `field` (line breaks allowed, as Go's decoder allows them).
    fn decode(&self, field: &str, value: &str) -> Result<Vec<u8>, ConfigError> {
        let compact: String = value.chars().filter(|c| !c.is_ascii_whitespace()).collect();
        base64::engine::general_purpose::STANDARD
            .decode(compact)
            .map_err(|_| self.invalid(field, "invalid base64"))
    }

    /// PEM data from the inline `data_field` (base64) if set, else from the file `file_field`,
    /// with the path of that file.
    fn pem_and_file(
        &self,
        data_field: &str,
        data: Option<&str>,
        file_field: &str,
        file: Option<&str>,
    ) -> Result<Option<PemAndFile>, ConfigError> {
        let (field, pem, source) = if let Some(data) = data {
            if file.is_some() {
                tracing::warn!(file = %self.file.display(), field = %format!("{}.{data_field}", self.prefix), "both {data_field} and {file_field} are set; {data_field} wins");
            }
            (data_field.to_owned(), self.decode(data_field, data)?, None)
        } else if let Some(file) = file {
            let (path, pem) = self.read_file(file_field, file)?;
            (format!("{file_field} ({})", path.display()), pem, Some(path))
        } else {
            return Ok(None);
        };
        if !pem.windows(10).any(|window| window == b"-----BEGIN") {
            return Err(self.invalid(field, "not PEM-encoded (no -----BEGIN line)"));
        }
        Ok(Some((pem, source)))
    }
}

/// Kubeconfig files, merged.
pub(crate) struct Kubeconfig {
    /// The files read, in precedence order.
    files: Vec<PathBuf>,
    clusters: HashMap<String, Entry<ClusterFields>>,
    users: HashMap<String, Entry<UserFields>>,
    contexts: HashMap<String, Entry<ContextFields>>,
    current_context: Option<String>,
}

impl Kubeconfig {
    fn empty() -> Self {
        Self {
            files: Vec::new(),
            clusters: HashMap::new(),
            users: HashMap::new(),
            contexts: HashMap::new(),
            current_context: None,
        }
    }

    /// Read one file; a missing file is an error.
    pub(crate) fn read(path: &Path) -> Result<Self, ConfigError> {
        let data = super::files::read_to_string(path)
            .map_err(|source| ConfigError::Io { path: path.to_path_buf(), source })?;
        Self::parse(path, &data)
    }

    /// Read and merge `paths` in precedence order, skipping files that do not exist.
    pub(crate) fn read_all(paths: &[PathBuf]) -> Result<Self, ConfigError> {
        let mut merged = Self::empty();
        for path in paths {
            match Self::read(path) {
                Ok(file) => merged.merge(file),
                Err(ConfigError::Io { source, .. })
                    if source.kind() == std::io::ErrorKind::NotFound =>
                {
                    tracing::debug!(path = %path.display(), "kubeconfig file does not exist; skipped");
                }
                Err(err) => return Err(err),
            }
        }
        Ok(merged)
    }

    /// Whether nothing was loaded: no file, or only files without any entry.
    pub(crate) fn is_empty(&self) -> bool {
        self.clusters.is_empty()
            && self.users.is_empty()
            && self.contexts.is_empty()
            && self.current_context.is_none()
    }

    /// Parse the contents of `path`.
    fn parse(path: &Path, data: &str) -> Result<Self, ConfigError> {
        let data = data.strip_prefix('\u{feff}').unwrap_or(data);
        // client-go reads an empty file as an empty config.
        let file: File = if data.trim().is_empty() {
            File::default()
        } else {
            serde_yaml_ng::from_str(data).map_err(|err| ConfigError::Parse {
                path: path.to_path_buf(),
                reason: err.to_string(),
            })?
        };
        let dir = std::path::absolute(path)
            .map_err(|source| ConfigError::Io { path: path.to_path_buf(), source })?
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default();
        let mut config = Self::empty();
        config.files.push(path.to_path_buf());
        config.current_context = file.current_context.filter(|name| !name.is_empty());
        let place = Place { file: path, dir: &dir };
        for (index, named) in file.clusters.into_iter().enumerate() {
            place.insert(
                &mut config.clusters,
                &format!("clusters[{index}]"),
                "cluster",
                named.name,
                named.cluster.unwrap_or_default(),
            )?;
        }
        for (index, named) in file.users.into_iter().enumerate() {
            place.insert(
                &mut config.users,
                &format!("users[{index}]"),
                "user",
                named.name,
                named.user.unwrap_or_default(),
            )?;
        }
        for (index, named) in file.contexts.into_iter().enumerate() {
            place.insert(
                &mut config.contexts,
                &format!("contexts[{index}]"),
                "context",
                named.name,
                named.context.unwrap_or_default(),
            )?;
        }
        tracing::debug!(path = %path.display(), clusters = config.clusters.len(), users = config.users.len(), contexts = config.contexts.len(), "read kubeconfig");
        Ok(config)
    }

    /// Merge a lower-precedence file in: entries whose name is already known are dropped whole,
    /// and `current-context` is only taken if none is set yet.
    fn merge(&mut self, other: Self) {
        self.files.extend(other.files);
        for (name, entry) in other.clusters {
            self.clusters.entry(name).or_insert(entry);
        }
        for (name, entry) in other.users {
            self.users.entry(name).or_insert(entry);
        }
        for (name, entry) in other.contexts {
            self.contexts.entry(name).or_insert(entry);
        }
        if self.current_context.is_none() {
            self.current_context = other.current_context;
        }
    }

    /// The [`Config`] of the chosen context.
    pub(crate) fn to_config(&self, options: &KubeconfigOptions) -> Result<Config, ConfigError> {
        let context_name = nonempty(options.context.as_deref())
            .or(self.current_context.as_deref())
            .ok_or_else(|| ConfigError::NoCurrentContext { files: self.files.clone() })?;
        let context = self
            .contexts
            .get(context_name)
            .ok_or_else(|| self.not_found("context", context_name))?;

        let cluster_name = nonempty(options.cluster.as_deref())
            .or(nonempty(context.value.cluster.as_deref()))
            .ok_or_else(|| context.invalid("cluster", "missing"))?;
        let cluster = self
            .clusters
            .get(cluster_name)
            .ok_or_else(|| self.not_found("cluster", cluster_name))?;

        let user = if let Some(name) = nonempty(options.user.as_deref()) {
            Some(self.users.get(name).ok_or_else(|| self.not_found("user", name))?)
        } else if let Some(name) = nonempty(context.value.user.as_deref()) {
            let user = self.users.get(name);
            if user.is_none() {
                // client-go connects without credentials then; so do we, but say so.
                tracing::warn!(
                    user = name,
                    context = context_name,
                    "the context's user is not defined; connecting without credentials"
                );
            }
            user
        } else {
            None
        };

        let mut config = cluster_config(cluster)?;
        if let Some(namespace) = nonempty(context.value.namespace.as_deref()) {
            namespace.clone_into(&mut config.default_namespace);
        }
        if let Some(user) = user {
            let exec_extension = cluster
                .value
                .extensions
                .iter()
                .find(|extension| extension.name == EXEC_EXTENSION)
                .map(|extension| &extension.extension);
            let (identity, auth) = user_credentials(user, exec_extension)?;
            (config.identity, config.identity_files) =
                identity.map_or((None, None), |(identity, files)| (Some(identity), files));
            config.auth = auth;
        }
        tracing::debug!(context = context_name, cluster = cluster_name, url = %super::redact_url(&config.cluster_url), "using kubeconfig context");
        Ok(config)
    }

    fn not_found(&self, kind: &'static str, name: &str) -> ConfigError {
        ConfigError::NotFound { kind, name: name.to_owned(), files: self.files.clone() }
    }
}

/// The file being parsed, for the entries it defines.
struct Place<'a> {
    file: &'a Path,
    dir: &'a Path,
}

impl Place<'_> {
    /// Insert `value` under `name`, rejecting a name used twice in one file (as client-go does).
    /// `prefix` is `clusters[3]`, `kind` is `cluster`.
    fn insert<T>(
        &self,
        map: &mut HashMap<String, Entry<T>>,
        prefix: &str,
        kind: &str,
        name: String,
        value: T,
    ) -> Result<(), ConfigError> {
        let invalid = |reason: String| ConfigError::InvalidField {
            file: self.file.to_path_buf(),
            field: format!("{prefix}.name"),
            reason,
        };
        if name.is_empty() {
            return Err(invalid("missing".to_owned()));
        }
        match map.entry(name) {
            MapEntry::Occupied(occupied) => {
                Err(invalid(format!("duplicate name `{}` in the list", occupied.key())))
            }
            MapEntry::Vacant(vacant) => {
                let prefix = format!("{prefix}.{kind}");
                vacant.insert(Entry {
                    value,
                    file: self.file.to_path_buf(),
                    dir: self.dir.to_path_buf(),
                    prefix,
                });
                Ok(())
            }
        }
    }
}

fn nonempty(value: Option<&str>) -> Option<&str> {
    value.filter(|value| !value.is_empty())
}

/// The URL, TLS and proxy settings of a cluster entry.
fn cluster_config(cluster: &Entry<ClusterFields>) -> Result<Config, ConfigError> {
    let fields = &cluster.value;
    let server =
        nonempty(fields.server.as_deref()).ok_or_else(|| cluster.invalid("server", "missing"))?;
    let mut config =
        Config::new(parse_server(server).map_err(|reason| cluster.invalid("server", reason))?);

    // Read again when it changes, if it is a file (client-go: when there is no `-data`).
    (config.root_certs_pem, config.root_certs_file) = cluster
        .pem_and_file(
            "certificate-authority-data",
            nonempty(fields.certificate_authority_data.as_deref()),
            "certificate-authority",
            nonempty(fields.certificate_authority.as_deref()),
        )?
        .map_or((None, None), |(pem, file)| (Some(pem), file));
    config.accept_invalid_certs = fields.insecure_skip_tls_verify;
    if config.accept_invalid_certs && config.root_certs_pem.is_some() {
        // client-go: "specifying a root certificates file with the insecure flag is not allowed".
        return Err(cluster.invalid(
            "insecure-skip-tls-verify",
            "cannot be combined with certificate-authority or certificate-authority-data",
        ));
    }
    config.tls_server_name = nonempty(fields.tls_server_name.as_deref()).map(str::to_owned);
    if let Some(proxy) = nonempty(fields.proxy_url.as_deref()) {
        let proxy = url::Url::parse(proxy)
            .map_err(|err| cluster.invalid("proxy-url", format!("invalid URL: {err}")))?;
        if !matches!(proxy.scheme(), "http" | "https") {
            return Err(cluster.invalid(
                "proxy-url",
                format!("unsupported scheme `{}` (use http or https)", proxy.scheme()),
            ));
        }
        config.proxy_url = Some(proxy);
    }
    Ok(config)
}

/// The API server URL; like client-go, a bare `host:port` means `https://host:port`.
fn parse_server(server: &str) -> Result<url::Url, String> {
    let server = server.trim();
    let with_scheme =
        if server.contains("://") { server.to_owned() } else { format!("https://{server}") };
    let url = url::Url::parse(&with_scheme).map_err(|err| format!("invalid URL: {err}"))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(format!("unsupported scheme `{}` (use https or http)", url.scheme()));
    }
    if url.host().is_none() {
        return Err("the URL has no host".to_owned());
    }
    Ok(url)
}

/// The client certificate and the authentication method of a user entry.
///
/// client-go's order: a token (`tokenFile` re-read, winning over `token`), else basic auth; a
/// token together with basic auth is an error. An exec plugin is only used when the user has no
/// token, basic auth or client certificate (client-go's exec authenticator steps aside then).
fn user_credentials(
    user: &Entry<UserFields>,
    exec_extension: Option<&serde_json::Value>,
) -> Result<(Option<UserIdentity>, Auth), ConfigError> {
    let fields = &user.value;
    if let Some(provider) = &fields.auth_provider {
        return Err(ConfigError::AuthProvider {
            file: user.file.clone(),
            field: format!("{}.auth-provider", user.prefix),
            name: provider.name.clone(),
        });
    }
    let identity = client_identity(user)?;

    let token = fields.token.as_ref().filter(|token| !token.expose_secret().is_empty());
    let token_file = nonempty(fields.token_file.as_deref());
    let username = nonempty(fields.username.as_deref());
    let password = fields.password.as_ref().filter(|password| !password.expose_secret().is_empty());
    let has_token = token.is_some() || token_file.is_some();
    let has_basic = username.is_some() || password.is_some();
    if has_token && has_basic {
        return Err(user.invalid("token", "more than one authentication method (token and username/password); only one is allowed"));
    }

    let auth = if let Some(file) = token_file {
        let path = user.resolve(file);
        // client-go reads the file when loading; fail early on a missing one.
        std::fs::File::open(&path).map_err(|err| {
            user.invalid("tokenFile", format!("cannot read {}: {err}", path.display()))
        })?;
        Auth::TokenFile(path)
    } else if let Some(token) = token {
        Auth::Bearer(token.clone())
    } else if has_basic {
        Auth::Basic {
            username: username.unwrap_or_default().to_owned(),
            password: password.cloned().unwrap_or_else(|| SecretString::from("")),
        }
    } else if let (Some(exec), None) = (&fields.exec, &identity) {
        Auth::Exec(exec_config(user, exec, exec_extension)?)
    } else {
        Auth::None
    };
    if fields.exec.is_some() && !matches!(auth, Auth::Exec(_)) {
        tracing::debug!(field = %format!("{}.exec", user.prefix), "static credentials are set; the exec plugin is not used");
    }
    Ok((identity, auth))
}

/// `client-certificate(-data)` and `client-key(-data)`: both or neither; and the files they
/// were read from when both are files (then the client reads them again when they change, as
/// client-go does only in that case).
fn client_identity(user: &Entry<UserFields>) -> Result<Option<UserIdentity>, ConfigError> {
    let fields = &user.value;
    let cert = user.pem_and_file(
        "client-certificate-data",
        nonempty(fields.client_certificate_data.as_deref()),
        "client-certificate",
        nonempty(fields.client_certificate.as_deref()),
    )?;
    let key_data = fields
        .client_key_data
        .as_ref()
        .map(ExposeSecret::expose_secret)
        .filter(|key| !key.is_empty());
    let key = user.pem_and_file(
        "client-key-data",
        key_data,
        "client-key",
        nonempty(fields.client_key.as_deref()),
    )?;
    match (cert, key) {
        (Some((cert_pem, cert_file)), Some((key_pem, key_file))) => {
            let key_pem = String::from_utf8(key_pem)
                .map_err(|_| user.invalid("client-key-data", "not PEM-encoded (not UTF-8)"))?;
            let files = cert_file
                .zip(key_file)
                .map(|(certificate, key)| IdentityFiles { certificate, key });
            Ok(Some((Identity { cert_pem, key_pem: SecretString::from(key_pem) }, files)))
        }
        (Some(_), None) => Err(user.invalid(
            "client-key-data",
            "missing: client-key-data or client-key must be set with a client certificate",
        )),
        (None, Some(_)) => Err(user.invalid(
            "client-certificate-data",
            "missing: client-certificate-data or client-certificate must be set with a client key",
        )),
        (None, None) => Ok(None),
    }
}

/// The exec plugin settings of a user entry.
fn exec_config(
    user: &Entry<UserFields>,
    exec: &ExecFields,
    exec_extension: Option<&serde_json::Value>,
) -> Result<ExecConfig, ConfigError> {
    let api_version = nonempty(exec.api_version.as_deref())
        .ok_or_else(|| user.invalid("exec.apiVersion", "missing"))?;
    if !EXEC_API_VERSIONS.contains(&api_version) {
        return Err(user.invalid(
            "exec.apiVersion",
            format!("unsupported version `{api_version}` (use {})", EXEC_API_VERSIONS.join(" or ")),
        ));
    }
    let command =
        nonempty(exec.command.as_deref()).ok_or_else(|| user.invalid("exec.command", "missing"))?;
    // Like client-go: only a command with a path separator is relative to the kubeconfig; a bare
    // name is looked up in PATH.
    let command = if command.contains(std::path::MAIN_SEPARATOR) {
        user.resolve(command).to_string_lossy().into_owned()
    } else {
        command.to_owned()
    };
    match exec.interactive_mode.as_deref() {
        None | Some("" | "Never" | "IfAvailable") => {}
        Some("Always") => {
            return Err(user.invalid(
                "exec.interactiveMode",
                "`Always` needs a terminal, and this client runs plugins non-interactively",
            ));
        }
        Some(other) => {
            return Err(user.invalid(
                "exec.interactiveMode",
                format!("unknown mode `{other}` (use Never or IfAvailable)"),
            ));
        }
    }
    let mut env = Vec::with_capacity(exec.env.len());
    for (index, var) in exec.env.iter().enumerate() {
        let name = nonempty(var.name.as_deref())
            .ok_or_else(|| user.invalid(format_args!("exec.env[{index}].name"), "missing"))?;
        let value =
            var.value.as_ref().map(|value| value.expose_secret().to_owned()).unwrap_or_default();
        env.push((name.to_owned(), value));
    }
    let mut config = ExecConfig::new(api_version, command)
        .args(exec.args.iter().cloned())
        .provide_cluster_info(exec.provide_cluster_info);
    config.env = env;
    config.install_hint = nonempty(exec.install_hint.as_deref()).map(str::to_owned);
    config.cluster_config = exec_extension.cloned();
    Ok(config)
}

/// The loaders that read kubeconfig files; [`Config::incluster`] is beside [`Config`].
impl Config {
    /// The configuration kubectl would use, else the pod's service account.
    ///
    /// In order:
    /// 1. the files listed in `KUBECONFIG` (separated by `:`, `;` on Windows), merged as kubectl
    ///    merges them (see [`Config::from_kubeconfig`]); files that do not exist are skipped;
    /// 2. when `KUBECONFIG` is unset or empty, `~/.kube/config`;
    /// 3. when none of those files exists (or they are all empty), the in-cluster service account
    ///    ([`Config::incluster`]).
    ///
    /// A kubeconfig file that exists but cannot be read or used is an error: there is no fallback
    /// to in-cluster then, as with client-go.
    ///
    /// # Errors
    ///
    /// [`ConfigError::NoConfig`] when no kubeconfig file exists and the process is not in a
    /// cluster; otherwise the errors of [`Config::from_kubeconfig`] and [`Config::incluster`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use informer_client::Config;
    ///
    /// let config = Config::infer()?;
    /// println!("talking to {} in namespace {}", config.cluster_url, config.default_namespace);
    /// # Ok::<(), informer_client::ConfigError>(())
    /// ```
    #[doc(alias = "NewDefaultClientConfigLoadingRules")]
    pub fn infer() -> Result<Self, ConfigError> {
        Self::infer_from(&Environment::from_process())
    }

    /// [`Config::infer`] with the environment given instead of read from the process.
    pub(crate) fn infer_from(env: &Environment) -> Result<Self, ConfigError> {
        let paths = env.kubeconfig_paths();
        let kubeconfig = Kubeconfig::read_all(&paths)?;
        if !kubeconfig.is_empty() {
            return kubeconfig.to_config(&KubeconfigOptions::default());
        }
        tracing::debug!(tried = ?paths, "no kubeconfig found; trying the in-cluster service account");
        match Self::incluster_with(&env.in_cluster) {
            Err(ConfigError::NotInCluster) => Err(ConfigError::NoConfig { tried: paths }),
            other => other,
        }
    }

    /// The configuration of a kubeconfig context, from `KUBECONFIG` or `~/.kube/config`.
    ///
    /// Several files in `KUBECONFIG` are merged as kubectl merges them:
    /// - files that do not exist are skipped, and a path listed twice is read once;
    /// - for clusters, users and contexts, the first file to define a name wins, and the whole
    ///   entry is taken from that file (a later file's entry of the same name is ignored, even
    ///   its fields the first one does not set);
    /// - the first file with a non-empty `current-context` sets it;
    /// - relative paths (`certificate-authority`, `client-certificate`, `client-key`,
    ///   `tokenFile`, and an exec `command` containing a `/`) are resolved against the directory
    ///   of the file that defines the entry.
    ///
    /// `options` overrides the context, and the cluster or user the context names.
    ///
    /// # Errors
    ///
    /// [`ConfigError::NoConfig`] when none of the files exists; otherwise as
    /// [`Config::from_kubeconfig_files`].
    pub fn from_kubeconfig(options: &KubeconfigOptions) -> Result<Self, ConfigError> {
        let paths = Environment::from_process().kubeconfig_paths();
        let kubeconfig = Kubeconfig::read_all(&paths)?;
        if kubeconfig.is_empty() {
            return Err(ConfigError::NoConfig { tried: paths });
        }
        kubeconfig.to_config(options)
    }

    /// The configuration of a context in one kubeconfig file.
    ///
    /// # Errors
    ///
    /// [`ConfigError::Io`] when the file cannot be read (a missing file is an error here);
    /// otherwise as [`Config::from_kubeconfig_files`].
    pub fn from_kubeconfig_file(
        path: impl AsRef<Path>,
        options: &KubeconfigOptions,
    ) -> Result<Self, ConfigError> {
        Kubeconfig::read(path.as_ref())?.to_config(options)
    }

    /// The configuration of a context in several kubeconfig files, merged as kubectl merges the
    /// files listed in `KUBECONFIG` (the rules are listed at [`Config::from_kubeconfig`]).
    ///
    /// # Errors
    ///
    /// - [`ConfigError::Io`] when a file exists but cannot be read;
    /// - [`ConfigError::Parse`] when a file is not a kubeconfig;
    /// - [`ConfigError::NoCurrentContext`] when no context is set or requested;
    /// - [`ConfigError::NotFound`] when the context, or the cluster it names, does not exist;
    /// - [`ConfigError::InvalidField`] for a missing or unusable field (a bad URL or base64
    ///   value, a file that cannot be read, conflicting authentication methods...);
    /// - [`ConfigError::AuthProvider`] for a user with a legacy `auth-provider`.
    pub fn from_kubeconfig_files<P: AsRef<Path>>(
        paths: &[P],
        options: &KubeconfigOptions,
    ) -> Result<Self, ConfigError> {
        let paths: Vec<PathBuf> = paths.iter().map(|path| path.as_ref().to_path_buf()).collect();
        let kubeconfig = Kubeconfig::read_all(&paths)?;
        if kubeconfig.is_empty() {
            return Err(ConfigError::NoConfig { tried: paths });
        }
        kubeconfig.to_config(options)
    }
}

/// What [`Config::infer`] reads from the process environment, injectable for tests.
#[derive(Clone, Debug)]
pub(crate) struct Environment {
    /// `KUBECONFIG`.
    pub(crate) kubeconfig: Option<OsString>,
    /// The home directory.
    pub(crate) home: Option<PathBuf>,
    /// The in-cluster settings.
    pub(crate) in_cluster: InClusterOptions,
}

impl Environment {
    /// The process's environment.
    fn from_process() -> Self {
        Self {
            kubeconfig: std::env::var_os("KUBECONFIG"),
            home: home_dir(),
            in_cluster: InClusterOptions::from_env(),
        }
    }

    /// The kubeconfig files to read, in precedence order: `KUBECONFIG`'s list (empty entries
    /// dropped, duplicates read once), else `~/.kube/config`.
    fn kubeconfig_paths(&self) -> Vec<PathBuf> {
        match self.kubeconfig.as_ref().filter(|list| !list.is_empty()) {
            Some(list) => {
                let mut paths: Vec<PathBuf> = Vec::new();
                for path in std::env::split_paths(list) {
                    if !path.as_os_str().is_empty() && !paths.contains(&path) {
                        paths.push(path);
                    }
                }
                paths
            }
            None => self.home.iter().map(|home| home.join(".kube").join("config")).collect(),
        }
    }
}

/// The user's home directory as client-go finds it: `HOME`, else `USERPROFILE` (Windows).
fn home_dir() -> Option<PathBuf> {
    ["HOME", "USERPROFILE"]
        .into_iter()
        .filter_map(std::env::var_os)
        .find(|dir| !dir.is_empty())
        .map(PathBuf::from)
}

#[cfg(test)]
pub(crate) mod tests {
    use std::ffi::OsString;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;
    use crate::config::InClusterOptions;

    /// A directory under the system temp dir, removed on drop.
    pub(crate) struct TempDir(PathBuf);

    impl TempDir {
        pub(crate) fn new(name: &str) -> Self {
            static NEXT: AtomicUsize = AtomicUsize::new(0);
            let dir = std::env::temp_dir().join(format!(
                "informer-runtime-{name}-{}-{}",
                std::process::id(),
                NEXT.fetch_add(1, Ordering::Relaxed)
            ));
            std::fs::create_dir_all(&dir).unwrap();
            Self(dir)
        }

        pub(crate) fn path(&self) -> &Path {
            &self.0
        }

        /// Write `contents` to `name` in this directory and return its path.
        pub(crate) fn write(&self, name: &str, contents: &str) -> PathBuf {
            let path = self.0.join(name);
            std::fs::write(&path, contents).unwrap();
            path
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    /// A file under `tests/fixtures/kubeconfig`.
    pub(crate) fn fixture(name: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/kubeconfig").join(name)
    }

    fn load(yaml: &str) -> Result<Config, ConfigError> {
        let dir = TempDir::new("kubeconfig");
        let path = dir.write("config", yaml);
        Config::from_kubeconfig_file(path, &KubeconfigOptions::default())
    }

    fn not_in_cluster() -> InClusterOptions {
        InClusterOptions {
            service_host: None,
            service_port: None,
            namespace: None,
            service_account_dir: PathBuf::from("/nonexistent"),
        }
    }

    const ONE_CONTEXT: &str = "
current-context: c
clusters: [{name: k, cluster: {server: 'https://10.1.1.1:6443'}}]
contexts: [{name: c, context: {cluster: k, user: u}}]
";

    #[test]
    fn server_without_scheme_means_https() {
        assert_eq!(parse_server("10.0.0.1:6443").unwrap().as_str(), "https://10.0.0.1:6443/");
        assert_eq!(
            parse_server("http://localhost:8080").unwrap().as_str(),
            "http://localhost:8080/"
        );
        assert!(parse_server("ftp://10.0.0.1").unwrap_err().contains("unsupported scheme"));
    }

    #[test]
    fn infer_merges_the_kubeconfig_list_in_order() {
        let list =
            std::env::join_paths([fixture("merge-first.yaml"), fixture("merge/second.yaml")])
                .unwrap();
        let env = Environment { kubeconfig: Some(list), home: None, in_cluster: not_in_cluster() };
        let config = Config::infer_from(&env).unwrap();
        // merge-first.yaml sets an empty current-context, so merge/second.yaml's wins.
        assert_eq!(config.cluster_url.as_str(), "https://second-only.example.test:6443/");
        assert_eq!(config.default_namespace, "from-second");
    }

    #[test]
    fn infer_reads_home_kube_config_when_kubeconfig_is_unset() {
        let home = TempDir::new("home");
        std::fs::create_dir_all(home.path().join(".kube")).unwrap();
        std::fs::copy(fixture("token.yaml"), home.path().join(".kube/config")).unwrap();
        let env = Environment {
            kubeconfig: None,
            home: Some(home.path().to_path_buf()),
            in_cluster: not_in_cluster(),
        };
        let config = Config::infer_from(&env).unwrap();
        assert_eq!(config.cluster_url.as_str(), "https://10.0.0.1:6443/");
        assert_eq!(config.default_namespace, "team-a");
    }

    #[test]
    fn infer_falls_back_to_in_cluster_only_when_no_kubeconfig_exists() {
        let sa = TempDir::new("sa");
        sa.write("token", "in-cluster-token");
        sa.write("namespace", "kube-system\n");
        let in_cluster = InClusterOptions {
            service_host: Some("10.96.0.1".to_owned()),
            service_port: Some("443".to_owned()),
            namespace: None,
            service_account_dir: sa.path().to_path_buf(),
        };
        let missing = Environment {
            kubeconfig: Some(OsString::from("/nonexistent/a:/nonexistent/b")),
            home: None,
            in_cluster: in_cluster.clone(),
        };
        let config = Config::infer_from(&missing).unwrap();
        assert_eq!(config.cluster_url.as_str(), "https://10.96.0.1/");
        assert_eq!(config.default_namespace, "kube-system");
        assert!(matches!(&config.auth, Auth::TokenFile(path) if path == &sa.path().join("token")));

        // A kubeconfig that exists but is broken is an error, not a reason to fall back.
        let broken = Environment {
            kubeconfig: Some(fixture("malformed.yaml").into_os_string()),
            home: None,
            in_cluster,
        };
        assert!(matches!(Config::infer_from(&broken), Err(ConfigError::Parse { .. })));
    }

    #[test]
    fn an_empty_file_is_an_empty_config() {
        let dir = TempDir::new("empty");
        let path = dir.write("config", "\n");
        let err =
            Config::from_kubeconfig_files(&[path], &KubeconfigOptions::default()).unwrap_err();
        assert!(matches!(err, ConfigError::NoConfig { .. }), "{err:?}");
    }

    #[test]
    fn duplicate_names_in_one_file_are_rejected() {
        let err = load("clusters: [{name: a, cluster: {server: 'https://x'}}, {name: a, cluster: {server: 'https://y'}}]").unwrap_err();
        assert!(
            err.to_string().ends_with("clusters[1].name: duplicate name `a` in the list"),
            "{err}"
        );
    }

    #[test]
    fn missing_context_cluster_and_current_context_are_named() {
        let err = load("clusters: [{name: k, cluster: {server: 'https://x'}}]").unwrap_err();
        assert!(matches!(err, ConfigError::NoCurrentContext { .. }), "{err:?}");
        let err = load("current-context: nope\ncontexts: [{name: c, context: {cluster: k}}]")
            .unwrap_err();
        assert!(err.to_string().starts_with("context `nope` not found in "), "{err}");
        let err =
            load("current-context: c\ncontexts: [{name: c, context: {cluster: k}}]").unwrap_err();
        assert!(err.to_string().starts_with("cluster `k` not found in "), "{err}");
        let err = load("current-context: c\nclusters: [{name: k, cluster: {}}]\ncontexts: [{name: c, context: {cluster: k}}]").unwrap_err();
        assert!(err.to_string().ends_with("clusters[0].cluster.server: missing"), "{err}");
    }

    #[test]
    fn a_missing_user_connects_without_credentials() {
        let config = load(ONE_CONTEXT).unwrap();
        assert!(matches!(config.auth, Auth::None));
        assert!(config.identity.is_none());
    }

    #[test]
    fn token_and_basic_auth_together_are_rejected() {
        let err = load(&format!(
            "{ONE_CONTEXT}users: [{{name: u, user: {{token: t, username: a, password: b}}}}]"
        ))
        .unwrap_err();
        assert!(
            err.to_string().contains("users[0].user.token: more than one authentication method"),
            "{err}"
        );
        assert!(!err.to_string().contains(": t"), "{err}");
    }

    #[test]
    fn insecure_with_a_ca_is_rejected() {
        let ca = base64::engine::general_purpose::STANDARD
            .encode("-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----\n");
        let yaml = format!(
            "current-context: c\nclusters: [{{name: k, cluster: {{server: 'https://x', insecure-skip-tls-verify: true, certificate-authority-data: {ca}}}}}]\ncontexts: [{{name: c, context: {{cluster: k}}}}]"
        );
        let err = load(&yaml).unwrap_err();
        assert!(
            err.to_string()
                .contains("clusters[0].cluster.insecure-skip-tls-verify: cannot be combined"),
            "{err}"
        );
    }

    #[test]
    fn a_certificate_without_a_key_is_rejected() {
        let cert = base64::engine::general_purpose::STANDARD
            .encode("-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----\n");
        let err = load(&format!(
            "{ONE_CONTEXT}users: [{{name: u, user: {{client-certificate-data: {cert}}}}}]"
        ))
        .unwrap_err();
        assert!(err.to_string().contains("users[0].user.client-key-data: missing"), "{err}");
    }

    #[test]
    fn non_pem_data_is_rejected() {
        let data = base64::engine::general_purpose::STANDARD.encode("just bytes");
        let yaml = format!(
            "current-context: c\nclusters: [{{name: k, cluster: {{server: 'https://x', certificate-authority-data: {data}}}}}]\ncontexts: [{{name: c, context: {{cluster: k}}}}]"
        );
        let err = load(&yaml).unwrap_err();
        assert!(err.to_string().ends_with("clusters[0].cluster.certificate-authority-data: not PEM-encoded (no -----BEGIN line)"), "{err}");
    }

    #[test]
    fn a_missing_referenced_file_names_field_and_path() {
        let err =
            load(&format!("{ONE_CONTEXT}users: [{{name: u, user: {{tokenFile: no-such-token}}}}]"))
                .unwrap_err();
        let message = err.to_string();
        assert!(message.contains("users[0].user.tokenFile: cannot read "), "{message}");
        assert!(message.contains("no-such-token"), "{message}");
    }

    #[test]
    fn token_file_wins_over_token_and_static_credentials_win_over_exec() {
        let dir = TempDir::new("precedence");
        dir.write("token", "from-file");
        let exec = "exec: {apiVersion: client.authentication.k8s.io/v1, command: plugin}";
        let path = dir.write("config", &format!("{ONE_CONTEXT}users: [{{name: u, user: {{token: inline, tokenFile: token, {exec}}}}}]"));
        let config = Config::from_kubeconfig_file(&path, &KubeconfigOptions::default()).unwrap();
        assert!(
            matches!(&config.auth, Auth::TokenFile(file) if file == &dir.path().join("token")),
            "{:?}",
            config.auth
        );

        let path = dir.write(
            "config",
            &format!(
                "{ONE_CONTEXT}users: [{{name: u, user: {{username: a, password: b, {exec}}}}}]"
            ),
        );
        let config = Config::from_kubeconfig_file(&path, &KubeconfigOptions::default()).unwrap();
        assert!(
            matches!(&config.auth, Auth::Basic { username, .. } if username == "a"),
            "{:?}",
            config.auth
        );

        let path =
            dir.write("config", &format!("{ONE_CONTEXT}users: [{{name: u, user: {{{exec}}}}}]"));
        let config = Config::from_kubeconfig_file(&path, &KubeconfigOptions::default()).unwrap();
        assert!(
            matches!(&config.auth, Auth::Exec(exec) if exec.command == "plugin"),
            "{:?}",
            config.auth
        );
    }

    #[test]
    fn exec_settings_are_validated() {
        let cases = [
            (
                "{apiVersion: client.authentication.k8s.io/v1alpha1, command: p}",
                "users[0].user.exec.apiVersion: unsupported version",
            ),
            ("{command: p}", "users[0].user.exec.apiVersion: missing"),
            (
                "{apiVersion: client.authentication.k8s.io/v1}",
                "users[0].user.exec.command: missing",
            ),
            (
                "{apiVersion: client.authentication.k8s.io/v1, command: p, interactiveMode: Always}",
                "users[0].user.exec.interactiveMode: `Always` needs a terminal",
            ),
            (
                "{apiVersion: client.authentication.k8s.io/v1, command: p, env: [{value: x}]}",
                "users[0].user.exec.env[0].name: missing",
            ),
        ];
        for (exec, expected) in cases {
            let err = load(&format!("{ONE_CONTEXT}users: [{{name: u, user: {{exec: {exec}}}}}]"))
                .unwrap_err();
            assert!(err.to_string().contains(expected), "{exec}: {err}");
        }
    }

    #[test]
    fn yaml_scalars_that_look_like_numbers_are_read_as_strings() {
        let config = load(&format!(
            "{ONE_CONTEXT}users: [{{name: u, user: {{username: 42, password: 123456}}}}]"
        ))
        .unwrap();
        let Auth::Basic { username, password } = config.auth else { panic!("{:?}", config.auth) };
        assert_eq!(username, "42");
        assert_eq!(password.expose_secret(), "123456");
    }

    #[test]
    fn a_type_error_names_the_field_but_not_the_value() {
        let err = load(&format!(
            "{ONE_CONTEXT}users: [{{name: u, user: {{token: [secret-in-a-list]}}}}]"
        ))
        .unwrap_err();
        let message = err.to_string();
        assert!(message.contains("users[0].user.token"), "{message}");
        assert!(!message.contains("secret-in-a-list"), "{message}");
    }

    #[test]
    fn kubeconfig_paths_split_dedupe_and_default_to_home() {
        let env = Environment {
            kubeconfig: Some(OsString::from("/a/one::/b/two:/a/one")),
            home: Some(PathBuf::from("/home/me")),
            in_cluster: not_in_cluster(),
        };
        assert_eq!(env.kubeconfig_paths(), vec![PathBuf::from("/a/one"), PathBuf::from("/b/two")]);
        let env = Environment { kubeconfig: Some(OsString::new()), ..env };
        assert_eq!(env.kubeconfig_paths(), vec![PathBuf::from("/home/me/.kube/config")]);
    }

    #[test]
    fn infer_without_any_config_names_what_it_tried() {
        let env = Environment {
            kubeconfig: Some(OsString::from("/nonexistent/kubeconfig")),
            home: None,
            in_cluster: not_in_cluster(),
        };
        let err = Config::infer_from(&env).unwrap_err();
        assert!(matches!(err, ConfigError::NoConfig { .. }), "{err:?}");
        assert!(err.to_string().contains("/nonexistent/kubeconfig"), "{err}");
    }

    #[test]
    fn incluster_brackets_ipv6_hosts() {
        let dir = TempDir::new("incluster-ipv6");
        std::fs::write(dir.path().join("token"), "t").unwrap();
        let options = InClusterOptions {
            service_host: Some("fd00::1".to_owned()),
            service_port: Some("443".to_owned()),
            namespace: None,
            service_account_dir: dir.path().to_path_buf(),
        };
        let config = Config::incluster_with(&options).unwrap();
        assert_eq!(config.cluster_url.as_str(), "https://[fd00::1]/");
        assert_eq!(config.default_namespace, "default");
        assert!(config.root_certs_pem.is_none());
    }
}
