//! Optional authentication, as kube-apiserver authenticates (off by default): bearer tokens from
//! a set a test replaces while the server runs (its static token file, or a webhook whose
//! answers change), and, over TLS, client certificates signed by a client CA the server makes
//! (`--client-ca-file`).
//!
//! As in kube-apiserver, the TLS handshake asks for a client certificate but does not check it
//! (Go's `tls.RequestClientCert`); the x509 authenticator checks the chain and the validity
//! period on every request. So a certificate that expires while its HTTP/2 connection stays
//! open gets `401` on the next request over that connection, not a failed handshake. A request
//! that no authenticator accepts gets kube-apiserver's `401` `Status` (`Unauthorized`), as with
//! `--anonymous-auth=false`; there is no authorization: whoever authenticates may do anything.

use std::collections::HashSet;
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::http::{HeaderMap, header};
use parking_lot::RwLock;
use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair,
};
use rustls::client::danger::HandshakeSignatureValid;
use rustls::pki_types::{CertificateDer, UnixTime};
use rustls::server::WebPkiClientVerifier;
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::{DigitallySignedStruct, DistinguishedName, RootCertStore, SignatureScheme};

use crate::error::{Error, Result};

/// Who may make requests: see [`Config::bearer_tokens`](crate::Config::bearer_tokens) and
/// [`Config::client_certificates`](crate::Config::client_certificates). Its `Debug` shows how
/// many tokens there are, never a token.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Authentication {
    /// The bearer tokens accepted at start; `None`: bearer tokens are not checked (every
    /// request is let in unless client certificates are asked for).
    pub(crate) tokens: Option<Vec<String>>,
    /// Whether the server makes a client CA and accepts certificates it signs (TLS only).
    pub(crate) client_certificates: bool,
}

impl Authentication {
    /// Whether any request may be refused.
    #[must_use]
    pub fn is_enabled(&self) -> bool {
        self.tokens.is_some() || self.client_certificates
    }
}

impl fmt::Debug for Authentication {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Authentication")
            .field("tokens", &self.tokens.as_ref().map(Vec::len))
            .field("client_certificates", &self.client_certificates)
            .finish()
    }
}

/// A client certificate the server's client CA issued
/// ([`ServerHandle::issue_client_certificate`](crate::ServerHandle::issue_client_certificate)),
/// and its key, in PEM: what an exec credential plugin's `clientCertificateData` and
/// `clientKeyData` carry. `Debug` leaves the key out.
#[derive(Clone)]
pub struct ClientCertificate {
    /// The certificate.
    pub cert_pem: String,
    /// Its private key (PKCS#8).
    pub key_pem: String,
    /// The end of its validity, to the second (what an exec credential's
    /// `expirationTimestamp` would say).
    pub not_after: SystemTime,
}

impl fmt::Debug for ClientCertificate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientCertificate")
            .field("cert_pem", &self.cert_pem)
            .field("not_after", &self.not_after)
            .finish_non_exhaustive()
    }
}

/// The server's authenticators, shared by every connection.
pub(crate) struct Authenticator {
    /// The accepted bearer tokens; `None` while tokens are not checked.
    tokens: RwLock<Option<HashSet<String>>>,
    client_ca: Option<ClientCa>,
}

impl fmt::Debug for Authenticator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never a token: how many there are, and whether certificates are checked.
        f.debug_struct("Authenticator")
            .field("tokens", &self.tokens.read().as_ref().map(HashSet::len))
            .field("client_certificates", &self.client_ca.is_some())
            .finish()
    }
}

/// The CA whose certificates authenticate, with its key, to issue more.
struct ClientCa {
    issuer: CertifiedIssuer<'static, KeyPair>,
    /// Checks a chain against the CA at a given time: what every request goes through.
    verifier: Arc<dyn ClientCertVerifier>,
}

impl Authenticator {
    /// The authenticators `authentication` asks for; a client CA only when `tls` is on.
    ///
    /// # Errors
    ///
    /// [`Error::Tls`] when client certificates are asked for without TLS, or the CA cannot be
    /// made.
    pub(crate) fn new(authentication: &Authentication, tls: bool) -> Result<Self> {
        let tls_error = |what: &'static str| {
            move |source: Box<dyn std::error::Error + Send + Sync>| Error::Tls { what, source }
        };
        let client_ca = match (authentication.client_certificates, tls) {
            (false, _) => None,
            (true, false) => {
                return Err(tls_error("client certificate authentication")(
                    "client certificates are only presented over TLS: set Config::tls(true) \
                     with Config::client_certificates(true)"
                        .into(),
                ));
            }
            (true, true) => {
                let mut params = CertificateParams::new(Vec::<String>::new())
                    .map_err(|e| tls_error("the client CA's parameters")(e.into()))?;
                params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
                params.distinguished_name.push(DnType::CommonName, "embedded-apiserver-client-ca");
                let key =
                    KeyPair::generate().map_err(|e| tls_error("the client CA's key")(e.into()))?;
                let issuer = CertifiedIssuer::self_signed(params, key)
                    .map_err(|e| tls_error("the client CA")(e.into()))?;
                let mut roots = RootCertStore::empty();
                roots
                    .add(issuer.der().clone())
                    .map_err(|e| tls_error("the client CA's trust store")(e.into()))?;
                let provider = Arc::new(rustls::crypto::ring::default_provider());
                let verifier =
                    WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
                        .allow_unauthenticated()
                        .build()
                        .map_err(|e| tls_error("the client certificate verifier")(e.into()))?;
                Some(ClientCa { issuer, verifier })
            }
        };
        let tokens = authentication.tokens.as_ref().map(|t| t.iter().cloned().collect());
        Ok(Self { tokens: RwLock::new(tokens), client_ca })
    }

    /// What the TLS handshake uses: asks for a client certificate and checks that the client
    /// holds its key, but leaves the chain and the dates to each request.
    pub(crate) fn handshake_verifier(&self) -> Option<Arc<dyn ClientCertVerifier>> {
        self.client_ca
            .as_ref()
            .map(|ca| Arc::new(Deferred(Arc::clone(&ca.verifier))) as Arc<dyn ClientCertVerifier>)
    }

    /// The client CA's certificate, PEM.
    pub(crate) fn client_ca_pem(&self) -> Option<String> {
        self.client_ca.as_ref().map(|ca| ca.issuer.pem())
    }

    /// Replaces the accepted bearer tokens (and checks them from now on).
    pub(crate) fn set_tokens(&self, tokens: HashSet<String>) {
        *self.tokens.write() = Some(tokens);
    }

    /// Whether a request with `headers`, over a connection whose client presented `peer`
    /// (leaf first), is let in: by its certificate, valid now and signed by the client CA, or
    /// by a bearer token in the set; or because nothing is checked.
    pub(crate) fn authenticate(
        &self,
        headers: &HeaderMap,
        peer: Option<&[CertificateDer<'static>]>,
    ) -> bool {
        self.authenticate_at(headers, peer, UnixTime::now())
    }

    /// [`authenticate`](Self::authenticate) at the time `now`.
    fn authenticate_at(
        &self,
        headers: &HeaderMap,
        peer: Option<&[CertificateDer<'static>]>,
        now: UnixTime,
    ) -> bool {
        let tokens = self.tokens.read();
        if tokens.is_none() && self.client_ca.is_none() {
            return true;
        }
        if let (Some(ca), Some([leaf, intermediates @ ..])) = (&self.client_ca, peer)
            && ca.verifier.verify_client_cert(leaf, intermediates, now).is_ok()
        {
            return true;
        }
        bearer(headers).is_some_and(|token| tokens.as_ref().is_some_and(|t| t.contains(token)))
    }

    /// A certificate for `user` (its common name, which kube-apiserver takes as the user's
    /// name), valid from a second ago for `valid_for`.
    ///
    /// # Errors
    ///
    /// [`Error::Tls`] when the server has no client CA, or the certificate cannot be made.
    pub(crate) fn issue(&self, user: &str, valid_for: Duration) -> Result<ClientCertificate> {
        let tls_error = |what: &'static str| {
            move |source: Box<dyn std::error::Error + Send + Sync>| Error::Tls { what, source }
        };
        let Some(ca) = &self.client_ca else {
            return Err(tls_error("a client certificate")(
                "the server has no client CA: start it with Config::tls(true) and \
                 Config::client_certificates(true)"
                    .into(),
            ));
        };
        let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
        // Whole seconds, as X.509 times are: `not_after` is exactly what the certificate says.
        let now = Duration::from_secs(now.as_secs());
        let epoch = rcgen::date_time_ymd(1970, 1, 1);
        let mut params = CertificateParams::new(Vec::<String>::new())
            .map_err(|e| tls_error("a client certificate's parameters")(e.into()))?;
        params.distinguished_name.push(DnType::CommonName, user);
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        params.not_before = epoch + now.saturating_sub(Duration::from_secs(1));
        let not_after = now + valid_for;
        params.not_after = epoch + not_after;
        let key = KeyPair::generate().map_err(|e| tls_error("a client key")(e.into()))?;
        let cert = params
            .signed_by(&key, &ca.issuer)
            .map_err(|e| tls_error("a client certificate")(e.into()))?;
        Ok(ClientCertificate {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
            not_after: UNIX_EPOCH + Duration::from_secs(not_after.as_secs()),
        })
    }
}

/// The token of an `Authorization: Bearer ...` header (the scheme in any case, as
/// kube-apiserver reads it); `None` for any other or none.
fn bearer(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// A client certificate verifier that takes any chain at the handshake (the requests check
/// it), but still checks the handshake's signatures: the client must hold the key of the
/// certificate it presents.
#[derive(Debug)]
struct Deferred(Arc<dyn ClientCertVerifier>);

impl ClientCertVerifier for Deferred {
    fn offer_client_auth(&self) -> bool {
        true
    }

    fn client_auth_mandatory(&self) -> bool {
        false
    }

    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        self.0.root_hint_subjects()
    }

    fn verify_client_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        Ok(ClientCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

#[cfg(test)]
mod tests {
    use axum::http::HeaderValue;
    use rustls::pki_types::pem::PemObject;

    use super::*;

    fn headers(authorization: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::AUTHORIZATION,
            HeaderValue::from_str(authorization).unwrap_or_else(|e| panic!("{e}")),
        );
        headers
    }

    #[test]
    fn only_a_bearer_token_in_the_current_set_is_let_in() {
        let auth =
            Authentication { tokens: Some(vec!["old".to_owned()]), ..Authentication::default() };
        let authenticator = Authenticator::new(&auth, false).unwrap_or_else(|e| panic!("{e}"));
        assert!(authenticator.authenticate(&headers("Bearer old"), None));
        assert!(authenticator.authenticate(&headers("bearer old"), None));
        assert!(!authenticator.authenticate(&headers("Basic old"), None));
        assert!(!authenticator.authenticate(&HeaderMap::new(), None));
        authenticator.set_tokens(HashSet::from(["new".to_owned()]));
        assert!(!authenticator.authenticate(&headers("Bearer old"), None));
        assert!(authenticator.authenticate(&headers("Bearer new"), None));
    }

    #[test]
    fn without_authentication_every_request_is_let_in() {
        let authenticator =
            Authenticator::new(&Authentication::default(), false).unwrap_or_else(|e| panic!("{e}"));
        assert!(authenticator.authenticate(&HeaderMap::new(), None));
    }

    #[test]
    fn a_certificate_of_the_client_ca_is_let_in_until_it_expires() {
        let auth = Authentication { tokens: None, client_certificates: true };
        let authenticator = Authenticator::new(&auth, true).unwrap_or_else(|e| panic!("{e}"));
        let leaf = authenticator
            .issue("alice", Duration::from_secs(3600))
            .unwrap_or_else(|e| panic!("{e}"));
        let der = |pem: &str| {
            CertificateDer::pem_slice_iter(pem.as_bytes())
                .collect::<std::result::Result<Vec<_>, _>>()
                .unwrap_or_else(|e| panic!("{e}"))
        };
        let chain = der(&leaf.cert_pem);
        assert!(authenticator.authenticate(&HeaderMap::new(), Some(&chain)));
        // The same certificate on a request two hours later: expired, checked per request.
        let later = SystemTime::now() + Duration::from_secs(7200);
        let later =
            UnixTime::since_unix_epoch(later.duration_since(UNIX_EPOCH).unwrap_or_default());
        assert!(!authenticator.authenticate_at(&HeaderMap::new(), Some(&chain), later));
        let not_after = leaf.not_after.duration_since(UNIX_EPOCH).unwrap_or_default();
        assert_eq!(not_after.subsec_nanos(), 0, "not_after is whole seconds, as X.509 says");
        // Another CA's certificate is refused.
        let other = Authenticator::new(&auth, true).unwrap_or_else(|e| panic!("{e}"));
        let foreign =
            other.issue("eve", Duration::from_secs(3600)).unwrap_or_else(|e| panic!("{e}"));
        assert!(!authenticator.authenticate(&HeaderMap::new(), Some(&der(&foreign.cert_pem))));
    }

    #[test]
    fn client_certificates_need_tls() {
        let auth = Authentication { tokens: None, client_certificates: true };
        let error = Authenticator::new(&auth, false).err().map(|e| e.to_string());
        assert!(error.as_deref().is_some_and(|e| e.contains("Config::tls(true)")), "{error:?}");
    }
}
