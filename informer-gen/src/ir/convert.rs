//! Schema → [`TypeSpace`]: the mapping from a structural schema to Rust types.
//!
//! The rules, in the order [`Converter::convert`] tries them on a node:
//! 1. `x-kubernetes-int-or-string` → the runtime's `NumberOrQuantity` when the node's `pattern`
//!    is the resource quantity pattern (as in every controller-gen CRD): unlike k8s-openapi's
//!    `Quantity`, it writes a number back as a number. Otherwise k8s-openapi's `IntOrString`
//!    (whose integers are `i32`, as Go's `intstr.IntOrString`).
//! 2. `type: string` with `enum` → a string enum with a variant for unlisted values, so a value
//!    added by a newer server still decodes (and encodes back unchanged); `format: date-time` →
//!    `Time`; `format: byte` → `ByteString`; otherwise `String`.
//! 3. `integer` → `i32` for `format: int32` (unless `minimum` or `maximum` lie beyond `i32`:
//!    the API server checks those, not the format), else `i64`; `number` → `f64`; `boolean` →
//!    `bool`.
//! 4. `array` → `Vec` of the items' type.
//! 5. Objects: a node with `properties` that is one of k8s-openapi's types (the rules are in
//!    [`k8s_types`](crate::k8s_types); never in a CRD with `preserveUnknownFields: true`) →
//!    that type. Otherwise `x-kubernetes-embedded-resource` or `properties` → a struct (an
//!    embedded resource always has `apiVersion`, `kind` and `metadata: ObjectMeta`); fields
//!    beyond `properties`
//!    are kept in a flattened map when `additionalProperties` or
//!    `x-kubernetes-preserve-unknown-fields` allows them. Without properties:
//!    `additionalProperties` → `BTreeMap<String, T>`; preserve-unknown-fields → a map of JSON
//!    values (or any JSON value when the node has no type); no type at all → any JSON value; an
//!    object that allows nothing → an empty struct (the API server prunes whatever is sent).
//! 6. `oneOf`/`anyOf`/`allOf`/`not` never change the shape: in a structural schema they may only
//!    restate fields that `properties` already declares. Their `required` sets are turned into
//!    documentation ("exactly one of …").
//! 7. A property is an `Option` unless it is listed in `required` and not `nullable`. `null`
//!    and absence both read as `None`, and `None` is not written.
//! 8. Where a schema is not structural (CRDs created before the API server required it are
//!    still served, and still published), the node gets the loosest faithful type and a
//!    [`Warning`] naming its path: an array without `items` or with the tuple form → `Vec` of
//!    JSON values; no `type` → any JSON value, or an object, array or map where `properties`,
//!    `items` or `additionalProperties` say so; an unknown `type` → any JSON value; a property
//!    only inside `oneOf`/`anyOf`/`allOf`/`not` → the object keeps fields beyond its
//!    `properties` in a flattened map (a property is never dropped); a CRD with
//!    `preserveUnknownFields: true` → every struct does, since the API server prunes nothing.

use std::path::Path;

use super::naming::{self, NESTED_ITEM};
use super::{Extra, Field, Root, StringEnum, Struct, Ty, TypeDef, TypeId, TypeSpace};
use crate::error::{Error, Result, Warning};
use crate::k8s_types::TypeMapping;
use crate::k8s_types::matcher::{Found, Matcher};
use crate::schema::Loaded;
use crate::schema::openapi::{AdditionalProperties, Items, Schema, path_segment};

/// Converts the schemas of one file's document into types of a [`TypeSpace`].
pub(crate) struct Converter<'a> {
    space: &'a mut TypeSpace,
    file: &'a Path,
    document: usize,
    /// The CRD turns pruning off (`spec.preserveUnknownFields: true`, which only CRDs created
    /// before `apiextensions.k8s.io/v1` can have): the API server keeps every field of every
    /// object, so every struct keeps the fields its schema does not name.
    keep_unknown: bool,
    /// Where the schema is not structural, and what it became.
    warnings: &'a mut Vec<Warning>,
    /// k8s-openapi's types, unless the mapping is off.
    k8s: Option<&'a Matcher<'a>>,
    /// The nodes mapped to k8s-openapi's types, and the near misses.
    mappings: &'a mut Vec<TypeMapping>,
}

impl<'a> Converter<'a> {
    /// A converter of `loaded`'s schemas into `space`, recording in `warnings` where a schema
    /// is not structural, and in `mappings` the nodes mapped to k8s-openapi's types by `k8s`
    /// (none if `None`) and the near misses.
    pub(crate) fn new(
        space: &'a mut TypeSpace,
        loaded: &'a Loaded,
        warnings: &'a mut Vec<Warning>,
        (k8s, mappings): (Option<&'a Matcher<'a>>, &'a mut Vec<TypeMapping>),
    ) -> Self {
        let keep_unknown = loaded.crd.spec.preserve_unknown_fields;
        Self {
            space,
            file: &loaded.file,
            document: loaded.document,
            keep_unknown,
            warnings,
            // The API server keeps unknown fields of such a CRD's objects: k8s-openapi's types
            // would drop them.
            k8s: k8s.filter(|_| !keep_unknown),
            mappings,
        }
    }

    /// Adds the root type of `spec.versions[index]` of `loaded`, named `name` (reserved by the
    /// caller), and every type nested in it.
    pub(crate) fn root(&mut self, loaded: &Loaded, index: usize, name: &str) -> Result<TypeId> {
        let crd = &loaded.crd;
        let version = &crd.spec.versions[index];
        let path = format!("spec.versions[{index}].schema.openAPIV3Schema");
        let schema = version
            .schema
            .as_ref()
            .and_then(|s| s.open_api_v3_schema.as_ref())
            .ok_or_else(|| self.error(&path, "the version has no schema"))?;
        if !matches!(schema.type_.as_deref(), None | Some("object")) {
            return Err(self.error(&path, "the root of a resource schema must be an object"));
        }
        if self.keep_unknown {
            self.warn(
                "spec.preserveUnknownFields",
                format!(
                    "pruning is off for the whole CRD (only CRDs created before \
                     apiextensions.k8s.io/v1 can have that), so version {} keeps fields its \
                     schema does not name: every struct keeps them in a flattened map",
                    version.name
                ),
            );
        }
        let names = &crd.spec.names;
        let root = Root {
            group: crd.spec.group.clone(),
            version: version.name.clone(),
            kind: names.kind.clone(),
            plural: names.plural.clone(),
            list_kind: names.list_kind.clone().unwrap_or_else(|| format!("{}List", names.kind)),
            namespaced: crd.namespaced(),
        };
        let mut doc = description(schema);
        if !doc.is_empty() {
            doc.push(String::new());
        }
        let gv = format!("{}/{}", root.group, root.version);
        doc.push(format!("`{}` of `{gv}`{}.", root.kind, deprecation(version.deprecated)));
        self.object(schema, &path, name, Shape::Root(root), doc)
    }

    fn error(&self, path: &str, message: impl Into<String>) -> Error {
        Error::Schema {
            file: self.file.to_owned(),
            document: self.document,
            path: path.to_owned(),
            message: message.into(),
        }
    }

    /// Records a spot where the schema is not structural; `message` says what it became.
    fn warn(&mut self, path: &str, message: impl Into<String>) {
        self.warnings.push(Warning {
            file: self.file.to_owned(),
            document: self.document,
            path: path.to_owned(),
            message: message.into(),
        });
    }

    /// The type of one schema node. `name` is the name a nested type would get.
    fn convert(&mut self, schema: &Schema, path: &str, name: &str) -> Result<Ty> {
        if schema.int_or_string {
            return Ok(if schema.is_quantity() { Ty::Quantity } else { Ty::IntOrString });
        }
        match schema.type_.as_deref() {
            Some("string") => Ok(match (schema.format.as_deref(), string_enum(schema)) {
                (_, Some(values)) => Ty::Named(self.string_enum(schema, name, values)),
                (Some("date-time"), None) => Ty::Time,
                (Some("byte"), None) => Ty::Bytes,
                _ => Ty::String,
            }),
            Some("integer") => Ok(integer(schema)),
            Some("number") => Ok(Ty::F64),
            Some("boolean") => Ok(Ty::Bool),
            Some("array") => self.array(schema, path, name),
            None if schema.items.is_some() && !schema.preserves_unknown_fields() => {
                self.warn(path, "no `type` beside `items`: read as an array");
                self.array(schema, path, name)
            }
            Some("object") | None => self.object_like(schema, path, name),
            Some(other) => {
                self.warn(
                    &format!("{path}.type"),
                    format!(
                        "unknown type {other:?} (a structural schema has object, array, string, \
                         integer, number or boolean): free JSON (serde_json::Value)"
                    ),
                );
                Ok(Ty::Json)
            }
        }
    }

    fn array(&mut self, schema: &Schema, path: &str, name: &str) -> Result<Ty> {
        let items_path = format!("{path}.items");
        match schema.items.as_deref() {
            Some(Items::Schema(items)) => {
                let item_name = if items.type_.as_deref() == Some("array") {
                    format!("{name}{NESTED_ITEM}")
                } else {
                    name.to_owned()
                };
                let item = self.convert(items, &items_path, &item_name)?;
                Ok(Ty::Vec(Box::new(nullable(items, item))))
            }
            Some(Items::Tuple(_)) => {
                self.warn(
                    &items_path,
                    "`items` is a list of schemas (tuple form), which a structural schema \
                     forbids: items of free JSON (Vec<serde_json::Value>)",
                );
                Ok(Ty::Vec(Box::new(Ty::Json)))
            }
            None => {
                self.warn(
                    path,
                    "an array without `items` (a structural schema says what the items are): \
                     items of free JSON (Vec<serde_json::Value>)",
                );
                Ok(Ty::Vec(Box::new(Ty::Json)))
            }
        }
    }

    fn object_like(&mut self, schema: &Schema, path: &str, name: &str) -> Result<Ty> {
        let untyped = schema.type_.is_none() && !schema.preserves_unknown_fields();
        if schema.embedded_resource || !schema.properties.is_empty() {
            if untyped {
                self.warn(path, "no `type` beside `properties`: read as an object");
            }
            if let Some(ty) = self.k8s_type(schema, path) {
                return Ok(ty);
            }
            let shape = if schema.embedded_resource { Shape::Embedded } else { Shape::Plain };
            let doc = description(schema);
            return Ok(Ty::Named(self.object(schema, path, name, shape, doc)?));
        }
        // Properties only inside oneOf/anyOf/allOf/not: any field may come, kept as JSON.
        let keep_unknown = self.check_junctions(schema, path) || self.keep_unknown;
        if untyped && schema.additional_properties.is_some() {
            self.warn(path, "no `type` beside `additionalProperties`: read as a map");
        }
        match schema.additional_properties.as_deref() {
            Some(AdditionalProperties::Schema(values)) => {
                let values_path = format!("{path}.additionalProperties");
                let value = self.convert(values, &values_path, name)?;
                return Ok(Ty::Map(Box::new(nullable(values, value))));
            }
            Some(AdditionalProperties::Allowed(true)) => return Ok(Ty::Map(Box::new(Ty::Json))),
            Some(AdditionalProperties::Allowed(false)) | None => {}
        }
        if schema.preserves_unknown_fields() {
            return Ok(if schema.type_.is_some() { Ty::Map(Box::new(Ty::Json)) } else { Ty::Json });
        }
        if schema.type_.is_none() {
            self.warn(
                path,
                "no `type` (a structural schema gives one, or \
                 x-kubernetes-preserve-unknown-fields): free JSON (serde_json::Value)",
            );
            return Ok(Ty::Json);
        }
        if keep_unknown {
            return Ok(Ty::Map(Box::new(Ty::Json)));
        }
        let doc = description(schema);
        Ok(Ty::Named(self.object(schema, path, name, Shape::Plain, doc)?))
    }

    /// The k8s-openapi type the object node at `path` is, if any; records it, or a near miss.
    fn k8s_type(&mut self, schema: &Schema, path: &str) -> Option<Ty> {
        let matcher = self.k8s?;
        let (def, miss) = match matcher.identify(schema) {
            Found::Type(def) => (def, None),
            Found::Miss(def, reason) => (def, Some(reason)),
            Found::Nothing => return None,
        };
        let mapped = miss.is_none();
        self.mappings.push(TypeMapping {
            file: self.file.to_owned(),
            document: self.document,
            path: path.to_owned(),
            rust_type: format!("::k8s_openapi::{}", def.path),
            miss,
        });
        mapped.then(|| Ty::K8s { path: def.path.clone(), default: matcher.derives_default(def) })
    }

    /// A struct for an object node. Its fields are converted first, so that a struct identical
    /// to one already made (same fields, field types, docs) is not made twice.
    fn object(
        &mut self,
        schema: &Schema,
        path: &str,
        name: &str,
        shape: Shape,
        mut doc: Vec<String>,
    ) -> Result<TypeId> {
        let keep_unknown = self.check_junctions(schema, path) || self.keep_unknown;
        if !schema.properties.is_empty() && schema.additional_properties.is_some() {
            self.warn(
                path,
                "`properties` beside `additionalProperties`, which a structural schema forbids: \
                 the properties are fields, other keys go to a flattened map",
            );
        }
        let junctions = junction_docs(schema);
        if !doc.is_empty() && !junctions.is_empty() {
            doc.push(String::new());
        }
        doc.extend(junctions);
        let is_root = matches!(shape, Shape::Root(_));
        let mut fields = Vec::new();
        if is_root || matches!(shape, Shape::Embedded) {
            for json in ["apiVersion", "kind"] {
                // The root's apiVersion and kind are constants written by its Serialize impl.
                if !is_root && !schema.properties.contains_key(json) {
                    fields.push(Field {
                        rust_name: naming::field_name(json),
                        json_name: json.to_owned(),
                        ty: Ty::String,
                        required: false,
                        write_null: false,
                        doc: vec![format!("`{json}` of the embedded object.")],
                    });
                }
            }
            if !schema.properties.contains_key("metadata") {
                fields.push(metadata_field(is_root, Vec::new()));
            }
        }
        for (json, property) in &schema.properties {
            let property_path = format!("{path}.properties.{}", path_segment(json));
            if is_root && (json == "apiVersion" || json == "kind") {
                continue;
            }
            if json == "metadata" && (is_root || matches!(shape, Shape::Embedded)) {
                fields.push(metadata_field(is_root, description(property)));
                continue;
            }
            let nested = format!("{name}{}", naming::type_fragment(json));
            let ty = self.convert(property, &property_path, &nested)?;
            let mut field_doc = description(property);
            if let Some(default) = &property.default {
                if !field_doc.is_empty() {
                    field_doc.push(String::new());
                }
                field_doc.push(format!("Defaults to `{default}`."));
            }
            fields.push(Field {
                rust_name: naming::field_name(json),
                json_name: json.clone(),
                ty,
                required: schema.required.contains(json) && !property.nullable,
                write_null: schema.required.contains(json) && property.nullable,
                doc: field_doc,
            });
        }
        let extra_value = self.extra_value(schema, path, name, keep_unknown)?;
        let mut names: Vec<String> = fields.iter().map(|f| f.rust_name.clone()).collect();
        if extra_value.is_some() {
            names.push("extra".to_owned());
        }
        let mut unique = naming::unique_fields(names);
        let extra =
            extra_value.map(|value| Extra { rust_name: unique.pop().unwrap_or_default(), value });
        for (field, rust_name) in fields.iter_mut().zip(unique) {
            field.rust_name = rust_name;
        }
        let mut made = Struct { name: String::new(), doc, fields, extra, root: None };
        let key = match shape {
            Shape::Root(root) => {
                made.root = Some(root);
                name.clone_into(&mut made.name);
                None
            }
            Shape::Embedded | Shape::Plain => {
                let key = format!("{:?}", (&made.doc, &made.fields, &made.extra));
                if let Some(id) = self.space.structs.get(&key) {
                    return Ok(*id);
                }
                made.name = self.space.names.claim(name);
                Some(key)
            }
        };
        let id = TypeId(self.space.types.len());
        self.space.types.push(TypeDef::Struct(made));
        if let Some(key) = key {
            self.space.structs.insert(key, id);
        }
        Ok(id)
    }

    /// The type of the values of the flattened map that keeps an object's fields beyond its
    /// `properties`, if it has one.
    fn extra_value(
        &mut self,
        schema: &Schema,
        path: &str,
        name: &str,
        keep_unknown: bool,
    ) -> Result<Option<Ty>> {
        Ok(match schema.additional_properties.as_deref() {
            Some(AdditionalProperties::Schema(values)) => {
                let value = self.convert(
                    values,
                    &format!("{path}.additionalProperties"),
                    &format!("{name}Value"),
                )?;
                Some(nullable(values, value))
            }
            Some(AdditionalProperties::Allowed(true)) => Some(Ty::Json),
            _ if schema.preserves_unknown_fields() || keep_unknown => Some(Ty::Json),
            _ => None,
        })
    }

    fn string_enum(&mut self, schema: &Schema, name: &str, values: Vec<String>) -> TypeId {
        let doc = description(schema);
        let key = format!("{:?}", (&doc, &values));
        if let Some(id) = self.space.enums.get(&key) {
            return *id;
        }
        let name = &self.space.names.claim(name);
        let variants = naming::unique_variants(&values);
        let other = naming::first_free("Other", "", |n| variants.iter().any(|v| v == n));
        let id = TypeId(self.space.types.len());
        self.space.types.push(TypeDef::Enum(StringEnum {
            name: name.to_owned(),
            doc,
            variants: variants.into_iter().zip(values).collect(),
            other,
        }));
        self.space.enums.insert(key, id);
        id
    }

    /// Structural schemas may only restate, inside `oneOf`/`anyOf`/`allOf`/`not`, fields that
    /// the node declares itself. Anything else is a warning, and true is returned: such a field
    /// may be in an object, so the node's type must keep fields its `properties` do not name.
    fn check_junctions(&mut self, schema: &Schema, path: &str) -> bool {
        let mut found = false;
        for (keyword, segment, branch) in schema.junctions() {
            for property in branch.properties.keys() {
                if !schema.properties.contains_key(property) {
                    found = true;
                    self.warn(
                        &format!("{path}.{segment}.properties.{}", path_segment(property)),
                        format!(
                            "property {property:?} appears only inside {keyword} (a structural \
                             schema also declares it in the enclosing `properties`): kept as \
                             JSON among the object's other fields"
                        ),
                    );
                }
            }
        }
        found
    }
}

/// `integer`: `i32` for `format: int32` unless its bounds say values may not fit (`MetalLB`'s
/// `format: int32` autonomous system numbers have a maximum of 2^32 - 1; kube-apiserver refuses
/// objects against such a schema, but an `i64` holds whatever a server keeps), else `i64`.
pub(crate) fn integer(schema: &Schema) -> Ty {
    let fits = |bound: Option<f64>| {
        bound.is_none_or(|b| (f64::from(i32::MIN)..=f64::from(i32::MAX)).contains(&b))
    };
    if schema.format.as_deref() == Some("int32") && fits(schema.minimum) && fits(schema.maximum) {
        Ty::I32
    } else {
        Ty::I64
    }
}

/// `ty`, as an `Option` when `schema` (a list item or map value) is nullable.
fn nullable(schema: &Schema, ty: Ty) -> Ty {
    if schema.nullable && ty != Ty::Json { Ty::Nullable(Box::new(ty)) } else { ty }
}

/// What kind of struct an object node becomes.
enum Shape {
    /// The resource itself.
    Root(Root),
    /// `x-kubernetes-embedded-resource`.
    Embedded,
    Plain,
}

fn metadata_field(is_root: bool, doc: Vec<String>) -> Field {
    let doc = if doc.is_empty() { vec!["Standard object metadata.".to_owned()] } else { doc };
    Field {
        rust_name: "metadata".to_owned(),
        json_name: "metadata".to_owned(),
        ty: Ty::ObjectMeta,
        required: is_root,
        write_null: false,
        doc,
    }
}

/// The string values of an enum on a string node, without `null` and duplicates; `None` if the
/// node has no enum or lists something other than strings.
fn string_enum(schema: &Schema) -> Option<Vec<String>> {
    let list = schema.enum_.as_ref()?;
    let mut values: Vec<String> = Vec::new();
    for value in list {
        match value {
            serde_json::Value::String(s) => {
                if !values.contains(s) {
                    values.push(s.clone());
                }
            }
            serde_json::Value::Null => {}
            _ => return None,
        }
    }
    (!values.is_empty()).then_some(values)
}

fn description(schema: &Schema) -> Vec<String> {
    schema
        .description
        .as_deref()
        .map(|d| d.trim().lines().map(str::to_owned).collect())
        .unwrap_or_default()
}

fn junction_docs(schema: &Schema) -> Vec<String> {
    let mut out = Vec::new();
    for (keyword, branches) in [("Exactly one", &schema.one_of), ("At least one", &schema.any_of)] {
        let sets: Vec<String> = branches
            .iter()
            .filter(|b| !b.required.is_empty())
            .map(|b| b.required.iter().map(|r| format!("`{r}`")).collect::<Vec<_>>().join(" and "))
            .collect();
        if sets.len() == branches.len() && !sets.is_empty() {
            out.push(format!("{keyword} of these is set: {}.", sets.join("; ")));
        }
    }
    let all: Vec<&String> = schema.all_of.iter().flat_map(|b| &b.required).collect();
    if !all.is_empty() {
        let all: Vec<String> = all.iter().map(|r| format!("`{r}`")).collect();
        out.push(format!("Also required: {}.", all.join(", ")));
    }
    out
}

fn deprecation(deprecated: bool) -> &'static str {
    if deprecated { " (deprecated)" } else { "" }
}

#[cfg(test)]
mod tests {
    use crate::{Error, Generator, Versions};

    /// A CRD with one version whose `spec` schema is `spec` (YAML, indented for the slot).
    fn crd(spec: &str) -> String {
        format!(
            "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {{name: widgets.example.com}}
spec:
  group: example.com
  names: {{kind: Widget, plural: widgets}}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
{spec}"
        )
    }

    fn generate(spec: &str) -> Result<String, Error> {
        let crds = crate::schema::parse_str("widget.yaml".as_ref(), &crd(spec))?;
        Ok(Generator::new().generate(&crds)?.to_file_string())
    }

    /// Whether `code` contains `expected`, whatever the formatting's line breaks.
    fn assert_contains(code: &str, expected: &str) {
        let squash = |s: &str| s.split_whitespace().collect::<String>().replace(",>", ">");
        assert!(squash(code).contains(&squash(expected)), "missing {expected:?} in\n{code}");
    }

    const BASE: &str = "spec.versions[0].schema.openAPIV3Schema.properties.spec";

    fn warnings(spec: &str) -> Vec<String> {
        let crds = crate::schema::parse_str("widget.yaml".as_ref(), &crd(spec)).unwrap();
        let output = Generator::new().generate(&crds).unwrap();
        output.warnings().iter().map(ToString::to_string).collect()
    }

    #[test]
    fn non_structural_spots_are_warnings_at_their_path_with_the_loosest_type() {
        let spec = "            type: object
            properties:
              pair: {type: array, items: [{type: string}, {type: integer}]}
              list: {type: array}
              odd: {type: decimal}
              untyped: {properties: {a: {type: string}}}
              nothing: {description: says nothing}
              listed: {items: {type: string}}
              counts: {additionalProperties: {type: integer}}
              asn: {type: integer, format: int32, maximum: 4294967295}
              port: {type: integer, format: int32, maximum: 65535}
              both:
                type: object
                properties: {a: {type: string}}
                additionalProperties: {type: string}
              choice:
                type: object
                properties: {a: {type: string}}
                oneOf:
                - required: [a]
                - properties: {b: {type: string}}
";
        let code = generate(spec).unwrap();
        for expected in [
            "pub pair: ::std::option::Option<::std::vec::Vec<::serde_json::Value>>,",
            "pub list: ::std::option::Option<::std::vec::Vec<::serde_json::Value>>,",
            "pub odd: ::std::option::Option<::serde_json::Value>,",
            "pub untyped: ::std::option::Option<WidgetSpecUntyped>,",
            "pub nothing: ::std::option::Option<::serde_json::Value>,",
            "pub listed: ::std::option::Option<::std::vec::Vec<::std::string::String>>,",
            "pub counts: ::std::option::Option<::std::collections::BTreeMap<::std::string::String, i64>>,",
            "pub asn: ::std::option::Option<i64>,",
            "pub port: ::std::option::Option<i32>,",
            "pub struct WidgetSpecChoice { #[serde(default, skip_serializing_if = \"::std::option::Option::is_none\")] pub a: ::std::option::Option<::std::string::String>, /// Fields not listed in the schema's properties.
 #[serde(flatten)] pub extra: ::std::collections::BTreeMap<::std::string::String, ::serde_json::Value>, }",
        ] {
            assert_contains(&code, expected);
        }
        let at =
            |property: &str, rest: &str| format!("widget.yaml: {BASE}.properties.{property}{rest}");
        assert_eq!(
            warnings(spec),
            [
                at(
                    "both",
                    ": `properties` beside `additionalProperties`, which a structural schema forbids: the properties are fields, other keys go to a flattened map"
                ),
                at(
                    "choice",
                    ".oneOf[1].properties.b: property \"b\" appears only inside oneOf (a structural schema also declares it in the enclosing `properties`): kept as JSON among the object's other fields"
                ),
                at("counts", ": no `type` beside `additionalProperties`: read as a map"),
                at(
                    "list",
                    ": an array without `items` (a structural schema says what the items are): items of free JSON (Vec<serde_json::Value>)"
                ),
                at("listed", ": no `type` beside `items`: read as an array"),
                at(
                    "nothing",
                    ": no `type` (a structural schema gives one, or x-kubernetes-preserve-unknown-fields): free JSON (serde_json::Value)"
                ),
                at(
                    "odd",
                    ".type: unknown type \"decimal\" (a structural schema has object, array, string, integer, number or boolean): free JSON (serde_json::Value)"
                ),
                at(
                    "pair",
                    ".items: `items` is a list of schemas (tuple form), which a structural schema forbids: items of free JSON (Vec<serde_json::Value>)"
                ),
                at("untyped", ": no `type` beside `properties`: read as an object"),
            ]
        );
        let crds = crate::schema::parse_str("widget.yaml".as_ref(), &crd(spec)).unwrap();
        let strict = Generator::new().strict(true).generate(&crds).unwrap_err();
        let Error::NotStructural { warnings: listed } = &strict else { panic!("{strict}") };
        assert_eq!(listed.len(), 9);
        assert!(
            strict
                .to_string()
                .starts_with("9 schema spot(s) are not structural or not understood (strict mode):\n  widget.yaml: "),
            "{strict}"
        );
    }

    #[test]
    fn structural_schemas_have_no_warnings() {
        assert_eq!(
            warnings(
                "            type: object
            x-kubernetes-preserve-unknown-fields: true
            properties:
              port: {x-kubernetes-int-or-string: true}
              any: {x-kubernetes-preserve-unknown-fields: true}
              list: {type: array, items: {type: string}}
              choice:
                type: object
                properties: {a: {type: string}, b: {type: string}}
                oneOf: [{required: [a]}, {required: [b]}, {properties: {a: {}}}]
"
            ),
            Vec::<String>::new()
        );
    }

    #[test]
    fn a_crd_without_pruning_keeps_unknown_fields_in_every_struct() {
        let text = crd("            type: object
            properties:
              inner: {type: object, properties: {a: {type: string}}}
              empty: {type: object}
")
        .replace("  scope: Namespaced\n", "  scope: Namespaced\n  preserveUnknownFields: true\n");
        let crds = crate::schema::parse_str("widget.yaml".as_ref(), &text).unwrap();
        let output = Generator::new().generate(&crds).unwrap();
        let code = output.to_file_string();
        for name in ["Widget", "WidgetSpec", "WidgetSpecInner"] {
            let start = code.find(&format!("pub struct {name} {{")).unwrap();
            let end = start + code[start..].find("\n        }").unwrap();
            assert!(
                code[start..end].contains("#[serde(flatten)]"),
                "{name}: {}",
                &code[start..end]
            );
        }
        assert_contains(
            &code,
            "pub empty: ::std::option::Option<::std::collections::BTreeMap<::std::string::String, ::serde_json::Value>>,",
        );
        let warnings: Vec<String> = output.warnings().iter().map(ToString::to_string).collect();
        assert_eq!(
            warnings,
            [
                "widget.yaml: spec.preserveUnknownFields: pruning is off for the whole CRD (only CRDs created before apiextensions.k8s.io/v1 can have that), so version v1 keeps fields its schema does not name: every struct keeps them in a flattened map"
            ]
        );
    }

    #[test]
    fn names_are_escaped_renamed_and_unique() {
        let code = generate(
            "            type: object
            properties:
              type: {type: string}
              -XX: {type: string}
              fooBar: {type: string}
              foo_bar: {type: string}
              self: {type: string}
",
        )
        .unwrap();
        for expected in [
            "pub r#type: ::std::option::Option<::std::string::String>,",
            "#[serde(rename = \"-XX\", default, skip_serializing_if",
            "pub xx: ::std::option::Option<",
            "pub foo_bar: ::std::option::Option<",
            "#[serde(rename = \"foo_bar\", default, skip_serializing_if",
            "pub foo_bar_2: ::std::option::Option<",
            "pub self_: ::std::option::Option<",
        ] {
            assert_contains(&code, expected);
        }
    }

    #[test]
    fn shapes_map_to_their_rust_types() {
        let code = generate(
            "            type: object
            required: [size]
            oneOf:
            - required: [cpu]
            - required: [memory]
            properties:
              size: {type: integer, format: int32}
              cpu:
                anyOf: [{type: integer}, {type: string}]
                pattern: ^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))))?$
                x-kubernetes-int-or-string: true
              memory: {x-kubernetes-int-or-string: true}
              when: {type: string, format: date-time}
              blob: {type: string, format: byte}
              ratio: {type: number}
              labels: {type: object, additionalProperties: {type: string}}
              anything: {x-kubernetes-preserve-unknown-fields: true}
              object: {type: object, x-kubernetes-preserve-unknown-fields: true}
              empty: {type: object}
              mode: {type: string, enum: [Fast, slow, '=']}
              template:
                type: object
                x-kubernetes-embedded-resource: true
                x-kubernetes-preserve-unknown-fields: true
              grid: {type: array, items: {type: array, items: {type: object, properties: {x: {type: integer}}}}}
",
        )
        .unwrap();
        for expected in [
            "pub size: i32,",
            "pub cpu: ::std::option::Option<::informer_runtime::quantity::NumberOrQuantity>",
            "::k8s_openapi::apimachinery::pkg::util::intstr::IntOrString",
            "pub when: ::std::option::Option<::k8s_openapi::apimachinery::pkg::apis::meta::v1::Time>",
            "pub blob: ::std::option::Option<::k8s_openapi::ByteString>,",
            "pub ratio: ::std::option::Option<f64>,",
            "::std::collections::BTreeMap<::std::string::String, ::std::string::String>",
            "pub anything: ::std::option::Option<::serde_json::Value>,",
            "::std::collections::BTreeMap<::std::string::String, ::serde_json::Value>",
            "pub struct WidgetSpecEmpty {}",
            "pub enum WidgetSpecMode {",
            "Fast,",
            "Slow,",
            "Eq,",
            "Other(::std::string::String),",
            "pub struct WidgetSpecTemplate {",
            "pub metadata: ::std::option::Option<",
            "#[serde(flatten)]",
            "pub grid: ::std::option::Option<::std::vec::Vec<::std::vec::Vec<WidgetSpecGridItem>>>,",
            "/// Exactly one of these is set: `cpu`; `memory`.",
        ] {
            assert_contains(&code, expected);
        }
    }

    #[test]
    fn identical_schemas_share_one_type() {
        let code = generate(
            "            type: object
            properties:
              primary: {type: object, properties: {host: {type: string}, port: {type: integer}}}
              backup: {type: object, properties: {host: {type: string}, port: {type: integer}}}
",
        )
        .unwrap();
        assert_contains(&code, "pub struct WidgetSpecBackup {");
        assert!(!code.contains("pub struct WidgetSpecPrimary {"), "{code}");
        assert_contains(&code, "pub primary: ::std::option::Option<WidgetSpecBackup>,");
    }

    #[test]
    fn nullable_values_are_kept_as_null() {
        let code = generate(
            "            type: object
            required: [must]
            properties:
              must: {type: string, nullable: true}
              tags: {type: array, items: {type: string, nullable: true}}
              labels: {type: object, additionalProperties: {type: integer, nullable: true}}
",
        )
        .unwrap();
        // Required but nullable: written even when None, as `null`.
        assert_contains(
            &code,
            "#[serde(default)] pub must: ::std::option::Option<::std::string::String>,",
        );
        assert_contains(&code, "::std::vec::Vec<::std::option::Option<::std::string::String>>");
        assert_contains(
            &code,
            "::std::collections::BTreeMap<::std::string::String, ::std::option::Option<i64>>",
        );
    }

    #[test]
    fn awkward_names_still_make_valid_code() {
        let code = generate(
            "            type: object
            properties:
              self: {type: string}
              Self: {type: string}
              mode: {type: string, enum: [self, Other, OtherValue, Unlisted, UnlistedValue]}
",
        )
        .unwrap();
        syn::parse_file(&code).unwrap();
        assert_contains(&code, "pub self_: ::std::option::Option<");
        assert_contains(&code, "pub self_2: ::std::option::Option<");
        assert_contains(&code, "Self_,");
        assert_contains(&code, "Other2(::std::string::String),");
    }

    fn crd_named(group: &str, kind: &str, plural: &str) -> String {
        format!(
            "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {{name: {plural}.{group}}}
spec:
  group: {group}
  names: {{kind: {kind}, plural: {plural}}}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema: {{openAPIV3Schema: {{type: object}}}}
"
        )
    }

    #[test]
    fn module_and_method_names_never_clash_or_break() {
        let yaml = [
            crd_named("3scale.net", "Api", "apis"),
            crd_named("type.example.com", "Widget", "as"),
            crd_named("foo-io.example", "A", "as"),
            crd_named("foo.io", "B", "bs"),
            crd_named("foo.com", "C", "cs"),
            crd_named("start.example.com", "D", "ds"),
        ]
        .join("---\n");
        let crds = crate::schema::parse_str("many.yaml".as_ref(), &yaml).unwrap();
        let output = Generator::new().generate(&crds).unwrap();
        let code = output.to_file_string();
        syn::parse_file(&code).unwrap();
        let mut paths: Vec<&str> =
            output.resources().iter().map(|r| r.rust_path.as_str()).collect();
        paths.sort_unstable();
        assert_eq!(
            paths,
            [
                "foo::v1::C",
                "foo_io::v1::A",
                "foo_io_2::v1::B",
                "n3scale::v1::Api",
                "start_example_com::v1::D",
                "type_::v1::Widget",
            ]
        );
        assert_contains(&code, "pub fn as_(");
    }

    #[test]
    fn keys_that_are_no_schema_keywords_are_warnings_of_the_versions_generated() {
        // As in a manifest once published with a property indented one level off, and an
        // unserved version after it.
        let yaml = crd("            type: object
            properties:
              size: {type: integer}
            replicas: {type: integer}
            x-kubernetes-patch-strategy: merge
            readOnly: true
") + "  - name: v0
    served: false
    storage: false
    schema:
      openAPIV3Schema:
        type: object
        properties:
          metadata: {type: object, app.kubernetes.io/name: {type: string}}
";
        let crds = crate::schema::parse_str("typo.yaml".as_ref(), &yaml).unwrap();
        let output = Generator::new().generate(&crds).unwrap();
        let dropped = "the API server drops it (or refuses the CRD under strict field \
                       validation, kubectl's default), and so does the generator";
        let schema = "typo.yaml: spec.versions[0].schema.openAPIV3Schema.properties.spec";
        let expected = [
            format!(
                "{schema}.readOnly: \"readOnly\" is a keyword of OpenAPI or JSON Schema that CRD \
                 schemas do not have: {dropped}"
            ),
            format!(
                "{schema}.replicas: \"replicas\" is no schema keyword: {dropped}; is it a \
                 property outside `properties`, or a keyword indented one level off?"
            ),
            format!(
                "{schema}.x-kubernetes-patch-strategy: \"x-kubernetes-patch-strategy\" is no \
                 extension CRD schemas have: {dropped}"
            ),
        ];
        // The unserved v0 is not generated, so its key is nobody's business.
        let listed = |output: &crate::Output| -> Vec<String> {
            output.warnings().iter().map(ToString::to_string).collect()
        };
        assert_eq!(listed(&output), expected);
        assert_contains(&output.to_file_string(), "pub size: ::std::option::Option<i64>");

        let both = Generator::new().versions(Versions::Only(vec!["v0".into(), "v1".into()]));
        let output = both.generate(&crds).unwrap();
        assert_eq!(output.warnings().len(), 4);
        assert!(
            output.warnings()[0].to_string().starts_with(
                "typo.yaml: spec.versions[1].schema.openAPIV3Schema.properties.metadata.\
                 \"app.kubernetes.io/name\": \"app.kubernetes.io/name\" is no schema keyword"
            ),
            "{:?}",
            listed(&output)
        );

        // Strict mode refuses a CRD whose only fault is such a key.
        let strict = Generator::new().strict(true).generate(&crds).unwrap_err();
        let Error::NotStructural { warnings: listed } = &strict else { panic!("{strict}") };
        assert_eq!(listed.iter().map(ToString::to_string).collect::<Vec<_>>(), expected);
    }

    #[test]
    fn dashes_in_versions_and_plurals_make_snake_case_names() {
        // DNS labels both: Multus names its plural `network-attachment-definitions`.
        let yaml = crd_named("k8s.cni.cncf.io", "NetworkAttachmentDefinition", "net-attach-defs")
            .replace("- name: v1\n", "- name: v1-preview\n");
        let crds = crate::schema::parse_str("nad.yaml".as_ref(), &yaml).unwrap();
        let output = Generator::new().generate(&crds).unwrap();
        let code = output.to_file_string();
        syn::parse_file(&code).unwrap();
        let resource = &output.resources()[0];
        assert_eq!(resource.rust_path, "k8s::v1_preview::NetworkAttachmentDefinition");
        assert_eq!(resource.version, "v1-preview");
        assert_contains(&code, "pub fn v1_preview(&self) -> v1_preview::Version<'a, S>");
        assert_contains(&code, "pub fn net_attach_defs(");
        assert_contains(&code, "const API_VERSION: &'static str = \"k8s.cni.cncf.io/v1-preview\";");
        let files: Vec<_> = output.files().into_keys().collect();
        assert!(files.contains(&std::path::PathBuf::from("k8s/v1_preview.rs")), "{files:?}");
        // Hooks name the version by its module.
        let hooked = Generator::new()
            .type_attribute(
                "k8s::v1_preview::NetworkAttachmentDefinition",
                "#[doc(alias = \"nad\")]",
            )
            .generate(&crds)
            .unwrap();
        assert_contains(&hooked.to_file_string(), "#[doc(alias = \"nad\")]");

        // Plurals that differ only in dashes would share an accessor: refused, naming both.
        let twins = [
            crd_named("example.com", "FooBar", "foobars"),
            crd_named("example.com", "FooBarX", "foo-bars"),
        ]
        .join("---\n");
        let crds = crate::schema::parse_str("twins.yaml".as_ref(), &twins).unwrap();
        let error = Generator::new().generate(&crds).unwrap_err().to_string();
        assert!(
            error.contains(
                "twins.yaml (document 2): spec.names.plural: plural foo-bars makes the accessor \
                 `foo_bars()`, as plural foobars of example.com/v1 (kind FooBar) does"
            ),
            "{error}"
        );
    }

    #[test]
    fn kinds_that_clash_with_generated_names_are_errors() {
        let yaml = [
            crd_named("example.com", "Foo", "foos"),
            crd_named("example.com", "FooLister", "foolisters"),
        ]
        .join("---\n");
        let crds = crate::schema::parse_str("clash.yaml".as_ref(), &yaml).unwrap();
        let error = Generator::new().generate(&crds).unwrap_err().to_string();
        assert!(
            error.contains("spec.names.kind: kind FooLister needs the name `FooLister`"),
            "{error}"
        );
        let crds = crate::schema::parse_str(
            "v.yaml".as_ref(),
            &crd_named("example.com", "Version", "versions"),
        )
        .unwrap();
        let error = Generator::new().generate(&crds).unwrap_err().to_string();
        assert!(error.contains("kind Version needs the name `Version`"), "{error}");
    }

    #[test]
    fn kinds_that_are_not_upper_camel_case_name_their_types_in_it() {
        let yaml = [
            crd_named("acid.zalan.do", "postgresql", "postgresqls"),
            crd_named("example.com", "Foo-Bar", "foobars"),
        ]
        .join("---\n");
        let crds = crate::schema::parse_str("kinds.yaml".as_ref(), &yaml).unwrap();
        let output = Generator::new().generate(&crds).unwrap();
        let found: Vec<(&str, &str)> =
            output.resources().iter().map(|r| (r.kind.as_str(), r.rust_path.as_str())).collect();
        assert_eq!(
            found,
            [("postgresql", "acid::v1::Postgresql"), ("Foo-Bar", "example::v1::FooBar")]
        );
        let code = output.to_file_string();
        assert_contains(&code, "pub struct Postgresql {");
        assert_contains(&code, "const KIND: &'static str = \"postgresql\";");
        assert_contains(
            &code,
            "pub type PostgresqlLister = ::informer_runtime::Lister<Postgresql>;",
        );
    }
}
