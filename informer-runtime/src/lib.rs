//! Typed Kubernetes informers: client-go's `tools/cache` as async Rust.
//!
//! An informer keeps an in-memory, indexed cache of one resource type in step with the API
//! server, and tells your handlers about every change. This crate has the whole machinery,
//! generic over the object type `K` (an [`Object`]: metadata and serde), which is most often a
//! [`Resource`] type known at compile time: any k8s-openapi kind, the custom resource types that
//! `informer-gen` and `#[derive(Informer)]` generate, and any other type that implements
//! [`Resource`] (kube-rs's `#[derive(CustomResource)]` roots and kopium's output, with one
//! [`impl_resource!`] line; see the [`resource`] module). For a kind whose `spec` a controller
//! does not read, [`PartialObjectMetadata<K>`] caches only its metadata (see the [`metadata`]
//! module); one whose few fields it does read declares a view of it, a struct with only those
//! fields, whose informer decodes nothing else (`#[informer(view = Pod)]` in `informer-derive`,
//! or [`impl_resource!`]; see [the `resource` module](resource#whole-objects-metadata-and-views)).
//!
//! # Where to start
//!
//! Most programs need only the [`SharedInformerFactory`]: ask it for the informers of the types
//! you care about, register handlers, start it, wait for the caches, read through [listers].
//! See the example in the [`factory`] module. For resources known only at run time (generic
//! tools: dashboards, policy engines, backups), the factory makes dynamic informers by group,
//! version and resource, whose objects are [`dynamic::DynamicObject`]s: metadata typed, the
//! rest JSON (see the [`dynamic`] module). The `informer-controller` crate turns informers
//! into a reconcile loop: its handlers hand keys to a work queue, whose workers call your
//! `reconcile`; it also has leader election and Events. The CRD of a `#[derive(Informer)]`
//! type is `Foo::crd()`; for a kind
//! with a derived struct per version, [`crd::merge`] makes the one CRD with all of them.
//!
//! # The data flow
//!
//! Each file is one step; an event travels through them in this order, entering each once
//! (the first three are the `informer-client` crate's, the rest this crate's):
//!
//! ```text
//!  socket ─▶ list_watch/http_lister_watcher.rs   list pages and watch streams over HTTP
//!            list_watch/list_page.rs, list_watch/watch_decode.rs
//!                                           bytes → ObjectList<K> / WatchEvent<K>
//!                                           (list_watch/list_split.rs cuts list bodies)
//!            codec/object_decoder.rs        each object's JSON → K (codec/prune/ skips
//!                                           managedFields)
//!              (listwatch.rs: the ListerWatcher seam; FakeSource plugs in here too)
//!    ─▶ reflector/mod.rs                    list, then watch; relist on 410; backoff; resync
//!       reflector/list.rs                   pages; a compact cache's list waits as JSON
//!         writes through reflector::ReflectorStore
//!    ─▶ delta_fifo/mod.rs                   per-key deltas; tombstones on relist
//!    ─▶ shared_informer/process_loop.rs     pops each key's deltas:
//!    ─▶ store/thread_safe/mod.rs              the cache and its indices first,
//!    ─▶ shared_informer/processor.rs          then one buffer and task per handler,
//!    ─▶ shared_informer/handler.rs          your ResourceEventHandler
//!
//!  lister.rs reads the store; factory/mod.rs owns one informer per resource type;
//!  dynamic.rs is the object of resources known at run time (the client's discovery finds them);
//!  informers/ holds the generated typed accessors (factory.core().v1().pods()).
//!
//!  After the handlers, a controller's own flow is the informer-controller crate's
//!  (workqueue/enqueue.rs, workqueue/mod.rs, controller/mod.rs).
//! ```
//!
//! # Layers
//!
//! From the bottom up; a module imports only from its own line or the lines above, and never
//! in a circle. The crates built on this one, `informer-client` (the HTTP client, a
//! `ListWatchSource`) and `informer-controller` (the controller layer above the factory), are
//! not known here.
//!
//! - `clock`, `instrument`, `quantity`: helpers: time, tracing and metric probes, quantities
//! - `metrics`: Prometheus metrics of the probes (feature `metrics`), of informers, and of the
//!   work queues and controllers of `informer-controller`
//! - `resource`, `codec`, `dynamic`, `metadata`, `selector`: objects, keys, decoding, selectors
//! - `store`: the cache and its indices, decoded or compact
//! - `listwatch`: the list/watch source seam (`ListerWatcher`, `ListWatchSource`)
//! - `delta_fifo`: per-key deltas between the reflector and the process loop
//! - `reflector`: list, then watch, into the queue
//! - `lister`: reads of a cache
//! - `shared_informer`: process loop, processor, handlers
//! - `factory`, `informers`: one informer per resource type; generated typed accessors
//! - `crd`, `testing`, `fuzz`: CRD merging, test support, fuzz targets
//!
//! # Testing your controllers
//!
// Plain names, not links: the links would break in documentation built without the feature.
//! With the `testing` feature, `testing::FakeSource` is an in-process API source and
//! `testing::FakeClock` a clock you step by hand. For tests over real HTTP, the
//! `embedded-apiserver` crate is an embedded, protocol-faithful API server (kubectl works
//! against it, faults to inject).
//!
//! # Talking to a cluster
//!
//! The `informer-client` crate's `Client` lists and watches any API server: kubeconfig
//! (`KUBECONFIG`, `~/.kube/config`), in-cluster service accounts, tokens, client certificates
//! and exec credential plugins. `SharedInformerFactory::new(Client::try_default()?)`.
//!
//! A kube-rs program already has a `kube::Client`. With `informer-client`'s `kube` feature,
//! that client carries the informers' requests: no second configuration
//! (`SharedInformerFactory::new(Client::from(kube_client))`). Lists and watches go through
//! kube-rs's stack (its TLS, credentials, proxy and middleware) and are decoded by this crate's
//! decoders, with the same list, watch and relist behaviour as over HTTP of its own.
//!
//! Any other [`ListWatchSource`] feeds the informers the same way:
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! use informer_runtime::SharedInformerFactory;
//! use informer_runtime::testing::FakeSource;
//! use k8s_openapi::api::core::v1::Pod;
//!
//! let factory = SharedInformerFactory::new(FakeSource::new());
//! let pods = factory.informer::<Pod>();
//! factory.start();
//! factory.wait_for_cache_sync(std::time::Duration::from_secs(60)).await;
//! let all = informer_runtime::LabelSelector::everything();
//! println!("{} pods", pods.lister().list(&all).len());
//! # }
//! ```
//!
//! kube-rs's `Controller` is not needed beside these informers: the `informer-controller`
//! crate's `Controller` is its counterpart, driven by the factory's informers.
//!
//! [listers]: lister::Lister

#![cfg_attr(docsrs, feature(doc_cfg))]
pub mod clock;
// Public but hidden: the object decoder the client's read path shares with the compact cache;
// not a user API. It needs simd-json and memchr (feature `simd-json`, on by default).
#[cfg(feature = "simd-json")]
#[doc(hidden)]
pub mod codec;
pub mod crd;
pub mod delta_fifo;
pub mod dynamic;
pub mod factory;
pub mod informers;
// Public for the `informer-controller` crate alone: the seam through which its work queues
// and controllers record into the one `metrics::Metrics` of a program. Not a user API.
#[doc(hidden)]
pub mod instrument;
pub mod lister;
pub mod listwatch;
pub mod metadata;
#[cfg(feature = "metrics")]
#[cfg_attr(docsrs, doc(cfg(feature = "metrics")))]
pub mod metrics;
pub mod quantity;
pub mod reflector;
pub mod resource;
pub mod selector;
pub mod shared_informer;
pub mod store;

#[cfg(any(test, feature = "testing"))]
pub mod testing;

#[cfg(test)]
#[cfg(feature = "simd-json")]
mod fuzz;
// The recorded pods the unit tests and the fuzz targets read.
#[cfg(test)]
mod test_fixtures;

pub use factory::SharedInformerFactory;
pub use lister::{Lister, NamespaceLister, NotFound};
pub use listwatch::{ListWatchSource, ListerWatcher, Status};
pub use metadata::PartialObjectMetadata;
pub use resource::{
    ApiResource, GroupVersionResource, Object, Resource, WholeObject, is_namespaced,
};
pub use selector::LabelSelector;
pub use shared_informer::{
    DeletedObject, HandlerFuncs, ResourceEventHandler, ResourceEventHandlerRegistration,
    SharedIndexInformer,
};
pub use store::{Cache, Indexer, ObjectKey, StorageMode};
/// The stop signal every `run` takes, re-exported so that a program needs no tokio-util dependency
/// to name it.
pub use tokio_util::sync::CancellationToken;

#[doc(hidden)]
pub mod __private {
    //! What [`impl_resource!`](crate::impl_resource) expands to, so that its users need no
    //! direct dependency on k8s-openapi. Not a public API.
    pub use k8s_openapi;
}

// The README is the crate's registry page: its examples compile as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
