//! [`Generator`]: CRDs in, Rust source out, nothing written anywhere (that is the caller's job:
//! the CLI, [`Builder`](crate::Builder), or a test).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;

use informer_emit::accessors::version_module_doc;
use informer_emit::names::version_module;
use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use crate::error::{Error, Warning};
use crate::k8s_types::TypeMapping;

/// Which versions of each CRD to generate.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Versions {
    /// Every version with `served: true` (the default).
    #[default]
    Served,
    /// Only the storage version.
    Storage,
    /// The named versions, where a CRD has them (served or not).
    Only(Vec<String>),
}

/// The visibility of generated items.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Visibility {
    /// `pub` (the default).
    #[default]
    Public,
    /// `pub(crate)`.
    Crate,
}

/// Turns CRDs into Rust types, resource impls, informer and lister aliases and grouped factory
/// accessors.
///
/// Setters take and return the generator by value:
///
/// ```
/// # fn main() -> Result<(), informer_gen::Error> {
/// use informer_gen::{Generator, Versions};
/// let yaml = r#"
/// apiVersion: apiextensions.k8s.io/v1
/// kind: CustomResourceDefinition
/// metadata: {name: widgets.example.com}
/// spec:
///   group: example.com
///   names: {kind: Widget, plural: widgets}
///   scope: Namespaced
///   versions:
///   - name: v1
///     served: true
///     storage: true
///     schema:
///       openAPIV3Schema:
///         type: object
///         properties:
///           spec:
///             type: object
///             properties:
///               size: {type: integer, format: int32}
/// "#;
/// let crds = informer_gen::schema::parse_str("widget.yaml".as_ref(), yaml)?;
/// let output = Generator::new().versions(Versions::Storage).generate(&crds)?;
/// let code = output.to_file_string();
/// assert!(code.contains("pub struct Widget {"));
/// assert!(code.contains("pub size: ::std::option::Option<i32>,"));
/// assert_eq!(output.resources()[0].rust_path, "example::v1::Widget");
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
#[must_use]
#[allow(clippy::struct_excessive_bools, reason = "one field per builder option")]
pub struct Generator {
    pub(crate) runtime_crate: String,
    pub(crate) versions: Versions,
    pub(crate) derives: Vec<String>,
    /// `(path, attribute)`.
    pub(crate) type_attributes: Vec<(String, String)>,
    /// `(path, attribute)`.
    pub(crate) field_attributes: Vec<(String, String)>,
    /// `(path, derive)`.
    pub(crate) derives_for: Vec<(String, String)>,
    pub(crate) schemars: bool,
    pub(crate) docs: bool,
    pub(crate) visibility: Visibility,
    pub(crate) strict: bool,
    pub(crate) types_only: bool,
    pub(crate) k8s_types: bool,
    /// The Kubernetes minor version (`1.x`) the consumer's k8s-openapi is built for; `None`:
    /// every version of the catalog.
    pub(crate) k8s_version: Option<u32>,
    /// `Some(path of informer-webhook)`: each kind's storage version is its conversion hub.
    pub(crate) conversion_hubs: Option<String>,
}

impl Default for Generator {
    fn default() -> Self {
        Self {
            // Generated code lives in the user's crate, which depends on the runtime by name.
            runtime_crate: "::informer_runtime".to_owned(),
            versions: Versions::Served,
            derives: Vec::new(),
            type_attributes: Vec::new(),
            field_attributes: Vec::new(),
            derives_for: Vec::new(),
            schemars: false,
            docs: true,
            visibility: Visibility::Public,
            strict: false,
            types_only: false,
            // Kubernetes' own types where a schema is one: what users want (issue 34).
            k8s_types: true,
            // Unknown until a build script reads it from k8s-openapi: every version.
            k8s_version: None,
            conversion_hubs: None,
        }
    }
}

impl Generator {
    /// A generator with the defaults: every served version, docs on, `pub` items, the runtime at
    /// `::informer_runtime`.
    pub fn new() -> Self {
        Self::default()
    }

    /// The path of the informer-runtime crate in generated code (`::informer_runtime`).
    pub fn runtime_crate(mut self, path: impl Into<String>) -> Self {
        self.runtime_crate = path.into();
        self
    }

    /// Which versions of each CRD to generate.
    pub fn versions(mut self, versions: Versions) -> Self {
        self.versions = versions;
        self
    }

    /// Adds a derive to every generated struct and enum (`"::my_crate::MyDerive"`).
    ///
    /// Structs always derive `Clone`, `Debug`, `PartialEq`, serde's `Serialize` and
    /// `Deserialize`, and `Default` where every required field has a default; enums derive
    /// `Clone`, `Debug`, `PartialEq`, `Eq` and `Hash`. Those are not derived twice, and `Default`
    /// is never added where it cannot be derived.
    ///
    /// Derives that some generated type cannot take are refused when generating
    /// ([`Error::Derive`]), rather than failing to compile in the consumer:
    ///
    /// | derive | why not |
    /// |--------|---------|
    /// | `Eq` | `ObjectMeta` (every root type's `metadata`), k8s-openapi's types, `NumberOrQuantity` and `f64` lack it |
    /// | `Hash` | as `Eq`, and `Time` and `IntOrString` lack it too |
    /// | `PartialOrd`, `Ord` | `ObjectMeta`, `NumberOrQuantity`, `IntOrString` and `serde_json::Value` lack them (and `f64` is not `Ord`) |
    /// | `Copy` | `String`, `Vec`, `BTreeMap` and `ObjectMeta` are not `Copy` |
    /// | `JsonSchema` | use [`schemars`](Generator::schemars), which writes the schemas enums need |
    ///
    /// So the standard derives every type takes are the ones it has already (`Clone`, `Debug`,
    /// `PartialEq`, `Default` where it can); a derive of another crate is passed through
    /// unchecked. [`derive_for`](Generator::derive_for) adds a derive to chosen types, those that
    /// can take it. Derives are recognised by the last segment of their path (`::std::cmp::Eq` is
    /// `Eq`).
    pub fn derive(mut self, path: impl Into<String>) -> Self {
        self.derives.push(path.into());
        self
    }

    /// Adds an attribute to the generated types `path` names (prost-build's `type_attribute`).
    ///
    /// Paths name generated Rust types:
    /// - `"."` is every struct and enum;
    /// - `"CertificateSpec"` is every type of that name, in any group and version;
    /// - `"cert_manager::v1::CertificateSpec"` is the one in that group module and version
    ///   module (as [`GeneratedResource::rust_path`] gives it for root types; a version's `-` is
    ///   `_` there, `v1_preview` for `v1-preview`).
    ///
    /// `attribute` is one or more outer attributes (`#[allow(dead_code)]`,
    /// `#[doc = "..."]`), written verbatim after the type's doc comment and before its derives.
    /// Hooks apply in the order they were added.
    ///
    /// # Errors
    ///
    /// Checked by [`generate`](Generator::generate): [`Error::Hook`] naming the path when the
    /// attribute does not parse as an outer attribute, the path is malformed, or it matches no
    /// generated type (a misspelled path would otherwise do nothing).
    ///
    /// # Examples
    ///
    /// ```
    /// # use informer_gen::Generator;
    /// let generator = Generator::new()
    ///     .type_attribute(".", "#[non_exhaustive]")
    ///     .type_attribute("cert_manager::v1::Certificate", r#"#[doc(alias = "cert")]"#)
    ///     .field_attribute("CertificateSpec.dnsNames", "#[doc = \"Subject alternative names.\"]")
    ///     .derive_for("CertificateSpecPrivateKey", "Eq");
    /// ```
    pub fn type_attribute(mut self, path: impl Into<String>, attribute: impl Into<String>) -> Self {
        self.type_attributes.push((path.into(), attribute.into()));
        self
    }

    /// Adds an attribute to the generated fields `path` names (prost-build's
    /// `field_attribute`): a type path as for [`type_attribute`](Generator::type_attribute)
    /// (other than `"."`), a `.`, and the field's JSON name or its Rust name
    /// (`"CertificateSpec.dnsNames"` or `"CertificateSpec.dns_names"`; `type` for `r#type`).
    /// The attribute is written verbatim after the field's doc comment and serde attributes.
    ///
    /// # Errors
    ///
    /// As [`type_attribute`](Generator::type_attribute), for a path that matches no field.
    pub fn field_attribute(
        mut self,
        path: impl Into<String>,
        attribute: impl Into<String>,
    ) -> Self {
        self.field_attributes.push((path.into(), attribute.into()));
        self
    }

    /// Adds a derive to the generated types `path` names (a path as for
    /// [`type_attribute`](Generator::type_attribute)): for the derives that not every type can
    /// take, on the types that can (`derive_for("CertificateSpecPrivateKey", "Eq")`). A derive
    /// the type has already is not derived twice. With `"."` it is [`derive`](Generator::derive),
    /// checked the same way; otherwise whether the type can take it is the compiler's to say.
    ///
    /// # Errors
    ///
    /// As [`type_attribute`](Generator::type_attribute), and when `derive` is not a path.
    pub fn derive_for(mut self, path: impl Into<String>, derive: impl Into<String>) -> Self {
        self.derives_for.push((path.into(), derive.into()));
        self
    }

    /// Derives `schemars::JsonSchema` for every type (the consumer then depends on `schemars`
    /// 1 and enables k8s-openapi's `schemars` feature).
    pub fn schemars(mut self, enabled: bool) -> Self {
        self.schemars = enabled;
        self
    }

    /// Whether schema descriptions become doc comments (on by default).
    pub fn docs(mut self, enabled: bool) -> Self {
        self.docs = enabled;
        self
    }

    /// Makes each kind's storage version its conversion hub (off by default): implements
    /// `informer_webhook::convert::Hub` for it, naming every other generated version of the kind
    /// as a spoke, and `informer_webhook::convert::KindHub` for each version, as
    /// `#[derive(Informer)]` does for `#[informer(hub(...))]`. Then
    /// `Conversions::new().hub::<example::v2::Widget>()` is the kind's conversion webhook
    /// handler, converting any generated version to any other through the storage version.
    ///
    /// The consumer depends on `informer-webhook`, and writes `From` (or `TryFrom`) between
    /// each spoke and the hub, both ways (the generated types are its own, so it may); until
    /// it does, the generated code does not compile. A kind whose storage version is not
    /// generated (see [`versions`](Generator::versions)) gets no hub.
    ///
    /// ```
    /// # fn main() -> Result<(), informer_gen::Error> {
    /// use informer_gen::Generator;
    /// let yaml = r#"
    /// apiVersion: apiextensions.k8s.io/v1
    /// kind: CustomResourceDefinition
    /// metadata: {name: widgets.example.com}
    /// spec:
    ///   group: example.com
    ///   names: {kind: Widget, plural: widgets}
    ///   scope: Namespaced
    ///   versions:
    ///   - {name: v1, served: true, storage: false, schema: {openAPIV3Schema: {type: object}}}
    ///   - {name: v2, served: true, storage: true, schema: {openAPIV3Schema: {type: object}}}
    /// "#;
    /// let crds = informer_gen::schema::parse_str("widget.yaml".as_ref(), yaml)?;
    /// let code = Generator::new().conversion_hubs(true).generate(&crds)?.to_file_string();
    /// assert!(code.contains("impl ::informer_webhook::convert::Hub for self::example::v2::Widget {"));
    /// assert!(code.contains(".spoke::<self::example::v1::Widget>()"));
    /// # Ok(()) }
    /// ```
    pub fn conversion_hubs(mut self, enabled: bool) -> Self {
        self.conversion_hubs = enabled.then(|| "::informer_webhook".to_owned());
        self
    }

    /// The visibility of generated items.
    pub fn visibility(mut self, visibility: Visibility) -> Self {
        self.visibility = visibility;
        self
    }

    /// Whether a schema that is not structural is an error ([`Error::NotStructural`], listing
    /// every spot) rather than a [`Warning`] in [`Output::warnings`] (off by default).
    ///
    /// Off, such spots get the loosest faithful Rust type: free JSON where the schema says
    /// nothing (an array without `items`, a node without `type`), a flattened map of JSON values
    /// where fields the schema does not name may come (a property only inside `oneOf`, a CRD
    /// with `preserveUnknownFields: true`). The API server still serves CRDs created before it
    /// required structural schemas, and their projects still publish them. A key that is no
    /// schema keyword (`replicas:` beside `properties:` instead of inside) in a generated
    /// version is a warning too; it is dropped, as the API server's decoder drops it.
    ///
    /// ```
    /// # use informer_gen::{Error, Generator};
    /// let yaml = r#"
    /// apiVersion: apiextensions.k8s.io/v1
    /// kind: CustomResourceDefinition
    /// metadata: {name: widgets.example.com}
    /// spec:
    ///   group: example.com
    ///   names: {kind: Widget, plural: widgets}
    ///   scope: Namespaced
    ///   versions:
    ///   - name: v1
    ///     served: true
    ///     storage: true
    ///     schema:
    ///       openAPIV3Schema:
    ///         type: object
    ///         properties:
    ///           spec:
    ///             type: object
    ///             properties:
    ///               args: {type: array}
    /// "#;
    /// let crds = informer_gen::schema::parse_str("widget.yaml".as_ref(), yaml).unwrap();
    /// let output = Generator::new().generate(&crds).unwrap();
    /// assert_eq!(
    ///     output.warnings()[0].to_string(),
    ///     "widget.yaml: spec.versions[0].schema.openAPIV3Schema.properties.spec.properties.args: \
    ///      an array without `items` (a structural schema says what the items are): items of \
    ///      free JSON (Vec<serde_json::Value>)"
    /// );
    /// assert!(output.to_file_string().contains("::std::vec::Vec<::serde_json::Value>"));
    ///
    /// let strict = Generator::new().strict(true).generate(&crds);
    /// assert!(matches!(strict, Err(Error::NotStructural { warnings }) if warnings.len() == 1));
    /// ```
    pub fn strict(mut self, enabled: bool) -> Self {
        self.strict = enabled;
        self
    }

    /// Generates only the Rust types and their resource impls (k8s-openapi's `Resource`,
    /// `ListableResource` and `Metadata`, the `Serialize` that writes `apiVersion` and `kind`,
    /// and `crd()`): no `…Informer`, `…Lister` and `…NamespaceLister` aliases, no factory
    /// accessors (the `Group` and `Version` structs) and no `CustomResourceInformers` trait.
    /// Off by default; the CLI's `--types-only`.
    ///
    /// Such code needs k8s-openapi, serde and `serde_json`, for a crate that wants the types
    /// (informer-runtime still takes them, as any k8s-openapi resource). It names the
    /// [`runtime_crate`](Generator::runtime_crate) only where a schema has quantities, for
    /// `NumberOrQuantity` (a quantity that writes a number back as a number): informer-runtime
    /// with `default-features = false` is then enough. Type names are the same either way: the
    /// names the accessors would use stay reserved.
    ///
    /// ```
    /// # fn main() -> Result<(), informer_gen::Error> {
    /// # let yaml = r#"
    /// # apiVersion: apiextensions.k8s.io/v1
    /// # kind: CustomResourceDefinition
    /// # metadata: {name: widgets.example.com}
    /// # spec:
    /// #   group: example.com
    /// #   names: {kind: Widget, plural: widgets}
    /// #   scope: Namespaced
    /// #   versions:
    /// #   - {name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object}}}
    /// # "#;
    /// let crds = informer_gen::schema::parse_str("widget.yaml".as_ref(), yaml)?;
    /// let code = informer_gen::Generator::new().types_only(true).generate(&crds)?.to_file_string();
    /// assert!(code.contains("pub struct Widget {"));
    /// assert!(code.contains("impl ::k8s_openapi::Resource for Widget {"));
    /// assert!(!code.contains("informer_runtime"));
    /// assert!(!code.contains("CustomResourceInformers"));
    /// # Ok(()) }
    /// ```
    pub fn types_only(mut self, enabled: bool) -> Self {
        self.types_only = enabled;
        self
    }

    /// Whether a schema node that is one of k8s-openapi's types becomes that type (on by
    /// default; the CLI's `--no-k8s-types` turns it off): a container's `Probe` becomes
    /// `::k8s_openapi::api::core::v1::Probe`, a status's conditions
    /// `Vec<::k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition>`, instead of structs
    /// of their own.
    ///
    /// A node maps only where decoding any object valid for the CRD into the type, and encoding
    /// it back, gives the same JSON (the rules are in the crate docs, "k8s-openapi's own
    /// types"), in the Kubernetes versions of [`k8s_version`](Generator::k8s_version).
    /// [`Output::type_mappings`] lists what was mapped, and the near misses with the reason.
    ///
    /// ```
    /// # fn main() -> Result<(), informer_gen::Error> {
    /// let yaml = r#"
    /// apiVersion: apiextensions.k8s.io/v1
    /// kind: CustomResourceDefinition
    /// metadata: {name: widgets.example.com}
    /// spec:
    ///   group: example.com
    ///   names: {kind: Widget, plural: widgets}
    ///   scope: Namespaced
    ///   versions:
    ///   - name: v1
    ///     served: true
    ///     storage: true
    ///     schema:
    ///       openAPIV3Schema:
    ///         type: object
    ///         properties:
    ///           spec:
    ///             type: object
    ///             properties:
    ///               tolerations:
    ///                 type: array
    ///                 items:
    ///                   type: object
    ///                   properties:
    ///                     effect: {type: string}
    ///                     key: {type: string}
    ///                     operator: {type: string}
    ///                     tolerationSeconds: {type: integer, format: int64}
    ///                     value: {type: string}
    /// "#;
    /// let crds = informer_gen::schema::parse_str("widget.yaml".as_ref(), yaml)?;
    /// let output = informer_gen::Generator::new().generate(&crds)?;
    /// assert!(output.to_file_string().contains(
    ///     "::std::vec::Vec<::k8s_openapi::api::core::v1::Toleration>"
    /// ));
    /// assert_eq!(
    ///     output.type_mappings()[0].to_string(),
    ///     "widget.yaml: spec.versions[0].schema.openAPIV3Schema.properties.spec.properties.\
    ///      tolerations.items -> ::k8s_openapi::api::core::v1::Toleration"
    /// );
    ///
    /// let own = informer_gen::Generator::new().k8s_types(false).generate(&crds)?;
    /// assert!(own.to_file_string().contains("pub struct WidgetSpecTolerations {"));
    /// # Ok(()) }
    /// ```
    pub fn k8s_types(mut self, enabled: bool) -> Self {
        self.k8s_types = enabled;
        self
    }

    /// The Kubernetes version the generated code is compiled against, as its minor number
    /// (`34` for 1.34, from [`OLDEST_MINOR`](crate::OLDEST_MINOR) to
    /// [`NEWEST_MINOR`](crate::NEWEST_MINOR)): the k8s-openapi version feature of the
    /// consumer. A schema node maps to a k8s-openapi type only where it is that type in this
    /// version; without it, in every version k8s-openapi offers (a field Kubernetes added in
    /// 1.36 is then no field of the type). [`Builder`](crate::Builder) sets it from the
    /// version k8s-openapi was built for; the CLI's `--k8s-version 1.34`.
    ///
    /// # Errors
    ///
    /// Checked by [`generate`](Generator::generate): [`Error::Config`] for a version outside
    /// that range.
    pub fn k8s_version(mut self, minor: u32) -> Self {
        self.k8s_version = Some(minor);
        self
    }

    // `generate`, the step these settings configure, is defined beside the code it runs
    // (`emit/crd.rs`), which reads the settings here: so the imports go one way.

    pub(crate) fn selects(&self, version: &crate::schema::crd::CrdVersion) -> bool {
        match &self.versions {
            Versions::Served => version.served,
            Versions::Storage => version.storage,
            Versions::Only(names) => names.contains(&version.name),
        }
    }
}

/// Generated code: a module per API group, each with a module per version, and a trait that
/// adds the group accessors to `SharedInformerFactory` (unless
/// [`types_only`](Generator::types_only)).
#[derive(Debug, Clone)]
pub struct Output {
    pub(crate) top: TokenStream,
    pub(crate) groups: Vec<GroupModule>,
    pub(crate) resources: Vec<GeneratedResource>,
    pub(crate) warnings: Vec<Warning>,
    pub(crate) type_mappings: Vec<TypeMapping>,
}

/// One group's module.
#[derive(Debug, Clone)]
pub(crate) struct GroupModule {
    pub(crate) name: String,
    pub(crate) attrs: TokenStream,
    pub(crate) items: TokenStream,
    /// `(version, items)`.
    pub(crate) versions: Vec<(String, TokenStream)>,
}

/// A resource type in the generated code.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct GeneratedResource {
    /// API group.
    pub group: String,
    /// API version.
    pub version: String,
    /// Kind.
    pub kind: String,
    /// Plural resource name.
    pub plural: String,
    /// Whether objects live in namespaces.
    pub namespaced: bool,
    /// The path of the type relative to where the output is placed (`cert_manager::v1::Certificate`).
    pub rust_path: String,
    /// The file its CRD came from.
    pub file: PathBuf,
}

impl Output {
    /// Every resource type generated, sorted by group, version and kind.
    #[must_use]
    pub fn resources(&self) -> &[GeneratedResource] {
        &self.resources
    }

    /// Every spot of the schemas that is not structural, and what it became, in the order
    /// found (see [`Generator::strict`]).
    #[must_use]
    pub fn warnings(&self) -> &[Warning] {
        &self.warnings
    }

    /// The schema nodes mapped to k8s-openapi's types, and the near misses with the reason
    /// (generated as structs of their own), in the order met (see
    /// [`Generator::k8s_types`]). A node nested in a mapped one is not listed: it is the type
    /// of its field.
    #[must_use]
    pub fn type_mappings(&self) -> &[TypeMapping] {
        &self.type_mappings
    }

    /// [`type_mappings`](Output::type_mappings) as text, one line each, the mapped nodes first
    /// (`file: path -> ::k8s_openapi::...`), then the near misses (`file: path: not
    /// ::k8s_openapi::...: reason`), and a count of each: what the CLI's `--explain` prints.
    #[must_use]
    pub fn explain(&self) -> String {
        let (mapped, missed): (Vec<&TypeMapping>, Vec<&TypeMapping>) =
            self.type_mappings.iter().partition(|m| m.miss.is_none());
        let mut text = format!("mapped to k8s-openapi's types: {}\n", mapped.len());
        // Writing to a `String` does not fail.
        for mapping in &mapped {
            let _ = writeln!(text, "  {mapping}");
        }
        let _ = writeln!(text, "near misses, generated as their own types: {}", missed.len());
        for mapping in &missed {
            let _ = writeln!(text, "  {mapping}");
        }
        text
    }

    /// The whole output as one self-contained, formatted Rust file, starting with the
    /// `@generated` header: what the CLI prints without `--out`, and what `include!` takes.
    #[must_use]
    pub fn to_file_string(&self) -> String {
        let top = &self.top;
        let groups = self.groups.iter().map(|g| {
            let name = format_ident!("{}", g.name);
            let (attrs, items) = (&g.attrs, &g.items);
            let versions = g.versions.iter().map(|(v, items)| {
                let doc = version_module_doc(v);
                let v = format_ident!("{}", version_module(v));
                quote! {
                    #[doc = #doc]
                    pub mod #v {
                        #items
                    }
                }
            });
            quote! {
                #attrs
                pub mod #name {
                    #items
                    #(#versions)*
                }
            }
        });
        format!("{}\n{}", HEADER, crate::emit::unparse(quote! { #top #(#groups)* }))
    }

    /// The output as a module tree: `mod.rs` (declaring one module per group, and the factory
    /// trait), `<group>/mod.rs` and `<group>/<version>.rs`, each formatted and starting with the
    /// `@generated` header. Paths are relative to the output directory.
    #[must_use]
    pub fn files(&self) -> BTreeMap<PathBuf, String> {
        let mut files = BTreeMap::new();
        let top = &self.top;
        let decls = self.groups.iter().map(|g| {
            let name = format_ident!("{}", g.name);
            let attrs = &g.attrs;
            quote! { #attrs pub mod #name; }
        });
        files.insert(PathBuf::from("mod.rs"), render(&quote! { #(#decls)* #top }));
        for g in &self.groups {
            let items = &g.items;
            let decls = g.versions.iter().map(|(v, _)| {
                let doc = version_module_doc(v);
                let v = format_ident!("{}", version_module(v));
                quote! {
                    #[doc = #doc]
                    pub mod #v;
                }
            });
            let dir = PathBuf::from(&g.name);
            files.insert(dir.join("mod.rs"), render(&quote! { #items #(#decls)* }));
            for (v, items) in &g.versions {
                files.insert(dir.join(format!("{}.rs", version_module(v))), render(items));
            }
        }
        files
    }
}

/// The first line of every generated file.
const HEADER: &str = "// @generated by informer-gen. Do not edit.";

fn render(tokens: &TokenStream) -> String {
    format!("{}\n{}", HEADER, crate::emit::unparse(tokens.clone()))
}

pub(crate) fn config_error(message: impl Into<String>) -> Error {
    Error::Config(message.into())
}
