//! What the runtime needs to know about a resource type: its metadata and its identity.
//!
//! **Who it is for.** Programs meet [`ObjectKey`] (the key handlers and work queues pass around)
//! and [`GroupVersionResource`]; a type that no generator or derive covers implements [`Resource`]
//! here. The rest is what the other modules are written against.
//!
//! Every object that flows from the [reflector](crate::reflector) to a handler is a [`Resource`].
//! The trait is the runtime's own, so that it can be implemented both ways a Rust type can
//! describe a Kubernetes kind:
//!
//! - **Through k8s-openapi's traits.** Every type that implements k8s-openapi's
//!   [`Resource`](k8s_openapi::Resource) and [`Metadata<Ty = ObjectMeta>`](k8s_openapi::Metadata)
//!   is a [`Resource`] by a blanket impl: all of k8s-openapi's built-in kinds, and the types
//!   `informer-gen` and `#[derive(Informer)]` generate (which kube-rs then also accepts, through
//!   its own blanket impl of `kube::Resource`).
//! - **Directly.** A type that cannot implement k8s-openapi's traits implements this one, most
//!   simply with [`impl_resource!`](crate::impl_resource). That is the case of the roots that
//!   kube-rs's `#[derive(CustomResource)]` and kopium generate: kube implements `kube::Resource`
//!   for every k8s-openapi resource, so such a root, which implements `kube::Resource` itself,
//!   must not implement k8s-openapi's traits, and coherence allows this trait's impl for it.
//!
//! # Whole objects, metadata and views
//!
//! Most resource types hold whole objects. Two kinds hold only a part of each object, which an
//! informer caches at a fraction of the memory:
//! [`PartialObjectMetadata<K>`](crate::metadata::PartialObjectMetadata) (the metadata alone,
//! which the API server sends as such), and *views* (projections): a struct with only the fields
//! a controller reads, declared with `#[derive(Informer)]` and `#[informer(view = Pod)]`, or with
//! [`impl_resource!(PodView, view = Pod)`](crate::impl_resource). A view has the identity of the
//! type it views; the server sends whole objects, and each is decoded straight into the view, so
//! the fields it does not name are skipped while parsing and never allocated (client-go's
//! transforms run after the full decode).
//!
//! Writing a part back would erase what it lacks, so only types that hold whole objects are
//! [`WholeObject`]s, the bound of the client's writes (`Client::create` and
//! `Client::replace`): reads, merge patches and deletes take any [`Resource`].
//!
//! # Keys
//!
//! An object's key in a cache, [`ObjectKey`] (`namespace/name`, or `name` for a cluster-scoped
//! object), is defined here, beside the identity it is made of, so that every layer above can
//! name it; the [`store`](crate::store) re-exports it.
//!

use std::any::TypeId;
use std::borrow::Borrow;
use std::fmt;
use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::Serialize;
use serde::de::DeserializeOwned;

/// An object an informer can cache: a Kubernetes object with [`ObjectMeta`], whatever its Rust
/// type knows of its resource.
///
/// The whole runtime (reflector, `DeltaFIFO`, store, informer, handlers, listers) needs no more
/// than this; what it needs of the resource's identity (its URL, its kind, its name in logs)
/// comes with the informer. Typed resources are also [`Resource`]s, whose identity is known at
/// compile time; a [`DynamicObject`](crate::dynamic::DynamicObject) is only an `Object`, and
/// its informer learns its identity from the API server's discovery (see the
/// [`dynamic`](crate::dynamic) module).
///
/// Implemented for every type that implements k8s-openapi's [`Resource`](k8s_openapi::Resource)
/// and [`Metadata<Ty = ObjectMeta>`](k8s_openapi::Metadata), by [`impl_resource!`](crate::impl_resource)
/// and for [`DynamicObject`](crate::dynamic::DynamicObject).
///
/// The metadata accessors are named [`meta`](Self::meta) and [`meta_mut`](Self::meta_mut), as
/// in kube-rs, so that they never clash with k8s-openapi's `metadata()` when both traits are in
/// scope.
///
/// `Clone` is needed only where an object must be changed while shared (a transform applied to
/// an object the source still holds); the hot path shares objects as `Arc<K>` and never clones.
///
/// ```
/// use informer_runtime::Object;
/// use k8s_openapi::api::core::v1::Pod;
///
/// let pod = Pod::default();
/// assert_eq!(pod.meta().name, None);
/// ```
pub trait Object: Clone + Serialize + DeserializeOwned + Send + Sync + 'static {
    /// The object's metadata.
    fn meta(&self) -> &ObjectMeta;

    /// The object's metadata, to change.
    fn meta_mut(&mut self) -> &mut ObjectMeta;

    /// Sets the object's `apiVersion` and `kind` if its type keeps them and they are missing
    /// (API servers leave them out of the items of lists of built-in kinds). Only
    /// [`DynamicObject`](crate::dynamic::DynamicObject) keeps them; typed objects know theirs.
    #[doc(hidden)]
    fn fill_type(&mut self, api_version: &str, kind: &str) {
        let _ = (api_version, kind);
    }
}

/// A Kubernetes resource type whose identity on the API server is known at compile time: an
/// [`Object`] with a group, version, kind, plural name and scope.
///
/// Implemented for every type that implements k8s-openapi's [`Resource`](k8s_openapi::Resource)
/// and [`Metadata<Ty = ObjectMeta>`](k8s_openapi::Metadata); other types implement it with
/// [`impl_resource!`](crate::impl_resource) or by hand (see the [module docs](self)).
///
/// ```
/// use informer_runtime::Resource;
/// use k8s_openapi::api::core::v1::Pod;
///
/// assert_eq!((Pod::GROUP, Pod::VERSION, Pod::KIND, Pod::PLURAL), ("", "v1", "Pod", "pods"));
/// ```
pub trait Resource: Object {
    /// `apiVersion` as objects carry it: `group/version`, or `version` for the core group.
    const API_VERSION: &'static str;
    /// API group, `""` for the core group.
    const GROUP: &'static str;
    /// API version within the group, for example `v1`.
    const VERSION: &'static str;
    /// The kind, for example `Pod`.
    const KIND: &'static str;
    /// Plural resource name as it appears in URLs, for example `pods`.
    const PLURAL: &'static str;
    /// [`NamespaceResourceScope`](k8s_openapi::NamespaceResourceScope) or
    /// [`ClusterResourceScope`](k8s_openapi::ClusterResourceScope).
    type Scope: k8s_openapi::ResourceScope + 'static;

    /// Whether lists and watches of this type ask the server for `PartialObjectMetadata`
    /// instead of whole objects. Only [`PartialObjectMetadata<K>`](crate::metadata::PartialObjectMetadata)
    /// sets it; a defaulted item, so that other implementations need not know it exists.
    #[doc(hidden)]
    const METADATA_ONLY: bool = false;

    /// Whether values of this type hold only a part of their objects: metadata only, or a view
    /// (see the [module docs](self)). Where the factory knows informers by resource alone, it
    /// prefers the informer of whole objects. Defaulted, as `METADATA_ONLY`.
    #[doc(hidden)]
    const PARTIAL: bool = Self::METADATA_ONLY;
}

impl<T> Object for T
where
    T: k8s_openapi::Resource<Scope: 'static>
        + k8s_openapi::Metadata<Ty = ObjectMeta>
        + Clone
        + Serialize
        + DeserializeOwned
        + Send
        + Sync
        + 'static,
{
    fn meta(&self) -> &ObjectMeta {
        k8s_openapi::Metadata::metadata(self)
    }

    fn meta_mut(&mut self) -> &mut ObjectMeta {
        k8s_openapi::Metadata::metadata_mut(self)
    }
}

impl<T> Resource for T
where
    T: k8s_openapi::Resource<Scope: 'static>
        + k8s_openapi::Metadata<Ty = ObjectMeta>
        + Clone
        + Serialize
        + DeserializeOwned
        + Send
        + Sync
        + 'static,
{
    const API_VERSION: &'static str = <T as k8s_openapi::Resource>::API_VERSION;
    const GROUP: &'static str = <T as k8s_openapi::Resource>::GROUP;
    const VERSION: &'static str = <T as k8s_openapi::Resource>::VERSION;
    const KIND: &'static str = <T as k8s_openapi::Resource>::KIND;
    const PLURAL: &'static str = <T as k8s_openapi::Resource>::URL_PATH_SEGMENT;
    type Scope = <T as k8s_openapi::Resource>::Scope;
}

/// A [`Resource`] whose values are whole objects, which the API server can store as they are:
/// what `Client::create` and `Client::replace` send.
///
/// Implemented for every type with k8s-openapi's traits (built-ins, `informer-gen`'s output,
/// `#[derive(Informer)]` custom resources) and by [`impl_resource!`](crate::impl_resource) for
/// the other roots. Not for [`PartialObjectMetadata<K>`](crate::metadata::PartialObjectMetadata)
/// nor views (`#[informer(view = Pod)]`, `impl_resource!(PodView, view = Pod)`): they lack fields,
/// and a write would erase them on the server. A type implementing [`Resource`] by hand
/// implements this trait too, if its values are whole objects.
///
/// `informer-client`'s `Client::replace` refuses a view or metadata at compile time.
#[diagnostic::on_unimplemented(
    message = "`{Self}` holds a part of its objects, not whole objects: writing it would erase the fields it lacks",
    label = "a view or metadata, not a whole object",
    note = "write the type it views, or change fields with `Client::patch_merge`"
)]
#[doc(alias = "Writable")]
pub trait WholeObject: Resource {}

impl<T> WholeObject for T where
    T: k8s_openapi::Resource + k8s_openapi::Metadata<Ty = ObjectMeta> + Resource
{
}

/// Whether values of `K` hold all the server sends for an object: whole objects, or the
/// metadata a metadata-only list sends; not a view, which keeps a part of what is sent.
pub(crate) const fn holds_all_it_is_sent<K: Resource>() -> bool {
    !K::PARTIAL || K::METADATA_ONLY
}

/// `K`'s resource as messages, logs and metrics name it: `pods`, `deployments.apps`.
// Public so that informer-client's messages and informer-controller's metric labels name a
// resource as the runtime's do; users have `K::plural` and `K::group`: hidden from the docs.
#[doc(hidden)]
#[must_use]
pub fn resource_name<K: Resource>() -> String {
    qualified_name(K::PLURAL, K::GROUP)
}

/// `plural[.group]`, as kubectl names a resource (`pods`, `deployments.apps`): the one place
/// messages, logs, metrics and [`ApiResource`]'s `Display` get it from.
pub(crate) fn qualified_name(plural: &str, group: &str) -> String {
    if group.is_empty() { plural.to_owned() } else { format!("{plural}.{group}") }
}

/// `apiVersion` as objects carry it: `group/version`, or `version` for the core group.
// Public for informer-client's request paths; users have `GroupVersionResource::api_version`
// and `ApiResource::api_version`: hidden from the docs.
#[doc(hidden)]
#[must_use]
pub fn api_version(group: &str, version: &str) -> String {
    if group.is_empty() { version.to_owned() } else { format!("{group}/{version}") }
}

/// Whether objects of `K` live in a namespace.
#[must_use]
pub fn is_namespaced<K: Resource>() -> bool {
    TypeId::of::<K::Scope>() == TypeId::of::<k8s_openapi::NamespaceResourceScope>()
}

/// `held` if it is the same version of the same object as `listed`: the cache's copy a relist
/// keeps in place of a newly decoded one.
pub(crate) fn same_version<K: Object>(held: Option<Arc<K>>, listed: &K) -> Option<Arc<K>> {
    let version = listed.meta().resource_version.as_deref().filter(|v| !v.is_empty())?;
    held.filter(|held| held.meta().resource_version.as_deref() == Some(version))
}

/// The `metadata.resourceVersion` of an object, or `""` when it has none.
#[must_use]
pub fn resource_version<K: Object>(obj: &K) -> &str {
    obj.meta().resource_version.as_deref().unwrap_or_default()
}

/// A resource's identity on the API server: group, version and plural name.
///
/// The core group is the empty string, as in client-go's `schema.GroupVersionResource`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[doc(alias = "GVR")]
pub struct GroupVersionResource {
    /// API group, `""` for the core group (`/api/v1`).
    pub group: String,
    /// API version within the group, for example `v1`.
    pub version: String,
    /// Plural resource name as it appears in URLs, for example `pods`.
    pub resource: String,
}

impl GroupVersionResource {
    /// Builds a group/version/resource triple.
    ///
    /// ```
    /// # use informer_runtime::GroupVersionResource;
    /// let gvr = GroupVersionResource::new("apps", "v1", "deployments");
    /// assert_eq!(gvr.to_string(), "apps/v1, Resource=deployments");
    /// ```
    #[must_use]
    pub fn new(group: &str, version: &str, resource: &str) -> Self {
        Self { group: group.to_owned(), version: version.to_owned(), resource: resource.to_owned() }
    }

    /// The group/version/resource of the Rust type `K`.
    #[must_use]
    pub fn of<K: Resource>() -> Self {
        Self::new(K::GROUP, K::VERSION, K::PLURAL)
    }

    /// `plural[.group]`, as kubectl names it (`pods`, `deployments.apps`): the name messages,
    /// logs and metrics give the resource. For code that names resources in its own messages,
    /// such as the HTTP client's discovery and lister-watcher.
    ///
    /// ```
    /// # use informer_runtime::GroupVersionResource;
    /// let gvr = GroupVersionResource::new("apps", "v1", "deployments");
    /// assert_eq!(gvr.qualified_name(), "deployments.apps");
    /// ```
    #[must_use]
    pub fn qualified_name(&self) -> String {
        qualified_name(&self.resource, &self.group)
    }

    /// `apiVersion` as its objects carry it: `group/version`, or `version` for the core group.
    /// For code that checks or writes the `apiVersion` of objects it knows only by their
    /// resource, such as the HTTP client's discovery.
    ///
    /// ```
    /// # use informer_runtime::GroupVersionResource;
    /// assert_eq!(GroupVersionResource::new("apps", "v1", "deployments").api_version(), "apps/v1");
    /// assert_eq!(GroupVersionResource::new("", "v1", "pods").api_version(), "v1");
    /// ```
    #[must_use]
    pub fn api_version(&self) -> String {
        api_version(&self.group, &self.version)
    }
}

impl fmt::Display for GroupVersionResource {
    // client-go's format, so that messages read the same in both worlds.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.group.is_empty() {
            write!(f, "{}, Resource={}", self.version, self.resource)
        } else {
            write!(f, "{}/{}, Resource={}", self.group, self.version, self.resource)
        }
    }
}

/// A resource's whole identity, known at run time: what a URL, a message and a check of the
/// objects served need.
///
/// For a Rust type, [`ApiResource::of`] reads it from the type's [`Resource`] constants; for a
/// resource learnt at run time, the API server's discovery documents tell it
/// (`informer-client`'s `Client::discover`).
///
/// ```
/// # use informer_runtime::resource::ApiResource;
/// use k8s_openapi::api::apps::v1::Deployment;
///
/// let deployments = ApiResource::of::<Deployment>();
/// assert_eq!(deployments.api_version(), "apps/v1");
/// assert_eq!(deployments.to_string(), "deployments.apps");
/// assert!(deployments.namespaced);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[doc(alias = "APIResource")]
pub struct ApiResource {
    /// API group, `""` for the core group.
    pub group: String,
    /// API version within the group.
    pub version: String,
    /// The kind of its objects, for example `Deployment`.
    pub kind: String,
    /// Plural resource name as it appears in URLs, for example `deployments`.
    pub plural: String,
    /// Whether its objects live in a namespace.
    pub namespaced: bool,
}

impl ApiResource {
    /// The identity of the Rust type `K`.
    #[must_use]
    pub fn of<K: Resource>() -> Self {
        Self {
            group: K::GROUP.to_owned(),
            version: K::VERSION.to_owned(),
            kind: K::KIND.to_owned(),
            plural: K::PLURAL.to_owned(),
            namespaced: is_namespaced::<K>(),
        }
    }

    /// `apiVersion` as objects carry it: `group/version`, or `version` for the core group.
    #[must_use]
    pub fn api_version(&self) -> String {
        api_version(&self.group, &self.version)
    }

    /// Its group, version and plural name.
    #[must_use]
    pub fn gvr(&self) -> GroupVersionResource {
        GroupVersionResource::new(&self.group, &self.version, &self.plural)
    }
}

/// `plural[.group]`, as kubectl names a resource (`pods`, `deployments.apps`).
impl fmt::Display for ApiResource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&qualified_name(&self.plural, &self.group))
    }
}

/// Makes a type you already have a [`Resource`], from one line in the crate that defines it.
///
/// For a struct with a `metadata: ObjectMeta` field that does not implement k8s-openapi's
/// traits: roots generated by kube-rs's `#[derive(CustomResource)]`, kopium's output (which is
/// such a root), or a struct written by hand. k8s-openapi's built-ins, `informer-gen`'s output
/// and `#[derive(Informer)]` types need nothing.
///
/// ```
/// use informer_runtime::{Resource, impl_resource};
/// use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
///
/// // The root that kube-rs's
/// // `#[kube(group = "example.com", version = "v1", kind = "Foo", namespaced)]` generates
/// // has this shape, and implements `kube::Resource`.
/// #[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
/// pub struct Foo {
///     pub metadata: ObjectMeta,
///     pub spec: FooSpec,
/// }
/// #[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
/// pub struct FooSpec {
///     pub size: i32,
/// }
///
/// impl_resource!(Foo, group = "example.com", version = "v1", kind = "Foo", plural = "foos", namespaced);
///
/// assert!(informer_runtime::resource::is_namespaced::<Foo>());
/// assert_eq!(Foo::API_VERSION, "example.com/v1");
/// assert_eq!(Foo::PLURAL, "foos");
/// ```
///
/// The scope is `namespaced` or `cluster`; the core group is `group = ""`. The values must be
/// the ones the CRD (or kube-rs's `#[kube(...)]` attribute) declares: the runtime builds URLs
/// from them and checks `apiVersion` and `kind` of what the server sends against them.
///
/// Writes through `informer-client`'s `Client` send the type's `Serialize` output as it is, so it
/// must write `apiVersion` and `kind` (kube-rs's roots do); informers only read. The type is a
/// [`WholeObject`].
///
/// # Views
///
/// `impl_resource!(PodView, view = Pod)` makes a struct with some of `Pod`'s fields a view of
/// pods (see the [module docs](self#whole-objects-metadata-and-views)): it has the identity of
/// the viewed type (any [`Resource`]), its informer lists and watches pods and decodes each
/// straight into `PodView`, and it is not a [`WholeObject`], so the client cannot write it.
/// `#[derive(Informer)]` with `#[informer(view = Pod)]` writes the same impl, and `Serialize`.
///
/// ```
/// use informer_runtime::{Resource, impl_resource};
/// use k8s_openapi::api::core::v1::Pod;
/// use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
///
/// /// A pod's name, labels and node: nothing else is decoded.
/// #[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
/// pub struct PodView {
///     pub metadata: ObjectMeta,
///     pub spec: Option<PodViewSpec>,
/// }
/// #[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
/// pub struct PodViewSpec {
///     #[serde(rename = "nodeName")]
///     pub node_name: Option<String>,
/// }
///
/// impl_resource!(PodView, view = Pod);
///
/// assert_eq!((PodView::API_VERSION, PodView::KIND, PodView::PLURAL), ("v1", "Pod", "pods"));
/// let json = r#"{"kind":"Pod","metadata":{"name":"web-0"},"spec":{"nodeName":"n1","containers":[]}}"#;
/// let view: PodView = serde_json::from_str(json).unwrap();
/// assert_eq!(view.spec.and_then(|s| s.node_name).as_deref(), Some("n1"));
/// ```
#[macro_export]
macro_rules! impl_resource {
    (@scope namespaced) => { $crate::__private::k8s_openapi::NamespaceResourceScope };
    (@scope cluster) => { $crate::__private::k8s_openapi::ClusterResourceScope };
    (@scope $other:ident) => {
        ::core::compile_error!(::core::concat!(
            "unknown scope `", ::core::stringify!($other), "`: write `namespaced` or `cluster`"
        ))
    };
    (@object $ty:ty) => {
        #[automatically_derived]
        impl $crate::Object for $ty {
            fn meta(&self) -> &$crate::__private::k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                &self.metadata
            }

            fn meta_mut(&mut self) -> &mut $crate::__private::k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                &mut self.metadata
            }
        }
    };
    (@impl $ty:ty, $group:literal, $api_version:expr, $version:literal, $kind:literal, $plural:literal, $scope:ident) => {
        #[automatically_derived]
        impl $crate::Resource for $ty {
            const API_VERSION: &'static str = $api_version;
            const GROUP: &'static str = $group;
            const VERSION: &'static str = $version;
            const KIND: &'static str = $kind;
            const PLURAL: &'static str = $plural;
            type Scope = $crate::impl_resource!(@scope $scope);
        }

        $crate::impl_resource!(@object $ty);

        #[automatically_derived]
        impl $crate::resource::WholeObject for $ty {}
    };
    // A view: the viewed type's identity, and no `WholeObject`.
    ($ty:ty, view = $viewed:ty $(,)?) => {
        #[automatically_derived]
        impl $crate::Resource for $ty {
            const API_VERSION: &'static str = <$viewed as $crate::Resource>::API_VERSION;
            const GROUP: &'static str = <$viewed as $crate::Resource>::GROUP;
            const VERSION: &'static str = <$viewed as $crate::Resource>::VERSION;
            const KIND: &'static str = <$viewed as $crate::Resource>::KIND;
            const PLURAL: &'static str = <$viewed as $crate::Resource>::PLURAL;
            type Scope = <$viewed as $crate::Resource>::Scope;
            const PARTIAL: bool = true;
        }

        $crate::impl_resource!(@object $ty);
    };
    // The core group: `apiVersion` is the bare version.
    ($ty:ty, group = "", version = $version:literal, kind = $kind:literal, plural = $plural:literal, $scope:ident $(,)?) => {
        $crate::impl_resource!(@impl $ty, "", $version, $version, $kind, $plural, $scope);
    };
    ($ty:ty, group = $group:literal, version = $version:literal, kind = $kind:literal, plural = $plural:literal, $scope:ident $(,)?) => {
        $crate::impl_resource!(@impl $ty, $group, ::core::concat!($group, "/", $version), $version, $kind, $plural, $scope);
    };
}

/// The storage key of an object: `namespace/name`, or `name` for a cluster-scoped object.
///
/// Keys are reference-counted strings: the store, every index and the queue share one allocation
/// per object.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[doc(alias = "MetaNamespaceKeyFunc")]
pub struct ObjectKey(Arc<str>);

impl ObjectKey {
    /// The key of `obj`, from its metadata.
    ///
    /// ```
    /// # use informer_runtime::ObjectKey;
    /// # use k8s_openapi::api::core::v1::Pod;
    /// # use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    /// let pod = Pod {
    ///     metadata: ObjectMeta {
    ///         namespace: Some("default".into()),
    ///         name: Some("web-0".into()),
    ///         ..ObjectMeta::default()
    ///     },
    ///     ..Pod::default()
    /// };
    /// assert_eq!(ObjectKey::of(&pod).as_str(), "default/web-0");
    /// ```
    #[must_use]
    pub fn of<K: Object>(obj: &K) -> Self {
        let meta = obj.meta();
        Self::new(meta.namespace.as_deref(), meta.name.as_deref().unwrap_or_default())
    }

    /// The key for `name` in `namespace` (`None` or `""` for cluster-scoped objects).
    #[must_use]
    pub fn new(namespace: Option<&str>, name: &str) -> Self {
        match namespace {
            Some(ns) if !ns.is_empty() => Self(format!("{ns}/{name}").into()),
            _ => Self(name.into()),
        }
    }

    /// The key as a string.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Splits the key into namespace (`""` for cluster-scoped) and name.
    ///
    /// # Errors
    ///
    /// [`KeyError`] when the key has more than one `/`.
    #[doc(alias = "SplitMetaNamespaceKey")]
    pub fn split(&self) -> Result<(&str, &str), KeyError> {
        split_meta_namespace_key(&self.0)
    }
}

impl fmt::Debug for ObjectKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<&str> for ObjectKey {
    fn from(key: &str) -> Self {
        Self(key.into())
    }
}

impl From<String> for ObjectKey {
    fn from(key: String) -> Self {
        Self(key.into())
    }
}

impl Borrow<str> for ObjectKey {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for ObjectKey {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

/// A key that is not `name` or `namespace/name`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unexpected key format: {key:?} (want \"name\" or \"namespace/name\")")]
pub struct KeyError {
    /// The offending key.
    pub key: String,
}

/// Splits `namespace/name` into its parts; `name` alone gives `("", name)`.
///
/// # Errors
///
/// [`KeyError`] when the key has more than one `/`.
///
/// ```
/// # use informer_runtime::store::split_meta_namespace_key;
/// assert_eq!(split_meta_namespace_key("kube-system/coredns").unwrap(), ("kube-system", "coredns"));
/// assert_eq!(split_meta_namespace_key("node-1").unwrap(), ("", "node-1"));
/// assert!(split_meta_namespace_key("a/b/c").is_err());
/// ```
pub fn split_meta_namespace_key(key: &str) -> Result<(&str, &str), KeyError> {
    let mut parts = key.splitn(3, '/');
    match (parts.next(), parts.next(), parts.next()) {
        (Some(name), None, None) => Ok(("", name)),
        (Some(ns), Some(name), None) => Ok((ns, name)),
        _ => Err(KeyError { key: key.to_owned() }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::apps::v1::Deployment;
    use k8s_openapi::api::core::v1::{Namespace, Pod};

    #[test]
    fn scope_follows_k8s_openapi() {
        assert!(is_namespaced::<Pod>());
        assert!(!is_namespaced::<Namespace>());
    }

    /// A view of deployments, by `impl_resource!`.
    #[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
    struct DeploymentView {
        metadata: ObjectMeta,
    }
    crate::impl_resource!(DeploymentView, view = Deployment);

    #[test]
    fn a_view_has_the_identity_of_the_viewed_type_and_is_partial() {
        type V = DeploymentView;
        assert_eq!(
            (V::API_VERSION, V::GROUP, V::VERSION, V::KIND, V::PLURAL),
            ("apps/v1", "apps", "v1", "Deployment", "deployments")
        );
        assert_eq!(GroupVersionResource::of::<V>(), GroupVersionResource::of::<Deployment>());
        assert!(is_namespaced::<V>());
        const { assert!(V::PARTIAL && !V::METADATA_ONLY) };
        const { assert!(!Deployment::PARTIAL) };
        const { assert!(crate::metadata::PartialObjectMetadata::<Pod>::PARTIAL) };
    }

    #[test]
    fn gvr_of_builtins() {
        assert_eq!(GroupVersionResource::of::<Pod>(), GroupVersionResource::new("", "v1", "pods"));
        assert_eq!(GroupVersionResource::of::<Pod>().to_string(), "v1, Resource=pods");
        assert_eq!(
            GroupVersionResource::of::<Deployment>().to_string(),
            "apps/v1, Resource=deployments"
        );
    }
}
