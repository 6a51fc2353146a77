//! A real kube-apiserver and etcd on loopback, built from Kubernetes' Go modules.
//!
//! The Go program in `tests/kube-apiserver/` embeds etcd, starts kube-apiserver as its child and
//! prints one JSON line once the server is ready (see its `main.go`). This module builds it with
//! the machine's Go (`GOTOOLCHAIN=local`, Go's own caches make rebuilds cheap), starts it, and
//! talks to its control endpoint to restart the API server or compact etcd.
//!
//! A test run shares one server ([`KubeApiServer::shared`]): the one `cargo xtask ci` started
//! (passed in `INFORMER_KUBE_APISERVER`), or one started on first use and stopped when the test
//! process exits (the harness exits when its stdin closes). Tests that disrupt the server
//! (restart, compaction) take one of their own with [`KubeApiServer::start`].
//!
//! These tests belong to the full gate, not to a newcomer's `cargo test`: a cold build of the
//! harness downloads and compiles Kubernetes' Go modules for minutes. They run when `cargo xtask
//! ci` hands its server over, or with `INFORMER_REQUIRE_KUBE_APISERVER=1` (which `.ci/run` sets);
//! otherwise [`KubeApiServer::run_here`] prints one line saying how to run them and the tests
//! return early. Once asked for, a server that cannot be built or started (no Go, say) fails
//! them: CI never skips them silently.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

/// Where the harness is and what it serves: the JSON line it prints when ready.
#[derive(Clone, Debug, Deserialize, Serialize)]
pub struct Endpoints {
    /// The API server's URL (`https://127.0.0.1:PORT`).
    pub server: String,
    /// A kubeconfig with the contexts `cert` (client certificate, current) and `token`.
    pub kubeconfig: PathBuf,
    /// etcd's client URL.
    pub etcd: String,
    /// The harness's control endpoint (`POST /restart`, `POST /compact`).
    pub control: String,
    /// The harness's data directory.
    pub dir: PathBuf,
    /// The API server's log file.
    pub log: PathBuf,
}

/// A running harness: kube-apiserver and etcd.
pub struct KubeApiServer {
    endpoints: Endpoints,
    /// The harness process when this value started it; closing its stdin stops it.
    child: Mutex<Option<(Child, ChildStdin)>>,
}

/// The environment variable through which `cargo xtask ci` hands its running server to tests.
pub const ENDPOINTS_ENV: &str = "INFORMER_KUBE_APISERVER";
/// Where [`build`] puts the harness binary instead of `<target>/kube-apiserver/kube-apiserver`.
pub const BINARY_ENV: &str = "INFORMER_KUBE_APISERVER_BINARY";
/// Set to `1` to run the real-server tests in a plain `cargo test` (they need Go), failing them
/// when the server cannot be built or started.
pub const REQUIRE_ENV: &str = "INFORMER_REQUIRE_KUBE_APISERVER";

/// How long a cold build and the first start may take together.
const START_DEADLINE: Duration = Duration::from_secs(300);

impl KubeApiServer {
    /// Whether this test process runs the real-server tests: `cargo xtask ci` handed over its
    /// server ([`ENDPOINTS_ENV`]) or [`REQUIRE_ENV`] asks for them. Otherwise prints, once, one
    /// line saying how to run them, and returns `false`.
    pub fn run_here() -> bool {
        static SAID: OnceLock<()> = OnceLock::new();
        if std::env::var_os(ENDPOINTS_ENV).is_some() || required() {
            return true;
        }
        // Straight to stderr: libtest captures `eprintln!` of passing tests, and a skip must
        // never be silent.
        SAID.get_or_init(|| {
            let _ = writeln!(
                std::io::stderr(),
                "skipping the real kube-apiserver tests: `cargo xtask ci` runs them (or set \
                 {REQUIRE_ENV}=1, with Go 1.26 on the machine)"
            );
        });
        false
    }

    /// The server shared by this test run, or `None` when [`run_here`](Self::run_here) says
    /// the real-server tests are not run here.
    ///
    /// # Panics
    ///
    /// When they are run here and the server cannot be built or started.
    pub fn shared() -> Option<&'static KubeApiServer> {
        static SHARED: OnceLock<Result<KubeApiServer, String>> = OnceLock::new();
        if !Self::run_here() {
            return None;
        }
        let shared = SHARED.get_or_init(|| {
            if let Ok(json) = std::env::var(ENDPOINTS_ENV) {
                let endpoints = serde_json::from_str(&json)
                    .map_err(|e| format!("{ENDPOINTS_ENV} is not the harness's JSON: {e}"))?;
                return Ok(KubeApiServer { endpoints, child: Mutex::new(None) });
            }
            Self::start()
        });
        match shared {
            Ok(server) => Some(server),
            Err(reason) => panic!("the real kube-apiserver is unavailable: {reason}"),
        }
    }

    /// Builds the harness if needed and starts a server of the caller's own, stopped on drop.
    ///
    /// # Errors
    ///
    /// When Go is missing, the build fails, or the server is not ready in time; the message
    /// carries the harness's own error output.
    pub fn start() -> Result<KubeApiServer, String> {
        Self::start_with_flags(&[])
    }

    /// [`start`](Self::start) with extra kube-apiserver flags (`--name=value` each), added after
    /// the harness's own, so a later one wins: a server configured as a test needs it (a small
    /// `--http2-max-streams-per-connection`, say).
    ///
    /// # Errors
    ///
    /// As [`start`](Self::start); a flag kube-apiserver refuses fails the start, with its log.
    pub fn start_with_flags(flags: &[&str]) -> Result<KubeApiServer, String> {
        if let Some(flag) =
            flags.iter().find(|f| !f.starts_with("--") || f.contains(char::is_whitespace))
        {
            return Err(format!(
                "kube-apiserver flag {flag:?}: pass each flag as one `--name=value` without spaces"
            ));
        }
        let binary = build()?;
        let mut command = Command::new(&binary);
        if !flags.is_empty() {
            // The harness splits this on spaces (main.go's -apiserver-flags).
            command.arg(format!("--apiserver-flags={}", flags.join(" ")));
        }
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("starting {}: {e}", binary.display()))?;
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err("the harness's pipes were not set up".to_owned());
        };
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let read = BufReader::new(stdout).read_line(&mut line);
            let _ = tx.send(read.map(|_| line));
        });
        // The harness reports failures on stderr; keep them for the error, pass the rest on.
        let errors = std::thread::spawn(move || {
            let mut text = String::new();
            let _ = BufReader::new(stderr).read_to_string(&mut text);
            text
        });
        let line = match rx.recv_timeout(START_DEADLINE) {
            Ok(Ok(line)) if !line.trim().is_empty() => line,
            outcome => {
                let _ = child.kill();
                let _ = child.wait();
                let stderr = errors.join().unwrap_or_default();
                return Err(format!(
                    "the harness did not report ready ({}): {stderr}",
                    match outcome {
                        Err(_) => "timed out".to_owned(),
                        Ok(Err(e)) => format!("reading its output: {e}"),
                        Ok(Ok(_)) => "it exited".to_owned(),
                    }
                ));
            }
        };
        let endpoints: Endpoints = serde_json::from_str(line.trim())
            .map_err(|e| format!("the harness's ready line {line:?}: {e}"))?;
        Ok(KubeApiServer { endpoints, child: Mutex::new(Some((child, stdin))) })
    }

    /// A server of the caller's own started with extra kube-apiserver `flags` (see
    /// [`start_with_flags`](Self::start_with_flags)), or `None` exactly when
    /// [`run_here`](Self::run_here) says the real-server tests are not run here.
    ///
    /// # Panics
    ///
    /// When they are run here and the server cannot be built or started.
    #[must_use]
    pub fn private(flags: &[&str]) -> Option<KubeApiServer> {
        if !Self::run_here() {
            return None;
        }
        match Self::start_with_flags(flags) {
            Ok(server) => Some(server),
            Err(reason) => panic!("a kube-apiserver with flags {flags:?} is unavailable: {reason}"),
        }
    }

    /// Where the server is.
    pub fn endpoints(&self) -> &Endpoints {
        &self.endpoints
    }

    /// The kubeconfig to reach the server.
    pub fn kubeconfig(&self) -> &Path {
        &self.endpoints.kubeconfig
    }

    /// A client of this project for the kubeconfig's `context` (`cert` or `token`).
    ///
    /// # Panics
    ///
    /// When the kubeconfig the harness wrote cannot be read: a broken harness.
    #[allow(clippy::expect_used, reason = "the harness's own kubeconfig must load")]
    pub fn client(&self, context: &str) -> informer_client::Client {
        let config = informer_client::Config::from_kubeconfig_file(
            self.kubeconfig(),
            &informer_client::KubeconfigOptions::default().context(context),
        )
        .expect("the harness's kubeconfig loads");
        informer_client::Client::new(config).expect("a client for the harness")
    }

    /// A plain HTTPS client for tests that speak the protocol themselves: it trusts the
    /// harness's CA and sends the bearer token of the kubeconfig's `token` user.
    ///
    /// # Panics
    ///
    /// When the harness's CA or kubeconfig cannot be read: a broken harness.
    #[allow(clippy::expect_used, reason = "the harness's own CA and kubeconfig must load")]
    pub fn https_client(&self) -> reqwest::Client {
        use rustls::pki_types::CertificateDer;
        use rustls::pki_types::pem::PemObject;

        let _ = rustls::crypto::ring::default_provider().install_default();
        let ca = std::fs::read(self.endpoints.dir.join("ca.crt")).expect("the harness's ca.crt");
        let mut roots = rustls::RootCertStore::empty();
        for cert in CertificateDer::pem_slice_iter(&ca) {
            roots.add(cert.expect("a PEM certificate")).expect("a usable CA certificate");
        }
        let tls =
            rustls::ClientConfig::builder().with_root_certificates(roots).with_no_client_auth();
        let kubeconfig = std::fs::read_to_string(self.kubeconfig()).expect("the kubeconfig");
        let kubeconfig: serde_json::Value =
            serde_yaml_ng::from_str(&kubeconfig).expect("kubeconfig YAML");
        let token = kubeconfig["users"]
            .as_array()
            .into_iter()
            .flatten()
            .find_map(|u| u["user"]["token"].as_str())
            .expect("a token user in the kubeconfig");
        let mut headers = reqwest::header::HeaderMap::new();
        let bearer = format!("Bearer {token}").parse().expect("a header value");
        headers.insert(reqwest::header::AUTHORIZATION, bearer);
        reqwest::Client::builder()
            .tls_backend_preconfigured(tls)
            .default_headers(headers)
            .build()
            .expect("an HTTPS client")
    }

    /// Stops the API server and starts it again on the same port and etcd; returns once it is
    /// ready. Watches end, and the new server's watch cache starts at etcd's current revision.
    ///
    /// # Errors
    ///
    /// When the control endpoint fails, with its message.
    pub fn restart(&self) -> Result<(), String> {
        post(&self.endpoints.control, "/restart").map(drop)
    }

    /// Compacts etcd at its current revision; returns that revision.
    ///
    /// # Errors
    ///
    /// When the control endpoint fails, with its message.
    pub fn compact(&self) -> Result<u64, String> {
        let body = post(&self.endpoints.control, "/compact")?;
        let value: serde_json::Value =
            serde_json::from_str(&body).map_err(|e| format!("/compact answered {body:?}: {e}"))?;
        value["revision"].as_u64().ok_or_else(|| format!("/compact answered {body:?}"))
    }
}

impl Drop for KubeApiServer {
    fn drop(&mut self) {
        let taken = self.child.get_mut().map(Option::take).unwrap_or_default();
        if let Some((mut child, stdin)) = taken {
            // End of stdin is the harness's signal to stop everything and clean up.
            drop(stdin);
            let deadline = Instant::now() + Duration::from_secs(30);
            while Instant::now() < deadline {
                if let Ok(Some(_)) = child.try_wait() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn required() -> bool {
    std::env::var(REQUIRE_ENV).is_ok_and(|v| v == "1")
}

/// The `go` command, if this machine has one.
fn go() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|dir| dir.join("go")).find(|candidate| candidate.is_file())
}

/// The workspace root (this package sits one level below it).
fn workspace() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest.parent().map_or_else(|| manifest.to_path_buf(), Path::to_path_buf)
}

/// Builds the harness into `<target>/kube-apiserver/kube-apiserver` (or the path in
/// [`BINARY_ENV`], for a build that must not replace one another checkout's tests are using)
/// and returns its path.
///
/// The first build compiles kube-apiserver and etcd (minutes); later ones reuse Go's build
/// cache and relink only when a source changed.
///
/// # Errors
///
/// When Go is missing or the build fails, with Go's output.
pub fn build() -> Result<PathBuf, String> {
    let go = go().ok_or_else(|| "no `go` on PATH (Go 1.26 builds the harness)".to_owned())?;
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map_or_else(|| workspace().join("target"), PathBuf::from);
    let target = if target.is_absolute() { target } else { workspace().join(target) };
    let binary = std::env::var_os(BINARY_ENV)
        .map_or_else(|| target.join("kube-apiserver").join("kube-apiserver"), PathBuf::from);
    let output = Command::new(go)
        .args(["build", "-o"])
        .arg(&binary)
        .arg(".")
        .current_dir(workspace().join("tests").join("kube-apiserver"))
        .env("GOTOOLCHAIN", "local")
        .output()
        .map_err(|e| format!("running go build: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "go build in tests/kube-apiserver failed ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    Ok(binary)
}

/// `POST path` to the control endpoint; the body of a 200 answer.
fn post(control: &str, path: &str) -> Result<String, String> {
    let address = control.trim_start_matches("http://");
    let mut stream =
        TcpStream::connect(address).map_err(|e| format!("connecting to {control}: {e}"))?;
    stream.set_read_timeout(Some(START_DEADLINE)).map_err(|e| e.to_string())?;
    write!(
        stream,
        "POST {path} HTTP/1.1\r\nHost: {address}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    )
    .map_err(|e| format!("POST {control}{path}: {e}"))?;
    let mut response = String::new();
    stream.read_to_string(&mut response).map_err(|e| format!("POST {control}{path}: {e}"))?;
    let (head, body) = response.split_once("\r\n\r\n").unwrap_or((&response, ""));
    if head.starts_with("HTTP/1.1 200") {
        Ok(body.trim().to_owned())
    } else {
        Err(format!("POST {control}{path}: {head}: {}", body.trim()))
    }
}
