//! Informers and listers of resources known only at run time, found by group, version and
//! resource (client-go's `informers/generic.go`): [`SharedInformerFactory::for_resource`].
//!
//! [`SharedInformerFactory::for_resource`]: crate::SharedInformerFactory::for_resource

use std::any::Any;
use std::fmt;
use std::sync::Arc;

use futures::future::BoxFuture;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use tokio_util::sync::CancellationToken;

use crate::dynamic::DynamicObject;
use crate::lister::NotFound;
use crate::reflector::WatchHealth;
use crate::resource::{GroupVersionResource, Object, Resource};
use crate::selector::LabelSelector;
use crate::shared_informer::{SharedIndexInformer, ShutdownReport};
use crate::store::ObjectKey;

/// A type-erased informer: what the factory needs to run, sync and list any of them.
pub(super) trait ErasedInformer: Send + Sync {
    fn gvr(&self) -> GroupVersionResource;
    fn partial(&self) -> bool;
    fn has_synced(&self) -> bool;
    fn health(&self) -> WatchHealth;
    fn wait_for_sync(&self) -> BoxFuture<'static, bool>;
    fn run(&self, stop: CancellationToken) -> BoxFuture<'static, ShutdownReport>;
    fn list(&self, selector: &LabelSelector) -> Vec<Arc<dyn DynResource>>;
    fn get(&self, key: &str) -> Option<Arc<dyn DynResource>>;
    fn as_any(&self) -> &dyn Any;
}

impl<K: Object + DynResource> ErasedInformer for SharedIndexInformer<K> {
    fn gvr(&self) -> GroupVersionResource {
        self.identity().gvr().clone()
    }

    fn partial(&self) -> bool {
        self.identity().partial()
    }

    fn has_synced(&self) -> bool {
        SharedIndexInformer::has_synced(self)
    }

    fn health(&self) -> WatchHealth {
        SharedIndexInformer::health(self)
    }

    fn wait_for_sync(&self) -> BoxFuture<'static, bool> {
        let informer = self.clone();
        Box::pin(async move { informer.wait_for_sync().await })
    }

    fn run(&self, stop: CancellationToken) -> BoxFuture<'static, ShutdownReport> {
        let informer = self.clone();
        Box::pin(async move { informer.run(stop).await })
    }

    fn list(&self, selector: &LabelSelector) -> Vec<Arc<dyn DynResource>> {
        self.lister().list(selector).into_iter().map(|o| o as Arc<dyn DynResource>).collect()
    }

    fn get(&self, key: &str) -> Option<Arc<dyn DynResource>> {
        self.cache().get_by_key(key).map(|o| o as Arc<dyn DynResource>)
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// An object of a type known only at run time, as a [`GenericLister`] returns it.
pub trait DynResource: Any + Send + Sync {
    /// The object's metadata.
    fn metadata(&self) -> &ObjectMeta;
    /// The object's kind.
    fn kind(&self) -> &str;
    /// The object as JSON.
    ///
    /// # Errors
    ///
    /// When the object cannot be serialized.
    fn to_json(&self) -> serde_json::Result<serde_json::Value>;
    /// The object itself, to downcast to its Rust type.
    fn as_any(&self) -> &dyn Any;
}

impl<K: Resource> DynResource for K {
    fn metadata(&self) -> &ObjectMeta {
        self.meta()
    }

    fn kind(&self) -> &str {
        K::KIND
    }

    fn to_json(&self) -> serde_json::Result<serde_json::Value> {
        serde_json::to_value(self)
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

impl DynResource for DynamicObject {
    fn metadata(&self) -> &ObjectMeta {
        &self.metadata
    }

    fn kind(&self) -> &str {
        DynamicObject::kind(self)
    }

    fn to_json(&self) -> serde_json::Result<serde_json::Value> {
        serde_json::to_value(self)
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// An informer found by group/version/resource; see
/// [`SharedInformerFactory::for_resource`](crate::SharedInformerFactory::for_resource).
#[derive(Clone)]
pub struct GenericInformer {
    pub(super) erased: Arc<dyn ErasedInformer>,
}

impl GenericInformer {
    /// The resource it watches.
    #[must_use]
    pub fn resource(&self) -> GroupVersionResource {
        self.erased.gvr()
    }

    /// Whether its cache holds the first complete list.
    #[must_use]
    pub fn has_synced(&self) -> bool {
        self.erased.has_synced()
    }

    /// A lister over its cache.
    #[must_use]
    pub fn lister(&self) -> GenericLister {
        GenericLister { erased: Arc::clone(&self.erased) }
    }

    /// The typed informer, when `K` is its type ([`DynamicObject`] for a dynamic informer).
    #[must_use]
    pub fn downcast<K: Object>(&self) -> Option<SharedIndexInformer<K>> {
        self.erased.as_any().downcast_ref::<SharedIndexInformer<K>>().cloned()
    }
}

impl fmt::Debug for GenericInformer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GenericInformer").field("resource", &self.erased.gvr()).finish()
    }
}

/// Reads a [`GenericInformer`]'s cache.
#[derive(Clone)]
pub struct GenericLister {
    erased: Arc<dyn ErasedInformer>,
}

impl GenericLister {
    /// The objects whose labels match `selector`.
    #[must_use]
    pub fn list(&self, selector: &LabelSelector) -> Vec<Arc<dyn DynResource>> {
        self.erased.list(selector)
    }

    /// The object `name` in `namespace` (`None` for cluster-scoped kinds).
    ///
    /// # Errors
    ///
    /// [`NotFound`] when the cache does not hold it.
    pub fn get(
        &self,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<Arc<dyn DynResource>, NotFound> {
        let key = ObjectKey::new(namespace, name);
        self.erased
            .get(key.as_str())
            .ok_or_else(|| NotFound { resource: self.erased.gvr().resource, name: name.to_owned() })
    }
}

impl fmt::Debug for GenericLister {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GenericLister").field("resource", &self.erased.gvr()).finish()
    }
}
