//! The serving certificate: read from PEM files and read again when they change, as
//! cert-manager (or any controller of a Secret mounted as a volume) rotates them.
//!
//! The kubelet updates a Secret volume by writing the new files beside the old ones and
//! swapping a symlink (`..data`) to them: the file paths stay, their contents change at once.
//! So the files are polled: every interval (10 seconds by default, controller-runtime's
//! `certwatcher`'s), both are read (at most 1 MiB each) and, when either differs from what is
//! loaded, parsed and swapped in. Each new handshake uses the certificate loaded at that
//! moment; connections already open keep theirs. A pair that does not load (unreadable, not
//! PEM, a key that does not match the certificate, caught between two writes) is logged and
//! the previous pair keeps serving; the next poll tries again. Polling was chosen over
//! file-system notifications: a symlink swap replaces the inode a watch is on, and a read of
//! two small files every few seconds costs nothing.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::RwLock;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use tokio::io::AsyncReadExt as _;
use tokio_util::sync::CancellationToken;

/// The largest certificate or key file read: a chain of a few certificates is a few KiB.
const MAX_FILE_BYTES: u64 = 1024 * 1024;

/// ALPN protocol IDs, most preferred first: HTTP/2, then HTTP/1.1, as Go's `http.Server`
/// offers them (kube-apiserver's webhook client speaks either).
const ALPN: [&[u8]; 2] = [b"h2", b"http/1.1"];

/// Why a certificate and key did not load. The server keeps the pair it has, if any.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CertificateError {
    /// A file could not be read.
    #[error("reading {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// What the system said.
        #[source]
        source: std::io::Error,
    },
    /// A file is larger than a certificate chain or a key can be.
    #[error("{} is larger than {MAX_FILE_BYTES} bytes: not a PEM certificate or key", path.display())]
    TooLarge {
        /// The file.
        path: PathBuf,
    },
    /// The certificate PEM holds no certificate, or is not PEM.
    #[error("{what} holds no PEM certificate (`-----BEGIN CERTIFICATE-----`): {reason}")]
    Certificate {
        /// The file, or `the certificate PEM`.
        what: String,
        /// What the PEM reader said.
        reason: String,
    },
    /// The key PEM holds no private key, or is not PEM.
    #[error("{what} holds no PEM private key (PKCS#8, PKCS#1 or SEC1): {reason}")]
    Key {
        /// The file, or `the key PEM`.
        what: String,
        /// What the PEM reader said.
        reason: String,
    },
    /// The key is of a kind rustls cannot sign with, or does not match the certificate.
    #[error("the key in {key} does not serve the certificate in {cert}: {source}")]
    Mismatch {
        /// Where the certificate came from.
        cert: String,
        /// Where the key came from.
        key: String,
        /// What rustls said.
        #[source]
        source: rustls::Error,
    },
    /// The TLS configuration could not be made (the crypto provider supports no protocol
    /// version; not expected with rustls' ring provider).
    #[error("the TLS configuration could not be made: {0}")]
    Config(#[source] rustls::Error),
}

/// Where the serving certificate comes from.
#[derive(Clone)]
pub(crate) enum Source {
    /// PEM files, read again when they change.
    Files { cert: PathBuf, key: PathBuf },
    /// PEM in memory, loaded once.
    Pem { cert: Vec<u8>, key: Vec<u8> },
}

impl fmt::Debug for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Files { cert, key } => {
                f.debug_struct("Files").field("cert", cert).field("key", key).finish()
            }
            // The key is a secret: only its size.
            Self::Pem { cert, key } => f
                .debug_struct("Pem")
                .field("cert_bytes", &cert.len())
                .field("key_bytes", &key.len())
                .finish(),
        }
    }
}

/// The pair loaded, with the bytes it was loaded from (to tell a change).
struct Loaded {
    key: Arc<CertifiedKey>,
    cert_pem: Vec<u8>,
    key_pem: Vec<u8>,
}

/// What a reload did.
#[derive(Debug)]
pub(crate) enum Reload {
    /// The files hold what is loaded.
    Unchanged,
    /// A new pair is loaded.
    Loaded,
    /// The files did not load; the previous pair, if any, serves on.
    Failed(CertificateError),
}

/// The serving certificate, as rustls asks for it at each handshake.
pub(crate) struct Certificates {
    source: Source,
    provider: Arc<CryptoProvider>,
    current: RwLock<Option<Loaded>>,
}

impl fmt::Debug for Certificates {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Certificates")
            .field("source", &self.source)
            .field("loaded", &self.is_loaded())
            .finish_non_exhaustive()
    }
}

impl ResolvesServerCert for Certificates {
    fn resolve(&self, _client_hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        // `None` fails the handshake: no certificate has loaded yet.
        self.current.read().as_ref().map(|loaded| Arc::clone(&loaded.key))
    }
}

impl Certificates {
    pub(crate) fn new(source: Source) -> Self {
        Self {
            source,
            provider: Arc::new(rustls::crypto::ring::default_provider()),
            current: RwLock::new(None),
        }
    }

    /// Whether a certificate is loaded: handshakes succeed.
    pub(crate) fn is_loaded(&self) -> bool {
        self.current.read().is_some()
    }

    /// Whether the source is files, which change.
    pub(crate) fn reloads(&self) -> bool {
        matches!(self.source, Source::Files { .. })
    }

    /// Reads the source and, when it changed, loads it.
    pub(crate) async fn reload(&self) -> Reload {
        match &self.source {
            Source::Pem { .. } => match self.load_pem() {
                Ok(()) => Reload::Unchanged,
                Err(error) => Reload::Failed(error),
            },
            Source::Files { cert, key } => {
                let read =
                    async { Ok::<_, CertificateError>((read(cert).await?, read(key).await?)) };
                match read.await {
                    Ok((cert_pem, key_pem)) => {
                        let whats = (cert.display().to_string(), key.display().to_string());
                        self.install(cert_pem, key_pem, &whats)
                    }
                    Err(error) => Reload::Failed(error),
                }
            }
        }
    }

    /// Loads PEM given in memory, once.
    ///
    /// # Errors
    ///
    /// When it does not load.
    pub(crate) fn load_pem(&self) -> Result<(), CertificateError> {
        let Source::Pem { cert, key } = &self.source else { return Ok(()) };
        let whats = ("the certificate PEM".to_owned(), "the key PEM".to_owned());
        match self.install(cert.clone(), key.clone(), &whats) {
            Reload::Failed(error) => Err(error),
            Reload::Loaded | Reload::Unchanged => Ok(()),
        }
    }

    /// Loads `cert_pem` and `key_pem` unless they are what is loaded; `whats` name where they
    /// came from.
    fn install(&self, cert_pem: Vec<u8>, key_pem: Vec<u8>, whats: &(String, String)) -> Reload {
        let unchanged = self
            .current
            .read()
            .as_ref()
            .is_some_and(|loaded| loaded.cert_pem == cert_pem && loaded.key_pem == key_pem);
        if unchanged {
            return Reload::Unchanged;
        }
        match certified_key(&cert_pem, &key_pem, &whats.0, &whats.1, &self.provider) {
            Ok(key) => {
                *self.current.write() = Some(Loaded { key: Arc::new(key), cert_pem, key_pem });
                Reload::Loaded
            }
            Err(error) => Reload::Failed(error),
        }
    }

    /// Reloads every `interval` until `stop`, telling `observe` what each reload did.
    pub(crate) async fn watch(
        &self,
        interval: Duration,
        stop: CancellationToken,
        observe: impl Fn(&Reload),
    ) {
        loop {
            tokio::select! {
                () = tokio::time::sleep(interval) => {}
                () = stop.cancelled() => return,
            }
            let reload = self.reload().await;
            observe(&reload);
        }
    }

    /// The rustls configuration that serves these certificates, offering HTTP/2 and HTTP/1.1.
    pub(crate) fn server_config(
        self: &Arc<Self>,
    ) -> Result<rustls::ServerConfig, CertificateError> {
        let mut config = rustls::ServerConfig::builder_with_provider(Arc::clone(&self.provider))
            .with_safe_default_protocol_versions()
            .map_err(CertificateError::Config)?
            .with_no_client_auth()
            .with_cert_resolver(Arc::clone(self) as Arc<dyn ResolvesServerCert>);
        config.alpn_protocols = ALPN.iter().map(|p| p.to_vec()).collect();
        Ok(config)
    }
}

/// A file's bytes, at most [`MAX_FILE_BYTES`].
async fn read(path: &Path) -> Result<Vec<u8>, CertificateError> {
    let error = |source| CertificateError::Read { path: path.to_owned(), source };
    let file = tokio::fs::File::open(path).await.map_err(error)?;
    let mut bytes = Vec::new();
    file.take(MAX_FILE_BYTES + 1).read_to_end(&mut bytes).await.map_err(error)?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(CertificateError::TooLarge { path: path.to_owned() });
    }
    Ok(bytes)
}

/// The chain and key of two PEM documents, checked to belong together.
fn certified_key(
    cert_pem: &[u8],
    key_pem: &[u8],
    cert_what: &str,
    key_what: &str,
    provider: &CryptoProvider,
) -> Result<CertifiedKey, CertificateError> {
    let chain =
        CertificateDer::pem_slice_iter(cert_pem).collect::<Result<Vec<_>, _>>().map_err(|e| {
            CertificateError::Certificate { what: cert_what.to_owned(), reason: e.to_string() }
        })?;
    if chain.is_empty() {
        return Err(CertificateError::Certificate {
            what: cert_what.to_owned(),
            reason: "no certificate in it".to_owned(),
        });
    }
    let key = PrivateKeyDer::from_pem_slice(key_pem)
        .map_err(|e| CertificateError::Key { what: key_what.to_owned(), reason: e.to_string() })?;
    CertifiedKey::from_der(chain, key, provider).map_err(|source| CertificateError::Mismatch {
        cert: cert_what.to_owned(),
        key: key_what.to_owned(),
        source,
    })
}
