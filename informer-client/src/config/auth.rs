//! Credentials at request time: static tokens, rotating token files, exec plugins.
//!
//! Sits between a loaded [`Config`] and each request: the HTTP client asks
//! [`Authenticator::credentials`] for the `Authorization` header and the exec plugin's client
//! certificate of every request, and calls [`Authenticator::invalidate_if_used`] after a 401.
//! Headers are marked sensitive, and nothing here logs a credential. Running the plugin is
//! `exec`'s; presenting its certificate, and following certificate and CA files, `rotation`'s.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use base64::Engine as _;
use futures::future::{BoxFuture, FutureExt as _, Shared};
use parking_lot::Mutex;
use reqwest::header::HeaderValue;
use rustls::sign::CertifiedKey;
use secrecy::{ExposeSecret, SecretString};

use super::exec::{PluginCredential, exec_info, run_plugin, run_plugin_blocking};
use super::kubeconfig::EXEC_API_VERSIONS;
use super::{Auth, Config, ConfigError, ExecConfig};

/// A token file is read again after this long even if its modification time did not change
/// (client-go's cached file token source re-reads every minute).
const TOKEN_FILE_REREAD: Duration = Duration::from_secs(60);
/// Exec credentials are refreshed this long before they expire, or half their lifetime if that
/// is shorter (so a short-lived credential is not refreshed on every request).
const EXEC_REFRESH_MARGIN: Duration = Duration::from_secs(30);
/// After a refresh failed while the cached credential is still valid, the next one starts no
/// sooner than this, so that a failing plugin is not run for every request until the
/// credential expires.
const EXEC_RETRY_AFTER_FAILURE: Duration = Duration::from_secs(5);

/// Wall-clock time, injectable for tests (exec credentials expire at wall-clock instants; TLS
/// credential files are checked against it, `client/rotation.rs`).
pub(crate) type WallClock = Arc<dyn Fn() -> SystemTime + Send + Sync>;

/// What one request is sent with: what [`Authenticator::credentials`] returns, and what
/// [`Authenticator::invalidate_if_used`] compares after a 401.
#[derive(Clone, Default)]
pub(crate) struct Credentials {
    /// The `Authorization` header, marked sensitive; `None`: no header.
    pub(crate) header: Option<HeaderValue>,
    /// The exec plugin's client certificate, to present instead of the configured identity.
    pub(crate) client_cert: Option<Arc<CertifiedKey>>,
    /// Which plugin run they came from: a 401 refreshes them only if no later run replaced
    /// them (a certificate-only credential has no header to compare).
    exec_run: Option<u64>,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field("header", &self.header.as_ref().map(|_| "[REDACTED]"))
            .field("client_cert", &self.client_cert.is_some())
            .field("exec_run", &self.exec_run)
            .finish()
    }
}

/// Produces the `Authorization` header (and exec-plugin client certificates) for requests.
///
/// Cheap to share behind an `Arc`; every method takes `&self`.
pub(crate) struct Authenticator {
    method: Method,
    clock: WallClock,
}

enum Method {
    /// No `Authorization` header.
    None,
    /// A bearer token or basic credentials that never change.
    Static(HeaderValue),
    /// A bearer token read from a file.
    TokenFile(TokenFile),
    /// A credential plugin.
    Exec(Arc<ExecPlugin>),
}

impl Authenticator {
    /// An authenticator for `config.auth`.
    ///
    /// Nothing is read or run yet: token files are read and plugins run on first use.
    pub(crate) fn new(config: &Config) -> Result<Self, ConfigError> {
        Self::with_clock(config, Arc::new(SystemTime::now))
    }

    /// [`Authenticator::new`] with the wall clock given.
    fn with_clock(config: &Config, clock: WallClock) -> Result<Self, ConfigError> {
        let method = match &config.auth {
            Auth::None => Method::None,
            Auth::Bearer(token) => Method::Static(bearer(token.expose_secret())?),
            Auth::Basic { username, password } => Method::Static(basic(username, password)?),
            Auth::TokenFile(path) => {
                Method::TokenFile(TokenFile { path: path.clone(), cached: Mutex::new(None) })
            }
            Auth::Exec(exec) => Method::Exec(Arc::new(ExecPlugin::new(exec, config)?)),
        };
        Ok(Self { method, clock })
    }

    /// The credentials of the next request, refreshing rotated token files and expired exec
    /// credentials: the Authorization header (`None` when requests carry none: no credentials,
    /// or an exec plugin that returns only a client certificate), and the exec plugin's client
    /// certificate, if it returned one.
    ///
    /// A token file is read again when its modification time changes, at least every minute,
    /// and after [`invalidate_if_used`](Self::invalidate_if_used); if it cannot be read again, the previous
    /// token is used (with a warning). An exec plugin runs when there is no cached credential,
    /// a little before the cached one expires, and after `invalidate`, one run at a time, for at
    /// most `Config::exec_timeout`. Callers whose cached credential has not expired get it at
    /// once, even while a run refreshes it (a failed refresh keeps it, with a warning); the
    /// others wait for the run.
    pub(crate) async fn credentials(&self) -> Result<Credentials, ConfigError> {
        let header = match &self.method {
            Method::None => None,
            Method::Static(header) => Some(header.clone()),
            Method::TokenFile(file) => Some(file.header((self.clock)())?),
            Method::Exec(plugin) => {
                let exec = plugin.credentials(&self.clock).await?;
                return Ok(Credentials {
                    header: exec.token,
                    client_cert: exec.client_cert,
                    exec_run: Some(exec.run),
                });
            }
        };
        Ok(Credentials { header, ..Credentials::default() })
    }

    /// The Authorization header of [`credentials`](Self::credentials).
    #[cfg(test)]
    pub(crate) async fn authorization(&self) -> Result<Option<HeaderValue>, ConfigError> {
        Ok(self.credentials().await?.header)
    }

    /// Forget cached credentials so the next request refreshes them.
    #[cfg(test)]
    pub(crate) fn invalidate(&self) {
        match &self.method {
            Method::None | Method::Static(_) => {}
            Method::TokenFile(file) => *file.cached.lock() = None,
            Method::Exec(plugin) => plugin.state.lock().cached = None,
        }
    }

    /// Forget cached credentials after a 401 answered to a request sent with `used` — only if
    /// they are still what was used (client-go's `maybeRefreshCreds`). When several requests
    /// fail with an old credential, the first 401 refreshes it and the later ones must not
    /// throw the fresh one away (which would run an exec plugin once per failed request).
    pub(crate) fn invalidate_if_used(&self, used: &Credentials) {
        match &self.method {
            Method::None | Method::Static(_) => {}
            Method::TokenFile(file) => {
                let mut cached = file.cached.lock();
                if cached.as_ref().map(|c| &c.header) == used.header.as_ref() {
                    *cached = None;
                }
            }
            Method::Exec(plugin) => {
                let mut state = plugin.state.lock();
                if state.cached.as_ref().map(|c| c.run) == used.exec_run {
                    state.cached = None;
                }
            }
        }
    }
}

impl std::fmt::Debug for Authenticator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let method = match &self.method {
            Method::None => "None".to_owned(),
            Method::Static(_) => "Static([REDACTED])".to_owned(),
            Method::TokenFile(file) => format!("TokenFile({})", file.path.display()),
            Method::Exec(plugin) => format!("Exec({})", plugin.config.command),
        };
        f.debug_struct("Authenticator")
            .field("method", &format_args!("{method}"))
            .finish_non_exhaustive()
    }
}

/// `Bearer {token}`, marked sensitive.
fn bearer(token: &str) -> Result<HeaderValue, ConfigError> {
    sensitive(format!("Bearer {}", token.trim()), "bearer token")
}

/// `Basic base64(username:password)`, marked sensitive.
fn basic(username: &str, password: &SecretString) -> Result<HeaderValue, ConfigError> {
    let credentials = base64::engine::general_purpose::STANDARD
        .encode(format!("{username}:{}", password.expose_secret()));
    sensitive(format!("Basic {credentials}"), "basic auth credentials")
}

fn sensitive(value: String, what: &'static str) -> Result<HeaderValue, ConfigError> {
    let mut header =
        HeaderValue::try_from(value).map_err(|_| ConfigError::InvalidHeader { what })?;
    header.set_sensitive(true);
    Ok(header)
}

/// A bearer token file and the token last read from it.
struct TokenFile {
    path: PathBuf,
    cached: Mutex<Option<CachedToken>>,
}

struct CachedToken {
    header: HeaderValue,
    read_at: SystemTime,
    /// The file's modification time when it was read.
    modified: Option<SystemTime>,
}

impl TokenFile {
    fn header(&self, now: SystemTime) -> Result<HeaderValue, ConfigError> {
        let modified = std::fs::metadata(&self.path).and_then(|metadata| metadata.modified()).ok();
        let mut cached = self.cached.lock();
        if let Some(token) = cached.as_ref() {
            // A clock that went backwards counts as no time passed.
            let age = now.duration_since(token.read_at).unwrap_or(Duration::ZERO);
            if token.modified == modified && age < TOKEN_FILE_REREAD {
                return Ok(token.header.clone());
            }
        }
        match read_token(&self.path) {
            Ok(header) => {
                tracing::debug!(path = %self.path.display(), "read bearer token file");
                *cached = Some(CachedToken { header: header.clone(), read_at: now, modified });
                Ok(header)
            }
            Err(err) => match cached.as_ref() {
                Some(token) => {
                    tracing::warn!(path = %self.path.display(), error = %err, "cannot read the token file again; using the previous token");
                    Ok(token.header.clone())
                }
                None => Err(err),
            },
        }
    }
}

fn read_token(path: &Path) -> Result<HeaderValue, ConfigError> {
    let token = SecretString::from(
        super::files::read_to_string(path)
            .map_err(|source| ConfigError::Io { path: path.to_path_buf(), source })?,
    );
    if token.expose_secret().trim().is_empty() {
        return Err(ConfigError::InvalidField {
            file: path.to_path_buf(),
            field: "token".to_owned(),
            reason: "the token file is empty".to_owned(),
        });
    }
    bearer(token.expose_secret())
}

/// A credential plugin and its cached credential.
///
/// The plugin runs once at a time (single flight), as a task of its own that every request
/// needing its result awaits; requests whose cached credential has not expired never wait for
/// it, even while it refreshes that credential.
struct ExecPlugin {
    config: ExecConfig,
    /// The `KUBERNETES_EXEC_INFO` value (no secrets: the cluster's public settings only).
    exec_info: String,
    /// How long one run may take ([`Config::exec_timeout`]).
    timeout: Duration,
    /// Parses the client certificates it returns.
    provider: Arc<rustls::crypto::CryptoProvider>,
    state: Mutex<ExecState>,
}

#[derive(Default)]
struct ExecState {
    cached: Option<ExecCredentials>,
    /// The run under way, if any.
    refresh: Option<Refresh>,
    /// How many runs succeeded: numbers each credential.
    runs: u64,
}

/// A run's outcome, shared by every request that waits for it.
type Refresh = Shared<BoxFuture<'static, Result<ExecCredentials, Arc<ConfigError>>>>;

/// What a plugin returned, ready for requests.
#[derive(Clone)]
struct ExecCredentials {
    token: Option<HeaderValue>,
    client_cert: Option<Arc<CertifiedKey>>,
    /// Which successful run returned it (1 for the first).
    run: u64,
    /// When it expires; `None`: never (until invalidated).
    expires: Option<SystemTime>,
    /// When to run the plugin again (a little before `expires`); `None`: never.
    refresh_at: Option<SystemTime>,
}

impl ExecCredentials {
    fn valid_at(&self, now: SystemTime) -> bool {
        self.expires.is_none_or(|at| now < at)
    }

    fn due_at(&self, now: SystemTime) -> bool {
        self.refresh_at.is_some_and(|at| now >= at)
    }
}

impl ExecPlugin {
    fn new(exec: &ExecConfig, config: &Config) -> Result<Self, ConfigError> {
        let error = |reason: String| ConfigError::Exec { command: exec.command.clone(), reason };
        if exec.command.is_empty() {
            return Err(error("no command is configured".to_owned()));
        }
        if !EXEC_API_VERSIONS.contains(&exec.api_version.as_str()) {
            return Err(error(format!(
                "unsupported apiVersion `{}` (use {})",
                exec.api_version,
                EXEC_API_VERSIONS.join(" or ")
            )));
        }
        Ok(Self {
            config: exec.clone(),
            exec_info: exec_info(exec, config),
            timeout: config.exec_timeout,
            provider: super::tls::provider(),
            state: Mutex::new(ExecState::default()),
        })
    }

    /// The credential for a request: the cached one while it is valid (starting a refresh in
    /// the background once it is due), else the outcome of the run under way, which is bounded
    /// by the plugin's timeout.
    async fn credentials(
        self: &Arc<Self>,
        clock: &WallClock,
    ) -> Result<ExecCredentials, ConfigError> {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            // Polled by another executor: no task can run the plugin beside this request.
            return self.credentials_blocking(clock);
        };
        let refresh = {
            let now = clock();
            let mut state = self.state.lock();
            let valid = state.cached.clone().filter(|cached| cached.valid_at(now));
            if let Some(cached) = valid.as_ref().filter(|cached| !cached.due_at(now)) {
                return Ok(cached.clone());
            }
            // A finished run that is still recorded was cancelled (its runtime shut down).
            let running = state.refresh.clone().filter(|run| run.peek().is_none());
            let refresh = running.unwrap_or_else(|| {
                let run = self.start_refresh(&runtime, Arc::clone(clock));
                state.refresh = Some(run.clone());
                run
            });
            if let Some(cached) = valid {
                return Ok(cached);
            }
            refresh
        };
        refresh.await.map_err(|err| self.duplicate(&err))
    }

    /// Run the plugin in a task of its own, which records the outcome whether or not any
    /// request awaits it.
    fn start_refresh(
        self: &Arc<Self>,
        runtime: &tokio::runtime::Handle,
        clock: WallClock,
    ) -> Refresh {
        let plugin = Arc::clone(self);
        let task = runtime.spawn(async move {
            let result = run_plugin(&plugin.config, &plugin.exec_info, plugin.timeout).await;
            let outcome = plugin.finish(result, clock());
            plugin.state.lock().refresh = None;
            outcome.map_err(Arc::new)
        });
        let command = self.config.command.clone();
        async move {
            task.await.unwrap_or_else(|err| {
                Err(Arc::new(ConfigError::Exec {
                    command,
                    reason: format!("the task running it ended early: {err}"),
                }))
            })
        }
        .boxed()
        .shared()
    }

    /// [`credentials`](Self::credentials) for callers that cannot await: the plugin runs on
    /// this thread's behalf, bounded by the same timeout.
    fn credentials_blocking(&self, clock: &WallClock) -> Result<ExecCredentials, ConfigError> {
        let now = clock();
        let cached = self.state.lock().cached.clone();
        if let Some(cached) = cached.filter(|cached| cached.valid_at(now) && !cached.due_at(now)) {
            return Ok(cached);
        }
        let result = run_plugin_blocking(&self.config, &self.exec_info, self.timeout);
        self.finish(result, clock())
    }

    /// Record a run's outcome. A new credential is cached. After a failure, a cached credential
    /// that has not expired is kept and returned (with a warning), and the next run waits
    /// [`EXEC_RETRY_AFTER_FAILURE`].
    fn finish(
        &self,
        result: Result<PluginCredential, ConfigError>,
        now: SystemTime,
    ) -> Result<ExecCredentials, ConfigError> {
        let credentials = result.and_then(|credential| self.credentials_from(&credential, now));
        let mut state = self.state.lock();
        match credentials {
            Ok(mut credentials) => {
                state.runs += 1;
                credentials.run = state.runs;
                state.cached = Some(credentials.clone());
                Ok(credentials)
            }
            Err(err) => {
                let Some(cached) = state.cached.as_mut().filter(|cached| cached.valid_at(now))
                else {
                    return Err(err);
                };
                tracing::warn!(command = %self.config.command, error = %err, "cannot refresh the exec credential; using the cached one until it expires");
                let retry = now.checked_add(EXEC_RETRY_AFTER_FAILURE).unwrap_or(now);
                cached.refresh_at =
                    Some(cached.expires.map_or(retry, |expires| expires.min(retry)));
                Ok(cached.clone())
            }
        }
    }

    fn credentials_from(
        &self,
        credential: &PluginCredential,
        now: SystemTime,
    ) -> Result<ExecCredentials, ConfigError> {
        let token =
            credential.token.as_ref().map(|token| bearer(token.expose_secret())).transpose()?;
        // Parsed here, so that an unusable certificate is the run's failure, not every
        // connection's.
        let client_cert = credential
            .identity
            .as_ref()
            .map(|identity| super::tls::certified_key(identity, &self.provider))
            .transpose()
            .map_err(|err| ConfigError::Exec {
                command: self.config.command.clone(),
                reason: format!("its client certificate cannot be used: {err}"),
            })?;
        let refresh_at = credential.expires.map(|expires| {
            let lifetime = expires.duration_since(now).unwrap_or(Duration::ZERO);
            expires.checked_sub(EXEC_REFRESH_MARGIN.min(lifetime / 2)).unwrap_or(expires)
        });
        match credential.expires {
            Some(expires) if expires <= now => {
                tracing::warn!(command = %self.config.command, "the exec credential plugin returned an expired credential");
            }
            Some(expires) => {
                tracing::debug!(command = %self.config.command, expires = %jiff::Timestamp::try_from(expires).map(|at| at.to_string()).unwrap_or_default(), "cached exec credential");
            }
            None => {
                tracing::debug!(command = %self.config.command, "cached exec credential without expiry");
            }
        }
        Ok(ExecCredentials { token, client_cert, run: 0, expires: credential.expires, refresh_at })
    }

    /// A run's error for one of the requests that waited for it (`ConfigError` is not `Clone`:
    /// it can hold an `io::Error`, which a run never returns).
    fn duplicate(&self, err: &ConfigError) -> ConfigError {
        match err {
            ConfigError::ExecNotFound { command, install_hint } => ConfigError::ExecNotFound {
                command: command.clone(),
                install_hint: install_hint.clone(),
            },
            ConfigError::Exec { command, reason } => {
                ConfigError::Exec { command: command.clone(), reason: reason.clone() }
            }
            ConfigError::InvalidHeader { what } => ConfigError::InvalidHeader { what },
            other => ConfigError::Exec {
                command: self.config.command.clone(),
                reason: other.to_string(),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt as _;

    use super::*;
    use crate::config::kubeconfig::tests::{TempDir, fixture};
    use crate::config::{InClusterOptions, KubeconfigOptions};

    /// A wall clock the test moves by hand.
    #[derive(Clone)]
    struct ManualClock(Arc<Mutex<SystemTime>>);

    impl ManualClock {
        fn at(rfc3339: &str) -> Self {
            Self(Arc::new(Mutex::new(time(rfc3339))))
        }

        fn set(&self, rfc3339: &str) {
            *self.0.lock() = time(rfc3339);
        }

        fn advance(&self, by: Duration) {
            *self.0.lock() += by;
        }

        fn wall_clock(&self) -> WallClock {
            let now = Arc::clone(&self.0);
            Arc::new(move || *now.lock())
        }
    }

    fn time(rfc3339: &str) -> SystemTime {
        SystemTime::from(rfc3339.parse::<jiff::Timestamp>().unwrap())
    }

    fn config_with(auth: Auth) -> Config {
        Config { auth, ..Config::new(url::Url::parse("https://10.0.0.1:6443").unwrap()) }
    }

    async fn header(auth: &Authenticator) -> String {
        auth.authorization().await.unwrap().unwrap().to_str().unwrap().to_owned()
    }

    /// The plugin fixture, made executable (git may not keep the mode).
    fn plugin() -> PathBuf {
        let script = fixture("exec-plugin.sh");
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        script
    }

    /// How many times the plugin ran.
    fn runs(counter: &Path) -> usize {
        std::fs::read_to_string(counter).map_or(0, |text| text.lines().count())
    }

    fn exec_config(dir: &TempDir, api_version: &str) -> ExecConfig {
        ExecConfig::new(api_version, plugin().to_string_lossy())
            .env("COUNTER_FILE", dir.path().join("runs").to_string_lossy())
            .env("API_VERSION", api_version)
            .env("EXPIRY", "2030-01-01T00:00:00Z")
    }

    /// How long a test waits for anything that should happen.
    const DEADLINE: Duration = Duration::from_secs(10);

    /// `future`, or a failed test if it does not finish within [`DEADLINE`].
    async fn within<F: std::future::Future>(what: &str, future: F) -> F::Output {
        tokio::time::timeout(DEADLINE, future)
            .await
            .unwrap_or_else(|_| panic!("{what}: not done within {DEADLINE:?}"))
    }

    /// The process id a hanging plugin wrote to `path`, once it is there.
    async fn pid_from(path: &Path) -> u32 {
        within("the plugin writing its process id", async {
            loop {
                if let Ok(pid) = std::fs::read_to_string(path) {
                    return pid.trim().parse().unwrap();
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
        .await
    }

    /// Waits for the plugin run under way, if any.
    async fn refreshed(auth: &Authenticator) {
        let Method::Exec(plugin) = &auth.method else { return };
        let run = plugin.state.lock().refresh.clone();
        if let Some(run) = run {
            let _ = within("the refresh", run).await;
        }
    }

    /// Whether process `pid` is gone: neither running nor a zombie waiting to be reaped.
    fn process_is_gone(pid: u32) -> bool {
        !Path::new(&format!("/proc/{pid}")).exists()
    }

    #[tokio::test]
    async fn bearer_and_basic_headers_are_sensitive() {
        let auth =
            Authenticator::new(&config_with(Auth::Bearer(SecretString::from("abc\n")))).unwrap();
        let value = auth.authorization().await.unwrap().unwrap();
        assert!(value.is_sensitive());
        assert_eq!(value.to_str().unwrap(), "Bearer abc");

        let basic =
            Auth::Basic { username: "admin".to_owned(), password: SecretString::from("pw") };
        let auth = Authenticator::new(&config_with(basic)).unwrap();
        let value = auth.authorization().await.unwrap().unwrap();
        assert!(value.is_sensitive());
        assert_eq!(value.to_str().unwrap(), "Basic YWRtaW46cHc=");
        assert!(!format!("{auth:?}").contains("YWRtaW46cHc="));

        let auth = Authenticator::new(&config_with(Auth::None)).unwrap();
        let credentials = auth.credentials().await.unwrap();
        assert!(credentials.header.is_none() && credentials.client_cert.is_none());
    }

    #[test]
    fn a_token_that_cannot_be_a_header_is_an_error_without_the_token() {
        let err =
            Authenticator::new(&config_with(Auth::Bearer(SecretString::from("bad\u{7f}token"))))
                .unwrap_err();
        assert_eq!(
            err.to_string(),
            "the bearer token contains characters that cannot be sent in an HTTP header"
        );
    }

    #[tokio::test]
    async fn in_cluster_token_is_reread_after_rotation() {
        let sa = TempDir::new("rotation");
        let token = sa.write("token", "token-one\n");
        sa.write("ca.crt", "-----BEGIN CERTIFICATE-----\nY2E=\n-----END CERTIFICATE-----\n");
        sa.write("namespace", "apps");
        let options = InClusterOptions {
            service_host: Some("10.96.0.1".to_owned()),
            service_port: Some("443".to_owned()),
            namespace: None,
            service_account_dir: sa.path().to_path_buf(),
        };
        let config = Config::incluster_with(&options).unwrap();
        assert_eq!(config.default_namespace, "apps");
        assert!(
            config
                .root_certs_pem
                .as_deref()
                .is_some_and(|pem| pem.starts_with(b"-----BEGIN CERTIFICATE-----"))
        );

        let clock = ManualClock::at("2026-01-01T00:00:00Z");
        let auth = Authenticator::with_clock(&config, clock.wall_clock()).unwrap();
        assert_eq!(header(&auth).await, "Bearer token-one");
        let first_mtime = std::fs::metadata(&token).unwrap().modified().unwrap();
        let rewrite = |contents: &str, mtime: SystemTime| {
            std::fs::write(&token, contents).unwrap();
            std::fs::File::options().write(true).open(&token).unwrap().set_modified(mtime).unwrap();
        };

        // Rewritten with the same mtime: cached until invalidated.
        rewrite("token-two", first_mtime);
        assert_eq!(header(&auth).await, "Bearer token-one");
        auth.invalidate();
        assert_eq!(header(&auth).await, "Bearer token-two");

        // Same mtime again: re-read once a minute has passed.
        rewrite("token-three", first_mtime);
        clock.advance(Duration::from_secs(59));
        assert_eq!(header(&auth).await, "Bearer token-two");
        clock.advance(Duration::from_secs(1));
        assert_eq!(header(&auth).await, "Bearer token-three");

        // A new mtime: re-read at once.
        rewrite("token-four", first_mtime + Duration::from_secs(10));
        assert_eq!(header(&auth).await, "Bearer token-four");

        // A vanished file keeps the last token rather than failing requests.
        std::fs::remove_file(&token).unwrap();
        assert_eq!(header(&auth).await, "Bearer token-four");
        auth.invalidate();
        assert!(matches!(auth.authorization().await, Err(ConfigError::Io { .. })));
    }

    // client-go's maybeRefreshCreds: only a 401 for the credential still cached refreshes it.
    #[tokio::test]
    async fn a_late_401_for_an_old_token_keeps_the_refreshed_one() {
        let dir = TempDir::new("exec-late-401");
        let counter = dir.path().join("runs");
        let clock = ManualClock::at("2029-12-31T23:00:00Z");
        let auth = Authenticator::with_clock(
            &config_with(Auth::Exec(exec_config(&dir, EXEC_API_VERSIONS[0]))),
            clock.wall_clock(),
        )
        .unwrap();
        let old = auth.credentials().await.unwrap();
        assert_eq!(runs(&counter), 1);
        auth.invalidate_if_used(&old); // the first 401: refresh
        assert_eq!(header(&auth).await, "Bearer exec-token-2");
        auth.invalidate_if_used(&old); // a late 401 for the old token: keep the new one
        assert_eq!(header(&auth).await, "Bearer exec-token-2");
        assert_eq!(runs(&counter), 2);
    }

    #[tokio::test]
    async fn exec_v1_token_is_cached_until_expiry_and_refreshed_after_invalidate() {
        let dir = TempDir::new("exec-v1");
        let counter = dir.path().join("runs");
        let clock = ManualClock::at("2029-12-31T23:00:00Z");
        let auth = Authenticator::with_clock(
            &config_with(Auth::Exec(exec_config(&dir, EXEC_API_VERSIONS[0]))),
            clock.wall_clock(),
        )
        .unwrap();
        assert_eq!(runs(&counter), 0, "plugins run on first use, not when built");

        for _ in 0..3 {
            assert_eq!(header(&auth).await, "Bearer exec-token-1");
        }
        assert_eq!(runs(&counter), 1);
        assert!(auth.credentials().await.unwrap().client_cert.is_none());
        assert_eq!(runs(&counter), 1, "a cached token-only credential has no certificate");

        auth.invalidate();
        assert_eq!(header(&auth).await, "Bearer exec-token-2");
        assert_eq!(runs(&counter), 2);

        // Shortly before the expiry (inside the refresh margin) the plugin runs again, while
        // requests go on with the cached token.
        clock.set("2029-12-31T23:59:29Z");
        assert_eq!(header(&auth).await, "Bearer exec-token-2");
        clock.set("2029-12-31T23:59:31Z");
        assert_eq!(header(&auth).await, "Bearer exec-token-2");
        refreshed(&auth).await;
        assert_eq!(header(&auth).await, "Bearer exec-token-3");
        assert_eq!(runs(&counter), 3);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn concurrent_requests_run_the_plugin_once() {
        let dir = TempDir::new("exec-concurrent");
        let auth = Arc::new(
            Authenticator::new(&config_with(Auth::Exec(exec_config(&dir, EXEC_API_VERSIONS[0]))))
                .unwrap(),
        );
        let requests: Vec<_> = (0..8)
            .map(|_| {
                let auth = Arc::clone(&auth);
                tokio::spawn(async move { header(&auth).await })
            })
            .collect();
        for request in requests {
            assert_eq!(request.await.unwrap(), "Bearer exec-token-1");
        }
        assert_eq!(runs(&dir.path().join("runs")), 1);
    }

    #[tokio::test]
    async fn exec_v1beta1_round_trip_and_version_mismatch() {
        let dir = TempDir::new("exec-v1beta1");
        let beta = EXEC_API_VERSIONS[1];
        let auth = Authenticator::new(&config_with(Auth::Exec(
            exec_config(&dir, beta).env("INFO_FILE", dir.path().join("info").to_string_lossy()),
        )))
        .unwrap();
        assert_eq!(header(&auth).await, "Bearer exec-token-1");
        let info: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.path().join("info")).unwrap())
                .unwrap();
        assert_eq!(
            info,
            serde_json::json!({"apiVersion": beta, "kind": "ExecCredential", "spec": {"interactive": false}})
        );

        // The plugin answers v1 to a v1beta1 request: rejected, as client-go does.
        let mismatched = exec_config(&dir, beta).env("API_VERSION", EXEC_API_VERSIONS[0]);
        let auth = Authenticator::new(&config_with(Auth::Exec(mismatched))).unwrap();
        let err = auth.authorization().await.unwrap_err();
        assert!(
            err.to_string().contains("it returned apiVersion `client.authentication.k8s.io/v1`"),
            "{err}"
        );
    }

    #[tokio::test]
    async fn exec_plugin_from_a_kubeconfig_gets_cluster_info() {
        let dir = TempDir::new("exec-kubeconfig");
        let _ = plugin();
        let mut config =
            Config::from_kubeconfig_file(fixture("exec-v1.yaml"), &KubeconfigOptions::default())
                .unwrap();
        let Auth::Exec(exec) = &mut config.auth else { panic!("{:?}", config.auth) };
        exec.env.push((
            "COUNTER_FILE".to_owned(),
            dir.path().join("runs").to_string_lossy().into_owned(),
        ));
        exec.env
            .push(("INFO_FILE".to_owned(), dir.path().join("info").to_string_lossy().into_owned()));
        let auth = Authenticator::new(&config).unwrap();
        assert_eq!(header(&auth).await, "Bearer exec-token-1");

        let info: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.path().join("info")).unwrap())
                .unwrap();
        let ca = base64::engine::general_purpose::STANDARD
            .encode(config.root_certs_pem.as_deref().unwrap());
        assert_eq!(
            info,
            serde_json::json!({
                "apiVersion": "client.authentication.k8s.io/v1",
                "kind": "ExecCredential",
                "spec": {
                    "interactive": false,
                    "cluster": {
                        "server": "https://10.0.0.3:6443",
                        "tls-server-name": "exec.internal",
                        "insecure-skip-tls-verify": false,
                        "certificate-authority-data": ca,
                        "config": {"audience": "fixture-audience"},
                    },
                },
            })
        );
    }

    #[tokio::test]
    async fn an_unusable_exec_certificate_is_an_error_that_does_not_quote_the_key() {
        let dir = TempDir::new("exec-cert");
        let counter = dir.path().join("runs");
        let auth = Authenticator::new(&config_with(Auth::Exec(
            exec_config(&dir, EXEC_API_VERSIONS[0]).env("MODE", "cert"),
        )))
        .unwrap();
        let err = auth.credentials().await.unwrap_err().to_string();
        assert!(err.contains("its client certificate cannot be used"), "{err}");
        assert!(!err.contains("ZXhlYy1rZXk="), "{err}");
        assert_eq!(runs(&counter), 1);
    }

    /// Client certificates and keys, PEM, as `cert-N.pem` and `key-N.pem` of `dir` for the
    /// fixture plugin's run N; returns each certificate's DER.
    fn issue_certificates(dir: &TempDir, count: usize) -> Vec<Vec<u8>> {
        (1..=count)
            .map(|run| {
                let key = rcgen::KeyPair::generate().unwrap();
                let params = rcgen::CertificateParams::new(vec![format!("client-{run}")]).unwrap();
                let cert = params.self_signed(&key).unwrap();
                dir.write(&format!("cert-{run}.pem"), &cert.pem());
                dir.write(&format!("key-{run}.pem"), &key.serialize_pem());
                cert.der().to_vec()
            })
            .collect()
    }

    /// The end-entity certificate the credentials present (DER), if any.
    fn presented(credentials: &Credentials) -> Option<Vec<u8>> {
        credentials.client_cert.as_ref().map(|key| key.cert[0].to_vec())
    }

    #[tokio::test]
    async fn an_exec_certificate_is_replaced_once_it_expires() {
        let dir = TempDir::new("exec-cert-expiry");
        let counter = dir.path().join("runs");
        let certs = issue_certificates(&dir, 2);
        let clock = ManualClock::at("2029-12-31T23:00:00Z");
        let exec = exec_config(&dir, EXEC_API_VERSIONS[0])
            .env("MODE", "cert")
            .env("CERT_DIR", dir.path().to_string_lossy());
        let auth =
            Authenticator::with_clock(&config_with(Auth::Exec(exec)), clock.wall_clock()).unwrap();
        let first = auth.credentials().await.unwrap();
        assert_eq!(presented(&first).as_ref(), Some(&certs[0]));
        assert!(first.header.is_none());

        clock.set("2029-12-31T23:59:00Z"); // valid, not due yet
        assert_eq!(presented(&auth.credentials().await.unwrap()).as_ref(), Some(&certs[0]));
        assert_eq!(runs(&counter), 1);
        clock.set("2030-01-01T00:00:01Z"); // expired: the request waits for the next run
        assert_eq!(presented(&auth.credentials().await.unwrap()).as_ref(), Some(&certs[1]));
        assert_eq!(runs(&counter), 2);

        // A late 401 for the first certificate keeps the second. (Every run of the fixture
        // expires at midnight: back before it, so that only a 401 could run it again.)
        clock.set("2029-12-31T23:59:00Z");
        auth.invalidate_if_used(&first);
        assert_eq!(presented(&auth.credentials().await.unwrap()).as_ref(), Some(&certs[1]));
        assert_eq!(runs(&counter), 2);
    }

    #[tokio::test]
    async fn exec_failures_carry_stderr_but_never_the_output() {
        let dir = TempDir::new("exec-fail");
        let auth = Authenticator::new(&config_with(Auth::Exec(
            exec_config(&dir, EXEC_API_VERSIONS[0]).env("MODE", "fail"),
        )))
        .unwrap();
        let err = auth.authorization().await.unwrap_err().to_string();
        assert!(
            err.contains(
                "failed (exit status: 3); stderr: exec-plugin: the identity provider refused"
            ),
            "{err}"
        );

        let auth = Authenticator::new(&config_with(Auth::Exec(
            exec_config(&dir, EXEC_API_VERSIONS[0]).env("MODE", "garbage"),
        )))
        .unwrap();
        let err = auth.authorization().await.unwrap_err().to_string();
        assert!(err.contains("its output is not JSON"), "{err}");
        assert!(!err.contains("exec-token"), "{err}");
        // A failed run is not cached: the next request runs the plugin again.
        assert!(auth.authorization().await.is_err());
        assert_eq!(runs(&dir.path().join("runs")), 3);
    }

    // A plugin's stderr helps to find out why it failed, but plugins print what they hold:
    // tokens, secrets, keys. The excerpt in the error keeps the words and masks those.
    #[tokio::test]
    async fn a_failed_plugins_stderr_reaches_the_error_without_its_credentials() {
        let dir = TempDir::new("exec-leaky");
        let auth = Authenticator::new(&config_with(Auth::Exec(
            exec_config(&dir, EXEC_API_VERSIONS[0]).env("MODE", "leaky"),
        )))
        .unwrap();
        let err = auth.authorization().await.unwrap_err().to_string();
        for kept in [
            "failed (exit status: 4)",
            "refresh failed: invalid_grant (the refresh token has expired)",
            "Authorization: Bearer [REDACTED]",
            "client_secret=[REDACTED] password: [REDACTED]",
            "[REDACTED PRIVATE KEY]",
            "run 'login --device' to sign in again",
        ] {
            assert!(err.contains(kept), "{kept:?} missing from {err}");
        }
        for secret in ["eyJhbGci", "c2lnbmF0dXJl", "hunter2", "MIIEvQIBADAN", "ghp_16C7e42F"] {
            assert!(!err.contains(secret), "{secret:?} leaked into {err}");
        }
    }

    #[tokio::test]
    async fn a_missing_plugin_shows_the_install_hint() {
        let config = Config::from_kubeconfig_file(
            fixture("exec-missing.yaml"),
            &KubeconfigOptions::default(),
        )
        .unwrap();
        let auth = Authenticator::new(&config).unwrap();
        let err = auth.authorization().await.unwrap_err();
        assert!(matches!(err, ConfigError::ExecNotFound { .. }), "{err:?}");
        let message = err.to_string();
        assert!(message.starts_with("exec credential plugin `informer-runtime-fixture-plugin-that-is-not-installed` not found"), "{message}");
        assert!(message.contains("Install it with: cargo install fixture-plugin"), "{message}");
    }

    #[tokio::test]
    async fn a_hung_plugin_is_killed_and_reaped_at_the_timeout() {
        let dir = TempDir::new("exec-hang");
        let pid_file = dir.path().join("pid");
        let exec = exec_config(&dir, EXEC_API_VERSIONS[0])
            .env("MODE", "hang")
            .env("PID_FILE", pid_file.to_string_lossy());
        let command = exec.command.clone();
        let config = config_with(Auth::Exec(exec)).exec_timeout(Duration::from_secs(1));
        let auth = Authenticator::new(&config).unwrap();

        let err = within("a request for a credential", auth.authorization()).await.unwrap_err();
        let message = err.to_string();
        assert!(matches!(err, ConfigError::Exec { .. }), "{err:?}");
        assert!(message.starts_with(&format!("exec credential plugin `{command}`")), "{message}");
        assert!(message.contains("did not finish within 1s"), "{message}");
        // What it said before it hung helps to find out why.
        assert!(message.contains("waiting for the identity provider"), "{message}");
        let pid = pid_from(&pid_file).await;
        assert!(process_is_gone(pid), "plugin process {pid} is still there");
    }

    #[test]
    fn a_hung_plugin_is_killed_on_the_blocking_path_too() {
        let dir = TempDir::new("exec-hang-blocking");
        let pid_file = dir.path().join("pid");
        let exec = exec_config(&dir, EXEC_API_VERSIONS[0])
            .env("MODE", "hang")
            .env("PID_FILE", pid_file.to_string_lossy());
        let config = config_with(Auth::Exec(exec)).exec_timeout(Duration::from_secs(1));
        let auth = Authenticator::new(&config).unwrap();

        let (sender, receiver) = std::sync::mpsc::channel();
        // No runtime on this thread: the plugin runs on the blocking path, within one poll.
        std::thread::spawn(move || {
            let mut context = std::task::Context::from_waker(std::task::Waker::noop());
            let credentials = std::pin::pin!(auth.credentials()).poll(&mut context);
            let std::task::Poll::Ready(result) = credentials else {
                panic!("without a runtime, credentials are obtained within one poll")
            };
            sender.send(result.map(|_| ()))
        });
        let err = receiver
            .recv_timeout(DEADLINE)
            .expect("credentials did not return within the deadline")
            .unwrap_err();
        assert!(err.to_string().contains("did not finish within 1s"), "{err}");
        let pid: u32 = std::fs::read_to_string(&pid_file).unwrap().trim().parse().unwrap();
        assert!(process_is_gone(pid), "plugin process {pid} is still there");
    }

    #[tokio::test]
    async fn a_plugin_that_prints_megabytes_is_an_error_at_the_output_limit() {
        let dir = TempDir::new("exec-flood");
        for mode in ["flood", "endless"] {
            let config =
                config_with(Auth::Exec(exec_config(&dir, EXEC_API_VERSIONS[0]).env("MODE", mode)));
            let auth = Authenticator::new(&config).unwrap();
            let message = within(mode, auth.authorization()).await.unwrap_err().to_string();
            assert!(
                message.contains("printed more than 1048576 bytes (1 MiB) to stdout"),
                "{mode}: {message}"
            );
            assert!(!message.contains("exec-plugin-output"), "{mode}: {message}");
        }
        // Megabytes on stderr are read and dropped while stdout is read: no deadlock.
        let config =
            config_with(Auth::Exec(exec_config(&dir, EXEC_API_VERSIONS[0]).env("MODE", "noisy")));
        let auth = Authenticator::new(&config).unwrap();
        assert_eq!(within("noisy", header(&auth)).await, "Bearer exec-token-3");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_valid_credential_is_used_while_a_hung_refresh_runs() {
        let dir = TempDir::new("exec-refresh-hang");
        let counter = dir.path().join("runs");
        let pid_file = dir.path().join("pid");
        let clock = ManualClock::at("2029-12-31T23:00:00Z");
        let exec = exec_config(&dir, EXEC_API_VERSIONS[0])
            .env("MODE_AFTER_FIRST", "hang")
            .env("PID_FILE", pid_file.to_string_lossy());
        // Long enough that a request that waited for the plugin would miss the deadline.
        let config = config_with(Auth::Exec(exec)).exec_timeout(Duration::from_secs(300));
        let auth = Arc::new(Authenticator::with_clock(&config, clock.wall_clock()).unwrap());
        assert_eq!(header(&auth).await, "Bearer exec-token-1");

        // Due for a refresh (inside the 30 s margin), but valid until midnight.
        clock.set("2029-12-31T23:59:45Z");
        assert_eq!(within("a request", header(&auth)).await, "Bearer exec-token-1");
        let pid = pid_from(&pid_file).await; // the refresh runs, and hangs
        let requests: Vec<_> = (0..4)
            .map(|_| {
                let auth = Arc::clone(&auth);
                tokio::spawn(async move { header(&auth).await })
            })
            .collect();
        for request in requests {
            assert_eq!(within("a request", request).await.unwrap(), "Bearer exec-token-1");
        }
        assert_eq!(runs(&counter), 2, "one refresh at a time");
        assert!(!process_is_gone(pid), "the refresh was not abandoned");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn without_a_valid_credential_requests_wait_for_one_refresh_and_its_timeout() {
        let dir = TempDir::new("exec-expired-hang");
        let counter = dir.path().join("runs");
        let clock = ManualClock::at("2029-12-31T23:00:00Z");
        let exec = exec_config(&dir, EXEC_API_VERSIONS[0]).env("MODE_AFTER_FIRST", "hang");
        let config = config_with(Auth::Exec(exec)).exec_timeout(Duration::from_secs(1));
        let auth = Arc::new(Authenticator::with_clock(&config, clock.wall_clock()).unwrap());
        assert_eq!(header(&auth).await, "Bearer exec-token-1");

        clock.set("2030-01-01T00:00:01Z"); // expired
        let requests: Vec<_> = (0..3)
            .map(|_| {
                let auth = Arc::clone(&auth);
                tokio::spawn(async move { auth.authorization().await.map(|_| ()) })
            })
            .collect();
        for request in requests {
            let err = within("a request", request).await.unwrap().unwrap_err();
            assert!(err.to_string().contains("did not finish within 1s"), "{err}");
        }
        assert_eq!(runs(&counter), 2, "the waiting requests shared one run");
    }

    #[tokio::test]
    async fn a_failed_refresh_keeps_the_valid_credential_until_it_expires() {
        let dir = TempDir::new("exec-refresh-fail");
        let counter = dir.path().join("runs");
        let clock = ManualClock::at("2029-12-31T23:00:00Z");
        let exec = exec_config(&dir, EXEC_API_VERSIONS[0]).env("MODE_AFTER_FIRST", "fail");
        let auth =
            Authenticator::with_clock(&config_with(Auth::Exec(exec)), clock.wall_clock()).unwrap();
        assert_eq!(header(&auth).await, "Bearer exec-token-1");

        clock.set("2029-12-31T23:59:45Z"); // due for a refresh, which fails
        for _ in 0..3 {
            assert_eq!(within("a request", header(&auth)).await, "Bearer exec-token-1");
        }
        refreshed(&auth).await;
        assert_eq!(header(&auth).await, "Bearer exec-token-1");
        assert_eq!(runs(&counter), 2, "no second try at once");
        clock.advance(EXEC_RETRY_AFTER_FAILURE);
        assert_eq!(header(&auth).await, "Bearer exec-token-1");
        refreshed(&auth).await;
        assert_eq!(runs(&counter), 3, "tried again a little later");
        clock.set("2030-01-01T00:00:00Z"); // expired: the failure reaches the request
        let err = within("a request", auth.authorization()).await.unwrap_err();
        assert!(err.to_string().contains("the identity provider refused"), "{err}");
    }
}
