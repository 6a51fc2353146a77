//! Typed accessors for every built-in resource, grouped as in client-go:
//! `factory.core().v1().pods()`, `factory.apps().v1().deployments()`, …
//!
//! **Who it is for.** Programs that want client-go's typed accessors and names for built-in kinds;
//! `factory.informer::<Pod>()` is the same informer without them.
//!
//! Each accessor returns a [`TypedInformer`], a thin handle over the generic
//! [`SharedInformerFactory::informer`] and [`SharedInformerFactory::lister`]. Each group/version
//! module (`informers::core::v1`, …) also has aliases in client-go's names: `PodInformer`,
//! `PodLister`, `PodNamespaceLister`. The accessors are generated from k8s-openapi by
//! `cargo xtask codegen`; types that exist only in some Kubernetes versions have accessors only
//! when k8s-openapi is built for those versions.
//!
//! ```
//! # use std::time::Duration;
//! # use informer_runtime::{LabelSelector, SharedInformerFactory};
//! # use informer_runtime::testing::FakeSource;
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let factory = SharedInformerFactory::new(FakeSource::new());
//! let pods = factory.core().v1().pods();
//! let _informer = pods.informer();
//! factory.start();
//! assert!(factory.wait_for_cache_sync(Duration::from_secs(30)).await.all_synced());
//! assert!(pods.lister().list(&LabelSelector::everything()).is_empty());
//! # factory.shutdown().await;
//! # }
//! ```

use std::fmt;
use std::marker::PhantomData;

use crate::factory::SharedInformerFactory;
use crate::lister::Lister;
use crate::listwatch::ListWatchSource;
use crate::resource::Resource;
use crate::shared_informer::SharedIndexInformer;

#[rustfmt::skip]
#[allow(
    clippy::too_many_lines,
    reason = "register_builtins registers every built-in resource, one line each"
)]
mod generated;

pub use generated::*;

#[cfg(test)]
mod tests;

/// The informer and lister of one resource type `K` in a factory, as returned by the grouped
/// accessors (client-go's `PodInformer` interface).
pub struct TypedInformer<'a, S, K> {
    factory: &'a SharedInformerFactory<S>,
    kind: PhantomData<fn() -> K>,
}

impl<'a, S: ListWatchSource, K: Resource> TypedInformer<'a, S, K> {
    /// The accessor of `K` in `factory`.
    #[must_use]
    pub fn new(factory: &'a SharedInformerFactory<S>) -> Self {
        Self { factory, kind: PhantomData }
    }

    /// The shared informer for `K`, created on first request (see
    /// [`SharedInformerFactory::informer`]).
    #[allow(
        clippy::must_use_candidate,
        reason = "asking registers the informer; the handle may be dropped"
    )]
    pub fn informer(&self) -> SharedIndexInformer<K> {
        self.factory.informer::<K>()
    }

    /// A lister over the informer's cache (creating the informer if needed).
    #[must_use]
    pub fn lister(&self) -> Lister<K> {
        self.factory.lister::<K>()
    }
}

impl<S, K> Clone for TypedInformer<'_, S, K> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<S, K> Copy for TypedInformer<'_, S, K> {}

impl<S, K> fmt::Debug for TypedInformer<'_, S, K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TypedInformer").field("kind", &std::any::type_name::<K>()).finish()
    }
}
