//! The controller: runs the reflector and pops the queue into the cache and the handlers.
//!
//! [`process_deltas`] is client-go's `processDeltas`: deltas oldest to newest, each applied to
//! the store first, then reported as an add (the key was not cached), an update (it was), or a
//! delete. The pop loop runs it under the queue's lock, so a relist or resync never interleaves
//! with a half-applied pop.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::delta_fifo::{DeletedObject, Delta};
use crate::queue::Queue;
use crate::reflector::Reflector;
use crate::resource::Resource;
use crate::store::{Indexer, ObjectKey};

/// What the pop loop reports each applied delta to.
pub(crate) trait DeltaHandler<K> {
    fn on_add(&self, obj: Arc<K>, is_in_initial_list: bool);
    fn on_update(&self, old: Arc<K>, new: Arc<K>);
    fn on_delete(&self, obj: DeletedObject<K>);
}

/// Applies `deltas` to `store`, oldest first, reporting each to `handler`.
pub(crate) fn process_deltas<K: Resource>(
    handler: &impl DeltaHandler<K>,
    store: &Indexer<K>,
    deltas: Vec<Delta<K>>,
    is_in_initial_list: bool,
) {
    for delta in deltas {
        match delta {
            Delta::Deleted(deleted) => {
                store.delete_key(deleted.key().as_str());
                handler.on_delete(deleted);
            }
            Delta::Added(obj) | Delta::Updated(obj) | Delta::Replaced(obj) | Delta::Sync(obj) => {
                let key = ObjectKey::of(&*obj);
                match store.insert(key, Arc::clone(&obj)) {
                    Some(old) => handler.on_update(old, obj),
                    None => handler.on_add(obj, is_in_initial_list),
                }
            }
        }
    }
}

/// Runs `reflector` and pops `queue` into `process` until `cancel` fires; then closes the queue,
/// lets the pop loop drain what is queued, and returns. `after_pop` runs after each pop.
pub(crate) async fn run<K: Resource, Q: Queue<K>>(
    queue: &Q,
    reflector: &Reflector<K>,
    cancel: CancellationToken,
    process: impl Fn(Vec<Delta<K>>, bool) + Send + Sync,
    after_pop: impl Fn(),
) {
    let reflect = async {
        reflector.run(cancel).await;
        queue.close();
    };
    let pop_loop = async {
        while queue.pop(&process).await.is_ok() {
            after_pop();
        }
    };
    tokio::join!(reflect, pop_loop);
}
