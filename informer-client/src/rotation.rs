//! TLS credentials that change while a client runs: the client certificate (from an exec
//! plugin, or from certificate and key files) and the CA bundle file.
//!
//! Where it sits: between the [`Authenticator`](super::config::auth::Authenticator), which obtains
//! credentials per request, and the connection pool of the [`Client`](crate::Client). rustls
//! asks [`PresentedCert`] for the client certificate of each new connection, and verifies the
//! server with [`RootsFile`]'s current roots; before each request [`TlsRotation::refresh`]
//! brings both up to date, and [`RotatingHttp`] opens a new connection pool whenever either
//! changed, so that no new request goes out over a connection made with the old identity.
//!
//! What client-go does, and what this does:
//!
//! | Credential | client-go | here |
//! |---|---|---|
//! | exec plugin certificate | plugin run again when `expirationTimestamp` passes or a 401 answers the certificate in use; all connections closed when the certificate changes | the same (run a little before the expiry); a new pool for new requests, while requests under way (watches) finish on their old connection |
//! | `client-certificate` and `client-key` files (both files, no `-data`) | read at most once a second per new connection; checked every 5 minutes, all connections closed on a change | checked before each request (the files' modification time and size), read again on a change and at least every 5 minutes; a new pool on a change |
//! | `certificate-authority` file (no `-data`), in-cluster `ca.crt` | `ClientsAllowCARotation` (beta, on, 1.36): read again at most every 5 minutes, idle connections closed on a change | checked before each request as above; a new pool on a change |
//! | token file | read again every minute | unchanged: see `auth` |
//!
//! A file that cannot be read or parsed again keeps the previous certificate or roots, with a
//! warning, as client-go does. TLS session resumption is off whenever a client certificate
//! can rotate: a resumed session would carry the identity it was made with.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use parking_lot::Mutex;
use rustls::client::ResolvesClientCert;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::sign::CertifiedKey;
use rustls::{DigitallySignedStruct, SignatureScheme};

use crate::config::auth::WallClock;
use crate::config::{Auth, Config, Identity, IdentityFiles, files, tls};
use crate::connections::Connections;
use crate::error::ClientError;

/// A file is read again at least this often even when its modification time and size did not
/// change (client-go checks its certificate files and CA bundle every 5 minutes).
const FILE_REREAD: Duration = Duration::from_secs(5 * 60);

/// The client certificate and CA bundle of a client, kept current; see the
/// [module documentation](self).
pub(crate) struct TlsRotation {
    /// What rustls presents on a new connection; `None` without any client certificate source.
    presented: Option<Arc<PresentedCert>>,
    /// `Config::identity` when it does not come from files.
    fixed: Option<Arc<CertifiedKey>>,
    /// `Config::identity_files`, read again when they change.
    files: Option<CertificateFiles>,
    /// `Config::root_certs_file`, read again when it changes.
    roots: Option<Arc<RootsFile>>,
    /// Whether the client certificate can change: it comes from files or an exec plugin.
    rotates: bool,
    /// Counts the changes of what TLS presents or trusts.
    generation: AtomicU64,
    clock: WallClock,
}

impl TlsRotation {
    /// The sources of `config`: its identity (fixed, or from files), an exec plugin's future
    /// certificates, and its CA bundle file.
    ///
    /// # Errors
    ///
    /// [`ClientError::Tls`] when `config.identity` or `config.root_certs_pem` is unusable.
    pub(crate) fn new(
        config: &Config,
        provider: &Arc<CryptoProvider>,
    ) -> Result<Self, ClientError> {
        Self::with_clock(config, provider, Arc::new(SystemTime::now))
    }

    /// [`TlsRotation::new`] with the wall clock given.
    pub(crate) fn with_clock(
        config: &Config,
        provider: &Arc<CryptoProvider>,
        clock: WallClock,
    ) -> Result<Self, ClientError> {
        let identity =
            config.identity.as_ref().map(|id| tls::certified_key(id, provider)).transpose()?;
        let (fixed, files) = match (&config.identity_files, identity) {
            (Some(paths), identity) => {
                (None, Some(CertificateFiles::new(paths, identity, provider)))
            }
            (None, identity) => (identity, None),
        };
        let exec = matches!(config.auth, Auth::Exec(_));
        let presented = (exec || fixed.is_some() || files.is_some()).then(|| {
            let initial =
                fixed.clone().or_else(|| files.as_ref().and_then(|f| f.state.lock().key.clone()));
            Arc::new(PresentedCert { key: Mutex::new(initial) })
        });
        // Insecure mode verifies nothing, so there is no CA to follow.
        let roots = match (&config.root_certs_file, &config.root_certs_pem) {
            (Some(path), Some(pem)) if !config.accept_invalid_certs => {
                Some(Arc::new(RootsFile::new(path.clone(), pem, provider)?))
            }
            _ => None,
        };
        let rotates = exec || files.is_some();
        Ok(Self { presented, fixed, files, roots, rotates, generation: AtomicU64::new(0), clock })
    }

    /// The resolver rustls asks for the client certificate of each connection, when the
    /// client has any source of one.
    pub(crate) fn resolver(&self) -> Option<Arc<dyn ResolvesClientCert>> {
        self.presented.clone().map(|presented| presented as Arc<dyn ResolvesClientCert>)
    }

    /// Whether the client certificate can change (then sessions must not be resumed).
    pub(crate) fn rotates(&self) -> bool {
        self.rotates
    }

    /// The verifier that follows the CA bundle file, when there is one.
    pub(crate) fn roots(&self) -> Option<Arc<dyn ServerCertVerifier>> {
        self.roots.clone().map(|roots| roots as Arc<dyn ServerCertVerifier>)
    }

    /// Brings the client certificate and roots up to date, `exec_cert` being the exec
    /// plugin's current certificate if it gave one (it wins over the configured identity).
    /// Returns the generation in effect: it changes whenever what new connections present or
    /// trust changed.
    pub(crate) fn refresh(&self, exec_cert: Option<&Arc<CertifiedKey>>) -> u64 {
        let now = (self.clock)();
        if self.roots.as_ref().is_some_and(|roots| roots.refresh(now)) {
            tracing::info!("the CA bundle changed; new requests use new connections");
            self.generation.fetch_add(1, Ordering::AcqRel);
        }
        if let Some(presented) = &self.presented {
            let key = exec_cert
                .cloned()
                .or_else(|| self.files.as_ref().and_then(|files| files.current(now)))
                .or_else(|| self.fixed.clone());
            if presented.set(key) {
                tracing::info!("the client certificate changed; new requests use new connections");
                self.generation.fetch_add(1, Ordering::AcqRel);
            }
        }
        self.generation.load(Ordering::Acquire)
    }
}

/// The client certificate new connections present (rustls asks at each handshake).
#[derive(Debug)]
pub(crate) struct PresentedCert {
    key: Mutex<Option<Arc<CertifiedKey>>>,
}

impl PresentedCert {
    /// Presents `key` from the next connection on; `true` when it differs from the previous.
    fn set(&self, key: Option<Arc<CertifiedKey>>) -> bool {
        let mut current = self.key.lock();
        let same = match (&*current, &key) {
            (None, None) => true,
            (Some(old), Some(new)) => Arc::ptr_eq(old, new) || old.cert == new.cert,
            _ => false,
        };
        if !same {
            *current = key;
        }
        !same
    }
}

impl ResolvesClientCert for PresentedCert {
    fn resolve(
        &self,
        _root_hint_subjects: &[&[u8]],
        _sigschemes: &[SignatureScheme],
    ) -> Option<Arc<CertifiedKey>> {
        self.key.lock().clone()
    }

    fn has_certs(&self) -> bool {
        self.key.lock().is_some()
    }
}

/// What a file looked like when it was read: a change of either means it was rewritten.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Stamp {
    modified: Option<SystemTime>,
    len: u64,
}

/// `None` when the file cannot be looked at (then reading it says why).
fn stamp(path: &std::path::Path) -> Option<Stamp> {
    // Follows symbolic links: a mounted Secret swaps its `..data` link on an update.
    let metadata = std::fs::metadata(path).ok()?;
    Some(Stamp { modified: metadata.modified().ok(), len: metadata.len() })
}

/// Whether a file last read at `read_at` with `seen` must be read again.
fn stale(
    seen: Option<&[Option<Stamp>]>,
    now_seen: &[Option<Stamp>],
    read_at: SystemTime,
    now: SystemTime,
) -> bool {
    // A clock that went backwards counts as no time passed.
    let age = now.duration_since(read_at).unwrap_or(Duration::ZERO);
    seen != Some(now_seen) || age >= FILE_REREAD
}

/// A client certificate and key in files (kubeconfig `client-certificate` and `client-key`).
struct CertificateFiles {
    paths: IdentityFiles,
    provider: Arc<CryptoProvider>,
    state: Mutex<FilesState>,
}

struct FilesState {
    /// The files' stamps when last read; `None`: not read since the client was built.
    seen: Option<[Option<Stamp>; 2]>,
    read_at: SystemTime,
    key: Option<Arc<CertifiedKey>>,
}

impl CertificateFiles {
    fn new(
        paths: &IdentityFiles,
        loaded: Option<Arc<CertifiedKey>>,
        provider: &Arc<CryptoProvider>,
    ) -> Self {
        Self {
            paths: paths.clone(),
            provider: Arc::clone(provider),
            state: Mutex::new(FilesState {
                seen: None,
                read_at: SystemTime::UNIX_EPOCH,
                key: loaded,
            }),
        }
    }

    /// The certificate and key, read again when either file changed.
    fn current(&self, now: SystemTime) -> Option<Arc<CertifiedKey>> {
        let stamps = [stamp(&self.paths.certificate), stamp(&self.paths.key)];
        let mut state = self.state.lock();
        if !stale(state.seen.as_ref().map(|s| &s[..]), &stamps, state.read_at, now) {
            return state.key.clone();
        }
        // Recorded whatever the outcome: a half-written pair (the certificate rewritten, the key
        // not yet) is read again when the second file changes, not on every request.
        state.seen = Some(stamps);
        state.read_at = now;
        match self.read() {
            Ok(key) => state.key = Some(key),
            Err(error) => {
                tracing::warn!(certificate = %self.paths.certificate.display(), key = %self.paths.key.display(), %error, "cannot read the client certificate files again; presenting the previous certificate");
            }
        }
        state.key.clone()
    }

    fn read(&self) -> Result<Arc<CertifiedKey>, ClientError> {
        let read = |path: &std::path::Path| {
            files::read(path).map_err(|error| {
                ClientError::Tls(format!("cannot read {}: {error}", path.display()))
            })
        };
        let cert_pem = read(&self.paths.certificate)?;
        let key_pem = String::from_utf8(read(&self.paths.key)?).map_err(|_| {
            ClientError::Tls(format!("{}: not PEM-encoded (not UTF-8)", self.paths.key.display()))
        })?;
        tls::certified_key(&Identity { cert_pem, key_pem: key_pem.into() }, &self.provider)
    }
}

/// Server certificate verification against a CA bundle file, read again when it changes.
pub(crate) struct RootsFile {
    path: PathBuf,
    provider: Arc<CryptoProvider>,
    state: Mutex<RootsState>,
}

struct RootsState {
    seen: Option<[Option<Stamp>; 1]>,
    read_at: SystemTime,
    /// The bundle the verifier was built from.
    pem: Vec<u8>,
    verifier: Arc<dyn ServerCertVerifier>,
}

impl std::fmt::Debug for RootsFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RootsFile").field("path", &self.path).finish_non_exhaustive()
    }
}

impl RootsFile {
    /// Roots read from `path` as `pem`.
    fn new(path: PathBuf, pem: &[u8], provider: &Arc<CryptoProvider>) -> Result<Self, ClientError> {
        let verifier = tls::roots_verifier(pem, provider)?;
        Ok(Self {
            path,
            provider: Arc::clone(provider),
            state: Mutex::new(RootsState {
                seen: None,
                read_at: SystemTime::UNIX_EPOCH,
                pem: pem.to_vec(),
                verifier,
            }),
        })
    }

    /// Reads the bundle again when the file changed; `true` when the roots changed.
    fn refresh(&self, now: SystemTime) -> bool {
        let stamps = [stamp(&self.path)];
        let mut state = self.state.lock();
        if !stale(state.seen.as_ref().map(|s| &s[..]), &stamps, state.read_at, now) {
            return false;
        }
        state.seen = Some(stamps);
        state.read_at = now;
        let pem = match files::read(&self.path) {
            Ok(pem) if pem.iter().all(u8::is_ascii_whitespace) => {
                // Mid-rewrite, or emptied: client-go keeps its roots too.
                tracing::warn!(path = %self.path.display(), "the CA bundle file is empty; keeping the previous roots");
                return false;
            }
            Ok(pem) => pem,
            Err(error) => {
                tracing::warn!(path = %self.path.display(), %error, "cannot read the CA bundle file again; keeping the previous roots");
                return false;
            }
        };
        if pem == state.pem {
            return false;
        }
        match tls::roots_verifier(&pem, &self.provider) {
            Ok(verifier) => {
                state.pem = pem;
                state.verifier = verifier;
                true
            }
            Err(error) => {
                tracing::warn!(path = %self.path.display(), %error, "the rewritten CA bundle is unusable; keeping the previous roots");
                false
            }
        }
    }

    fn current(&self) -> Arc<dyn ServerCertVerifier> {
        Arc::clone(&self.state.lock().verifier)
    }
}

impl ServerCertVerifier for RootsFile {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        self.current().verify_server_cert(
            end_entity,
            intermediates,
            server_name,
            ocsp_response,
            now,
        )
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.current().verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.current().verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.current().supported_verify_schemes()
    }
}

/// A connection pool replaced whenever the [`TlsRotation`] generation changes: connections
/// made with an old client certificate or old roots are not used for new requests (client-go
/// closes them). Requests under way keep theirs until they end; the old pool goes when its
/// last request does.
pub(crate) struct RotatingHttp {
    tls: TlsRotation,
    build: Box<dyn Fn() -> Result<Connections, ClientError> + Send + Sync>,
    current: Mutex<(u64, Arc<Connections>)>,
}

impl RotatingHttp {
    /// A pool built by `build`, replaced by a new one of `build`'s as `tls` changes.
    pub(crate) fn new(
        tls: TlsRotation,
        build: impl Fn() -> Result<Connections, ClientError> + Send + Sync + 'static,
    ) -> Result<Self, ClientError> {
        let first = Arc::new(build()?);
        let generation = tls.generation.load(Ordering::Acquire);
        Ok(Self { tls, build: Box::new(build), current: Mutex::new((generation, first)) })
    }

    /// The connections for the next request, with `exec_cert` the exec plugin's current
    /// certificate. Watches under way keep the connections they took until they end.
    pub(crate) fn client(&self, exec_cert: Option<&Arc<CertifiedKey>>) -> Arc<Connections> {
        let generation = self.tls.refresh(exec_cert);
        let mut current = self.current.lock();
        if current.0 != generation {
            // Recorded even on failure: one warning per change, not one per request.
            current.0 = generation;
            match (self.build)() {
                Ok(connections) => current.1 = Arc::new(connections),
                Err(error) => {
                    tracing::warn!(%error, "cannot open a new connection pool for the rotated credentials; new requests may reuse old connections");
                }
            }
        }
        Arc::clone(&current.1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::kubeconfig::tests::TempDir;

    /// A certificate and key (PEM) named `name`, and the certificate's DER.
    fn issue(name: &str) -> (String, String, Vec<u8>) {
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = rcgen::CertificateParams::new(vec![name.to_owned()])
            .unwrap()
            .self_signed(&key)
            .unwrap();
        (cert.pem(), key.serialize_pem(), cert.der().to_vec())
    }

    /// Rewrites `path` keeping its modification time: a change only the periodic re-read sees.
    fn rewrite_in_place(path: &std::path::Path, contents: &str) {
        let modified = std::fs::metadata(path).unwrap().modified().unwrap();
        std::fs::write(path, contents).unwrap();
        std::fs::File::options().write(true).open(path).unwrap().set_modified(modified).unwrap();
    }

    #[test]
    fn certificate_files_are_read_again_on_a_change_or_every_five_minutes() {
        let dir = TempDir::new("rotation-files");
        let first = issue("one");
        // The same size as the first (ECDSA signatures vary by a byte or two): only the contents
        // tell them apart.
        let second = std::iter::repeat_with(|| issue("two"))
            .find(|second| second.0.len() == first.0.len() && second.1.len() == first.1.len())
            .unwrap();
        let third = issue("three");
        let certificate = dir.write("tls.crt", &first.0);
        let key = dir.write("tls.key", &first.1);
        let mut config = Config::new(url::Url::parse("https://10.0.0.1:6443").unwrap());
        config.identity = Some(Identity {
            cert_pem: first.0.clone().into_bytes(),
            key_pem: first.1.clone().into(),
        });
        config.identity_files =
            Some(IdentityFiles { certificate: certificate.clone(), key: key.clone() });
        let now = Arc::new(Mutex::new(SystemTime::now()));
        let clock: WallClock = {
            let now = Arc::clone(&now);
            Arc::new(move || *now.lock())
        };
        let rotation = TlsRotation::with_clock(&config, &tls::provider(), clock).unwrap();
        let presented =
            || rotation.presented.as_ref().unwrap().key.lock().as_ref().unwrap().cert[0].to_vec();
        assert!(rotation.rotates());
        let start = rotation.refresh(None);
        assert_eq!(presented(), first.2);

        // Same size and time, other contents: unseen until five minutes have passed.
        rewrite_in_place(&key, &second.1);
        rewrite_in_place(&certificate, &second.0);
        *now.lock() += FILE_REREAD.checked_sub(Duration::from_secs(1)).unwrap();
        assert_eq!(rotation.refresh(None), start);
        assert_eq!(presented(), first.2);
        *now.lock() += Duration::from_secs(1);
        assert_eq!(rotation.refresh(None), start + 1);
        assert_eq!(presented(), second.2);

        // A new modification time: read at once. A half-written pair keeps the previous one.
        std::fs::write(&certificate, &third.0).unwrap();
        std::fs::File::options()
            .write(true)
            .open(&certificate)
            .unwrap()
            .set_modified(SystemTime::now() + Duration::from_secs(60))
            .unwrap();
        assert_eq!(rotation.refresh(None), start + 1, "the key is not the certificate's");
        assert_eq!(presented(), second.2);
        std::fs::write(&key, &third.1).unwrap();
        std::fs::File::options()
            .write(true)
            .open(&key)
            .unwrap()
            .set_modified(SystemTime::now() + Duration::from_secs(120))
            .unwrap();
        assert_eq!(rotation.refresh(None), start + 2);
        assert_eq!(presented(), third.2);

        // An exec plugin's certificate wins over the files.
        let exec = tls::certified_key(
            &Identity { cert_pem: first.0.into_bytes(), key_pem: first.1.into() },
            &tls::provider(),
        )
        .unwrap();
        assert_eq!(rotation.refresh(Some(&exec)), start + 3);
        assert_eq!(presented(), first.2);
    }
}
