//! What a reconcile is given and answers, and why a controller cannot run: the types every
//! file of the controller shares, below them all.

use std::sync::Arc;
use std::time::Duration;

use informer_runtime::factory::FactoryError;
use informer_runtime::shared_informer::InformerError;
use informer_runtime::store::ObjectKey;

/// What a reconcile asks for next; see the [module docs](super).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Nothing until the object (or one it owns or watches) changes again.
    Done,
    /// Reconcile again after this long, changes or not.
    RequeueAfter(Duration),
}

/// One key to reconcile.
#[derive(Debug)]
#[non_exhaustive]
pub struct Request<K> {
    /// The key of the primary object: `namespace/name`, or `name` for cluster-scoped kinds.
    pub key: ObjectKey,
    /// The object as the cache holds it when the key was taken; `None` when it is gone.
    pub object: Option<Arc<K>>,
}

impl<K> Request<K> {
    /// A request for `key`, for tests of a reconcile function.
    #[must_use]
    pub fn new(key: ObjectKey, object: Option<Arc<K>>) -> Self {
        Self { key, object }
    }
}

/// Why a controller could not run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ControllerError {
    /// A handler could not be registered: the factory's informers were shut down before the
    /// controller ran. Build the controller on a factory that is still running.
    #[error("controller {controller}: registering its handlers: {source}")]
    Register {
        /// The controller's name.
        controller: String,
        /// The informer's error.
        #[source]
        source: InformerError,
    },
    /// The factory has no informer for a resource the controller watches: its source cannot
    /// list resources known only at run time (a [`for_resource`](super::Controller::for_resource),
    /// [`owns_dynamic`](super::Controller::owns_dynamic) or
    /// [`watches_dynamic`](super::Controller::watches_dynamic) controller). Build the factory on an
    /// HTTP client (`informer_client::Client`).
    #[error("controller {controller}: {source}")]
    Informer {
        /// The controller's name.
        controller: String,
        /// The factory's error, which names the resource.
        #[source]
        source: FactoryError,
    },
}
