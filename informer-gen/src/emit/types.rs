//! [`TypeSpace`] → Rust items: structs, string enums, and the resource impls of root types.
//!
//! Generated code names everything by absolute path (`::std::option::Option`,
//! `::k8s_openapi::…`), so a schema type called `Option` or `String` cannot shadow anything.

use informer_emit::{Identity, resource_impls};
use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use super::docs;
use super::hooks::{Hooks, Place};
use crate::ir::{Field, Root, StringEnum, Struct, Ty, TypeDef, TypeSpace};

/// How items are written.
pub(crate) struct Style {
    /// The informer-runtime crate's path (`::informer_runtime`).
    pub(crate) runtime: syn::Path,
    pub(crate) derives: Vec<syn::Path>,
    pub(crate) schemars: bool,
    pub(crate) docs: bool,
    pub(crate) vis: syn::Visibility,
    /// Attributes and derives for chosen types and fields.
    pub(crate) hooks: Hooks,
    /// Types and resource impls only: no aliases, accessors or factory trait.
    pub(crate) types_only: bool,
}

/// Every type of `space`, generated at `at`, in order.
pub(crate) fn items(space: &TypeSpace, style: &Style, at: &Place<'_>) -> TokenStream {
    space
        .in_reading_order()
        .into_iter()
        .map(|id| match space.get(id) {
            TypeDef::Struct(s) => structure(space, s, style, at),
            TypeDef::Enum(e) => string_enum(e, style, at),
        })
        .collect()
}

fn ident(name: &str) -> syn::Ident {
    match name.strip_prefix("r#") {
        Some(raw) => syn::Ident::new_raw(raw, proc_macro2::Span::call_site()),
        None => format_ident!("{name}"),
    }
}

/// The Rust type of `ty`.
pub(crate) fn rust_type(space: &TypeSpace, style: &Style, ty: &Ty) -> TokenStream {
    match ty {
        Ty::String => quote!(::std::string::String),
        Ty::Bool => quote!(bool),
        Ty::I32 => quote!(i32),
        Ty::I64 => quote!(i64),
        Ty::F64 => quote!(f64),
        Ty::Time => quote!(::k8s_openapi::apimachinery::pkg::apis::meta::v1::Time),
        Ty::Bytes => quote!(::k8s_openapi::ByteString),
        Ty::IntOrString => quote!(::k8s_openapi::apimachinery::pkg::util::intstr::IntOrString),
        Ty::Quantity => {
            let rt = &style.runtime;
            quote!(#rt::quantity::NumberOrQuantity)
        }
        // Only in schemars' `with`: the schema of a quantity field.
        Ty::QuantitySchema => quote!(::k8s_openapi::apimachinery::pkg::api::resource::Quantity),
        Ty::Json => quote!(::serde_json::Value),
        Ty::ObjectMeta => quote!(::k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta),
        Ty::K8s { path, .. } => {
            // The catalog's paths are checked to be identifiers joined by `::` when it is read.
            let segments = path.split("::").map(|s| format_ident!("{s}"));
            quote!(::k8s_openapi #(:: #segments)*)
        }
        Ty::Vec(item) => {
            let item = rust_type(space, style, item);
            quote!(::std::vec::Vec<#item>)
        }
        Ty::Nullable(inner) => {
            let inner = rust_type(space, style, inner);
            quote!(::std::option::Option<#inner>)
        }
        Ty::Map(value) => {
            let value = rust_type(space, style, value);
            quote!(::std::collections::BTreeMap<::std::string::String, #value>)
        }
        Ty::Named(id) => {
            let name = format_ident!("{}", space.get(*id).name());
            quote!(#name)
        }
    }
}

/// The user's derives, less those the generated code has already (or, for `Default`, derives
/// wherever it can: on structs whose required fields all have defaults, never on enums), by the
/// last segment of their path: derives or hand-written impls (serde's, on enums and root types).
/// Then those of [`Hooks::derives`] for the type `name`, each derive once.
fn extra_derives<'a>(
    style: &'a Style,
    at: &Place<'_>,
    name: &str,
    built_in: &[&str],
) -> Vec<&'a syn::Path> {
    let last = |p: &syn::Path| p.segments.last().map(|s| s.ident.to_string());
    let mut derives: Vec<&syn::Path> = Vec::new();
    for path in style.derives.iter().chain(style.hooks.derives(at, name)) {
        let name = last(path);
        let built = name.as_deref().is_some_and(|name| built_in.contains(&name));
        if !built && !derives.iter().any(|d| last(d) == name) {
            derives.push(path);
        }
    }
    derives
}

fn structure(space: &TypeSpace, s: &Struct, style: &Style, at: &Place<'_>) -> TokenStream {
    let name = format_ident!("{}", s.name);
    let vis = &style.vis;
    let doc = docs::attrs(&s.doc, style.docs);
    let default =
        s.fields.iter().all(|f| !f.required || space.is_default(&f.ty)).then(|| quote!(Default,));
    // A root writes its constant apiVersion and kind itself.
    let serialize = s.root.is_none().then(|| quote!(::serde::Serialize,));
    let extra_derives = extra_derives(
        style,
        at,
        &s.name,
        &["Clone", "Debug", "PartialEq", "Default", "Serialize", "Deserialize"],
    );
    let attributes = style.hooks.type_attributes(at, &s.name);
    let schemars = style.schemars.then(|| quote!(::schemars::JsonSchema,));
    let fields = s.fields.iter().map(|f| {
        let attributes = style.hooks.field_attributes(at, &s.name, f);
        field(space, f, style, &attributes)
    });
    let extra = s.extra.as_ref().map(|extra| {
        let field = ident(&extra.rust_name);
        let value = rust_type(space, style, &extra.value);
        let doc =
            docs::attrs(&["Fields not listed in the schema's properties.".to_owned()], style.docs);
        let schema_with = schema_type(space, style, &extra.value).map(|as_type| {
            let with =
                quote!(::std::collections::BTreeMap<::std::string::String, #as_type>).to_string();
            quote!(#[schemars(with = #with)])
        });
        quote! {
            #doc
            #[serde(flatten)]
            #schema_with
            #vis #field: ::std::collections::BTreeMap<::std::string::String, #value>,
        }
    });
    let root = s.root.as_ref().map(|root| root_impls(s, root, style));
    quote! {
        #doc
        #attributes
        #[derive(Clone, Debug, PartialEq, #default #serialize ::serde::Deserialize, #schemars #(#extra_derives,)*)]
        #vis struct #name {
            #(#fields)*
            #extra
        }
        #root
    }
}

/// The type whose schema describes `ty` to schemars, where `ty`'s own has none: k8s-openapi's
/// `ByteString` has no schema, so it is described as the base64 string it is on the wire; a
/// quantity (the runtime's `NumberOrQuantity`) has k8s-openapi's `Quantity`'s (int-or-string).
fn schema_type(space: &TypeSpace, style: &Style, ty: &Ty) -> Option<TokenStream> {
    (style.schemars && (ty.contains(&Ty::Bytes) || ty.contains(&Ty::Quantity))).then(|| {
        let for_schema =
            ty.replace(&Ty::Bytes, &Ty::String).replace(&Ty::Quantity, &Ty::QuantitySchema);
        rust_type(space, style, &for_schema)
    })
}

/// `attributes`: the field hooks' attributes, after the field's own.
fn field(space: &TypeSpace, f: &Field, style: &Style, attributes: &TokenStream) -> TokenStream {
    let name = ident(&f.rust_name);
    let vis = &style.vis;
    let doc = docs::attrs(&field_doc(f), style.docs);
    let bare = f.rust_name.strip_prefix("r#").unwrap_or(&f.rust_name);
    let rename = (bare != f.json_name).then(|| {
        let json = &f.json_name;
        quote!(rename = #json,)
    });
    let ty = rust_type(space, style, &f.ty);
    let schema_with = schema_type(space, style, &f.ty).map(|as_type| {
        let with = if f.required {
            as_type.to_string()
        } else {
            quote!(::std::option::Option<#as_type>).to_string()
        };
        quote!(#[schemars(with = #with)])
    });
    if f.required {
        // A missing required field reads as its default where it has one, as in Go, instead
        // of failing the whole object (and with it a list of thousands).
        let default = space.is_default(&f.ty).then(|| quote!(default,));
        let attr =
            (rename.is_some() || default.is_some()).then(|| quote!(#[serde(#rename #default)]));
        quote! {
            #doc
            #attr
            #schema_with
            #attributes
            #vis #name: #ty,
        }
    } else if f.write_null {
        quote! {
            #doc
            #[serde(#rename default)]
            #schema_with
            #attributes
            #vis #name: ::std::option::Option<#ty>,
        }
    } else {
        quote! {
            #doc
            #[serde(#rename default, skip_serializing_if = "::std::option::Option::is_none")]
            #schema_with
            #attributes
            #vis #name: ::std::option::Option<#ty>,
        }
    }
}

/// The field's description, and for a field of one of Kubernetes' own types (alone, or as the
/// items or values of a list or map) a line naming it: the reader of the generated code or its
/// rustdoc learns the field maps to k8s-openapi's type without running `--explain`.
fn field_doc(f: &Field) -> Vec<String> {
    let Some(path) = k8s_path(&f.ty) else { return f.doc.clone() };
    let mut doc = f.doc.clone();
    if !doc.is_empty() {
        doc.push(String::new());
    }
    doc.push(format!(
        "Kubernetes' own type, k8s-openapi's `{path}`: the schema is that type's \
         (`--no-k8s-types` generates a struct instead)."
    ));
    doc
}

/// The k8s-openapi type `ty` is, or holds as list items or map values.
fn k8s_path(ty: &Ty) -> Option<&str> {
    match ty {
        Ty::K8s { path, .. } => Some(path),
        Ty::Vec(inner) | Ty::Nullable(inner) | Ty::Map(inner) => k8s_path(inner),
        _ => None,
    }
}

fn string_enum(e: &StringEnum, style: &Style, at: &Place<'_>) -> TokenStream {
    let name = format_ident!("{}", e.name);
    let vis = &style.vis;
    let doc = docs::attrs(&e.doc, style.docs);
    let other = format_ident!("{}", e.other);
    let variants: Vec<_> = e.variants.iter().map(|(v, _)| format_ident!("{v}")).collect();
    let values: Vec<&String> = e.variants.iter().map(|(_, value)| value).collect();
    let variant_docs =
        e.variants.iter().map(|(_, value)| docs::attrs(&[format!("`{value:?}`")], style.docs));
    let other_doc =
        docs::attrs(&["A value the schema does not list, kept as it is.".to_owned()], style.docs);
    // Serialize and Deserialize are written by hand below: the string, whatever the variant.
    let extra_derives = extra_derives(
        style,
        at,
        &e.name,
        &["Clone", "Debug", "PartialEq", "Eq", "Hash", "Default", "Serialize", "Deserialize"],
    );
    let attributes = style.hooks.type_attributes(at, &e.name);
    let schemars = style.schemars.then(|| {
        let title = &e.name;
        quote! {
            #[automatically_derived]
            impl ::schemars::JsonSchema for #name {
                fn schema_name() -> ::std::borrow::Cow<'static, str> {
                    ::std::borrow::Cow::Borrowed(#title)
                }
                fn json_schema(_: &mut ::schemars::SchemaGenerator) -> ::schemars::Schema {
                    ::schemars::json_schema!({ "type": "string", "enum": [#(#values),*] })
                }
            }
        }
    });
    quote! {
        #doc
        #attributes
        #[derive(Clone, Debug, PartialEq, Eq, Hash, #(#extra_derives,)*)]
        #vis enum #name {
            #(#variant_docs #variants,)*
            #other_doc
            #other(::std::string::String),
        }

        impl #name {
            /// The value as it is written in JSON.
            #[must_use]
            #vis fn as_str(&self) -> &str {
                match self {
                    #(Self::#variants => #values,)*
                    Self::#other(value) => value,
                }
            }
        }

        #[automatically_derived]
        impl ::std::convert::From<&str> for #name {
            fn from(value: &str) -> Self {
                match value {
                    #(#values => Self::#variants,)*
                    _ => Self::#other(value.to_owned()),
                }
            }
        }

        #[automatically_derived]
        impl ::std::fmt::Display for #name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        #[automatically_derived]
        impl ::serde::Serialize for #name {
            fn serialize<S: ::serde::Serializer>(&self, serializer: S) -> ::std::result::Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }

        #[automatically_derived]
        impl<'de> ::serde::Deserialize<'de> for #name {
            fn deserialize<D: ::serde::Deserializer<'de>>(deserializer: D) -> ::std::result::Result<Self, D::Error> {
                let value = <::std::string::String as ::serde::Deserialize>::deserialize(deserializer)?;
                ::std::result::Result::Ok(match value.as_str() {
                    #(#values => Self::#variants,)*
                    _ => Self::#other(value),
                })
            }
        }
        #schemars
    }
}

/// The constant in a group module that holds the CRD manifest of the root type `type_name`, as
/// JSON text.
pub(crate) fn manifest_const(type_name: &str) -> syn::Ident {
    format_ident!("{}_CRD", heck::AsShoutySnakeCase(type_name).to_string())
}

/// k8s-openapi's `Resource`, `ListableResource` and `Metadata`, and a `Serialize` that writes
/// `apiVersion` and `kind`.
fn root_impls(s: &Struct, root: &Root, style: &Style) -> TokenStream {
    let name = format_ident!("{}", s.name);
    let vis = &style.vis;
    let manifest = manifest_const(&s.name);
    let crd_name = format!("{}.{}", root.plural, root.group);
    let doc_crd = format!(
        " The `CustomResourceDefinition` `{}` was generated from (`{crd_name}`, every version), \
         to install on an API server before informers of `{}` start.",
        s.name, s.name
    );
    let panic = format!("the CustomResourceDefinition of {}: {{}}", s.name);
    let identity = Identity {
        group: &root.group,
        version: &root.version,
        kind: &root.kind,
        plural: &root.plural,
        list_kind: &root.list_kind,
        namespaced: root.namespaced,
    };
    let k8s: syn::Path = syn::parse_quote!(::k8s_openapi);
    let resource = resource_impls(&k8s, &name, &identity, proc_macro2::Span::call_site());
    let entries = s.fields.iter().map(|f| {
        let field = ident(&f.rust_name);
        let json = &f.json_name;
        if f.required || f.write_null {
            quote! { map.serialize_entry(#json, &self.#field)?; }
        } else {
            quote! {
                if let ::std::option::Option::Some(value) = &self.#field {
                    map.serialize_entry(#json, value)?;
                }
            }
        }
    });
    let extra = s.extra.as_ref().map(|extra| {
        let field = ident(&extra.rust_name);
        quote! {
            for (key, value) in &self.#field {
                // Written above, whatever an old object might have left in the map.
                if key != "apiVersion" && key != "kind" {
                    map.serialize_entry(key, value)?;
                }
            }
        }
    });
    quote! {
        #resource

        impl #name {
            #[doc = #doc_crd]
            ///
            /// It is the CRD file's `apiVersion`, `kind`, `metadata.name` and `spec`, embedded as
            /// JSON when the code was generated.
            ///
            /// # Panics
            ///
            /// If k8s-openapi cannot read the embedded manifest (a bug in informer-gen).
            #[must_use]
            #vis fn crd() -> ::k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition {
                match ::serde_json::from_str(super::#manifest) {
                    ::std::result::Result::Ok(crd) => crd,
                    ::std::result::Result::Err(e) => ::std::panic!(#panic, e),
                }
            }
        }

        #[automatically_derived]
        impl ::serde::Serialize for #name {
            fn serialize<S: ::serde::Serializer>(&self, serializer: S) -> ::std::result::Result<S::Ok, S::Error> {
                use ::serde::ser::SerializeMap as _;
                let mut map = serializer.serialize_map(::std::option::Option::None)?;
                map.serialize_entry("apiVersion", <Self as ::k8s_openapi::Resource>::API_VERSION)?;
                map.serialize_entry("kind", <Self as ::k8s_openapi::Resource>::KIND)?;
                #(#entries)*
                #extra
                map.end()
            }
        }
    }
}
