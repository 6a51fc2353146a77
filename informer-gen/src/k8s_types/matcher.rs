//! Whether a schema node is one of the catalog's types: the safety rules ([`Matcher::check`])
//! and the choice among the types a node could be ([`Matcher::identify`]).

use std::collections::HashMap;

use super::catalog::{Catalog, Kind, ListType, Minors, Shape, TypeDef, description_key};
use crate::ir::Ty;
use crate::ir::convert::integer;
use crate::schema::openapi::{AdditionalProperties, Items, Schema, path_segment};

/// The path of `ObjectMeta`, which a nested schema may give as a bare object (below).
const OBJECT_META: &str = "apimachinery::pkg::apis::meta::v1::ObjectMeta";

/// Nodes nested deeper than this are not followed (schemas have no references, so nesting is
/// finite; the bound is a guard only).
const MAX_DEPTH: usize = 64;

/// What [`Matcher::identify`] found for a node.
#[derive(Debug)]
pub(crate) enum Found<'c> {
    /// The node is this type.
    Type(&'c TypeDef),
    /// The node nearly is this type, but not: why.
    Miss(&'c TypeDef, String),
    /// Nothing worth a word.
    Nothing,
}

/// The catalog, the Kubernetes versions a match must hold in, and an index of the catalog's
/// structs by field name.
pub(crate) struct Matcher<'c> {
    catalog: &'c Catalog,
    minors: Minors,
    /// Field name -> the structs with a field of that name in one of `minors`.
    by_field: HashMap<&'c str, Vec<&'c TypeDef>>,
}

impl<'c> Matcher<'c> {
    /// A matcher for the versions `minors` (each must exist in the catalog).
    pub(crate) fn new(catalog: &'c Catalog, minors: Minors) -> Self {
        let mut by_field: HashMap<&'c str, Vec<&'c TypeDef>> = HashMap::new();
        for def in catalog.types.values() {
            if def.shape != Shape::Struct || def.resource {
                continue;
            }
            let mut names: Vec<&str> = def
                .fields
                .iter()
                .filter(|f| minors.iter().any(|m| f.minors.contains(m)))
                .map(|f| f.json.as_str())
                .collect();
            names.dedup();
            for name in names {
                by_field.entry(name).or_default().push(def);
            }
        }
        Self { catalog, minors, by_field }
    }

    /// Which catalog type the object node `schema` is, if any, when nothing around it says
    /// (its parent is no catalog type). The rules, in order:
    ///
    /// 1. Candidates are the structs that have at least three quarters of the node's
    ///    properties as fields (a quarter may be fields of a newer Kubernetes version, for a
    ///    near miss to name).
    /// 2. Descriptions first: controller-gen copies Go doc comments into CRDs, and k8s-openapi
    ///    has the same ones. Only the candidates whose descriptions the node repeats most
    ///    (every candidate, where it repeats none) are considered: a node whose descriptions
    ///    are those of `ScaleIOVolumeSource` is not mapped to `ScaleIOPersistentVolumeSource`
    ///    because the first breaks a rule and the second has the same shape.
    /// 3. Of those, the ones [`check`](Matcher::check) passes in every Kubernetes version of
    ///    the matcher fit, and the one with the fewest fields the node lacks wins. A tie is no
    ///    match (the shape alone cannot tell `SecretKeySelector` from `ConfigMapKeySelector`),
    ///    except that a type of `core/v1` or `meta/v1` wins over the others (CRDs embed those
    ///    far more: a `Toleration` rather than `resource.k8s.io`'s `DeviceToleration`), and
    ///    between versions of one type (`resource.k8s.io`'s `v1` and `v1beta2`
    ///    `DeviceToleration`) the most stable, newest version wins, as Kubernetes orders them.
    /// 4. A node with fewer than three properties in all (nested ones counted) and no
    ///    description of the type is too small to tell: `{name, value}` is a `Sysctl`, an
    ///    `HTTPHeader` or the CRD's own pair.
    ///
    /// A near miss is reported where the node looks like the type: it repeats its descriptions,
    /// or three of its properties or more, and all but one at most, are fields of it.
    pub(crate) fn identify(&self, schema: &Schema) -> Found<'c> {
        if schema.properties.is_empty() {
            return Found::Nothing;
        }
        let mut shared: HashMap<&str, (usize, &'c TypeDef)> = HashMap::new();
        for name in schema.properties.keys() {
            for def in self.by_field.get(name.as_str()).into_iter().flatten() {
                shared.entry(def.path.as_str()).or_insert((0, def)).0 += 1;
            }
        }
        let wanted = schema.properties.len();
        let newest = self.minors.iter().last().unwrap_or(0);
        let mut candidates: Vec<(usize, usize, &'c TypeDef)> = shared
            .into_values()
            .filter(|(count, _)| count * 4 >= wanted * 3)
            .map(|(count, def)| (self.evidence(schema, def, newest, true, 0), count, def))
            .collect();
        let top = candidates.iter().map(|(evidence, ..)| *evidence).max().unwrap_or(0);
        candidates.retain(|(evidence, ..)| *evidence == top);
        // Most shared first, then by path: the order misses are reported in.
        candidates.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.2.path.cmp(&b.2.path)));
        let size = property_count(schema, 0);
        if top == 0 && size < 3 {
            return Found::Nothing;
        }
        let mut fits: Vec<(usize, &'c TypeDef)> = Vec::new();
        let mut first_miss: Option<(usize, &'c TypeDef, String)> = None;
        for (_, count, def) in candidates {
            match self.check_all(schema, def) {
                Ok(()) => fits.push((def.fields_in(newest).count().saturating_sub(wanted), def)),
                Err(reason) => {
                    if first_miss.is_none() {
                        first_miss = Some((count, def, reason));
                    }
                }
            }
        }
        fits.sort_by_key(|(lacks, def)| {
            (*lacks, !is_core(&def.path), std::cmp::Reverse(version_rank(&def.path)))
        });
        let Some(&(lacks, best)) = fits.first() else {
            return match first_miss {
                Some((count, def, reason)) if top > 0 || (count >= 3 && count + 1 >= wanted) => {
                    Found::Miss(def, reason)
                }
                _ => Found::Nothing,
            };
        };
        let tied: Vec<&'c TypeDef> = fits
            .iter()
            .take_while(|(l, def)| *l == lacks && is_core(&def.path) == is_core(&best.path))
            .map(|(_, def)| *def)
            .collect();
        if tied.iter().all(|def| def.name() == best.name()) {
            return Found::Type(best);
        }
        let names: Vec<String> = tied.iter().map(|def| def.path.clone()).collect();
        Found::Miss(
            best,
            format!(
                "the schema fits {} equally well (by shape{}): which one it is cannot be told",
                names.join(", "),
                if top == 0 { ", without descriptions" } else { " and descriptions" }
            ),
        )
    }

    /// Whether `def` implements `Default` in every version of the matcher.
    pub(crate) fn derives_default(&self, def: &TypeDef) -> bool {
        self.minors.iter().all(|minor| def.default.contains(minor))
    }

    /// [`check`](Matcher::check) in every version of the matcher.
    fn check_all(&self, schema: &Schema, def: &TypeDef) -> Result<(), String> {
        for minor in self.minors.iter() {
            self.check(schema, def, minor)?;
        }
        Ok(())
    }

    /// Whether decoding any object valid for the object node `schema` into `def` of Kubernetes
    /// `1.minor`, and encoding it back, gives the same JSON; and whether `def` is that node's
    /// type rather than a larger one that shares its field names. The rules:
    ///
    /// - `def` is a struct with its fields by name and k8s-openapi's usual serde (not a
    ///   resource, whose serde writes `apiVersion` and `kind` itself);
    /// - the node keeps no field beyond its properties (no
    ///   `x-kubernetes-preserve-unknown-fields`, `additionalProperties` or properties only
    ///   inside `oneOf`/`anyOf`/`allOf`/`not`), which `def` would drop, and is no embedded
    ///   resource;
    /// - every property is a field of `def` with a compatible kind (below), and is not nullable
    ///   where the field is required;
    /// - every field `def` requires is required by the node: k8s-openapi reads a missing one
    ///   as its default and writes it back (or fails), where the object had none;
    /// - the node lacks at most a quarter of `def`'s fields (at least one, but fewer than it
    ///   has): fields Kubernetes added after the CRD was written. A node that lacks more is a
    ///   type of the CRD's own that shares field names, on which a user would set fields the
    ///   API server prunes. Nested in a matched type, `ObjectMeta` may lack any (controller-gen
    ///   writes an embedded `ObjectMeta` as a bare `{type: object}`, or with the few fields of
    ///   `generateEmbeddedObjectMeta`).
    ///
    /// Kinds: strings (with or without `enum`) are `String`; `format: date-time` is `Time`
    /// (never `MicroTime`, which writes microseconds), `format: byte` is `ByteString`;
    /// `format: int32` integers (within `i32`) fit `int32` and `int64` fields, other integers
    /// only `int64`; numbers are `double`, booleans `bool`; int-or-string without the quantity
    /// pattern is `IntOrString`. Never `Quantity`: k8s-openapi's reads a number (`cpu: 1`) as
    /// its text and writes back a string (`"1"`). Lists match lists of a matching item, and a
    /// declared `x-kubernetes-list-type` must be the type's, with its map keys among the
    /// node's `x-kubernetes-list-map-keys`; `additionalProperties` matches maps of a matching
    /// value; list items and map values are not nullable. Free JSON (`RawExtension`,
    /// `FieldsV1`) matches a node that keeps any JSON.
    pub(crate) fn check(&self, schema: &Schema, def: &TypeDef, minor: u32) -> Result<(), String> {
        self.check_struct(schema, def, minor, false, 0)
    }

    fn check_struct(
        &self,
        schema: &Schema,
        def: &TypeDef,
        minor: u32,
        nested: bool,
        depth: usize,
    ) -> Result<(), String> {
        let name = def.name();
        if depth > MAX_DEPTH {
            return Err("nested too deep to compare".to_owned());
        }
        if !def.minors.contains(minor) {
            return Err(format!("{name} is not in Kubernetes 1.{minor}"));
        }
        if def.shape != Shape::Struct {
            return Err(format!("{name} has a serde of its own"));
        }
        if def.resource {
            return Err(format!(
                "{name} is a resource, which writes its apiVersion and kind even where the \
                 object has none"
            ));
        }
        if schema.type_.as_deref() != Some("object") {
            return Err(format!("an object of {name} is given as {}", describe(schema)));
        }
        if schema.preserves_unknown_fields() {
            return Err(format!(
                "the schema keeps fields it does not name \
                 (x-kubernetes-preserve-unknown-fields), which {name} would drop"
            ));
        }
        if matches!(
            schema.additional_properties.as_deref(),
            Some(AdditionalProperties::Schema(_) | AdditionalProperties::Allowed(true))
        ) {
            return Err(format!(
                "the schema allows fields beyond its properties (additionalProperties), which \
                 {name} would drop"
            ));
        }
        if schema.embedded_resource {
            return Err(format!(
                "the schema is an embedded resource (x-kubernetes-embedded-resource), {name} is not"
            ));
        }
        if schema.junctions().any(|(_, _, branch)| {
            branch.properties.keys().any(|p| !schema.properties.contains_key(p))
        }) {
            return Err(format!(
                "the schema names properties only inside oneOf/anyOf/allOf/not, which {name} \
                 would drop"
            ));
        }
        let bare_meta = nested && def.path == OBJECT_META;
        for (json, property) in &schema.properties {
            let at = || format!(".{}", path_segment(json));
            let Some(field) = def.field(json, minor) else {
                return Err(format!("`{json}` is no field of {name} in Kubernetes 1.{minor}"));
            };
            if field.required && property.nullable {
                return Err(format!("{}: nullable, where {name} requires a value", at()));
            }
            self.check_kind(property, &field.kind, &field.list, minor, depth + 1)
                .map_err(|reason| prefix(&at(), &reason))?;
        }
        let required: Vec<&str> = def
            .fields_in(minor)
            .filter(|f| f.required && !schema.required.contains(&f.json))
            .map(|f| f.json.as_str())
            .collect();
        if !required.is_empty() {
            return Err(format!(
                "{name} requires {}, which the schema does not (k8s-openapi would read a missing \
                 one as its default and write it back)",
                quoted(&required)
            ));
        }
        let total = def.fields_in(minor).count();
        let has = schema.properties.len();
        let lacks = total - has;
        if !bare_meta && (lacks > (total / 4).max(1) || (lacks > 0 && has <= lacks)) {
            return Err(format!(
                "the schema has {} of {name}'s {total} fields in Kubernetes 1.{minor}: a type \
                 that shares some of its field names",
                schema.properties.len()
            ));
        }
        Ok(())
    }

    fn check_kind(
        &self,
        schema: &Schema,
        kind: &Kind,
        list: &ListType,
        minor: u32,
        depth: usize,
    ) -> Result<(), String> {
        let given = scalar(schema);
        let fits = match kind {
            Kind::String => given == Some(Ty::String),
            Kind::Bytes => given == Some(Ty::Bytes),
            Kind::I32 => given == Some(Ty::I32),
            Kind::I64 => matches!(given, Some(Ty::I32 | Ty::I64)),
            Kind::F64 => given == Some(Ty::F64),
            Kind::Bool => given == Some(Ty::Bool),
            Kind::Json => keeps_any_json(schema),
            Kind::Array(item) => {
                return self.check_list(schema, item, list, minor, depth);
            }
            Kind::Map(value) => {
                let values = match schema.additional_properties.as_deref() {
                    Some(AdditionalProperties::Schema(values))
                        if schema.type_.as_deref() == Some("object")
                            && schema.properties.is_empty()
                            && !schema.preserves_unknown_fields() =>
                    {
                        values
                    }
                    _ => return Err(format!("a map is given as {}", describe(schema))),
                };
                if values.nullable {
                    return Err("nullable map values, which k8s-openapi cannot hold".to_owned());
                }
                return self
                    .check_kind(values, value, &ListType::None, minor, depth + 1)
                    .map_err(|reason| prefix(".*", &reason));
            }
            Kind::Ref(path) => {
                let Some(def) = self.catalog.types.get(path) else {
                    return Err(format!("{path} is not in the catalog"));
                };
                match def.shape {
                    Shape::Struct => return self.check_struct(schema, def, minor, true, depth),
                    Shape::Time => given == Some(Ty::Time),
                    Shape::IntOrString => given == Some(Ty::IntOrString),
                    Shape::Json => keeps_any_json(schema),
                    Shape::Quantity => {
                        return Err("a quantity: k8s-openapi's Quantity reads a number \
                                    (`cpu: 1`) as its text and writes it back as a string"
                            .to_owned());
                    }
                    Shape::MicroTime => {
                        return Err("a MicroTime, which k8s-openapi writes with microseconds \
                                    where the object may have none"
                            .to_owned());
                    }
                    Shape::Opaque => return Err(format!("{} has a serde of its own", def.name())),
                }
            }
        };
        if fits {
            Ok(())
        } else {
            Err(format!(
                "{} where k8s-openapi has {}",
                describe(schema),
                kind_name(self.catalog, kind)
            ))
        }
    }

    fn check_list(
        &self,
        schema: &Schema,
        item: &Kind,
        list: &ListType,
        minor: u32,
        depth: usize,
    ) -> Result<(), String> {
        let (Some("array"), Some(Items::Schema(items))) =
            (schema.type_.as_deref(), schema.items.as_deref())
        else {
            return Err(format!("a list is given as {}", describe(schema)));
        };
        if items.nullable {
            return Err("nullable list items, which k8s-openapi cannot hold".to_owned());
        }
        if let Some(declared) = schema.list_type.as_deref() {
            let same = match list {
                ListType::Atomic | ListType::None => declared == "atomic",
                ListType::Set => declared == "set",
                ListType::Map(keys) => {
                    declared == "map" && keys.iter().all(|key| schema.list_map_keys.contains(key))
                }
            };
            if !same {
                let keys = if schema.list_map_keys.is_empty() {
                    String::new()
                } else {
                    format!(" (keys {})", schema.list_map_keys.join(", "))
                };
                return Err(format!(
                    "x-kubernetes-list-type {declared}{keys}, where Kubernetes has {}",
                    match list {
                        ListType::Map(keys) => format!("map (keys {})", keys.join(", ")),
                        ListType::Set => "set".to_owned(),
                        ListType::Atomic | ListType::None => "atomic".to_owned(),
                    }
                ));
            }
        }
        self.check_kind(items, item, &ListType::None, minor, depth + 1)
            .map_err(|reason| prefix("[*]", &reason))
    }

    /// How many descriptions of `schema` and its nested nodes are `def`'s in `1.minor`: the
    /// node's own (`own`: not for a nested node, whose description is its field's, counted by
    /// its parent) and its properties'.
    fn evidence(
        &self,
        schema: &Schema,
        def: &TypeDef,
        minor: u32,
        own: bool,
        depth: usize,
    ) -> usize {
        if depth > MAX_DEPTH {
            return 0;
        }
        let key = |node: &Schema| node.description.as_deref().and_then(description_key);
        let mut count =
            usize::from(own && key(schema).is_some_and(|k| def.descriptions.contains(&k)));
        for (json, property) in &schema.properties {
            let Some(field) = def.field(json, minor) else { continue };
            count += usize::from(key(property).is_some_and(|k| field.descriptions.contains(&k)));
            let (mut node, mut kind) = (property, &field.kind);
            loop {
                match (kind, node.items.as_deref(), node.additional_properties.as_deref()) {
                    (Kind::Array(item), Some(Items::Schema(items)), _) => {
                        (node, kind) = (items, item);
                    }
                    (Kind::Map(value), _, Some(AdditionalProperties::Schema(values))) => {
                        (node, kind) = (values, value);
                    }
                    _ => break,
                }
            }
            if let Some(nested) = match kind {
                Kind::Ref(path) => self.catalog.types.get(path),
                _ => None,
            } {
                count += self.evidence(node, nested, minor, false, depth + 1);
            }
        }
        count
    }
}

/// Whether `path` is a type of `core/v1` or `meta/v1`.
fn is_core(path: &str) -> bool {
    path.starts_with("api::core::v1::") || path.starts_with("apimachinery::pkg::apis::meta::v1::")
}

/// How Kubernetes orders the versions of a type, by the module of `path`
/// (`api::resource::v1beta2::DeviceToleration`): GA before beta before alpha, newer first.
fn version_rank(path: &str) -> (u8, u32, u32) {
    let module = path.rsplit("::").nth(1).unwrap_or_default();
    let Some(rest) = module.strip_prefix('v') else { return (0, 0, 0) };
    let digits = |s: &str| -> (u32, usize) {
        let end = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
        (s[..end].parse().unwrap_or(0), end)
    };
    let (major, end) = digits(rest);
    let tail = &rest[end..];
    if tail.is_empty() {
        (3, major, 0)
    } else if let Some(minor) = tail.strip_prefix("beta") {
        (2, major, digits(minor).0)
    } else if let Some(minor) = tail.strip_prefix("alpha") {
        (1, major, digits(minor).0)
    } else {
        (0, major, 0)
    }
}

/// The Rust type the generator gives a scalar node, or `None` for lists and objects.
fn scalar(schema: &Schema) -> Option<Ty> {
    if schema.int_or_string {
        return Some(if schema.is_quantity() { Ty::Quantity } else { Ty::IntOrString });
    }
    match schema.type_.as_deref()? {
        "string" => Some(match schema.format.as_deref() {
            _ if schema.enum_.is_some() => Ty::String,
            Some("date-time") => Ty::Time,
            Some("byte") => Ty::Bytes,
            _ => Ty::String,
        }),
        "integer" => Some(integer(schema)),
        "number" => Some(Ty::F64),
        "boolean" => Some(Ty::Bool),
        _ => None,
    }
}

/// Whether the node takes any JSON value, as a newtype of `serde_json::Value` does.
fn keeps_any_json(schema: &Schema) -> bool {
    schema.preserves_unknown_fields()
        && schema.properties.is_empty()
        && schema.additional_properties.is_none()
        && !schema.embedded_resource
}

/// How many properties `schema` has, nested ones counted.
fn property_count(schema: &Schema, depth: usize) -> usize {
    if depth > MAX_DEPTH {
        return 0;
    }
    let mut count = 0;
    for property in schema.properties.values() {
        count += 1;
        let mut node = property;
        loop {
            match (node.items.as_deref(), node.additional_properties.as_deref()) {
                (Some(Items::Schema(items)), _) => node = items,
                (_, Some(AdditionalProperties::Schema(values))) => node = values,
                _ => break,
            }
        }
        count += property_count(node, depth + 1);
    }
    count
}

/// A short description of a node's type, for reasons.
fn describe(schema: &Schema) -> String {
    if schema.int_or_string {
        return if schema.is_quantity() { "a quantity" } else { "an int-or-string" }.to_owned();
    }
    match (schema.type_.as_deref(), schema.format.as_deref()) {
        (Some(ty), Some(format)) => format!("{ty} ({format})"),
        (Some(ty), None) => ty.to_owned(),
        (None, _) if schema.preserves_unknown_fields() => "any JSON".to_owned(),
        (None, _) => "a node without a type".to_owned(),
    }
}

fn kind_name(catalog: &Catalog, kind: &Kind) -> String {
    match kind {
        Kind::String => "a string".to_owned(),
        Kind::Bytes => "a string (byte)".to_owned(),
        Kind::I32 => "an integer (int32)".to_owned(),
        Kind::I64 => "an integer (int64)".to_owned(),
        Kind::F64 => "a number".to_owned(),
        Kind::Bool => "a boolean".to_owned(),
        Kind::Json => "free JSON".to_owned(),
        Kind::Array(_) => "a list".to_owned(),
        Kind::Map(_) => "a map".to_owned(),
        Kind::Ref(path) => {
            catalog.types.get(path).map_or_else(|| path.clone(), |def| def.name().to_owned())
        }
    }
}

/// `reason` about a nested node, with the path to it in front: `.resources.limits: ...`.
fn prefix(segment: &str, reason: &str) -> String {
    if reason.starts_with('.') || reason.starts_with('[') {
        format!("{segment}{reason}")
    } else {
        format!("{segment}: {reason}")
    }
}

fn quoted(names: &[&str]) -> String {
    names.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ")
}
