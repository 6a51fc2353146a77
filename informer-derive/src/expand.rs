//! Code generation: parse → check ([`valid`](crate::valid)) → expand, or the errors plus a
//! [`fallback`](crate::fallback) stub.
//!
//! For `struct Foo` the expansion is, by absolute paths (the crate paths can be overridden with
//! `crates(...)`):
//!
//! - next to the type: `FooInformer<'a, S>`, `FooLister` and (namespaced kinds)
//!   `FooNamespaceLister`, the aliases informer-gen emits (both write them with `informer-emit`);
//! - next to the type too, hidden: a `macro_rules!` in the macro namespace under the type's name,
//!   through which `informers!` learns the resource's names;
//! - in a `const _: () = { ... };` block: `k8s_openapi::Resource`, `ListableResource` and
//!   `Metadata<Ty = ObjectMeta>`; `serde::Serialize`, writing `apiVersion` and `kind` first and
//!   then the fields as serde's own derive would (it is serde's derive, run on a copy of the struct
//!   with `#[serde(remote = "Foo")]`); and `Foo::crd()` / `Foo::try_crd()`, with the schema from
//!   schemars run on a copy of the struct without `metadata`.

use informer_emit::Identity;
use proc_macro2::TokenStream;
use quote::quote;
use syn::spanned::Spanned as _;

use crate::ctxt::Ctxt;
use crate::parts::{hidden, path_string, remote_serialize, serde_attrs};
use crate::valid::{self, Input};
use crate::{conversion, fallback, informers, view};

/// `#[derive(Informer)]` on `input`.
pub(crate) fn derive(input: &syn::DeriveInput) -> TokenStream {
    let mut cx = Ctxt::default();
    let checked = valid::check(&mut cx, input);
    match (cx.check(), checked) {
        (Ok(()), Some(checked)) => expand(&checked),
        (Err(errors), _) => {
            let mut out = errors.to_compile_error();
            out.extend(fallback::stub(input));
            out
        }
        // `check` returns `None` only after recording an error.
        (Ok(()), None) => fallback::stub(input),
    }
}

fn expand(input: &Input) -> TokenStream {
    if let Some(viewed) = &input.view {
        return view::expand(input, viewed);
    }
    let aliases = aliases(input);
    let helper = informers::helper(&input.ident, &input.vis, Some(&helper_data(input)));
    let resource = resource_impls(input);
    let serialize = serialize(input);
    let crd = crd(input);
    let hub = input.hub.as_deref().map(|spokes| conversion::hub(input, spokes));
    let impls = hidden(&quote! {
        #resource
        #serialize
        #crd
        #hub
    });
    quote! {
        #aliases
        #helper
        #impls
    }
}

fn aliases(input: &Input) -> TokenStream {
    let Input { ident, vis, .. } = input;
    let words = informer_emit::accessors::words(&identity(input).method_name());
    let rt = &input.crates.informer_runtime;
    let gv = input.api_version();
    informer_emit::aliases(rt, vis, &ident.to_string(), ident, &words, &gv, input.namespaced)
}

/// `#[informer(...)]`'s names, as k8s-openapi's traits say them.
fn identity(input: &Input) -> Identity<'_> {
    Identity {
        group: &input.group,
        version: &input.version,
        kind: &input.kind,
        plural: &input.plural,
        list_kind: &input.list_kind,
        namespaced: input.namespaced,
    }
}

fn resource_impls(input: &Input) -> TokenStream {
    let k8s = &input.crates.k8s_openapi;
    // A `metadata` of another type is reported at the field's type.
    let span = input.metadata.ty.span();
    informer_emit::resource_impls(k8s, &input.ident, &identity(input), span)
}

/// What `informers!` needs to know of this resource.
fn helper_data(input: &Input) -> TokenStream {
    let (group, version, kind, plural) = (&input.group, &input.version, &input.kind, &input.plural);
    let rt = &input.crates.informer_runtime;
    quote! {
        group = #group, version = #version, kind = #kind, plural = #plural,
        informer_runtime = #rt
    }
}

/// Attributes of `attrs` whose name is one of `names`, as they are.
fn attrs_named<'a>(
    attrs: &'a [syn::Attribute],
    names: &'a [&str],
) -> impl Iterator<Item = &'a syn::Attribute> {
    attrs.iter().filter(|a| names.iter().any(|n| a.path().is_ident(n)))
}

fn serialize(input: &Input) -> TokenStream {
    let ident = &input.ident;
    let serde = &input.crates.serde;
    let k8s = &input.crates.k8s_openapi;
    let serde_crate = path_string(serde);
    let remote = remote_serialize(input);
    quote! {
        #remote

        #[automatically_derived]
        impl #serde::Serialize for #ident {
            fn serialize<__S: #serde::Serializer>(&self, serializer: __S) -> ::core::result::Result<__S::Ok, __S::Error> {
                #[derive(#serde::Serialize)]
                #[serde(crate = #serde_crate)]
                struct __Typed<'a> {
                    #[serde(rename = "apiVersion")]
                    api_version: &'static str,
                    kind: &'static str,
                    #[serde(flatten, serialize_with = "__InformerSerialize::serialize")]
                    object: &'a #ident,
                }
                #serde::Serialize::serialize(
                    &__Typed {
                        api_version: <Self as #k8s::Resource>::API_VERSION,
                        kind: <Self as #k8s::Resource>::KIND,
                        object: self,
                    },
                    serializer,
                )
            }
        }
    }
}

/// The schema struct (every field but `metadata`, with its serde, schemars and doc attributes)
/// and `fn __informer_schema() -> Result<Value, informer_runtime::crd::Error>`: schemars' schema
/// of it, made structural by the runtime, which fails naming a recursive type.
fn schema(input: &Input) -> TokenStream {
    let schemars = &input.crates.schemars;
    let j = &input.crates.serde_json;
    let rt = &input.crates.informer_runtime;
    if !input.derived_schema {
        return quote! {
            fn __informer_schema() -> ::core::result::Result<#j::Value, #rt::crd::Error> {
                ::core::result::Result::Ok(#j::json!({
                    "type": "object",
                    "properties": {
                        "apiVersion": { "type": "string" },
                        "kind": { "type": "string" },
                        "metadata": { "type": "object" },
                    },
                    "x-kubernetes-preserve-unknown-fields": true,
                }))
            }
        };
    }
    let schemars_crate = path_string(schemars);
    let container_serde = serde_attrs(&input.attrs, &["crate", "remote", "default"]);
    let container_other = attrs_named(&input.attrs, &["schemars", "doc"]);
    let schema_fields: Vec<&syn::Field> =
        input.fields.iter().filter(|f| f.ident.as_ref().is_none_or(|i| i != "metadata")).collect();
    let default = container_default(input, &schema_fields);
    let default_attr = default.as_ref().map(|_| quote!(#[serde(default)]));
    let fields = schema_fields.iter().map(|f| {
        let serde = serde_attrs(&f.attrs, &[]);
        let other = attrs_named(&f.attrs, &["schemars", "doc"]);
        let name = &f.ident;
        let ty = &f.ty;
        quote!(#(#serde)* #(#other)* #name: #ty)
    });
    let kind = &input.kind;
    quote! {
        #[derive(#schemars::JsonSchema)]
        #[schemars(crate = #schemars_crate)]
        #(#container_serde)*
        #default_attr
        #(#container_other)*
        #[allow(dead_code)]
        struct __InformerSchema {
            #(#fields,)*
        }

        #default

        fn __informer_schema() -> ::core::result::Result<#j::Value, #rt::crd::Error> {
            let mut settings = #schemars::generate::SchemaSettings::openapi3();
            settings.inline_subschemas = true;
            settings.meta_schema = ::core::option::Option::None;
            let schema = settings.into_generator().into_root_schema_for::<__InformerSchema>();
            #rt::crd::__derived_schema(#kind, schema.to_value())
        }
    }
}

/// For a container `#[serde(default)]` (or `default = "path"`): `#[serde(default)]` on the
/// schema struct, and its `Default` from the root's default, so schemars writes the same
/// defaults as for the root and the struct needs nothing the root does not have.
fn container_default(input: &Input, fields: &[&syn::Field]) -> Option<TokenStream> {
    let ident = &input.ident;
    let make = input
        .attrs
        .iter()
        .filter(|a| a.path().is_ident("serde"))
        .filter_map(|a| valid::serde_metas(a).ok())
        .flatten()
        .find_map(|meta| match meta {
            syn::Meta::Path(p) if p.is_ident("default") => {
                Some(quote!(<#ident as ::core::default::Default>::default()))
            }
            syn::Meta::NameValue(nv) if nv.path.is_ident("default") => match &nv.value {
                syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(path), .. }) => {
                    // An unparsable path is serde's to report, on the user's struct.
                    let path: syn::ExprPath = path.parse().ok()?;
                    Some(quote!(#path()))
                }
                _ => None,
            },
            _ => None,
        })?;
    let names: Vec<&Option<syn::Ident>> = fields.iter().map(|f| &f.ident).collect();
    Some(quote! {
        #[automatically_derived]
        impl ::core::default::Default for __InformerSchema {
            fn default() -> Self {
                let root: #ident = #make;
                Self { #(#names: root.#names,)* }
            }
        }
    })
}

fn crd(input: &Input) -> TokenStream {
    let ident = &input.ident;
    let k8s = &input.crates.k8s_openapi;
    let j = &input.crates.serde_json;
    let schema = schema(input);
    let name = format!("{}.{}", input.plural, input.group);
    let (group, version, kind, plural, singular) =
        (&input.group, &input.version, &input.kind, &input.plural, &input.singular);
    let list_kind = &input.list_kind;
    let scope = if input.namespaced { "Namespaced" } else { "Cluster" };
    let (served, storage) = (input.served, input.storage);

    let mut names = vec![
        quote!(names.insert("kind".into(), #j::json!(#kind));),
        quote!(names.insert("listKind".into(), #j::json!(#list_kind));),
        quote!(names.insert("plural".into(), #j::json!(#plural));),
        quote!(names.insert("singular".into(), #j::json!(#singular));),
    ];
    let short_names = &input.short_names;
    if !short_names.is_empty() {
        names.push(quote!(names.insert("shortNames".into(), #j::json!([#(#short_names),*]));));
    }
    let categories = &input.categories;
    if !categories.is_empty() {
        names.push(quote!(names.insert("categories".into(), #j::json!([#(#categories),*]));));
    }

    let mut meta = Vec::new();
    if !input.annotations.is_empty() {
        let (k, v): (Vec<&String>, Vec<&String>) =
            input.annotations.iter().map(|(k, v)| (k, v)).unzip();
        meta.push(quote!(meta.insert("annotations".into(), #j::json!({ #(#k: #v),* }));));
    }
    if !input.labels.is_empty() {
        let (k, v): (Vec<&String>, Vec<&String>) = input.labels.iter().map(|(k, v)| (k, v)).unzip();
        meta.push(quote!(meta.insert("labels".into(), #j::json!({ #(#k: #v),* }));));
    }

    let version_entries = version_entries(input);
    let validations = &input.validations;
    let rules = (!validations.is_empty()).then(|| {
        quote! {
            if let #j::Value::Object(root) = &mut schema {
                root.insert("x-kubernetes-validations".into(), #j::json!([#({ "rule": #validations }),*]));
            }
        }
    });
    let mutability = rules.as_ref().map(|_| quote!(mut));
    let doc_crd = format!(
        " The `CustomResourceDefinition` of `{kind}` ({name}), to install before informers of `{ident}` start."
    );
    let rt = &input.crates.informer_runtime;
    quote! {
        #schema

        #[automatically_derived]
        impl #ident {
            #[doc = #doc_crd]
            ///
            /// # Panics
            ///
            /// If a type in the schema is recursive, or k8s-openapi cannot read the manifest
            /// (a bug in `informer-derive` or schemars); [`try_crd`](Self::try_crd) returns
            /// that error instead.
            #[must_use]
            pub fn crd() -> #k8s::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition {
                match Self::try_crd() {
                    ::core::result::Result::Ok(crd) => crd,
                    ::core::result::Result::Err(e) => ::core::panic!("{}", e),
                }
            }

            #[doc = #doc_crd]
            ///
            /// # Errors
            ///
            /// If a type in the schema is recursive (schemars can only refer to it, and a
            /// `CustomResourceDefinition` cannot hold references): the error names the type,
            /// its cycle and where it recurses. Or if k8s-openapi cannot read the manifest (a
            /// bug in `informer-derive` or schemars).
            pub fn try_crd() -> ::core::result::Result<
                #k8s::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
                #rt::crd::Error,
            > {
                let #mutability schema = __informer_schema()?;
                #rules
                let mut names = #j::Map::new();
                #(#names)*
                let mut meta = #j::Map::new();
                meta.insert("name".into(), #j::json!(#name));
                #(#meta)*
                let mut v = #j::Map::new();
                v.insert("name".into(), #j::json!(#version));
                v.insert("served".into(), #j::Value::Bool(#served));
                v.insert("storage".into(), #j::Value::Bool(#storage));
                v.insert("schema".into(), #j::json!({ "openAPIV3Schema": schema }));
                #(#version_entries)*
                #rt::crd::__manifest(#kind, #j::json!({
                    "apiVersion": "apiextensions.k8s.io/v1",
                    "kind": "CustomResourceDefinition",
                    "metadata": meta,
                    "spec": {
                        "group": #group,
                        "names": names,
                        "scope": #scope,
                        "versions": [v],
                    },
                }))
            }
        }
    }
}

/// The statements that add the optional fields of the version entry `v`.
fn version_entries(input: &Input) -> Vec<TokenStream> {
    let j = &input.crates.serde_json;
    let mut version_entries = Vec::new();
    if input.deprecated {
        version_entries.push(quote!(v.insert("deprecated".into(), #j::Value::Bool(true));));
    }
    if let Some(warning) = &input.deprecation_warning {
        version_entries.push(quote!(v.insert("deprecationWarning".into(), #j::json!(#warning));));
    }
    if input.status || input.scale.is_some() {
        let status = input.status.then(|| quote!(sub.insert("status".into(), #j::json!({}));));
        let scale = input.scale.as_ref().map(|s| {
            let (spec, status) = (&s.spec_replicas_path, &s.status_replicas_path);
            let selector = s
                .label_selector_path
                .as_ref()
                .map(|l| quote!(scale.insert("labelSelectorPath".into(), #j::json!(#l));));
            quote! {
                let mut scale = #j::Map::new();
                scale.insert("specReplicasPath".into(), #j::json!(#spec));
                scale.insert("statusReplicasPath".into(), #j::json!(#status));
                #selector
                sub.insert("scale".into(), #j::Value::Object(scale));
            }
        });
        version_entries.push(quote! {
            let mut sub = #j::Map::new();
            #status
            #scale
            v.insert("subresources".into(), #j::Value::Object(sub));
        });
    }
    if !input.print_columns.is_empty() {
        let columns = input.print_columns.iter().map(|c| {
            let (name, type_, path) = (&c.name, &c.type_, &c.json_path);
            let description = c
                .description
                .as_ref()
                .map(|d| quote!(column.insert("description".into(), #j::json!(#d));));
            let format =
                c.format.as_ref().map(|f| quote!(column.insert("format".into(), #j::json!(#f));));
            let priority =
                c.priority.map(|p| quote!(column.insert("priority".into(), #j::json!(#p));));
            quote! {{
                let mut column = #j::Map::new();
                column.insert("name".into(), #j::json!(#name));
                column.insert("type".into(), #j::json!(#type_));
                column.insert("jsonPath".into(), #j::json!(#path));
                #description
                #format
                #priority
                #j::Value::Object(column)
            }}
        });
        version_entries.push(quote!(v.insert("additionalPrinterColumns".into(), #j::Value::Array(::std::vec![#(#columns),*]));));
    }
    if !input.selectable.is_empty() {
        let paths = &input.selectable;
        version_entries.push(
            quote!(v.insert("selectableFields".into(), #j::json!([#({ "jsonPath": #paths }),*]));),
        );
    }
    version_entries
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expand_str(input: TokenStream) -> String {
        let input: syn::DeriveInput = syn::parse2(input).unwrap();
        let file: syn::File = syn::parse2(derive(&input)).unwrap();
        prettyplease::unparse(&file)
    }

    #[test]
    fn expands_a_root_struct() {
        let code = expand_str(quote! {
            #[informer(group = "example.com", version = "v1", status)]
            pub struct Foo {
                metadata: ObjectMeta,
                spec: FooSpec,
                status: Option<FooStatus>,
            }
        });
        if std::env::var_os("INFORMER_DERIVE_PRINT").is_some() {
            println!("{code}");
        }
        for expected in [
            "pub type FooInformer<'a, S> = ::informer_runtime::informers::TypedInformer<'a, S, Foo>;",
            "pub type FooLister = ::informer_runtime::Lister<Foo>;",
            "pub type FooNamespaceLister = ::informer_runtime::NamespaceLister<Foo>;",
            "const _: () = {",
            "impl ::k8s_openapi::Resource for Foo {",
            "const API_VERSION: &'static str = \"example.com/v1\";",
            "const URL_PATH_SEGMENT: &'static str = \"foos\";",
            "type Scope = ::k8s_openapi::NamespaceResourceScope;",
            "const LIST_KIND: &'static str = \"FooList\";",
            "#[serde(crate = \"::serde\", remote = \"Foo\")]",
            "pub fn crd() -> ::k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition {",
        ] {
            assert!(code.contains(expected), "missing {expected:?} in\n{code}");
        }
        assert_eq!(code.matches("#[automatically_derived]").count(), 5, "{code}");
    }

    #[test]
    fn cluster_scope_has_no_namespace_lister() {
        let code = expand_str(quote! {
            #[informer(group = "example.com", version = "v1", cluster)]
            struct Bar { metadata: ObjectMeta }
        });
        assert!(code.contains("type Scope = ::k8s_openapi::ClusterResourceScope;"), "{code}");
        assert!(!code.contains("NamespaceLister"), "{code}");
        assert!(code.contains("type BarLister = ::informer_runtime::Lister<Bar>;"), "{code}");
    }

    #[test]
    fn expands_a_view_without_crd_nor_k8s_openapi_traits() {
        let code = expand_str(quote! {
            #[informer(view = k8s_openapi::api::core::v1::Pod)]
            pub struct PodView {
                metadata: ObjectMeta,
                spec: Option<PodViewSpec>,
            }
        });
        for expected in [
            "pub type PodViewInformer<'a, S> = ::informer_runtime::informers::TypedInformer<'a, S, PodView>;",
            "pub type PodViewLister = ::informer_runtime::Lister<PodView>;",
            "pub type PodViewNamespaceLister = ::informer_runtime::NamespaceLister<PodView>;",
            "impl ::informer_runtime::Resource for PodView {",
            "const KIND: &'static str = <k8s_openapi::api::core::v1::Pod as ::informer_runtime::Resource>::KIND;",
            "type Scope = <k8s_openapi::api::core::v1::Pod as ::informer_runtime::Resource>::Scope;",
            "const PARTIAL: bool = true;",
            "impl ::serde::Serialize for PodView {",
            "::core::compile_error!",
        ] {
            // Compared without whitespace: prettyplease breaks the longer lines.
            let squash =
                |text: &str| text.split_whitespace().collect::<String>().replace(",>", ">");
            assert!(squash(&code).contains(&squash(expected)), "missing {expected:?} in\n{code}");
        }
        // Not a k8s-openapi resource (it would be a WholeObject, and a kube::Resource), no CRD,
        // and no `apiVersion` or `kind` written.
        for unexpected in ["k8s_openapi::Resource for", "fn crd", "apiVersion", "WholeObject"] {
            assert!(!code.contains(unexpected), "{unexpected:?} in\n{code}");
        }
    }

    #[test]
    fn errors_come_with_a_stub() {
        let code = expand_str(quote! {
            #[informer(version = "v1")]
            struct Bar { metadata: ObjectMeta }
        });
        assert!(code.contains("compile_error!"), "{code}");
        assert!(code.contains("impl ::k8s_openapi::Resource for Bar"), "{code}");
        assert!(code.contains("impl ::k8s_openapi::Metadata for Bar"), "{code}");
        assert!(code.contains("pub fn crd()"), "{code}");
    }

    #[test]
    fn the_stub_names_the_crates_where_crates_says() {
        let code = expand_str(quote! {
            #[informer(version = "v1", crates(k8s_openapi = facade::k8s, informer_runtime = facade::rt))]
            struct Bar { metadata: ObjectMeta }
        });
        assert!(code.contains("compile_error!"), "{code}");
        for expected in [
            "impl facade::k8s::Resource for Bar",
            "impl facade::k8s::ListableResource for Bar",
            "impl facade::k8s::Metadata for Bar",
            "type Ty = facade::k8s::apimachinery::pkg::apis::meta::v1::ObjectMeta;",
            "facade::rt::crd::Error",
            "type BarInformer<'a, S> = facade::rt::informers::TypedInformer<'a, S, Bar>;",
            "type BarLister = facade::rt::Lister<Bar>;",
        ] {
            assert!(code.contains(expected), "missing {expected:?} in\n{code}");
        }
        assert!(!code.contains("::k8s_openapi"), "{code}");
        assert!(!code.contains("::informer_runtime"), "{code}");
    }
}

/// The two front ends write the same code for the same resource.
#[cfg(test)]
mod same_as_informer_gen {
    use super::*;

    /// `text` with all whitespace removed, to compare code formatted at different indentation.
    fn squash(text: &str) -> String {
        text.split_whitespace().collect()
    }

    fn unparse(tokens: TokenStream) -> String {
        prettyplease::unparse(&syn::parse2::<syn::File>(tokens).unwrap())
    }

    #[test]
    fn resource_impls_and_aliases() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/foobar.json");
        let Ok(text) = std::fs::read_to_string(path) else {
            return; // the crate's test fixtures are not there (a packaged crate)
        };
        let loaded = informer_gen::schema::parse_str(std::path::Path::new(path), &text).unwrap();
        let generated =
            squash(&informer_gen::Generator::new().generate(&loaded).unwrap().to_file_string());

        let input: syn::DeriveInput = syn::parse2(quote! {
            #[informer(group = "k8s-openapi-tests-custom-resource-definition.com", version = "v1")]
            pub struct FooBar { pub metadata: ObjectMeta }
        })
        .unwrap();
        let mut cx = Ctxt::default();
        let input = valid::check(&mut cx, &input).unwrap();
        cx.check().unwrap();
        let mut compared = 0;
        for items in [aliases(&input), resource_impls(&input)] {
            let ours = unparse(items);
            for item in ours.split("\n#[").filter(|item| !item.trim().is_empty()) {
                compared += 1;
                let item = squash(item.trim_start_matches("#["));
                assert!(
                    generated.contains(&item),
                    "informer-gen does not write\n{item}\nin\n{generated}"
                );
            }
        }
        // The three aliases (one block) and the three trait impls.
        assert_eq!(compared, 4);
    }
}
