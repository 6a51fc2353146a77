//! Faults a test injects: failed requests, slow responses, and responses cut short or
//! stalled part way.
//!
//! Watch-related faults (dropping, stalling, bookmarks, compaction) act on the watch hub and
//! the store directly, and a restart on the accept loop (`serving.rs`); this module keeps the
//! per-request ones, consulted by the router before a request is served. What a
//! [`Disruption`] does to a response body is `disrupt.rs`.

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::status::ApiError;

/// Whether a request with `verb` for `group`'s `plural` passes a verb and resource filter:
/// `resource` is a plural (`pods`) or a plural and group (`deployments.apps`).
fn request_matches(
    want_verb: Option<&str>,
    want_resource: Option<&str>,
    verb: &str,
    group: &str,
    plural: &str,
) -> bool {
    let resource_matches =
        |r: &str| r == plural || r.split_once('.').is_some_and(|(p, g)| p == plural && g == group);
    want_verb.is_none_or(|v| v == verb) && want_resource.is_none_or(resource_matches)
}

/// A failure to inject: the `Status` the next matching requests get instead of being served.
///
/// By default it matches every resource request (discovery and `OpenAPI` requests are never
/// failed); narrow it with [`verb`](Self::verb) and [`resource`](Self::resource).
///
/// ```
/// use std::time::Duration;
/// use embedded_apiserver::Failure;
///
/// let throttled = Failure::too_many_requests(Duration::from_secs(2)).verb("list").resource("pods");
/// assert_eq!((throttled.code, throttled.reason.as_str()), (429, "TooManyRequests"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failure {
    /// HTTP status code, also the `Status`'s `code`.
    pub code: u16,
    /// The `Status`'s `reason` (`TooManyRequests`, `InternalError`, ...).
    pub reason: String,
    /// The `Status`'s `message`.
    pub message: String,
    /// Sent as the `Retry-After` header and `details.retryAfterSeconds`, in whole seconds
    /// rounded up; a zero duration sends neither.
    pub retry_after: Option<Duration>,
    /// Only requests with this Kubernetes verb (`get`, `list`, `watch`, `create`, `update`,
    /// `patch`, `delete`, `deletecollection`) fail; `None` for all.
    pub verb: Option<String>,
    /// Only requests for this resource fail: its plural (`pods`) or plural and group
    /// (`deployments.apps`); `None` for all.
    pub resource: Option<String>,
}

impl Failure {
    /// A failure with a code, a reason and a message, for every resource request.
    #[must_use]
    pub fn new(code: u16, reason: &str, message: &str) -> Self {
        Self {
            code,
            reason: reason.to_owned(),
            message: message.to_owned(),
            retry_after: None,
            verb: None,
            resource: None,
        }
    }

    /// `429 TooManyRequests` with a `Retry-After`, as API priority and fairness sends.
    #[must_use]
    pub fn too_many_requests(retry_after: Duration) -> Self {
        let message = "Too many requests, please try again later.";
        Self::new(429, "TooManyRequests", message).retry_after(retry_after)
    }

    /// `500 InternalError`.
    #[must_use]
    pub fn internal_error(message: &str) -> Self {
        Self::new(500, "InternalError", &format!("Internal error occurred: {message}"))
    }

    /// Sets the `Retry-After`.
    #[must_use]
    pub fn retry_after(mut self, after: Duration) -> Self {
        self.retry_after = Some(after);
        self
    }

    /// Fails only requests with this verb.
    #[must_use]
    pub fn verb(mut self, verb: &str) -> Self {
        self.verb = Some(verb.to_owned());
        self
    }

    /// Fails only requests for this resource (`pods`, or `deployments.apps`).
    #[must_use]
    pub fn resource(mut self, resource: &str) -> Self {
        self.resource = Some(resource.to_owned());
        self
    }

    fn matches(&self, verb: &str, group: &str, plural: &str) -> bool {
        request_matches(self.verb.as_deref(), self.resource.as_deref(), verb, group, plural)
    }

    fn to_error(&self) -> ApiError {
        let mut error = ApiError::new(self.code, &self.reason, self.message.clone());
        // Whole seconds, rounded up; zero sends no Retry-After at all.
        error.retry_after = self.retry_after.filter(|d| !d.is_zero()).map(|d| {
            let seconds = d.as_secs().saturating_add(u64::from(d.subsec_nanos() > 0));
            u32::try_from(seconds).unwrap_or(u32::MAX)
        });
        error
    }
}

/// What a [`Disruption`] does to a response once its status and headers are sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum DisruptionKind {
    /// After `after_bytes` bytes of the body, the connection is closed: no more bytes, no
    /// chunked terminator, as when a server or a proxy dies mid-response. The client sees an
    /// incomplete body. A whole (not streamed) body is always cut before its last byte; a
    /// streamed one (a large list, a watch) that ends sooner loses only its terminator.
    Truncate {
        /// How many bytes of the body are sent.
        after_bytes: usize,
    },
    /// After `after_bytes` bytes of the body (`0`: only the status and headers), nothing more
    /// is sent, and the connection stays open, until
    /// [`clear_disruptions`](crate::ServerHandle::clear_disruptions) lets the rest through or
    /// the connection ends (the client gives up, a restart, shutdown). A stalled watch buffers
    /// meanwhile, and is closed when its buffer is full, as a watch whose client stopped
    /// reading is (see [`Config::watch_buffer`](crate::Config::watch_buffer)).
    Stall {
        /// How many bytes of the body are sent before the stall.
        after_bytes: usize,
    },
    /// Every chunk of the body waits `per_chunk` before it is sent: each watch event, each
    /// part of a streamed list, a whole body once. (Waiting before the response starts is
    /// [`set_delay`](crate::ServerHandle::set_delay).)
    Slow {
        /// How long each chunk waits.
        per_chunk: Duration,
    },
}

/// A disruption to inject: what the next matching responses suffer once they have started
/// (see [`ServerHandle::disrupt_next`](crate::ServerHandle::disrupt_next)).
///
/// Like a [`Failure`], it matches every resource request unless narrowed with
/// [`verb`](Self::verb) and [`resource`](Self::resource); a request that a pending `Failure`
/// fails is not disrupted.
///
/// ```
/// use std::time::Duration;
/// use embedded_apiserver::{Disruption, DisruptionKind};
///
/// let cut = Disruption::truncate(100).verb("list").resource("pods");
/// assert_eq!(cut.kind, DisruptionKind::Truncate { after_bytes: 100 });
/// let slow_watch = Disruption::slow(Duration::from_millis(50)).verb("watch");
/// let stalled_list = Disruption::stall(0).verb("list");
/// # let _ = (slow_watch, stalled_list);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Disruption {
    /// What happens to the body.
    pub kind: DisruptionKind,
    /// Only requests with this Kubernetes verb (`list`, `watch`, `get`, ...) are disrupted;
    /// `None` for all.
    pub verb: Option<String>,
    /// Only requests for this resource: its plural (`pods`) or plural and group
    /// (`deployments.apps`); `None` for all.
    pub resource: Option<String>,
}

impl Disruption {
    /// A disruption of every resource request.
    #[must_use]
    pub fn new(kind: DisruptionKind) -> Self {
        Self { kind, verb: None, resource: None }
    }

    /// Closes the connection after `after_bytes` bytes of the body ([`DisruptionKind::Truncate`]).
    #[must_use]
    pub fn truncate(after_bytes: usize) -> Self {
        Self::new(DisruptionKind::Truncate { after_bytes })
    }

    /// Sends nothing after `after_bytes` bytes of the body until released
    /// ([`DisruptionKind::Stall`]).
    #[must_use]
    pub fn stall(after_bytes: usize) -> Self {
        Self::new(DisruptionKind::Stall { after_bytes })
    }

    /// Delays every chunk of the body by `per_chunk` ([`DisruptionKind::Slow`]).
    #[must_use]
    pub fn slow(per_chunk: Duration) -> Self {
        Self::new(DisruptionKind::Slow { per_chunk })
    }

    /// Disrupts only requests with this verb.
    #[must_use]
    pub fn verb(mut self, verb: &str) -> Self {
        self.verb = Some(verb.to_owned());
        self
    }

    /// Disrupts only requests for this resource (`pods`, or `deployments.apps`).
    #[must_use]
    pub fn resource(mut self, resource: &str) -> Self {
        self.resource = Some(resource.to_owned());
        self
    }

    fn matches(&self, verb: &str, group: &str, plural: &str) -> bool {
        request_matches(self.verb.as_deref(), self.resource.as_deref(), verb, group, plural)
    }
}

/// The per-request faults in force.
#[derive(Debug, Default)]
pub(crate) struct Faults {
    /// Failures with how many requests each still fails, consulted in order.
    failures: Vec<(usize, Failure)>,
    /// Disruptions with how many responses each still disrupts, consulted in order.
    disruptions: Vec<(usize, Disruption)>,
    /// Cancelled to release the responses stalled so far; replaced by a fresh one then.
    release: CancellationToken,
    /// How long every response waits before it is served.
    pub(crate) delay: Option<Duration>,
}

impl Faults {
    /// Makes the next `n` matching requests fail.
    pub(crate) fn add(&mut self, n: usize, failure: Failure) {
        if n > 0 {
            self.failures.push((n, failure));
        }
    }

    /// Forgets every pending failure.
    pub(crate) fn clear(&mut self) {
        self.failures.clear();
    }

    /// Consumes one failure matching a request, if any is pending.
    pub(crate) fn take(&mut self, verb: &str, group: &str, plural: &str) -> Option<ApiError> {
        let failure = take_first(&mut self.failures, |f| f.matches(verb, group, plural))?;
        Some(failure.to_error())
    }

    /// Makes the next `n` matching responses suffer `disruption`.
    pub(crate) fn add_disruption(&mut self, n: usize, disruption: Disruption) {
        if n > 0 {
            self.disruptions.push((n, disruption));
        }
    }

    /// Forgets every pending disruption and lets every stalled response go on.
    pub(crate) fn clear_disruptions(&mut self) {
        self.disruptions.clear();
        self.release.cancel();
        self.release = CancellationToken::new();
    }

    /// Consumes one disruption matching a request, if any is pending: what it does, and the
    /// token that releases it if it stalls.
    pub(crate) fn take_disruption(
        &mut self,
        verb: &str,
        group: &str,
        plural: &str,
    ) -> Option<(DisruptionKind, CancellationToken)> {
        let disruption = take_first(&mut self.disruptions, |d| d.matches(verb, group, plural))?;
        Some((disruption.kind, self.release.clone()))
    }
}

/// Takes one use of the first rule that `matches`, dropping the rule once used up.
fn take_first<T: Clone>(rules: &mut Vec<(usize, T)>, matches: impl Fn(&T) -> bool) -> Option<T> {
    let index = rules.iter().position(|(_, rule)| matches(rule))?;
    let (left, rule) = rules.get_mut(index)?;
    let rule = rule.clone();
    *left = left.saturating_sub(1);
    if *left == 0 {
        rules.remove(index);
    }
    Some(rule)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_are_consumed_by_matching_requests_only() {
        let mut faults = Faults::default();
        faults.add(2, Failure::internal_error("boom").verb("list").resource("deployments.apps"));
        faults.add(1, Failure::too_many_requests(Duration::from_millis(1500)));
        let first = faults.take("get", "", "pods").unwrap();
        assert_eq!((first.code, first.retry_after), (429, Some(2)));
        assert!(faults.take("get", "", "pods").is_none());
        assert!(faults.take("list", "", "deployments").is_none());
        assert_eq!(faults.take("list", "apps", "deployments").unwrap().code, 500);
        assert_eq!(faults.take("list", "apps", "deployments").unwrap().code, 500);
        assert!(faults.take("list", "apps", "deployments").is_none());
        faults.add(1, Failure::too_many_requests(Duration::ZERO));
        assert_eq!(faults.take("get", "", "pods").unwrap().retry_after, None);
    }
}
