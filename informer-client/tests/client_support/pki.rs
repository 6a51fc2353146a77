//! Certificates for the TLS tests, generated with `rcgen`: CAs, leaves signed by them, server
//! configurations, and a temporary directory for the files a configuration names.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use informer_client::Identity;
use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

/// A CA that signs server and client certificates.
pub struct Ca {
    issuer: CertifiedIssuer<'static, KeyPair>,
}

impl Ca {
    pub fn new(name: &str) -> Self {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, name);
        Self { issuer: CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap() }
    }

    pub fn pem(&self) -> Vec<u8> {
        self.issuer.pem().into_bytes()
    }

    pub fn der(&self) -> CertificateDer<'static> {
        self.issuer.der().clone()
    }

    /// A leaf certificate for `names` (DNS names or IP addresses): DER chain, key, and PEMs.
    pub fn leaf(&self, names: &[&str]) -> Leaf {
        let key = KeyPair::generate().unwrap();
        let mut params =
            CertificateParams::new(names.iter().map(|n| (*n).to_owned()).collect::<Vec<_>>())
                .unwrap();
        params
            .distinguished_name
            .push(DnType::CommonName, names.first().copied().unwrap_or("client"));
        let cert = params.signed_by(&key, &self.issuer).unwrap();
        Leaf { cert_pem: cert.pem(), cert_der: cert.der().clone(), key }
    }
}

pub struct Leaf {
    pub cert_pem: String,
    pub cert_der: CertificateDer<'static>,
    pub key: KeyPair,
}

impl Leaf {
    pub fn key_der(&self) -> PrivateKeyDer<'static> {
        PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(self.key.serialize_der()))
    }

    pub fn key_pem(&self) -> String {
        self.key.serialize_pem()
    }

    pub fn identity(&self) -> Identity {
        Identity { cert_pem: self.cert_pem.clone().into_bytes(), key_pem: self.key_pem().into() }
    }
}

pub fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// A server configuration builder requiring client certificates from `client_ca` when given.
fn server_builder(
    client_ca: Option<&Ca>,
) -> rustls::ConfigBuilder<rustls::ServerConfig, rustls::server::WantsServerCert> {
    let builder = rustls::ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .unwrap();
    match client_ca {
        None => builder.with_no_client_auth(),
        Some(ca) => {
            let mut roots = rustls::RootCertStore::empty();
            roots.add(ca.der()).unwrap();
            let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
                Arc::new(roots),
                provider(),
            )
            .build()
            .unwrap();
            builder.with_client_cert_verifier(verifier)
        }
    }
}

/// A server configuration presenting `leaf`, requiring client certificates from `client_ca`
/// when given.
pub fn server_config(leaf: &Leaf, client_ca: Option<&Ca>) -> rustls::ServerConfig {
    server_builder(client_ca).with_single_cert(vec![leaf.cert_der.clone()], leaf.key_der()).unwrap()
}

/// A server configuration presenting whichever leaf the returned [`ServingCert`] holds at
/// each handshake.
pub fn swappable_server_config(leaf: &Leaf) -> (rustls::ServerConfig, Arc<ServingCert>) {
    let serving = Arc::new(ServingCert(parking_lot::Mutex::new(certified(leaf))));
    let mut config = server_builder(None).with_cert_resolver(Arc::clone(&serving) as _);
    // An API server with a new certificate was restarted: it resumes no session from before,
    // and each connection verifies the certificate it is shown.
    config.session_storage = Arc::new(rustls::server::NoServerSessionStorage {});
    config.send_tls13_tickets = 0;
    (config, serving)
}

fn certified(leaf: &Leaf) -> Arc<rustls::sign::CertifiedKey> {
    Arc::new(
        rustls::sign::CertifiedKey::from_der(
            vec![leaf.cert_der.clone()],
            leaf.key_der(),
            &provider(),
        )
        .unwrap(),
    )
}

/// The server certificate of a [`swappable_server_config`].
#[derive(Debug)]
pub struct ServingCert(parking_lot::Mutex<Arc<rustls::sign::CertifiedKey>>);

impl ServingCert {
    /// Present `leaf` from the next handshake on.
    pub fn set(&self, leaf: &Leaf) {
        *self.0.lock() = certified(leaf);
    }
}

impl rustls::server::ResolvesServerCert for ServingCert {
    fn resolve(
        &self,
        _hello: rustls::server::ClientHello<'_>,
    ) -> Option<Arc<rustls::sign::CertifiedKey>> {
        Some(Arc::clone(&self.0.lock()))
    }
}

/// A directory under the system's temp dir, removed when dropped.
pub struct TempDir(PathBuf);

impl TempDir {
    pub fn new(name: &str) -> Self {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "informer-runtime-{name}-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).unwrap();
        Self(dir)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }

    /// Write `contents` to `name` in this directory, with a modification time later than any
    /// it had (a rewrite within the file system's time granularity must still look new), and
    /// return its path.
    pub fn write(&self, name: &str, contents: impl AsRef<[u8]>) -> PathBuf {
        static TICK: AtomicUsize = AtomicUsize::new(1);
        let path = self.0.join(name);
        std::fs::write(&path, contents).unwrap();
        let later = std::time::SystemTime::now()
            + std::time::Duration::from_secs(TICK.fetch_add(1, Ordering::Relaxed) as u64);
        std::fs::File::options().write(true).open(&path).unwrap().set_modified(later).unwrap();
        path
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
