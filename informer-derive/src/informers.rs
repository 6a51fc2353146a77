//! `informers!(Foo, bar::Bar)`: grouped factory accessors for derived types, the same items
//! informer-gen writes for CRDs (`informer_emit::accessors`).
//!
//! A macro sees only the paths it is given, not the `#[informer(...)]` attributes of the types
//! they name, so each derive leaves, next to its type, a hidden `macro_rules!` with the type's
//! name in the macro namespace ([`helper`]): wherever the type can be named, so can it, whether
//! by its path or through a `use`. `informers!` calls the first type's helper, which calls the
//! next one with its names appended, and so on; the last calls `informers!` back with every
//! type's names (the "callback" pattern of ambassador's delegation macros):
//!
//! ```text
//! informers!(A, b::B)
//!   → A! { [b::B] [::informer_derive::informers] @collected [A, b::B] }
//!   → b::B! { [::informer_derive::informers] @collected [A, b::B] { names of A } }
//!   → ::informer_derive::informers! { @collected [A, b::B] { names of A } { names of B } }
//!   → the trait, the group modules and the accessors
//! ```

use std::collections::BTreeMap;

use informer_emit::accessors::{
    accessor, factory_trait, group_items, group_module_attrs, version_module_doc, version_struct,
};
use informer_emit::names::{custom_group_modules, method_name, module_name, version_module};
use proc_macro2::{Span, TokenStream};
use quote::{ToTokens, format_ident, quote};
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::{LitStr, Token};

/// The hidden `macro_rules!` of a derived type `ident` with visibility `vis`: it calls the
/// macro named in its first bracket with the rest of its input and `{ data }` appended. Without
/// `data` (the derive failed, and said why) it ends the chain quietly instead of adding errors.
pub(crate) fn helper(
    ident: &syn::Ident,
    vis: &syn::Visibility,
    data: Option<&TokenStream>,
) -> TokenStream {
    let body = data.map_or_else(
        || quote! { ($($rest:tt)*) => {}; },
        |data| {
            quote! {
                ([$($next:tt)*] $($rest:tt)*) => { $($next)* ! { $($rest)* { #data } } };
            }
        },
    );
    helper_with(ident, vis, &body)
}

/// The hidden `macro_rules!` of `ident` with the arms `body`.
pub(crate) fn helper_with(
    ident: &syn::Ident,
    vis: &syn::Visibility,
    body: &TokenStream,
) -> TokenStream {
    let module = format_ident!("__informer_{ident}");
    // A macro_rules! can be re-exported at most crate-wide.
    let vis = if let syn::Visibility::Public(_) = vis {
        quote!(pub(crate))
    } else {
        vis.to_token_stream()
    };
    quote! {
        // In a module of its own, so that the macro's textual scope ends there: a type of the
        // same name in a child module gets its own.
        #[doc(hidden)]
        #[allow(non_snake_case, unused_macros, unused_imports)]
        mod #module {
            macro_rules! informer {
                #body
            }
            pub(crate) use informer;
        }
        #[doc(hidden)]
        #[allow(unused_imports)]
        #vis use #module::informer as #ident;
    }
}

/// `informers!(...)`: the first call with the user's paths, or the last with their names.
pub(crate) fn expand(input: TokenStream) -> TokenStream {
    let result = match syn::parse2::<Input>(input) {
        Ok(Input::Paths(paths)) => start(&paths),
        Ok(Input::Collected(collected)) => finish(&collected),
        Err(error) => Err(error),
    };
    result.unwrap_or_else(syn::Error::into_compile_error)
}

enum Input {
    Paths(Vec<syn::Path>),
    Collected(Collected),
}

/// `@collected [paths] { names }...`
struct Collected {
    paths: Vec<syn::Path>,
    names: Vec<Names>,
}

/// One type's names, as its helper writes them.
struct Names {
    group: String,
    version: String,
    kind: String,
    plural: String,
    informer_runtime: syn::Path,
}

const USAGE: &str = "list the `#[derive(Informer)]` types by path, like \
                     `informers!(Foo, crate::bar::Bar)`";

impl Parse for Input {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        if input.peek(Token![@]) {
            input.parse::<Token![@]>()?;
            let marker: syn::Ident = input.parse()?;
            if marker != "collected" {
                return Err(syn::Error::new(marker.span(), USAGE));
            }
            let content;
            syn::bracketed!(content in input);
            let paths = Punctuated::<syn::Path, Token![,]>::parse_terminated(&content)?;
            let mut names = Vec::new();
            while !input.is_empty() {
                let content;
                syn::braced!(content in input);
                names.push(content.parse()?);
            }
            return Ok(Input::Collected(Collected { paths: paths.into_iter().collect(), names }));
        }
        let paths = Punctuated::<syn::Type, Token![,]>::parse_terminated(input)
            .map_err(|e| syn::Error::new(e.span(), USAGE))?;
        let mut out = Vec::new();
        for ty in paths {
            match ty {
                syn::Type::Path(syn::TypePath { qself: None, path })
                    if path.segments.iter().all(|s| s.arguments.is_none()) =>
                {
                    out.push(path);
                }
                other => {
                    return Err(syn::Error::new_spanned(
                        other,
                        "expected the path of a `#[derive(Informer)]` struct, which has no \
                         generics: write `Foo` or `crate::foo::Foo`",
                    ));
                }
            }
        }
        Ok(Input::Paths(out))
    }
}

impl Parse for Names {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        fn value<T: Parse>(input: ParseStream<'_>, key: &str) -> syn::Result<T> {
            let ident: syn::Ident = input.parse()?;
            if ident != key {
                return Err(syn::Error::new(ident.span(), format!("expected `{key}`")));
            }
            input.parse::<Token![=]>()?;
            let value = input.parse()?;
            if !input.is_empty() {
                input.parse::<Token![,]>()?;
            }
            Ok(value)
        }
        let group: LitStr = value(input, "group")?;
        let version: LitStr = value(input, "version")?;
        let kind: LitStr = value(input, "kind")?;
        let plural: LitStr = value(input, "plural")?;
        let informer_runtime = value(input, "informer_runtime")?;
        Ok(Names {
            group: group.value(),
            version: version.value(),
            kind: kind.value(),
            plural: plural.value(),
            informer_runtime,
        })
    }
}

/// The first helper's call, passing the others and finally this macro.
fn start(paths: &[syn::Path]) -> syn::Result<TokenStream> {
    let Some((first, rest)) = paths.split_first() else {
        return Err(syn::Error::new(Span::call_site(), USAGE));
    };
    for (i, path) in paths.iter().enumerate() {
        if paths[..i].iter().any(|earlier| same_path(earlier, path)) {
            return Err(syn::Error::new_spanned(path, "this type is listed twice: list it once"));
        }
    }
    Ok(quote! {
        #first! { #([#rest])* [::informer_derive::informers] @collected [#(#paths),*] }
    })
}

fn same_path(a: &syn::Path, b: &syn::Path) -> bool {
    a.to_token_stream().to_string() == b.to_token_stream().to_string()
}

/// `path` as seen from a version module, two levels below where `informers!` was called.
fn from_version_module(path: &syn::Path) -> TokenStream {
    let first = path.segments.first().map(|s| s.ident.to_string());
    if path.leading_colon.is_some() || first.as_deref() == Some("crate") {
        return path.to_token_stream();
    }
    let segments = path.segments.iter().skip(usize::from(first.as_deref() == Some("self")));
    quote!(super::super::#(#segments)::*)
}

/// A listed type's path, and its plural (for a message when two share an accessor).
type Listed<'a> = (&'a syn::Path, &'a str);

/// The trait, and a module per group with a module per version.
fn finish(collected: &Collected) -> syn::Result<TokenStream> {
    let Some(first) = collected.names.first() else {
        return Err(syn::Error::new(Span::call_site(), USAGE));
    };
    let rt = &first.informer_runtime;
    // group -> version -> method -> the type's path and plural
    let mut tree: BTreeMap<&str, BTreeMap<&str, BTreeMap<String, Listed<'_>>>> = BTreeMap::new();
    for (path, names) in collected.paths.iter().zip(&collected.names) {
        let method = module_name(&method_name(&names.kind, &names.plural));
        let methods = tree
            .entry(names.group.as_str())
            .or_default()
            .entry(names.version.as_str())
            .or_default();
        if let Some((earlier, earlier_plural)) = methods.get(&method) {
            let earlier = earlier.to_token_stream().to_string().replace(' ', "");
            let message = if *earlier_plural == names.plural {
                format!(
                    "this type is `{}` of {}/{} too, like `{earlier}`: list one type per resource",
                    names.plural, names.group, names.version,
                )
            } else {
                // Plurals that differ only in dashes (`foo-bars`, `foobars`) share an accessor.
                format!(
                    "this type's plural `{}` makes the accessor `{method}()` of {}/{}, as \
                     `{earlier}`'s plural `{earlier_plural}` does: give one of them another plural",
                    names.plural, names.group, names.version,
                )
            };
            return Err(syn::Error::new_spanned(path, message));
        }
        methods.insert(method, (path, names.plural.as_str()));
    }
    let groups: Vec<&str> = tree.keys().copied().collect();
    let modules = custom_group_modules(&groups);
    // Unlike informer-gen's file, these items land in a module the user may keep private, in a
    // crate that may deny the allow-by-default lints: `pub` items there are unreachable, and
    // `Group` and `Version` have no `Debug`.
    let trait_and_impl = factory_trait(rt, &syn::parse_quote!(pub), &modules, &collected.paths);
    let mut items = quote! {
        #[allow(unreachable_pub)]
        #trait_and_impl
    };
    for (group, module) in &modules {
        let versions = &tree[group.as_str()];
        let version_names: Vec<&str> = versions.keys().copied().collect();
        let attrs = group_module_attrs(group);
        let module = format_ident!("{module}");
        let group_items = group_items(rt, group, &version_names);
        let version_modules = versions.iter().map(|(version, methods)| {
            let gv = format!("{group}/{version}");
            let doc = version_module_doc(version);
            let ident = format_ident!("{}", version_module(version));
            let version_struct = version_struct(rt, &gv);
            let accessors = methods
                .iter()
                .map(|(method, (path, _))| accessor(rt, &gv, method, &from_version_module(path)));
            quote! {
                #[doc = #doc]
                pub mod #ident {
                    #version_struct
                    #(#accessors)*
                }
            }
        });
        items.extend(quote! {
            #attrs
            #[allow(unreachable_pub, missing_debug_implementations)]
            pub mod #module {
                #group_items
                #(#version_modules)*
            }
        });
    }
    Ok(items)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unparse(tokens: TokenStream) -> String {
        prettyplease::unparse(&syn::parse2::<syn::File>(tokens).unwrap())
    }

    #[test]
    fn start_chains_the_helpers() {
        let code = expand(quote!(Foo, crate::bar::Bar)).to_string();
        assert_eq!(
            code,
            quote!(Foo! { [crate::bar::Bar] [::informer_derive::informers] @collected [Foo, crate::bar::Bar] })
                .to_string()
        );
    }

    #[test]
    fn collected_names_become_grouped_accessors() {
        let code = unparse(expand(quote! {
            @collected [Foo, self::Bar, crate::baz::Baz]
            { group = "example.com", version = "v1", kind = "Foo", plural = "foos", informer_runtime = ::informer_runtime }
            { group = "example.com", version = "v1beta1", kind = "Bar", plural = "bars", informer_runtime = ::informer_runtime }
            { group = "apps.example.com", version = "v1", kind = "NetworkThing", plural = "networkthings", informer_runtime = ::informer_runtime }
        }));
        for expected in [
            "pub trait CustomResourceInformers<S> {",
            "fn example(&self) -> example::Group<'_, S>;",
            // `apps` is the built-in group's.
            "fn apps_example_com(&self) -> apps_example_com::Group<'_, S>;",
            "self.register::<Foo>();",
            "self.register::<self::Bar>();",
            "pub fn v1beta1(&self) -> v1beta1::Version<'a, S> {",
            // Paths as a version module, two levels down, sees them.
            "pub fn foos(\n",
            ") -> ::informer_runtime::informers::TypedInformer<'a, S, super::super::Foo> {",
            ") -> ::informer_runtime::informers::TypedInformer<'a, S, super::super::Bar> {",
            "pub fn network_things(\n",
            ") -> ::informer_runtime::informers::TypedInformer<'a, S, crate::baz::Baz> {",
        ] {
            assert!(code.contains(expected), "missing {expected:?} in\n{code}");
        }
    }

    #[test]
    fn mistakes_are_errors() {
        for (input, message) in [
            (quote!(), "list the `#[derive(Informer)]` types"),
            (quote!(Foo, Foo), "this type is listed twice"),
            (quote!(Vec<Foo>), "expected the path of a `#[derive(Informer)]` struct"),
            (
                quote! {
                    @collected [Foo, Bar]
                    { group = "example.com", version = "v1", kind = "Foo", plural = "foos", informer_runtime = ::rt }
                    { group = "example.com", version = "v1", kind = "Foo", plural = "foos", informer_runtime = ::rt }
                },
                "this type is `foos` of example.com/v1 too, like `Foo`",
            ),
        ] {
            let code = expand(input).to_string();
            assert!(code.contains("compile_error"), "{code}");
            assert!(code.contains(message), "missing {message:?} in {code}");
        }
    }
}
