//! What makes a type a resource (k8s-openapi's traits) and client-go's names for its informer
//! and listers.

use proc_macro2::{Span, TokenStream};
use quote::{ToTokens, format_ident, quote, quote_spanned};

use crate::names::method_name;

/// Who a resource is: what k8s-openapi's `Resource` and `ListableResource` say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Identity<'a> {
    /// API group (`""` for the core group).
    pub group: &'a str,
    /// API version (`v1`).
    pub version: &'a str,
    /// Kind (`Pod`).
    pub kind: &'a str,
    /// Plural resource name, as in URLs (`pods`).
    pub plural: &'a str,
    /// The kind of its lists (`PodList`).
    pub list_kind: &'a str,
    /// Whether objects live in namespaces.
    pub namespaced: bool,
}

impl Identity<'_> {
    /// `group/version`, or just `version` for the core group.
    #[must_use]
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.to_owned()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// The accessor method ([`method_name`]).
    #[must_use]
    pub fn method_name(&self) -> String {
        method_name(self.kind, self.plural)
    }
}

/// `impl Resource`, `impl ListableResource` and `impl Metadata<Ty = ObjectMeta>` (reading the
/// `metadata` field) for `ty`, with k8s-openapi at `k8s_openapi`.
///
/// `metadata_span` is where an error about the `metadata` field is reported (a derive gives the
/// field's type: a field of another type is then reported there); anything will do for code
/// that is formatted rather than compiled in place.
#[must_use]
pub fn resource_impls(
    k8s_openapi: &syn::Path,
    ty: &syn::Ident,
    identity: &Identity<'_>,
    metadata_span: Span,
) -> TokenStream {
    let k8s = k8s_openapi;
    let api_version = identity.api_version();
    let Identity { group, version, kind, plural, list_kind, namespaced } = identity;
    let scope = if *namespaced {
        quote!(#k8s::NamespaceResourceScope)
    } else {
        quote!(#k8s::ClusterResourceScope)
    };
    let meta = quote_spanned!(metadata_span=> #k8s::apimachinery::pkg::apis::meta::v1::ObjectMeta);
    let get = quote_spanned!(metadata_span=> &self.metadata);
    let get_mut = quote_spanned!(metadata_span=> &mut self.metadata);
    quote! {
        #[automatically_derived]
        impl #k8s::Resource for #ty {
            const API_VERSION: &'static str = #api_version;
            const GROUP: &'static str = #group;
            const KIND: &'static str = #kind;
            const VERSION: &'static str = #version;
            const URL_PATH_SEGMENT: &'static str = #plural;
            type Scope = #scope;
        }

        #[automatically_derived]
        impl #k8s::ListableResource for #ty {
            const LIST_KIND: &'static str = #list_kind;
        }

        #[automatically_derived]
        impl #k8s::Metadata for #ty {
            type Ty = #meta;

            fn metadata(&self) -> &Self::Ty {
                #get
            }

            fn metadata_mut(&mut self) -> &mut Self::Ty {
                #get_mut
            }
        }
    }
}

/// client-go's aliases for `ty`: `{name}Informer<'a, S>` (the runtime's `TypedInformer`),
/// `{name}Lister` and, when `namespaced`, `{name}NamespaceLister`, with visibility `vis`.
///
/// Their docs call the resource `words` in `gv` (`Informer for network policies
/// (networking.k8s.io/v1).`); `rt` is the path of `informer_runtime`.
#[must_use]
pub fn aliases(
    rt: &syn::Path,
    vis: &syn::Visibility,
    name: &str,
    ty: &impl ToTokens,
    words: &str,
    gv: &str,
    namespaced: bool,
) -> TokenStream {
    let informer_doc = format!(" Informer for {words} ({gv}).");
    let lister_doc = format!(" Lister of {words} ({gv}).");
    let ns_doc = format!(" Lister of {words} in one namespace ({gv}).");
    let informer = format_ident!("{name}Informer");
    let lister = format_ident!("{name}Lister");
    let ns_lister = format_ident!("{name}NamespaceLister");
    let ns = namespaced.then(|| {
        quote! {
            #[doc = #ns_doc]
            #vis type #ns_lister = #rt::NamespaceLister<#ty>;
        }
    });
    quote! {
        #[doc = #informer_doc]
        #vis type #informer<'a, S> = #rt::informers::TypedInformer<'a, S, #ty>;
        #[doc = #lister_doc]
        #vis type #lister = #rt::Lister<#ty>;
        #ns
    }
}
