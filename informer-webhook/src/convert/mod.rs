//! Conversion of a kind served in several versions, through one *hub* version
//! (controller-runtime's hub and spoke): you write conversions between each other (*spoke*)
//! version and the hub, and a [`Converter`] converts any served version to any other through
//! the hub. [`Conversions`] holds the converters of every kind a webhook serves and answers
//! the API server's [`ConversionReview`](crate::conversion::ConversionReview)s.
//!
//! **Who it is for.** Authors of a kind with several versions (one struct per version, each
//! `#[derive(Informer)]`, merged into one CRD with `informer_runtime::crd::merge`) whose schemas
//! differ, so that the CRD's `conversion: None` strategy (only `apiVersion` changes) is not
//! enough. Set the CRD's conversion to the webhook with
//! [`with_conversion_webhook`](crate::crd::with_conversion_webhook), and serve `Conversions`
//! on that path ([`WebhookServerBuilder::conversion`](crate::WebhookServerBuilder::conversion)).
//!
//! # Conversions
//!
//! For each spoke `S` of hub `H`, implement `From<H> for S` and `From<S> for H` (or `TryFrom`,
//! when a value may not convert: its error's message reaches the user). The converted object
//! keeps the object's own metadata whatever the conversion does with it, as the API server
//! keeps it (it refuses a changed name, UID or namespace, and ignores other changes to
//! `metadata`); labels and annotations the conversion sets are laid over the object's own.
//!
//! # Fields a version does not know
//!
//! Going from the hub to a spoke that cannot hold a field (a field v2 added, a value v1's type
//! cannot hold), the converter records what was lost in the annotation
//! **`<group>/conversion-data`** of the converted object (`example.com/conversion-data` for
//! group `example.com`, as Cluster API keeps `cluster.x-k8s.io/conversion-data`). Converting
//! that object back to the hub restores each lost field, unless the user changed it through the
//! spoke: then the change wins. So a client that reads and writes v1 does not erase what a v2
//! client set. The annotation's value is JSON:
//!
//! ```json
//! {"hub": "example.com/v2", "lost": [{"path": "/spec/color", "value": "red"}]}
//! ```
//!
//! `path` is a JSON pointer into the hub's object, `value` the hub's value there, and
//! `roundTrip` (when present) the value the spoke gave back for it. The annotation is removed
//! when nothing is lost and whenever an object is converted to the hub. Data recorded for
//! another hub version (the hub moved) is not restored. A value there that is not such JSON
//! fails the conversion, naming the annotation: remove or repair it.
//!
//! # Example
//!
//! ```
//! use informer_webhook::conversion::ConversionRequest;
//! use informer_webhook::convert::{Conversions, Converter};
//!
//! mod v1 {
//!     use informer_derive::Informer;
//!     use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
//!     use serde::{Deserialize, Serialize};
//!
//!     #[derive(Clone, Debug, Deserialize, Informer)]
//!     #[informer(group = "example.com", version = "v1", storage = false)]
//!     pub struct Widget {
//!         pub metadata: ObjectMeta,
//!         pub spec: WidgetSpec,
//!     }
//!
//!     #[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
//!     pub struct WidgetSpec {
//!         pub size: i32,
//!     }
//! }
//!
//! mod v2 {
//!     # use informer_derive::Informer;
//!     # use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
//!     # use serde::{Deserialize, Serialize};
//!     /// The hub: the newest version, which holds everything.
//!     #[derive(Clone, Debug, Deserialize, Informer)]
//!     #[informer(group = "example.com", version = "v2")]
//!     pub struct Widget {
//!         pub metadata: ObjectMeta,
//!         pub spec: WidgetSpec,
//!     }
//!
//!     #[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
//!     pub struct WidgetSpec {
//!         pub size: i64,
//!         pub color: Option<String>,
//!     }
//! }
//!
//! impl From<v2::Widget> for v1::Widget {
//!     fn from(hub: v2::Widget) -> Self {
//!         let size = i32::try_from(hub.spec.size).unwrap_or(i32::MAX);
//!         Self { metadata: hub.metadata, spec: v1::WidgetSpec { size } }
//!     }
//! }
//!
//! impl From<v1::Widget> for v2::Widget {
//!     fn from(spoke: v1::Widget) -> Self {
//!         let spec = v2::WidgetSpec { size: spoke.spec.size.into(), color: None };
//!         Self { metadata: spoke.metadata, spec }
//!     }
//! }
//!
//! let conversions = Conversions::new().kind(Converter::<v2::Widget>::new().spoke::<v1::Widget>());
//!
//! let v2 = serde_json::json!({
//!     "apiVersion": "example.com/v2", "kind": "Widget",
//!     "metadata": {"name": "w", "uid": "1"},
//!     "spec": {"size": 3, "color": "red"},
//! });
//! let request = ConversionRequest::new("uid-1", "example.com/v1", vec![v2.clone()]);
//! let v1 = conversions.convert(&request).converted_objects.remove(0);
//! assert_eq!(v1["apiVersion"], "example.com/v1");
//! assert_eq!(v1["spec"], serde_json::json!({"size": 3}));
//! assert!(v1["metadata"]["annotations"]["example.com/conversion-data"].is_string());
//!
//! // Back to v2: the color v1 could not hold is there again.
//! let request = ConversionRequest::new("uid-2", "example.com/v2", vec![v1]);
//! assert_eq!(conversions.convert(&request).converted_objects, [v2]);
//! ```
//!
//! # For a derive
//!
//! Everything a version needs is [`Version`], which `#[derive(Informer)]` types have. A kind's
//! hub may implement [`Hub`], naming its spokes once: then
//! [`Conversions::hub`] registers the kind. `#[derive(Informer)]` emits that impl for the
//! version marked `#[informer(..., hub(v1::Widget, ...))]` (with [`KindHub`] for the hub and
//! each spoke, and the CRD with the webhook, `v2::Widget::crd_with_conversion(target,
//! ca_bundle)`); see informer-derive's "Conversion through a hub". informer-gen's
//! `Generator::conversion_hubs(true)` emits it for each generated kind, its storage version as
//! the hub. By hand, it is:
//!
//! ```
//! # use informer_webhook::convert::{Conversions, Converter, Hub};
//! # mod v1 {
//! #     #[derive(Clone, Debug, serde::Deserialize, informer_derive::Informer)]
//! #     #[informer(group = "example.com", version = "v1", storage = false)]
//! #     pub struct Widget { pub metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta }
//! # }
//! # mod v2 {
//! #     #[derive(Clone, Debug, serde::Deserialize, informer_derive::Informer)]
//! #     #[informer(group = "example.com", version = "v2")]
//! #     pub struct Widget { pub metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta }
//! # }
//! # impl From<v1::Widget> for v2::Widget { fn from(w: v1::Widget) -> Self { Self { metadata: w.metadata } } }
//! # impl From<v2::Widget> for v1::Widget { fn from(w: v2::Widget) -> Self { Self { metadata: w.metadata } } }
//! #[automatically_derived]
//! impl informer_webhook::convert::Hub for v2::Widget {
//!     fn converter() -> informer_webhook::convert::Converter<Self> {
//!         informer_webhook::convert::Converter::new().spoke::<v1::Widget>()
//!     }
//! }
//!
//! let conversions = Conversions::new().hub::<v2::Widget>();
//! # let _ = conversions;
//! ```

mod lost;

use std::collections::{BTreeMap, HashMap};
use std::fmt::Display;
use std::marker::PhantomData;
use std::sync::Arc;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::conversion::{ConversionRequest, ConversionResponse};
use lost::ConversionData;

/// A version of a kind, as the converter handles it: a Kubernetes resource type that
/// serialises and deserialises. Every `#[derive(Informer)]` type is one (with
/// `#[derive(Deserialize)]`), as is any k8s-openapi type.
pub trait Version:
    k8s_openapi::Resource + Serialize + DeserializeOwned + Send + Sync + 'static
{
}

impl<T: k8s_openapi::Resource + Serialize + DeserializeOwned + Send + Sync + 'static> Version
    for T
{
}

/// The hub version of a kind that names its spokes: what a derive emits for a kind's hub, so
/// that [`Conversions::hub`] registers the kind; see [for a derive](self#for-a-derive).
pub trait Hub: Version + Sized {
    /// The kind's converter: this hub and every spoke.
    fn converter() -> Converter<Self>;
}

/// The hub of a version's kind: `#[derive(Informer)]` with `hub(...)` implements it for the hub
/// (as its own hub) and for each spoke it names.
///
/// It is how a kind with two hubs is refused at compile time: two hubs that name each other (or
/// a spoke in common) implement it twice for one type, and rustc reports *conflicting
/// implementations of trait `KindHub`*. It also finds a version's converter:
/// `Conversions::new().hub::<<v1::Widget as KindHub>::Hub>()`.
pub trait KindHub: Version {
    /// The hub version of this version's kind.
    type Hub: Hub;
}

/// Why an object did not convert. Each message names the object's version and what to fix.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConvertError {
    /// The object is not a JSON object, or has no `apiVersion` or `kind`.
    #[error("the object {what}: every object to convert is a whole Kubernetes object")]
    Malformed {
        /// What is wrong: `has no apiVersion`, `has no kind`, `is not a JSON object`.
        what: &'static str,
    },
    /// No converter was registered for the object's group and kind.
    #[error(
        "no conversion for kind {kind} of group {group:?}: this webhook converts {known}; \
         register a Converter for it"
    )]
    UnknownKind {
        /// The object's group.
        group: String,
        /// The object's kind.
        kind: String,
        /// The kinds there are converters for (`Widget.example.com, ...`).
        known: String,
    },
    /// The object's version, or the desired one, is not a version the kind's converter knows.
    #[error(
        "{api_version} is not a version of {kind} this webhook converts (it converts {known}): \
         add the version to the kind's Converter with .spoke::<T>()"
    )]
    UnknownVersion {
        /// The version asked for or found.
        api_version: String,
        /// The kind.
        kind: String,
        /// The versions the converter knows.
        known: String,
    },
    /// The object does not decode as its version's type.
    #[error("the object does not decode as {api_version} {kind} ({type_name}): {source}")]
    Decode {
        /// The version.
        api_version: String,
        /// The kind.
        kind: String,
        /// The Rust type of the version.
        type_name: &'static str,
        /// What serde said.
        #[source]
        source: serde_json::Error,
    },
    /// A type did not serialise.
    #[error("{type_name} does not serialise as JSON: {source}")]
    Encode {
        /// The Rust type.
        type_name: &'static str,
        /// What serde said.
        #[source]
        source: serde_json::Error,
    },
    /// A `TryFrom` conversion between a spoke and the hub failed.
    #[error("converting {from} to {to} failed: {message}")]
    Convert {
        /// The version converted from.
        from: String,
        /// The version converted to.
        to: String,
        /// The conversion's error, as its `Display` writes it.
        message: String,
    },
    /// The conversion-data annotation does not hold what this crate writes there.
    #[error(
        "the annotation {annotation} does not hold conversion data ({source}): remove it or \
         restore what a conversion wrote there"
    )]
    ConversionData {
        /// The annotation's name.
        annotation: String,
        /// What serde said.
        #[source]
        source: serde_json::Error,
    },
}

/// A function from a version's object to another's, both as JSON.
type Step = fn(&Value, &str) -> Result<Value, ConvertError>;

/// How the converter reaches one version: `None` for the hub itself.
#[derive(Clone, Copy)]
struct Spoke {
    to_hub: Step,
    from_hub: Step,
}

/// Converts the versions of one kind through the hub `H`; see the [module docs](self).
#[must_use]
pub struct Converter<H> {
    /// Every version by `apiVersion`, the hub's with `None`.
    versions: BTreeMap<String, Option<Spoke>>,
    annotation: String,
    hub: PhantomData<fn() -> H>,
}

impl<H: Version> Default for Converter<H> {
    fn default() -> Self {
        Self::new()
    }
}

impl<H> std::fmt::Debug for Converter<H> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Converter")
            .field("versions", &self.versions.keys().collect::<Vec<_>>())
            .field("annotation", &self.annotation)
            .finish()
    }
}

impl<H: Version> Converter<H> {
    /// A converter of `H`'s kind with `H` as the hub and no spoke yet.
    pub fn new() -> Self {
        Self {
            versions: BTreeMap::from([(H::API_VERSION.to_owned(), None)]),
            annotation: annotation(H::GROUP),
            hub: PhantomData,
        }
    }

    /// Adds the spoke version `S`, converted to and from the hub by `TryFrom` (which every
    /// `From` gives).
    ///
    /// # Panics
    ///
    /// If `S` is of another group or kind than the hub, or its version was added before: a
    /// mistake in the program, found the first time it runs.
    pub fn spoke<S>(mut self) -> Self
    where
        S: Version + TryFrom<H>,
        H: TryFrom<S>,
        <S as TryFrom<H>>::Error: Display,
        <H as TryFrom<S>>::Error: Display,
    {
        assert!(
            S::GROUP == H::GROUP && S::KIND == H::KIND,
            "Converter::<{}>::spoke::<{}>(): {} is not a version of {}.{}",
            std::any::type_name::<H>(),
            std::any::type_name::<S>(),
            S::API_VERSION,
            H::KIND,
            H::GROUP,
        );
        let spoke = Spoke { to_hub: to_hub::<H, S>, from_hub: from_hub::<H, S> };
        let added = self.versions.insert(S::API_VERSION.to_owned(), Some(spoke));
        assert!(
            added.is_none(),
            "Converter::<{}>::spoke::<{}>(): version {} was added before",
            std::any::type_name::<H>(),
            std::any::type_name::<S>(),
            S::API_VERSION,
        );
        self
    }

    /// The annotation that keeps the fields a spoke loses (`<group>/conversion-data`).
    #[must_use]
    pub fn annotation(&self) -> &str {
        &self.annotation
    }

    /// Converts `object` (any version this converter knows) to `desired_api_version`, through
    /// the hub; an object already in that version is returned as it is.
    ///
    /// # Errors
    ///
    /// A [`ConvertError`] when the object is not of this kind, either version is unknown, the
    /// object does not decode as its version's type, a conversion fails, or the
    /// conversion-data annotation is not readable.
    pub fn convert(&self, object: Value, desired_api_version: &str) -> Result<Value, ConvertError> {
        let (api_version, kind) = identify(&object)?;
        if kind != H::KIND || group_of(&api_version) != H::GROUP {
            return Err(ConvertError::UnknownKind {
                group: group_of(&api_version).to_owned(),
                kind,
                known: format!("{}.{}", H::KIND, H::GROUP),
            });
        }
        if api_version == desired_api_version {
            return Ok(object);
        }
        let from = self.version(&api_version)?;
        let to = self.version(desired_api_version)?;

        let mut source = object;
        let data = lost::take_annotation(&mut source, &self.annotation);
        let mut hub = match from {
            None => source.clone(),
            Some(spoke) => (spoke.to_hub)(&source, &self.annotation)?,
        };
        if let (Some(_), Some(data)) = (from, data) {
            self.restore(&mut hub, &data)?;
        }
        let mut converted = match to {
            None => hub,
            Some(spoke) => (spoke.from_hub)(&hub, &self.annotation)?,
        };
        keep_metadata(&source, &mut converted);
        if let Some(fields) = converted.as_object_mut() {
            fields.insert("apiVersion".into(), Value::String(desired_api_version.to_owned()));
            fields.insert("kind".into(), Value::String(H::KIND.to_owned()));
        }
        Ok(converted)
    }

    fn version(&self, api_version: &str) -> Result<Option<Spoke>, ConvertError> {
        self.versions.get(api_version).copied().ok_or_else(|| ConvertError::UnknownVersion {
            api_version: api_version.to_owned(),
            kind: H::KIND.to_owned(),
            known: self.versions.keys().cloned().collect::<Vec<_>>().join(", "),
        })
    }

    fn restore(&self, hub: &mut Value, data: &Value) -> Result<(), ConvertError> {
        let error =
            |source| ConvertError::ConversionData { annotation: self.annotation.clone(), source };
        let text = data.as_str().ok_or_else(|| {
            error(serde::de::Error::custom("the annotation's value is not a string"))
        })?;
        let data: ConversionData = serde_json::from_str(text).map_err(error)?;
        if data.hub == H::API_VERSION {
            lost::restore(hub, &data.lost);
        } else {
            tracing::warn!(
                annotation = %self.annotation,
                recorded = %data.hub,
                hub = H::API_VERSION,
                "conversion data recorded for another hub version is not restored"
            );
        }
        Ok(())
    }
}

/// `<group>/conversion-data`.
fn annotation(group: &str) -> String {
    format!("{group}/conversion-data")
}

/// The group of an `apiVersion` (`example.com/v1` → `example.com`; `v1` → the core group).
fn group_of(api_version: &str) -> &str {
    api_version.rsplit_once('/').map_or("", |(group, _)| group)
}

fn identify(object: &Value) -> Result<(String, String), ConvertError> {
    let field = |name: &str, what| {
        object
            .get(name)
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or(ConvertError::Malformed { what })
    };
    if !object.is_object() {
        return Err(ConvertError::Malformed { what: "is not a JSON object" });
    }
    Ok((field("apiVersion", "has no apiVersion")?, field("kind", "has no kind")?))
}

fn decode<T: Version>(object: &Value) -> Result<T, ConvertError> {
    T::deserialize(object).map_err(|source| ConvertError::Decode {
        api_version: T::API_VERSION.to_owned(),
        kind: T::KIND.to_owned(),
        type_name: std::any::type_name::<T>(),
        source,
    })
}

fn encode<T: Version>(object: &T) -> Result<Value, ConvertError> {
    serde_json::to_value(object)
        .map_err(|source| ConvertError::Encode { type_name: std::any::type_name::<T>(), source })
}

fn convert<A: Version, B: Version + TryFrom<A>>(a: A) -> Result<B, ConvertError>
where
    <B as TryFrom<A>>::Error: Display,
{
    B::try_from(a).map_err(|e| ConvertError::Convert {
        from: A::API_VERSION.to_owned(),
        to: B::API_VERSION.to_owned(),
        message: e.to_string(),
    })
}

/// A spoke's object (its conversion data taken out) to the hub's.
fn to_hub<H, S>(spoke: &Value, _annotation: &str) -> Result<Value, ConvertError>
where
    S: Version,
    H: Version + TryFrom<S>,
    <H as TryFrom<S>>::Error: Display,
{
    encode(&convert::<S, H>(decode::<S>(spoke)?)?)
}

/// The hub's object to a spoke's, with what the spoke loses in the annotation.
fn from_hub<H, S>(hub: &Value, annotation: &str) -> Result<Value, ConvertError>
where
    H: Version,
    S: Version + TryFrom<H>,
    H: TryFrom<S>,
    <S as TryFrom<H>>::Error: Display,
    <H as TryFrom<S>>::Error: Display,
{
    let mut spoke = encode(&convert::<H, S>(decode::<H>(hub)?)?)?;
    let mut round_trip = encode(&convert::<S, H>(decode::<S>(&spoke)?)?)?;
    // Metadata beyond labels and annotations is the object's own whatever the conversion does
    // (`keep_metadata`): only those two can be lost.
    keep_metadata(hub, &mut round_trip);
    let lost = lost::lost(hub, &round_trip);
    lost::take_annotation(&mut spoke, annotation);
    if !lost.is_empty() {
        let data = ConversionData { hub: H::API_VERSION.to_owned(), lost };
        let text = serde_json::to_string(&data)
            .map_err(|source| ConvertError::Encode { type_name: "conversion data", source })?;
        lost::set_annotation(&mut spoke, annotation, text);
    }
    Ok(spoke)
}

/// `converted`'s metadata becomes `original`'s, but for the labels and annotations the
/// conversion set, which are laid over `original`'s: the API server keeps only labels and
/// annotations of a conversion webhook's metadata (`restoreObjectMeta`), and a conversion that
/// does not copy metadata through must not drop them.
fn keep_metadata(original: &Value, converted: &mut Value) {
    let Some(mut metadata) = original.get("metadata").and_then(Value::as_object).cloned() else {
        return;
    };
    let theirs = converted.get("metadata").and_then(Value::as_object);
    for key in ["labels", "annotations"] {
        let Some(set) = theirs.and_then(|m| m.get(key)).and_then(Value::as_object) else {
            continue;
        };
        let merged = metadata.entry(key).or_insert_with(|| Value::Object(serde_json::Map::new()));
        if !merged.is_object() {
            *merged = Value::Object(serde_json::Map::new());
        }
        if let Some(merged) = merged.as_object_mut() {
            merged.extend(set.iter().map(|(k, v)| (k.clone(), v.clone())));
        }
    }
    if let Some(fields) = converted.as_object_mut() {
        fields.insert("metadata".into(), Value::Object(metadata));
    }
}

/// A kind's converter with its hub's type erased, for [`Conversions`].
trait AnyConverter: Send + Sync {
    fn convert(&self, object: Value, desired_api_version: &str) -> Result<Value, ConvertError>;
}

impl<H: Version> AnyConverter for Converter<H> {
    fn convert(&self, object: Value, desired_api_version: &str) -> Result<Value, ConvertError> {
        Converter::convert(self, object, desired_api_version)
    }
}

/// The converters of every kind a conversion webhook serves, by group and kind; it answers a
/// [`ConversionRequest`] and serves as a conversion webhook's handler.
#[derive(Clone, Default)]
#[must_use]
pub struct Conversions {
    kinds: HashMap<(String, String), Arc<dyn AnyConverter>>,
}

impl std::fmt::Debug for Conversions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Conversions").field("kinds", &self.known()).finish()
    }
}

impl Conversions {
    /// No converters yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds the converter of `H`'s kind, replacing one added before for the kind.
    pub fn kind<H: Version>(mut self, converter: Converter<H>) -> Self {
        self.kinds.insert((H::GROUP.to_owned(), H::KIND.to_owned()), Arc::new(converter));
        self
    }

    /// Adds the converter of the kind whose hub is `H` ([`Hub::converter`]).
    pub fn hub<H: Hub>(self) -> Self {
        self.kind(H::converter())
    }

    /// Converts every object of `request`, or fails whole at the first that does not convert,
    /// with a message that names it (its index, namespace and name, and version) and why.
    #[must_use]
    pub fn convert(&self, request: &ConversionRequest) -> ConversionResponse {
        let mut converted = Vec::with_capacity(request.objects.len());
        for (index, object) in request.objects.iter().enumerate() {
            match self.convert_one(object.clone(), &request.desired_api_version) {
                Ok(object) => converted.push(object),
                Err(error) => {
                    let message = format!(
                        "converting object {index} ({}) to {}: {error}",
                        describe(object),
                        request.desired_api_version
                    );
                    return request.failure(message);
                }
            }
        }
        request.success(converted)
    }

    fn convert_one(&self, object: Value, desired: &str) -> Result<Value, ConvertError> {
        let (api_version, kind) = identify(&object)?;
        let group = group_of(&api_version).to_owned();
        if group_of(desired) != group {
            return Err(ConvertError::UnknownVersion {
                api_version: desired.to_owned(),
                known: format!("versions of group {group}"),
                kind,
            });
        }
        let key = (group, kind);
        if let Some(converter) = self.kinds.get(&key) {
            return converter.convert(object, desired);
        }
        let (group, kind) = key;
        Err(ConvertError::UnknownKind { group, kind, known: self.known() })
    }

    fn known(&self) -> String {
        let mut kinds: Vec<String> = self.kinds.keys().map(|(g, k)| format!("{k}.{g}")).collect();
        kinds.sort();
        if kinds.is_empty() { "no kind".to_owned() } else { kinds.join(", ") }
    }
}

/// `namespace/name apiVersion kind` of an object, for messages.
fn describe(object: &Value) -> String {
    let text = |pointer: &str| object.pointer(pointer).and_then(Value::as_str).unwrap_or("");
    let name = match text("/metadata/namespace") {
        "" => text("/metadata/name").to_owned(),
        namespace => format!("{namespace}/{}", text("/metadata/name")),
    };
    format!("{name} {} {}", text("/apiVersion"), text("/kind"))
}

#[cfg(test)]
mod tests;
