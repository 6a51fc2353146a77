//! Accepting connections and serving each: the TLS handshake, then HTTP/2 or HTTP/1.1 as ALPN
//! chose, until the connection ends or the server stops.

use std::convert::Infallible;
use std::pin::pin;
use std::sync::Arc;
use std::time::Duration;

use hyper::server::conn::{http1, http2};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::OwnedSemaphorePermit;
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::shared::Inner;
use crate::tls::Reload;

/// HTTP/2 streams one connection may have open: Go's `http2.Server` default.
const MAX_STREAMS: u32 = 250;

/// How often an HTTP/2 connection is pinged, and how long the peer has to answer.
const PING_INTERVAL: Duration = Duration::from_secs(30);
const PING_TIMEOUT: Duration = Duration::from_secs(20);

/// The longest pause after a failed accept (Go's `http.Server` pauses 5 ms, doubling to 1 s).
const MAX_ACCEPT_PAUSE: Duration = Duration::from_secs(1);

pub(super) async fn serve(inner: Arc<Inner>, listener: TcpListener, stop: CancellationToken) {
    load_certificate(&inner).await;
    let watch = stop.child_token();
    let watcher = inner.certificates.reloads().then(|| {
        let inner = Arc::clone(&inner);
        let watch = watch.clone();
        tokio::spawn(async move {
            let interval = inner.reload_interval;
            inner.certificates.watch(interval, watch, |reload| observe(&inner, reload)).await;
        })
    });

    let acceptor = TlsAcceptor::from(Arc::clone(&inner.tls));
    let slots = Arc::new(tokio::sync::Semaphore::new(inner.limits.max_connections));
    let connections = TaskTracker::new();
    let mut pause = Duration::from_millis(5);
    loop {
        let slot = tokio::select! {
            slot = Arc::clone(&slots).acquire_owned() => slot,
            () = stop.cancelled() => break,
        };
        // The semaphore is never closed.
        let Ok(slot) = slot else { break };
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = stop.cancelled() => break,
        };
        let stream = match accepted {
            Ok((stream, _peer)) => {
                pause = Duration::from_millis(5);
                stream
            }
            Err(error) => {
                tracing::warn!(
                    "webhook server: accepting a connection failed, pausing {pause:?}: {error}"
                );
                tokio::select! {
                    () = tokio::time::sleep(pause) => {}
                    () = stop.cancelled() => break,
                }
                pause = (pause * 2).min(MAX_ACCEPT_PAUSE);
                continue;
            }
        };
        connections.spawn(connection(
            Arc::clone(&inner),
            acceptor.clone(),
            stream,
            stop.clone(),
            slot,
        ));
    }
    connections.close();
    connections.wait().await;
    watch.cancel();
    if let Some(watcher) = watcher {
        let _ = watcher.await;
    }
}

/// The first load: a failure is logged, and the server serves on without a certificate (every
/// handshake fails, `/readyz` says so) until a reload loads one.
async fn load_certificate(inner: &Inner) {
    let reload = inner.certificates.reload().await;
    observe(inner, &reload);
}

fn observe(inner: &Inner, reload: &Reload) {
    if inner.certificates.reloads() {
        inner.observer.certificate_read(!matches!(reload, Reload::Failed(_)));
    }
    match reload {
        Reload::Unchanged => {}
        Reload::Loaded => {
            let certificates = &inner.certificates;
            tracing::info!(?certificates, "webhook server: serving certificate loaded");
        }
        Reload::Failed(error) if inner.certificates.is_loaded() => tracing::warn!(
            "webhook server: the serving certificate did not reload, the previous one serves on: {error}"
        ),
        Reload::Failed(error) => tracing::warn!(
            "webhook server: no serving certificate is loaded, TLS handshakes fail until one \
             does: {error}"
        ),
    }
}

/// One connection, holding its `slot` until it ends.
async fn connection(
    inner: Arc<Inner>,
    acceptor: TlsAcceptor,
    stream: TcpStream,
    stop: CancellationToken,
    slot: OwnedSemaphorePermit,
) {
    let limits = inner.limits;
    let tls = match tokio::time::timeout(limits.header_timeout, acceptor.accept(stream)).await {
        Ok(Ok(tls)) => tls,
        Ok(Err(error)) => {
            tracing::debug!("webhook server: TLS handshake failed: {error}");
            return;
        }
        Err(_) => {
            tracing::debug!(
                "webhook server: TLS handshake not done within {:?}",
                limits.header_timeout
            );
            return;
        }
    };
    let h2 = tls.get_ref().1.alpn_protocol() == Some(b"h2");
    let service = hyper::service::service_fn(move |request| {
        let inner = Arc::clone(&inner);
        async move { Ok::<_, Infallible>(inner.answer(request).await) }
    });
    let io = TokioIo::new(tls);
    // On stop: HTTP/1.1 closes after the request in progress, HTTP/2 sends GOAWAY and finishes
    // its streams; each within the request timeout, after which the connection is dropped.
    macro_rules! drive {
        ($connection:expr) => {{
            let mut connection = pin!($connection);
            let ended = tokio::select! {
                ended = connection.as_mut() => ended,
                () = stop.cancelled() => {
                    connection.as_mut().graceful_shutdown();
                    match tokio::time::timeout(limits.request_timeout, connection.as_mut()).await {
                        Ok(ended) => ended,
                        Err(_) => {
                            tracing::debug!("webhook server: a connection did not finish its requests in time");
                            Ok(())
                        }
                    }
                }
            };
            if let Err(error) = ended {
                tracing::debug!("webhook server: connection ended: {error}");
            }
        }};
    }
    if h2 {
        let mut builder = http2::Builder::new(TokioExecutor::new());
        builder
            .timer(TokioTimer::new())
            .max_concurrent_streams(MAX_STREAMS)
            .keep_alive_interval(PING_INTERVAL)
            .keep_alive_timeout(PING_TIMEOUT);
        drive!(builder.serve_connection(io, service));
    } else {
        let mut builder = http1::Builder::new();
        builder.timer(TokioTimer::new()).header_read_timeout(limits.header_timeout);
        drive!(builder.serve_connection(io, service));
    }
    drop(slot);
}
