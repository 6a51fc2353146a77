//! How a request reaches the API server: through this crate's own reqwest client (feature
//! `http`), or (feature `kube`) through a kube-rs `kube::Client`.
//!
//! Where it sits in the data flow: under every request of a [`Client`](super::Client), between
//! the URL the client built and the [`Response`] whose body the decoders read. Either way the
//! answer comes back as a [`Response`] of any status (the client turns a non-2xx one into an
//! API `Status`), its body a stream of chunks. Everything above this file is the same for both
//! transports: the idle deadlines on headers and body, the cap on each object, the decoders,
//! the prefetch of list pages, the explanation of a 404.
//!
//! - [`Transport::Http`]: reqwest and rustls, with this crate's [`Authenticator`] adding the
//!   credentials of each request (token files read again, exec plugins run again when a
//!   credential expires or a 401 says it is no longer good). Watches and other requests go over
//!   separate connections, at most `watches_per_connection` watches on each ([`Connections`](super::connections::Connections)),
//!   so that watches never queue the rest at an HTTP/2 server's stream limit; all of them are
//!   replaced when the client certificate or the CA bundle rotates ([`RotatingHttp`]).
//! - `Transport::Kube`: `kube::Client::send`. kube-rs's tower stack adds its base URL,
//!   credentials (and refreshes them), TLS, proxy, extra headers and retries; only the path and
//!   query of the URL built here are sent. It speaks HTTP/1.1 only, so every request, watches
//!   included, has a connection of its own and no stream limit applies.

use std::error::Error as StdError;
use std::fmt;
use std::time::Duration;

use bytes::Bytes;
use futures::stream::BoxStream;
#[cfg(any(feature = "http", feature = "kube", test))]
use futures::stream::StreamExt;
#[cfg(feature = "http")]
use http::header::AUTHORIZATION;
use http::header::HeaderMap;
#[cfg(any(feature = "http", feature = "kube"))]
use http::header::{ACCEPT, CONTENT_TYPE};
use http::{Method, StatusCode};
use url::Url;

#[cfg(feature = "http")]
use super::config::auth::Authenticator;
#[cfg(any(feature = "http", feature = "kube"))]
use super::error::transport_error;
#[cfg(feature = "http")]
use crate::rotation::RotatingHttp;
use informer_runtime::listwatch::Error;

// The idle deadline of every wait for bytes lives here, and the body reader, which waits for
// bytes too, imports it: transport is below body, never the other way round.

/// `idle` from now, on tokio's clock; far in the future rather than a panic when `idle` is huge.
fn deadline(idle: Duration) -> tokio::time::Instant {
    let now = tokio::time::Instant::now().into_std();
    informer_runtime::clock::later(now, idle).into()
}

/// `fut`'s output, or `None` when it took longer than `idle`.
pub(crate) async fn within_idle<F: Future>(idle: Duration, fut: F) -> Option<F::Output> {
    tokio::time::timeout_at(deadline(idle), fut).await.ok()
}

/// A request body and its content type.
pub(crate) type Body = (&'static str, Vec<u8>);

/// What carries a client's requests; see the [module documentation](self). Without the `http`
/// and `kube` features it has no variant, and no `Client` can be made.
pub(crate) enum Transport {
    /// This crate's HTTP client, and the credentials it adds.
    #[cfg(feature = "http")]
    Http {
        /// The connections (one pool for requests, others for watches), replaced when the TLS
        /// credentials they were made with rotate.
        http: Box<RotatingHttp>,
        /// The credentials of each request.
        auth: Authenticator,
    },
    /// A kube-rs client, which adds its own credentials.
    #[cfg(feature = "kube")]
    Kube(kube::Client),
}

/// What a request is, for the choice of its connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Traffic {
    /// A request that ends once answered: a list, a get, a write.
    Request,
    /// A watch, which holds its stream until the server or the client ends it.
    Watch,
}

/// An answer of any status: its headers, and its body as a stream of chunks.
pub(crate) struct Response {
    status: StatusCode,
    headers: HeaderMap,
    content_length: Option<u64>,
    body: BoxStream<'static, Result<Bytes, TransportError>>,
}

/// Why a transfer failed: the transport's own error, kept whole so that its cause chain (an
/// `io::Error` of kind `ConnectionRefused`, `ConnectionReset`...) can be read.
pub(crate) struct TransportError(Box<dyn StdError + Send + Sync + 'static>);

impl TransportError {
    /// The transport's error.
    pub(crate) fn cause(&self) -> &(dyn StdError + 'static) {
        &*self.0
    }
}

impl fmt::Debug for TransportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.0, f)
    }
}

impl Response {
    /// The HTTP status.
    pub(crate) fn status(&self) -> StatusCode {
        self.status
    }

    /// The headers.
    pub(crate) fn headers(&self) -> &HeaderMap {
        &self.headers
    }

    /// The body's length, when the response said.
    pub(crate) fn content_length(&self) -> Option<u64> {
        self.content_length
    }

    /// The body, chunk by chunk.
    pub(crate) fn into_body(self) -> BoxStream<'static, Result<Bytes, TransportError>> {
        self.body
    }

    /// This answer, with `guard` dropped when its body is (read to its end, or not).
    #[cfg(feature = "http")]
    fn holding<G: Send + Unpin + 'static>(mut self, guard: G) -> Self {
        self.body = Holding { body: self.body, _guard: guard }.boxed();
        self
    }
}

#[cfg(test)]
impl Response {
    /// A `200 OK` without headers whose body is `chunks`, for the tests of what reads bodies.
    pub(crate) fn ok_with_body<E: StdError + Send + Sync + 'static>(
        chunks: impl futures::Stream<Item = Result<Bytes, E>> + Send + 'static,
    ) -> Self {
        Self {
            status: StatusCode::OK,
            headers: HeaderMap::new(),
            content_length: None,
            body: chunks.map(|chunk| chunk.map_err(|e| TransportError(Box::new(e)))).boxed(),
        }
    }
}

#[cfg(feature = "http")]
impl From<reqwest::Response> for Response {
    fn from(response: reqwest::Response) -> Self {
        Self {
            status: response.status(),
            headers: response.headers().clone(),
            content_length: response.content_length(),
            body: response.bytes_stream().map(|chunk| chunk.map_err(boxed)).boxed(),
        }
    }
}

/// A body that holds a guard (a watch's place on its connection) for as long as it lives.
#[cfg(feature = "http")]
struct Holding<G> {
    body: BoxStream<'static, Result<Bytes, TransportError>>,
    _guard: G,
}

#[cfg(feature = "http")]
impl<G: Unpin> futures::Stream for Holding<G> {
    type Item = Result<Bytes, TransportError>;

    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        self.body.poll_next_unpin(cx)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.body.size_hint()
    }
}

#[cfg(any(feature = "http", feature = "kube"))]
fn boxed(error: impl StdError + Send + Sync + 'static) -> TransportError {
    TransportError(Box::new(error))
}

impl Transport {
    /// What carries the requests, for `Debug`.
    pub(crate) fn name(&self) -> &'static str {
        match self {
            #[cfg(feature = "http")]
            Self::Http { .. } => "http",
            #[cfg(feature = "kube")]
            Self::Kube(_) => "kube::Client",
            // No transport at all: there is no such value.
            #[cfg(not(any(feature = "http", feature = "kube")))]
            _ => match *self {},
        }
    }

    /// Sends one request, with credentials, and returns the answer whatever its status. The
    /// answer's headers must arrive within `idle` (the wait for credentials, an exec plugin's
    /// run, is bounded by its own timeout and not counted).
    ///
    /// A 401 makes this crate's credentials be refreshed for the next request. A watch
    /// ([`Traffic::Watch`]) holds its place on a watch connection until its body is dropped.
    #[cfg_attr(
        not(any(feature = "http", feature = "kube")),
        allow(clippy::unused_async, reason = "without a transport nothing is awaited, or called")
    )]
    pub(crate) async fn send(
        &self,
        method: Method,
        url: Url,
        body: Option<Body>,
        accept: &'static str,
        traffic: Traffic,
        idle: Duration,
    ) -> Result<Response, Error> {
        // For the error when no answer comes.
        let target = format!("{method} {}", url.path());
        let no_answer = || {
            Error::Transport(format!(
                "{target}: no response within {idle:?} (Config::read_idle_timeout)"
            ))
        };
        match self {
            #[cfg(feature = "http")]
            Self::Http { http, auth } => {
                let credentials = auth
                    .credentials()
                    .await
                    .map_err(|e| Error::Transport(format!("obtaining credentials: {e}")))?;
                let connections = http.client(credentials.client_cert.as_ref());
                let (pool, slot) = match traffic {
                    Traffic::Request => (connections.requests().clone(), None),
                    Traffic::Watch => {
                        let (pool, slot) = connections.watch();
                        (pool, Some(slot))
                    }
                };
                let mut request = pool.http().request(method, url).header(ACCEPT, accept);
                if let Some(authorization) = &credentials.header {
                    request = request.header(AUTHORIZATION, authorization.clone());
                }
                if let Some((content_type, bytes)) = body {
                    request = request.header(CONTENT_TYPE, content_type).body(bytes);
                }
                let response = within_idle(idle, pool.send(request))
                    .await
                    .ok_or_else(no_answer)?
                    .map_err(|e| transport_error(&e))?;
                if response.status() == StatusCode::UNAUTHORIZED {
                    auth.invalidate_if_used(&credentials);
                }
                let response = Response::from(response);
                Ok(match slot {
                    Some(slot) => response.holding(slot),
                    None => response,
                })
            }
            #[cfg(feature = "kube")]
            Self::Kube(client) => {
                // HTTP/1.1: a connection per request, whatever the traffic.
                let _ = traffic;
                let request = kube_request(method, &url, body, accept)?;
                let response = within_idle(idle, client.send(request))
                    .await
                    .ok_or_else(no_answer)?
                    .map_err(|e| transport_error(&e))?;
                Ok(kube_response(response))
            }
            #[cfg(not(any(feature = "http", feature = "kube")))]
            _ => {
                let _ = (method, url, body, accept, traffic, no_answer);
                match *self {}
            }
        }
    }
}

/// The request kube-rs sends: the path and query only (its stack prepends the cluster URL),
/// and no compression (a watch decoded as it arrives must not wait for gzip members; kube-rs
/// itself opts its watches out, for the same reason).
#[cfg(feature = "kube")]
fn kube_request(
    method: Method,
    url: &Url,
    body: Option<Body>,
    accept: &'static str,
) -> Result<http::Request<kube::client::Body>, Error> {
    let path_and_query = match url.query() {
        Some(query) => format!("{}?{query}", url.path()),
        None => url.path().to_owned(),
    };
    let builder = http::Request::builder()
        .method(method)
        .uri(path_and_query)
        .header(ACCEPT, accept)
        .header(http::header::ACCEPT_ENCODING, "identity");
    let request = match body {
        Some((content_type, bytes)) => {
            builder.header(CONTENT_TYPE, content_type).body(kube::client::Body::from(bytes))
        }
        None => builder.body(kube::client::Body::empty()),
    };
    request.map_err(|e| Error::Transport(format!("building the request for {}: {e}", url.path())))
}

/// kube-rs's answer as a [`Response`].
#[cfg(feature = "kube")]
fn kube_response(response: http::Response<kube::client::Body>) -> Response {
    use http_body_util::BodyExt as _;

    let (parts, body) = response.into_parts();
    let content_length = parts
        .headers
        .get(http::header::CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.parse().ok());
    Response {
        status: parts.status,
        headers: parts.headers,
        content_length,
        body: body.into_data_stream().map(|chunk| chunk.map_err(boxed)).boxed(),
    }
}
