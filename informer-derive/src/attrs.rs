//! `#[informer(...)]` → [`Attrs`]: one constant per attribute name, `parse_nested_meta`, and
//! duplicate and unknown-attribute checks. Every error goes to the [`Ctxt`] and parsing goes on,
//! so all of them are reported at once. Checks of the values themselves live in `valid.rs`.

use proc_macro2::Span;
use syn::meta::ParseNestedMeta;
use syn::{LitBool, LitInt, LitStr, Token};

use crate::ctxt::Ctxt;

/// The name of the attribute this derive reads.
pub(crate) const INFORMER: &str = "informer";

const GROUP: &str = "group";
const VERSION: &str = "version";
const KIND: &str = "kind";
const PLURAL: &str = "plural";
const SINGULAR: &str = "singular";
const SHORTNAME: &str = "shortname";
const CATEGORY: &str = "category";
const NAMESPACED: &str = "namespaced";
const CLUSTER: &str = "cluster";
const STATUS: &str = "status";
const SCALE: &str = "scale";
const PRINTCOLUMN: &str = "printcolumn";
const SELECTABLE: &str = "selectable";
const SERVED: &str = "served";
const STORAGE: &str = "storage";
const DEPRECATED: &str = "deprecated";
const DEPRECATION_WARNING: &str = "deprecation_warning";
const ANNOTATION: &str = "annotation";
const LABEL: &str = "label";
const VALIDATION: &str = "validation";
const SCHEMA: &str = "schema";
const CRATES: &str = "crates";
const VIEW: &str = "view";
const HUB: &str = "hub";

/// Every attribute, for the unknown-attribute message.
const ALL: &[&str] = &[
    GROUP,
    VERSION,
    KIND,
    PLURAL,
    SINGULAR,
    SHORTNAME,
    CATEGORY,
    NAMESPACED,
    CLUSTER,
    STATUS,
    SCALE,
    PRINTCOLUMN,
    SELECTABLE,
    SERVED,
    STORAGE,
    DEPRECATED,
    DEPRECATION_WARNING,
    ANNOTATION,
    LABEL,
    VALIDATION,
    SCHEMA,
    CRATES,
    VIEW,
    HUB,
];

/// A value that may be given once; the span is where it was given.
pub(crate) struct Attr<T> {
    name: &'static str,
    value: Option<(Span, T)>,
}

impl<T> Attr<T> {
    fn none(name: &'static str) -> Self {
        Attr { name, value: None }
    }

    /// Sets the value, or records a duplicate at `span`.
    fn set(&mut self, cx: &mut Ctxt, span: Span, value: T) {
        if self.value.is_some() {
            let name = self.name;
            cx.error_at(span, format!("duplicate informer attribute `{name}`: give it once"));
        } else {
            self.value = Some((span, value));
        }
    }

    /// The value, if given.
    pub(crate) fn get(&self) -> Option<&T> {
        self.value.as_ref().map(|(_, v)| v)
    }

    /// Where the value was given.
    pub(crate) fn span(&self) -> Option<Span> {
        self.value.as_ref().map(|(s, _)| *s)
    }
}

/// A string with the span of its literal.
pub(crate) type Spanned = (String, Span);

/// `scale(spec_replicas_path = "...", status_replicas_path = "...", label_selector_path = "...")`.
#[allow(clippy::struct_field_names, reason = "the names of the CRD's fields")]
pub(crate) struct Scale {
    pub(crate) spec_replicas_path: Attr<Spanned>,
    pub(crate) status_replicas_path: Attr<Spanned>,
    pub(crate) label_selector_path: Attr<Spanned>,
}

/// `printcolumn(name = "...", type = "...", json_path = "...", description, format, priority)`.
pub(crate) struct PrintColumn {
    pub(crate) span: Span,
    pub(crate) name: Attr<Spanned>,
    pub(crate) type_: Attr<Spanned>,
    pub(crate) json_path: Attr<Spanned>,
    pub(crate) description: Attr<Spanned>,
    pub(crate) format: Attr<Spanned>,
    pub(crate) priority: Attr<i32>,
}

/// `crates(informer_runtime = path, k8s_openapi = path, ...)`.
pub(crate) struct Crates {
    pub(crate) informer_runtime: Attr<syn::Path>,
    pub(crate) informer_webhook: Attr<syn::Path>,
    pub(crate) k8s_openapi: Attr<syn::Path>,
    pub(crate) schemars: Attr<syn::Path>,
    pub(crate) serde: Attr<syn::Path>,
    pub(crate) serde_json: Attr<syn::Path>,
}

/// What the `#[informer(...)]` attributes of a struct say, unchecked.
pub(crate) struct Attrs {
    /// The first `#[informer]` attribute, if any: where a missing attribute is reported.
    pub(crate) first: Option<syn::Attribute>,
    pub(crate) group: Attr<Spanned>,
    pub(crate) version: Attr<Spanned>,
    pub(crate) kind: Attr<Spanned>,
    pub(crate) plural: Attr<Spanned>,
    pub(crate) singular: Attr<Spanned>,
    pub(crate) short_names: Vec<Spanned>,
    pub(crate) categories: Vec<Spanned>,
    pub(crate) namespaced: Attr<()>,
    pub(crate) cluster: Attr<()>,
    /// `status` alone is `None` inside: the field called `status`.
    pub(crate) status: Attr<Option<Spanned>>,
    pub(crate) scale: Attr<Scale>,
    pub(crate) print_columns: Vec<PrintColumn>,
    pub(crate) selectable: Vec<Spanned>,
    pub(crate) served: Attr<bool>,
    pub(crate) storage: Attr<bool>,
    pub(crate) deprecated: Attr<bool>,
    pub(crate) deprecation_warning: Attr<Spanned>,
    pub(crate) annotations: Vec<(Spanned, String)>,
    pub(crate) labels: Vec<(Spanned, String)>,
    pub(crate) validations: Vec<Spanned>,
    /// `"derived"` or `"disabled"`.
    pub(crate) schema: Attr<Spanned>,
    pub(crate) crates: Crates,
    /// `view = path::To::Viewed` (or the path in a string): a view of that resource type.
    pub(crate) view: Attr<syn::Path>,
    /// Whether `view` was written, even with a value that could not be read: then the struct is
    /// meant as a view, and the missing group and version are no error to add.
    pub(crate) view_written: bool,
    /// `hub` or `hub(v1::Foo, ...)`: this version is its kind's conversion hub, with these
    /// spokes.
    pub(crate) hub: Attr<Vec<syn::Path>>,
}

impl Attrs {
    fn new() -> Self {
        Attrs {
            first: None,
            group: Attr::none(GROUP),
            version: Attr::none(VERSION),
            kind: Attr::none(KIND),
            plural: Attr::none(PLURAL),
            singular: Attr::none(SINGULAR),
            short_names: Vec::new(),
            categories: Vec::new(),
            namespaced: Attr::none(NAMESPACED),
            cluster: Attr::none(CLUSTER),
            status: Attr::none(STATUS),
            scale: Attr::none(SCALE),
            print_columns: Vec::new(),
            selectable: Vec::new(),
            served: Attr::none(SERVED),
            storage: Attr::none(STORAGE),
            deprecated: Attr::none(DEPRECATED),
            deprecation_warning: Attr::none(DEPRECATION_WARNING),
            annotations: Vec::new(),
            labels: Vec::new(),
            validations: Vec::new(),
            schema: Attr::none(SCHEMA),
            crates: Crates {
                informer_runtime: Attr::none("informer_runtime"),
                informer_webhook: Attr::none("informer_webhook"),
                k8s_openapi: Attr::none("k8s_openapi"),
                schemars: Attr::none("schemars"),
                serde: Attr::none("serde"),
                serde_json: Attr::none("serde_json"),
            },
            view: Attr::none(VIEW),
            view_written: false,
            hub: Attr::none(HUB),
        }
    }
}

/// Reads every `#[informer(...)]` attribute of `attrs`.
pub(crate) fn get(cx: &mut Ctxt, attrs: &[syn::Attribute]) -> Attrs {
    let mut out = Attrs::new();
    for attr in attrs.iter().filter(|a| a.path().is_ident(INFORMER)) {
        out.first.get_or_insert_with(|| attr.clone());
        if let syn::Meta::Path(path) = &attr.meta {
            cx.error_spanned_by(
                path,
                "expected #[informer(group = \"example.com\", version = \"v1\", ...)]",
            );
            continue;
        }
        let parsed = attr.parse_nested_meta(|meta| {
            // A malformed item is reported, and parsing goes on after its value.
            if let Err(e) = one(cx, &mut out, &meta) {
                cx.syn_error(e);
                skip_to_comma(&meta)?;
            }
            Ok(())
        });
        if let Err(e) = parsed {
            cx.syn_error(e);
        }
    }
    out
}

fn name_of(meta: &ParseNestedMeta<'_>) -> String {
    meta.path.get_ident().map_or_else(
        || {
            let segments: Vec<String> =
                meta.path.segments.iter().map(|s| s.ident.to_string()).collect();
            segments.join("::")
        },
        ToString::to_string,
    )
}

fn span_of(meta: &ParseNestedMeta<'_>) -> Span {
    syn::spanned::Spanned::span(&meta.path)
}

fn string(meta: &ParseNestedMeta<'_>) -> syn::Result<Spanned> {
    let lit: LitStr = meta.value()?.parse()?;
    Ok((lit.value(), lit.span()))
}

/// `flag` is `true`; `flag = false` is `false`.
fn flag(meta: &ParseNestedMeta<'_>, name: &str) -> syn::Result<bool> {
    if meta.input.peek(Token![=]) {
        let lit: LitBool = meta.value()?.parse().map_err(|e| {
            syn::Error::new(e.span(), format!("write `{name}` or `{name} = false`"))
        })?;
        Ok(lit.value)
    } else {
        Ok(true)
    }
}

/// No value may follow.
fn bare(meta: &ParseNestedMeta<'_>, name: &str) -> syn::Result<()> {
    if meta.input.peek(Token![=]) || meta.input.peek(syn::token::Paren) {
        Err(meta.error(format!("`{name}` takes no value: write `{name}` alone")))
    } else {
        Ok(())
    }
}

/// Skips whatever value follows an attribute that could not be used, so parsing goes on.
fn skip_value(meta: &ParseNestedMeta<'_>) -> syn::Result<()> {
    if meta.input.peek(Token![=]) {
        meta.value()?.parse::<syn::Expr>()?;
    } else if meta.input.peek(syn::token::Paren) {
        meta.input.parse::<proc_macro2::Group>()?;
    }
    Ok(())
}

/// Skips the tokens up to the next `,` of this list.
fn skip_to_comma(meta: &ParseNestedMeta<'_>) -> syn::Result<()> {
    meta.input.step(|cursor| {
        let mut rest = *cursor;
        while let Some((tree, next)) = rest.token_tree() {
            if let proc_macro2::TokenTree::Punct(p) = &tree
                && p.as_char() == ','
            {
                return Ok(((), rest));
            }
            rest = next;
        }
        Ok(((), rest))
    })
}

/// What to write instead of an attribute that kube-derive spells differently.
fn suggestion(name: &str) -> Option<&'static str> {
    Some(match name {
        "shortnames" | "short_name" | "short_names" => {
            "write one `shortname = \"...\"` per short name"
        }
        "categories" => "write one `category = \"...\"` per category",
        "printcolumns" | "print_column" | "printer_column" => {
            "write `printcolumn(name = \"...\", type = \"...\", json_path = \"...\")`"
        }
        "selectable_field" | "selectable_fields" => {
            "write one `selectable = \".spec.field\"` per selectable field"
        }
        "scope" => "write `namespaced` or `cluster`",
        "namespace" | "namespace_scoped" => "write `namespaced`",
        "cluster_scoped" | "clusterscoped" => "write `cluster`",
        "list_kind" => "the list kind is always the kind followed by `List`",
        "crate" => "write `crates(informer_runtime = path)`",
        "spokes" | "spoke" | "conversion" | "hub_of" | "storage_hub" => {
            "write `hub(v1::Foo, ...)` on the hub version, naming its spokes"
        }
        "projection" | "project" | "view_of" | "projection_of" | "viewed" => {
            "write `view = Pod` for a view (projection) of another resource type"
        }
        "derive" | "root" | "struct" => {
            "informer-derive works on the root struct you write; remove it"
        }
        _ => return None,
    })
}

/// One `name = value` or `name(...)` inside `#[informer(...)]`.
#[allow(clippy::too_many_lines, reason = "one arm per attribute, each short")]
fn one(cx: &mut Ctxt, out: &mut Attrs, meta: &ParseNestedMeta<'_>) -> syn::Result<()> {
    let span = span_of(meta);
    let name = name_of(meta);
    match name.as_str() {
        GROUP => out.group.set(cx, span, string(meta)?),
        VERSION => out.version.set(cx, span, string(meta)?),
        KIND => out.kind.set(cx, span, string(meta)?),
        PLURAL => out.plural.set(cx, span, string(meta)?),
        SINGULAR => out.singular.set(cx, span, string(meta)?),
        SHORTNAME => out.short_names.push(string(meta)?),
        CATEGORY => out.categories.push(string(meta)?),
        SELECTABLE => out.selectable.push(string(meta)?),
        VALIDATION => out.validations.push(string(meta)?),
        SCHEMA => out.schema.set(cx, span, string(meta)?),
        NAMESPACED => {
            bare(meta, NAMESPACED)?;
            out.namespaced.set(cx, span, ());
        }
        CLUSTER => {
            bare(meta, CLUSTER)?;
            out.cluster.set(cx, span, ());
        }
        STATUS => {
            let value = if meta.input.peek(Token![=]) { Some(string(meta)?) } else { None };
            out.status.set(cx, span, value);
        }
        SERVED => out.served.set(cx, span, flag(meta, SERVED)?),
        STORAGE => out.storage.set(cx, span, flag(meta, STORAGE)?),
        DEPRECATED => {
            if meta.input.peek(Token![=]) && meta.input.peek2(LitStr) {
                return Err(meta.error(
                    "write `deprecated, deprecation_warning = \"...\"` for a deprecation warning",
                ));
            }
            out.deprecated.set(cx, span, flag(meta, DEPRECATED)?);
        }
        DEPRECATION_WARNING => out.deprecation_warning.set(cx, span, string(meta)?),
        ANNOTATION | LABEL => {
            let pair = key_value(meta, &name)?;
            if name == ANNOTATION {
                out.annotations.push(pair);
            } else {
                out.labels.push(pair);
            }
        }
        SCALE => {
            let scale = scale(cx, meta)?;
            out.scale.set(cx, span, scale);
        }
        PRINTCOLUMN => {
            let column = print_column(cx, meta, span)?;
            out.print_columns.push(column);
        }
        CRATES => crates(cx, &mut out.crates, meta)?,
        VIEW => {
            out.view_written = true;
            out.view.set(cx, span, view(meta)?);
        }
        HUB => out.hub.set(cx, span, hub(meta)?),
        _ => {
            let message = match suggestion(&name) {
                Some(instead) => format!("unknown informer attribute `{name}`: {instead}"),
                None => format!(
                    "unknown informer attribute `{name}`: expected one of {}",
                    ALL.iter().map(|a| format!("`{a}`")).collect::<Vec<_>>().join(", ")
                ),
            };
            cx.error_at(span, message);
            skip_value(meta)?;
        }
    }
    Ok(())
}

/// `view = Pod`, `view = k8s_openapi::api::core::v1::Pod`, or the path in a string (the form
/// kube-derive gives types, as in `status = "FooStatus"`).
fn view(meta: &ParseNestedMeta<'_>) -> syn::Result<syn::Path> {
    const USAGE: &str = "write `view = Pod`, the path of the resource type this struct views";
    let value = meta.value().map_err(|e| syn::Error::new(e.span(), USAGE))?;
    if value.peek(LitStr) {
        let lit: LitStr = value.parse()?;
        return lit.parse().map_err(|_| syn::Error::new(lit.span(), USAGE));
    }
    value.parse().map_err(|e| syn::Error::new(e.span(), USAGE))
}

/// `hub` (no spoke yet) or `hub(v1::Foo, super::v3::Foo)`: the spokes by path.
fn hub(meta: &ParseNestedMeta<'_>) -> syn::Result<Vec<syn::Path>> {
    const USAGE: &str = "write `hub(v1::Foo, ...)`, the paths of the spoke versions this hub \
                         converts, or `hub` alone for a hub without spokes yet";
    if meta.input.peek(Token![=]) {
        return Err(meta.error(USAGE));
    }
    if !meta.input.peek(syn::token::Paren) {
        return Ok(Vec::new());
    }
    let content;
    syn::parenthesized!(content in meta.input);
    let paths = content
        .parse_terminated(syn::Path::parse_mod_style, Token![,])
        .map_err(|e| syn::Error::new(e.span(), USAGE))?;
    Ok(paths.into_iter().collect())
}

/// `annotation("key", "value")` (kube-derive's form) or `annotation(key = "...", value = "...")`.
fn key_value(meta: &ParseNestedMeta<'_>, name: &str) -> syn::Result<(Spanned, String)> {
    let usage = format!("write `{name}(\"key\", \"value\")`");
    if !meta.input.peek(syn::token::Paren) {
        return Err(meta.error(usage));
    }
    let content;
    syn::parenthesized!(content in meta.input);
    let key: LitStr = content.parse().map_err(|e| syn::Error::new(e.span(), &usage))?;
    content.parse::<Token![,]>().map_err(|e| syn::Error::new(e.span(), &usage))?;
    let value: LitStr = content.parse().map_err(|e| syn::Error::new(e.span(), &usage))?;
    if !content.is_empty() {
        return Err(content.error(usage));
    }
    Ok(((key.value(), key.span()), value.value()))
}

fn scale(cx: &mut Ctxt, meta: &ParseNestedMeta<'_>) -> syn::Result<Scale> {
    let mut scale = Scale {
        spec_replicas_path: Attr::none("spec_replicas_path"),
        status_replicas_path: Attr::none("status_replicas_path"),
        label_selector_path: Attr::none("label_selector_path"),
    };
    if !meta.input.peek(syn::token::Paren) {
        return Err(meta.error(
            "write `scale(spec_replicas_path = \".spec.replicas\", status_replicas_path = \".status.replicas\")`",
        ));
    }
    meta.parse_nested_meta(|inner| {
        let span = span_of(&inner);
        match name_of(&inner).as_str() {
            "spec_replicas_path" => scale.spec_replicas_path.set(cx, span, string(&inner)?),
            "status_replicas_path" => scale.status_replicas_path.set(cx, span, string(&inner)?),
            "label_selector_path" => scale.label_selector_path.set(cx, span, string(&inner)?),
            other => {
                cx.error_at(
                    span,
                    format!(
                        "unknown scale attribute `{other}`: expected `spec_replicas_path`, `status_replicas_path` or `label_selector_path`"
                    ),
                );
                skip_value(&inner)?;
            }
        }
        Ok(())
    })?;
    Ok(scale)
}

fn print_column(cx: &mut Ctxt, meta: &ParseNestedMeta<'_>, span: Span) -> syn::Result<PrintColumn> {
    let mut column = PrintColumn {
        span,
        name: Attr::none("name"),
        type_: Attr::none("type"),
        json_path: Attr::none("json_path"),
        description: Attr::none("description"),
        format: Attr::none("format"),
        priority: Attr::none("priority"),
    };
    if !meta.input.peek(syn::token::Paren) {
        return Err(meta.error(
            "write `printcolumn(name = \"Replicas\", type = \"integer\", json_path = \".spec.replicas\")`",
        ));
    }
    meta.parse_nested_meta(|inner| {
        let span = span_of(&inner);
        match name_of(&inner).as_str() {
            "name" => column.name.set(cx, span, string(&inner)?),
            "type" | "type_" => column.type_.set(cx, span, string(&inner)?),
            "json_path" => column.json_path.set(cx, span, string(&inner)?),
            "description" => column.description.set(cx, span, string(&inner)?),
            "format" => column.format.set(cx, span, string(&inner)?),
            "priority" => {
                let lit: LitInt = inner.value()?.parse()?;
                column.priority.set(cx, span, lit.base10_parse()?);
            }
            other => {
                cx.error_at(
                    span,
                    format!(
                        "unknown printcolumn attribute `{other}`: expected `name`, `type`, `json_path`, `description`, `format` or `priority`"
                    ),
                );
                skip_value(&inner)?;
            }
        }
        Ok(())
    })?;
    Ok(column)
}

fn crates(cx: &mut Ctxt, crates: &mut Crates, meta: &ParseNestedMeta<'_>) -> syn::Result<()> {
    if !meta.input.peek(syn::token::Paren) {
        return Err(meta.error("write `crates(informer_runtime = path::to::informer_runtime)`"));
    }
    meta.parse_nested_meta(|inner| {
        let span = span_of(&inner);
        let slot = match name_of(&inner).as_str() {
            "informer_runtime" => &mut crates.informer_runtime,
            "informer_webhook" => &mut crates.informer_webhook,
            "k8s_openapi" => &mut crates.k8s_openapi,
            "schemars" => &mut crates.schemars,
            "serde" => &mut crates.serde,
            "serde_json" => &mut crates.serde_json,
            other => {
                cx.error_at(
                    span,
                    format!(
                        "unknown crate `{other}`: expected `informer_runtime`, `informer_webhook`, `k8s_openapi`, `schemars`, `serde` or `serde_json`"
                    ),
                );
                return skip_value(&inner);
            }
        };
        let path: syn::Path = inner.value()?.parse()?;
        slot.set(cx, span, path);
        Ok(())
    })
}
