//! How a [`Controller`](super::Controller) hears of changes: for each informer it reads (the
//! primary resource's, and those of what it owns or watches, typed or dynamic), a wait for the
//! cache and a handler registered when it runs, removed when it stops.

use std::sync::Arc;

use futures::future::BoxFuture;

use super::request::ControllerError;
use crate::workqueue::WorkQueue;
use informer_runtime::factory::FactoryError;
use informer_runtime::resource::Object;
use informer_runtime::shared_informer::{InformerError, ResourceEventHandler, SharedIndexInformer};
use informer_runtime::store::ObjectKey;

/// Why the handlers could not be registered, before the controller's name is added.
pub(super) enum RegisterError {
    Informer(InformerError),
    Factory(FactoryError),
}

impl RegisterError {
    pub(super) fn of(self, controller: String) -> ControllerError {
        match self {
            Self::Informer(source) => ControllerError::Register { controller, source },
            Self::Factory(source) => ControllerError::Informer { controller, source },
        }
    }
}

/// An informer as the factory answered for it: a typed one always, a dynamic one unless the
/// factory's source lists Rust types only (an error `run` reports).
pub(super) type Resolved<C> = Result<SharedIndexInformer<C>, FactoryError>;

pub(super) type Registration = Box<
    dyn FnOnce(&WorkQueue<ObjectKey>) -> Result<Box<dyn FnOnce() + Send>, RegisterError> + Send,
>;
pub(super) type SyncWait = Box<dyn Fn() -> BoxFuture<'static, bool> + Send + Sync>;
/// How a controller waits for an informer's cache, and registers `handler` on it, whether the
/// informer is typed or dynamic. One the factory could not make fails the registration, before
/// any cache is waited for.
pub(super) fn watch<C: Object>(
    informer: Resolved<C>,
    handler: impl FnOnce(&WorkQueue<ObjectKey>) -> Arc<dyn ResourceEventHandler<C>> + Send + 'static,
) -> (SyncWait, Registration) {
    let informer = match informer {
        Ok(informer) => informer,
        Err(error) => {
            let sync: SyncWait = Box::new(|| Box::pin(async { false }));
            return (sync, Box::new(move |_| Err(RegisterError::Factory(error))));
        }
    };
    let synced = informer.clone();
    let sync: SyncWait = Box::new(move || {
        let informer = synced.clone();
        Box::pin(async move { informer.wait_for_sync().await })
    });
    let registration: Registration = Box::new(move |queue| {
        let registration =
            informer.add_event_handler(handler(queue)).map_err(RegisterError::Informer)?;
        Ok(Box::new(move || informer.remove_event_handler(&registration))
            as Box<dyn FnOnce() + Send>)
    });
    (sync, registration)
}

/// Registers every handler; on an error, unregisters those registered before it.
pub(super) fn register_all(
    registrations: Vec<Registration>,
    queue: &WorkQueue<ObjectKey>,
) -> Result<Vec<Box<dyn FnOnce() + Send>>, RegisterError> {
    let mut removals = Vec::with_capacity(registrations.len());
    for register in registrations {
        match register(queue) {
            Ok(remove) => removals.push(remove),
            Err(error) => {
                for remove in removals {
                    remove();
                }
                return Err(error);
            }
        }
    }
    Ok(removals)
}

/// Unregisters the controller's handlers and shuts its queue down when dropped.
pub(super) struct Cleanup {
    pub(super) removals: Vec<Box<dyn FnOnce() + Send>>,
    pub(super) queue: WorkQueue<ObjectKey>,
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        self.queue.shut_down();
        for remove in self.removals.drain(..) {
            remove();
        }
    }
}
