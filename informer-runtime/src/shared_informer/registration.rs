//! The handle a handler registration returns.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;

use super::processor::Listener;

pub(crate) type SyncedFn = Arc<dyn Fn() -> bool + Send + Sync>;

/// Returned by [`add_event_handler`](super::SharedIndexInformer::add_event_handler): tells whether
/// this handler has caught up, and removes it.
///
/// [`has_synced`](Self::has_synced) is stronger than the informer's: it also waits until this
/// handler has processed every add of the initial list (client-go's informer-level `HasSynced`
/// says only that the cache is filled, which is not "handlers done").
pub struct ResourceEventHandlerRegistration<K> {
    pub(crate) listener: Arc<Listener<K>>,
    informer_synced: SyncedFn,
    informer_progress: Arc<Notify>,
}

impl<K> Clone for ResourceEventHandlerRegistration<K> {
    fn clone(&self) -> Self {
        Self {
            listener: Arc::clone(&self.listener),
            informer_synced: Arc::clone(&self.informer_synced),
            informer_progress: Arc::clone(&self.informer_progress),
        }
    }
}

impl<K> ResourceEventHandlerRegistration<K> {
    pub(crate) fn new(
        listener: Arc<Listener<K>>,
        informer_synced: SyncedFn,
        informer_progress: Arc<Notify>,
    ) -> Self {
        Self { listener, informer_synced, informer_progress }
    }

    /// True once the informer has synced and this handler has processed all its initial adds.
    #[must_use]
    pub fn has_synced(&self) -> bool {
        (self.informer_synced)() && self.listener.initial_pending() == 0
    }

    /// Waits until [`has_synced`](Self::has_synced); `false` if the handler was removed or the
    /// informer stopped first.
    pub async fn wait_for_sync(&self) -> bool {
        loop {
            let informer = self.informer_progress.notified();
            let listener = self.listener.progressed.notified();
            tokio::pin!(informer, listener);
            informer.as_mut().enable();
            listener.as_mut().enable();
            if self.has_synced() {
                return true;
            }
            if self.listener.is_stopped() {
                return false;
            }
            tokio::select! {
                () = informer => {}
                () = listener => {}
            }
        }
    }

    /// This handler's number, unique in the process: what logs and
    /// [`UnfinishedHandler::id`](super::UnfinishedHandler::id) call it.
    #[must_use]
    pub fn id(&self) -> u64 {
        self.listener.id()
    }

    /// Notifications buffered for this handler and not yet handled. A number that keeps growing
    /// means the handler is too slow for the event rate.
    #[must_use]
    pub fn pending(&self) -> usize {
        self.listener.pending()
    }

    /// How many notifications made the handler panic (each was skipped).
    #[must_use]
    pub fn panics(&self) -> u64 {
        self.listener.panics()
    }

    /// The resync period this handler really gets (after the informer's rules).
    #[must_use]
    pub fn resync_period(&self) -> Duration {
        self.listener.resync_period()
    }

    /// Whether the handler no longer receives notifications (removed, or informer stopped).
    #[must_use]
    pub fn is_stopped(&self) -> bool {
        self.listener.is_stopped()
    }
}

impl<K> std::fmt::Debug for ResourceEventHandlerRegistration<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResourceEventHandlerRegistration")
            .field("id", &self.listener.id())
            .field("pending", &self.listener.pending())
            .field("has_synced", &self.has_synced())
            .finish()
    }
}
