//! The conversion of a kind's versions through its hub, as `informer-webhook` defines it:
//! `#[informer(hub(...))]` and `informer-gen --conversion-hubs` both write these impls.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned as _;

/// `impl Hub for hub` (a `Converter` with each of `spokes`) and `impl KindHub` for the hub and
/// each spoke, through `webhook`, the path of the `informer-webhook` crate.
///
/// Each spoke's part carries the spoke path's span, so that a missing conversion (its
/// `TryFrom` both ways) or a second hub naming the same spoke (*conflicting implementations of
/// trait `KindHub`*) is reported at that path.
///
/// ```
/// let code = informer_emit::conversion_hub(
///     &syn::parse_quote!(::informer_webhook),
///     &syn::parse_quote!(v2::Widget),
///     &[syn::parse_quote!(v1::Widget)],
/// );
/// let code = code.to_string();
/// assert!(code.contains("impl :: informer_webhook :: convert :: Hub for v2 :: Widget"));
/// assert!(code.contains("spoke :: < v1 :: Widget >"));
/// ```
#[must_use]
pub fn conversion_hub(webhook: &syn::Path, hub: &syn::Path, spokes: &[syn::Path]) -> TokenStream {
    let spoke_calls = spokes.iter().map(|s| quote_spanned!(s.span()=> .spoke::<#s>()));
    let spoke_impls = spokes.iter().map(|s| {
        quote_spanned! {s.span()=>
            #[automatically_derived]
            impl #webhook::convert::KindHub for #s {
                type Hub = #hub;
            }
        }
    });
    quote! {
        #[automatically_derived]
        impl #webhook::convert::Hub for #hub {
            fn converter() -> #webhook::convert::Converter<Self> {
                #webhook::convert::Converter::<Self>::new() #(#spoke_calls)*
            }
        }

        #[automatically_derived]
        impl #webhook::convert::KindHub for #hub {
            type Hub = Self;
        }

        #(#spoke_impls)*
    }
}
