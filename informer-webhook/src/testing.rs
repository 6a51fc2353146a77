//! Test support (feature `testing`): a throwaway certificate authority and the serving
//! certificates it issues, so that a test runs a [`WebhookServer`](crate::WebhookServer) on
//! loopback TLS and gives the API server (or its own client) the CA to trust, as a webhook
//! configuration's `caBundle` or through
//! [`with_conversion_webhook`](crate::crd::with_conversion_webhook).
//!
//! ```
//! use informer_webhook::WebhookServer;
//! use informer_webhook::testing::TestCa;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let ca = TestCa::new()?;
//! let serving = ca.issue(&["localhost", "127.0.0.1"])?;
//! let server = WebhookServer::builder()
//!     .conversion("/convert", informer_webhook::convert::Conversions::new())
//!     .certificate_pem(serving.cert_pem.clone(), serving.key_pem.clone())
//!     .build()?;
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
//! let url = format!("https://127.0.0.1:{}/convert", listener.local_addr()?.port());
//! let stop = informer_webhook::CancellationToken::new();
//! let serving = tokio::spawn({
//!     let (server, stop) = (server.clone(), stop.clone());
//!     async move { server.serve(listener, stop).await }
//! });
//! // ... point the API server at `url`, trusting `ca.ca_pem()` ...
//! # let _ = url;
//! stop.cancel();
//! serving.await?;
//! # Ok(())
//! # }
//! ```

use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair, SanType,
    SerialNumber,
};

/// Why a test certificate could not be made (the crypto library failed, or a name is not a
/// DNS name or an IP address).
#[derive(Debug, thiserror::Error)]
#[error("making the test {what}: {source}")]
pub struct TestCaError {
    what: &'static str,
    #[source]
    source: rcgen::Error,
}

/// A certificate authority for tests: its key lives as long as it does.
pub struct TestCa {
    issuer: CertifiedIssuer<'static, KeyPair>,
    next_serial: AtomicU64,
}

impl std::fmt::Debug for TestCa {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestCa").finish_non_exhaustive()
    }
}

/// A serving certificate and its key, as PEM.
#[derive(Clone)]
#[non_exhaustive]
pub struct TestCertificate {
    /// The certificate, then the CA's: the chain a server presents.
    pub cert_pem: String,
    /// The private key (PKCS#8).
    pub key_pem: String,
    /// The certificate's serial number: each one the CA issues has its own.
    pub serial: u64,
}

impl std::fmt::Debug for TestCertificate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestCertificate").field("serial", &self.serial).finish_non_exhaustive()
    }
}

impl TestCa {
    /// A new CA.
    ///
    /// # Errors
    ///
    /// When the crypto library cannot make a key or sign.
    pub fn new() -> Result<Self, TestCaError> {
        let error = |what| move |source| TestCaError { what, source };
        let mut params =
            CertificateParams::new(Vec::<String>::new()).map_err(error("CA's parameters"))?;
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, "informer-webhook test CA");
        params.serial_number = Some(SerialNumber::from(1));
        let key = KeyPair::generate().map_err(error("CA's key"))?;
        let issuer = CertifiedIssuer::self_signed(params, key).map_err(error("CA"))?;
        Ok(Self { issuer, next_serial: AtomicU64::new(2) })
    }

    /// The CA's certificate, PEM: the `caBundle` that trusts what it issues.
    #[must_use]
    pub fn ca_pem(&self) -> String {
        self.issuer.pem()
    }

    /// A serving certificate for `names`: DNS names, or IP addresses (`127.0.0.1`, `::1`).
    ///
    /// # Errors
    ///
    /// When a name is neither, or the crypto library fails.
    pub fn issue(&self, names: &[&str]) -> Result<TestCertificate, TestCaError> {
        let error = |what| move |source| TestCaError { what, source };
        let mut params =
            CertificateParams::new(Vec::<String>::new()).map_err(error("parameters"))?;
        for name in names {
            let san = match name.parse::<IpAddr>() {
                Ok(ip) => SanType::IpAddress(ip),
                Err(_) => SanType::DnsName((*name).try_into().map_err(error("DNS name"))?),
            };
            params.subject_alt_names.push(san);
        }
        params
            .distinguished_name
            .push(DnType::CommonName, names.first().copied().unwrap_or("webhook"));
        let serial = self.next_serial.fetch_add(1, Ordering::Relaxed);
        params.serial_number = Some(SerialNumber::from(serial));
        let key = KeyPair::generate().map_err(error("serving key"))?;
        let cert = params.signed_by(&key, &self.issuer).map_err(error("serving certificate"))?;
        Ok(TestCertificate {
            cert_pem: format!("{}{}", cert.pem(), self.issuer.pem()),
            key_pem: key.serialize_pem(),
            serial,
        })
    }
}

impl TestCertificate {
    /// Writes `tls.crt` and `tls.key` into `dir`, as a `kubernetes.io/tls` Secret's volume
    /// holds them, and returns their paths.
    ///
    /// # Errors
    ///
    /// When a file cannot be written.
    pub fn write_to(&self, dir: &Path) -> std::io::Result<(PathBuf, PathBuf)> {
        let (cert, key) = (dir.join("tls.crt"), dir.join("tls.key"));
        std::fs::write(&cert, &self.cert_pem)?;
        std::fs::write(&key, &self.key_pem)?;
        Ok((cert, key))
    }
}
