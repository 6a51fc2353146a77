//! The intermediate representation between schemas and Rust code: the named types of one
//! module (an API group and version), which refer to each other by [`TypeId`].
//!
//! [`convert`](convert::Converter) fills a [`TypeSpace`] from the schemas of every CRD in a
//! group/version; [`emit`](crate::emit) turns it into Rust items. Keeping the two apart lets
//! names be chosen for the whole module at once (collisions are resolved before anything is
//! written) and keeps the mapping rules in one place.

use std::collections::HashMap;

pub(crate) mod convert;
pub(crate) mod naming;

/// Index of a named type in its [`TypeSpace`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct TypeId(pub(crate) usize);

/// The Rust type of a field, a list item or a map value.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Ty {
    String,
    Bool,
    I32,
    I64,
    F64,
    /// `format: date-time`: k8s-openapi's `Time`.
    Time,
    /// `format: byte`: k8s-openapi's `ByteString` (base64 on the wire).
    Bytes,
    /// `x-kubernetes-int-or-string`.
    IntOrString,
    /// An int-or-string whose pattern is the resource quantity pattern: the runtime's
    /// `NumberOrQuantity`, which writes a number back as a number.
    Quantity,
    /// k8s-openapi's `Quantity`, whose schema describes a [`Ty::Quantity`] field to schemars.
    QuantitySchema,
    /// Any JSON value (`x-kubernetes-preserve-unknown-fields` without a type, or no type at all).
    Json,
    /// `metadata` of a root or an embedded resource.
    ObjectMeta,
    /// One of k8s-openapi's types, which the schema node is (see
    /// [`k8s_types`](crate::k8s_types)): its path below `::k8s_openapi::`
    /// (`api::core::v1::Probe`), and whether it implements `Default`.
    K8s {
        path: String,
        default: bool,
    },
    Vec(Box<Ty>),
    /// A nullable list item or map value: `Option<T>`, `null` read and written as `None`.
    Nullable(Box<Ty>),
    /// `additionalProperties`: a map with string keys, in key order.
    Map(Box<Ty>),
    Named(TypeId),
}

impl Ty {
    /// Whether `self` is or holds `other`.
    pub(crate) fn contains(&self, other: &Ty) -> bool {
        self == other
            || match self {
                Ty::Vec(inner) | Ty::Map(inner) | Ty::Nullable(inner) => inner.contains(other),
                _ => false,
            }
    }

    /// `self` with `from` replaced by `to`, in lists and maps too.
    pub(crate) fn replace(&self, from: &Ty, to: &Ty) -> Ty {
        match self {
            t if t == from => to.clone(),
            Ty::Vec(inner) => Ty::Vec(Box::new(inner.replace(from, to))),
            Ty::Map(inner) => Ty::Map(Box::new(inner.replace(from, to))),
            Ty::Nullable(inner) => Ty::Nullable(Box::new(inner.replace(from, to))),
            other => other.clone(),
        }
    }

    /// Pushes the named types `self` refers to.
    fn named(&self, out: &mut Vec<TypeId>) {
        match self {
            Ty::Named(id) => out.push(*id),
            Ty::Vec(inner) | Ty::Map(inner) | Ty::Nullable(inner) => inner.named(out),
            _ => {}
        }
    }
}

/// A named type.
#[derive(Debug, Clone)]
pub(crate) enum TypeDef {
    Struct(Struct),
    Enum(StringEnum),
}

impl TypeDef {
    pub(crate) fn name(&self) -> &str {
        match self {
            TypeDef::Struct(s) => &s.name,
            TypeDef::Enum(e) => &e.name,
        }
    }
}

/// A Rust struct for an object schema.
#[derive(Debug, Clone)]
pub(crate) struct Struct {
    pub(crate) name: String,
    pub(crate) doc: Vec<String>,
    pub(crate) fields: Vec<Field>,
    /// Fields not in `properties`, kept in a flattened map.
    pub(crate) extra: Option<Extra>,
    /// Set for the root type of a CRD version.
    pub(crate) root: Option<Root>,
}

/// The map that keeps an object's fields beyond its `properties`.
#[derive(Debug, Clone)]
pub(crate) struct Extra {
    pub(crate) rust_name: String,
    pub(crate) value: Ty,
}

/// A struct field.
#[derive(Debug, Clone)]
pub(crate) struct Field {
    pub(crate) rust_name: String,
    pub(crate) json_name: String,
    pub(crate) ty: Ty,
    /// Listed in `required` (and not nullable): the field is not an `Option`.
    pub(crate) required: bool,
    /// Listed in `required` but nullable: an `Option` whose `None` is written as `null`, since
    /// the API server rejects the object without the field.
    pub(crate) write_null: bool,
    pub(crate) doc: Vec<String>,
}

/// A string enum, with a variant keeping any value the schema does not list.
#[derive(Debug, Clone)]
pub(crate) struct StringEnum {
    pub(crate) name: String,
    pub(crate) doc: Vec<String>,
    /// `(variant, value)`.
    pub(crate) variants: Vec<(String, String)>,
    /// The variant holding unlisted values.
    pub(crate) other: String,
}

/// What makes a struct a resource: its identity on the API server.
#[derive(Debug, Clone)]
pub(crate) struct Root {
    pub(crate) group: String,
    pub(crate) version: String,
    pub(crate) kind: String,
    pub(crate) plural: String,
    pub(crate) list_kind: String,
    pub(crate) namespaced: bool,
}

/// The named types of one module.
#[derive(Debug, Default)]
pub(crate) struct TypeSpace {
    pub(crate) types: Vec<TypeDef>,
    pub(crate) names: naming::Names,
    /// Structs by content (everything but the name), so identical ones are made once.
    pub(crate) structs: HashMap<String, TypeId>,
    /// Enums by content.
    pub(crate) enums: HashMap<String, TypeId>,
}

impl TypeSpace {
    pub(crate) fn get(&self, id: TypeId) -> &TypeDef {
        &self.types[id.0]
    }

    /// Every type reachable from the roots, each once, parents before children (roots in the
    /// order they were added): the order a reader wants them in.
    pub(crate) fn in_reading_order(&self) -> Vec<TypeId> {
        let mut seen = vec![false; self.types.len()];
        let mut out = Vec::with_capacity(self.types.len());
        let mut stack: Vec<TypeId> = self
            .types
            .iter()
            .enumerate()
            .filter(|(_, t)| matches!(t, TypeDef::Struct(s) if s.root.is_some()))
            .map(|(i, _)| TypeId(i))
            .rev()
            .collect();
        while let Some(id) = stack.pop() {
            if std::mem::replace(&mut seen[id.0], true) {
                continue;
            }
            out.push(id);
            if let TypeDef::Struct(s) = self.get(id) {
                let mut children = Vec::new();
                for ty in s.fields.iter().map(|f| &f.ty).chain(s.extra.as_ref().map(|e| &e.value)) {
                    ty.named(&mut children);
                }
                stack.extend(children.into_iter().rev());
            }
        }
        out
    }

    /// Whether `Default` can be derived for a type that holds `ty`.
    pub(crate) fn is_default(&self, ty: &Ty) -> bool {
        self.is_default_inner(ty, 0)
    }

    fn is_default_inner(&self, ty: &Ty, depth: usize) -> bool {
        match ty {
            Ty::Time => false,
            Ty::K8s { default, .. } => *default,
            Ty::Named(id) => match self.get(*id) {
                TypeDef::Enum(_) => false,
                // Schemas have no references, so nesting is finite; the bound is a guard only.
                TypeDef::Struct(s) => {
                    depth < 64
                        && s.fields
                            .iter()
                            .all(|f| !f.required || self.is_default_inner(&f.ty, depth + 1))
                }
            },
            _ => true,
        }
    }
}
