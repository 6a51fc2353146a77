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
    objs.into_iter().filter(|o| selector.matches_opt(o.meta().labels.as_ref())).collect()
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
            if selector.matches_opt(o.meta().labels.as_ref()) {
                out.push(Arc::clone(o));
            }
        });
        out
    }
}

impl<K: Resource<Scope = NamespaceResourceScope>> Lister<K> {
    /// The objects of one namespace.
    #[must_use]
    pub fn namespace(&self, namespace: &str) -> NamespaceLister<K> {
        NamespaceLister { cache: self.cache.clone(), namespace: namespace.to_owned() }
    }
}

impl<K: Resource<Scope = ClusterResourceScope>> Lister<K> {
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
        if let Ok(objs) = self.cache.by_index(NAMESPACE_INDEX, &self.namespace) {
            return matching(objs, selector);
        }
        // A cache built without the namespace index: scan it.
        let mut out = Vec::new();
        self.cache.for_each(|o| {
            if o.meta().namespace.as_deref() == Some(&*self.namespace)
                && selector.matches_opt(o.meta().labels.as_ref())
            {
                out.push(Arc::clone(o));
            }
        });
        out
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
        f.debug_struct("NamespaceLister")
            .field("namespace", &self.namespace)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::apps::v1::Deployment;
    use k8s_openapi::api::core::v1::{Namespace, Pod};

    use super::*;
    use crate::store::Indexer;
    use crate::test_util::{labeled_pod, namespace};

    fn names<K: Resource>(objs: &[Arc<K>]) -> Vec<String> {
        let mut v: Vec<String> = objs.iter().map(|o| ObjectKey::of(&**o).to_string()).collect();
        v.sort();
        v
    }

    fn sel(s: &str) -> LabelSelector {
        LabelSelector::parse(s).unwrap()
    }

    #[test]
    fn list_by_selector_across_and_within_namespaces() {
        let indexer = Indexer::<Pod>::with_namespace_index();
        indexer.add(labeled_pod("a", "web", &[("app", "web"), ("tier", "front")]).into());
        indexer.add(labeled_pod("a", "db", &[("app", "db")]).into());
        indexer.add(labeled_pod("b", "web", &[("app", "web")]).into());
        let lister = Lister::new(indexer.cache());
        assert_eq!(names(&lister.list(&LabelSelector::everything())), ["a/db", "a/web", "b/web"]);
        assert_eq!(names(&lister.list(&sel("app=web"))), ["a/web", "b/web"]);
        assert_eq!(
            names(&lister.namespace("a").list(&sel("app in (web,db),!missing"))),
            ["a/db", "a/web"]
        );
        assert_eq!(names(&lister.namespace("a").list(&sel("tier"))), ["a/web"]);
        assert!(
            lister.list(&sel("app=none")).is_empty(),
            "a selector that matches nothing returns nothing"
        );
        assert!(lister.namespace("c").list(&LabelSelector::everything()).is_empty());
    }

    #[test]
    fn get_and_typed_not_found() {
        let indexer = Indexer::<Pod>::with_namespace_index();
        indexer.add(labeled_pod("a", "web", &[]).into());
        let pods = Lister::new(indexer.cache());
        assert!(pods.namespace("a").get("web").is_ok());
        let err = pods.namespace("b").get("web").unwrap_err();
        assert_eq!(err.to_string(), r#"pod "web" not found"#);

        let namespaces = Indexer::<Namespace>::with_namespace_index();
        namespaces.add(namespace("kube-system").into());
        let lister = Lister::new(namespaces.cache());
        assert!(lister.get("kube-system").is_ok());
        assert_eq!(lister.get("nope").unwrap_err().to_string(), r#"namespace "nope" not found"#);

        let deployments = Lister::new(Indexer::<Deployment>::with_namespace_index().cache());
        assert_eq!(
            deployments.namespace("x").get("y").unwrap_err().to_string(),
            r#"deployment.apps "y" not found"#
        );
    }

    #[test]
    fn namespace_lister_without_namespace_index_scans() {
        let indexer = Indexer::<Pod>::default();
        indexer.add(labeled_pod("a", "web", &[("app", "web")]).into());
        indexer.add(labeled_pod("b", "web", &[("app", "web")]).into());
        let lister = Lister::new(indexer.cache());
        assert_eq!(names(&lister.namespace("a").list(&sel("app=web"))), ["a/web"]);
    }
}
