//! Credentials rotated mid-run, as in production: the server authenticates every request, a
//! bearer token read from a file is rewritten and the old one refused (a projected service
//! account token, rotated by the kubelet), and, over TLS, the controller's replicas present
//! short-lived client certificates from an exec credential plugin (Teleport-style), which
//! expire while the run goes on.
//!
//! A background task does the rotating, through churn, quiescence and convergence alike (a
//! certificate that expires while the scenario waits must be replaced then too):
//!
//! - every [`TOKEN_EVERY`] (seeded), a new token is written to the token file, then the server
//!   is made to accept only it: requests still carrying the old one get `401`, after which
//!   the client reads the file again;
//! - the plugin prints `credential.json`, which the task rewrites with a new certificate
//!   from the server's client CA whenever a quarter of the current one's [`CERT_LIFETIME`]
//!   has passed. A credential says when it expires (the client runs the plugin again half way
//!   through) or, the second one and one in three after it (seeded), does not: that one
//!   stays in the file until it has expired, so that every client takes it, and learns that
//!   it expired only from the server's `401`s, on connections old and new.
//!
//! The report counts tokens and certificates issued, plugin runs, and the server's `401`s.

use std::fmt;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use embedded_apiserver::{ClientCertificate, ServerHandle};
use informer_runtime::client::{Auth, ExecConfig};
use k8s_openapi::jiff::Timestamp;
use parking_lot::Mutex;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// How often the token is replaced: a time drawn from this range, in milliseconds.
const TOKEN_EVERY: std::ops::Range<u64> = 1_500..4_000;
/// How long each client certificate is valid.
const CERT_LIFETIME: Duration = Duration::from_secs(6);
/// How often the rotating task looks at the clock.
const TICK: Duration = Duration::from_millis(100);
/// The exec credential API the plugin speaks.
const EXEC_API: &str = "client.authentication.k8s.io/v1";

/// What was rotated, for the report.
#[derive(Clone, Debug, Default)]
pub struct Counts {
    /// Tokens written to the token file (the first included), each the only one the server
    /// accepts from then on.
    pub tokens: u64,
    /// Client certificates issued into the plugin's output (the first included).
    pub certificates: u64,
    /// Of those, credentials that did not say when they expire.
    pub without_expiry: u64,
    /// Times the plugin ran (each a client fetching a certificate).
    pub plugin_runs: u64,
    /// Requests the server refused with `401`.
    pub unauthorized: u64,
}

impl fmt::Display for Counts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "credentials: {} tokens, {} certificates ({} without expiry), {} plugin runs, {} \
             requests refused with 401",
            self.tokens,
            self.certificates,
            self.without_expiry,
            self.plugin_runs,
            self.unauthorized
        )
    }
}

/// The credential files and the task that rotates them.
pub(crate) struct Credentials {
    dir: PathBuf,
    first_token: String,
    /// Draws the tokens after the first, and which credentials say when they expire.
    rng: fastrand::Rng,
    counts: Arc<Mutex<Counts>>,
    stop: CancellationToken,
    task: Option<JoinHandle<()>>,
}

/// A token no earlier run used: its number and a seeded random part.
fn token(rng: &mut fastrand::Rng, n: u64) -> String {
    format!("chaos-token-{n}-{:016x}", rng.u64(..))
}

impl Credentials {
    /// A directory for the files, and the first token: what the server must start with.
    pub(crate) fn new(seed: u64) -> Self {
        let dir = std::env::temp_dir()
            .join(format!("informer-chaos-credentials-{}-{seed:x}", std::process::id()));
        std::fs::create_dir_all(&dir)
            .unwrap_or_else(|e| panic!("chaos: creating {}: {e}", dir.display()));
        let mut rng = fastrand::Rng::with_seed(seed);
        let first_token = token(&mut rng, 0);
        Self {
            dir,
            first_token,
            rng,
            counts: Arc::default(),
            stop: CancellationToken::new(),
            task: None,
        }
    }

    /// The token the server starts with.
    pub(crate) fn first_token(&self) -> &str {
        &self.first_token
    }

    /// Writes the first token and, when `certificates`, the plugin and its first certificate;
    /// then rotates them until [`stop`](Self::stop).
    pub(crate) fn start(&mut self, server: &ServerHandle, certificates: bool) {
        write(&self.token_file(), &self.first_token);
        self.counts.lock().tokens = 1;
        if certificates {
            let script = self.dir.join("plugin.sh");
            let body = "#!/bin/sh\nset -eu\ndir=$(dirname \"$0\")\necho run >> \"$dir/runs\"\n\
                        cat \"$dir/credential.json\"\n";
            write(&script, body);
            std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755))
                .unwrap_or_else(|e| panic!("chaos: making {} executable: {e}", script.display()));
        }
        let mut rng = self.rng.clone();
        let next_token = Instant::now() + Duration::from_millis(rng.u64(TOKEN_EVERY));
        let mut rotor = Rotor {
            server: server.clone(),
            dir: self.dir.clone(),
            rng,
            counts: Arc::clone(&self.counts),
            tokens: 1,
            next_token,
            certificate: None,
            issued: 0,
        };
        if certificates {
            rotor.issue();
        }
        let stop = self.stop.clone();
        self.task = Some(tokio::spawn(async move {
            let mut ticks = tokio::time::interval(TICK);
            loop {
                tokio::select! {
                    () = stop.cancelled() => return,
                    _ = ticks.tick() => rotor.tick(certificates),
                }
            }
        }));
    }

    /// The token file's path.
    pub(crate) fn token_file(&self) -> PathBuf {
        self.dir.join("token")
    }

    /// How a client reads the rotating token.
    pub(crate) fn token_auth(&self) -> Auth {
        Auth::TokenFile(self.token_file())
    }

    /// How a client gets the short-lived certificates: the plugin.
    pub(crate) fn exec_auth(&self) -> Auth {
        let script = self.dir.join("plugin.sh");
        Auth::Exec(ExecConfig::new(EXEC_API, script.to_string_lossy().into_owned()))
    }

    /// The counts so far, with the server's `401`s.
    pub(crate) fn counts(&self, server: &ServerHandle) -> Counts {
        let mut counts = self.counts.lock().clone();
        counts.unauthorized = server.traffic().unauthorized;
        counts.plugin_runs = std::fs::read_to_string(self.dir.join("runs"))
            .map_or(0, |runs| runs.lines().count() as u64);
        counts
    }

    /// Stops rotating.
    pub(crate) async fn stop(&mut self) {
        self.stop.cancel();
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

impl Drop for Credentials {
    fn drop(&mut self) {
        self.stop.cancel();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The rotating task's state.
struct Rotor {
    server: ServerHandle,
    dir: PathBuf,
    rng: fastrand::Rng,
    counts: Arc<Mutex<Counts>>,
    tokens: u64,
    next_token: Instant,
    /// The certificate in the plugin's output, when it was issued, and whether the credential
    /// says when it expires.
    certificate: Option<(ClientCertificate, Instant, bool)>,
    /// Certificates issued so far.
    issued: u64,
}

impl Rotor {
    fn tick(&mut self, certificates: bool) {
        let now = Instant::now();
        if now >= self.next_token {
            // The file first, then the server: a client that read the old token gets a 401,
            // and reads the file again.
            let new = token(&mut self.rng, self.tokens);
            self.tokens += 1;
            write(&self.dir.join("token"), &new);
            self.server.set_bearer_tokens([new]);
            self.counts.lock().tokens += 1;
            self.next_token = now + Duration::from_millis(self.rng.u64(TOKEN_EVERY));
        }
        let stale = self.certificate.as_ref().is_some_and(|&(_, at, with_expiry)| {
            let lived = at.elapsed();
            if with_expiry { lived * 4 >= CERT_LIFETIME } else { lived >= CERT_LIFETIME }
        });
        if certificates && stale {
            self.issue();
        }
    }

    /// A new certificate into the plugin's output.
    fn issue(&mut self) {
        let cert = self
            .server
            .issue_client_certificate("chaos-controller", CERT_LIFETIME)
            .unwrap_or_else(|e| panic!("chaos: issuing a client certificate: {e}"));
        let mut status = serde_json::json!({
            "clientCertificateData": cert.cert_pem,
            "clientKeyData": cert.key_pem,
        });
        let with_expiry = self.issued != 1 && self.rng.u32(0..3) != 0;
        self.issued += 1;
        if with_expiry {
            let expires = Timestamp::try_from(cert.not_after)
                .unwrap_or_else(|e| panic!("chaos: a certificate's notAfter: {e}"));
            status["expirationTimestamp"] = expires.to_string().into();
        }
        let credential = serde_json::json!({
            "apiVersion": EXEC_API, "kind": "ExecCredential", "status": status,
        });
        write(&self.dir.join("credential.json"), &credential.to_string());
        let mut counts = self.counts.lock();
        counts.certificates += 1;
        counts.without_expiry += u64::from(!with_expiry);
        drop(counts);
        self.certificate = Some((cert, Instant::now(), with_expiry));
    }
}

/// Replaces `path` whole (a reader never sees half a file), with a modification time later
/// than the one it had, so that a rewrite within the file system's time granularity is still
/// seen as new.
fn write(path: &Path, contents: &str) {
    let fail = |what: &str, e: std::io::Error| panic!("chaos: {what} {}: {e}", path.display());
    let before = std::fs::metadata(path).and_then(|m| m.modified()).ok();
    let temporary = path.with_extension("new");
    std::fs::write(&temporary, contents).unwrap_or_else(|e| fail("writing", e));
    let now = SystemTime::now();
    let modified = before.map_or(now, |b| now.max(b + Duration::from_millis(1)));
    std::fs::File::options()
        .write(true)
        .open(&temporary)
        .and_then(|f| f.set_modified(modified))
        .unwrap_or_else(|e| fail("dating", e));
    std::fs::rename(&temporary, path).unwrap_or_else(|e| fail("replacing", e));
}
