//! Grouped factory accessors (`factory.core().v1().pods()`) and client-go's aliases
//! (`PodInformer`, `PodLister`, `PodNamespaceLister`), for built-ins and custom resources alike.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use informer_emit::accessors::{accessor, version_struct, words};
use informer_emit::aliases;
use informer_emit::names::version_module;
use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use crate::spec::{NEWEST_MINOR, OLDEST_MINOR, ResourceSpec, group_names};

use super::{HEADER, indent, unparse};

/// The Kubernetes versions `(first, last)` an item exists in.
pub(crate) type Range = (u32, u32);

/// Every Kubernetes version k8s-openapi offers.
pub(crate) const ALL: Range = (OLDEST_MINOR, NEWEST_MINOR);

/// Grouped typed accessors for `specs`, as formatted Rust source starting with [`HEADER`].
///
/// For each API group a method on `SharedInformerFactory<S>` (`core()`, `apps()`, …) returning
/// a group struct, with a method per version (`v1()`) returning a version struct, with a method
/// per resource (`pods()`) returning the runtime's generic `TypedInformer`; per group/version a
/// module (`core::v1`) with `PodInformer`, `PodLister` and `PodNamespaceLister` aliases; and
/// `SharedInformerFactory::register_builtins`. Items that exist only in some Kubernetes versions
/// are wrapped in k8s-openapi's `k8s_if_ge_1_XX!` / `k8s_if_le_1_XX!` macros. `runtime_crate` is
/// the path of `informer_runtime` where the code is included (`crate` inside it).
///
/// # Errors
///
/// If `runtime_crate` is not a path, or a spec's `rust_path` is not a type path.
pub fn accessors(specs: &[ResourceSpec], runtime_crate: &str) -> Result<String, String> {
    let rt: syn::Path = syn::parse_str(runtime_crate)
        .map_err(|e| format!("runtime crate {runtime_crate:?}: {e}"))?;
    for spec in specs {
        syn::parse_str::<syn::Type>(&spec.rust_path)
            .map_err(|e| format!("rust_path {:?}: {e}", spec.rust_path))?;
    }
    let mut specs = specs.to_vec();
    specs.sort();
    specs.dedup();
    // group -> version -> method name -> spec
    let mut tree: BTreeMap<&str, BTreeMap<&str, BTreeMap<String, &ResourceSpec>>> = BTreeMap::new();
    for spec in &specs {
        tree.entry(&spec.group)
            .or_default()
            .entry(&spec.version)
            .or_default()
            .insert(spec.method_name(), spec);
    }
    let groups: Vec<&str> = tree.keys().copied().collect();
    let names = group_names(&groups);

    let mut out = format!("{HEADER}\n");
    for (group, name) in &names {
        let versions = &tree[group.as_str()];
        let group_range = union(versions.values().flat_map(|r| r.values().map(|s| range(s))));
        let module = format_ident!("{name}");
        let display = if group.is_empty() {
            "the core API group".to_owned()
        } else {
            format!("the `{group}` API group")
        };
        let mut body = String::new();
        for (version, resources) in versions {
            let version_range = union(resources.values().map(|s| range(s)));
            let text = version_module_text(&rt, group, version, resources, version_range);
            body.push_str(&wrap(version_range, group_range, text));
        }
        let doc = format!(" Informers of {display}.");
        let factory_doc = doc.clone();
        body.push_str(&unparse(quote! {
            #[doc = #doc]
            pub struct Group<'a, S> {
                pub(crate) factory: &'a #rt::SharedInformerFactory<S>,
            }
        }));
        for (version, resources) in versions {
            let version_range = union(resources.values().map(|s| range(s)));
            let ident = format_ident!("{}", version_module(version));
            let gv = resources.values().next().map(|s| s.group_version()).unwrap_or_default();
            let doc = format!(" Informers of `{gv}`.");
            let text = unparse(quote! {
                impl<'a, S: #rt::ListWatchSource> Group<'a, S> {
                    #[doc = #doc]
                    #[must_use]
                    pub fn #ident(&self) -> #ident::Version<'a, S> {
                        #ident::Version { factory: self.factory }
                    }
                }
            });
            body.push_str(&wrap(version_range, group_range, text));
        }
        let text = format!("///{doc}\npub mod {name} {{\n{}}}\n", indent(&body));
        out.push_str(&wrap(group_range, ALL, text));
        let text = unparse(quote! {
            impl<S: #rt::ListWatchSource> #rt::SharedInformerFactory<S> {
                #[doc = #factory_doc]
                #[must_use]
                pub fn #module(&self) -> #module::Group<'_, S> {
                    #module::Group { factory: self }
                }
            }
        });
        out.push_str(&wrap(group_range, ALL, text));
    }

    let mut registrations = String::new();
    for spec in &specs {
        let path = type_path(spec);
        let statement = unparse_statement(&quote! { self.register::<#path>(); });
        registrations.push_str(&wrap(range(spec), ALL, statement));
    }
    let doc = " Makes every built-in resource known to [`for_resource`](Self::for_resource), without creating informers.";
    let header = unparse(quote! {
        impl<S: #rt::ListWatchSource> #rt::SharedInformerFactory<S> {
            #[doc = #doc]
            pub fn register_builtins(&self) {}
        }
    });
    let header = header.trim_end().strip_suffix("{}\n}").unwrap_or(&header).to_owned();
    let _ = write!(out, "{header}{{\n{}    }}\n}}\n", indent(&indent(&registrations)));
    Ok(out)
}

/// The module of one group/version: its `Version` struct, accessors and aliases.
fn version_module_text(
    rt: &syn::Path,
    group: &str,
    version: &str,
    resources: &BTreeMap<String, &ResourceSpec>,
    version_range: Range,
) -> String {
    let gv = if group.is_empty() { version.to_owned() } else { format!("{group}/{version}") };
    let doc = format!(" Informers of `{gv}`.");
    let body = version_body(rt, &gv, resources, version_range);
    let module = format_ident!("{}", version_module(version));
    format!("///{doc}\npub mod {module} {{\n{}}}\n", indent(&body))
}

/// The items of a group/version module: its `Version` struct, one accessor per resource and the
/// aliases. `resources` maps accessor names to resources; `rust_path` of each is resolved in
/// the module the items are placed in.
pub(crate) fn version_body(
    rt: &syn::Path,
    gv: &str,
    resources: &BTreeMap<String, &ResourceSpec>,
    version_range: Range,
) -> String {
    let mut body = unparse(version_struct(rt, gv));
    let public: syn::Visibility = syn::parse_quote!(pub);
    for (method, spec) in resources {
        let path = type_path(spec);
        let accessor = accessor(rt, gv, method, &path);
        let aliases =
            aliases(rt, &public, spec.type_name(), &path, &words(method), gv, spec.namespaced);
        let text = unparse(quote! { #accessor #aliases });
        body.push_str(&wrap(range(spec), version_range, text));
    }
    body
}

#[allow(clippy::expect_used, reason = "accessors checked every rust_path first")]
fn type_path(spec: &ResourceSpec) -> syn::Type {
    syn::parse_str(&spec.rust_path).expect("rust_path is a type path")
}

fn range(spec: &ResourceSpec) -> Range {
    spec.versions.unwrap_or(ALL)
}

fn union(ranges: impl Iterator<Item = Range>) -> Range {
    ranges.fold((u32::MAX, 0), |(a, b), (c, d)| (a.min(c), b.max(d)))
}

/// `text` wrapped in the version macros it needs inside an item that exists in `outer`.
fn wrap(range: Range, outer: Range, text: String) -> String {
    let mut text = text;
    if range.1 < outer.1 {
        text = format!("::k8s_openapi::k8s_if_le_1_{}! {{\n{}}}\n", range.1, indent(&text));
    }
    if range.0 > outer.0 {
        text = format!("::k8s_openapi::k8s_if_ge_1_{}! {{\n{}}}\n", range.0, indent(&text));
    }
    text
}

fn unparse_statement(tokens: &TokenStream) -> String {
    let text = unparse(quote! { fn f() { #tokens } });
    let body: Vec<&str> = text.lines().collect();
    body[1..body.len() - 1].iter().fold(String::new(), |mut out, l| {
        out.push_str(l.trim_start());
        out.push('\n');
        out
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(
        group: &str,
        version: &str,
        kind: &str,
        plural: &str,
        namespaced: bool,
    ) -> ResourceSpec {
        let module = if group.is_empty() { "core" } else { group };
        ResourceSpec {
            group: group.into(),
            version: version.into(),
            kind: kind.into(),
            plural: plural.into(),
            rust_path: format!("::k8s_openapi::api::{module}::{version}::{kind}"),
            namespaced,
            versions: None,
        }
    }

    #[test]
    fn emits_grouped_accessors() {
        let mut widget = spec("apps", "v1", "Widget", "widgets", false);
        widget.versions = Some((34, NEWEST_MINOR));
        let specs = [
            spec("", "v1", "Pod", "pods", true),
            spec("apps", "v1", "Deployment", "deployments", true),
            widget,
        ];
        let code = accessors(&specs, "crate").unwrap();
        assert!(code.starts_with(HEADER));
        // Deterministic, whatever the input order.
        let mut reversed = specs.to_vec();
        reversed.reverse();
        assert_eq!(accessors(&reversed, "crate").unwrap(), code);
        syn::parse_file(&code).unwrap();
        for expected in [
            "pub mod core {",
            "pub fn core(&self) -> core::Group<'_, S> {",
            "pub fn pods(",
            "pub type PodInformer<'a, S> = crate::informers::TypedInformer<",
            "pub type PodLister = crate::Lister<::k8s_openapi::api::core::v1::Pod>;",
            "pub type PodNamespaceLister = crate::NamespaceLister<",
            "pub fn deployments(",
            "/// Informer for pods (v1).",
            "/// Informer for deployments (apps/v1).",
            "::k8s_openapi::k8s_if_ge_1_34! {",
            "        self.register::<::k8s_openapi::api::apps::v1::Widget>();",
            "pub fn register_builtins(&self) {",
        ] {
            assert!(code.contains(expected), "missing {expected:?} in\n{code}");
        }
        assert!(!code.contains("WidgetNamespaceLister"), "{code}");
        assert!(!code.contains("k8s_if_le"), "{code}");
    }
}
