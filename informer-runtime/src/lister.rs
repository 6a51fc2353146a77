//! Listers: typed, read-only queries over an informer's cache; never the server.
//!
//! **Who it is for.** Every program that reads: handlers and reconcilers read objects through a
//! lister, never from the server.
//!
//! [`Lister::list`] takes a [`LabelSelector`]. Namespaced kinds are read per namespace through
//! the namespace index ([`Lister::namespace`]); cluster-scoped kinds by name ([`Lister::get`]).
//! Results are unordered.
//!
//! A query costs in proportion to its answer, not to the cache, where the cache's indices allow:
//! with the label index ([`Indexer::with_label_index`](crate::Indexer::with_label_index), which
//! informers keep), a selector with a `key=value`, `key in (…)` or `key` requirement reads only
//! the objects under its most selective such requirement (or the namespace's objects, if fewer)
//! and checks the rest of the selector on those. A selector of only `key!=value`,
//! `key notin (…)` and `!key` requirements matches objects without the label, which no index
//! lists: it reads every object (or the namespace's). The answer is the same either way.
//!
//! In a cache with [compact storage](crate::Indexer::with_compact_storage) the answers are the
//! same and the work to find them too (indices and labels are held decoded); each object
//! returned is decoded, unless it is among the cache's recent objects, so a query costs about a
//! decode per object it returns.

use std::sync::Arc;

use k8s_openapi::{ClusterResourceScope, NamespaceResourceScope};

use crate::dynamic::DynamicObject;
use crate::resource::{Object, Resource};
use crate::selector::LabelSelector;
use crate::store::{Cache, ObjectKey};

/// The object asked for is not in the cache.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{resource} {name:?} not found")]
pub struct NotFound {
    /// The resource, as client-go's listers name it (`pod`, `deployment.apps`).
    pub resource: String,
    /// The name asked for.
    pub name: String,
}

/// How client-go's typed listers name `K` in a `NotFound`: its kind, lowercase, with its group.
pub(crate) fn typed_label<K: Resource>() -> Arc<str> {
    crate::resource::qualified_name(&K::KIND.to_lowercase(), K::GROUP).into()
}

fn not_found(resource: &str, name: &str) -> NotFound {
    NotFound { resource: resource.to_owned(), name: name.to_owned() }
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
    /// The resource as a [`NotFound`] names it.
    resource: Arc<str>,
}

impl<K> Clone for Lister<K> {
    fn clone(&self) -> Self {
        Self { cache: self.cache.clone(), resource: Arc::clone(&self.resource) }
    }
}

impl<K: Resource> Lister<K> {
    /// A lister over `cache`.
    #[must_use]
    pub fn new(cache: Cache<K>) -> Self {
        Self { cache, resource: typed_label::<K>() }
    }
}

impl<K: Object> Lister<K> {
    /// A lister over `cache`, whose [`NotFound`] errors name `resource`.
    pub(crate) fn named(cache: Cache<K>, resource: Arc<str>) -> Self {
        Self { cache, resource }
    }

    /// Every object whose labels match `selector`, in all namespaces, unordered.
    #[must_use]
    pub fn list(&self, selector: &LabelSelector) -> Vec<Arc<K>> {
        self.cache.select(None, selector)
    }
}

impl<K: Object> Lister<K> {
    fn in_namespace(&self, namespace: &str) -> NamespaceLister<K> {
        NamespaceLister {
            cache: self.cache.clone(),
            namespace: namespace.to_owned(),
            resource: Arc::clone(&self.resource),
        }
    }

    fn get_cluster_scoped(&self, name: &str) -> Result<Arc<K>, NotFound> {
        self.cache.get_by_key(name).ok_or_else(|| not_found(&self.resource, name))
    }
}

impl<K: Resource<Scope = NamespaceResourceScope>> Lister<K> {
    /// The objects of one namespace.
    #[must_use]
    pub fn namespace(&self, namespace: &str) -> NamespaceLister<K> {
        self.in_namespace(namespace)
    }
}

impl<K: Resource<Scope = ClusterResourceScope>> Lister<K> {
    /// The cluster-scoped object `name`.
    ///
    /// # Errors
    ///
    /// [`NotFound`] when the cache does not hold it.
    pub fn get(&self, name: &str) -> Result<Arc<K>, NotFound> {
        self.get_cluster_scoped(name)
    }
}

/// A dynamic resource's scope is known only at run time: both ways of reading are offered, as
/// client-go's dynamic lister does. `namespace` of a cluster-scoped resource lists nothing, and
/// `get` of a namespaced one finds nothing.
impl Lister<DynamicObject> {
    /// The objects of one namespace.
    #[must_use]
    pub fn namespace(&self, namespace: &str) -> NamespaceLister<DynamicObject> {
        self.in_namespace(namespace)
    }

    /// The cluster-scoped object `name`.
    ///
    /// # Errors
    ///
    /// [`NotFound`] when the cache does not hold it.
    pub fn get(&self, name: &str) -> Result<Arc<DynamicObject>, NotFound> {
        self.get_cluster_scoped(name)
    }
}

/// Reads the objects of one namespace; see [`Lister::namespace`].
pub struct NamespaceLister<K> {
    cache: Cache<K>,
    namespace: String,
    resource: Arc<str>,
}

impl<K: Object> NamespaceLister<K> {
    /// The objects of this namespace whose labels match `selector`, unordered.
    #[must_use]
    pub fn list(&self, selector: &LabelSelector) -> Vec<Arc<K>> {
        self.cache.select(Some(&self.namespace), selector)
    }

    /// The object `name` of this namespace.
    ///
    /// # Errors
    ///
    /// [`NotFound`] when the cache does not hold it.
    pub fn get(&self, name: &str) -> Result<Arc<K>, NotFound> {
        let key = ObjectKey::new(Some(&self.namespace), name);
        self.cache.get_by_key(key.as_str()).ok_or_else(|| not_found(&self.resource, name))
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
    use crate::store::{Indexer, StorageMode};
    use crate::testing::objects::{labeled_pod, namespace};

    /// Every lister test runs over each storage mode: listers answer alike in all of them.
    const MODES: [StorageMode; 3] = [
        StorageMode::Decoded,
        StorageMode::Compact { recent: 0 },
        StorageMode::Compact { recent: 4 },
    ];

    fn in_mode<K: Object>(indexer: Indexer<K>, mode: StorageMode) -> Indexer<K> {
        indexer.set_storage_mode(mode);
        indexer
    }

    fn names<K: Object>(objs: &[Arc<K>]) -> Vec<String> {
        let mut v: Vec<String> = objs.iter().map(|o| ObjectKey::of(&**o).to_string()).collect();
        v.sort();
        v
    }

    fn sel(s: &str) -> LabelSelector {
        LabelSelector::parse(s).unwrap()
    }

    #[test]
    fn list_by_selector_across_and_within_namespaces() {
        for mode in MODES {
            let indexer = in_mode(Indexer::<Pod>::with_namespace_index(), mode);
            indexer.add(labeled_pod("a", "web", &[("app", "web"), ("tier", "front")]).into());
            indexer.add(labeled_pod("a", "db", &[("app", "db")]).into());
            indexer.add(labeled_pod("b", "web", &[("app", "web")]).into());
            let lister = Lister::new(indexer.cache());
            assert_eq!(
                names(&lister.list(&LabelSelector::everything())),
                ["a/db", "a/web", "b/web"]
            );
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
    }

    #[test]
    fn get_and_typed_not_found() {
        for mode in MODES {
            let indexer = in_mode(Indexer::<Pod>::with_namespace_index(), mode);
            indexer.add(labeled_pod("a", "web", &[]).into());
            let pods = Lister::new(indexer.cache());
            assert!(pods.namespace("a").get("web").is_ok());
            let err = pods.namespace("b").get("web").unwrap_err();
            assert_eq!(err.to_string(), r#"pod "web" not found"#);

            let namespaces = in_mode(Indexer::<Namespace>::with_namespace_index(), mode);
            namespaces.add(namespace("kube-system").into());
            let lister = Lister::new(namespaces.cache());
            assert!(lister.get("kube-system").is_ok());
            assert_eq!(
                lister.get("nope").unwrap_err().to_string(),
                r#"namespace "nope" not found"#
            );

            let deployments =
                Lister::new(in_mode(Indexer::<Deployment>::with_namespace_index(), mode).cache());
            assert_eq!(
                deployments.namespace("x").get("y").unwrap_err().to_string(),
                r#"deployment.apps "y" not found"#
            );
        }
    }

    #[test]
    fn indexed_lists_equal_scanned_lists() {
        for mode in MODES {
            let pods = [
                labeled_pod("a", "web", &[("app", "web"), ("tier", "front")]),
                labeled_pod("a", "db", &[("app", "db")]),
                labeled_pod("a", "bare", &[]),
                labeled_pod("b", "web", &[("app", "web"), ("tier", "back")]),
                labeled_pod("b", "cache", &[("app", "cache"), ("tier", "back")]),
            ];
            let scanned = in_mode(Indexer::<Pod>::with_namespace_index(), mode);
            let indexed = in_mode(Indexer::<Pod>::with_namespace_index().with_label_index(), mode);
            for pod in pods {
                scanned.add(pod.clone().into());
                indexed.add(pod.into());
            }
            let (scanned, indexed) = (Lister::new(scanned.cache()), Lister::new(indexed.cache()));
            // Indexable, mixed, and fallback (`!=`, `notin`, `!key` only) selectors.
            for s in [
                "",
                "app=web",
                "app in (web,db)",
                "tier",
                "tier=back,app!=web",
                "app in (web,cache),tier notin (front)",
                "app=none",
                "!tier",
                "app!=web",
                "app notin (web),!tier",
            ] {
                let selector = sel(s);
                assert_eq!(names(&indexed.list(&selector)), names(&scanned.list(&selector)), "{s}");
                for ns in ["a", "b", "c"] {
                    assert_eq!(
                        names(&indexed.namespace(ns).list(&selector)),
                        names(&scanned.namespace(ns).list(&selector)),
                        "{ns}: {s}"
                    );
                }
            }
            assert_eq!(names(&indexed.list(&sel("tier=back,app!=web"))), ["b/cache"]);
            assert_eq!(
                names(&indexed.namespace("a").list(&sel("app in (web,db)"))),
                ["a/db", "a/web"]
            );

            let namespaces =
                in_mode(Indexer::<Namespace>::with_namespace_index().with_label_index(), mode);
            let mut system = namespace("kube-system");
            system.metadata.labels = Some([("system".to_owned(), "true".to_owned())].into());
            namespaces.add(system.into());
            namespaces.add(namespace("default").into());
            let namespaces = Lister::new(namespaces.cache());
            assert_eq!(names(&namespaces.list(&sel("system=true"))), ["kube-system"]);
            assert_eq!(names(&namespaces.list(&sel("!system"))), ["default"]);
        }
    }

    #[test]
    fn informers_keep_the_label_index_unless_told_not_to() {
        use crate::factory::SharedInformerFactory;
        use crate::shared_informer::SharedIndexInformer;
        use crate::testing::FakeSource;

        let has_label_index =
            |cache: Cache<Pod>| format!("{cache:?}").contains("label_index: true");
        let source = FakeSource::new();
        let informer = SharedIndexInformer::<Pod>::new(source.lister_watcher::<Pod>(None));
        assert!(has_label_index(informer.cache()));
        let informer = informer.without_label_index();
        assert!(!has_label_index(informer.cache()));

        assert!(has_label_index(
            SharedInformerFactory::new(source.clone()).informer::<Pod>().cache()
        ));
        let factory = SharedInformerFactory::builder(source).without_label_index().build();
        assert!(!has_label_index(factory.informer::<Pod>().cache()));
    }

    #[test]
    fn namespace_lister_without_namespace_index_scans() {
        for mode in MODES {
            let indexer = in_mode(Indexer::<Pod>::default(), mode);
            indexer.add(labeled_pod("a", "web", &[("app", "web")]).into());
            indexer.add(labeled_pod("b", "web", &[("app", "web")]).into());
            let lister = Lister::new(indexer.cache());
            assert_eq!(names(&lister.namespace("a").list(&sel("app=web"))), ["a/web"]);
        }
    }
}
