//! `#[derive(Informer)]` for custom resource structs: from one Rust struct and one attribute
//! block, the resource identity `informer-runtime` needs, client-go's informer and lister aliases,
//! and the `CustomResourceDefinition` to install, with a structural schema from schemars.
//!
//! Stages, one module each (dtolnay's layout): `attrs` parses `#[informer(...)]`, `valid`
//! checks the struct and the values and fills in defaults, `expand` generates the code (`view`
//! the code of a view, `conversion` a conversion hub's), `fallback` stubs the traits when there are errors. What `crd()` does at
//! run time (schemars' schema made structural, recursion found, versions merged) is
//! `informer_runtime::crd`, as a proc-macro crate cannot export functions. `ctxt` collects every error so one build reports them all. `informers` is
//! [`informers!`], the grouped factory accessors. The code informer-gen writes too (names,
//! resource impls, aliases, accessors) comes from `informer-emit`, shared by both.
//!
//! See [`Informer`] for the attributes and what is generated, and [`informers!`] for
//! `factory.example().v1().foos()`. With `#[informer(view = Pod)]`, the derive declares a view
//! (a projection) of an existing resource instead, whose informer decodes only the fields the
//! struct names (see "Views" under [`Informer`]).

#![cfg_attr(docsrs, feature(doc_cfg))]
mod attrs;
mod conversion;
mod ctxt;
mod expand;
mod fallback;
mod informers;
mod names;
mod parts;
mod valid;
mod view;

use proc_macro::TokenStream;

/// Implements everything a custom resource needs from a root struct with a `metadata` field.
///
/// ```
/// use informer_derive::Informer;
/// use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
/// use schemars::JsonSchema;
/// use serde::{Deserialize, Serialize};
///
/// /// A foo.
/// #[derive(Clone, Debug, Deserialize, Informer)]
/// #[informer(group = "example.com", version = "v1", status, shortname = "fo")]
/// pub struct Foo {
///     pub metadata: ObjectMeta,
///     pub spec: FooSpec,
///     pub status: Option<FooStatus>,
/// }
///
/// #[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
/// pub struct FooSpec {
///     pub replicas: i32,
/// }
///
/// #[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
/// pub struct FooStatus {
///     pub ready: i32,
/// }
///
/// // Foo is an informer_runtime::Resource: factory.informer::<Foo>(), factory.lister::<Foo>(),
/// // and the aliases FooInformer<'_, S>, FooLister, FooNamespaceLister.
/// let crd = Foo::crd(); // create it before informers of Foo start
/// assert_eq!(crd.metadata.name.as_deref(), Some("foos.example.com"));
/// assert_eq!(crd.spec.names.short_names, Some(vec!["fo".to_owned()]));
/// ```
///
/// # What is generated
///
/// - `impl k8s_openapi::Resource` (`API_VERSION`, `GROUP`, `KIND`, `VERSION`,
///   `URL_PATH_SEGMENT` = plural, `Scope`), `ListableResource` (`LIST_KIND` = kind + `List`) and
///   `Metadata<Ty = ObjectMeta>`: with them the type is an `informer_runtime::Resource`, so
///   `factory.informer::<Foo>()` and `factory.lister::<Foo>()` work.
/// - Next to the type, with its visibility, the aliases informer-gen emits:
///   `FooInformer<'a, S>` (`informer_runtime::informers::TypedInformer<'a, S, Foo>`),
///   `FooLister` and, for namespaced kinds, `FooNamespaceLister`.
/// - `serde::Serialize`, writing `apiVersion` and `kind` and then the fields exactly as
///   `#[derive(Serialize)]` would (serde's derive runs on a copy of the struct, so every serde
///   attribute of the struct and its fields is honoured). **Do not derive `Serialize` on the
///   root yourself** (the two impls would conflict); derive `Deserialize` as usual: it ignores
///   `apiVersion` and `kind`, so `#[serde(deny_unknown_fields)]` is rejected.
/// - `Foo::crd()` (and `Foo::try_crd()`): the `CustomResourceDefinition` named
///   `<plural>.<group>` with one version, whose `openAPIV3Schema` is schemars' schema of the
///   struct's fields other than `metadata` (schemars' `openapi3` settings, subschemas inlined),
///   rewritten to be structural by `informer_runtime::crd`, with `apiVersion`, `kind` and
///   `metadata` added. The fields' types need `schemars::JsonSchema`; the root does not (derive
///   it or not, as you like). See "Schemas" below for what serde's attributes become, and
///   "Several versions" for a kind with a struct per version.
/// - With `hub(...)`: `informer_webhook::convert::Hub` and `KindHub`, and
///   `Foo::crd_with_conversion()` / `Foo::try_crd_with_conversion()` (see "Conversion through a
///   hub").
/// - A hidden macro, named like the type in the macro namespace, that [`informers!`] reads the
///   resource's names from.
///
/// The user's crate needs `k8s-openapi`, `informer-runtime`, `serde` (with `derive`),
/// `serde_json` and `schemars` 1 as dependencies, or `crates(...)` paths to them; and
/// `informer-webhook` if a version is a conversion hub (`hub(...)`).
///
/// # Schemas
///
/// The schema says what serde reads and writes, in a form the API server accepts (structural):
///
/// - **Enums with data** become an object with every variant's properties and a `oneOf` saying
///   which each variant requires (and, internally tagged, its tag's value).
/// - **`#[serde(flatten)]`**: a flattened struct's fields join the fields beside it. A flattened
///   map (`BTreeMap<String, _>`, `HashMap<String, _>`) beside fields, which a structural schema
///   cannot write as `properties` with `additionalProperties`, makes the object
///   `x-kubernetes-preserve-unknown-fields: true`, so that the API server keeps the fields the
///   map reads instead of pruning them (also when the map is in an enum variant: then on the
///   enum's object).
/// - **A container `#[serde(default)]`** (or `default = "path"`) means what serde does with it:
///   every field may be absent. On the root, as on a spec or status type, no field is
///   `required`, and each has the `default` the container's `Default` gives it (from the root's
///   default, for the root), which the API server fills in as serde would. Nothing is rejected:
///   a `default` schemars cannot write (`null`, or skipped by `skip_serializing_if`) is left
///   out, and the field is optional all the same. This is what schemars, and so kube-derive, do
///   for a container default on any other type.
/// - **A recursive type** cannot be inlined, and a CRD's schema cannot refer to a type. A field
///   of the root that holds the root again (`children: Vec<Foo>`, `Option<Box<Self>>`) is a
///   compile error at its type. A recursion deeper down, in the fields' own types, is known when
///   schemars runs: `try_crd()` fails with `informer_runtime::crd::Error::Recursive`, naming the
///   type, its cycle (`Vertex → Edge → Vertex`) and where it recurses (`.spec.root.edges.*.to`),
///   and `crd()` panics with that message. Hold the nested part as `serde_json::Value`, or give
///   the field `#[schemars(schema_with = "...")]`.
///
/// # Several versions
///
/// A struct is one version of its kind. For a kind served in several versions, derive a struct
/// per version (in modules `v1`, `v2`, or as `WidgetV1` with `kind = "Widget"`), with the same
/// group, kind and names, `storage = false` on every one but the storage version, and
/// `served = false` or `deprecated` where they apply; `informer_runtime::crd::merge` makes the
/// one CRD to install, with every version:
///
/// ```
/// use informer_derive::Informer;
/// use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
/// use serde::{Deserialize, Serialize};
///
/// /// A widget in v1: served, not stored.
/// #[derive(Clone, Debug, Deserialize, Informer)]
/// #[informer(group = "example.com", version = "v1", kind = "Widget", storage = false)]
/// pub struct WidgetV1 {
///     pub metadata: ObjectMeta,
///     pub spec: WidgetSpec,
/// }
///
/// /// A widget in v2, the storage version.
/// #[derive(Clone, Debug, Deserialize, Informer)]
/// #[informer(group = "example.com", version = "v2", kind = "Widget")]
/// pub struct WidgetV2 {
///     pub metadata: ObjectMeta,
///     pub spec: WidgetSpec,
/// }
///
/// #[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
/// pub struct WidgetSpec {
///     pub size: i32,
/// }
///
/// let crd = informer_runtime::crd::merge([WidgetV1::crd(), WidgetV2::crd()])?;
/// assert_eq!(crd.metadata.name.as_deref(), Some("widgets.example.com"));
/// let versions: Vec<(&str, bool, bool)> =
///     crd.spec.versions.iter().map(|v| (v.name.as_str(), v.served, v.storage)).collect();
/// assert_eq!(versions, [("v1", true, false), ("v2", true, true)]);
///
/// // Both left as storage versions (the default): refused, saying what to write.
/// #[derive(Clone, Debug, Deserialize, Informer)]
/// #[informer(group = "example.com", version = "v3", kind = "Widget")]
/// pub struct WidgetV3 {
///     pub metadata: ObjectMeta,
///     pub spec: WidgetSpec,
/// }
/// let error = informer_runtime::crd::merge([WidgetV2::crd(), WidgetV3::crd()]).unwrap_err();
/// assert!(error.to_string().contains("write `storage = false`"), "{error}");
/// # Ok::<(), informer_runtime::crd::Error>(())
/// ```
///
/// `merge` checks that the structs agree on the group, the kind and its names, the scope, and
/// that exactly one is the storage version; each error names the field and the two versions.
/// The informers are per version (`factory.informer::<WidgetV1>()` lists and watches
/// `/apis/example.com/v1/...`); the API server converts objects between versions with the CRD's
/// strategy, `None` unless set, which changes `apiVersion` alone. When the versions' schemas
/// differ, mark one version as the hub (next section).
///
/// # Conversion through a hub
///
/// `hub(v1::Widget, ...)` on one version makes it the hub of its kind, converting the spokes it
/// names (controller-runtime's hub and spoke). Write `From` (or `TryFrom`) between each spoke
/// and the hub, both ways; the derive implements `informer-webhook`'s
/// `informer_webhook::convert::Hub`, so that `Conversions::new().hub::<v2::Widget>()` is the
/// conversion webhook's handler: it converts any served version to any other through the hub,
/// and keeps what a spoke cannot hold in the annotation `<group>/conversion-data`, so a round
/// trip through the spoke loses nothing. `v2::Widget::crd_with_conversion(target, ca_bundle)`
/// (and `try_crd_with_conversion`) is the CRD of the hub and its spokes, merged, with
/// `spec.conversion` sending conversions to the webhook (strategy `Webhook`, the service or URL,
/// the `caBundle`, `conversionReviewVersions: ["v1"]`).
///
/// ```
/// use informer_webhook::conversion::ConversionRequest;
/// use informer_webhook::convert::Conversions;
/// use informer_webhook::crd::WebhookTarget;
///
/// mod v1 {
///     use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
///     use serde::{Deserialize, Serialize};
///
///     #[derive(Clone, Debug, Deserialize, informer_derive::Informer)]
///     #[informer(group = "example.com", version = "v1", storage = false)]
///     pub struct Widget {
///         pub metadata: ObjectMeta,
///         pub spec: WidgetSpec,
///     }
///
///     #[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
///     pub struct WidgetSpec {
///         pub replicas: i32,
///     }
/// }
///
/// mod v2 {
///     use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
///     use serde::{Deserialize, Serialize};
///
///     /// The hub (here also the storage version): `replicas` is `count` now, and a color came.
///     #[derive(Clone, Debug, Deserialize, informer_derive::Informer)]
///     #[informer(group = "example.com", version = "v2", hub(super::v1::Widget))]
///     pub struct Widget {
///         pub metadata: ObjectMeta,
///         pub spec: WidgetSpec,
///     }
///
///     #[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
///     pub struct WidgetSpec {
///         pub count: i32,
///         #[serde(default, skip_serializing_if = "Option::is_none")]
///         pub color: Option<String>,
///     }
/// }
///
/// impl From<v1::Widget> for v2::Widget {
///     fn from(w: v1::Widget) -> Self {
///         Self { metadata: w.metadata, spec: v2::WidgetSpec { count: w.spec.replicas, color: None } }
///     }
/// }
///
/// impl From<v2::Widget> for v1::Widget {
///     fn from(w: v2::Widget) -> Self {
///         Self { metadata: w.metadata, spec: v1::WidgetSpec { replicas: w.spec.count } }
///     }
/// }
///
/// # fn main() {
/// // The conversion webhook's handler: serve it with `WebhookServer::builder().conversion(..)`.
/// let conversions = Conversions::new().hub::<v2::Widget>();
/// let v2 = serde_json::json!({
///     "apiVersion": "example.com/v2", "kind": "Widget", "metadata": {"name": "w"},
///     "spec": {"count": 3, "color": "red"},
/// });
/// let to_v1 = ConversionRequest::new("1", "example.com/v1", vec![v2.clone()]);
/// let v1 = conversions.convert(&to_v1).converted_objects.remove(0);
/// assert_eq!(v1["spec"], serde_json::json!({"replicas": 3}));
/// // The color v1 cannot hold comes back when the object is read as v2 again.
/// let to_v2 = ConversionRequest::new("2", "example.com/v2", vec![v1]);
/// assert_eq!(conversions.convert(&to_v2).converted_objects, [v2]);
///
/// // The CRD to install, both versions and the webhook in one call.
/// let target = WebhookTarget::service("widgets-system", "widgets-webhook").path("/convert");
/// # let ca_bundle = b"-----BEGIN CERTIFICATE-----\n...\n-----END CERTIFICATE-----\n";
/// let crd = v2::Widget::crd_with_conversion(&target, ca_bundle);
/// assert_eq!(crd.spec.versions.len(), 2);
/// assert_eq!(crd.spec.conversion.unwrap().strategy, "Webhook");
/// # }
/// ```
///
/// The generated code names `::informer_webhook` (or the path `crates(informer_webhook =
/// path)` gives) only when `hub` is written: add `informer-webhook` to the crate's dependencies
/// then. It also implements `informer_webhook::convert::KindHub` for the hub and each spoke,
/// which is how a second hub is refused: two versions marked `hub` that name each other (or
/// one spoke in common) fail to compile with *conflicting implementations of trait `KindHub`*.
/// A spoke without the conversions fails at its path in `hub(...)`, naming the missing `From`.
/// `hub` alone marks a hub without spokes yet. The spokes must be `#[derive(Informer)]` types
/// of the same kind (`crd_with_conversion` merges their `try_crd()`; the converter panics on
/// its first use if one is of another kind).
///
/// # Required attributes
///
/// - `group = "example.com"`: the API group, a DNS subdomain with at least one dot.
/// - `version = "v1"`: the API version.
///
/// # Optional attributes
///
/// - `kind = "Foo"`: defaults to the struct's name.
/// - `plural = "foos"`: defaults to the lowercase kind made plural (`-es` after s, x, z, ch and
///   sh; `-ies` after a consonant and y; else `-s`).
/// - `singular = "foo"`: defaults to the lowercase kind.
/// - `shortname = "fo"`, repeatable; `category = "all"`, repeatable.
/// - `namespaced` (the default) or `cluster`.
/// - `status`: the status subresource, for the field `status`. `status = "FooStatus"` (the type
///   of the status field, as kube-derive writes it) or `status = "status"` also work.
/// - `scale(spec_replicas_path = ".spec.replicas", status_replicas_path = ".status.replicas",
///   label_selector_path = ".status.selector")`: the scale subresource (the last path is
///   optional); needs `status`.
/// - `printcolumn(name = "Replicas", type = "integer", json_path = ".spec.replicas",
///   description = "...", format = "...", priority = 0)`, repeatable: additional printer
///   columns. `type` is one of `integer`, `number`, `string`, `boolean`, `date`.
/// - `selectable = ".spec.color"`, repeatable: selectable fields (field selectors on custom
///   resources; every Kubernetes version k8s-openapi 0.29 supports has them).
/// - `served = false`, `storage = false`: both default to `true`. With a struct per version,
///   all but one say `storage = false` (see "Several versions").
/// - `deprecated`, `deprecation_warning = "use v2"` (a warning implies `deprecated`).
/// - `annotation("key", "value")`, `label("key", "value")`, repeatable: on the CRD's metadata.
/// - `validation = "self.spec.replicas >= 0"`, repeatable: CEL rules
///   (`x-kubernetes-validations`) on the root of the schema.
/// - `hub(v1::Foo, ...)` (or `hub` alone): this version is the conversion hub of its kind,
///   with these spokes; see "Conversion through a hub".
/// - `schema = "disabled"`: the schema accepts any object (`x-kubernetes-preserve-unknown-fields`)
///   and the fields' types need no `JsonSchema`; `schema = "derived"` (from schemars) is the
///   default.
/// - `crates(informer_runtime = path, k8s_openapi = path, schemars = path, serde = path,
///   serde_json = path, informer_webhook = path)`: where the generated code finds these crates
///   (defaults `::informer_runtime`, …), as kube-derive's `crates(...)`.
///
/// # Errors
///
/// A compile error at the offending span for an unknown, duplicated or malformed attribute,
/// `namespaced` with `cluster`, names the API server would reject, a struct without `metadata`,
/// tuple and unit structs, enums, unions and generics, `view` with another attribute than
/// `crates`, a field that holds the struct itself; every error in one build. Next to the
/// errors, the derive emits placeholder impls (the traits, `crd()`), through the `crates(...)`
/// paths, so that uses of the type elsewhere add no errors of their own.
///
/// # Types you already have
///
/// The runtime needs only its own `informer_runtime::Resource` trait, which every type with
/// k8s-openapi's `Resource` and `Metadata` traits has by a blanket impl: k8s-openapi's
/// built-ins and this derive's output work with `factory.informer::<T>()` unchanged (and, through
/// kube's own blanket impl, with kube-rs too). Any other struct with a `metadata: ObjectMeta`
/// field, including roots generated by kube-rs's `#[derive(CustomResource)]` and kopium's output,
/// gets it from one line in its crate:
///
/// ```text
/// informer_runtime::impl_resource!(Foo, group = "example.com", version = "v1", kind = "Foo",
///     plural = "foos", namespaced);
/// ```
///
/// Such types have no generated `FooInformer`, `FooLister` or grouped accessors; they use the
/// generic `factory.informer::<Foo>()` and `factory.lister::<Foo>()`.
///
/// # Views (projection informers)
///
/// `#[informer(view = Pod)]` declares a *view* of an existing resource type: a struct with only
/// the fields a controller reads. Its informer lists and watches pods, and decodes each one
/// straight into the view: serde skips every field the view does not name while parsing, so
/// they are never allocated (client-go's transforms, by contrast, run after the full decode).
/// Handlers, listers, indices and resync work as for any resource.
///
/// ```
/// use std::sync::Arc;
///
/// use informer_derive::Informer;
/// use informer_runtime::testing::FakeSource;
/// use informer_runtime::{HandlerFuncs, LabelSelector, Resource, SharedInformerFactory};
/// use k8s_openapi::api::core::v1::Pod;
/// use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
/// use serde::{Deserialize, Serialize};
///
/// /// What the controller reads of a pod: its metadata, node and phase.
/// #[derive(Clone, Debug, Deserialize, Informer)]
/// #[informer(view = Pod)]
/// pub struct PodView {
///     pub metadata: ObjectMeta,
///     pub spec: Option<PodViewSpec>,
///     pub status: Option<PodViewStatus>,
/// }
///
/// #[derive(Clone, Debug, Serialize, Deserialize)]
/// #[serde(rename_all = "camelCase")]
/// pub struct PodViewSpec {
///     pub node_name: Option<String>,
/// }
///
/// #[derive(Clone, Debug, Serialize, Deserialize)]
/// pub struct PodViewStatus {
///     pub phase: Option<String>,
/// }
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// // Pod's identity: the informer lists and watches /api/v1/pods.
/// assert_eq!((PodView::API_VERSION, PodView::KIND, PodView::PLURAL), ("v1", "Pod", "pods"));
///
/// // A whole pod decodes into the view; containers, volumes, ... are skipped unread.
/// let pod = r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web-0","namespace":"default"},
///     "spec":{"nodeName":"node-1","containers":[{"name":"c","image":"nginx"}]},
///     "status":{"phase":"Running","containerStatuses":[]}}"#;
/// let view: PodView = serde_json::from_str(pod).unwrap();
/// assert_eq!(view.spec.as_ref().and_then(|s| s.node_name.as_deref()), Some("node-1"));
///
/// let source = FakeSource::new(); // or an HTTP `Client`
/// source.add(view);
/// let factory = SharedInformerFactory::new(source);
/// let pods = PodViewInformer::new(&factory); // or factory.informer::<PodView>()
/// pods.informer()
///     .add_event_handler(HandlerFuncs::new().on_add(|pod: Arc<PodView>, _initial| {
///         println!("{:?} on {:?}", pod.metadata.name, pod.spec.as_ref().map(|s| &s.node_name));
///     }))
///     .unwrap();
/// factory.start();
/// factory.wait_for_cache_sync(std::time::Duration::from_secs(10)).await;
/// let lister: PodViewLister = pods.lister();
/// let web_0 = lister.namespace("default").get("web-0").unwrap();
/// assert_eq!(web_0.status.as_ref().and_then(|s| s.phase.as_deref()), Some("Running"));
/// factory.shutdown().await;
/// # }
/// ```
///
/// A view:
///
/// - takes its identity (`API_VERSION`, `GROUP`, `VERSION`, `KIND`, `PLURAL`, scope) from the
///   viewed type's `informer_runtime::Resource` impl, so any type an informer accepts can be
///   viewed: k8s-openapi's built-ins, `informer-gen`'s output, `#[derive(Informer)]` custom
///   resources, `impl_resource!` types. The path may be given as a string too
///   (`view = "Pod"`);
/// - needs a `metadata: ObjectMeta` field (the cache keys objects by namespace and name); it
///   skips `metadata.managedFields` while decoding, as whole objects do, unless the factory
///   keeps them;
/// - implements `informer_runtime::Resource` directly, and neither k8s-openapi's traits nor
///   `informer_runtime::WholeObject`: the client's writes (`Client::create`,
///   `Client::replace`) refuse it at compile time, since writing a view would erase every field
///   it lacks on the server (`Client::patch_merge` takes a view: a patch names what it
///   changes). For the same reason it is not a `kube::Resource`;
/// - gets `Serialize`, writing its fields as serde's derive would and no `apiVersion` or
///   `kind`: its JSON never passes for the whole object. Derive `Deserialize` (and `Serialize`
///   on the fields' types); `#[serde(deny_unknown_fields)]` is refused, as a view skips fields
///   by design;
/// - gets the aliases `PodViewInformer<'a, S>`, `PodViewLister` and `PodViewNamespaceLister`,
///   and no `crd()`, no grouped accessors (`informers!` refuses a view: the accessors
///   `factory.core().v1().pods()` are the viewed type's);
/// - has an informer of its own beside the viewed type's, if both are asked for (two watches).
///   Where the factory knows informers by resource alone (`for_resource`), the informer of whole
///   objects comes first;
/// - in tests over `FakeSource`, which keeps objects per Rust type, is fed views
///   (`source.add(view)`, as above); over HTTP (`embedded-apiserver`, a cluster) the server
///   sends whole objects and the client decodes the view from them.
///
/// `view` goes with no other attribute but `crates(...)`: the others name a resource or shape
/// its CRD, which a view takes from the type it views.
#[proc_macro_derive(Informer, attributes(informer, schemars))]
pub fn derive_informer(input: TokenStream) -> TokenStream {
    let input = syn::parse_macro_input!(input as syn::DeriveInput);
    expand::derive(&input).into()
}

/// Grouped factory accessors for `#[derive(Informer)]` types: `factory.example().v1().foos()`,
/// as informer-gen writes them for CRDs.
///
/// List the types by path, in a module of their own (as you would `include!` informer-gen's
/// output), and bring the module's `CustomResourceInformers` trait into scope:
///
/// ```
/// use informer_derive::Informer;
/// use informer_client::Client;
/// use informer_runtime::SharedInformerFactory;
/// use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
/// use schemars::JsonSchema;
/// use serde::{Deserialize, Serialize};
///
/// /// A foo.
/// #[derive(Clone, Debug, Deserialize, Informer)]
/// #[informer(group = "example.com", version = "v1")]
/// pub struct Foo {
///     pub metadata: ObjectMeta,
///     pub spec: FooSpec,
/// }
///
/// #[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
/// pub struct FooSpec {
///     pub replicas: i32,
/// }
///
/// /// The informers of this crate's custom resources.
/// pub mod informers {
///     informer_derive::informers!(super::Foo);
/// }
///
/// use informers::CustomResourceInformers as _;
///
/// fn watch(factory: &SharedInformerFactory<Client>) {
///     let foos = factory.example().v1().foos(); // FooInformer<'_, Client>
///     let lister: FooLister = foos.lister();
///     foos.informer(); // add handlers here, then factory.start()
/// }
/// # fn main() {}
/// ```
///
/// In the module, as in informer-gen's output: `trait CustomResourceInformers<S>`, implemented
/// by `SharedInformerFactory<S>`, with a method per API group (client-go's short name, `example`
/// for `example.com`, or the whole group where a built-in group or another group has it:
/// `apps_example_com`) and `register_custom_resources()`; a module per group with its `Group`
/// and a module per version with its `Version`, whose methods (`foos()`, from the kind's words
/// and the plural) return the runtime's `TypedInformer`. The informer and lister aliases stay
/// next to each type.
///
/// Paths are read where the macro is called (`super::Foo`, `crate::api::Foo`, or a name brought
/// in with `use`). The types must be of this crate: their derive leaves the macro a hidden
/// helper, named like the type, which another crate cannot see.
///
/// # Errors
///
/// A compile error for an empty list, a path with generics, a type listed twice, or two types
/// of one resource (group, version and plural), or a view (`#[informer(view = ...)]`: the
/// accessors of its resource are the viewed type's). A type without `#[derive(Informer)]` is
/// reported by rustc, which does not find a macro of that name (`cannot find ... in ...`).
#[proc_macro]
pub fn informers(input: TokenStream) -> TokenStream {
    informers::expand(input.into()).into()
}

// The README is the crate's registry page: its examples compile as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
