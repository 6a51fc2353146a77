//! Listers: typed, read-only queries over an informer's cache; never the server.
//!
//! [`Lister::list`] takes a [`LabelSelector`]. Namespaced kinds are read per namespace through
//! the namespace index ([`Lister::namespace`]); cluster-scoped kinds by name ([`Lister::get`]).
//! Results are unordered.

use std::sync::Arc;

use k8s_openapi::{ClusterResourceScope, NamespaceResourceScope};

use crate::resource::Resource;
use crate::selector::LabelSelector;
use crate::store::{Cache, NAMESPACE_INDEX, ObjectKey};

/// The object asked for is not in the cache.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{resource} {name:?} not found")]
pub struct NotFound {
    /// The resource, as client-go's listers name it (`pod`, `deployment.apps`).
    pub resource: String,
    /// The name asked for.
    pub name: String,
}

fn not_found<K: Resource>(name: &str) -> NotFound {
    let kind = K::KIND.to_lowercase();
    let resource = if K::GROUP.is_empty() { kind } else { format!("{kind}.{}", K::GROUP) };
    NotFound { resource, name: name.to_owned() }
}

fn matching<K: Resource>(objs: Vec<Arc<K>>, selector: &LabelSelector) -> Vec<Arc<K>> {
    if selector.is_everything() {
        return objs;
    }
    objs.into_iter().filter(|o| selector.matches_opt(o.metadata().labels.as_ref())).collect()
}

/// Reads objects of one kind from a cache.
///
/// ```
/// # use informer_runtime::{Indexer, lister::Lister, selector::LabelSelector};
/// # use k8s_openapi::api::core::v1::Pod;
/// # use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
/// let indexer = Indexer::<Pod>::with_namespace_index();
/// indexer.add(Pod {
///     metadata: ObjectMeta {
///         namespace: Some("default".into()),
///         name: Some("web-0".into()),
///         labels: Some([("app".to_owned(), "web".to_owned())].into()),
///         ..ObjectMeta::default()
///     },
///     ..Pod::default()
/// }.into());
/// let lister = Lister::new(indexer.cache());
/// let web = LabelSelector::parse("app=web").unwrap();
/// assert_eq!(lister.namespace("default").list(&web).len(), 1);
/// assert!(lister.namespace("default").get("web-0").is_ok());
/// assert_eq!(
///     lister.namespace("default").get("web-1").unwrap_err().to_string(),
///     r#"pod "web-1" not found"#,
/// );
/// ```
#[doc(alias = "GenericLister")]
pub struct Lister<K> {
    cache: Cache<K>,
}

impl<K> Clone for Lister<K> {
    fn clone(&self) -> Self {
        Self { cache: self.cache.clone() }
    }
}

impl<K: Resource> Lister<K> {
    /// A lister over `cache`.
    #[must_use]
    pub fn new(cache: Cache<K>) -> Self {
        Self { cache }
    }

    /// Every object whose labels match `selector`, in all namespaces.
    #[must_use]
    pub fn list(&self, selector: &LabelSelector) -> Vec<Arc<K>> {
        if selector.is_everything() {
            return self.cache.list();
        }
        let mut out = Vec::new();
        self.cache.for_each(|o| {
            if selector.matches_opt(o.metadata().labels.as_ref()) {
                out.push(Arc::clone(o));
            }
        });
        out
    }
}

impl<K: Resource + k8s_openapi::Resource<Scope = NamespaceResourceScope>> Lister<K> {
    /// The objects of one namespace.
    #[must_use]
    pub fn namespace(&self, namespace: &str) -> NamespaceLister<K> {
        NamespaceLister { cache: self.cache.clone(), namespace: namespace.to_owned() }
    }
}

impl<K: Resource + k8s_openapi::Resource<Scope = ClusterResourceScope>> Lister<K> {
    /// The cluster-scoped object `name`.
    ///
    /// # Errors
    ///
    /// [`NotFound`] when the cache does not hold it.
    pub fn get(&self, name: &str) -> Result<Arc<K>, NotFound> {
        self.cache.get_by_key(name).ok_or_else(|| not_found::<K>(name))
    }
}

/// Reads the objects of one namespace; see [`Lister::namespace`].
pub struct NamespaceLister<K> {
    cache: Cache<K>,
    namespace: String,
}

impl<K: Resource> NamespaceLister<K> {
    /// The objects of this namespace whose labels match `selector`.
    #[must_use]
    pub fn list(&self, selector: &LabelSelector) -> Vec<Arc<K>> {
        match self.cache.by_index(NAMESPACE_INDEX, &self.namespace) {
            Ok(objs) => matching(objs, selector),
            // A cache built without the namespace index: scan it.
            Err(_) => {
                let mut out = Vec::new();
                self.cache.for_each(|o| {
                    if o.metadata().namespace.as_deref() == Some(&*self.namespace)
                        && selector.matches_opt(o.metadata().labels.as_ref())
                    {
                        out.push(Arc::clone(o));
                    }
                });
                out
            }
        }
    }

    /// The object `name` of this namespace.
    ///
    /// # Errors
    ///
    /// [`NotFound`] when the cache does not hold it.
    pub fn get(&self, name: &str) -> Result<Arc<K>, NotFound> {
        let key = ObjectKey::new(Some(&self.namespace), name);
        self.cache.get_by_key(key.as_str()).ok_or_else(|| not_found::<K>(name))
    }
}

impl<K> std::fmt::Debug for Lister<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lister").field("cache", &self.cache).finish()
    }
}

impl<K> std::fmt::Debug for NamespaceLister<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NamespaceLister").field("namespace", &self.namespace).finish_non_exhaustive()
    }
}
