//! Pod logs: [`Client::logs`] streams them in chunks, [`Client::log_text`] reads them as text
//! up to a bound (client-go's `GetLogs`, kube-rs's `Api::log_stream` and `Api::logs`).
//!
//! Where it sits: beside the typed requests of `api_client`, through the same transport and
//! errors. A log is not an object: it is read as it arrives, chunk by chunk, never whole
//! unless asked for with a bound, so a container that wrote gigabytes costs a reader what it
//! keeps.

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use futures::stream::{BoxStream, Stream, StreamExt};
use http::Method;
use k8s_openapi::api::core::v1::Pod;
use url::Url;

use super::api_client::Client;
use super::body::{BodyReader, ReadError};
use super::error::{ClientError, Result, transport_error};
use informer_runtime::listwatch::Error;

/// What a log request accepts: a log is text (kubectl sends `*/*` too).
const ACCEPT: &str = "text/plain, */*";

/// What a log request asks for: client-go's `PodLogOptions`.
///
/// ```
/// use informer_client::LogParams;
/// let params = LogParams::default().container("app").tail_lines(100).timestamps(true);
/// assert_eq!(params.tail_lines, Some(100));
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
#[doc(alias = "PodLogOptions")]
pub struct LogParams {
    /// The container; may be left out for a pod with one container (a pod with several
    /// answers `400` naming them).
    pub container: Option<String>,
    /// Keep the stream open and send what the container writes, until the container or the
    /// pod ends (or the server closes the stream).
    pub follow: bool,
    /// The log of the container's previous run (after a restart).
    pub previous: bool,
    /// Only the lines written in the last this many seconds (at least 1).
    pub since_seconds: Option<i64>,
    /// Only the last this many lines (of what there is when the request starts).
    pub tail_lines: Option<i64>,
    /// Each line after the time it was written (RFC 3339 with nanoseconds) and a space.
    pub timestamps: bool,
    /// At most this many bytes (at least 1); the log is cut there, inside a line if need be.
    pub limit_bytes: Option<i64>,
}

impl LogParams {
    /// Sets [`container`](Self::container).
    #[must_use]
    pub fn container(mut self, container: impl Into<String>) -> Self {
        self.container = Some(container.into());
        self
    }

    /// Sets [`follow`](Self::follow).
    #[must_use]
    pub fn follow(mut self, yes: bool) -> Self {
        self.follow = yes;
        self
    }

    /// Sets [`previous`](Self::previous).
    #[must_use]
    pub fn previous(mut self, yes: bool) -> Self {
        self.previous = yes;
        self
    }

    /// Sets [`since_seconds`](Self::since_seconds).
    #[must_use]
    pub fn since_seconds(mut self, seconds: i64) -> Self {
        self.since_seconds = Some(seconds);
        self
    }

    /// Sets [`tail_lines`](Self::tail_lines).
    #[must_use]
    pub fn tail_lines(mut self, lines: i64) -> Self {
        self.tail_lines = Some(lines);
        self
    }

    /// Sets [`timestamps`](Self::timestamps).
    #[must_use]
    pub fn timestamps(mut self, yes: bool) -> Self {
        self.timestamps = yes;
        self
    }

    /// Sets [`limit_bytes`](Self::limit_bytes).
    #[must_use]
    pub fn limit_bytes(mut self, bytes: i64) -> Self {
        self.limit_bytes = Some(bytes);
        self
    }

    fn set_query(&self, url: &mut Url) {
        let mut query = url.query_pairs_mut();
        if let Some(container) = self.container.as_deref().filter(|c| !c.is_empty()) {
            query.append_pair("container", container);
        }
        for (name, yes) in
            [("follow", self.follow), ("previous", self.previous), ("timestamps", self.timestamps)]
        {
            if yes {
                query.append_pair(name, "true");
            }
        }
        for (name, value) in [
            ("sinceSeconds", self.since_seconds),
            ("tailLines", self.tail_lines),
            ("limitBytes", self.limit_bytes),
        ] {
            if let Some(value) = value {
                query.append_pair(name, &value.to_string());
            }
        }
        drop(query);
        if url.query() == Some("") {
            url.set_query(None);
        }
    }
}

/// A pod's log as it arrives: a [`Stream`] of chunks of bytes, as the server sent them (not
/// cut at lines; a chunk is what one read returned, a few KiB, never the whole log). What
/// [`Client::logs`] returns.
///
/// Each wait for the next chunk is bounded: by the client's
/// [`read_idle_timeout`](crate::Config::read_idle_timeout) (90 s by default) for a log read
/// once, by its [`watch_idle_timeout`](crate::Config::watch_idle_timeout), when set, for a
/// followed one (a quiet container is no failure, so by default a follow waits as long as the
/// server keeps the stream open). A stream that stopped for longer, or broke, ends with an
/// error.
#[must_use = "a log stream reads nothing unless polled"]
pub struct LogStream {
    chunks: BoxStream<'static, Result<Bytes>>,
}

impl Stream for LogStream {
    type Item = Result<Bytes>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.chunks.poll_next_unpin(cx)
    }
}

impl std::fmt::Debug for LogStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LogStream").finish_non_exhaustive()
    }
}

impl Client {
    /// Streams the log of a container of the pod `namespace/pod`.
    ///
    /// The answer's status is checked before this returns; the stream then yields the log in
    /// chunks, and ends when the server ends it: at once for a log read once, when the
    /// container or the pod ends for a [followed](LogParams::follow) one. Memory stays at
    /// one chunk whatever the log's length (see [`LogStream`] for the idle deadlines).
    ///
    /// A followed log goes over a connection of the client's watches, so that it never
    /// holds up other requests (see [Connections](Client#connections-and-the-servers-stream-limit)).
    ///
    /// # Errors
    ///
    /// [`ClientError::Api`] with the server's status: `404` for a missing pod, `400` for a
    /// container the pod does not have (`container c is not valid for pod p`) or a pod with
    /// several containers and none named, `422` for invalid params (a negative `tail_lines`);
    /// [`ClientError::Request`] for transport failures, before or during the stream.
    ///
    /// ```no_run
    /// # async fn run(client: informer_client::Client) -> informer_client::Result<()> {
    /// use futures::TryStreamExt;
    /// use informer_client::LogParams;
    ///
    /// let params = LogParams::default().container("app").follow(true).tail_lines(10);
    /// let mut log = client.logs("apps", "web-0", &params).await?;
    /// while let Some(chunk) = log.try_next().await? {
    ///     print!("{}", String::from_utf8_lossy(&chunk));
    /// }
    /// # Ok(())
    /// # }
    /// ```
    #[doc(alias = "GetLogs")]
    #[doc(alias = "log_stream")]
    pub async fn logs(&self, namespace: &str, pod: &str, params: &LogParams) -> Result<LogStream> {
        let mut url = self.subresource_url::<Pod>(Some(namespace), pod, "log")?;
        params.set_query(&mut url);
        let path = url.path().to_owned();
        let response = if params.follow {
            self.send_watch(url, ACCEPT).await
        } else {
            self.send_accepting(Method::GET, url, None, ACCEPT).await
        };
        let response = response.map_err(|e| ClientError::request("GET", path.clone(), e))?;
        let idle = if params.follow {
            self.watch_idle_timeout().unwrap_or(Duration::MAX)
        } else {
            self.limits().read_idle_timeout
        };
        let reader = BodyReader::new(response, idle);
        let chunks = futures::stream::unfold(Some((reader, path)), |state| async move {
            let (mut reader, path) = state?;
            match reader.next().await {
                Ok(Some(chunk)) => Some((Ok(chunk), Some((reader, path)))),
                Ok(None) => None,
                Err(error) => {
                    let error = match error {
                        ReadError::Idle(idle) => Error::Transport(format!(
                            "the log stopped for {idle:?} (Config::read_idle_timeout, or \
                             Config::watch_idle_timeout for a followed log)"
                        )),
                        ReadError::Failed(e) => transport_error(e.cause()),
                    };
                    Some((Err(ClientError::request("GET", path, error)), None))
                }
            }
        });
        Ok(LogStream { chunks: chunks.boxed() })
    }

    /// Reads the log of a container of the pod `namespace/pod` as text, at most `max_bytes`
    /// of it (bytes that are not UTF-8 are replaced by `U+FFFD`).
    ///
    /// [`follow`](LogParams::follow) is ignored: this reads what there is. To read only the
    /// end of a long log, set [`tail_lines`](LogParams::tail_lines) or
    /// [`limit_bytes`](LogParams::limit_bytes) (the server then sends no more).
    ///
    /// # Errors
    ///
    /// [`ClientError::LogTooLarge`] when the log is longer than `max_bytes` (nothing is
    /// returned rather than a part that looks whole: raise `max_bytes`, ask for less, or
    /// stream it with [`Client::logs`]); otherwise as [`Client::logs`].
    ///
    /// ```no_run
    /// # async fn run(client: informer_client::Client) -> informer_client::Result<()> {
    /// use informer_client::LogParams;
    /// let text = client.log_text("apps", "web-0", &LogParams::default().tail_lines(50), 1 << 20).await?;
    /// for line in text.lines() {
    ///     println!("{line}");
    /// }
    /// # Ok(())
    /// # }
    /// ```
    #[doc(alias = "logs_string")]
    pub async fn log_text(
        &self,
        namespace: &str,
        pod: &str,
        params: &LogParams,
        max_bytes: usize,
    ) -> Result<String> {
        let params = LogParams { follow: false, ..params.clone() };
        let mut log = self.logs(namespace, pod, &params).await?;
        let mut text = Vec::new();
        while let Some(chunk) = log.next().await {
            let chunk = chunk?;
            if text.len() + chunk.len() > max_bytes {
                return Err(ClientError::LogTooLarge {
                    namespace: namespace.to_owned(),
                    pod: pod.to_owned(),
                    max_bytes,
                });
            }
            text.extend_from_slice(&chunk);
        }
        Ok(String::from_utf8(text)
            .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_become_the_query_kubectl_sends() {
        let mut url = Url::parse("https://k/api/v1/namespaces/a/pods/p/log").unwrap();
        LogParams::default()
            .container("app")
            .follow(true)
            .tail_lines(10)
            .limit_bytes(500)
            .since_seconds(60)
            .timestamps(true)
            .set_query(&mut url);
        assert_eq!(
            url.query(),
            Some(
                "container=app&follow=true&timestamps=true&sinceSeconds=60&tailLines=10&limitBytes=500"
            )
        );
        let mut url = Url::parse("https://k/api/v1/namespaces/a/pods/p/log").unwrap();
        LogParams::default().set_query(&mut url);
        assert_eq!(url.query(), None);
    }
}
