//! Faults a test injects: failed requests and slow responses.
//!
//! Watch-related faults (dropping, stalling, bookmarks, compaction) act on the watch hub and
//! the store directly; this module keeps the per-request ones, consulted by the router before
//! a request is served.

use std::time::Duration;

use crate::status::ApiError;

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
        let resource_matches = |r: &String| {
            r == plural || r.split_once('.').is_some_and(|(p, g)| p == plural && g == group)
        };
        self.verb.as_ref().is_none_or(|v| v == verb)
            && self.resource.as_ref().is_none_or(resource_matches)
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

/// The per-request faults in force.
#[derive(Debug, Default)]
pub(crate) struct Faults {
    /// Failures with how many requests each still fails, consulted in order.
    failures: Vec<(usize, Failure)>,
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
        let index = self.failures.iter().position(|(_, f)| f.matches(verb, group, plural))?;
        let (left, failure) = &mut self.failures[index];
        let error = failure.to_error();
        *left -= 1;
        if *left == 0 {
            self.failures.remove(index);
        }
        Some(error)
    }
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
