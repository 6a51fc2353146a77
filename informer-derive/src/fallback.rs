//! What to emit next to the errors (thiserror's `fallback.rs`): the resource traits with
//! placeholder values, so that the rest of the crate still type-checks and the user sees the
//! attribute errors, not a cascade of "`Foo` is not a `Resource`" at every use.

use proc_macro2::TokenStream;
use quote::quote;

/// Placeholder impls for a struct with named fields and no generics; nothing for other shapes
/// (their errors say the derive cannot apply at all).
pub(crate) fn stub(input: &syn::DeriveInput) -> TokenStream {
    let syn::Data::Struct(data) = &input.data else { return TokenStream::new() };
    let syn::Fields::Named(fields) = &data.fields else { return TokenStream::new() };
    if !input.generics.params.is_empty() {
        return TokenStream::new();
    }
    let ident = &input.ident;
    let metadata = fields.named.iter().any(|f| f.ident.as_ref().is_some_and(|i| i == "metadata"));
    let metadata = metadata.then(|| {
        quote! {
            #[automatically_derived]
            impl ::k8s_openapi::Metadata for #ident {
                type Ty = ::k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
                fn metadata(&self) -> &Self::Ty {
                    ::core::unreachable!()
                }
                fn metadata_mut(&mut self) -> &mut Self::Ty {
                    ::core::unreachable!()
                }
            }
        }
    });
    // `informers!` then stops quietly at this type, instead of adding errors to the derive's.
    let helper = crate::informers::helper(ident, &input.vis, None);
    quote! {
        #helper
        #[allow(unused_qualifications, clippy::all, clippy::pedantic)]
        const _: () = {
            #[automatically_derived]
            impl ::k8s_openapi::Resource for #ident {
                const API_VERSION: &'static str = "";
                const GROUP: &'static str = "";
                const KIND: &'static str = "";
                const VERSION: &'static str = "";
                const URL_PATH_SEGMENT: &'static str = "";
                type Scope = ::k8s_openapi::NamespaceResourceScope;
            }
            #[automatically_derived]
            impl ::k8s_openapi::ListableResource for #ident {
                const LIST_KIND: &'static str = "";
            }
            #metadata
        };
    }
}
