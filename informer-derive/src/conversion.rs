//! `hub(...)`: the conversion of a kind's versions through this one, as `informer-webhook`
//! defines it. Emitted only when the attribute is written, through the `informer_webhook` path
//! (`::informer_webhook` unless `crates(informer_webhook = path)` says otherwise), so that
//! neither this crate nor `informer-runtime` knows `informer-webhook`, and a crate without hubs
//! needs no dependency on it.
//!
//! For `#[informer(..., hub(v1::Foo, v3::Foo))]` on `v2::Foo`, in the resource's anonymous
//! const:
//!
//! - `impl informer_webhook::convert::Hub for v2::Foo`: a `Converter` with `v2::Foo` as the hub
//!   and `.spoke::<v1::Foo>().spoke::<v3::Foo>()`, each spoke's `TryFrom` conversions checked
//!   there, at the spoke's path in the attribute;
//! - `impl informer_webhook::convert::KindHub` for the hub and each spoke, with `Hub = v2::Foo`:
//!   a second hub that names this one, or a spoke of this one, implements it again for the same
//!   type, which rustc refuses (*conflicting implementations of trait `KindHub`*);
//! - `v2::Foo::crd_with_conversion(target, ca_bundle)` (and `try_…`): the CRDs of the hub and
//!   its spokes merged by `informer_runtime::crd::merge`, with `spec.conversion` set to the
//!   webhook by `informer_webhook::crd::with_conversion_webhook`.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned as _;

use crate::valid::Input;

/// The conversion impls of a hub with `spokes`.
pub(crate) fn hub(input: &Input, spokes: &[syn::Path]) -> TokenStream {
    let ident = &input.ident;
    let wh = &input.crates.informer_webhook;
    let rt = &input.crates.informer_runtime;
    let k8s = &input.crates.k8s_openapi;
    // Each spoke's bounds (`TryFrom` both ways, a `Version`) are checked at its path.
    let impls = informer_emit::conversion_hub(wh, &syn::Path::from(ident.clone()), spokes);
    let spoke_crds = spokes.iter().map(|s| quote_spanned!(s.span()=> <#s>::try_crd()?));
    let crd = quote!(#k8s::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition);
    let kind = &input.kind;
    let doc = format!(
        " The `CustomResourceDefinition` of `{kind}` with every version this hub converts \
         (`{ident}` and its spokes), merged by `informer_runtime::crd::merge`, whose \
         `spec.conversion` sends conversions to the webhook at `target`, trusted through \
         `ca_bundle` (the PEM of the CA that signed the webhook's serving certificate)."
    );
    quote! {
        #impls

        #[automatically_derived]
        impl #ident {
            #[doc = #doc]
            ///
            /// # Panics
            ///
            /// As [`try_crd_with_conversion`](Self::try_crd_with_conversion) fails: when the
            /// versions disagree (see `informer_runtime::crd::merge`) or a schema is recursive.
            #[must_use]
            pub fn crd_with_conversion(
                target: &#wh::crd::WebhookTarget,
                ca_bundle: &[u8],
            ) -> #crd {
                match Self::try_crd_with_conversion(target, ca_bundle) {
                    ::core::result::Result::Ok(crd) => crd,
                    ::core::result::Result::Err(e) => ::core::panic!("{}", e),
                }
            }

            #[doc = #doc]
            ///
            /// # Errors
            ///
            /// When a version's `try_crd()` fails (a recursive schema), or the versions do
            /// not merge: they disagree on the group, the names or the scope, or not exactly
            /// one is the storage version. The error names the field and the versions.
            pub fn try_crd_with_conversion(
                target: &#wh::crd::WebhookTarget,
                ca_bundle: &[u8],
            ) -> ::core::result::Result<#crd, #rt::crd::Error> {
                let merged = #rt::crd::merge([Self::try_crd()?, #(#spoke_crds),*])?;
                ::core::result::Result::Ok(#wh::crd::with_conversion_webhook(merged, target, ca_bundle))
            }
        }
    }
}

/// What stands in for a hub's CRD functions next to errors, so that the code installing the
/// CRD adds no errors of its own. (`Hub` is not stubbed: it needs `Serialize`, which the stub
/// of a struct with errors does not have.)
pub(crate) fn stub(
    ident: &syn::Ident,
    wh: &syn::Path,
    rt: &syn::Path,
    k8s: &syn::Path,
) -> TokenStream {
    let crd = quote!(#k8s::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition);
    quote! {
        #[automatically_derived]
        #[allow(missing_docs)]
        impl #ident {
            pub fn crd_with_conversion(_: &#wh::crd::WebhookTarget, _: &[u8]) -> #crd {
                ::core::unreachable!()
            }
            pub fn try_crd_with_conversion(
                _: &#wh::crd::WebhookTarget,
                _: &[u8],
            ) -> ::core::result::Result<#crd, #rt::crd::Error> {
                ::core::unreachable!()
            }
        }
    }
}
