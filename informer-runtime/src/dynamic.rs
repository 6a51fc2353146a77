//! Informers of resources known only at run time: [`DynamicObject`] (client-go's
//! `dynamicinformer` and `unstructured.Unstructured`).
//!
//! Generic tools (dashboards, policy engines, backup tools) learn the resources they watch at
//! run time: from a command line, a configuration, the CRDs a cluster has. Their informers hold
//! [`DynamicObject`]s: the metadata typed (so keys, namespaces, labels, indices and selectors
//! work as for any informer), the rest kept as JSON.
//!
//! The factory makes them by group, version and resource:
//! [`SharedInformerFactory::dynamic_informer`](crate::SharedInformerFactory::dynamic_informer)
//! (and [`dynamic_metadata_informer`](crate::SharedInformerFactory::dynamic_metadata_informer)
//! for metadata alone), and
//! [`for_resource`](crate::SharedInformerFactory::for_resource) falls back to one for a
//! resource no Rust type was asked for. Handlers, listers, indices, resync, transforms and
//! compact storage are those of every informer. The kind and scope of the resource come from
//! the API server's discovery when the informer first lists; a resource the server does not
//! serve yet (a CRD not installed) is an error that says so, retried with backoff until it is
//! served. To find a resource by the name kubectl takes (`deploy`, `widgets.example.com`), use
//! `informer-client`'s `Client::resolve`.
//!
//! ```no_run
//! use std::sync::Arc;
//! use informer_runtime::{GroupVersionResource, HandlerFuncs, ListWatchSource, SharedInformerFactory};
//! use informer_runtime::dynamic::DynamicObject;
//!
//! # fn run(source: impl ListWatchSource) -> Result<(), Box<dyn std::error::Error>> {
//! // `source`: an `informer_client::Client`, for example.
//! let factory = SharedInformerFactory::new(source);
//! let widgets = factory.dynamic_informer(&GroupVersionResource::new("example.com", "v1", "widgets"))?;
//! widgets.add_event_handler(HandlerFuncs::new().on_add(|w: Arc<DynamicObject>, _| {
//!     println!("{} {:?}: size {}", w.kind(), w.metadata.name, w.data["spec"]["size"]);
//! }))?;
//! factory.start();
//! # Ok(()) }
//! ```

use std::fmt;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::de::{self, DeserializeOwned, MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use crate::resource::{ApiResource, Object, Resource};

/// An object of any resource: its type and metadata typed, everything else as JSON.
///
/// What a dynamic informer caches (see the [module documentation](self)). Its JSON is the
/// object's: `apiVersion`, `kind` and `metadata` are read into their fields, every other member
/// (`spec`, `status`, `data`, ...) is kept in [`data`](Self::data), and serializing writes them
/// all back. Informers fill `api_version` and `kind` in when the server leaves them out (it
/// does for the items of lists of built-in kinds), so a handler can always tell what it got.
///
/// ```
/// use informer_runtime::dynamic::DynamicObject;
/// use k8s_openapi::api::core::v1::ConfigMap;
///
/// let json = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"settings"},"data":{"mode":"fast"}}"#;
/// let object: DynamicObject = serde_json::from_str(json).unwrap();
/// assert_eq!((object.kind(), object.metadata.name.as_deref()), ("ConfigMap", Some("settings")));
/// assert_eq!(object.data["data"]["mode"], "fast");
///
/// let config_map: ConfigMap = object.try_parse().unwrap();
/// assert_eq!(config_map.data.unwrap()["mode"], "fast");
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
#[doc(alias = "Unstructured")]
pub struct DynamicObject {
    /// `apiVersion`: `group/version`, or `version` for the core group.
    pub api_version: Option<String>,
    /// `kind`.
    pub kind: Option<String>,
    /// The object's metadata.
    pub metadata: ObjectMeta,
    /// Every other member of the object (`spec`, `status`, ...), as JSON.
    pub data: Map<String, Value>,
}

impl DynamicObject {
    /// A new object of `resource` named `name`, with no data; set `metadata.namespace` for a
    /// namespaced resource.
    #[must_use]
    pub fn new(name: &str, resource: &ApiResource) -> Self {
        Self {
            api_version: Some(resource.api_version()),
            kind: Some(resource.kind.clone()),
            metadata: ObjectMeta { name: Some(name.to_owned()), ..ObjectMeta::default() },
            data: Map::new(),
        }
    }

    /// Its `kind`, `""` when it has none.
    #[must_use]
    pub fn kind(&self) -> &str {
        self.kind.as_deref().unwrap_or_default()
    }

    /// Its `apiVersion`, `""` when it has none.
    #[must_use]
    pub fn api_version(&self) -> &str {
        self.api_version.as_deref().unwrap_or_default()
    }

    /// The object as a typed resource, when it is one (its `apiVersion` and `kind` are `K`'s,
    /// or absent).
    ///
    /// # Errors
    ///
    /// When the object is of another kind, or its JSON does not decode as `K`: the error names
    /// what did not match.
    pub fn try_parse<K: Resource + DeserializeOwned>(&self) -> Result<K, ParseError> {
        let kind_matches = self.kind.as_deref().is_none_or(|k| k == K::KIND);
        let version_matches = self.api_version.as_deref().is_none_or(|v| v == K::API_VERSION);
        if !kind_matches || !version_matches {
            return Err(ParseError::OtherKind {
                expected: format!("{}/{}", K::API_VERSION, K::KIND),
                got: format!("{}/{}", self.api_version(), self.kind()),
            });
        }
        let value = serde_json::to_value(self).map_err(ParseError::Json)?;
        serde_json::from_value(value).map_err(ParseError::Json)
    }
}

/// Why [`DynamicObject::try_parse`] failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ParseError {
    /// The object is of another kind.
    #[error("the object is a {got}, not a {expected}")]
    OtherKind {
        /// The type asked for, `apiVersion/kind`.
        expected: String,
        /// The object's `apiVersion/kind`.
        got: String,
    },
    /// Its JSON does not decode as the type asked for.
    #[error("the object does not decode: {0}")]
    Json(#[source] serde_json::Error),
}

impl Object for DynamicObject {
    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }

    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }

    fn fill_type(&mut self, api_version: &str, kind: &str) {
        if self.api_version.is_none() {
            self.api_version = Some(api_version.to_owned());
        }
        if self.kind.is_none() {
            self.kind = Some(kind.to_owned());
        }
    }
}

/// The members [`DynamicObject`] keeps in fields of their own.
const TYPED_MEMBERS: [&str; 3] = ["apiVersion", "kind", "metadata"];

impl Serialize for DynamicObject {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        if let Some(api_version) = &self.api_version {
            map.serialize_entry("apiVersion", api_version)?;
        }
        if let Some(kind) = &self.kind {
            map.serialize_entry("kind", kind)?;
        }
        map.serialize_entry("metadata", &self.metadata)?;
        // The typed members are written from their fields only: a `kind` put in `data` would
        // make a second, conflicting member.
        let members = self.data.iter().filter(|(key, _)| !TYPED_MEMBERS.contains(&key.as_str()));
        for (key, value) in members {
            map.serialize_entry(key, value)?;
        }
        map.end()
    }
}

// By hand rather than with `#[serde(flatten)]`, which buffers every member into serde's
// private `Content` before deciding where it goes: this reads each member once, straight into
// its place.
impl<'de> Deserialize<'de> for DynamicObject {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ObjectVisitor;

        impl<'de> Visitor<'de> for ObjectVisitor {
            type Value = DynamicObject;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a Kubernetes object")
            }

            fn visit_map<A: MapAccess<'de>>(
                self,
                mut access: A,
            ) -> Result<DynamicObject, A::Error> {
                let mut object = DynamicObject::default();
                let (mut api_version, mut kind, mut metadata) = (None, None, None);
                while let Some(key) = access.next_key::<String>()? {
                    // Duplicates are refused, as serde's derive refuses them in typed objects: a
                    // second `kind` must not pass for the object's kind.
                    match key.as_str() {
                        "apiVersion" => {
                            if api_version.is_some() {
                                return Err(de::Error::duplicate_field("apiVersion"));
                            }
                            api_version = Some(access.next_value::<Option<String>>()?);
                        }
                        "kind" => {
                            if kind.is_some() {
                                return Err(de::Error::duplicate_field("kind"));
                            }
                            kind = Some(access.next_value::<Option<String>>()?);
                        }
                        "metadata" => {
                            if metadata.is_some() {
                                return Err(de::Error::duplicate_field("metadata"));
                            }
                            metadata = Some(access.next_value::<Option<ObjectMeta>>()?);
                        }
                        _ => {
                            let value = access.next_value::<Value>()?;
                            object.data.insert(key, value);
                        }
                    }
                }
                object.api_version = api_version.flatten();
                object.kind = kind.flatten();
                object.metadata = metadata.flatten().unwrap_or_default();
                Ok(object)
            }
        }

        deserializer.deserialize_map(ObjectVisitor)
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::apps::v1::Deployment;
    use k8s_openapi::api::core::v1::Pod;
    use serde_json::json;

    use super::*;

    #[test]
    fn json_round_trips_exactly() {
        let json = json!({
            "apiVersion": "example.com/v1",
            "kind": "Widget",
            "metadata": {"name": "w", "namespace": "ns", "labels": {"a": "b"}},
            "spec": {"size": 3, "nested": {"list": [1, "two", null]}},
            "status": {"ready": true},
        });
        let object: DynamicObject = serde_json::from_value(json.clone()).unwrap();
        assert_eq!(object.kind(), "Widget");
        assert_eq!(object.metadata.labels.as_ref().unwrap()["a"], "b");
        assert_eq!(object.data.keys().collect::<Vec<_>>(), ["spec", "status"]);
        assert_eq!(serde_json::to_value(&object).unwrap(), json);
    }

    #[test]
    fn an_object_without_type_or_metadata_decodes() {
        let object: DynamicObject = serde_json::from_str(r#"{"spec":{}}"#).unwrap();
        assert_eq!((object.api_version.as_deref(), object.kind.as_deref()), (None, None));
        assert_eq!(object.metadata, ObjectMeta::default());
        let object: DynamicObject = serde_json::from_str(r#"{"metadata":null}"#).unwrap();
        assert_eq!(object.metadata, ObjectMeta::default());
        assert!(serde_json::from_str::<DynamicObject>(r#"{"metadata":{},"metadata":{}}"#).is_err());
        assert!(serde_json::from_str::<DynamicObject>(r#"{"kind":"A","kind":"B"}"#).is_err());
        assert!(
            serde_json::from_str::<DynamicObject>(r#"{"apiVersion":"v1","apiVersion":"v2"}"#)
                .is_err()
        );
        assert!(serde_json::from_str::<DynamicObject>("[]").is_err());
    }

    #[test]
    fn members_put_in_data_never_duplicate_the_typed_ones() {
        let mut object = DynamicObject::new("w", &ApiResource::of::<Pod>());
        object.data.insert("kind".to_owned(), json!("Other"));
        object.data.insert("spec".to_owned(), json!({}));
        let json = serde_json::to_string(&object).unwrap();
        assert_eq!(json.matches("\"kind\"").count(), 1, "{json}");
        let back: DynamicObject = serde_json::from_str(&json).unwrap();
        assert_eq!(back.kind(), "Pod");
    }

    #[test]
    fn fill_type_sets_only_what_is_missing() {
        let mut object: DynamicObject = serde_json::from_str(r#"{"kind":"Pod"}"#).unwrap();
        object.fill_type("v1", "Other");
        assert_eq!((object.api_version(), object.kind()), ("v1", "Pod"));
    }

    #[test]
    fn try_parse_checks_the_kind() {
        let object = DynamicObject::new("web", &ApiResource::of::<Pod>());
        assert_eq!(object.try_parse::<Pod>().unwrap().metadata.name.as_deref(), Some("web"));
        let error = object.try_parse::<Deployment>().unwrap_err();
        assert_eq!(error.to_string(), "the object is a v1/Pod, not a apps/v1/Deployment");
    }
}
