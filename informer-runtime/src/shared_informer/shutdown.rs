//! What a stop leaves behind: the handlers that did not return within the shutdown timeout.

use std::fmt;
use std::time::Duration;

/// How long [`run`](super::SharedIndexInformer::run) waits, after its stop signal, for handlers
/// in a call to return: controller-runtime's default graceful shutdown timeout.
pub(crate) const DEFAULT_SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(30);

/// An event handler that was still in a call when an informer's shutdown timeout ran out.
///
/// Its thread is left to finish on its own: Rust cannot stop a thread from outside, and the
/// process exits without waiting for it. It receives nothing more.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnfinishedHandler {
    resource: String,
    id: u64,
    handling: String,
    busy_for: Duration,
}

impl UnfinishedHandler {
    pub(crate) fn new(resource: String, id: u64, handling: String, busy_for: Duration) -> Self {
        Self { resource, id, handling, busy_for }
    }

    /// The informer's resource, as client-go writes it (`v1, Resource=pods`).
    #[must_use]
    pub fn resource(&self) -> &str {
        &self.resource
    }

    /// The handler, as [`ResourceEventHandlerRegistration::id`](super::ResourceEventHandlerRegistration::id)
    /// names it.
    #[must_use]
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The notification the handler was called with (`Update(default/web-1@41 -> default/web-1@42)`).
    #[must_use]
    pub fn handling(&self) -> &str {
        &self.handling
    }

    /// How long the handler had been in that call when the timeout ran out.
    #[must_use]
    pub fn busy_for(&self) -> Duration {
        self.busy_for
    }
}

impl fmt::Display for UnfinishedHandler {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "handler {} of {} is still handling {} after {:?}",
            self.id, self.resource, self.handling, self.busy_for
        )
    }
}

/// What [`SharedIndexInformer::run`](super::SharedIndexInformer::run) and
/// [`SharedInformerFactory::shutdown`](crate::factory::SharedInformerFactory::shutdown) report
/// once they return: every handler that was still in a call when the shutdown timeout ran out.
///
/// Each one is also logged as a warning, so a program that ignores the report still says why
/// its threads outlive the informer.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ShutdownReport {
    unfinished: Vec<UnfinishedHandler>,
}

impl ShutdownReport {
    pub(crate) fn new(unfinished: Vec<UnfinishedHandler>) -> Self {
        Self { unfinished }
    }

    pub(crate) fn merge(&mut self, other: Self) {
        self.unfinished.extend(other.unfinished);
    }

    /// True when every handler returned in time.
    #[must_use]
    pub fn is_clean(&self) -> bool {
        self.unfinished.is_empty()
    }

    /// The handlers that had not returned.
    #[must_use]
    pub fn unfinished(&self) -> &[UnfinishedHandler] {
        &self.unfinished
    }
}

impl fmt::Display for ShutdownReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.unfinished.is_empty() {
            return f.write_str("every event handler returned");
        }
        write!(f, "{} event handler(s) did not return in time", self.unfinished.len())?;
        for handler in &self.unfinished {
            write!(f, "; {handler}")?;
        }
        Ok(())
    }
}
