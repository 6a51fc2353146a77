//! Response bodies read with bounds: an idle deadline on every wait for bytes, and a cap on
//! what is kept.
//!
//! Where it sits in the data flow: between the socket and the decoders. Every response the client
//! reads, except a watch stream (whose idle deadline is its server timeout plus a margin, in
//! `http_lister_watcher`), is read through a [`BodyReader`]: its headers must arrive within the
//! client's [`read_idle_timeout`](super::Config::read_idle_timeout), and so must each next chunk
//! of its body. The deadline restarts at each wait, not at each chunk: while the client itself
//! holds off reading (its list decoder behind), no time is counted against the server. How much
//! is kept is the caller's to bound; [`BodyReader::read_prefix`] stops at a given size.

use std::time::Duration;

use bytes::{Bytes, BytesMut};
use futures::stream::{BoxStream, StreamExt};

use super::transport::{Response, TransportError, within_idle};

/// Why reading a body stopped early.
#[derive(Debug)]
pub(crate) enum ReadError {
    /// No bytes arrived for this long.
    Idle(Duration),
    /// The transfer failed.
    Failed(TransportError),
}

/// A response body, read chunk by chunk under an idle deadline; see the
/// [module documentation](self).
pub(crate) struct BodyReader {
    chunks: BoxStream<'static, Result<Bytes, TransportError>>,
    idle: Duration,
    content_length: Option<u64>,
}

impl BodyReader {
    /// Reads `response`'s body, waiting at most `idle` for each next chunk.
    pub(crate) fn new(response: Response, idle: Duration) -> Self {
        let content_length = response.content_length();
        Self { chunks: response.into_body(), idle, content_length }
    }

    /// The body's length, when the response said.
    pub(crate) fn content_length(&self) -> Option<u64> {
        self.content_length
    }

    /// The next chunk, never empty; `Ok(None)` at the body's end.
    ///
    /// # Errors
    ///
    /// [`ReadError::Idle`] when nothing arrived for the idle deadline, [`ReadError::Failed`]
    /// when the transfer broke.
    pub(crate) async fn next(&mut self) -> Result<Option<Bytes>, ReadError> {
        loop {
            match within_idle(self.idle, self.chunks.next()).await {
                None => return Err(ReadError::Idle(self.idle)),
                Some(None) => return Ok(None),
                Some(Some(Err(error))) => return Err(ReadError::Failed(error)),
                Some(Some(Ok(chunk))) if chunk.is_empty() => {}
                Some(Some(Ok(chunk))) => return Ok(Some(chunk)),
            }
        }
    }

    /// Reads until the body ends or `limit` bytes are in: at most `limit` bytes, and whether
    /// they are the whole body. What was read comes back even when reading failed.
    pub(crate) async fn read_prefix(&mut self, limit: usize) -> (Bytes, Result<bool, ReadError>) {
        let capacity = self.content_length.map_or(0, |len| usize::try_from(len).unwrap_or(limit));
        let mut read = BytesMut::with_capacity(capacity.min(limit));
        loop {
            if read.len() >= limit {
                // Ended exactly at the limit, or more to come: one more look tells.
                let whole = self.content_length.is_some_and(|len| len <= limit as u64);
                return (read.freeze(), Ok(whole));
            }
            match self.next().await {
                Ok(None) => return (read.freeze(), Ok(true)),
                Ok(Some(chunk)) => {
                    let room = limit - read.len();
                    read.extend_from_slice(&chunk[..chunk.len().min(room)]);
                    if chunk.len() > room {
                        return (read.freeze(), Ok(false));
                    }
                }
                Err(error) => return (read.freeze(), Err(error)),
            }
        }
    }
}
