//! `#[derive(Informer)]` for custom resource structs: from one Rust struct and one attribute
//! block, the resource identity `informer-runtime` needs, client-go's informer and lister aliases,
//! and the `CustomResourceDefinition` to install, with a structural schema from schemars.
//!
//! Stages, one module each (dtolnay's layout): `attrs` parses `#[informer(...)]`, `valid`
//! checks the struct and the values and fills in defaults, `expand` generates the code (and
//! `structural` the schema rewriter it embeds), `fallback` stubs the traits when there are
//! errors. `ctxt` collects every error so one build reports them all. `informers` is
//! [`informers!`], the grouped factory accessors. The code informer-gen writes too (names,
//! resource impls, aliases, accessors) comes from `informer-emit`, shared by both.
//!
//! See [`Informer`] for the attributes and what is generated, and [`informers!`] for
//! `factory.example().v1().foos()`.

mod attrs;
mod ctxt;
mod expand;
mod fallback;
mod informers;
mod names;
mod structural;
mod valid;

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
///   struct's fields other than `metadata` (schemars' `openapi3` settings, subschemas inlined), rewritten to
///   be structural, with `apiVersion`, `kind` and `metadata` added. The fields' types need
///   `schemars::JsonSchema`; the root does not (derive it or not, as you like). Enums with data
///   become an object with every variant's properties and a `oneOf` saying which each variant
///   requires (and, internally tagged, its tag's value); a `#[serde(flatten)]` map beside fields
///   becomes `x-kubernetes-preserve-unknown-fields`; a container `#[serde(default)]` makes every
///   field optional, with the root's defaults. A recursive type cannot be inlined, and a CRD
///   cannot refer to it: `try_crd()` fails naming it (`crd()` panics), because the derive sees
///   the root's fields only and the recursion is known when schemars runs.
/// - A hidden macro, named like the type in the macro namespace, that [`informers!`] reads the
///   resource's names from.
///
/// The user's crate needs `k8s-openapi`, `informer-runtime`, `serde` (with `derive`),
/// `serde_json` and `schemars` 1 as dependencies, or `crates(...)` paths to them.
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
/// - `served = false`, `storage = false`: both default to `true`.
/// - `deprecated`, `deprecation_warning = "use v2"` (a warning implies `deprecated`).
/// - `annotation("key", "value")`, `label("key", "value")`, repeatable: on the CRD's metadata.
/// - `validation = "self.spec.replicas >= 0"`, repeatable: CEL rules
///   (`x-kubernetes-validations`) on the root of the schema.
/// - `schema = "disabled"`: the schema accepts any object (`x-kubernetes-preserve-unknown-fields`)
///   and the fields' types need no `JsonSchema`; `schema = "derived"` (from schemars) is the
///   default.
/// - `crates(informer_runtime = path, k8s_openapi = path, schemars = path, serde = path,
///   serde_json = path)`: where the generated code finds these crates (defaults
///   `::informer_runtime`, …), as kube-derive's `crates(...)`.
///
/// # Errors
///
/// A compile error at the offending span for an unknown, duplicated or malformed attribute,
/// `namespaced` with `cluster`, names the API server would reject, a struct without `metadata`,
/// tuple and unit structs, enums, unions and generics; every error in one build.
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
/// use informer_runtime::{Client, SharedInformerFactory};
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
/// of one resource (group, version and plural). A type without `#[derive(Informer)]` is
/// reported by rustc, which does not find a macro of that name (`cannot find ... in ...`).
#[proc_macro]
pub fn informers(input: TokenStream) -> TokenStream {
    informers::expand(input.into()).into()
}
