//! What a [`Disruption`](crate::Disruption) does to a response body: cut it short, stall it,
//! or slow it down, once its status and headers are on their way.
//!
//! The router wraps the body of a disrupted response in a [`Disrupted`] stream. The body is
//! then always sent chunked (its `Content-Length` is dropped), so that cutting it short looks
//! on the wire as a dying server looks: some bytes, then the connection closes without the
//! chunked terminator. hyper closes the connection when a body stream fails, which is how the
//! cut is made. Over HTTP/2 ([`Config::tls`](crate::Config::tls)) the same failure resets only
//! that response's stream (`RST_STREAM`), as a dying handler of Go's HTTP/2 server does; the
//! connection's other streams go on.

use std::io;
use std::time::Duration;

use axum::body::{Body, BodyDataStream, Bytes, HttpBody};
use axum::http::header;
use axum::response::Response;
use futures::StreamExt;
use tokio_util::sync::CancellationToken;

use crate::faults::DisruptionKind;

/// How long a cut body waits before it fails, so that hyper flushes the bytes sent before the
/// cut instead of dropping them with the connection.
const FLUSH_BEFORE_CUT: Duration = Duration::from_millis(20);

/// `response` with its body disrupted as `kind` says. `release` lets a stalled body go on;
/// `shutdown` ends it (the connection is closed).
pub(crate) fn disrupt(
    response: Response,
    kind: DisruptionKind,
    release: CancellationToken,
    shutdown: CancellationToken,
) -> Response {
    let (mut parts, body) = response.into_parts();
    // A whole body is cut or stalled before its last byte at the latest, so that the client
    // never has all of it; a streamed one's length is not known in advance.
    let length = body.size_hint().exact().and_then(|n| usize::try_from(n).ok());
    let at = match kind {
        DisruptionKind::Truncate { after_bytes } | DisruptionKind::Stall { after_bytes } => {
            length.map_or(after_bytes, |n| after_bytes.min(n.saturating_sub(1)))
        }
        DisruptionKind::Slow { .. } => usize::MAX,
    };
    parts.headers.remove(header::CONTENT_LENGTH);
    let disrupted = Disrupted {
        inner: body.into_data_stream(),
        kind,
        at,
        sent: 0,
        armed: true,
        phase: Phase::Passing,
        release,
        shutdown,
    };
    let body = Body::from_stream(futures::stream::unfold(disrupted, Disrupted::next));
    Response::from_parts(parts, body)
}

/// Where a disrupted body is.
enum Phase {
    /// Chunks go through (slowed, for [`DisruptionKind::Slow`]).
    Passing,
    /// Stalled; `held` is the rest of the chunk the stall split, `None` at the body's end.
    Stalled { held: Option<Bytes> },
    /// Cut: the next poll fails the body, and hyper closes the connection.
    Cut,
    /// Nothing more.
    Done,
}

/// A response body under a disruption.
struct Disrupted {
    inner: BodyDataStream,
    kind: DisruptionKind,
    /// Where the body is cut or stalled, in bytes.
    at: usize,
    /// Bytes sent so far.
    sent: usize,
    /// The cut or stall is still to come.
    armed: bool,
    phase: Phase,
    release: CancellationToken,
    shutdown: CancellationToken,
}

type Chunk = io::Result<Bytes>;

impl Disrupted {
    /// The next chunk of the body, `None` at its end.
    async fn next(mut self) -> Option<(Chunk, Self)> {
        loop {
            match std::mem::replace(&mut self.phase, Phase::Done) {
                Phase::Done => return None,
                Phase::Cut => {
                    tokio::time::sleep(FLUSH_BEFORE_CUT).await;
                    let cut = io::Error::new(
                        io::ErrorKind::ConnectionAborted,
                        "the response was cut short by an injected Disruption",
                    );
                    return Some((Err(cut), self));
                }
                Phase::Stalled { held } => {
                    tokio::select! {
                        () = self.release.cancelled() => {
                            self.phase = Phase::Passing;
                            match held {
                                Some(rest) => return Some(self.sent(rest)),
                                None => return None,
                            }
                        }
                        () = self.shutdown.cancelled() => self.phase = Phase::Cut,
                    }
                }
                Phase::Passing => {
                    self.phase = Phase::Passing;
                    let chunk = match self.inner.next().await {
                        Some(Ok(chunk)) => chunk,
                        Some(Err(error)) => {
                            self.phase = Phase::Done;
                            return Some((Err(io::Error::other(error)), self));
                        }
                        // A body that ends before its cut or stall loses its end instead.
                        None if self.armed => {
                            self.armed = false;
                            self.phase = match self.kind {
                                DisruptionKind::Truncate { .. } => Phase::Cut,
                                DisruptionKind::Stall { .. } => Phase::Stalled { held: None },
                                DisruptionKind::Slow { .. } => return None,
                            };
                            continue;
                        }
                        None => return None,
                    };
                    if let DisruptionKind::Slow { per_chunk } = self.kind {
                        tokio::time::sleep(per_chunk).await;
                    }
                    let room = self.at.saturating_sub(self.sent);
                    if !self.armed || chunk.len() <= room {
                        return Some(self.sent(chunk));
                    }
                    // The cut or stall falls in this chunk: send what comes before it.
                    self.armed = false;
                    let rest = chunk.slice(room..);
                    self.phase = match self.kind {
                        DisruptionKind::Stall { .. } => Phase::Stalled { held: Some(rest) },
                        _ => Phase::Cut,
                    };
                    if room > 0 {
                        return Some(self.sent(chunk.slice(..room)));
                    }
                }
            }
        }
    }

    /// `chunk` as the next piece of the body, counted.
    fn sent(mut self, chunk: Bytes) -> (Chunk, Self) {
        self.sent = self.sent.saturating_add(chunk.len());
        (Ok(chunk), self)
    }
}
