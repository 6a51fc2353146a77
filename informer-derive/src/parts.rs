//! Parts both expansions emit, a custom resource's (`expand.rs`) and a view's (`view.rs`): the
//! anonymous const their impls go in, and serde's `Serialize` for a copy of the struct.
//!
//! Below both, so that a view's expansion takes them without importing the module that
//! dispatches to it.

use proc_macro2::TokenStream;
use quote::quote;

use crate::valid::{self, Input};

/// `items` in an anonymous const, where their helper names stay private and lints about
/// generated code stay quiet: how both a custom resource's and a view's impls are emitted.
pub(crate) fn hidden(items: &TokenStream) -> TokenStream {
    quote! {
        #[doc(hidden)]
        #[allow(non_upper_case_globals, unused_attributes, unused_qualifications, clippy::all, clippy::pedantic)]
        const _: () = {
            #items
        };
    }
}

/// The `#[serde(...)]` attributes of `attrs` less the items named in `drop`.
pub(crate) fn serde_attrs(attrs: &[syn::Attribute], drop: &[&str]) -> Vec<TokenStream> {
    attrs
        .iter()
        .filter(|a| a.path().is_ident("serde"))
        .filter_map(|a| {
            // An attribute serde cannot parse is serde's to report, on the user's struct.
            let metas = valid::serde_metas(a).ok()?;
            let kept: Vec<&syn::Meta> =
                metas.iter().filter(|m| !drop.iter().any(|d| m.path().is_ident(d))).collect();
            (!kept.is_empty()).then(|| quote!(#[serde(#(#kept),*)]))
        })
        .collect()
}

/// `path` as one string without spaces (`::serde`), for an attribute that takes a path as text.
pub(crate) fn path_string(path: &syn::Path) -> String {
    quote!(#path).to_string().replace(' ', "")
}

/// `struct __InformerSerialize`, a copy of the struct with its serde attributes, and serde's
/// `Serialize` derived for it with `remote = "Foo"`: `__InformerSerialize::serialize(&foo, s)`
/// writes `foo` as `#[derive(Serialize)]` on the struct would.
pub(crate) fn remote_serialize(input: &Input) -> TokenStream {
    let serde = &input.crates.serde;
    let serde_crate = path_string(serde);
    let remote = input.ident.to_string();
    // `default` only matters to `Deserialize`, and would need the copy to be `Default`.
    let container = serde_attrs(&input.attrs, &["crate", "remote", "default"]);
    let fields = input.fields.iter().map(|f| {
        let attrs = serde_attrs(&f.attrs, &[]);
        let name = &f.ident;
        let ty = &f.ty;
        quote!(#(#attrs)* #name: #ty)
    });
    quote! {
        #[derive(#serde::Serialize)]
        #[serde(crate = #serde_crate, remote = #remote)]
        #(#container)*
        #[allow(dead_code)]
        struct __InformerSerialize {
            #(#fields,)*
        }
    }
}
