//! TLS for the client: trust roots, client certificates, insecure mode and the server name.
//!
//! Where TLS sits in the data flow: below every request of the [`Client`](crate::Client). The
//! rustls configuration is built here from the [`Config`](crate::Config) (ring crypto), and
//! handed to reqwest whole:
//!
//! - **Roots**: `root_certs_pem` when set (kubeconfig `certificate-authority(-data)`, the
//!   in-cluster CA), else the platform's trust store (read with `rustls-native-certs`).
//! - **Client certificate**: asked of a resolver at each handshake, which hands out the current
//!   one (the identity from an exec plugin, else `config.identity`, either of which can rotate:
//!   see `client/rotation.rs`). Sessions are not resumed when it can rotate.
//! - **Roots from a file** (`certificate-authority`, the in-cluster `ca.crt`): a verifier that
//!   follows the file (`client/rotation.rs`, `RootsFile`).
//! - **`accept_invalid_certs`** (`insecure-skip-tls-verify`): any certificate chain is accepted,
//!   but the handshake signatures are still checked, so the peer must hold the key of the
//!   certificate it shows.
//! - **`tls_server_name`**: the name sent as SNI and verified in the certificate, instead of the
//!   URL's host. The client then addresses the server by that name and a resolver maps the name
//!   to the URL's real host ([`PinnedHost`]), so rustls sends and checks it natively. When that
//!   cannot work (through a proxy, which resolves names itself, or when the name is an IP
//!   address), the certificate is verified against the name ([`VerifyAs`]) and SNI stays the
//!   URL's host.

use std::net::SocketAddr;
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::{ResolvesClientCert, Resumption, WebPkiServerVerifier};
use rustls::crypto::{CryptoProvider, WebPkiSupportedAlgorithms};
use rustls::pki_types::pem::{self, PemObject};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::sign::CertifiedKey;
use rustls::{DigitallySignedStruct, DistinguishedName, RootCertStore, SignatureScheme};
use secrecy::ExposeSecret;

use super::Identity;
use crate::error::ClientError;

/// What the TLS configuration is built from.
pub(crate) struct TlsOptions<'a> {
    /// PEM CA certificates to trust instead of the platform's.
    pub(crate) root_certs_pem: Option<&'a [u8]>,
    /// A verifier that follows the CA bundle's file, used instead of one built from
    /// `root_certs_pem`.
    pub(crate) roots: Option<Arc<dyn ServerCertVerifier>>,
    /// Hands out the client certificate of each new connection.
    pub(crate) client_cert: Option<Arc<dyn ResolvesClientCert>>,
    /// Whether the client certificate can change: then no session is resumed, since a resumed
    /// session keeps the identity it was made with.
    pub(crate) client_cert_rotates: bool,
    /// Accept any certificate chain (handshake signatures are still verified).
    pub(crate) accept_invalid_certs: bool,
    /// Verify the certificate against this name instead of the connection's server name.
    pub(crate) verify_name: Option<&'a str>,
    /// Whether the cluster is reached over `https` (then trust roots are required).
    pub(crate) https: bool,
}

/// Builds the rustls client configuration; ALPN offers HTTP/2 and HTTP/1.1.
///
/// # Errors
///
/// [`ClientError::Tls`] for unreadable PEM, an unusable key, or no trust roots for `https`.
pub(crate) fn client_config(
    options: &TlsOptions<'_>,
    provider: &Arc<CryptoProvider>,
) -> Result<rustls::ClientConfig, ClientError> {
    let algorithms = provider.signature_verification_algorithms;
    let verifier: Arc<dyn ServerCertVerifier> = if options.accept_invalid_certs {
        Arc::new(AnyChain { algorithms, accept: true })
    } else if let Some(roots) = &options.roots {
        Arc::clone(roots)
    } else {
        let roots = match options.root_certs_pem {
            Some(pem) => roots_from_pem(pem)?,
            None => platform_roots(),
        };
        if roots.is_empty() {
            if options.https {
                return Err(ClientError::Tls(
                    "no trusted root certificates: set root_certs_pem (certificate-authority) or \
                     install the system CA certificates"
                        .to_owned(),
                ));
            }
            // Plain http: TLS is never used for the cluster; refuse it should anything try.
            Arc::new(AnyChain { algorithms, accept: false })
        } else {
            verifier_of(roots, provider)?
        }
    };
    let verifier = match options.verify_name {
        Some(name) => {
            let name = ServerName::try_from(name.to_owned())
                .map_err(|e| ClientError::Tls(format!("tls_server_name {name:?}: {e}")))?;
            Arc::new(VerifyAs { inner: verifier, name })
        }
        None => verifier,
    };
    let builder = rustls::ClientConfig::builder_with_provider(Arc::clone(provider))
        .with_safe_default_protocol_versions()
        .map_err(|e| ClientError::Tls(e.to_string()))?
        .dangerous()
        .with_custom_certificate_verifier(verifier);
    let mut config = match &options.client_cert {
        Some(resolver) => builder.with_client_cert_resolver(Arc::clone(resolver)),
        None => builder.with_no_client_auth(),
    };
    if options.client_cert_rotates {
        // client-go never resumes (Go's client has no session cache unless given one).
        config.resumption = Resumption::disabled();
    }
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(config)
}

/// The crypto provider of every TLS configuration and key of the client (ring).
pub(crate) fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// A verifier of server certificates against the CA certificates of `pem`.
///
/// # Errors
///
/// [`ClientError::Tls`] for unreadable PEM, or no usable certificate in it.
pub(crate) fn roots_verifier(
    pem: &[u8],
    provider: &Arc<CryptoProvider>,
) -> Result<Arc<dyn ServerCertVerifier>, ClientError> {
    verifier_of(roots_from_pem(pem)?, provider)
}

fn verifier_of(
    roots: RootCertStore,
    provider: &Arc<CryptoProvider>,
) -> Result<Arc<dyn ServerCertVerifier>, ClientError> {
    let verifier =
        WebPkiServerVerifier::builder_with_provider(Arc::new(roots), Arc::clone(provider))
            .build()
            .map_err(|e| ClientError::Tls(format!("building the certificate verifier: {e}")))?;
    Ok(verifier)
}

/// A client certificate chain and its key, ready to present.
///
/// # Errors
///
/// [`ClientError::Tls`] for unreadable PEM, a key of an unsupported kind, or a key that does
/// not belong to the certificate. The messages never quote the key.
pub(crate) fn certified_key(
    identity: &Identity,
    provider: &CryptoProvider,
) -> Result<Arc<CertifiedKey>, ClientError> {
    let chain = parse_certs(&identity.cert_pem, "client certificate")?;
    // Errors about the key never quote it.
    let key = PrivateKeyDer::from_pem_slice(identity.key_pem.expose_secret().as_bytes()).map_err(
        |e| match e {
            pem::Error::NoItemsFound => {
                ClientError::Tls("client key: no PRIVATE KEY block in the PEM data".to_owned())
            }
            _ => ClientError::Tls("client key: invalid PEM".to_owned()),
        },
    )?;
    let key = CertifiedKey::from_der(chain, key, provider)
        .map_err(|e| ClientError::Tls(format!("client certificate and key: {e}")))?;
    Ok(Arc::new(key))
}

fn parse_certs(pem: &[u8], what: &str) -> Result<Vec<CertificateDer<'static>>, ClientError> {
    let certs = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| ClientError::Tls(format!("{what}: invalid PEM: {e}")))?;
    if certs.is_empty() {
        return Err(ClientError::Tls(format!("{what}: no CERTIFICATE block in the PEM data")));
    }
    Ok(certs)
}

fn roots_from_pem(pem: &[u8]) -> Result<RootCertStore, ClientError> {
    let mut roots = RootCertStore::empty();
    for cert in parse_certs(pem, "root certificates")? {
        roots.add(cert).map_err(|e| {
            ClientError::Tls(format!("root certificates: unusable certificate: {e}"))
        })?;
    }
    Ok(roots)
}

fn platform_roots() -> RootCertStore {
    let found = rustls_native_certs::load_native_certs();
    for error in &found.errors {
        tracing::debug!(%error, "skipping a platform root certificate source");
    }
    let mut roots = RootCertStore::empty();
    let (added, ignored) = roots.add_parsable_certificates(found.certs);
    tracing::debug!(added, ignored, "loaded platform root certificates");
    roots
}

/// Insecure mode (`accept: true`): any chain, any name. With `accept: false`, no chain at all.
/// Either way, handshake signatures are verified with the provider's algorithms.
#[derive(Debug)]
struct AnyChain {
    algorithms: WebPkiSupportedAlgorithms,
    accept: bool,
}

impl ServerCertVerifier for AnyChain {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        if self.accept {
            Ok(ServerCertVerified::assertion())
        } else {
            Err(rustls::Error::General("no trusted root certificates are configured".to_owned()))
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

/// Verifies the server certificate against a fixed name instead of the connection's.
#[derive(Debug)]
struct VerifyAs {
    inner: Arc<dyn ServerCertVerifier>,
    name: ServerName<'static>,
}

impl ServerCertVerifier for VerifyAs {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        self.inner.verify_server_cert(end_entity, intermediates, &self.name, ocsp_response, now)
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }

    fn root_hint_subjects(&self) -> Option<&[DistinguishedName]> {
        self.inner.root_hint_subjects()
    }
}

/// Resolves the TLS server name to the cluster URL's real host, and any other name normally.
///
/// With `tls_server_name`, the client addresses the API server by that name, so that rustls
/// sends it as SNI and verifies it; this resolver makes the connection still go to the host
/// the cluster URL names.
#[derive(Debug)]
pub(crate) struct PinnedHost {
    /// The TLS server name the URLs now carry.
    pub(crate) name: String,
    /// The cluster URL's real host.
    pub(crate) host: url::Host<String>,
}

impl reqwest::dns::Resolve for PinnedHost {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let target = if name.as_str().eq_ignore_ascii_case(&self.name) {
            self.host.clone()
        } else {
            url::Host::Domain(name.as_str().to_owned())
        };
        Box::pin(async move {
            // Port 0: reqwest puts the URL's port in.
            let addrs: Vec<SocketAddr> = match target {
                url::Host::Ipv4(ip) => vec![SocketAddr::new(ip.into(), 0)],
                url::Host::Ipv6(ip) => vec![SocketAddr::new(ip.into(), 0)],
                url::Host::Domain(host) => {
                    tokio::net::lookup_host((host.as_str(), 0)).await?.collect()
                }
            };
            let addrs: reqwest::dns::Addrs = Box::new(addrs.into_iter());
            Ok(addrs)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options() -> TlsOptions<'static> {
        TlsOptions {
            root_certs_pem: None,
            roots: None,
            client_cert: None,
            client_cert_rotates: false,
            accept_invalid_certs: false,
            verify_name: None,
            https: true,
        }
    }

    #[test]
    fn insecure_needs_no_roots_and_offers_h2() {
        let config =
            client_config(&TlsOptions { accept_invalid_certs: true, ..options() }, &provider())
                .unwrap();
        assert_eq!(config.alpn_protocols, [b"h2".to_vec(), b"http/1.1".to_vec()]);
    }

    #[test]
    fn bad_root_pem_is_an_error() {
        let error = client_config(
            &TlsOptions { root_certs_pem: Some(b"not pem"), ..options() },
            &provider(),
        )
        .unwrap_err();
        assert!(error.to_string().contains("no CERTIFICATE block"), "{error}");
    }

    /// A self-signed client certificate and its PKCS#8 key, as PEM.
    fn client_identity() -> (Vec<u8>, String) {
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = rcgen::CertificateParams::new(vec!["client".to_owned()])
            .unwrap()
            .self_signed(&key)
            .unwrap();
        (cert.pem().into_bytes(), key.serialize_pem())
    }

    #[test]
    fn a_client_key_is_read_with_its_certificate_and_a_missing_or_broken_one_is_named() {
        let (cert_pem, key_pem) = client_identity();
        let identity = Identity { cert_pem: cert_pem.clone(), key_pem: key_pem.clone().into() };
        assert!(certified_key(&identity, &provider()).is_ok());

        // The certificate's PEM where the key's should be: no key block at all.
        let identity = Identity {
            cert_pem: cert_pem.clone(),
            key_pem: String::from_utf8(cert_pem.clone()).unwrap().into(),
        };
        let error = certified_key(&identity, &provider()).unwrap_err();
        assert!(error.to_string().contains("no PRIVATE KEY block"), "{error}");

        // A key block cut short: invalid, and the message quotes none of it.
        let cut = &key_pem[..key_pem.len() / 2];
        let identity = Identity { cert_pem, key_pem: cut.to_owned().into() };
        let error = certified_key(&identity, &provider()).unwrap_err().to_string();
        assert!(error.contains("client key: invalid PEM"), "{error}");
        let body = cut.lines().nth(1).unwrap();
        assert!(!error.contains(body), "{error}");
    }

    #[test]
    fn bad_client_key_is_an_error_that_does_not_quote_it() {
        let identity =
            Identity { cert_pem: b"junk".to_vec(), key_pem: "super-secret".to_owned().into() };
        let error = certified_key(&identity, &provider()).unwrap_err();
        assert!(!error.to_string().contains("super-secret"));
    }

    #[test]
    fn invalid_server_name_is_an_error() {
        let error = client_config(
            &TlsOptions {
                verify_name: Some("not a name!"),
                accept_invalid_certs: true,
                ..options()
            },
            &provider(),
        )
        .unwrap_err();
        assert!(error.to_string().contains("tls_server_name"), "{error}");
    }
}
