//! Serving one connection: plain HTTP/1.1, or TLS with HTTP/2 or HTTP/1.1 as ALPN chose, with
//! kube-apiserver's bounds on each, counting what [`ServerHandle::traffic`] reports
//! (`traffic.rs`).
//!
//! [`ServerHandle::traffic`]: crate::ServerHandle::traffic

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::http::{Request, Response, Version};
use axum::response::IntoResponse as _;
use hyper::body::{Frame, Incoming, SizeHint};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulConnection;
use hyper_util::service::TowerToHyperService;
use rustls::pki_types::CertificateDer;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::state::Shared;
use crate::status::ApiError;
use crate::tls::H2;
use crate::traffic::TrafficCounters;

/// How long a connection may wait for a request's head: kube-apiserver closes idle
/// keep-alive connections after 90 s (`IdleTimeout`) and connections whose head takes over
/// 32 s to arrive (`ReadHeaderTimeout`, against slowloris clients). hyper has one timer for
/// both, from the moment it waits for a head, so this is the longer of the two.
const HEAD_TIMEOUT: Duration = Duration::from_secs(90);

/// How long a TLS handshake may take: Go's `http.Server` bounds it by `ReadHeaderTimeout`,
/// which kube-apiserver sets to 32 s.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(32);

/// How long an HTTP/2 connection may carry no stream before it is closed (`GOAWAY`):
/// kube-apiserver's `http2.Server.IdleTimeout`, 90 s, the keep-alive timeout of Go's clients.
const HTTP2_IDLE_TIMEOUT: Duration = Duration::from_secs(90);

/// The most header bytes an HTTP/2 request may carry (its `SETTINGS_MAX_HEADER_LIST_SIZE`):
/// kube-apiserver's `MaxHeaderBytes`, 1 MiB, which Go's HTTP/2 server advertises. (hyper's
/// default, 16 KiB, would answer a long selector `431` where kube-apiserver answers it.)
const HTTP2_MAX_HEADER_LIST: u32 = 1 << 20;

/// Serves one connection until it ends, is closed (`close`: a restart), or has finished its
/// responses after the server's shutdown.
pub(crate) async fn serve_connection(
    stream: TcpStream,
    app: Router,
    shared: Arc<Shared>,
    close: CancellationToken,
) {
    // Watch events go out as they happen, not when a segment fills up.
    let _ = stream.set_nodelay(true);
    let shutdown = shared.shutdown.clone();
    let streams = Arc::new(Streams::default());
    let mut service = Counted {
        inner: TowerToHyperService::new(app),
        shared: Arc::clone(&shared),
        streams: Arc::clone(&streams),
        peer: None,
    };
    let Some(tls) = shared.settings.tls.as_ref() else {
        let connection = http1(stream, service);
        return drive(connection, &close, &shutdown, None).await;
    };
    let handshake = tokio::time::timeout(HANDSHAKE_TIMEOUT, tls.acceptor.accept(stream));
    let stream = tokio::select! {
        biased;
        () = close.cancelled() => return,
        () = shutdown.cancelled() => return,
        accepted = handshake => match accepted {
            Ok(Ok(stream)) => stream,
            // The client's problem (an untrusted CA, a plain request on the TLS port); Go's
            // server logs these too, and serves on.
            Ok(Err(error)) => {
                tracing::debug!(%error, "TLS handshake failed");
                return;
            }
            Err(_) => {
                tracing::debug!("TLS handshake timed out");
                return;
            }
        },
    };
    shared.traffic.tls_connections.fetch_add(1, Ordering::Relaxed);
    // The client's certificate, checked on each request (`auth.rs`), not just now.
    service.peer = stream.get_ref().1.peer_certificates().map(Arc::from);
    if stream.get_ref().1.alpn_protocol() == Some(H2) {
        let connection = hyper::server::conn::http2::Builder::new(TokioExecutor::new())
            .timer(TokioTimer::new())
            .max_concurrent_streams(shared.settings.max_concurrent_streams)
            .max_header_list_size(HTTP2_MAX_HEADER_LIST)
            .serve_connection(TokioIo::new(stream), service);
        drive(connection, &close, &shutdown, Some(&streams)).await;
    } else {
        drive(http1(stream, service), &close, &shutdown, None).await;
    }
}

/// An HTTP/1.1 connection on `io`.
fn http1<I: AsyncRead + AsyncWrite + Unpin + Send + 'static>(
    io: I,
    service: Counted,
) -> impl GracefulConnection {
    hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(HEAD_TIMEOUT)
        .serve_connection(TokioIo::new(io), service)
}

/// Runs `connection` until it ends or `close` drops it (mid-response: its socket closes); on
/// `shutdown`, or once `idle` has had no stream for [`HTTP2_IDLE_TIMEOUT`], it finishes what
/// it serves and ends.
async fn drive<C: GracefulConnection>(
    connection: C,
    close: &CancellationToken,
    shutdown: &CancellationToken,
    idle: Option<&Streams>,
) {
    tokio::pin!(connection);
    let idle = async {
        match idle {
            Some(streams) => streams.idle_for(HTTP2_IDLE_TIMEOUT).await,
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        biased;
        // Dropping the connection closes its socket mid-response.
        () = close.cancelled() => return,
        _ = connection.as_mut() => return,
        () = shutdown.cancelled() => connection.as_mut().graceful_shutdown(),
        () = idle => connection.as_mut().graceful_shutdown(),
    }
    tokio::select! {
        biased;
        () = close.cancelled() => {}
        _ = connection => {}
    }
}

/// The requests (HTTP/2 streams) open on one connection.
#[derive(Debug, Default)]
struct Streams {
    open: AtomicUsize,
    /// Signalled whenever a stream opens or ends.
    changed: Notify,
}

impl Streams {
    /// Counts a stream open until the guard drops.
    fn open(self: &Arc<Self>, traffic: &TrafficCounters) -> StreamGuard {
        let open = self.open.fetch_add(1, Ordering::AcqRel) + 1;
        traffic.max_open_streams.fetch_max(open, Ordering::Relaxed);
        self.changed.notify_waiters();
        StreamGuard(Arc::clone(self))
    }

    /// Completes once no stream has been open for `timeout`.
    async fn idle_for(&self, timeout: Duration) {
        loop {
            let changed = self.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            if self.open.load(Ordering::Acquire) == 0 {
                tokio::select! {
                    () = tokio::time::sleep(timeout) => return,
                    () = changed => {}
                }
            } else {
                changed.await;
            }
        }
    }
}

/// One open stream of a connection; it ends when the response body is done or dropped.
struct StreamGuard(Arc<Streams>);

impl Drop for StreamGuard {
    fn drop(&mut self) {
        self.0.open.fetch_sub(1, Ordering::AcqRel);
        self.0.changed.notify_waiters();
    }
}

/// The router behind authentication, counting requests by protocol and streams per
/// connection.
#[derive(Clone)]
struct Counted {
    inner: TowerToHyperService<Router>,
    shared: Arc<Shared>,
    streams: Arc<Streams>,
    /// The certificates the client presented in the TLS handshake, leaf first.
    peer: Option<Arc<[CertificateDer<'static>]>>,
}

impl hyper::service::Service<Request<Incoming>> for Counted {
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response<Body>, Infallible>> + Send>>;

    fn call(&self, request: Request<Incoming>) -> Self::Future {
        let traffic = &self.shared.traffic;
        let counter = match request.version() {
            Version::HTTP_2 => &traffic.http2_requests,
            _ => &traffic.http1_requests,
        };
        counter.fetch_add(1, Ordering::Relaxed);
        if !self.shared.auth.authenticate(request.headers(), self.peer.as_deref()) {
            traffic.unauthorized.fetch_add(1, Ordering::Relaxed);
            let refused = ApiError::new(401, "Unauthorized", "Unauthorized").into_response();
            return Box::pin(async move { Ok(refused) });
        }
        let guard = self.streams.open(traffic);
        let response = self.inner.call(request);
        Box::pin(async move {
            let response = response.await?;
            Ok(response.map(|body| Body::new(Tracked { body, _guard: guard })))
        })
    }
}

/// A response body that holds its stream's place until it is done.
struct Tracked {
    body: Body,
    _guard: StreamGuard,
}

impl hyper::body::Body for Tracked {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}
