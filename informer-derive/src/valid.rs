//! [`Attrs`] and the struct → [`Input`]: the checks after parsing (the struct's shape, names the
//! API server would reject, conflicts, references to fields), and the defaults.

use proc_macro2::{Span, TokenStream};
use quote::ToTokens;

use crate::attrs::{self, Attrs, Spanned};
use crate::ctxt::Ctxt;
use crate::names;

/// A checked `#[derive(Informer)]` input: everything expansion needs.
#[allow(clippy::struct_excessive_bools, reason = "the CRD's own flags")]
pub(crate) struct Input {
    pub(crate) ident: syn::Ident,
    pub(crate) vis: syn::Visibility,
    pub(crate) attrs: Vec<syn::Attribute>,
    pub(crate) fields: Vec<syn::Field>,
    /// The `metadata` field.
    pub(crate) metadata: syn::Field,
    pub(crate) group: String,
    pub(crate) version: String,
    pub(crate) kind: String,
    /// The kind followed by `List`.
    pub(crate) list_kind: String,
    pub(crate) plural: String,
    pub(crate) singular: String,
    pub(crate) short_names: Vec<String>,
    pub(crate) categories: Vec<String>,
    pub(crate) namespaced: bool,
    pub(crate) status: bool,
    pub(crate) scale: Option<Scale>,
    pub(crate) print_columns: Vec<PrintColumn>,
    pub(crate) selectable: Vec<String>,
    pub(crate) served: bool,
    pub(crate) storage: bool,
    pub(crate) deprecated: bool,
    pub(crate) deprecation_warning: Option<String>,
    pub(crate) annotations: Vec<(String, String)>,
    pub(crate) labels: Vec<(String, String)>,
    pub(crate) validations: Vec<String>,
    /// Whether the schema comes from schemars (`schema = "derived"`, the default); else it
    /// accepts any object (`schema = "disabled"`).
    pub(crate) derived_schema: bool,
    pub(crate) crates: Crates,
    /// `view = Pod`: the type this struct is a view of. A view takes that type's identity and
    /// has no CRD: the names and CRD settings above are then empty and unused.
    pub(crate) view: Option<syn::Path>,
    /// `hub(...)`: this version is its kind's conversion hub, with these spokes (see
    /// `conversion.rs`).
    pub(crate) hub: Option<Vec<syn::Path>>,
}

/// The scale subresource's paths.
#[allow(clippy::struct_field_names, reason = "the names of the CRD's fields")]
pub(crate) struct Scale {
    pub(crate) spec_replicas_path: String,
    pub(crate) status_replicas_path: String,
    pub(crate) label_selector_path: Option<String>,
}

/// One additional printer column.
pub(crate) struct PrintColumn {
    pub(crate) name: String,
    pub(crate) type_: String,
    pub(crate) json_path: String,
    pub(crate) description: Option<String>,
    pub(crate) format: Option<String>,
    pub(crate) priority: Option<i32>,
}

/// Paths of the crates the expansion names.
pub(crate) struct Crates {
    pub(crate) informer_runtime: syn::Path,
    /// Named only by a hub's expansion (`hub(...)`): a crate without hubs needs no
    /// informer-webhook.
    pub(crate) informer_webhook: syn::Path,
    pub(crate) k8s_openapi: syn::Path,
    pub(crate) schemars: syn::Path,
    pub(crate) serde: syn::Path,
    pub(crate) serde_json: syn::Path,
}

impl Input {
    /// `group/version`.
    pub(crate) fn api_version(&self) -> String {
        format!("{}/{}", self.group, self.version)
    }
}

/// Checks `input`; `None` when it cannot be expanded (the errors are in `cx`).
#[allow(clippy::too_many_lines, reason = "one short step per attribute, in the documented order")]
pub(crate) fn check(cx: &mut Ctxt, input: &syn::DeriveInput) -> Option<Input> {
    let attrs = attrs::get(cx, &input.attrs);
    let fields = shape(cx, input)?;
    let metadata = fields.iter().find(|f| f.ident.as_ref().is_some_and(|i| i == "metadata"));
    let Some(metadata) = metadata.cloned() else {
        cx.error_spanned_by(
            &input.ident,
            "#[derive(Informer)] needs a `metadata` field: add \
             `metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta`",
        );
        return None;
    };
    let view = attrs.view.get().cloned();
    serde_container(cx, &input.attrs, view.is_some());
    derived_serialize(cx, &input.attrs, view.is_some());
    for field in &fields {
        if let Some(ident) = &field.ident
            && (ident == "api_version" || ident == "kind" || ident == "type_meta")
        {
            let why = if view.is_some() {
                "a view has the `apiVersion` and `kind` of the type it views, and holds \
                     neither"
            } else {
                "#[derive(Informer)] writes `apiVersion` and `kind` itself, from \
                     #[informer(group, version, kind)]"
            };
            cx.error_spanned_by(ident, format!("remove the `{ident}` field: {why}"));
        }
    }
    if let Some(view) = view {
        view_conflicts(cx, &attrs, &view);
        return Some(view_input(input, fields, metadata, &attrs, view));
    }
    if attrs.view_written {
        // A view whose type could not be read: that error is recorded, and no other applies.
        return None;
    }
    let ident = input.ident.clone();
    let anchor =
        attrs.first.as_ref().map_or_else(|| ident.to_token_stream(), ToTokens::to_token_stream);
    let group = required(cx, &anchor, attrs.group.get(), "group", "example.com");
    let version = required(cx, &anchor, attrs.version.get(), "version", "v1");
    check_group(cx, attrs.group.get());
    check_version(cx, attrs.version.get());
    let kind = attrs.kind.get().map_or_else(|| ident.to_string(), |(k, _)| k.clone());
    if let Some((kind, span)) = attrs.kind.get() {
        let ok = kind.chars().next().is_some_and(|c| c.is_ascii_uppercase())
            && kind.chars().all(|c| c.is_ascii_alphanumeric());
        if !ok {
            cx.error_at(*span, "kind must be UpperCamelCase letters and digits, like \"FooBar\"");
        }
    }
    let lower = kind.to_ascii_lowercase();
    let plural = attrs.plural.get().map_or_else(|| names::to_plural(&lower), |(p, _)| p.clone());
    let singular = attrs.singular.get().map_or_else(|| lower.clone(), |(s, _)| s.clone());
    for (name, value) in [("plural", attrs.plural.get()), ("singular", attrs.singular.get())] {
        if let Some((value, span)) = value {
            check_label(cx, *span, name, value);
        }
    }
    for (value, span) in &attrs.short_names {
        check_label(cx, *span, "shortname", value);
    }
    for (value, span) in &attrs.categories {
        check_label(cx, *span, "category", value);
    }
    if let (Some(()), Some(span)) = (attrs.namespaced.get(), attrs.cluster.span()) {
        cx.error_at(
            span,
            "`namespaced` and `cluster` conflict: keep one (namespaced is the default)",
        );
    }
    let namespaced = attrs.cluster.get().is_none();
    let status = status(cx, &attrs, &fields);
    let scale = attrs.scale.get().and_then(|s| scale(cx, s, attrs.scale.span()));
    if scale.is_some()
        && !status
        && let Some(span) = attrs.scale.span()
    {
        cx.error_at(span, "the scale subresource reads replicas from the status: add `status` too");
    }
    let print_columns = attrs.print_columns.iter().filter_map(|c| print_column(cx, c)).collect();
    for (path, span) in &attrs.selectable {
        check_json_path(cx, *span, "selectable", path);
    }
    for (rule, span) in &attrs.validations {
        if rule.trim().is_empty() {
            cx.error_at(*span, "validation needs a CEL rule, like \"self.spec.replicas >= 0\"");
        }
    }
    let storage = attrs.storage.get().copied().unwrap_or(true);
    let served = attrs.served.get().copied().unwrap_or(true);
    let deprecation_warning = attrs.deprecation_warning.get().map(|(w, _)| w.clone());
    let deprecated = attrs.deprecated.get().copied().unwrap_or(false);
    if let (Some(false), Some(span)) = (attrs.deprecated.get(), attrs.deprecation_warning.span()) {
        cx.error_at(span, "a deprecation warning needs `deprecated`: remove `deprecated = false`");
    }
    let derived_schema = match attrs.schema.get() {
        None => true,
        Some((value, _)) if value == "derived" => true,
        Some((value, _)) if value == "disabled" => false,
        Some((_, span)) => {
            cx.error_at(
                *span,
                "schema must be \"derived\" (from schemars, the default) or \"disabled\" \
                 (any object, x-kubernetes-preserve-unknown-fields)",
            );
            true
        }
    };
    if derived_schema {
        recursive_fields(cx, &ident, &fields);
    }
    let crates = crates(&attrs.crates);
    let list_kind = format!("{kind}List");
    Some(Input {
        ident,
        vis: input.vis.clone(),
        attrs: input.attrs.clone(),
        fields,
        metadata,
        group,
        version,
        kind,
        list_kind,
        plural,
        singular,
        short_names: attrs.short_names.iter().map(|(s, _)| s.clone()).collect(),
        categories: attrs.categories.iter().map(|(s, _)| s.clone()).collect(),
        namespaced,
        status,
        scale,
        print_columns,
        selectable: attrs.selectable.iter().map(|(s, _)| s.clone()).collect(),
        served,
        storage,
        // A warning implies deprecation, as the API server reads it.
        deprecated: deprecated || deprecation_warning.is_some(),
        deprecation_warning,
        annotations: attrs.annotations.iter().map(|((k, _), v)| (k.clone(), v.clone())).collect(),
        labels: attrs.labels.iter().map(|((k, _), v)| (k.clone(), v.clone())).collect(),
        validations: attrs.validations.iter().map(|(s, _)| s.clone()).collect(),
        derived_schema,
        crates,
        view: None,
        hub: attrs.hub.get().cloned(),
    })
}

/// A view's [`Input`]: its struct and crates; every name and CRD setting is left empty, as the
/// viewed type's impls give the names and a view has no CRD.
fn view_input(
    input: &syn::DeriveInput,
    fields: Vec<syn::Field>,
    metadata: syn::Field,
    attrs: &Attrs,
    view: syn::Path,
) -> Input {
    Input {
        ident: input.ident.clone(),
        vis: input.vis.clone(),
        attrs: input.attrs.clone(),
        fields,
        metadata,
        group: String::new(),
        version: String::new(),
        kind: String::new(),
        list_kind: String::new(),
        plural: String::new(),
        singular: String::new(),
        short_names: Vec::new(),
        categories: Vec::new(),
        namespaced: true,
        status: false,
        scale: None,
        print_columns: Vec::new(),
        selectable: Vec::new(),
        served: true,
        storage: true,
        deprecated: false,
        deprecation_warning: None,
        annotations: Vec::new(),
        labels: Vec::new(),
        validations: Vec::new(),
        derived_schema: false,
        crates: crates(&attrs.crates),
        view: Some(view),
        hub: None,
    }
}

/// Every attribute beside `view` but `crates` is an error: they name a resource or describe its
/// CRD, and a view has the identity of the type it views and no CRD.
fn view_conflicts(cx: &mut Ctxt, attrs: &Attrs, view: &syn::Path) {
    let viewed = view.segments.last().map_or_else(String::new, |s| s.ident.to_string());
    let mut spans: Vec<(&str, Span)> = Vec::new();
    let single = [
        ("group", attrs.group.span()),
        ("version", attrs.version.span()),
        ("kind", attrs.kind.span()),
        ("plural", attrs.plural.span()),
        ("singular", attrs.singular.span()),
        ("namespaced", attrs.namespaced.span()),
        ("cluster", attrs.cluster.span()),
        ("status", attrs.status.span()),
        ("scale", attrs.scale.span()),
        ("served", attrs.served.span()),
        ("storage", attrs.storage.span()),
        ("deprecated", attrs.deprecated.span()),
        ("deprecation_warning", attrs.deprecation_warning.span()),
        ("schema", attrs.schema.span()),
        ("hub", attrs.hub.span()),
    ];
    spans.extend(single.into_iter().filter_map(|(name, span)| Some((name, span?))));
    spans.extend(attrs.short_names.iter().map(|(_, span)| ("shortname", *span)));
    spans.extend(attrs.categories.iter().map(|(_, span)| ("category", *span)));
    spans.extend(attrs.selectable.iter().map(|(_, span)| ("selectable", *span)));
    spans.extend(attrs.validations.iter().map(|(_, span)| ("validation", *span)));
    spans.extend(attrs.print_columns.iter().map(|c| ("printcolumn", c.span)));
    spans.extend(attrs.annotations.iter().map(|((_, span), _)| ("annotation", *span)));
    spans.extend(attrs.labels.iter().map(|((_, span), _)| ("label", *span)));
    for (name, span) in spans {
        cx.error_at(
            span,
            format!(
                "`{name}` does not apply to a view: a view has the identity of `{viewed}` and no \
                 CustomResourceDefinition; remove `{name}`, or `view` to declare a resource"
            ),
        );
    }
}

/// The named fields of a plain struct, or errors saying what to write instead.
fn shape(cx: &mut Ctxt, input: &syn::DeriveInput) -> Option<Vec<syn::Field>> {
    if !input.generics.params.is_empty() || input.generics.where_clause.is_some() {
        cx.error_spanned_by(
            &input.generics,
            "#[derive(Informer)] does not support generics: a resource has one schema, so write \
             a struct without type or lifetime parameters (wrap generic parts in a concrete spec)",
        );
    }
    match &input.data {
        syn::Data::Struct(s) => match &s.fields {
            syn::Fields::Named(named) => Some(named.named.iter().cloned().collect()),
            syn::Fields::Unnamed(_) | syn::Fields::Unit => {
                cx.error_spanned_by(
                    &input.ident,
                    "#[derive(Informer)] needs a struct with named fields: write \
                     `struct Foo { metadata: ObjectMeta, spec: FooSpec, status: Option<FooStatus> }`",
                );
                None
            }
        },
        syn::Data::Enum(e) => {
            cx.error_spanned_by(
                e.enum_token,
                "#[derive(Informer)] works on structs, not enums: put the enum in a field of \
                 `struct Foo { metadata: ObjectMeta, spec: FooSpec }`",
            );
            None
        }
        syn::Data::Union(u) => {
            cx.error_spanned_by(
                u.union_token,
                "#[derive(Informer)] works on structs, not unions: write \
                 `struct Foo { metadata: ObjectMeta, spec: FooSpec }`",
            );
            None
        }
    }
}

/// Container-level serde attributes that would break the wire format.
fn serde_container(cx: &mut Ctxt, attrs: &[syn::Attribute], view: bool) {
    for attr in attrs.iter().filter(|a| a.path().is_ident("serde")) {
        let Ok(metas) = serde_metas(attr) else { continue };
        for meta in metas {
            let path = meta.path();
            let message = if path.is_ident("deny_unknown_fields") && view {
                "remove `deny_unknown_fields`: a view decodes whole objects and skips every field \
                 it does not name"
            } else if path.is_ident("deny_unknown_fields") {
                "remove `deny_unknown_fields`: objects from the API server carry `apiVersion` and \
                 `kind`, which the struct has no fields for"
            } else if view && (path.is_ident("into") || path.is_ident("transparent")) {
                "#[derive(Informer)] serializes a view as its fields: remove this serde attribute"
            } else if view {
                continue;
            } else if path.is_ident("into") || path.is_ident("transparent") || path.is_ident("tag")
            {
                "#[derive(Informer)] serializes the struct as an object with `apiVersion` and \
                 `kind` first: remove this serde attribute"
            } else {
                continue;
            };
            cx.error_spanned_by(path, message);
        }
    }
}

/// Fields of the root whose type holds the root again (`children: Vec<Foo>`, `Box<Self>`): a
/// CRD's schema cannot refer to a type, and schemars can only refer to a recursive one. The
/// derive sees the root's fields alone; a recursion deeper in their types is found by `crd()`
/// (`informer_runtime::crd::Error::Recursive`). Fields schemars does not describe by their type
/// (`#[serde(skip)]`, `#[schemars(skip)]`, `with` or `schema_with`) cannot recurse.
fn recursive_fields(cx: &mut Ctxt, ident: &syn::Ident, fields: &[syn::Field]) {
    for field in fields {
        let described_otherwise = field
            .attrs
            .iter()
            .filter(|a| a.path().is_ident("serde") || a.path().is_ident("schemars"))
            .filter_map(|a| serde_metas(a).ok())
            .flatten()
            .any(|meta| {
                ["skip", "with", "schema_with"].iter().any(|name| meta.path().is_ident(name))
            });
        if described_otherwise || !names_type(field.ty.to_token_stream(), ident) {
            continue;
        }
        let name = field.ident.as_ref().map(ToString::to_string).unwrap_or_default();
        cx.error_spanned_by(
            &field.ty,
            format!(
                "`{ident}` contains itself through the field `{name}` ({ident} → {ident}), and a \
                 CustomResourceDefinition's schema cannot refer to a type: hold the nested \
                 objects as `serde_json::Value` (its schema keeps any fields), or give the field \
                 #[schemars(schema_with = \"...\")] returning {{\"type\": \"object\", \
                 \"x-kubernetes-preserve-unknown-fields\": true}}"
            ),
        );
    }
}

/// Whether `tokens` (a type) name the type `ident`, or `Self`, other than as the last segment
/// of a longer path (`other::Foo` is another type).
fn names_type(tokens: TokenStream, ident: &syn::Ident) -> bool {
    let mut after_colons = false;
    for tree in tokens {
        match &tree {
            proc_macro2::TokenTree::Ident(found) if found == "Self" => return true,
            proc_macro2::TokenTree::Ident(found) if found == ident && !after_colons => return true,
            proc_macro2::TokenTree::Group(group) if names_type(group.stream(), ident) => {
                return true;
            }
            _ => {}
        }
        after_colons = matches!(&tree, proc_macro2::TokenTree::Punct(p) if p.as_char() == ':');
    }
    false
}

/// `Serialize` derived next to `Informer` (when the compiler shows the derive to this one).
fn derived_serialize(cx: &mut Ctxt, attrs: &[syn::Attribute], view: bool) {
    for attr in attrs.iter().filter(|a| a.path().is_ident("derive")) {
        let Ok(paths) = attr.parse_args_with(
            syn::punctuated::Punctuated::<syn::Path, syn::Token![,]>::parse_terminated,
        ) else {
            continue;
        };
        for path in
            paths.iter().filter(|p| p.segments.last().is_some_and(|s| s.ident == "Serialize"))
        {
            let message = if view {
                "remove `Serialize` from the derives: #[derive(Informer)] implements it for a \
                 view, writing its fields as serde's derive would"
            } else {
                "remove `Serialize` from the derives: #[derive(Informer)] implements it, writing \
                 `apiVersion` and `kind` before the fields"
            };
            cx.error_spanned_by(path, message);
        }
    }
}

/// The items of one `#[serde(...)]` attribute.
pub(crate) fn serde_metas(
    attr: &syn::Attribute,
) -> syn::Result<syn::punctuated::Punctuated<syn::Meta, syn::Token![,]>> {
    attr.parse_args_with(syn::punctuated::Punctuated::parse_terminated)
}

/// The value of a required attribute, or `""` and an error at `anchor`.
fn required(
    cx: &mut Ctxt,
    anchor: &TokenStream,
    value: Option<&Spanned>,
    name: &str,
    example: &str,
) -> String {
    if let Some((v, _)) = value {
        return v.clone();
    }
    cx.error_spanned_by(
        anchor,
        format!("missing informer attribute `{name}`: add `#[informer({name} = \"{example}\")]`"),
    );
    String::new()
}

fn check_group(cx: &mut Ctxt, group: Option<&Spanned>) {
    let Some((group, span)) = group else { return };
    let ok = group.contains('.')
        && group.len() <= 253
        && group.split('.').all(|label| is_label(label, 63));
    if !ok {
        cx.error_at(
            *span,
            "group must be a lowercase DNS subdomain with at least one dot, like \"example.com\"",
        );
    }
}

fn check_version(cx: &mut Ctxt, version: Option<&Spanned>) {
    let Some((version, span)) = version else { return };
    if !is_label(version, 63) || !version.starts_with(|c: char| c.is_ascii_lowercase()) {
        cx.error_at(
            *span,
            "version must be a lowercase DNS label starting with a letter, like \"v1\" or \"v1beta1\"",
        );
    }
}

fn check_label(cx: &mut Ctxt, span: Span, name: &str, value: &str) {
    if !is_label(value, 63) {
        cx.error_at(
            span,
            format!("{name} must be a lowercase DNS label (letters, digits, '-'), like \"foos\""),
        );
    }
}

fn check_json_path(cx: &mut Ctxt, span: Span, name: &str, path: &str) {
    if !path.starts_with('.') || path.len() < 2 {
        cx.error_at(
            span,
            format!("{name} must be a JSON path starting with '.', like \".spec.size\""),
        );
    }
}

/// RFC 1123 label: lowercase letters, digits and '-', starting and ending alphanumeric.
fn is_label(s: &str, max: usize) -> bool {
    !s.is_empty()
        && s.len() <= max
        && s.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !s.starts_with('-')
        && !s.ends_with('-')
}

/// Whether the status subresource is on; checks that it names a field.
fn status(cx: &mut Ctxt, attrs: &Attrs, fields: &[syn::Field]) -> bool {
    let Some(value) = attrs.status.get() else { return false };
    let (wanted, span) = match value {
        Some((name, span)) => (name.as_str(), *span),
        None => ("status", attrs.status.span().unwrap_or_else(Span::call_site)),
    };
    // By field name, or by type (kube-derive's `status = "FooStatus"`), `Option<T>` included.
    let found = fields.iter().find(|f| {
        f.ident.as_ref().is_some_and(|i| i == wanted)
            || type_name(&f.ty).is_some_and(|t| t == wanted)
    });
    match found {
        Some(f) if f.ident.as_ref().is_some_and(|i| i == "status") => true,
        Some(f) => {
            let name = f.ident.as_ref().map(ToString::to_string).unwrap_or_default();
            cx.error_at(
                span,
                format!(
                    "the status subresource is the `status` field of the object: rename `{name}` \
                     to `status` (with #[serde(rename = \"status\")] if you must keep the name)"
                ),
            );
            false
        }
        None => {
            let ty = if wanted == "status" { "FooStatus" } else { wanted };
            cx.error_at(
                span,
                format!(
                    "no field named or typed `{wanted}`: add `status: Option<{ty}>` to the struct"
                ),
            );
            false
        }
    }
}

/// The last path segment of a type, or of `T` in `Option<T>`.
fn type_name(ty: &syn::Type) -> Option<String> {
    let syn::Type::Path(path) = ty else { return None };
    let last = path.path.segments.last()?;
    if last.ident == "Option"
        && let syn::PathArguments::AngleBracketed(args) = &last.arguments
        && let Some(syn::GenericArgument::Type(inner)) = args.args.first()
    {
        return type_name(inner);
    }
    Some(last.ident.to_string())
}

fn scale(cx: &mut Ctxt, scale: &attrs::Scale, span: Option<Span>) -> Option<Scale> {
    let span = span.unwrap_or_else(Span::call_site);
    let mut need = |value: Option<&Spanned>, name: &str, example: &str| {
        if let Some((v, s)) = value {
            check_json_path(cx, *s, name, v);
            Some(v.clone())
        } else {
            cx.error_at(span, format!("scale needs `{name}`: add `{name} = \"{example}\"`"));
            None
        }
    };
    let spec = need(scale.spec_replicas_path.get(), "spec_replicas_path", ".spec.replicas");
    let status = need(scale.status_replicas_path.get(), "status_replicas_path", ".status.replicas");
    if let Some((path, span)) = scale.label_selector_path.get() {
        check_json_path(cx, *span, "label_selector_path", path);
    }
    Some(Scale {
        spec_replicas_path: spec?,
        status_replicas_path: status?,
        label_selector_path: scale.label_selector_path.get().map(|(p, _)| p.clone()),
    })
}

fn print_column(cx: &mut Ctxt, column: &attrs::PrintColumn) -> Option<PrintColumn> {
    let mut need = |value: Option<&Spanned>, name: &str, example: &str| {
        if let Some((v, _)) = value {
            Some(v.clone())
        } else {
            cx.error_at(
                column.span,
                format!("printcolumn needs `{name}`: add `{name} = \"{example}\"`"),
            );
            None
        }
    };
    let name = need(column.name.get(), "name", "Replicas");
    let type_ = need(column.type_.get(), "type", "integer");
    let json_path = need(column.json_path.get(), "json_path", ".spec.replicas");
    if let Some((t, span)) = column.type_.get()
        && !matches!(t.as_str(), "integer" | "number" | "string" | "boolean" | "date")
    {
        cx.error_at(
                *span,
                "printcolumn type must be one of \"integer\", \"number\", \"string\", \"boolean\", \"date\"",
            );
    }
    if let Some((path, span)) = column.json_path.get() {
        check_json_path(cx, *span, "json_path", path);
    }
    Some(PrintColumn {
        name: name?,
        type_: type_?,
        json_path: json_path?,
        description: column.description.get().map(|(d, _)| d.clone()),
        format: column.format.get().map(|(f, _)| f.clone()),
        priority: column.priority.get().copied(),
    })
}

/// The crate paths `crates(...)` gives, or the defaults (`::informer_runtime`, ...).
pub(crate) fn crates(crates: &attrs::Crates) -> Crates {
    let or = |given: Option<&syn::Path>, default: syn::Path| given.cloned().unwrap_or(default);
    Crates {
        informer_runtime: or(crates.informer_runtime.get(), syn::parse_quote!(::informer_runtime)),
        informer_webhook: or(crates.informer_webhook.get(), syn::parse_quote!(::informer_webhook)),
        k8s_openapi: or(crates.k8s_openapi.get(), syn::parse_quote!(::k8s_openapi)),
        schemars: or(crates.schemars.get(), syn::parse_quote!(::schemars)),
        serde: or(crates.serde.get(), syn::parse_quote!(::serde)),
        serde_json: or(crates.serde_json.get(), syn::parse_quote!(::serde_json)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::quote;

    #[test]
    fn every_error_at_once() {
        let input: syn::DeriveInput = syn::parse2(quote! {
            #[informer(group = "Example", version = "1", namespaced, cluster, unknown = 1)]
            #[informer(group = "again.example.com")]
            struct Foo { spec: u8 }
        })
        .unwrap();
        let mut cx = Ctxt::default();
        assert!(check(&mut cx, &input).is_none());
        let message =
            cx.check().unwrap_err().into_iter().map(|e| e.to_string()).collect::<Vec<_>>();
        assert!(
            message.iter().any(|m| m.contains("unknown informer attribute `unknown`")),
            "{message:?}"
        );
        assert!(
            message.iter().any(|m| m.contains("duplicate informer attribute `group`")),
            "{message:?}"
        );
        assert!(message.iter().any(|m| m.contains("needs a `metadata` field")), "{message:?}");
    }
}
