//! What the runtime needs to know about a resource type: its metadata and its identity.
//!
//! Every object that flows from the [reflector](crate::reflector) to a handler is a [`Resource`].
//! The trait is implemented for every type that implements k8s-openapi's
//! [`Resource`](k8s_openapi::Resource) and [`Metadata`](k8s_openapi::Metadata) traits with
//! [`ObjectMeta`]: all of k8s-openapi's built-in kinds, and custom resource types that implement
//! those two traits (as `informer-derive` and `informer-gen` generate them).

use std::any::TypeId;
use std::fmt;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::Serialize;
use serde::de::DeserializeOwned;

/// A Kubernetes resource type an informer can cache.
///
/// This is an alias trait: it has no methods of its own and is implemented for every type that
/// satisfies its supertraits, so a type opts in by implementing k8s-openapi's
/// [`Resource`](k8s_openapi::Resource) (identity: group, version, kind, plural, scope) and
/// [`Metadata<Ty = ObjectMeta>`](k8s_openapi::Metadata).
///
/// `Clone` is needed only where an object must be changed while shared (a transform applied to
/// an object the source still holds); the hot path shares objects as `Arc<K>` and never clones.
pub trait Resource:
    k8s_openapi::Resource<Scope: 'static>
    + k8s_openapi::Metadata<Ty = ObjectMeta>
    + Clone
    + Serialize
    + DeserializeOwned
    + Send
    + Sync
    + 'static
{
}

impl<T> Resource for T where
    T: k8s_openapi::Resource<Scope: 'static>
        + k8s_openapi::Metadata<Ty = ObjectMeta>
        + Clone
        + Serialize
        + DeserializeOwned
        + Send
        + Sync
        + 'static
{
}

/// Whether objects of `K` live in a namespace.
#[must_use]
pub fn is_namespaced<K: Resource>() -> bool {
    TypeId::of::<K::Scope>() == TypeId::of::<k8s_openapi::NamespaceResourceScope>()
}

/// The `metadata.resourceVersion` of an object, or `""` when it has none.
#[must_use]
pub fn resource_version<K: Resource>(obj: &K) -> &str {
    obj.metadata().resource_version.as_deref().unwrap_or_default()
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
    pub fn of<K: k8s_openapi::Resource>() -> Self {
        Self::new(K::GROUP, K::VERSION, K::URL_PATH_SEGMENT)
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

/// Makes a type you already have a [`Resource`]: implements k8s-openapi's `Resource`,
/// `ListableResource` and `Metadata` for a struct with a `metadata: ObjectMeta` field.
///
/// k8s-openapi's built-ins, `informer-gen`'s output and `#[derive(Informer)]` types need
/// nothing. For a struct written by hand or by another generator, one line in the crate that
/// defines it makes it usable with every part of this crate:
///
/// ```
/// use informer_runtime::impl_resource;
/// use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
///
/// // As kube-derive generates it from `#[kube(group = "example.com", version = "v1", kind = "Foo", namespaced)]`.
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
/// fn cached<K: informer_runtime::Resource>() {}
/// cached::<Foo>();
/// assert!(informer_runtime::resource::is_namespaced::<Foo>());
/// assert_eq!(<Foo as k8s_openapi::Resource>::API_VERSION, "example.com/v1");
/// ```
///
/// The scope is `namespaced` or `cluster`. The type's `Serialize` must write `apiVersion` and
/// `kind` for writes through [`Client`](crate::Client) to be accepted by an API server;
/// informers only read.
///
/// Not for roots generated by kube-rs's `#[derive(CustomResource)]` (or kopium): kube implements
/// `kube::Resource` for every k8s-openapi resource, so those types cannot also implement
/// k8s-openapi's traits. Generate their types with `informer-gen` from the CRD instead.
#[macro_export]
macro_rules! impl_resource {
    ($ty:ty, group = $group:literal, version = $version:literal, kind = $kind:literal, plural = $plural:literal, namespaced $(,)?) => {
        $crate::impl_resource!(@impl $ty, $group, $version, $kind, $plural, ::k8s_openapi::NamespaceResourceScope);
    };
    ($ty:ty, group = $group:literal, version = $version:literal, kind = $kind:literal, plural = $plural:literal, cluster $(,)?) => {
        $crate::impl_resource!(@impl $ty, $group, $version, $kind, $plural, ::k8s_openapi::ClusterResourceScope);
    };
    (@impl $ty:ty, $group:literal, $version:literal, $kind:literal, $plural:literal, $scope:ty) => {
        #[automatically_derived]
        impl ::k8s_openapi::Resource for $ty {
            const API_VERSION: &'static str = ::core::concat!($group, "/", $version);
            const GROUP: &'static str = $group;
            const KIND: &'static str = $kind;
            const VERSION: &'static str = $version;
            const URL_PATH_SEGMENT: &'static str = $plural;
            type Scope = $scope;
        }

        #[automatically_derived]
        impl ::k8s_openapi::ListableResource for $ty {
            const LIST_KIND: &'static str = ::core::concat!($kind, "List");
        }

        #[automatically_derived]
        impl ::k8s_openapi::Metadata for $ty {
            type Ty = ::k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

            fn metadata(&self) -> &Self::Ty {
                &self.metadata
            }

            fn metadata_mut(&mut self) -> &mut Self::Ty {
                &mut self.metadata
            }
        }
    };
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
