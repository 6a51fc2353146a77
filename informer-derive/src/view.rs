//! The expansion of a view (a projection), `#[informer(view = Pod)]`: a struct with some of
//! `Pod`'s fields, whose informer decodes each pod straight into it.
//!
//! For `struct PodView` viewing `Pod` the expansion is:
//!
//! - next to the type: `PodViewInformer<'a, S>`, `PodViewLister` and `PodViewNamespaceLister`
//!   (always: whether `Pod` is namespaced is known to the compiler, not to the derive; the
//!   namespace lister is reachable only through `lister.namespace(..)`, which needs a
//!   namespaced kind), and a hidden helper with which `informers!` fails, saying views have no
//!   grouped accessors;
//! - in a `const _: () = { ... };` block: `informer_runtime::Resource` with `Pod`'s identity
//!   (read from `<Pod as informer_runtime::Resource>`, so any resource type can be viewed) and
//!   marked partial; and `serde::Serialize`, the fields as serde's derive writes them.
//!
//! Not k8s-openapi's traits: with them the view would be an `informer_runtime::WholeObject`
//! (and a `kube::Resource`), writable through clients as if it were the whole object, and the
//! API server would lose every field the view lacks. No `crd()`: the viewed type's resource is
//! the one on the server.

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned as _;

use crate::informers;
use crate::parts::{hidden, remote_serialize};
use crate::valid::Input;

/// Everything a view gets.
pub(crate) fn expand(input: &Input, viewed: &syn::Path) -> TokenStream {
    let aliases = aliases(input, viewed);
    let helper = helper(input);
    let resource = resource_impl(input, viewed);
    let serialize = serialize(input);
    let impls = hidden(&quote! {
        #resource
        #serialize
    });
    quote! {
        #aliases
        #helper
        #impls
    }
}

/// The last segment of `path`, for docs and messages.
fn short_name(path: &syn::Path) -> String {
    path.segments.last().map_or_else(String::new, |s| s.ident.to_string())
}

fn aliases(input: &Input, viewed: &syn::Path) -> TokenStream {
    let Input { ident, vis, .. } = input;
    let rt = &input.crates.informer_runtime;
    let viewed = short_name(viewed);
    let informer_doc = format!(" Informer for `{ident}`, a view of `{viewed}`.");
    let lister_doc = format!(" Lister of `{ident}`, a view of `{viewed}`.");
    let ns_doc = format!(
        " Lister of `{ident}`, a view of `{viewed}`, in one namespace (when `{viewed}` is \
         namespaced)."
    );
    let informer = format_ident!("{ident}Informer");
    let lister = format_ident!("{ident}Lister");
    let ns_lister = format_ident!("{ident}NamespaceLister");
    quote! {
        #[doc = #informer_doc]
        #vis type #informer<'a, S> = #rt::informers::TypedInformer<'a, S, #ident>;
        #[doc = #lister_doc]
        #vis type #lister = #rt::Lister<#ident>;
        #[doc = #ns_doc]
        #vis type #ns_lister = #rt::NamespaceLister<#ident>;
    }
}

/// The helper `informers!` calls: an error, as a view has the accessor names of the type it
/// views, and `factory.core().v1().pods()` is that type's.
fn helper(input: &Input) -> TokenStream {
    let ident = &input.ident;
    let message = format!(
        "`{ident}` is a view: views have no grouped accessors (the accessor is the viewed \
         type's); remove it from `informers!` and use `factory.informer::<{ident}>()` or \
         `{ident}Informer::new(&factory)`"
    );
    let body = quote! {
        ($($rest:tt)*) => { ::core::compile_error!(#message); };
    };
    informers::helper_with(ident, &input.vis, &body)
}

fn resource_impl(input: &Input, viewed: &syn::Path) -> TokenStream {
    let ident = &input.ident;
    let rt = &input.crates.informer_runtime;
    let k8s = &input.crates.k8s_openapi;
    // A path that is not a resource is reported at the path.
    let of = quote_spanned!(viewed.span()=> <#viewed as #rt::Resource>);
    // A `metadata` of another type is reported at the field's type.
    let span = input.metadata.ty.span();
    let meta = quote_spanned!(span=> #k8s::apimachinery::pkg::apis::meta::v1::ObjectMeta);
    let get = quote_spanned!(span=> &self.metadata);
    let get_mut = quote_spanned!(span=> &mut self.metadata);
    quote! {
        #[automatically_derived]
        impl #rt::Resource for #ident {
            const API_VERSION: &'static str = #of::API_VERSION;
            const GROUP: &'static str = #of::GROUP;
            const VERSION: &'static str = #of::VERSION;
            const KIND: &'static str = #of::KIND;
            const PLURAL: &'static str = #of::PLURAL;
            type Scope = #of::Scope;
            const PARTIAL: bool = true;
        }

        #[automatically_derived]
        impl #rt::Object for #ident {
            fn meta(&self) -> &#meta {
                #get
            }

            fn meta_mut(&mut self) -> &mut #meta {
                #get_mut
            }
        }
    }
}

/// The fields as serde's derive writes them: no `apiVersion` and `kind`, so the output never
/// passes for the whole object.
fn serialize(input: &Input) -> TokenStream {
    let ident = &input.ident;
    let serde = &input.crates.serde;
    let remote = remote_serialize(input);
    quote! {
        #remote

        #[automatically_derived]
        impl #serde::Serialize for #ident {
            fn serialize<__S: #serde::Serializer>(&self, serializer: __S) -> ::core::result::Result<__S::Ok, __S::Error> {
                __InformerSerialize::serialize(self, serializer)
            }
        }
    }
}
