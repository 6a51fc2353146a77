//! Metadata-only informers: cache only the `ObjectMeta` of a kind, as client-go's
//! `metadatainformer` and kube-rs's `metadata_watcher` do.
//!
//! A controller that reads only names, labels, annotations, owner references or finalizers needs
//! none of an object's `spec` or `status`, which are most of its bytes. Ask the factory for the
//! informer of [`PartialObjectMetadata<K>`] instead of `K`:
//!
//! ```
//! use informer_runtime::SharedInformerFactory;
//! use informer_runtime::metadata::PartialObjectMetadata;
//! use informer_runtime::testing::FakeSource;
//! use k8s_openapi::api::core::v1::Pod;
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let client = FakeSource::new(); // or an HTTP `Client`
//! let factory = SharedInformerFactory::new(client);
//! let pods = factory.informer::<PartialObjectMetadata<Pod>>(); // handlers get Arc<PartialObjectMetadata<Pod>>
//! let lister = factory.lister::<PartialObjectMetadata<Pod>>();
//! # drop((pods, lister));
//! # }
//! ```
//!
//! The type has `K`'s identity (group, version, kind, plural and scope), so URLs, namespaces,
//! selectors, listers (`lister.namespace("default").get("web-0")`), resync and transforms work
//! exactly as for `K`. What changes is what travels: the HTTP client lists with
//! `Accept: application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1` and watches with
//! `Accept: application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1`, so the API server
//! sends `{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{...}}` for
//! each object, and the cache holds nothing but metadata (without `managedFields`, unless the
//! factory [keeps them](crate::factory::FactoryBuilder::keep_managed_fields)).
//!
//! A metadata informer is its own informer, with its own list and watch: a program that asks
//! for both `Pod` and `PartialObjectMetadata<Pod>` watches pods twice. Where the factory knows
//! informers by resource alone, the informer of whole objects comes first
//! ([`for_resource`](crate::SharedInformerFactory::for_resource)), and a resource counts as
//! synced when both have ([`wait_for_cache_sync`](crate::SharedInformerFactory::wait_for_cache_sync)).

use std::fmt;
use std::marker::PhantomData;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde::ser::{SerializeStruct, Serializer};
use serde::{Deserialize, Serialize};

use crate::resource::{Object, Resource};

/// `apiVersion` of the objects the API server sends for metadata-only requests.
pub const API_VERSION: &str = "meta.k8s.io/v1";

/// `kind` of the objects the API server sends for metadata-only requests.
pub const KIND: &str = "PartialObjectMetadata";

/// The metadata of an object of kind `K`, and nothing else: what a metadata-only informer
/// caches (see the [module documentation](self)).
///
/// Named after the API server's `meta.k8s.io/v1` `PartialObjectMetadata`, which is what it
/// decodes; kube-rs calls the same thing `PartialObjectMeta<K>`. As a [`Resource`] it is `K`
/// (same group, version, kind, plural and scope), so it is listed, watched and looked up where
/// `K` is.
///
/// It serializes as the API server writes it:
///
/// ```
/// use informer_runtime::metadata::PartialObjectMetadata;
/// use k8s_openapi::api::core::v1::Pod;
/// use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
///
/// let web = PartialObjectMetadata::<Pod>::new(ObjectMeta { name: Some("web-0".into()), ..ObjectMeta::default() });
/// assert_eq!(
///     serde_json::to_string(&web).unwrap(),
///     r#"{"apiVersion":"meta.k8s.io/v1","kind":"PartialObjectMetadata","metadata":{"name":"web-0"}}"#,
/// );
/// // It reads its own JSON and that of a whole object alike: only `metadata` is kept.
/// let pod = r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web-0"},"spec":{"containers":[]}}"#;
/// assert_eq!(serde_json::from_str::<PartialObjectMetadata<Pod>>(pod).unwrap(), web);
/// ```
///
/// `apiVersion` and `kind` are not stored: every object of the type would carry the same two
/// strings, and saving memory is the point.
#[doc(alias = "PartialObjectMeta")]
pub struct PartialObjectMetadata<K> {
    /// The object's metadata.
    pub metadata: ObjectMeta,
    _kind: PhantomData<fn() -> K>,
}

impl<K> PartialObjectMetadata<K> {
    /// The metadata of an object of kind `K`.
    #[must_use]
    pub fn new(metadata: ObjectMeta) -> Self {
        Self { metadata, _kind: PhantomData }
    }

    /// The metadata, without the wrapper.
    #[must_use]
    pub fn into_metadata(self) -> ObjectMeta {
        self.metadata
    }
}

impl<K: Resource> Resource for PartialObjectMetadata<K> {
    const API_VERSION: &'static str = K::API_VERSION;
    const GROUP: &'static str = K::GROUP;
    const VERSION: &'static str = K::VERSION;
    const KIND: &'static str = K::KIND;
    const PLURAL: &'static str = K::PLURAL;
    type Scope = K::Scope;
    const METADATA_ONLY: bool = true;
}

impl<K: Resource> Object for PartialObjectMetadata<K> {
    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }

    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

// By hand rather than derived: derives would require `K` itself to be `Clone`, `Default`, ...
impl<K> Clone for PartialObjectMetadata<K> {
    fn clone(&self) -> Self {
        Self::new(self.metadata.clone())
    }
}

impl<K> Default for PartialObjectMetadata<K> {
    fn default() -> Self {
        Self::new(ObjectMeta::default())
    }
}

impl<K> PartialEq for PartialObjectMetadata<K> {
    fn eq(&self, other: &Self) -> bool {
        self.metadata == other.metadata
    }
}

impl<K> fmt::Debug for PartialObjectMetadata<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PartialObjectMetadata").field("metadata", &self.metadata).finish()
    }
}

impl<K> From<ObjectMeta> for PartialObjectMetadata<K> {
    fn from(metadata: ObjectMeta) -> Self {
        Self::new(metadata)
    }
}

impl<K> Serialize for PartialObjectMetadata<K> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut object = serializer.serialize_struct("PartialObjectMetadata", 3)?;
        object.serialize_field("apiVersion", API_VERSION)?;
        object.serialize_field("kind", KIND)?;
        object.serialize_field("metadata", &self.metadata)?;
        object.end()
    }
}

impl<'de, K> Deserialize<'de> for PartialObjectMetadata<K> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        // A struct, not a map: the decode-time pruning of `managedFields` recognises the
        // object's `metadata` key through `deserialize_struct`.
        deserializer.deserialize_struct(
            "PartialObjectMetadata",
            &["apiVersion", "kind", "metadata"],
            ObjectVisitor(PhantomData),
        )
    }
}

struct ObjectVisitor<K>(PhantomData<fn() -> K>);

impl<'de, K> Visitor<'de> for ObjectVisitor<K> {
    type Value = PartialObjectMetadata<K>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object with metadata")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut metadata = None;
        while let Some(key) = map.next_key::<Key>()? {
            match key {
                Key::Metadata if metadata.is_some() => {
                    return Err(de::Error::duplicate_field("metadata"));
                }
                Key::Metadata => metadata = Some(map.next_value::<Option<ObjectMeta>>()?),
                // `apiVersion` and `kind` say PartialObjectMetadata (or K's, for a whole
                // object); the type says what it is. `spec`, `status`, ...: skipped unread.
                Key::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(PartialObjectMetadata::new(metadata.flatten().unwrap_or_default()))
    }
}

/// The keys of an object this type reads.
enum Key {
    Metadata,
    Other,
}

impl<'de> Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl Visitor<'_> for KeyVisitor {
            type Value = Key;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a field name")
            }

            fn visit_str<E: de::Error>(self, name: &str) -> Result<Key, E> {
                Ok(if name == "metadata" { Key::Metadata } else { Key::Other })
            }
        }
        deserializer.deserialize_identifier(KeyVisitor)
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::{Namespace, Pod};

    use super::*;
    use crate::resource::{GroupVersionResource, is_namespaced};

    #[test]
    fn has_the_identity_of_its_kind() {
        type Meta = PartialObjectMetadata<Pod>;
        assert_eq!(
            (Meta::API_VERSION, Meta::GROUP, Meta::VERSION, Meta::KIND, Meta::PLURAL),
            ("v1", "", "v1", "Pod", "pods")
        );
        assert_eq!(GroupVersionResource::of::<Meta>(), GroupVersionResource::of::<Pod>());
        assert!(is_namespaced::<Meta>());
        assert!(!is_namespaced::<PartialObjectMetadata<Namespace>>());
        const { assert!(Meta::METADATA_ONLY && !Pod::METADATA_ONLY) };
    }

    #[test]
    fn decodes_what_the_api_server_sends_and_round_trips() {
        let wire = r#"{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"a","namespace":"n","labels":{"app":"web"},"resourceVersion":"7"}}"#;
        let meta: PartialObjectMetadata<Pod> = serde_json::from_str(wire).unwrap();
        assert_eq!(meta.metadata.name.as_deref(), Some("a"));
        assert_eq!(meta.meta().resource_version.as_deref(), Some("7"));
        let back: serde_json::Value = serde_json::to_value(&meta).unwrap();
        assert_eq!(back, serde_json::from_str::<serde_json::Value>(wire).unwrap());
    }

    #[test]
    fn metadata_missing_or_null_is_empty_and_duplicates_fail() {
        let empty: PartialObjectMetadata<Pod> = serde_json::from_str(r#"{"kind":"x"}"#).unwrap();
        assert_eq!(empty, PartialObjectMetadata::default());
        let null: PartialObjectMetadata<Pod> =
            serde_json::from_str(r#"{"metadata":null}"#).unwrap();
        assert_eq!(null, PartialObjectMetadata::default());
        assert!(
            serde_json::from_str::<PartialObjectMetadata<Pod>>(r#"{"metadata":{},"metadata":{}}"#)
                .is_err()
        );
        assert!(serde_json::from_str::<PartialObjectMetadata<Pod>>(r#"{"metadata":7}"#).is_err());
    }
}
