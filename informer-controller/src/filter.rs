//! Which events reach a controller: filters on an informer's adds, updates and deletes
//! (controller-runtime's `predicate` package; kube-rs's `predicate_filter`).
//!
//! A [`Filter`] says, for each event of an informer, whether a handler hears of it; [`Filtered`]
//! puts one in front of a [`ResourceEventHandler`]. A filter sits in front of one handler only:
//! the informer's cache, and every other handler on it (another controller's, a lister's
//! reader), still sees every change. [`Controller::filter`](crate::controller::Controller::filter)
//! and [`owns_filtered`](crate::controller::Controller::owns_filtered) use it for the keys a
//! controller reconciles.
//!
//! | filter | an update passes when | adds and deletes |
//! |---|---|---|
//! | [`GenerationChanged`] | `metadata.generation` differs, or either object has none | pass |
//! | [`ResourceVersionChanged`] | `metadata.resourceVersion` differs (not an informer's resync) | pass |
//! | [`LabelsChanged`] | the labels differ (none and empty are alike) | pass |
//! | [`AnnotationsChanged`] | the annotations differ (none and empty are alike) | pass |
//! | [`Changed(f)`](Changed) | `f(old) != f(new)` | pass |
//! | [`Matching(f)`](Matching) | `f(new)` | pass when `f(object)` |
//! | [`And(a, b)`](And), [`Or(a, b)`](Or), [`Not(a)`](Not) | each event by itself: both, either, not | likewise |
//!
//! The usual one is [`GenerationChanged`]. The API server bumps `metadata.generation` when the
//! spec of an object changes, and not when its status or metadata do, on kinds whose status is a
//! subresource (Deployments, most custom resources). A controller that writes the status of the
//! objects it reconciles would otherwise hear of each of its own writes and reconcile the object
//! once more for nothing; behind `GenerationChanged` it hears of spec changes only. Deletion
//! still arrives as a delete (and setting `deletionTimestamp` bumps the generation), but a
//! change of finalizers alone does not: add it back with [`Or`] and [`Changed`] when the
//! controller waits on other controllers' finalizers, as below.
//!
//! ```
//! use informer_controller::filter::{Changed, Filter, GenerationChanged, Or};
//! use k8s_openapi::api::apps::v1::Deployment;
//!
//! // Spec changes, and the steps of a deletion.
//! let filter = Or(
//!     GenerationChanged,
//!     Changed(|d: &Deployment| {
//!         (d.metadata.deletion_timestamp.clone(), d.metadata.finalizers.clone())
//!     }),
//! );
//! let mut old = Deployment::default();
//! old.metadata.generation = Some(1);
//! let mut new = old.clone();
//! new.metadata.labels = Some([("tier".to_owned(), "web".to_owned())].into());
//! assert!(!filter.update(&old, &new), "a label alone does not pass");
//! new.metadata.finalizers = Some(vec!["example.com/cleanup".to_owned()]);
//! assert!(filter.update(&old, &new), "a finalizer does");
//! ```
//!
//! Caveats, as controller-runtime gives them: a status overwritten by someone else is not
//! corrected until the next spec change (a controller [resync](crate::controller::Controller::resync)
//! bounds that, since it enqueues every key past the filters); and some built-in kinds bump the
//! generation on other writes too (a Deployment on an annotation change).

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use informer_runtime::resource::{Object, resource_version};
use informer_runtime::shared_informer::{DeletedObject, ResourceEventHandler};

/// Whether an informer's add, update or delete of a `K` reaches a handler; see the
/// [module docs](self).
///
/// Every method passes the event by default: a filter says only what it drops. A filter sees
/// the objects of the initial list (and the replay a handler registered late gets) through
/// [`add`](Self::add), as controller-runtime's `Create` predicate does; a deletion whose last
/// state is unknown (a [`DeletedFinalStateUnknown`](informer_runtime::shared_informer::DeletedFinalStateUnknown)
/// tombstone without an object) passes [`Filtered`] without asking the filter, since there is
/// nothing to judge and a lost delete would leave the controller believing in the object.
///
/// Implement it for a filter of your own, or build one from [`Matching`], [`Changed`] and the
/// combinators.
///
/// ```
/// use informer_controller::filter::Filter;
/// use k8s_openapi::api::core::v1::Pod;
///
/// /// Only pods that have been scheduled, and their deletions.
/// struct Scheduled;
///
/// impl Filter<Pod> for Scheduled {
///     fn add(&self, pod: &Pod) -> bool {
///         pod.spec.as_ref().is_some_and(|s| s.node_name.is_some())
///     }
///     fn update(&self, _old: &Pod, new: &Pod) -> bool {
///         self.add(new)
///     }
/// }
/// ```
#[doc(alias = "Predicate")]
#[doc(alias = "TypedPredicate")]
pub trait Filter<K>: Send + Sync + 'static {
    /// Whether an added object (also one of the initial list) passes.
    fn add(&self, obj: &K) -> bool {
        let _ = obj;
        true
    }

    /// Whether a change from `old` to `new` passes (also an informer's resync, where both have
    /// the same resourceVersion).
    fn update(&self, old: &K, new: &K) -> bool {
        let _ = (old, new);
        true
    }

    /// Whether the deletion of `obj` (its last known state) passes.
    fn delete(&self, obj: &K) -> bool {
        let _ = obj;
        true
    }
}

/// A shared filter.
impl<K, F: Filter<K> + ?Sized> Filter<K> for Arc<F> {
    fn add(&self, obj: &K) -> bool {
        (**self).add(obj)
    }

    fn update(&self, old: &K, new: &K) -> bool {
        (**self).update(old, new)
    }

    fn delete(&self, obj: &K) -> bool {
        (**self).delete(obj)
    }
}

/// A boxed filter, for a filter chosen at run time.
impl<K, F: Filter<K> + ?Sized> Filter<K> for Box<F> {
    fn add(&self, obj: &K) -> bool {
        (**self).add(obj)
    }

    fn update(&self, old: &K, new: &K) -> bool {
        (**self).update(old, new)
    }

    fn delete(&self, obj: &K) -> bool {
        (**self).delete(obj)
    }
}

/// Passes updates that change `metadata.generation`: spec changes, not status or metadata
/// writes (controller-runtime's `GenerationChangedPredicate`); see the [module docs](self).
///
/// An update where either object has no generation passes. The kinds whose API strategy does
/// not track it (`ConfigMap`, `Secret`, ...) never have one, and a filter
/// that cannot tell spec changes apart passes them all, as kube-rs's `predicates::generation`
/// does. controller-runtime differs here: it compares the missing generations as `0 == 0` and
/// drops every update of such a kind, so a controller of `ConfigMap`s behind it never hears of a
/// change.
#[doc(alias = "GenerationChangedPredicate")]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GenerationChanged;

impl<K: Object> Filter<K> for GenerationChanged {
    fn update(&self, old: &K, new: &K) -> bool {
        match (old.meta().generation, new.meta().generation) {
            (Some(old), Some(new)) => old != new,
            _ => true,
        }
    }
}

/// Passes updates that change `metadata.resourceVersion`: every real change, and none of an
/// informer's resync replays (controller-runtime's `ResourceVersionChangedPredicate`).
#[doc(alias = "ResourceVersionChangedPredicate")]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ResourceVersionChanged;

impl<K: Object> Filter<K> for ResourceVersionChanged {
    fn update(&self, old: &K, new: &K) -> bool {
        resource_version(old) != resource_version(new)
    }
}

/// Passes updates that change the labels: added, removed, or another value
/// (controller-runtime's `LabelChangedPredicate`). No labels and an empty map are alike.
///
/// Meant beside [`GenerationChanged`] in an [`Or`], for a kind whose labels say something the
/// spec does not.
#[doc(alias = "LabelChangedPredicate")]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LabelsChanged;

impl<K: Object> Filter<K> for LabelsChanged {
    fn update(&self, old: &K, new: &K) -> bool {
        !same_map(old.meta().labels.as_ref(), new.meta().labels.as_ref())
    }
}

/// Passes updates that change the annotations: added, removed, or another value
/// (controller-runtime's `AnnotationChangedPredicate`). No annotations and an empty map are
/// alike.
///
/// Meant beside [`GenerationChanged`] in an [`Or`], for a controller configured through
/// annotations.
#[doc(alias = "AnnotationChangedPredicate")]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AnnotationsChanged;

impl<K: Object> Filter<K> for AnnotationsChanged {
    fn update(&self, old: &K, new: &K) -> bool {
        !same_map(old.meta().annotations.as_ref(), new.meta().annotations.as_ref())
    }
}

/// Whether two optional maps are equal, a missing one being empty (Go's `maps.Equal` on
/// `GetLabels()`, where a nil map and an empty one are alike).
fn same_map(a: Option<&BTreeMap<String, String>>, b: Option<&BTreeMap<String, String>>) -> bool {
    let empty = BTreeMap::new();
    a.unwrap_or(&empty) == b.unwrap_or(&empty)
}

/// Passes updates where the function gives the old and the new object different values: a
/// [`GenerationChanged`] for any part of an object (kube-rs's predicates are such functions).
///
/// ```
/// use informer_controller::filter::{Changed, Filter};
/// use k8s_openapi::api::core::v1::Service;
///
/// // Reconcile a Service when its ports or its selector change.
/// let filter = Changed(|s: &Service| {
///     s.spec.as_ref().map(|spec| (spec.ports.clone(), spec.selector.clone()))
/// });
/// # let _ = &filter as &dyn Filter<Service>;
/// ```
#[derive(Clone, Copy, Default)]
pub struct Changed<F>(pub F);

impl<K, F, T> Filter<K> for Changed<F>
where
    F: Fn(&K) -> T + Send + Sync + 'static,
    T: PartialEq,
{
    fn update(&self, old: &K, new: &K) -> bool {
        (self.0)(old) != (self.0)(new)
    }
}

impl<F> fmt::Debug for Changed<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Changed").finish_non_exhaustive()
    }
}

/// Passes the events whose object satisfies the function: the added one, the new state of an
/// update, the last state of a deletion (controller-runtime's `NewPredicateFuncs`).
///
/// Unlike the runtime's [`FilteringHandler`](informer_runtime::shared_informer::FilteringHandler),
/// an update that stops matching is dropped, not turned into a delete: a filter drops events,
/// it does not keep a set of objects. A controller reconciles from the cache anyway, which
/// still holds the object.
///
/// ```
/// use informer_controller::filter::Matching;
/// use k8s_openapi::api::core::v1::Secret;
///
/// let tls_only = Matching(|s: &Secret| s.type_.as_deref() == Some("kubernetes.io/tls"));
/// # let _ = &tls_only as &dyn informer_controller::filter::Filter<Secret>;
/// ```
#[doc(alias = "NewPredicateFuncs")]
#[doc(alias = "LabelSelectorPredicate")]
#[derive(Clone, Copy, Default)]
pub struct Matching<F>(pub F);

impl<K, F> Filter<K> for Matching<F>
where
    F: Fn(&K) -> bool + Send + Sync + 'static,
{
    fn add(&self, obj: &K) -> bool {
        (self.0)(obj)
    }

    fn update(&self, _old: &K, new: &K) -> bool {
        (self.0)(new)
    }

    fn delete(&self, obj: &K) -> bool {
        (self.0)(obj)
    }
}

impl<F> fmt::Debug for Matching<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Matching").finish_non_exhaustive()
    }
}

/// Passes an event that both filters pass (controller-runtime's `And`); the second is not
/// asked when the first drops it. Nest for more: `And(a, And(b, c))`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct And<A, B>(pub A, pub B);

impl<K, A: Filter<K>, B: Filter<K>> Filter<K> for And<A, B> {
    fn add(&self, obj: &K) -> bool {
        self.0.add(obj) && self.1.add(obj)
    }

    fn update(&self, old: &K, new: &K) -> bool {
        self.0.update(old, new) && self.1.update(old, new)
    }

    fn delete(&self, obj: &K) -> bool {
        self.0.delete(obj) && self.1.delete(obj)
    }
}

/// Passes an event that either filter passes (controller-runtime's `Or`); the second is not
/// asked when the first passes it. Nest for more: `Or(a, Or(b, c))`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Or<A, B>(pub A, pub B);

impl<K, A: Filter<K>, B: Filter<K>> Filter<K> for Or<A, B> {
    fn add(&self, obj: &K) -> bool {
        self.0.add(obj) || self.1.add(obj)
    }

    fn update(&self, old: &K, new: &K) -> bool {
        self.0.update(old, new) || self.1.update(old, new)
    }

    fn delete(&self, obj: &K) -> bool {
        self.0.delete(obj) || self.1.delete(obj)
    }
}

/// Passes the events the filter drops, and drops the ones it passes (controller-runtime's
/// `Not`), adds and deletes included: `Not(GenerationChanged)` drops every add and delete.
/// Pair it with the adds and deletes you want: `And(Not(LabelsChanged), ...)` reads poorly,
/// a [`Changed`] or [`Matching`] of your own often reads better.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Not<A>(pub A);

impl<K, A: Filter<K>> Filter<K> for Not<A> {
    fn add(&self, obj: &K) -> bool {
        !self.0.add(obj)
    }

    fn update(&self, old: &K, new: &K) -> bool {
        !self.0.update(old, new)
    }

    fn delete(&self, obj: &K) -> bool {
        !self.0.delete(obj)
    }
}

/// A [`ResourceEventHandler`] that passes on to `handler` only the events `filter` passes
/// (controller-runtime's predicates on a watch; kube-rs's `predicate_filter` on a stream).
///
/// Each event is judged by itself and, when it passes, handed on unchanged: an update stays
/// an update, and the initial-list flag of an add is kept. A deletion whose last state is
/// unknown passes without asking the filter (see [`Filter`]).
///
/// ```
/// # use informer_runtime::{SharedInformerFactory, testing::FakeSource};
/// use informer_controller::filter::{Filtered, GenerationChanged};
/// use informer_controller::workqueue::{EnqueueObject, WorkQueue};
/// use k8s_openapi::api::apps::v1::Deployment;
///
/// # let factory = SharedInformerFactory::new(FakeSource::new());
/// let queue = WorkQueue::new();
/// factory
///     .informer::<Deployment>()
///     .add_event_handler(Filtered::new(GenerationChanged, EnqueueObject::new(queue.clone())))?;
/// # Ok::<(), informer_runtime::shared_informer::InformerError>(())
/// ```
#[doc(alias = "WithPredicates")]
#[doc(alias = "predicate_filter")]
#[derive(Clone, Debug)]
pub struct Filtered<F, H> {
    filter: F,
    handler: H,
}

impl<F, H> Filtered<F, H> {
    /// `handler` behind `filter`.
    #[must_use]
    pub fn new(filter: F, handler: H) -> Self {
        Self { filter, handler }
    }
}

impl<K, F, H> ResourceEventHandler<K> for Filtered<F, H>
where
    F: Filter<K>,
    H: ResourceEventHandler<K>,
{
    fn on_add(&self, obj: Arc<K>, is_in_initial_list: bool) {
        if self.filter.add(&obj) {
            self.handler.on_add(obj, is_in_initial_list);
        }
    }

    fn on_update(&self, old: Arc<K>, new: Arc<K>) {
        if self.filter.update(&old, &new) {
            self.handler.on_update(old, new);
        }
    }

    fn on_delete(&self, obj: DeletedObject<K>) {
        if obj.object().is_none_or(|o| self.filter.delete(o)) {
            self.handler.on_delete(obj);
        }
    }
}

#[cfg(test)]
mod tests {
    //! Ported from controller-runtime's `pkg/predicate/predicate_test.go` (each test names
    //! its `Describe`/`Context`); the Go cases of a nil old or new object have no Rust
    //! counterpart (an update always has both).

    use k8s_openapi::api::core::v1::Pod;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
    use parking_lot::Mutex;

    use super::*;
    use informer_runtime::shared_informer::{DeletedFinalStateUnknown, HandlerFuncs};

    /// The pod `biz/baz` of the Go tests, with `meta` changed.
    fn pod(change: impl FnOnce(&mut ObjectMeta)) -> Pod {
        let mut meta = ObjectMeta {
            namespace: Some("biz".into()),
            name: Some("baz".into()),
            ..ObjectMeta::default()
        };
        change(&mut meta);
        Pod { metadata: meta, ..Pod::default() }
    }

    fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
    }

    /// Whether `filter` passes the add and the delete of a plain pod, as each of
    /// controller-runtime's `...ChangedPredicate`s does.
    fn passes_adds_and_deletes(filter: &impl Filter<Pod>) -> bool {
        let plain = pod(|_| {});
        filter.add(&plain) && filter.delete(&plain)
    }

    /// A filter that says `pass` to every event (the Go tests' `funcs(pass)`).
    struct Fixed(bool);

    impl Filter<Pod> for Fixed {
        fn add(&self, _: &Pod) -> bool {
            self.0
        }
        fn update(&self, _: &Pod, _: &Pod) -> bool {
            self.0
        }
        fn delete(&self, _: &Pod) -> bool {
            self.0
        }
    }

    fn all_three(filter: &impl Filter<Pod>) -> [bool; 3] {
        let p = pod(|_| {});
        [filter.add(&p), filter.update(&p, &p), filter.delete(&p)]
    }

    // "Funcs": an unset function passes its event.
    #[test]
    fn a_filter_that_overrides_nothing_passes_every_event() {
        struct Nothing;
        impl Filter<Pod> for Nothing {}
        assert_eq!(all_three(&Nothing), [true; 3]);
    }

    // "When checking a ResourceVersionChangedPredicate".
    #[test]
    fn resource_version_changed_passes_updates_to_another_version_only() {
        let v1 = pod(|m| m.resource_version = Some("v1".into()));
        let v2 = pod(|m| m.resource_version = Some("v2".into()));
        assert!(passes_adds_and_deletes(&ResourceVersionChanged));
        assert!(!ResourceVersionChanged.update(&v1, &v1.clone()), "hasn't changed");
        assert!(ResourceVersionChanged.update(&v2, &v1), "has changed");
    }

    // "When checking a GenerationChangedPredicate".
    #[test]
    fn generation_changed_passes_updates_to_another_generation_only() {
        let g1 = pod(|m| m.generation = Some(1));
        let g2 = pod(|m| m.generation = Some(2));
        assert!(passes_adds_and_deletes(&GenerationChanged));
        assert!(!GenerationChanged.update(&g1, &g1.clone()), "hasn't changed");
        assert!(GenerationChanged.update(&g2, &g1), "has changed");
        // A status or label write keeps the generation: dropped.
        let relabeled = pod(|m| {
            m.generation = Some(1);
            m.labels = Some(map(&[("a", "b")]));
        });
        assert!(!GenerationChanged.update(&g1, &relabeled));
    }

    // Where this filter departs from controller-runtime's (which compares a missing
    // generation as 0, and drops the update) and follows kube-rs's `predicates::generation`.
    #[test]
    fn generation_changed_passes_updates_of_objects_without_a_generation() {
        let none = pod(|_| {});
        let g1 = pod(|m| m.generation = Some(1));
        assert!(GenerationChanged.update(&none, &none.clone()));
        assert!(GenerationChanged.update(&none, &g1));
        assert!(GenerationChanged.update(&g1, &none));
    }

    /// The cases controller-runtime's tests of `AnnotationChangedPredicate` and
    /// `LabelChangedPredicate` share, for the map `set` writes into.
    fn map_change_cases(
        filter: &impl Filter<Pod>,
        set: fn(&mut ObjectMeta, Option<BTreeMap<String, String>>),
    ) {
        let with = |pairs: Option<&[(&str, &str)]>| pod(|m| set(m, pairs.map(map)));
        let booz = [("booz", "wooz")];
        assert!(passes_adds_and_deletes(filter));
        assert!(!filter.update(&with(None), &with(None)), "empty");
        assert!(!filter.update(&with(None), &with(Some(&[]))), "none and empty are alike");
        assert!(!filter.update(&with(Some(&booz)), &with(Some(&booz))), "haven't changed");
        assert!(
            filter.update(&with(Some(&[("booz", "weez")])), &with(Some(&booz))),
            "value changed"
        );
        let both = [("booz", "wooz"), ("zooz", "qooz")];
        assert!(filter.update(&with(Some(&booz)), &with(Some(&both))), "added");
        assert!(filter.update(&with(Some(&both)), &with(Some(&booz))), "removed");
    }

    // "When checking an AnnotationChangedPredicate".
    #[test]
    fn annotations_changed_passes_updates_that_add_remove_or_change_one() {
        map_change_cases(&AnnotationsChanged, |m, a| m.annotations = a);
        let labeled = pod(|m| m.labels = Some(map(&[("a", "b")])));
        assert!(!AnnotationsChanged.update(&pod(|_| {}), &labeled), "labels are not its part");
    }

    // "When checking a LabelChangedPredicate".
    #[test]
    fn labels_changed_passes_updates_that_add_remove_or_change_one() {
        map_change_cases(&LabelsChanged, |m, l| m.labels = l);
        let annotated = pod(|m| m.annotations = Some(map(&[("a", "b")])));
        assert!(!LabelsChanged.update(&pod(|_| {}), &annotated), "annotations are not its part");
    }

    // "When checking an And predicate".
    #[test]
    fn and_passes_what_both_pass() {
        assert_eq!(all_three(&And(Fixed(true), Fixed(false))), [false; 3]);
        assert_eq!(all_three(&And(Fixed(false), Fixed(true))), [false; 3]);
        assert_eq!(all_three(&And(Fixed(true), Fixed(true))), [true; 3]);
    }

    // "When checking an Or predicate".
    #[test]
    fn or_passes_what_either_passes() {
        assert_eq!(all_three(&Or(Fixed(true), Fixed(false))), [true; 3]);
        assert_eq!(all_three(&Or(Fixed(false), Fixed(true))), [true; 3]);
        assert_eq!(all_three(&Or(Fixed(false), Fixed(false))), [false; 3]);
    }

    // "When checking a Not predicate".
    #[test]
    fn not_inverts_every_event() {
        assert_eq!(all_three(&Not(Fixed(true))), [false; 3]);
        assert_eq!(all_three(&Not(Fixed(false))), [true; 3]);
        assert!(!Not(GenerationChanged).add(&pod(|_| {})), "adds too");
    }

    // "NewPredicateFuncs with a namespace filter function".
    #[test]
    fn matching_judges_the_added_the_new_and_the_deleted_object() {
        let in_biz = Matching(|p: &Pod| p.metadata.namespace.as_deref() == Some("biz"));
        let biz = pod(|_| {});
        let bizz = pod(|m| m.namespace = Some("bizz".into()));
        assert!(in_biz.add(&biz) && in_biz.delete(&biz) && in_biz.update(&biz, &biz));
        assert!(!in_biz.add(&bizz) && !in_biz.delete(&bizz));
        assert!(!in_biz.update(&biz, &bizz), "the new object decides");
        assert!(in_biz.update(&bizz, &biz));
    }

    #[test]
    fn changed_passes_updates_where_the_function_differs() {
        let steps = Changed(|p: &Pod| {
            (p.metadata.deletion_timestamp.clone(), p.metadata.finalizers.clone())
        });
        let live = pod(|m| m.generation = Some(1));
        assert!(passes_adds_and_deletes(&steps));
        assert!(!steps.update(&live, &pod(|m| m.labels = Some(map(&[("a", "b")])))));
        let finalized = pod(|m| m.finalizers = Some(vec!["example.com/cleanup".into()]));
        assert!(steps.update(&live, &finalized));
        let deleting = pod(|m| m.deletion_timestamp = Some(Time(jiff::Timestamp::UNIX_EPOCH)));
        assert!(steps.update(&live, &deleting));
        // With GenerationChanged: a spec change or a step of a deletion.
        let either = Or(GenerationChanged, steps);
        assert!(!either.update(&live, &pod(|m| m.generation = Some(1))));
        assert!(either.update(&live, &pod(|m| m.generation = Some(2))));
        assert!(either.update(&live, &finalized));
    }

    #[test]
    fn boxed_and_shared_filters_are_filters() {
        let boxed: Box<dyn Filter<Pod>> = Box::new(Fixed(false));
        let shared: Arc<dyn Filter<Pod>> = Arc::new(Fixed(true));
        assert_eq!(all_three(&boxed), [false; 3]);
        assert_eq!(all_three(&shared), [true; 3]);
    }

    #[test]
    fn filtered_hands_on_the_events_its_filter_passes_unchanged() {
        let seen = Arc::new(Mutex::new(Vec::<String>::new()));
        let (a, u, d) = (Arc::clone(&seen), Arc::clone(&seen), Arc::clone(&seen));
        let name = |p: &Pod| p.metadata.name.clone().unwrap_or_default();
        let inner = HandlerFuncs::new()
            .on_add(move |p: Arc<Pod>, initial| {
                a.lock().push(format!("add {} {initial}", name(&p)));
            })
            .on_update(move |_, p: Arc<Pod>| u.lock().push(format!("update {}", name(&p))))
            .on_delete(move |o: DeletedObject<Pod>| d.lock().push(format!("delete {}", o.key())));
        let web = |p: &Pod| p.metadata.labels == Some(map(&[("app", "web")]));
        let handler = Filtered::new(Matching(web), inner);
        let named = |name: &str, app: &str| {
            Arc::new(pod(|m| {
                m.name = Some(name.into());
                m.labels = Some(map(&[("app", app)]));
            }))
        };
        let (on, off) = (named("on", "web"), named("off", "db"));

        handler.on_add(Arc::clone(&off), true);
        handler.on_add(Arc::clone(&on), true);
        handler.on_add(Arc::clone(&on), false);
        handler.on_update(Arc::clone(&on), Arc::clone(&off)); // stops matching: dropped
        handler.on_update(Arc::clone(&off), Arc::clone(&on)); // starts matching: an update
        handler.on_delete(DeletedObject::Object(Arc::clone(&off)));
        handler.on_delete(DeletedObject::Object(Arc::clone(&on)));
        let tombstone = |obj: Option<Arc<Pod>>, key: &str| {
            DeletedObject::FinalStateUnknown(DeletedFinalStateUnknown { key: key.into(), obj })
        };
        handler.on_delete(tombstone(Some(Arc::clone(&off)), "biz/off"));
        handler.on_delete(tombstone(Some(Arc::clone(&on)), "biz/on"));
        handler.on_delete(tombstone(None, "biz/unknown"));
        assert_eq!(
            *seen.lock(),
            [
                "add on true",
                "add on false",
                "update on",
                "delete biz/on",
                "delete biz/on",
                "delete biz/unknown"
            ]
        );
    }
}
