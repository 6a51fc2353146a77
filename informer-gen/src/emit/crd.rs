//! Custom resources: from loaded CRDs to the [`Output`] modules, one per group and version.

use std::collections::BTreeMap;

use informer_emit::accessors::{factory_trait, group_items, group_module_attrs};
use informer_emit::names::{custom_group_modules, method_name, version_module};
use proc_macro2::TokenStream;
use quote::quote;

use super::accessors::{ALL, version_body};
use super::hooks::{Hooks, Place};
use super::types::{Style, items};
use crate::error::{Error, Result, Warning};
use crate::generator::{
    GeneratedResource, Generator, GroupModule, Output, Visibility, config_error,
};
use crate::ir::convert::Converter;
use crate::ir::{TypeSpace, naming};
use crate::k8s_types::TypeMapping;
use crate::k8s_types::matcher::Matcher;
use crate::schema::Loaded;
use crate::spec::ResourceSpec;

/// One CRD version selected for generation.
struct Selected<'a> {
    loaded: &'a Loaded,
    index: usize,
}

/// group -> version -> root type name -> the CRD version to generate.
type Tree<'a> = BTreeMap<&'a str, BTreeMap<&'a str, BTreeMap<String, Selected<'a>>>>;

impl Generator {
    /// Generates code for `crds`.
    ///
    /// # Errors
    ///
    /// [`Error::Schema`] naming the file and schema path of a construct the generator cannot
    /// represent, or two CRDs of the same group, version and kind; [`Error::Config`] for a
    /// runtime crate or derive that is not a path, or when no version is selected;
    /// [`Error::Derive`] for a derive some generated type cannot take (see
    /// [`derive`](Generator::derive)); [`Error::Hook`] for a hook whose path is malformed or
    /// matches nothing, or whose attribute does not parse; [`Error::NotStructural`] in
    /// [`strict`](Generator::strict) mode.
    pub fn generate(&self, crds: &[Loaded]) -> Result<Output> {
        generate(self, crds)
    }
}

fn generate(generator: &Generator, crds: &[Loaded]) -> Result<Output> {
    let rt: syn::Path = syn::parse_str(&generator.runtime_crate).map_err(|e| {
        config_error(format!("runtime crate {:?} is not a path: {e}", generator.runtime_crate))
    })?;
    let style = style(generator, &rt)?;
    let tree = select(generator, crds)?;
    let groups: Vec<&str> = tree.keys().copied().collect();
    let mut out = Output {
        top: TokenStream::new(),
        groups: Vec::new(),
        resources: Vec::new(),
        warnings: crds.iter().flat_map(|loaded| loaded.warnings.iter().cloned()).collect(),
        type_mappings: Vec::new(),
    };
    let matcher = if generator.k8s_types {
        Some(crate::k8s_types::matcher(generator.k8s_version)?)
    } else {
        None
    };
    // Keys that are no schema keywords, in the versions generated only: a typo in a version
    // left out must not fail a strict build.
    for selected in tree.values().flat_map(BTreeMap::values).flat_map(BTreeMap::values) {
        out.warnings.extend(selected.loaded.unknown_keywords(selected.index));
    }
    let modules = custom_group_modules(&groups);
    for (group, module_name) in &modules {
        out.groups.push(group_module(
            &rt,
            &style,
            group,
            module_name,
            &tree[group.as_str()],
            matcher.as_ref(),
            (&mut out.resources, &mut out.warnings, &mut out.type_mappings),
        )?);
    }
    if generator.strict && !out.warnings.is_empty() {
        return Err(Error::NotStructural { warnings: out.warnings });
    }
    let mut types = Vec::new();
    for r in &out.resources {
        let path: syn::Path = syn::parse_str(&r.rust_path)
            .map_err(|e| config_error(format!("type path {}: {e}", r.rust_path)))?;
        types.push(path);
    }
    style.hooks.check_all_matched()?;
    if !style.types_only {
        out.top = factory_trait(&rt, &style.vis, &modules, &types);
    }
    if let Some(webhook) = &generator.conversion_hubs {
        let webhook: syn::Path = syn::parse_str(webhook)
            .map_err(|e| config_error(format!("webhook crate {webhook:?} is not a path: {e}")))?;
        out.top.extend(hubs(&webhook, &tree, &out.resources)?);
    }
    out.resources.sort();
    Ok(out)
}

/// A kind's generated versions: the storage version's path, if generated, and the others'.
type KindVersions = (Option<syn::Path>, Vec<syn::Path>);

/// For each kind whose storage version is generated: `Hub` for that version with every other
/// generated version of the kind as a spoke, and `KindHub` for each (see
/// [`Generator::conversion_hubs`]). Paths start with `self::`, from the top of the output.
fn hubs(
    webhook: &syn::Path,
    tree: &Tree<'_>,
    resources: &[GeneratedResource],
) -> Result<TokenStream> {
    let mut kinds: BTreeMap<(&str, &str), KindVersions> = BTreeMap::new();
    for r in resources {
        let storage = tree
            .get(r.group.as_str())
            .and_then(|versions| versions.get(r.version.as_str()))
            .and_then(|kinds| kinds.values().find(|s| s.loaded.crd.spec.names.kind == r.kind))
            .and_then(|s| s.loaded.crd.spec.versions.get(s.index))
            .is_some_and(|v| v.storage);
        let path: syn::Path = syn::parse_str(&format!("self::{}", r.rust_path))
            .map_err(|e| config_error(format!("type path {}: {e}", r.rust_path)))?;
        let entry = kinds.entry((&r.group, &r.kind)).or_default();
        if storage {
            entry.0 = Some(path);
        } else {
            entry.1.push(path);
        }
    }
    let mut out = TokenStream::new();
    for (hub, spokes) in kinds.into_values() {
        let Some(hub) = hub else { continue };
        out.extend(informer_emit::conversion_hub(webhook, &hub, &spokes));
    }
    Ok(out)
}

fn style(generator: &Generator, rt: &syn::Path) -> Result<Style> {
    let derives =
        generator.derives.iter().map(|d| super::derives::check(d)).collect::<Result<Vec<_>>>()?;
    Ok(Style {
        runtime: rt.clone(),
        derives,
        schemars: generator.schemars,
        docs: generator.docs,
        vis: match generator.visibility {
            Visibility::Public => syn::parse_quote!(pub),
            Visibility::Crate => syn::parse_quote!(pub(crate)),
        },
        hooks: Hooks::new(
            &generator.type_attributes,
            &generator.field_attributes,
            &generator.derives_for,
        )?,
        types_only: generator.types_only,
    })
}

/// The CRD versions to generate, by group, version and kind.
fn select<'a>(generator: &Generator, crds: &'a [Loaded]) -> Result<Tree<'a>> {
    let mut tree: Tree<'a> = BTreeMap::new();
    for loaded in crds {
        let spec = &loaded.crd.spec;
        for (index, version) in spec.versions.iter().enumerate() {
            if !generator.selects(version) {
                continue;
            }
            let Some(type_name) = type_name(&spec.names.kind) else {
                return Err(Error::Schema {
                    file: loaded.file.clone(),
                    document: loaded.document,
                    path: "spec.names.kind".to_owned(),
                    message: format!(
                        "kind {:?} makes no Rust type name (letters and digits, starting with a \
                         letter)",
                        spec.names.kind
                    ),
                });
            };
            if !is_identifier(&version_module(&version.name)) {
                return Err(Error::Schema {
                    file: loaded.file.clone(),
                    document: loaded.document,
                    path: format!("spec.versions[{index}].name"),
                    message: format!(
                        "version {:?} makes no Rust module name (letters, digits and `_`); \
                         leave it out with --versions or Generator::versions",
                        version.name
                    ),
                });
            }
            let kinds = tree.entry(&spec.group).or_default().entry(&version.name).or_default();
            if let Some(previous) = kinds.insert(type_name.clone(), Selected { loaded, index }) {
                let previous_kind = &previous.loaded.crd.spec.names.kind;
                let same = if *previous_kind == spec.names.kind {
                    String::new()
                } else {
                    format!(" as kind {previous_kind}, whose Rust type is also {type_name}")
                };
                return Err(Error::Schema {
                    file: loaded.file.clone(),
                    document: loaded.document,
                    path: "spec.names.kind".to_owned(),
                    message: format!(
                        "{}/{} {} is also defined by {}{same}: give each CRD once",
                        spec.group,
                        version.name,
                        spec.names.kind,
                        previous.loaded.file.display()
                    ),
                });
            }
        }
    }
    if tree.is_empty() {
        return Err(config_error("no CRD version selected: nothing to generate"));
    }
    Ok(tree)
}

/// The module of one API group: its `Group` struct and a module per version.
fn group_module(
    rt: &syn::Path,
    style: &Style,
    group: &str,
    module_name: &str,
    versions: &BTreeMap<&str, BTreeMap<String, Selected<'_>>>,
    k8s: Option<&Matcher<'_>>,
    (resources, warnings, mappings): (
        &mut Vec<GeneratedResource>,
        &mut Vec<Warning>,
        &mut Vec<TypeMapping>,
    ),
) -> Result<GroupModule> {
    let mut modules = Vec::new();
    for (version, kinds) in versions {
        let version_module = version_module(version);
        let mut space = TypeSpace::default();
        space.names.reserve("Version");
        // accessor method -> the kind that has it
        let mut methods: BTreeMap<String, &Selected<'_>> = BTreeMap::new();
        for (type_name, selected) in kinds {
            let names = std::iter::once(type_name.clone()).chain(
                ["Informer", "Lister", "NamespaceLister"].map(|s| format!("{type_name}{s}")),
            );
            for name in names {
                if !space.names.reserve(&name) {
                    return Err(Error::Schema {
                        file: selected.loaded.file.clone(),
                        document: selected.loaded.document,
                        path: "spec.names.kind".to_owned(),
                        message: format!(
                            "kind {} needs the name `{name}`, which another kind of \
                             {group}/{version} or the generated accessors already use",
                            selected.loaded.crd.spec.names.kind
                        ),
                    });
                }
            }
            // Plurals that differ only in dashes (`foo-bars`, `foobars`) share a name.
            let names = &selected.loaded.crd.spec.names;
            let method = naming::module_name(&method_name(&names.kind, &names.plural));
            if let Some(earlier) = methods.insert(method.clone(), selected) {
                let earlier = &earlier.loaded.crd.spec.names;
                return Err(Error::Schema {
                    file: selected.loaded.file.clone(),
                    document: selected.loaded.document,
                    path: "spec.names.plural".to_owned(),
                    message: format!(
                        "plural {} makes the accessor `{method}()`, as plural {} of \
                         {group}/{version} (kind {}) does: give each kind a plural of its own",
                        names.plural, earlier.plural, earlier.kind
                    ),
                });
            }
        }
        let mut specs = Vec::new();
        for (type_name, selected) in kinds {
            Converter::new(&mut space, selected.loaded, warnings, (k8s, mappings)).root(
                selected.loaded,
                selected.index,
                type_name,
            )?;
            let crd = &selected.loaded.crd;
            specs.push(ResourceSpec {
                group: group.to_owned(),
                version: (*version).to_owned(),
                kind: crd.spec.names.kind.clone(),
                plural: crd.spec.names.plural.clone(),
                rust_path: type_name.clone(),
                namespaced: crd.namespaced(),
                versions: None,
            });
            resources.push(GeneratedResource {
                group: group.to_owned(),
                version: (*version).to_owned(),
                kind: crd.spec.names.kind.clone(),
                plural: crd.spec.names.plural.clone(),
                namespaced: crd.namespaced(),
                rust_path: format!("{module_name}::{version_module}::{type_name}"),
                file: selected.loaded.file.clone(),
            });
        }
        let accessors: BTreeMap<String, &ResourceSpec> =
            specs.iter().map(|s| (naming::module_name(&s.method_name()), s)).collect();
        let gv = format!("{group}/{version}");
        let accessor_tokens: TokenStream = if style.types_only {
            TokenStream::new()
        } else {
            version_body(rt, &gv, &accessors, ALL)
                .parse()
                .map_err(|e| config_error(format!("accessors of {gv}: {e}")))?
        };
        let types =
            items(&space, style, &Place { group_module: module_name, version: &version_module });
        modules.push(((*version).to_owned(), quote! { #types #accessor_tokens }));
    }
    let version_names: Vec<&str> = versions.keys().copied().collect();
    let group_items =
        if style.types_only { TokenStream::new() } else { group_items(rt, group, &version_names) };
    let manifests = manifests(style, group, versions)?;
    Ok(GroupModule {
        name: module_name.to_owned(),
        attrs: group_module_attrs(group),
        items: quote! { #group_items #manifests },
        versions: modules,
    })
}

/// One constant per kind of the group, holding its CRD manifest as JSON text, for the root
/// types' `crd()` (once per CRD, not per version).
fn manifests(
    style: &Style,
    group: &str,
    versions: &BTreeMap<&str, BTreeMap<String, Selected<'_>>>,
) -> Result<TokenStream> {
    let mut by_kind: BTreeMap<&str, &Loaded> = BTreeMap::new();
    for kinds in versions.values() {
        for (kind, selected) in kinds {
            let loaded = selected.loaded;
            let first = by_kind.insert(kind.as_str(), loaded);
            if let Some(first) = first.filter(|first| first.manifest != loaded.manifest) {
                return Err(Error::Schema {
                    file: loaded.file.clone(),
                    document: loaded.document,
                    path: "spec.names.kind".to_owned(),
                    message: format!(
                        "{group} {kind} is also defined by another CRD, in {}: one CRD holds \
                         every version of a kind",
                        first.file.display()
                    ),
                });
            }
        }
    }
    let vis = &style.vis;
    let consts = by_kind.iter().map(|(kind, loaded)| {
        let name = super::types::manifest_const(kind);
        let json = loaded.manifest.to_string();
        let doc = format!(
            " The CustomResourceDefinition of `{kind}`, as JSON (what `{kind}::crd()` reads)."
        );
        quote! {
            #[doc = #doc]
            #[doc(hidden)]
            #vis const #name: &str = #json;
        }
    });
    Ok(quote! { #(#consts)* })
}

/// Whether `name` is a module name as [`version_module`] makes them: the loader lets only DNS
/// labels through, but a caller may build a [`Loaded`] by hand.
fn is_identifier(name: &str) -> bool {
    name.starts_with(|c: char| c.is_ascii_lowercase())
        && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

/// The Rust name of a kind's root type: the kind itself when it is an upper camel case
/// identifier (nearly always), else its upper camel case form (Zalando's `postgresql` is
/// `Postgresql`, `Foo-Bar` is `FooBar`). `None` when that is no type name.
fn type_name(kind: &str) -> Option<String> {
    let is_type_name = |name: &str| {
        name.starts_with(|c: char| c.is_ascii_uppercase())
            && name.chars().all(|c| c.is_ascii_alphanumeric())
            && name != "Self"
    };
    if is_type_name(kind) {
        return Some(kind.to_owned());
    }
    let camel = heck::AsUpperCamelCase(kind).to_string();
    is_type_name(&camel).then_some(camel)
}
