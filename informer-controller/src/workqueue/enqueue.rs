//! Handlers that turn an informer's events into keys of a [`WorkQueue`] (controller-runtime's
//! `handler.EnqueueRequestForObject`, `EnqueueRequestForOwner` and
//! `EnqueueRequestsFromMapFunc`).

use std::marker::PhantomData;
use std::sync::Arc;

use informer_runtime::dynamic::DynamicObject;
use informer_runtime::resource::{ApiResource, Object, Resource};
use informer_runtime::shared_informer::{DeletedObject, ResourceEventHandler};
use informer_runtime::store::ObjectKey;

use super::WorkQueue;
use crate::owner_references::refers_to_kind;

/// Adds the key of every added, updated or deleted object: for an informer of the resource a
/// controller reconciles.
///
/// ```
/// # use informer_runtime::{SharedInformerFactory, testing::FakeSource};
/// # use informer_controller::workqueue::{WorkQueue, EnqueueObject};
/// # use k8s_openapi::api::core::v1::ConfigMap;
/// # let factory = SharedInformerFactory::new(FakeSource::new());
/// let queue = WorkQueue::new();
/// factory.informer::<ConfigMap>().add_event_handler(EnqueueObject::new(queue.clone()))?;
/// # Ok::<(), informer_runtime::shared_informer::InformerError>(())
/// ```
#[doc(alias = "EnqueueRequestForObject")]
#[derive(Clone, Debug)]
pub struct EnqueueObject {
    queue: WorkQueue<ObjectKey>,
}

impl EnqueueObject {
    /// Adds to `queue`.
    #[must_use]
    pub fn new(queue: WorkQueue<ObjectKey>) -> Self {
        Self { queue }
    }
}

impl<K: Object> ResourceEventHandler<K> for EnqueueObject {
    fn on_add(&self, obj: Arc<K>, _is_in_initial_list: bool) {
        self.queue.add(ObjectKey::of(&*obj));
    }

    fn on_update(&self, _old: Arc<K>, new: Arc<K>) {
        self.queue.add(ObjectKey::of(&*new));
    }

    fn on_delete(&self, obj: DeletedObject<K>) {
        self.queue.add(obj.key());
    }
}

/// Adds the keys of the owners of kind `O` of every changed object: for an informer of what a
/// controller creates, so that a change to a child reconciles its parent. For owners of a
/// resource known only at run time, `O` is [`DynamicObject`] and
/// [`for_resource`](EnqueueOwner::for_resource) names the resource.
///
/// An owner matches by its reference's group and kind, in any version (the rule of
/// [`refers_to`](crate::owner_references::refers_to)); with
/// [`only_controller`](Self::only_controller), only the reference marked `controller: true`. A
/// namespaced owner is in its child's namespace (Kubernetes allows no other); for an update,
/// the owners before and after both are added, so a parent that lost a child hears of it.
///
/// ```
/// # use informer_runtime::{SharedInformerFactory, testing::FakeSource};
/// # use informer_controller::workqueue::{WorkQueue, EnqueueOwner};
/// # use k8s_openapi::api::{apps::v1::ReplicaSet, core::v1::Pod};
/// # let factory = SharedInformerFactory::new(FakeSource::new());
/// let queue = WorkQueue::new(); // of ReplicaSet keys
/// factory
///     .informer::<Pod>()
///     .add_event_handler(EnqueueOwner::<ReplicaSet>::new(queue.clone()).only_controller())?;
/// # Ok::<(), informer_runtime::shared_informer::InformerError>(())
/// ```
#[doc(alias = "EnqueueRequestForOwner")]
pub struct EnqueueOwner<O> {
    queue: WorkQueue<ObjectKey>,
    only_controller: bool,
    /// The owners' group, kind and scope: `O`'s, or the resource given for a dynamic `O`.
    group: String,
    kind: String,
    namespaced: bool,
    owner: PhantomData<fn() -> O>,
}

impl<O: Resource> EnqueueOwner<O> {
    /// Adds owners of kind `O` to `queue`, whatever their reference's `controller` field says.
    #[must_use]
    pub fn new(queue: WorkQueue<ObjectKey>) -> Self {
        Self::of_resource(queue, &ApiResource::of::<O>())
    }
}

impl EnqueueOwner<DynamicObject> {
    /// Adds owners of `owner`, a resource known only at run time, to `queue`: references are
    /// matched with `owner`'s group and kind, and `owner.namespaced` says whether the owner is
    /// in its child's namespace (controller-runtime's `EnqueueRequestForOwner` with an
    /// unstructured owner type).
    ///
    /// ```
    /// # use informer_runtime::{ApiResource, SharedInformerFactory, testing::FakeSource};
    /// # use informer_runtime::dynamic::DynamicObject;
    /// # use informer_controller::workqueue::{WorkQueue, EnqueueOwner};
    /// # use k8s_openapi::api::core::v1::ConfigMap;
    /// # let factory = SharedInformerFactory::new(FakeSource::new());
    /// let widgets = ApiResource {
    ///     group: "example.com".into(),
    ///     version: "v1".into(),
    ///     kind: "Widget".into(),
    ///     plural: "widgets".into(),
    ///     namespaced: true,
    /// };
    /// let queue = WorkQueue::new(); // of Widget keys
    /// let handler = EnqueueOwner::<DynamicObject>::for_resource(queue.clone(), &widgets);
    /// factory.informer::<ConfigMap>().add_event_handler(handler.only_controller())?;
    /// # Ok::<(), informer_runtime::shared_informer::InformerError>(())
    /// ```
    #[must_use]
    pub fn for_resource(queue: WorkQueue<ObjectKey>, owner: &ApiResource) -> Self {
        Self::of_resource(queue, owner)
    }
}

impl<O> EnqueueOwner<O> {
    /// Owners of `owner`'s group and kind, for an `O` whose identity is `owner`: what the
    /// controller uses, which knows its primary resource's as a value, typed or not.
    pub(crate) fn of_resource(queue: WorkQueue<ObjectKey>, owner: &ApiResource) -> Self {
        Self {
            queue,
            only_controller: false,
            group: owner.group.clone(),
            kind: owner.kind.clone(),
            namespaced: owner.namespaced,
            owner: PhantomData,
        }
    }

    /// Only the owner whose reference says `controller: true` (controller-runtime's
    /// `OnlyControllerOwner`).
    #[must_use]
    pub fn only_controller(mut self) -> Self {
        self.only_controller = true;
        self
    }

    fn add_owners<K: Object>(&self, obj: &K) {
        let meta = obj.meta();
        let namespace = if self.namespaced { meta.namespace.as_deref() } else { None };
        for owner in meta.owner_references.iter().flatten() {
            if !refers_to_kind(owner, &self.group, &self.kind) {
                continue;
            }
            if self.only_controller && owner.controller != Some(true) {
                continue;
            }
            self.queue.add(ObjectKey::new(namespace, &owner.name));
        }
    }
}

impl<O> Clone for EnqueueOwner<O> {
    fn clone(&self) -> Self {
        Self {
            queue: self.queue.clone(),
            only_controller: self.only_controller,
            group: self.group.clone(),
            kind: self.kind.clone(),
            namespaced: self.namespaced,
            owner: PhantomData,
        }
    }
}

impl<O, K> ResourceEventHandler<K> for EnqueueOwner<O>
where
    O: Object,
    K: Object,
{
    fn on_add(&self, obj: Arc<K>, _is_in_initial_list: bool) {
        self.add_owners(&*obj);
    }

    fn on_update(&self, old: Arc<K>, new: Arc<K>) {
        self.add_owners(&*old);
        self.add_owners(&*new);
    }

    fn on_delete(&self, obj: DeletedObject<K>) {
        // A tombstone without its last state names no owners: nothing to add.
        if let Some(obj) = obj.object() {
            self.add_owners(&**obj);
        }
    }
}

/// Adds the keys a function maps each changed object to: for objects that point to the
/// reconciled ones other than by owner references (a Secret that custom resources name, a Node
/// its Pods).
///
/// For an update, the keys of the object before and after are both added; for a deletion
/// whose last state is unknown, none.
///
/// ```
/// # use informer_runtime::{ObjectKey, SharedInformerFactory, testing::FakeSource};
/// # use informer_controller::workqueue::{WorkQueue, EnqueueMapped};
/// # use k8s_openapi::api::core::v1::Secret;
/// # let factory = SharedInformerFactory::new(FakeSource::new());
/// let queue = WorkQueue::new();
/// // A Secret annotated `example.com/user: NAME` concerns the object NAME of its namespace.
/// let handler = EnqueueMapped::new(queue.clone(), |secret: &Secret| {
///     let meta = &secret.metadata;
///     meta.annotations
///         .as_ref()
///         .and_then(|a| a.get("example.com/user"))
///         .map(|user| ObjectKey::new(meta.namespace.as_deref(), user))
/// });
/// factory.informer::<Secret>().add_event_handler(handler)?;
/// # Ok::<(), informer_runtime::shared_informer::InformerError>(())
/// ```
#[doc(alias = "EnqueueRequestsFromMapFunc")]
pub struct EnqueueMapped<F> {
    queue: WorkQueue<ObjectKey>,
    map: F,
}

impl<F> EnqueueMapped<F> {
    /// Adds the keys `map` gives for each changed object to `queue`.
    #[must_use]
    pub fn new(queue: WorkQueue<ObjectKey>, map: F) -> Self {
        Self { queue, map }
    }
}

impl<K, F, I> ResourceEventHandler<K> for EnqueueMapped<F>
where
    K: Object,
    F: Fn(&K) -> I + Send + Sync + 'static,
    I: IntoIterator<Item = ObjectKey>,
{
    fn on_add(&self, obj: Arc<K>, _is_in_initial_list: bool) {
        for key in (self.map)(&*obj) {
            self.queue.add(key);
        }
    }

    fn on_update(&self, old: Arc<K>, new: Arc<K>) {
        for key in (self.map)(&*old).into_iter().chain((self.map)(&*new)) {
            self.queue.add(key);
        }
    }

    fn on_delete(&self, obj: DeletedObject<K>) {
        if let Some(obj) = obj.object() {
            for key in (self.map)(&**obj) {
                self.queue.add(key);
            }
        }
    }
}
