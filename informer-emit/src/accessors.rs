//! Grouped factory accessors: `factory.<group>().<version>().<plural>()`.
//!
//! The layout, for group `example.com` (module `example`) and version `v1`:
//!
//! ```text
//! trait CustomResourceInformers<S>      factory_trait: fn example(&self) -> example::Group<'_, S>,
//!                                       fn register_custom_resources(&self); impl for the factory
//! mod example                           group_module_attrs
//!     struct Group<'a, S>               group_items: fn v1(&self) -> v1::Version<'a, S>
//!     mod v1                            version_module_doc
//!         struct Version<'a, S>         version_struct
//!         impl Version { fn foos() }    accessor: the runtime's TypedInformer<'a, S, Foo>
//! ```
//!
//! `rt` is always the path of `informer_runtime` where the items are placed.

use proc_macro2::TokenStream;
use quote::{ToTokens, format_ident, quote};

use crate::names;

/// The struct a version accessor returns, for `gv` (`example.com/v1`).
#[must_use]
pub fn version_struct(rt: &syn::Path, gv: &str) -> TokenStream {
    let doc = format!(" Informers of `{gv}`.");
    quote! {
        #[doc = #doc]
        pub struct Version<'a, S> {
            pub(crate) factory: &'a #rt::SharedInformerFactory<S>,
        }
    }
}

/// The accessor `method` on `Version`, returning the typed informer of `ty`; `gv` is for its doc.
#[must_use]
pub fn accessor(rt: &syn::Path, gv: &str, method: &str, ty: &impl ToTokens) -> TokenStream {
    let method_ident = format_ident!("{method}");
    let informer_doc = format!(" Informer for {} ({gv}).", words(method));
    quote! {
        impl<'a, S: #rt::ListWatchSource> Version<'a, S> {
            #[doc = #informer_doc]
            #[must_use]
            pub fn #method_ident(&self) -> #rt::informers::TypedInformer<'a, S, #ty> {
                #rt::informers::TypedInformer::new(self.factory)
            }
        }
    }
}

/// How docs call the resources of accessor `method`: its words (`network policies`).
#[must_use]
pub fn words(method: &str) -> String {
    method.replace('_', " ")
}

/// The attributes of a custom resource group's module: its doc, and the lints generated code
/// must not trip whatever the including crate denies.
#[must_use]
pub fn group_module_attrs(group: &str) -> TokenStream {
    let module_doc = format!(" Custom resources of the `{group}` API group.");
    quote! {
        #[doc = #module_doc]
        #[allow(dead_code, missing_docs, private_interfaces, clippy::all, clippy::pedantic, rustdoc::all)]
    }
}

/// The doc of a version's module.
#[must_use]
pub fn version_module_doc(version: &str) -> String {
    format!(" Custom resources of version `{version}`.")
}

/// A group module's own items: `Group` and one method per version (whose module is named after
/// it, by [`names::version_module`]).
#[must_use]
pub fn group_items(rt: &syn::Path, group: &str, versions: &[&str]) -> TokenStream {
    let version_methods = versions.iter().map(|version| {
        let ident = format_ident!("{}", names::version_module(version));
        let doc = format!(" Informers of `{group}/{version}`.");
        quote! {
            #[doc = #doc]
            #[must_use]
            pub fn #ident(&self) -> #ident::Version<'a, S> {
                #ident::Version { factory: self.factory }
            }
        }
    });
    let doc = format!(" Informers of the `{group}` API group.");
    let how = " What the factory's accessor of the group returns: a method of the \
        `CustomResourceInformers` trait, which must be in scope where it is called \
        (`use …::CustomResourceInformers as _;`).";
    quote! {
        #[doc = #doc]
        ///
        #[doc = #how]
        pub struct Group<'a, S> {
            pub(crate) factory: &'a #rt::SharedInformerFactory<S>,
        }

        impl<'a, S: #rt::ListWatchSource> Group<'a, S> {
            #(#version_methods)*
        }
    }
}

/// The `CustomResourceInformers` trait, with visibility `vis`, and its impl for the factory:
/// one method per `(group, module)` and `register_custom_resources`, registering `types`.
#[must_use]
pub fn factory_trait<T: ToTokens>(
    rt: &syn::Path,
    vis: &syn::Visibility,
    groups: &[(String, String)],
    types: &[T],
) -> TokenStream {
    let first = groups.first().map_or("example", |(_, module)| module.as_str());
    let missing = format!(
        " The accessors are methods of this trait: where it is not in scope, a call fails with \
         \"no method named `{first}` found\". Import it from the module that holds this code:"
    );
    let example = [
        " ```text".to_owned(),
        " use crate::crds::CustomResourceInformers as _; // `crds`: where this code is".to_owned(),
        String::new(),
        format!(" let informer = factory.{first}().<version>().<plural>();"),
        " ```".to_owned(),
    ];
    let mut trait_methods = Vec::new();
    let mut trait_impls = Vec::new();
    for (group, module) in groups {
        let module = format_ident!("{module}");
        let doc = format!(" Informers of the `{group}` API group.");
        trait_methods.push(quote! {
            #[doc = #doc]
            fn #module(&self) -> #module::Group<'_, S>;
        });
        trait_impls.push(quote! {
            fn #module(&self) -> #module::Group<'_, S> {
                #module::Group { factory: self }
            }
        });
    }
    quote! {
        /// Adds the grouped accessors of these custom resources to `SharedInformerFactory`
        /// (`factory.<group>().<version>().<plural>()`).
        ///
        #[doc = #missing]
        ///
        #(#[doc = #example])*
        #[allow(dead_code, reason = "a program may use only some of the groups")]
        #vis trait CustomResourceInformers<S> {
            #(#trait_methods)*
            /// Makes every custom resource here known to `for_resource`, without creating
            /// informers.
            fn register_custom_resources(&self);
        }

        #[automatically_derived]
        impl<S: #rt::ListWatchSource> CustomResourceInformers<S> for #rt::SharedInformerFactory<S> {
            #(#trait_impls)*
            #[allow(clippy::too_many_lines, reason = "one line per custom resource")]
            fn register_custom_resources(&self) {
                #(self.register::<#types>();)*
            }
        }
    }
}
