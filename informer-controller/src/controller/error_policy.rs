//! What becomes of a key whose reconcile failed: the default (conflicts at once, the rest after
//! backoff), or what an [error policy](super::Controller::error_policy) says for each error
//! (kube-rs's `error_policy`).

use std::error::Error as StdError;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use informer_runtime::store::ObjectKey;

/// What an [error policy](super::Controller::error_policy) asks for a key whose reconcile
/// returned an error.
///
/// ```
/// use std::time::Duration;
/// use informer_controller::controller::{Failure, Retry};
/// use k8s_openapi::api::apps::v1::Deployment;
///
/// #[derive(Debug, thiserror::Error)]
/// enum ReconcileError {
///     #[error("the spec names no image")]
///     Invalid,
///     #[error("the registry is unreachable")]
///     Registry(#[source] std::io::Error),
/// }
///
/// fn policy(failure: &Failure<'_, Deployment>) -> Retry {
///     match failure.cause::<ReconcileError>() {
///         // Retrying cannot help: wait for the next change of the object.
///         Some(ReconcileError::Invalid) => Retry::GiveUp,
///         // The registry is down for everyone: no need for a per-key backoff.
///         Some(ReconcileError::Registry(_)) => Retry::After(Duration::from_secs(30)),
///         // A conflict from the client, or anything else: as without a policy.
///         None => Retry::Default,
///     }
/// }
/// # let _ = policy;
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Retry {
    /// As without a policy: a `409 Conflict` in the error's source chain at once (a second in a
    /// row after backoff), anything else after the queue's rate-limited backoff.
    #[default]
    Default,
    /// After the queue's [rate limiter](crate::workqueue::RateLimiter) says (per-key
    /// exponential backoff by default), a conflict too.
    Backoff,
    /// After this long, the key's backoff forgotten (kube-rs's `Action::requeue`).
    After(Duration),
    /// Not again until the object (or one it owns or watches) changes; the key's backoff is
    /// forgotten, and the error logged at `warn`.
    GiveUp,
}

/// A reconcile that returned an error, as an [error policy](super::Controller::error_policy)
/// sees it.
///
/// The error is the reconcile's, as a `&dyn Error`: downcast it with
/// [`cause`](Self::cause), which also finds it wrapped in another error's source chain.
#[non_exhaustive]
pub struct Failure<'a, K> {
    /// The key of the primary object.
    pub key: &'a ObjectKey,
    /// The object the reconcile was given (`None`: it was gone).
    pub object: Option<&'a Arc<K>>,
    /// What the reconcile returned.
    pub error: &'a (dyn StdError + 'static),
    /// How often the key was retried after backoff since it last succeeded (or a policy
    /// forgot it): 0 on a first failure.
    pub retries: u32,
}

impl<'a, K> Failure<'a, K> {
    /// A failure, for tests of an error policy.
    #[must_use]
    pub fn new(
        key: &'a ObjectKey,
        object: Option<&'a Arc<K>>,
        error: &'a (dyn StdError + 'static),
        retries: u32,
    ) -> Self {
        Self { key, object, error, retries }
    }

    /// The first error of type `T` in the error's [source chain](StdError::source), the error
    /// itself first: the reconcile's own error type, or one it wraps (a client's, an I/O
    /// error). A wrapper with thiserror's `#[error(transparent)]` forwards `source()` past
    /// what it wraps and hides it: wrap with `#[from]` or `#[source]` to keep it findable.
    #[must_use]
    pub fn cause<T: StdError + 'static>(&self) -> Option<&'a T> {
        let mut next = Some(self.error);
        while let Some(e) = next {
            if let Some(found) = e.downcast_ref::<T>() {
                return Some(found);
            }
            next = e.source();
        }
        None
    }
}

impl<K> fmt::Debug for Failure<'_, K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Failure")
            .field("key", self.key)
            .field("object", &self.object.is_some())
            .field("error", &ErrorChain(self.error).to_string())
            .field("retries", &self.retries)
            .finish()
    }
}

/// A controller's error policy, typed over the primary resource only: the reconcile's error
/// type is known at `run`, after the policy was given.
pub(super) type ErrorPolicy<K> = Box<dyn Fn(&Failure<'_, K>) -> Retry + Send + Sync>;

/// Whether a `409 Conflict` from the client (reason `Conflict`: a stale version, not an
/// `AlreadyExists`) is in `error`'s source chain: a [`WriteError`](crate::write::WriteError),
/// or this project's `ClientError` (feature `client`). A wrapper with thiserror's
/// `#[error(transparent)]` forwards `source()` past the client's error and hides it: wrap it
/// with `#[from]` or `#[source]`.
pub(super) fn is_conflict(error: &(dyn StdError + 'static)) -> bool {
    let conflict = |s: &informer_runtime::Status| s.code == 409 && s.reason == "Conflict";
    let mut next = Some(error);
    while let Some(e) = next {
        if e.downcast_ref::<crate::write::WriteError>()
            .and_then(|w| w.status())
            .is_some_and(conflict)
        {
            return true;
        }
        #[cfg(feature = "client")]
        if e.downcast_ref::<informer_client::ClientError>()
            .and_then(|c| c.status())
            .is_some_and(conflict)
        {
            return true;
        }
        next = e.source();
    }
    false
}

/// An error and its sources, `: `-separated, for one log line.
pub(super) struct ErrorChain<'a>(pub(super) &'a (dyn StdError + 'static));

impl fmt::Display for ErrorChain<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)?;
        let mut next = self.0.source();
        while let Some(e) = next {
            write!(f, ": {e}")?;
            next = e.source();
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("reconciling")]
    struct Outer(#[source] std::io::Error);

    #[test]
    fn cause_finds_an_error_in_the_source_chain() {
        let key = ObjectKey::new(Some("default"), "web");
        let error = Outer(std::io::Error::other("disk full"));
        let failure = Failure::<()>::new(&key, None, &error, 2);
        assert!(failure.cause::<Outer>().is_some(), "the error itself");
        assert_eq!(
            failure.cause::<std::io::Error>().map(ToString::to_string).as_deref(),
            Some("disk full")
        );
        assert!(failure.cause::<std::fmt::Error>().is_none());
        assert!(format!("{failure:?}").contains("reconciling: disk full"), "{failure:?}");
    }
}
