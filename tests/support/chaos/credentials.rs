//! Credentials rotated mid-run, as in production: the server authenticates every request,
//! bearer tokens read from files are rewritten and the old ones refused (projected service
//! account tokens, rotated by the kubelet), and, over TLS, the informers' client presents
//! short-lived client certificates from an exec credential plugin (Teleport-style), which
//! expire while the run goes on. Each client has a token file of its own (the informers'
//! client over plain HTTP, and each replica of the controller), so that one replica's token
//! can be revoked for a while ([`Revoker`]): its Lease renewals get `401`, and it loses the
//! Lease.
//!
//! A background task does the rotating, through churn, quiescence and convergence alike (a
//! certificate that expires while the scenario waits must be replaced then too):
//!
//! - every [`TOKEN_EVERY`] (seeded), a new token is written to each token file, then the server
//!   is made to accept only the new ones: requests still carrying an old one get `401`, after
//!   which the client reads its file again;
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
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime};

use embedded_apiserver::{ClientCertificate, ServerHandle};
use informer_client::{Auth, ExecConfig};
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
    /// Token rotations (the first tokens included): each time, every token file gets a new
    /// token and the server accepts only the new ones.
    pub tokens: u64,
    /// Replicas whose token was revoked until another replica took the Lease over.
    pub revocations: u64,
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
            "credentials: {} token rotations, {} tokens revoked, {} certificates ({} without \
             expiry), {} plugin runs, {} requests refused with 401",
            self.tokens,
            self.revocations,
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
    tokens: Arc<Mutex<Tokens>>,
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

/// The tokens of the clients, and the one revoked.
struct Tokens {
    /// The current token of each client.
    current: Vec<String>,
    /// A client whose token the server refuses for now.
    revoked: Option<usize>,
    /// Rotations so far (the first tokens are the first).
    rotations: u64,
}

impl Tokens {
    /// What the server accepts.
    fn accepted(&self) -> Vec<String> {
        let accepted = self.current.iter().enumerate().filter(|&(i, _)| Some(i) != self.revoked);
        accepted.map(|(_, token)| token.clone()).collect()
    }
}

/// Revokes one client's token until told to restore it.
#[derive(Clone)]
pub(crate) struct Revoker {
    tokens: Arc<Mutex<Tokens>>,
    server: ServerHandle,
    counts: Arc<Mutex<Counts>>,
}

impl Revoker {
    /// From now on the server refuses `client`'s token (and its next ones) with `401`.
    pub(crate) fn revoke(&self, client: usize) {
        let mut tokens = self.tokens.lock();
        tokens.revoked = Some(client);
        self.server.set_bearer_tokens(tokens.accepted());
        self.counts.lock().revocations += 1;
    }

    /// The server accepts every client's token again.
    pub(crate) fn restore(&self) {
        let mut tokens = self.tokens.lock();
        tokens.revoked = None;
        self.server.set_bearer_tokens(tokens.accepted());
    }
}

impl Credentials {
    /// A directory for the files, and a first token for each of `clients` clients: what the
    /// server must start with ([`first_tokens`](Self::first_tokens)).
    pub(crate) fn new(seed: u64, clients: usize) -> Self {
        // Runs in one process may share a seed (a replay of both transports), never a directory.
        static RUNS: AtomicU64 = AtomicU64::new(0);
        let run = RUNS.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir()
            .join(format!("informer-chaos-credentials-{}-{run}-{seed:x}", std::process::id()));
        std::fs::create_dir_all(&dir)
            .unwrap_or_else(|e| panic!("chaos: creating {}: {e}", dir.display()));
        let mut rng = fastrand::Rng::with_seed(seed);
        let current = (0..clients).map(|_| token(&mut rng, 0)).collect();
        let tokens = Tokens { current, revoked: None, rotations: 1 };
        Self {
            dir,
            tokens: Arc::new(Mutex::new(tokens)),
            rng,
            counts: Arc::default(),
            stop: CancellationToken::new(),
            task: None,
        }
    }

    /// The tokens the server starts with.
    pub(crate) fn first_tokens(&self) -> Vec<String> {
        self.tokens.lock().current.clone()
    }

    /// Writes the first tokens and, when `certificates`, the plugin and its first
    /// certificate; then rotates them until [`stop`](Self::stop).
    pub(crate) fn start(&mut self, server: &ServerHandle, certificates: bool) {
        for (client, token) in self.tokens.lock().current.iter().enumerate() {
            write(&self.token_file(client), token);
        }
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
            tokens: Arc::clone(&self.tokens),
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

    /// The path of `client`'s token file.
    fn token_file(&self, client: usize) -> PathBuf {
        self.dir.join(format!("token-{client}"))
    }

    /// How `client` reads its rotating token.
    pub(crate) fn token_auth(&self, client: usize) -> Auth {
        Auth::TokenFile(self.token_file(client))
    }

    /// What revokes a client's token, for a while, on `server`.
    pub(crate) fn revoker(&self, server: &ServerHandle) -> Revoker {
        Revoker {
            tokens: Arc::clone(&self.tokens),
            server: server.clone(),
            counts: Arc::clone(&self.counts),
        }
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
    tokens: Arc<Mutex<Tokens>>,
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
            // The files first, then the server: a client that read its old token gets a 401,
            // and reads its file again.
            let mut tokens = self.tokens.lock();
            let n = tokens.rotations;
            tokens.rotations += 1;
            for (client, current) in tokens.current.iter_mut().enumerate() {
                *current = token(&mut self.rng, n);
                write(&self.dir.join(format!("token-{client}")), current);
            }
            self.server.set_bearer_tokens(tokens.accepted());
            drop(tokens);
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
