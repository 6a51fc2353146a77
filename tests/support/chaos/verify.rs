//! What "converged" means, checked against the server itself: each informer's cache holds
//! exactly the server's objects (compared whole, as decoded from the server's JSON), and each
//! handler's last state of every object is the server's. An informer restricted to a set of
//! namespaces must hold exactly the server's objects in those namespaces, and nothing else.
//!
//! Caches are read key by key through `try_get_by_key`, so that in compact storage an object
//! that does not decode is a difference (and counted in [`Watched::decode_failures`]), where a
//! plain `list` would skip it.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Debug;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use embedded_apiserver::ServerHandle;
use informer_runtime::listwatch::ListWatchSource;
use informer_runtime::{
    GroupVersionResource, ObjectKey, Resource, SharedIndexInformer, SharedInformerFactory,
};

/// One informer of the scenario, whatever its type.
pub(crate) trait Watched: Send + Sync {
    /// The resource's plural.
    fn name(&self) -> &'static str;
    /// The server's objects: key to resourceVersion.
    fn served_versions(&self, server: &ServerHandle) -> HashMap<String, u64>;
    /// How the cache differs from the server, an object per line.
    fn cache_differences(&self, server: &ServerHandle) -> Vec<String>;
    /// List and watch failures reported to the informer's watch-error handler.
    fn errors(&self) -> u64;
    /// Reads of the cache that found an object it could not decode from its compact form.
    fn decode_failures(&self) -> u64;
}

/// An informer of `K` on the scenario's factory.
pub(crate) struct Typed<K> {
    name: &'static str,
    gvr: GroupVersionResource,
    pub(crate) informer: SharedIndexInformer<K>,
    errors: Arc<AtomicU64>,
    /// The namespaces the informer is restricted to; `None`: every namespace.
    namespaces: Option<BTreeSet<String>>,
}

impl<K: Resource + PartialEq + Debug> Typed<K> {
    /// The factory's informer of `K`, with a watch-error handler that counts. Before start.
    pub(crate) fn new<S: ListWatchSource>(
        factory: &SharedInformerFactory<S>,
        name: &'static str,
        gvr: GroupVersionResource,
    ) -> Self {
        let informer = factory.informer::<K>();
        let errors = Arc::new(AtomicU64::new(0));
        let counter = Arc::clone(&errors);
        informer
            .set_watch_error_handler(move |_| {
                counter.fetch_add(1, Ordering::Relaxed);
            })
            .unwrap_or_else(|e| panic!("{name}: watch-error handler: {e}"));
        Self { name, gvr, informer, errors, namespaces: None }
    }

    /// Checked against the server's objects in `namespaces` only: for an informer of a factory
    /// restricted to them.
    pub(crate) fn only_in(mut self, namespaces: &[&str]) -> Self {
        self.namespaces = Some(namespaces.iter().map(|&ns| ns.to_owned()).collect());
        self
    }

    fn watches(&self, namespace: &str) -> bool {
        self.namespaces.as_ref().is_none_or(|set| set.contains(namespace))
    }

    /// The server's objects decoded as `K`, without `managedFields` (which informers drop).
    fn served(&self, server: &ServerHandle) -> BTreeMap<String, K> {
        server
            .objects(&self.gvr)
            .into_iter()
            .map(|json| {
                let mut obj: K = serde_json::from_value(json).unwrap_or_else(|e| {
                    panic!("{}: a served object does not decode: {e}", self.name)
                });
                obj.meta_mut().managed_fields = None;
                (ObjectKey::of(&obj).to_string(), obj)
            })
            .filter(|(_, obj)| self.watches(obj.meta().namespace.as_deref().unwrap_or_default()))
            .collect()
    }
}

impl<K: Resource + PartialEq + Debug> Watched for Typed<K> {
    fn name(&self) -> &'static str {
        self.name
    }

    fn served_versions(&self, server: &ServerHandle) -> HashMap<String, u64> {
        self.served(server)
            .into_iter()
            .map(|(key, obj)| {
                let rv = obj.meta().resource_version.as_deref().and_then(|v| v.parse().ok());
                (key, rv.unwrap_or_default())
            })
            .collect()
    }

    fn cache_differences(&self, server: &ServerHandle) -> Vec<String> {
        let mut served = self.served(server);
        let mut out = Vec::new();
        let cache = self.informer.cache();
        for key in cache.list_keys() {
            let cached = match cache.try_get_by_key(key.as_str()) {
                Ok(Some(cached)) => cached,
                // Removed between the two reads: the next look settles it.
                Ok(None) => continue,
                Err(e) => {
                    served.remove(key.as_str());
                    out.push(format!("{}: {e}", self.name));
                    continue;
                }
            };
            let key = key.to_string();
            let namespace = cached.meta().namespace.clone().unwrap_or_default();
            if !self.watches(&namespace) {
                out.push(format!("{}: cache holds {key}, outside its namespaces", self.name));
                continue;
            }
            match served.remove(&key) {
                Some(obj) if obj == *cached => {}
                Some(obj) => out.push(format!(
                    "{}: cache holds {key} at {:?}, server at {:?}",
                    self.name,
                    cached.meta().resource_version,
                    obj.meta().resource_version
                )),
                None => {
                    out.push(format!("{}: cache holds {key}, deleted on the server", self.name));
                }
            }
        }
        out.extend(served.keys().map(|key| format!("{}: cache lacks {key}", self.name)));
        out
    }

    fn errors(&self) -> u64 {
        self.errors.load(Ordering::Relaxed)
    }

    fn decode_failures(&self) -> u64 {
        self.informer.cache().decode_failures()
    }
}
