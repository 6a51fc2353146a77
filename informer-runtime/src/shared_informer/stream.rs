//! Notifications as an async [`Stream`], for code that prefers streams to callbacks.

use std::pin::Pin;
use std::sync::{Arc, Weak};
use std::task::{Context, Poll};

use futures::Stream;
use tokio::sync::mpsc;

use super::handler::Notification;
use super::processor::{Listener, Processor};
use super::registration::ResourceEventHandlerRegistration;

/// The informer's notifications as a [`Stream`]; see
/// [`SharedIndexInformer::stream`](super::SharedIndexInformer::stream).
///
/// It behaves like a registered handler: its own unbounded buffer, the cache replayed first
/// when created after start, resync updates never (resync is for handlers that ask for it).
/// It ends when the informer stops. Dropping it unregisters it.
pub struct NotificationStream<K> {
    receiver: mpsc::UnboundedReceiver<Notification<K>>,
    registration: ResourceEventHandlerRegistration<K>,
    processor: Weak<Processor<K>>,
    listener: Arc<Listener<K>>,
}

impl<K> NotificationStream<K> {
    pub(crate) fn new(
        receiver: mpsc::UnboundedReceiver<Notification<K>>,
        registration: ResourceEventHandlerRegistration<K>,
        processor: Weak<Processor<K>>,
        listener: Arc<Listener<K>>,
    ) -> Self {
        Self { receiver, registration, processor, listener }
    }

    /// The registration behind this stream: `has_synced()` is true once the informer synced and
    /// the initial notifications were taken from the stream.
    #[must_use]
    pub fn registration(&self) -> &ResourceEventHandlerRegistration<K> {
        &self.registration
    }
}

impl<K> Stream for NotificationStream<K> {
    type Item = Notification<K>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let polled = self.receiver.poll_recv(cx);
        if let Poll::Ready(Some(notification)) = &polled {
            let initial =
                matches!(notification, Notification::Add { is_in_initial_list: true, .. });
            self.listener.done(initial);
        }
        polled
    }
}

impl<K> Drop for NotificationStream<K> {
    fn drop(&mut self) {
        if let Some(processor) = self.processor.upgrade() {
            processor.remove(self.listener.id());
        }
    }
}

impl<K> std::fmt::Debug for NotificationStream<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NotificationStream").field("pending", &self.listener.pending()).finish()
    }
}
