//! The reconcile loop: informers feed a [work queue](crate::workqueue), workers reconcile each
//! key (client-go's controller pattern; controller-runtime's `Controller`, kube-rs's
//! `Controller`).
//!
//! **Who it is for.** Operators: the loop most controllers are, on the factory's shared informers.
//! A program that only needs a queue of keys uses [`workqueue`](crate::workqueue) alone.
//!
//! A [`Controller`] watches one primary resource, and any number of resources it owns (their
//! owner references name it as controller) or that point to it (through a function), all through
//! one [`SharedInformerFactory`]. Every change becomes the key of a primary object; `workers`
//! tasks take keys from the queue and call your `reconcile` with the key and the object as the
//! cache holds it (`None` once deleted). Reads come from listers, never the server; writes go
//! through a client (`informer_client::Client`, or kube-rs's). What `reconcile` returns decides what happens next:
//!
//! | result | the key |
//! |---|---|
//! | `Ok(Action::Done)` | forgotten: its backoff starts over; it comes back with the next change |
//! | `Ok(Action::RequeueAfter(d))` | forgotten, and handed out again after `d` (periodic checks) |
//! | `Err(e)`, a `409 Conflict` in its [source chain](std::error::Error::source) | handed out again at once (the cache was behind the server); a second conflict in a row backs off as below |
//! | `Err(e)`, anything else, or a panic | handed out again after its backoff (the queue's [rate limiter](crate::workqueue::RateLimiter): 5 ms doubling to 1,000 s a key by default, 10 retries a second overall) |
//! | `Err(e)`, with an [error policy](Controller::error_policy) | what the policy says for `e`: [`Retry::Default`] (the two rows above), [`Retry::Backoff`], [`Retry::After(d)`](Retry::After) (forgotten, handed out again after `d`), [`Retry::GiveUp`] (forgotten until the next change); a panic still backs off |
//!
//! What reaches the queue besides each change: a [`filter`](Controller::filter) drops the
//! primary resource's events it does not pass (behind
//! [`GenerationChanged`](crate::filter::GenerationChanged), a controller's own status writes do
//! not come back as work), [`owns_filtered`](Controller::owns_filtered) an owned resource's;
//! [`reconcile_all_on`](Controller::reconcile_all_on) enqueues every primary key on each item of
//! a stream, and [`resync`](Controller::resync) every period, past every filter.
//!
//! One key is never reconciled by two workers at once, and a key whose object changes while it
//! is reconciled is reconciled again afterwards: `reconcile` may be written as if it were the only
//! one looking at its object.
//!
//! [`run`](Controller::run) starts the factory's informers, waits for their caches, runs the
//! workers until `stop` is cancelled, then stops taking keys and gives the reconciles in flight
//! [`shutdown_timeout`](Controller::shutdown_timeout) to finish; dropping its future stops the
//! workers at once (so does a [leader election](crate::leader_election) that loses its lease
//! and gives up waiting). [`stop_on_signal`] gives a
//! token cancelled by `SIGTERM` or Ctrl-C.
//!
//! ```no_run
//! use std::sync::Arc;
//! use informer_client::Client;
//! use informer_controller::controller::{Action, Controller, stop_on_signal};
//! use informer_runtime::SharedInformerFactory;
//! use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let client = Client::try_default()?;
//! let factory = SharedInformerFactory::new(client.clone());
//! let report = Controller::<Deployment, _>::new(&factory)
//!     .owns::<ReplicaSet>()
//!     .workers(4)
//!     .run(
//!         move |request| {
//!             let client = client.clone();
//!             async move {
//!                 let Some(deployment) = request.object else { return Ok(Action::Done) };
//!                 // ... compare with the listers' ReplicaSets, write through `client` ...
//!                 # let _ = (deployment, client);
//!                 Ok::<_, informer_client::ClientError>(Action::Done)
//!             }
//!         },
//!         stop_on_signal(),
//!     )
//!     .await?;
//! assert!(report.is_clean());
//! # Ok(())
//! # }
//! ```
//!
//! # Resources known at run time
//!
//! A controller of a resource the program learns at run time (from a flag, a configuration, the
//! CRDs a cluster has) is a `Controller<DynamicObject, _>`: [`Controller::for_resource`] takes
//! the resource's [`ApiResource`] and reads the factory's dynamic informer of it;
//! [`owns_dynamic`](Controller::owns_dynamic) and
//! [`watches_dynamic`](Controller::watches_dynamic) add children and watched resources known
//! at run time, to a typed controller or a dynamic one. The run loop, queue, filters and error
//! policy are the same; the reconcile gets a [`Request<DynamicObject>`](Request), and writes
//! through `informer_client::Client::dynamic` or
//! [`ApiWriter::json_patch`](crate::ApiWriter::json_patch) (examples at
//! [`for_resource`](Controller::for_resource)).
//!
//! # kube-rs
//!
//! A kube-rs program needs no `kube::runtime::Controller` beside this crate's informers: this
//! `Controller` is its counterpart (kube-rs's `owns` and `watches` are [`owns`](Controller::owns)
//! and [`watches`](Controller::watches); its `new_with` for `DynamicObject` is
//! [`for_resource`](Controller::for_resource); its `Action::requeue` is [`Action::RequeueAfter`];
//! its `error_policy` is [`error_policy`](Controller::error_policy), given to the builder rather
//! than to `run`, which sees the error as a `&dyn Error` and answers with a [`Retry`] (its
//! `Action::requeue(d)` is [`Retry::After(d)`](Retry::After); without a policy, the queue's
//! rate limiter, above); its `reconcile_all_on` is
//! [`reconcile_all_on`](Controller::reconcile_all_on); its `predicate_filter` with
//! `predicates::generation` is [`filter`](Controller::filter) with
//! [`GenerationChanged`](crate::filter::GenerationChanged)), and it reads from the informers the
//! program already has, where kube-rs's would run a second watch of each type into caches of its
//! own. With the `kube` feature the factory's source is the program's `kube::Client`, and the
//! reconcile writes through it as before, with kube-rs's `Api`:
//!
//! ```no_run
//! # #[cfg(feature = "kube")]
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use informer_client::Client;
//! use informer_runtime::SharedInformerFactory;
//! use informer_controller::controller::{Action, Controller, stop_on_signal};
//! use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
//!
//! let kube_client = kube::Client::try_default().await?;
//! let factory = SharedInformerFactory::new(Client::from(kube_client.clone()));
//! Controller::<Deployment, _>::new(&factory)
//!     .owns::<ReplicaSet>()
//!     .run(
//!         move |request| {
//!             let kube_client = kube_client.clone();
//!             async move {
//!                 let Some(deployment) = request.object else { return Ok(Action::Done) };
//!                 let namespace = deployment.metadata.namespace.as_deref().unwrap_or("default");
//!                 let deployments = kube::Api::<Deployment>::namespaced(kube_client, namespace);
//!                 // ... compare with the listers' ReplicaSets, write through `deployments` ...
//!                 # let _ = (deployment, deployments);
//!                 Ok::<_, kube::Error>(Action::Done)
//!             }
//!         },
//!         stop_on_signal(),
//!     )
//!     .await?;
//! # Ok(())
//! # }
//! ```

use std::collections::HashSet;
use std::error::Error as StdError;
use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use futures::stream::BoxStream;
use futures::{Stream, StreamExt};
use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

use crate::filter::{And, Filter, Filtered};
use crate::workqueue::{EnqueueMapped, EnqueueObject, EnqueueOwner, WorkQueue};
use error_policy::ErrorPolicy;
use informer_runtime::SharedInformerFactory;
use informer_runtime::listwatch::ListWatchSource;
use informer_runtime::resource::{ApiResource, Object, Resource};
use informer_runtime::shared_informer::ResourceEventHandler;
use informer_runtime::store::{Cache, ObjectKey};
use registration::{Cleanup, Registration, Resolved, SyncWait, register_all, watch};
use workers::Workers;

mod dynamic;
mod error_policy;
mod registration;
mod request;
mod workers;

pub use error_policy::{Failure, Retry};
pub use request::{Action, ControllerError, Request};
pub(crate) use workers::panic_message;

/// How a controller's run ended.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[must_use]
pub struct ControllerReport {
    /// Whether the caches synced (`false`: `stop` came first, and no key was reconciled).
    pub synced: bool,
    /// Reconciles that returned `Ok`.
    pub succeeded: u64,
    /// Reconciles that returned an error or panicked.
    pub failed: u64,
    /// Keys whose reconcile was still running when the shutdown timeout ran out.
    pub unfinished: Vec<ObjectKey>,
}

impl ControllerReport {
    /// Whether every reconcile that started also finished.
    #[must_use]
    pub fn is_clean(&self) -> bool {
        self.unfinished.is_empty()
    }
}

/// A reconcile loop for the primary resource `K`; see the [module docs](self).
///
/// `K` is a Rust type ([`new`](Self::new)), or
/// [`DynamicObject`](informer_runtime::dynamic::DynamicObject) for a resource known only at
/// run time ([`for_resource`](Controller::for_resource)).
#[must_use]
pub struct Controller<K: Object, S: ListWatchSource> {
    factory: SharedInformerFactory<S>,
    /// The primary resource's identity: what owner references to it name.
    resource: ApiResource,
    /// The primary resource's informer, asked for when the controller was made: the one place
    /// the typed and the dynamic controller differ.
    primary: Resolved<K>,
    name: String,
    workers: usize,
    queue: Option<WorkQueue<ObjectKey>>,
    shutdown_timeout: Duration,
    registrations: Vec<Registration>,
    syncs: Vec<SyncWait>,
    /// What of the primary resource's events reach the queue; all when `None`.
    filter: Option<Box<dyn Filter<K>>>,
    error_policy: Option<ErrorPolicy<K>>,
    /// Streams whose every item enqueues every primary key.
    triggers: Vec<BoxStream<'static, ()>>,
    resync: Option<Duration>,
    #[cfg(feature = "metrics")]
    metrics: Option<informer_runtime::metrics::Metrics>,
}

impl<K: Resource, S: ListWatchSource> Controller<K, S> {
    /// A controller of `K` over `factory`'s informers, named after `K`'s resource, with one
    /// worker.
    pub fn new(factory: &SharedInformerFactory<S>) -> Self {
        Self::with_primary(factory, ApiResource::of::<K>(), Ok(factory.informer::<K>()))
    }
}

impl<K: Object, S: ListWatchSource> Controller<K, S> {
    /// The one constructor behind [`new`](Controller::new) and
    /// [`for_resource`](Controller::for_resource).
    fn with_primary(
        factory: &SharedInformerFactory<S>,
        resource: ApiResource,
        primary: Resolved<K>,
    ) -> Self {
        // The primary resource's handler is registered by `run`, once its filter is known;
        // its informer is made already (by the caller), so that a factory started before
        // `run` (a manager's warm standby) starts it too.
        Self {
            factory: factory.clone(),
            name: resource.to_string(),
            resource,
            primary,
            workers: 1,
            queue: None,
            shutdown_timeout: Duration::from_secs(30),
            registrations: Vec::new(),
            syncs: Vec::new(),
            filter: None,
            error_policy: None,
            triggers: Vec::new(),
            resync: None,
            #[cfg(feature = "metrics")]
            metrics: None,
        }
    }

    /// The name it reports under (logs, metrics, a manager's failures).
    pub(crate) fn controller_name(&self) -> &str {
        &self.name
    }

    /// Records into `metrics` unless [`metrics`](Self::metrics) chose already: a manager's.
    #[cfg(feature = "metrics")]
    pub(crate) fn metrics_unless_set(
        mut self,
        metrics: Option<&informer_runtime::metrics::Metrics>,
    ) -> Self {
        if self.metrics.is_none() {
            self.metrics = metrics.cloned();
        }
        self
    }

    /// Reconciles a primary object only for the adds, updates and deletes `filter` passes
    /// (controller-runtime's `For(obj, WithPredicates(...))`, kube-rs's `predicate_filter`);
    /// called again, an event must pass both. Owned and watched resources keep all their
    /// events ([`owns_filtered`](Self::owns_filtered) filters those). The filter sits in front
    /// of this controller's handler only: the shared informer, its cache and every other
    /// handler on it still see each change.
    ///
    /// The use it is made for: behind [`GenerationChanged`](crate::filter::GenerationChanged),
    /// a controller that writes the status of its objects (through the `/status` subresource,
    /// which bumps no generation) is not handed each object back after its own write, nor
    /// after a label or annotation change; only spec changes, adds and deletes come through.
    /// A finalizer another controller removes is a metadata change too: add it back with
    /// [`Or`](crate::filter::Or) and [`Changed`](crate::filter::Changed) when the controller
    /// waits for one. A [`resync`](Self::resync) or [`reconcile_all_on`](Self::reconcile_all_on)
    /// enqueues every key past the filter, and a reconcile's
    /// [`RequeueAfter`](Action::RequeueAfter) and retries are not events: both still come.
    ///
    /// ```no_run
    /// # use informer_controller::controller::Controller;
    /// # use informer_runtime::{SharedInformerFactory, ListWatchSource};
    /// use informer_controller::filter::{Changed, GenerationChanged, Or};
    /// use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
    ///
    /// # fn build<S: ListWatchSource>(factory: &SharedInformerFactory<S>) {
    /// let controller = Controller::<Deployment, _>::new(factory)
    ///     .filter(Or(
    ///         GenerationChanged,
    ///         Changed(|d: &Deployment| d.metadata.finalizers.clone()),
    ///     ))
    ///     .owns::<ReplicaSet>();
    /// # let _ = controller;
    /// # }
    /// ```
    #[doc(alias = "WithEventFilter")]
    #[doc(alias = "predicate_filter")]
    pub fn filter(mut self, filter: impl Filter<K>) -> Self {
        self.filter = Some(match self.filter.take() {
            Some(earlier) => Box::new(And(earlier, filter)),
            None => Box::new(filter),
        });
        self
    }

    /// Also reconciles the owner of each `C` whose owner reference to a `K` says
    /// `controller: true` (what this controller creates), on every change of that `C`.
    pub fn owns<C: Resource>(self) -> Self {
        let informer = self.factory.informer::<C>();
        self.owns_from(Ok(informer), None::<Box<dyn Filter<C>>>)
    }

    fn owns_from<C: Object>(self, informer: Resolved<C>, filter: Option<impl Filter<C>>) -> Self {
        let owner = self.resource.clone();
        self.watch_with(informer, move |queue| {
            let enqueue = EnqueueOwner::<K>::of_resource(queue.clone(), &owner).only_controller();
            match filter {
                Some(filter) => Arc::new(Filtered::new(filter, enqueue)),
                None => Arc::new(enqueue),
            }
        })
    }

    /// [`owns`](Self::owns), for the changes of `C` that `filter` passes only
    /// (controller-runtime's `Owns(obj, WithPredicates(...))`): a controller that needs to
    /// hear when a child's spec or labels change, not each of its status updates.
    ///
    /// ```no_run
    /// # use informer_controller::controller::Controller;
    /// # use informer_runtime::{SharedInformerFactory, ListWatchSource};
    /// use informer_controller::filter::{GenerationChanged, LabelsChanged, Or};
    /// use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
    ///
    /// # fn build<S: ListWatchSource>(factory: &SharedInformerFactory<S>) {
    /// let controller = Controller::<Deployment, _>::new(factory)
    ///     .owns_filtered::<ReplicaSet>(Or(GenerationChanged, LabelsChanged));
    /// # let _ = controller;
    /// # }
    /// ```
    pub fn owns_filtered<C: Resource>(self, filter: impl Filter<C>) -> Self {
        let informer = self.factory.informer::<C>();
        self.owns_from(Ok(informer), Some(filter))
    }

    /// Also reconciles the keys of `K` objects `map` gives for each changed `C` (a Secret the
    /// primary objects name, a Node their pods run on). For an update, the keys of the old and
    /// the new object both.
    pub fn watches<C, I>(self, map: impl Fn(&C) -> I + Send + Sync + 'static) -> Self
    where
        C: Resource,
        I: IntoIterator<Item = ObjectKey> + 'static,
    {
        let informer = self.factory.informer::<C>();
        self.watches_from(Ok(informer), map)
    }

    fn watches_from<C, I>(
        self,
        informer: Resolved<C>,
        map: impl Fn(&C) -> I + Send + Sync + 'static,
    ) -> Self
    where
        C: Object,
        I: IntoIterator<Item = ObjectKey> + 'static,
    {
        let map = Arc::new(map);
        self.watch_with(informer, move |queue| {
            let map = Arc::clone(&map);
            Arc::new(EnqueueMapped::new(queue.clone(), move |c: &C| map(c)))
        })
    }

    fn watch_with<C: Object>(
        mut self,
        informer: Resolved<C>,
        handler: impl FnOnce(&WorkQueue<ObjectKey>) -> Arc<dyn ResourceEventHandler<C>> + Send + 'static,
    ) -> Self {
        let (sync, registration) = watch(informer, handler);
        self.syncs.push(sync);
        self.registrations.push(registration);
        self
    }

    /// What becomes of a key whose reconcile returned an error, decided for each error
    /// (kube-rs's `error_policy`): [`Retry::Default`] keeps the behaviour without a policy
    /// (see the [module docs](self)), the others retry after backoff, after a fixed delay, or
    /// not until the object changes. A panicking reconcile is retried after backoff without
    /// asking the policy; a panicking policy counts as [`Retry::Default`].
    ///
    /// The policy sees the error as a `&dyn Error` ([`Failure::cause`] downcasts it, through
    /// wrappers too): the reconcile's error type is known only at [`run`](Self::run), and a
    /// policy typed over it would make it a third type parameter of every `Controller`.
    ///
    /// ```no_run
    /// # use informer_controller::controller::Controller;
    /// # use informer_runtime::{SharedInformerFactory, ListWatchSource};
    /// use std::time::Duration;
    /// use informer_controller::controller::Retry;
    /// use k8s_openapi::api::apps::v1::Deployment;
    ///
    /// # fn build<S: ListWatchSource>(factory: &SharedInformerFactory<S>) {
    /// let controller = Controller::<Deployment, _>::new(factory).error_policy(|failure| {
    ///     match failure.cause::<std::io::Error>() {
    ///         // Five retries with backoff, then every ten minutes.
    ///         Some(_) if failure.retries >= 5 => Retry::After(Duration::from_secs(600)),
    ///         _ => Retry::Default,
    ///     }
    /// });
    /// # let _ = controller;
    /// # }
    /// ```
    pub fn error_policy(
        mut self,
        policy: impl Fn(&Failure<'_, K>) -> Retry + Send + Sync + 'static,
    ) -> Self {
        self.error_policy = Some(Box::new(policy));
        self
    }

    /// Reconciles every primary object each time `trigger` yields (kube-rs's
    /// `reconcile_all_on`): a reloaded configuration, a changed external system. Every key the
    /// primary cache holds is added to the queue at once (a key waiting already is handed out
    /// once). Items are taken from the caches' sync until `run` ends; a trigger that ends
    /// stops triggering, and the controller runs on.
    ///
    /// ```no_run
    /// # use informer_controller::controller::Controller;
    /// # use informer_runtime::{SharedInformerFactory, ListWatchSource};
    /// use k8s_openapi::api::core::v1::ConfigMap;
    ///
    /// # fn build<S: ListWatchSource>(factory: &SharedInformerFactory<S>) {
    /// // Reconcile everything again whenever the program's settings are reloaded.
    /// let (reload, reloaded) = futures::channel::mpsc::unbounded::<()>();
    /// let controller = Controller::<ConfigMap, _>::new(factory).reconcile_all_on(reloaded);
    /// reload.unbounded_send(()).ok();
    /// # let _ = controller;
    /// # }
    /// ```
    pub fn reconcile_all_on(mut self, trigger: impl Stream<Item = ()> + Send + 'static) -> Self {
        self.triggers.push(trigger.boxed());
        self
    }

    /// Reconciles every primary object every `period`, changes or not (controller-runtime's
    /// `SyncPeriod`, for this controller alone rather than for the informers every controller
    /// shares): a safety net for changes the controller cannot watch, and for state it wrote
    /// that someone else overwrote (a status behind a [`filter`](Self::filter)). Each key is
    /// added after a random delay of up to a tenth of `period`, so that a large cache is not
    /// reconciled all in one burst; the first round comes `period` after the caches synced.
    /// Off by default, and with a zero `period`.
    ///
    /// Not the informers' resync (`SharedInformerFactory`'s): that replays the cache to every
    /// handler as updates, which a filter such as
    /// [`ResourceVersionChanged`](crate::filter::ResourceVersionChanged) drops; this one
    /// enqueues the keys directly, past every filter. The delayed adds count in
    /// `workqueue_retries_total`, as every delayed add does.
    #[doc(alias = "SyncPeriod")]
    pub fn resync(mut self, period: Duration) -> Self {
        self.resync = (!period.is_zero()).then_some(period);
        self
    }

    /// How many keys are reconciled at once (at least one; client-go's controllers take it as
    /// a flag, 1 to 50 in kube-controller-manager).
    pub fn workers(mut self, workers: usize) -> Self {
        self.workers = workers.max(1);
        self
    }

    /// The name in logs and spans; by default the primary resource's, `deployments.apps`.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// The work queue, for another rate limiter or clock, or to add keys from elsewhere; by
    /// default one with client-go's default controller rate limiter.
    pub fn queue(mut self, queue: WorkQueue<ObjectKey>) -> Self {
        self.queue = Some(queue);
        self
    }

    /// Records controller-runtime's reconcile metrics (`controller_runtime_reconcile_total`,
    /// ...) and its work queue's (`workqueue_*`) in `metrics`, labelled with the controller's
    /// [name](Self::name). A [queue](Self::queue) given here keeps its own metrics setting.
    #[cfg(feature = "metrics")]
    #[cfg_attr(docsrs, doc(cfg(feature = "metrics")))]
    pub fn metrics(mut self, metrics: &informer_runtime::metrics::Metrics) -> Self {
        self.metrics = Some(metrics.clone());
        self
    }

    /// How long reconciles in flight may take to finish once `stop` is cancelled (30 s by
    /// default); those still running after it are reported and cancelled (dropped at their
    /// next `.await`). Dropping the future of [`run`](Self::run) cancels them at once.
    pub fn shutdown_timeout(mut self, timeout: Duration) -> Self {
        self.shutdown_timeout = timeout;
        self
    }

    /// Runs the controller until `stop` is cancelled: starts the factory's informers, waits for
    /// their caches, then reconciles.
    ///
    /// # Errors
    ///
    /// [`ControllerError::Register`] when the factory's informers were already shut down;
    /// [`ControllerError::Informer`] when a resource known only at run time has no informer
    /// (the factory's source lists Rust types only).
    pub async fn run<F, Fut, E>(
        self,
        reconcile: F,
        stop: CancellationToken,
    ) -> Result<ControllerReport, ControllerError>
    where
        F: Fn(Request<K>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Action, E>> + Send + 'static,
        E: StdError + Send + Sync + 'static,
    {
        #[cfg(feature = "metrics")]
        let (observer, queue_builder) = match &self.metrics {
            Some(metrics) => (
                Some(metrics.controller_observer(&self.name)),
                WorkQueue::builder().name(self.name.clone()).metrics(metrics),
            ),
            None => (None, WorkQueue::builder().name(self.name.clone())),
        };
        #[cfg(not(feature = "metrics"))]
        let (observer, queue_builder): (
            Option<Arc<dyn informer_runtime::instrument::ControllerObserver>>,
            _,
        ) = (None, WorkQueue::builder().name(self.name.clone()));
        let Self {
            factory,
            primary,
            name,
            workers,
            queue,
            shutdown_timeout,
            mut registrations,
            mut syncs,
            filter,
            error_policy,
            triggers,
            resync,
            ..
        } = self;
        let queue = queue.unwrap_or_else(|| queue_builder.build());
        // The primary resource's handler, behind the filter if there is one; first, as it
        // always was.
        let primary = match primary {
            Ok(primary) => primary,
            Err(source) => return Err(ControllerError::Informer { controller: name, source }),
        };
        let (sync, registration) = watch(Ok(primary.clone()), move |queue| {
            let enqueue = EnqueueObject::new(queue.clone());
            match filter {
                Some(filter) => Arc::new(Filtered::new(filter, enqueue)),
                None => Arc::new(enqueue),
            }
        });
        syncs.insert(0, sync);
        registrations.insert(0, registration);
        let removals = match register_all(registrations, &queue) {
            Ok(removals) => removals,
            Err(error) => return Err(error.of(name)),
        };
        // However `run` ends, returned or dropped: the handlers go, and the queue shuts down.
        let _cleanup = Cleanup { removals, queue: queue.clone() };
        factory.start();
        let mut report = ControllerReport::default();
        let synced = futures::future::join_all(syncs.iter().map(|wait| wait()));
        tokio::select! {
            all = synced => report.synced = all.into_iter().all(|s| s),
            () = stop.cancelled() => {}
        }
        if report.synced {
            tracing::info!(controller = %name, workers, "caches synced; reconciling");
            // Sets of tasks aborted when dropped: if this future is dropped (a leader that
            // lost its lease drops its work), no worker goes on writing, and no trigger adds.
            let mut enqueuers = tokio::task::JoinSet::new();
            if !triggers.is_empty() {
                let all = futures::stream::select_all(triggers);
                enqueuers.spawn(enqueue_all_on(all, primary.cache(), queue.clone()));
            }
            if let Some(period) = resync {
                enqueuers.spawn(resync_every(period, primary.cache(), queue.clone(), name.clone()));
            }
            let shared = Arc::new(Workers {
                name,
                queue: queue.clone(),
                primary,
                reconcile,
                error_policy,
                conflicted: Mutex::new(HashSet::new()),
                in_flight: Mutex::new(HashSet::new()),
                counts: Mutex::new((0, 0)),
                observer,
            });
            let mut tasks = tokio::task::JoinSet::new();
            for _ in 0..workers {
                let (shared, stop) = (Arc::clone(&shared), stop.clone());
                tasks.spawn(async move { shared.work(stop).await });
            }
            stop.cancelled().await;
            // The triggers' streams are dropped before `run` returns: their senders see it.
            enqueuers.shutdown().await;
            let finished = async { while tasks.join_next().await.is_some() {} };
            if tokio::time::timeout(shutdown_timeout, finished).await.is_err() {
                let mut unfinished: Vec<_> = shared.in_flight.lock().iter().cloned().collect();
                unfinished.sort();
                tracing::warn!(
                    controller = %shared.name,
                    keys = ?unfinished.iter().map(ObjectKey::as_str).collect::<Vec<_>>(),
                    "reconciles still running after the shutdown timeout of {shutdown_timeout:?}"
                );
                report.unfinished = unfinished;
                tasks.abort_all();
                // Aborted tasks end at their next poll: wait for that, so that nothing of
                // this controller runs once `run` has returned.
                while tasks.join_next().await.is_some() {}
            }
            (report.succeeded, report.failed) = *shared.counts.lock();
        }
        Ok(report)
    }
}

impl<K: Object, S: ListWatchSource> fmt::Debug for Controller<K, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Controller")
            .field("name", &self.name)
            .field("resource", &self.resource)
            .field("workers", &self.workers)
            .field("watches", &(self.registrations.len() + 1))
            .field("filtered", &self.filter.is_some())
            .field("error_policy", &self.error_policy.is_some())
            .field("triggers", &self.triggers.len())
            .field("resync", &self.resync)
            .finish_non_exhaustive()
    }
}

/// Adds every key of `cache` to `queue` for each item of `trigger`, until it ends.
async fn enqueue_all_on<K: Object>(
    mut trigger: impl Stream<Item = ()> + Unpin,
    cache: Cache<K>,
    queue: WorkQueue<ObjectKey>,
) {
    while let Some(()) = trigger.next().await {
        for key in cache.list_keys() {
            queue.add(key);
        }
    }
}

/// Every `period`, adds every key of `cache` to `queue`, each after a random delay of up to a
/// tenth of `period`.
async fn resync_every<K: Object>(
    period: Duration,
    cache: Cache<K>,
    queue: WorkQueue<ObjectKey>,
    controller: String,
) {
    let spread = u64::try_from((period / 10).as_nanos()).unwrap_or(u64::MAX);
    let start = tokio::time::Instant::now() + period;
    let mut ticks = tokio::time::interval_at(start, period);
    // A runtime that was busy (or a machine that slept) skips the rounds it missed.
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        let keys = cache.list_keys();
        tracing::debug!(%controller, keys = keys.len(), "resync: reconciling every object");
        for key in keys {
            // Never zero: a delay of at most `spread`, or none when the period is tiny.
            let delay = if spread == 0 { 0 } else { fastrand::u64(1..=spread) };
            queue.add_after(key, Duration::from_nanos(delay));
        }
    }
}

/// A token cancelled when the process gets `SIGTERM` (what Kubernetes sends a pod it stops) or
/// Ctrl-C (`SIGINT`): pass it to [`Controller::run`].
///
/// # Panics
///
/// Outside a Tokio runtime.
#[must_use]
pub fn stop_on_signal() -> CancellationToken {
    let token = CancellationToken::new();
    let cancel = token.clone();
    tokio::spawn(async move {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            match signal(SignalKind::terminate()) {
                Ok(mut term) => {
                    tokio::select! {
                        _ = term.recv() => tracing::info!("SIGTERM: stopping"),
                        _ = tokio::signal::ctrl_c() => tracing::info!("SIGINT: stopping"),
                    }
                }
                Err(e) => {
                    tracing::warn!("cannot listen for SIGTERM ({e}); stopping on Ctrl-C only");
                    let _ = tokio::signal::ctrl_c().await;
                }
            }
        }
        #[cfg(not(unix))]
        {
            let _ = tokio::signal::ctrl_c().await;
        }
        cancel.cancel();
    });
    token
}

#[cfg(test)]
mod tests;
