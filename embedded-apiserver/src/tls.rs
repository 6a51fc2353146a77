//! Serving over TLS, as kube-apiserver serves: a certificate authority and a serving certificate
//! made when the server starts, and ALPN offering `h2` before `http/1.1`, so that clients that
//! speak HTTP/2 (client-go, kube-rs, informer-client's `Client`) use it.
//!
//! The CA is new for each server and its key is forgotten once the serving certificate is
//! signed: nothing else can be issued under it. Clients trust it through
//! [`ServerHandle::ca_pem`](crate::ServerHandle::ca_pem) or the kubeconfig's
//! `certificate-authority-data`.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;

use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair, SanType};
use rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};
use rustls::server::danger::ClientCertVerifier;
use tokio_rustls::TlsAcceptor;

use crate::error::{Error, Result};

/// ALPN protocol IDs, most preferred first: what kube-apiserver (Go's `http.Server` with
/// HTTP/2 configured) offers.
const ALPN: [&[u8]; 2] = [b"h2", b"http/1.1"];

/// The ALPN ID of HTTP/2.
pub(crate) const H2: &[u8] = b"h2";

/// What serving TLS needs: the acceptor, and the CA for clients to trust.
#[derive(Clone)]
pub(crate) struct ServingTls {
    pub(crate) acceptor: TlsAcceptor,
    /// The CA certificate that signed the serving certificate, PEM.
    pub(crate) ca_pem: String,
}

impl std::fmt::Debug for ServingTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The serving key is inside the acceptor; only the CA is worth showing.
        f.debug_struct("ServingTls").field("ca_pem", &self.ca_pem).finish_non_exhaustive()
    }
}

impl ServingTls {
    /// A CA and a certificate for `addr`, valid for `localhost`, `127.0.0.1`, `::1` and the
    /// address's own IP (when it is not the unspecified address).
    ///
    /// # Errors
    ///
    /// [`Error::Tls`] when a key or a certificate cannot be made (the crypto library failed).
    /// With `client_verifier`, the handshake asks clients for a certificate and checks it with
    /// that verifier.
    pub(crate) fn generate(
        addr: SocketAddr,
        client_verifier: Option<Arc<dyn ClientCertVerifier>>,
    ) -> Result<Self> {
        let tls = |what: &'static str| {
            move |source: Box<dyn std::error::Error + Send + Sync>| Error::Tls { what, source }
        };
        let mut ca = CertificateParams::new(Vec::<String>::new())
            .map_err(|e| tls("the CA's parameters")(e.into()))?;
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca.distinguished_name.push(DnType::CommonName, "embedded-apiserver-ca");
        let ca_key = KeyPair::generate().map_err(|e| tls("the CA's key")(e.into()))?;
        let ca = CertifiedIssuer::self_signed(ca, ca_key).map_err(|e| tls("the CA")(e.into()))?;

        let mut serving = CertificateParams::new(vec!["localhost".to_owned()])
            .map_err(|e| tls("the serving certificate's parameters")(e.into()))?;
        serving.distinguished_name.push(DnType::CommonName, "embedded-apiserver");
        let mut ips =
            vec![IpAddr::V4(Ipv4Addr::LOCALHOST), IpAddr::V6(std::net::Ipv6Addr::LOCALHOST)];
        if !addr.ip().is_unspecified() && !ips.contains(&addr.ip()) {
            ips.push(addr.ip());
        }
        serving.subject_alt_names.extend(ips.into_iter().map(SanType::IpAddress));
        let key = KeyPair::generate().map_err(|e| tls("the serving key")(e.into()))?;
        let cert =
            serving.signed_by(&key, &ca).map_err(|e| tls("the serving certificate")(e.into()))?;

        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
        let builder = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| tls("the TLS protocol versions")(e.into()))?;
        let builder = match client_verifier {
            Some(verifier) => builder.with_client_cert_verifier(verifier),
            None => builder.with_no_client_auth(),
        };
        let mut config = builder
            .with_single_cert(vec![cert.der().clone(), ca.der().clone()], key)
            .map_err(|e| tls("the TLS configuration")(e.into()))?;
        config.alpn_protocols = ALPN.iter().map(|p| p.to_vec()).collect();
        Ok(Self { acceptor: TlsAcceptor::from(Arc::new(config)), ca_pem: ca.pem() })
    }
}
