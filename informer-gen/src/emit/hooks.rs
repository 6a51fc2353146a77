//! prost-build's hooks on generated code: attributes added to chosen types
//! ([`Generator::type_attribute`](crate::Generator::type_attribute)) and fields
//! ([`Generator::field_attribute`](crate::Generator::field_attribute)), and derives added to
//! chosen types ([`Generator::derive_for`](crate::Generator::derive_for)).
//!
//! Paths name generated Rust types, not schema paths:
//! - `.` is every type (structs and enums);
//! - `CertificateSpec` is every type of that name, in any group and version;
//! - `cert_manager::v1::CertificateSpec` is the one in that group module and version (the
//!   path [`GeneratedResource::rust_path`](crate::GeneratedResource::rust_path) gives for root
//!   types);
//! - a field is its type's path, a `.`, and the field's JSON name or Rust name
//!   (`CertificateSpec.dnsNames` or `CertificateSpec.dns_names`; `type` for `r#type`).
//!
//! Each hook must match at least one type or field, or generation fails naming its path: a
//! misspelled path would otherwise be silently ignored.

use std::cell::Cell;

use proc_macro2::TokenStream;
use quote::quote;
use syn::parse::Parser as _;

use crate::error::{Error, Result};
use crate::ir::Field;

/// Which types a path names.
#[derive(Debug)]
enum TypePath {
    /// `.`: every type.
    Every,
    /// A type name, in any group and version or in the given `(group module, version)`.
    Named { module: Option<(String, String)>, name: String },
}

impl TypePath {
    fn parse(path: &str) -> std::result::Result<Self, String> {
        if path == "." {
            return Ok(TypePath::Every);
        }
        let segments: Vec<&str> = path.split("::").collect();
        if !segments.iter().all(|s| is_identifier(s)) {
            return Err(format!(
                "{path:?} is not `.`, a type name (`CertificateSpec`) or a qualified one \
                 (`cert_manager::v1::CertificateSpec`)"
            ));
        }
        match segments[..] {
            [name] => Ok(TypePath::Named { module: None, name: name.to_owned() }),
            [group, version, name] => Ok(TypePath::Named {
                module: Some((group.to_owned(), version.to_owned())),
                name: name.to_owned(),
            }),
            _ => Err(format!(
                "{path:?} has {} segments: give a type name (`CertificateSpec`) or \
                 group module, version and name (`cert_manager::v1::CertificateSpec`)",
                segments.len()
            )),
        }
    }

    fn matches(&self, at: &Place<'_>, name: &str) -> bool {
        match self {
            TypePath::Every => true,
            TypePath::Named { module, name: wanted } => {
                wanted == name
                    && module.as_ref().is_none_or(|(group, version)| {
                        group == at.group_module && version == at.version
                    })
            }
        }
    }
}

fn is_identifier(s: &str) -> bool {
    s.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Where types are being generated: the group module and the version.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Place<'a> {
    pub(crate) group_module: &'a str,
    pub(crate) version: &'a str,
}

/// One hook, parsed, and whether it has matched anything yet.
struct Hook<T> {
    /// The setter that added it, for errors (`type_attribute`).
    setter: &'static str,
    /// The path as given.
    path: String,
    types: TypePath,
    /// The field's JSON or Rust name, for field hooks.
    field: Option<String>,
    what: T,
    matched: Cell<bool>,
}

impl<T> Hook<T> {
    fn new(setter: &'static str, path: &str, field: bool, what: T) -> Result<Self> {
        let error = |message: String| Error::Hook { setter, path: path.to_owned(), message };
        let (types, field) = if field {
            let (types, field) = path.split_once('.').filter(|(t, f)| !t.is_empty() && is_identifier(f)).ok_or_else(|| {
                error("a field path is a type path, a `.` and the field's JSON or Rust name (`CertificateSpec.dnsNames`)".to_owned())
            })?;
            (types, Some(field.to_owned()))
        } else {
            (path, None)
        };
        Ok(Hook {
            setter,
            path: path.to_owned(),
            types: TypePath::parse(types).map_err(error)?,
            field,
            what,
            matched: Cell::new(false),
        })
    }

    fn matches_type(&self, at: &Place<'_>, name: &str) -> bool {
        let matches = self.types.matches(at, name);
        if matches {
            self.matched.set(true);
        }
        matches
    }
}

/// Every hook of a generator, parsed and validated.
#[derive(Default)]
pub(crate) struct Hooks {
    types: Vec<Hook<Vec<syn::Attribute>>>,
    fields: Vec<Hook<Vec<syn::Attribute>>>,
    derives: Vec<Hook<syn::Path>>,
}

/// Parses `attribute` as one or more outer attributes (`#[...]`).
fn outer_attributes(
    setter: &'static str,
    path: &str,
    attribute: &str,
) -> Result<Vec<syn::Attribute>> {
    let error = |message: String| Error::Hook { setter, path: path.to_owned(), message };
    let tokens: TokenStream = attribute
        .parse()
        .map_err(|e| error(format!("attribute {attribute:?} is not Rust tokens: {e}")))?;
    let attributes = syn::Attribute::parse_outer.parse2(tokens).map_err(|e| {
        error(format!("attribute {attribute:?} is not an outer attribute (`#[...]`): {e}"))
    })?;
    if attributes.is_empty() {
        return Err(error(
            "the attribute is empty: give one like `#[allow(dead_code)]`".to_owned(),
        ));
    }
    Ok(attributes)
}

impl Hooks {
    /// Parses the hooks: `(path, attribute)` for types and fields, `(path, derive)` for derives.
    pub(crate) fn new(
        types: &[(String, String)],
        fields: &[(String, String)],
        derives: &[(String, String)],
    ) -> Result<Self> {
        let mut hooks = Hooks::default();
        for (path, attribute) in types {
            let attributes = outer_attributes("type_attribute", path, attribute)?;
            hooks.types.push(Hook::new("type_attribute", path, false, attributes)?);
        }
        for (path, attribute) in fields {
            let attributes = outer_attributes("field_attribute", path, attribute)?;
            hooks.fields.push(Hook::new("field_attribute", path, true, attributes)?);
        }
        for (path, derive) in derives {
            let parsed = if path == "." {
                super::derives::check(derive)?
            } else {
                syn::parse_str::<syn::Path>(derive).map_err(|e| Error::Hook {
                    setter: "derive_for",
                    path: path.clone(),
                    message: format!("derive {derive:?} is not a path: {e}"),
                })?
            };
            hooks.derives.push(Hook::new("derive_for", path, false, parsed)?);
        }
        Ok(hooks)
    }

    /// The attributes for the type `name` generated at `at`, in the order they were added.
    pub(crate) fn type_attributes(&self, at: &Place<'_>, name: &str) -> TokenStream {
        let attributes = self
            .types
            .iter()
            .filter(|hook| hook.matches_type(at, name))
            .flat_map(|hook| &hook.what);
        quote!(#(#attributes)*)
    }

    /// The derives added to the type `name` generated at `at`, in the order they were added.
    pub(crate) fn derives(&self, at: &Place<'_>, name: &str) -> Vec<&syn::Path> {
        self.derives
            .iter()
            .filter(|hook| hook.matches_type(at, name))
            .map(|hook| &hook.what)
            .collect()
    }

    /// The attributes for `field` of the struct `name` generated at `at`.
    pub(crate) fn field_attributes(
        &self,
        at: &Place<'_>,
        name: &str,
        field: &Field,
    ) -> TokenStream {
        let bare = field.rust_name.strip_prefix("r#").unwrap_or(&field.rust_name);
        let attributes = self
            .fields
            .iter()
            .filter(|hook| {
                let wanted = hook.field.as_deref().unwrap_or_default();
                let named = wanted == field.json_name || wanted == bare;
                // Only a field that matches counts as a match of the hook.
                named && hook.matches_type(at, name)
            })
            .flat_map(|hook| &hook.what);
        quote!(#(#attributes)*)
    }

    /// An error naming the first hook that matched nothing.
    pub(crate) fn check_all_matched(&self) -> Result<()> {
        let unmatched = self
            .types
            .iter()
            .chain(&self.fields)
            .map(|hook| (hook.setter, &hook.path, &hook.matched))
            .chain(self.derives.iter().map(|hook| (hook.setter, &hook.path, &hook.matched)))
            .find(|(_, _, matched)| !matched.get());
        match unmatched {
            Some((setter, path, _)) => Err(Error::Hook {
                setter,
                path: path.clone(),
                message: "matches no generated type or field (paths are Rust type names, \
                          `CertificateSpec` or `cert_manager::v1::CertificateSpec`, and \
                          `Type.field` for fields)"
                    .to_owned(),
            }),
            None => Ok(()),
        }
    }
}
