//! What to emit next to the errors (thiserror's `fallback.rs`): the resource traits with
//! placeholder values and the informer and lister aliases, so that the rest of the crate still
//! type-checks and the user sees the attribute errors, not a cascade of "`Foo` is not a
//! `Resource`" at every use, "cannot find type `FooLister`", nor "no function `crd`" where the
//! CRD is installed. The stub names the crates where `crates(...)` says they
//! are, as the expansion would: a crate that reaches k8s-openapi only through a facade has no
//! `::k8s_openapi`.

use proc_macro2::TokenStream;
use quote::quote;

use crate::attrs;
use crate::ctxt::Ctxt;
use crate::valid;

/// Placeholder impls for a struct with named fields and no generics; nothing for other shapes
/// (their errors say the derive cannot apply at all).
pub(crate) fn stub(input: &syn::DeriveInput) -> TokenStream {
    let syn::Data::Struct(data) = &input.data else { return TokenStream::new() };
    let syn::Fields::Named(fields) = &data.fields else { return TokenStream::new() };
    if !input.generics.params.is_empty() {
        return TokenStream::new();
    }
    let ident = &input.ident;
    // The attributes' errors are reported already; only the paths are wanted here.
    let parsed = attrs::get(&mut Ctxt::default(), &input.attrs);
    let crates = valid::crates(&parsed.crates);
    let (k8s, rt) = (&crates.k8s_openapi, &crates.informer_runtime);
    let metadata = fields.named.iter().any(|f| f.ident.as_ref().is_some_and(|i| i == "metadata"));
    let metadata = metadata.then(|| {
        quote! {
            #[automatically_derived]
            impl #k8s::Metadata for #ident {
                type Ty = #k8s::apimachinery::pkg::apis::meta::v1::ObjectMeta;
                fn metadata(&self) -> &Self::Ty {
                    ::core::unreachable!()
                }
                fn metadata_mut(&mut self) -> &mut Self::Ty {
                    ::core::unreachable!()
                }
            }
        }
    });
    // A view has no CRD; a resource's is installed somewhere, and that call should not fail too.
    let crd = (!parsed.view_written).then(|| {
        let crd = quote!(#k8s::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition);
        quote! {
            #[automatically_derived]
            #[allow(missing_docs)]
            impl #ident {
                pub fn crd() -> #crd {
                    ::core::unreachable!()
                }
                pub fn try_crd() -> ::core::result::Result<#crd, #rt::crd::Error> {
                    ::core::unreachable!()
                }
            }
        }
    });
    // A hub's CRD is installed somewhere too.
    let hub = (!parsed.view_written && parsed.hub.get().is_some())
        .then(|| crate::conversion::stub(ident, &crates.informer_webhook, rt, k8s));
    // Code naming `FooInformer` or `FooLister` should not fail too. The scope is unknown here,
    // so `FooNamespaceLister` is written as well; the docs are never read.
    let aliases = (!parsed.view_written).then(|| {
        let words = format!("{ident} objects");
        informer_emit::aliases(rt, &input.vis, &ident.to_string(), ident, &words, "unknown", true)
    });
    // `informers!` then stops quietly at this type, instead of adding errors to the derive's.
    let helper = crate::informers::helper(ident, &input.vis, None);
    quote! {
        #aliases
        #helper
        #[allow(unused_qualifications, clippy::all, clippy::pedantic)]
        const _: () = {
            #[automatically_derived]
            impl #k8s::Resource for #ident {
                const API_VERSION: &'static str = "";
                const GROUP: &'static str = "";
                const KIND: &'static str = "";
                const VERSION: &'static str = "";
                const URL_PATH_SEGMENT: &'static str = "";
                type Scope = #k8s::NamespaceResourceScope;
            }
            #[automatically_derived]
            impl #k8s::ListableResource for #ident {
                const LIST_KIND: &'static str = "";
            }
            #metadata
            #crd
            #hub
        };
    }
}
