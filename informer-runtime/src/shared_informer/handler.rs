//! What handlers implement: [`ResourceEventHandler`], its closure form, and a filtering adapter.

use std::fmt;
use std::sync::Arc;

pub use crate::delta_fifo::{DeletedFinalStateUnknown, DeletedObject};

/// Receives the changes of an informer's cache.
///
/// Each registered handler gets its own unbounded buffer and thread (as each of client-go's
/// listeners gets a goroutine): a slow handler never delays the watch, the other handlers or
/// the tokio runtime, but its buffer grows (watch
/// [`pending`](super::ResourceEventHandlerRegistration::pending); a warning is logged when it
/// passes a [mark](super::SharedIndexInformer::with_handler_backlog_warning)).
///
/// So a handler may block, on a lock, a channel or a synchronous call: it delays only its own
/// notifications. It runs inside the informer's tokio runtime context, so it can also
/// `tokio::spawn` work, or wait for a future with `Handle::current().block_on(...)`. Keep it
/// quick all the same (hand keys to a work queue): a handler that never returns keeps its
/// thread, and the informer's shutdown gives up on it after a
/// [timeout](super::SharedIndexInformer::with_shutdown_timeout) and reports it.
///
/// Objects are shared with the cache: read-only.
#[doc(alias = "ResourceEventHandlerFuncs")]
pub trait ResourceEventHandler<K>: Send + Sync + 'static {
    /// An object entered the cache. `is_in_initial_list` is true for the objects of the first
    /// list, and for the synthetic adds a handler registered late receives.
    fn on_add(&self, obj: Arc<K>, is_in_initial_list: bool) {
        let _ = (obj, is_in_initial_list);
    }

    /// A cached object changed, or was replayed by a resync (then `old` and `new` have the same
    /// resourceVersion).
    fn on_update(&self, old: Arc<K>, new: Arc<K>) {
        let _ = (old, new);
    }

    /// An object left the cache. Handle both cases of [`DeletedObject`]: a relist that finds an
    /// object gone delivers a [`DeletedFinalStateUnknown`] tombstone.
    fn on_delete(&self, obj: DeletedObject<K>) {
        let _ = obj;
    }
}

/// A shared handler: keep an `Arc` to read its state while it is registered.
impl<K, H: ResourceEventHandler<K> + ?Sized> ResourceEventHandler<K> for Arc<H> {
    fn on_add(&self, obj: Arc<K>, is_in_initial_list: bool) {
        (**self).on_add(obj, is_in_initial_list);
    }

    fn on_update(&self, old: Arc<K>, new: Arc<K>) {
        (**self).on_update(old, new);
    }

    fn on_delete(&self, obj: DeletedObject<K>) {
        (**self).on_delete(obj);
    }
}

/// One change, as delivered to a handler or a [`NotificationStream`](super::NotificationStream).
pub enum Notification<K> {
    /// See [`ResourceEventHandler::on_add`].
    Add {
        /// The object.
        obj: Arc<K>,
        /// Whether it belongs to the initial list.
        is_in_initial_list: bool,
    },
    /// See [`ResourceEventHandler::on_update`].
    Update {
        /// The state before.
        old: Arc<K>,
        /// The state after.
        new: Arc<K>,
    },
    /// See [`ResourceEventHandler::on_delete`].
    Delete(DeletedObject<K>),
}

impl<K> Clone for Notification<K> {
    fn clone(&self) -> Self {
        match self {
            Self::Add { obj, is_in_initial_list } => {
                Self::Add { obj: Arc::clone(obj), is_in_initial_list: *is_in_initial_list }
            }
            Self::Update { old, new } => {
                Self::Update { old: Arc::clone(old), new: Arc::clone(new) }
            }
            Self::Delete(d) => Self::Delete(d.clone()),
        }
    }
}

impl<K: crate::Object> fmt::Debug for Notification<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let show =
            |o: &K| format!("{}@{}", crate::ObjectKey::of(o), crate::resource::resource_version(o));
        match self {
            Self::Add { obj, is_in_initial_list } => {
                write!(f, "Add({}, initial={is_in_initial_list})", show(obj))
            }
            Self::Update { old, new } => write!(f, "Update({} -> {})", show(old), show(new)),
            Self::Delete(d) => write!(f, "Delete({d:?})"),
        }
    }
}

impl<K> Notification<K> {
    /// Calls the matching method of `handler`.
    pub fn dispatch(self, handler: &(impl ResourceEventHandler<K> + ?Sized)) {
        match self {
            Self::Add { obj, is_in_initial_list } => handler.on_add(obj, is_in_initial_list),
            Self::Update { old, new } => handler.on_update(old, new),
            Self::Delete(obj) => handler.on_delete(obj),
        }
    }
}

type AddFn<K> = Box<dyn Fn(Arc<K>, bool) + Send + Sync>;
type UpdateFn<K> = Box<dyn Fn(Arc<K>, Arc<K>) + Send + Sync>;
type DeleteFn<K> = Box<dyn Fn(DeletedObject<K>) + Send + Sync>;

/// A handler made of closures; the ones not set do nothing.
///
/// ```
/// # use informer_runtime::shared_informer::HandlerFuncs;
/// # use k8s_openapi::api::core::v1::Pod;
/// let handler = HandlerFuncs::<Pod>::new()
///     .on_add(|pod, _initial| println!("added {:?}", pod.metadata.name))
///     .on_delete(|deleted| println!("deleted {}", deleted.key()));
/// ```
#[doc(alias = "ResourceEventHandlerFuncs")]
pub struct HandlerFuncs<K> {
    add: Option<AddFn<K>>,
    update: Option<UpdateFn<K>>,
    delete: Option<DeleteFn<K>>,
}

impl<K> Default for HandlerFuncs<K> {
    fn default() -> Self {
        Self { add: None, update: None, delete: None }
    }
}

impl<K> HandlerFuncs<K> {
    /// A handler that does nothing yet.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets what to do on add.
    #[must_use]
    pub fn on_add(mut self, f: impl Fn(Arc<K>, bool) + Send + Sync + 'static) -> Self {
        self.add = Some(Box::new(f));
        self
    }

    /// Sets what to do on update.
    #[must_use]
    pub fn on_update(mut self, f: impl Fn(Arc<K>, Arc<K>) + Send + Sync + 'static) -> Self {
        self.update = Some(Box::new(f));
        self
    }

    /// Sets what to do on delete.
    #[must_use]
    pub fn on_delete(mut self, f: impl Fn(DeletedObject<K>) + Send + Sync + 'static) -> Self {
        self.delete = Some(Box::new(f));
        self
    }
}

impl<K: Send + Sync + 'static> ResourceEventHandler<K> for HandlerFuncs<K> {
    fn on_add(&self, obj: Arc<K>, is_in_initial_list: bool) {
        if let Some(f) = &self.add {
            f(obj, is_in_initial_list);
        }
    }

    fn on_update(&self, old: Arc<K>, new: Arc<K>) {
        if let Some(f) = &self.update {
            f(old, new);
        }
    }

    fn on_delete(&self, obj: DeletedObject<K>) {
        if let Some(f) = &self.delete {
            f(obj);
        }
    }
}

impl<K> fmt::Debug for HandlerFuncs<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HandlerFuncs")
            .field("on_add", &self.add.is_some())
            .field("on_update", &self.update.is_some())
            .field("on_delete", &self.delete.is_some())
            .finish()
    }
}

/// Passes on only the objects `filter` accepts, turning transitions into adds and deletes:
/// an update that starts matching becomes an add, one that stops matching a delete.
///
/// ```
/// # use informer_runtime::shared_informer::{FilteringHandler, HandlerFuncs};
/// # use k8s_openapi::api::core::v1::Pod;
/// let running_only = FilteringHandler::new(
///     |pod: &Pod| pod.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running"),
///     HandlerFuncs::new().on_add(|pod: std::sync::Arc<Pod>, _| println!("running: {:?}", pod.metadata.name)),
/// );
/// ```
#[doc(alias = "FilteringResourceEventHandler")]
pub struct FilteringHandler<F, H> {
    filter: F,
    handler: H,
}

impl<F, H> FilteringHandler<F, H> {
    /// Wraps `handler` behind `filter`.
    pub fn new(filter: F, handler: H) -> Self {
        Self { filter, handler }
    }
}

impl<K, F, H> ResourceEventHandler<K> for FilteringHandler<F, H>
where
    F: Fn(&K) -> bool + Send + Sync + 'static,
    H: ResourceEventHandler<K>,
{
    fn on_add(&self, obj: Arc<K>, is_in_initial_list: bool) {
        if (self.filter)(&obj) {
            self.handler.on_add(obj, is_in_initial_list);
        }
    }

    fn on_update(&self, old: Arc<K>, new: Arc<K>) {
        match ((self.filter)(&old), (self.filter)(&new)) {
            (true, true) => self.handler.on_update(old, new),
            (false, true) => self.handler.on_add(new, false),
            (true, false) => self.handler.on_delete(DeletedObject::Object(old)),
            (false, false) => {}
        }
    }

    fn on_delete(&self, obj: DeletedObject<K>) {
        // A tombstone without a last state cannot be judged: pass it on rather than lose a delete.
        if obj.object().is_none_or(|o| (self.filter)(o)) {
            self.handler.on_delete(obj);
        }
    }
}

impl<F, H: fmt::Debug> fmt::Debug for FilteringHandler<F, H> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FilteringHandler").field("handler", &self.handler).finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::Pod;
    use parking_lot::Mutex;

    use super::*;
    use crate::testing::objects::labeled_pod;

    // client-go's FilteringResourceEventHandler: transitions become adds and deletes.
    #[test]
    fn filtering_handler_turns_transitions_into_adds_and_deletes() {
        let seen = Arc::new(Mutex::new(Vec::<String>::new()));
        let (a, u, d) = (Arc::clone(&seen), Arc::clone(&seen), Arc::clone(&seen));
        let name = |p: &Pod| p.metadata.name.clone().unwrap_or_default();
        let inner = HandlerFuncs::new()
            .on_add(move |p: Arc<Pod>, initial| {
                a.lock().push(format!("add {} {initial}", name(&p)));
            })
            .on_update(move |_, p: Arc<Pod>| u.lock().push(format!("update {}", name(&p))))
            .on_delete(move |o: DeletedObject<Pod>| d.lock().push(format!("delete {}", o.key())));
        let web = |p: &Pod| {
            p.metadata.labels.as_ref().and_then(|l| l.get("app")).is_some_and(|v| v == "web")
        };
        let handler = FilteringHandler::new(web, inner);
        let on = Arc::new(labeled_pod("ns", "a", &[("app", "web")]));
        let off = Arc::new(labeled_pod("ns", "a", &[("app", "db")]));

        handler.on_add(Arc::clone(&off), true);
        handler.on_add(Arc::clone(&on), true);
        handler.on_update(Arc::clone(&on), Arc::clone(&on));
        handler.on_update(Arc::clone(&on), Arc::clone(&off)); // stops matching: a delete
        handler.on_update(Arc::clone(&off), Arc::clone(&off)); // never matched: nothing
        handler.on_update(Arc::clone(&off), Arc::clone(&on)); // starts matching: an add
        handler.on_delete(DeletedObject::Object(Arc::clone(&off)));
        handler.on_delete(DeletedObject::Object(Arc::clone(&on)));
        handler.on_delete(DeletedObject::FinalStateUnknown(DeletedFinalStateUnknown {
            key: "ns/unknown".into(),
            obj: None,
        }));
        assert_eq!(
            *seen.lock(),
            [
                "add a true",
                "update a",
                "delete ns/a",
                "add a false",
                "delete ns/a",
                "delete ns/unknown"
            ]
        );
    }

    #[test]
    fn handler_funcs_dispatch_and_unset_closures_do_nothing() {
        let seen = Arc::new(Mutex::new(Vec::<&str>::new()));
        let s = Arc::clone(&seen);
        let only_delete = HandlerFuncs::<Pod>::new().on_delete(move |_| s.lock().push("delete"));
        Notification::Add { obj: Arc::new(Pod::default()), is_in_initial_list: false }
            .dispatch(&only_delete);
        Notification::Update { old: Arc::new(Pod::default()), new: Arc::new(Pod::default()) }
            .dispatch(&only_delete);
        Notification::Delete(DeletedObject::Object(Arc::new(Pod::default())))
            .dispatch(&only_delete);
        assert_eq!(*seen.lock(), ["delete"]);
        assert!(format!("{only_delete:?}").contains("on_add: false"));
    }
}
