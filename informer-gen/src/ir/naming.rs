//! Rust names for schema names: type names, field names and enum variants.
//!
//! The rules, in the order they apply:
//! 1. A nested type is named after its path: the parent type's name joined with the property
//!    name in `UpperCamelCase` (`Certificate` + `spec` → `CertificateSpec`, + `secretTemplate` →
//!    `CertificateSpecSecretTemplate`). List items and map values take the name of the property
//!    that holds them (kopium's convention, so names read like the YAML path); a list directly
//!    inside a list appends `Item`.
//! 2. Characters that cannot be in an identifier are dropped at word boundaries (`-XX` → `xx`,
//!    `hugepages-2Mi` → `hugepages_2mi`); a name starting with a digit gets a prefix; a name
//!    left empty becomes `field`/`Field`/`Empty`.
//! 3. Rust keywords become raw identifiers (`r#type`), except those that cannot be raw
//!    (`self`, `super`, `crate`, `Self`), which take a trailing underscore.
//! 4. Collisions are resolved by numbering in order of appearance (`Foo`, `Foo2`): properties
//!    are visited in sorted order, so names are deterministic for a given schema. Within a
//!    struct, field names are made unique the same way (`foo_bar`, `foo_bar_2`).
//! 5. Identical types share one definition and the name of their first appearance: argo's
//!    container schema, written out dozens of times in a Workflow, is one struct.
//! 6. Wherever the Rust name differs from the JSON name, the generated code has a
//!    `#[serde(rename = "…")]`, so nothing is lost on the wire.

use std::collections::BTreeSet;

use heck::{ToSnakeCase, ToUpperCamelCase};
// Module names and numbering are shared with `#[derive(Informer)]`'s accessors.
use informer_emit::names::{KEYWORDS, NOT_RAW};
pub(crate) use informer_emit::names::{first_free, module_name};

/// The type names taken in one module.
#[derive(Debug, Default)]
pub(crate) struct Names {
    taken: BTreeSet<String>,
}

impl Names {
    /// Reserves `name` exactly; false if it was taken.
    pub(crate) fn reserve(&mut self, name: &str) -> bool {
        self.taken.insert(name.to_owned())
    }

    /// `wanted`, or `wanted2`, `wanted3`, … whichever is free first; reserves it.
    pub(crate) fn claim(&mut self, wanted: &str) -> String {
        let name = first_free(wanted, "", |n| self.taken.contains(n));
        self.taken.insert(name.clone());
        name
    }
}

/// A schema name as an `UpperCamelCase` type name fragment (`secretTemplate` → `SecretTemplate`,
/// `-XX` → `Xx`, `2xx` → `N2xx`).
pub(crate) fn type_fragment(name: &str) -> String {
    let camel = words(name).to_upper_camel_case();
    if camel.is_empty() {
        "Field".to_owned()
    } else if camel.starts_with(|c: char| c.is_ascii_digit()) {
        format!("N{camel}")
    } else {
        camel
    }
}

/// A property name as a field identifier (`apiVersion` → `api_version`, `type` → `r#type`,
/// `-Xms` → `xms`, `2xx` → `n2xx`).
pub(crate) fn field_name(name: &str) -> String {
    let snake = words(name).to_snake_case();
    let snake = if snake.is_empty() {
        "field".to_owned()
    } else if snake.starts_with(|c: char| c.is_ascii_digit()) {
        format!("n{snake}")
    } else {
        snake
    };
    escape_keyword(snake)
}

/// An enum value as a variant name (`Always` → `Always`, `cluster-wide` → `ClusterWide`,
/// `""` → `Empty`, `=` → `Eq`, `!=` → `NotEq`, `3DES` → `V3des`).
pub(crate) fn variant_name(value: &str) -> String {
    let camel = words(value).to_upper_camel_case();
    let camel = if camel.is_empty() { symbols(value) } else { camel };
    if camel.starts_with(|c: char| c.is_ascii_digit()) {
        format!("V{camel}")
    } else if camel == "Self" {
        "Self_".to_owned()
    } else {
        camel
    }
}

/// Unique field names within one struct: `names[i]` made unique by numbering in order.
pub(crate) fn unique_fields(names: impl IntoIterator<Item = String>) -> Vec<String> {
    let mut taken = BTreeSet::new();
    let mut out = Vec::new();
    for name in names {
        let bare = name.strip_prefix("r#").unwrap_or(&name).to_owned();
        // Compared as escaped, so `self` and `Self` do not both become `self_`.
        let unique = if taken.contains(&unraw(&escape_keyword(bare.clone()))) {
            first_free(bare.trim_end_matches('_'), "_", |n| {
                taken.contains(&unraw(&escape_keyword(n.to_owned())))
            })
        } else {
            bare.clone()
        };
        let unique = unraw(&escape_keyword(unique));
        taken.insert(unique.clone());
        out.push(if unique == bare { name } else { escape_keyword(unique) });
    }
    out
}

/// The variant names of an enum: unique, numbered in order where two values look alike
/// (`TLS`, `tls` → `Tls`, `Tls2`).
pub(crate) fn unique_variants(values: &[String]) -> Vec<String> {
    let mut taken = BTreeSet::new();
    values
        .iter()
        .map(|v| {
            let name = first_free(&variant_name(v), "", |n| taken.contains(n));
            taken.insert(name.clone());
            name
        })
        .collect()
}

/// `name` with every run of characters that cannot be in an identifier replaced by a word
/// boundary, so heck splits words there.
fn words(name: &str) -> String {
    name.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { ' ' }).collect()
}

fn unraw(name: &str) -> String {
    name.strip_prefix("r#").unwrap_or(name).to_owned()
}

pub(crate) fn escape_keyword(name: String) -> String {
    if NOT_RAW.contains(&name.as_str()) {
        format!("{name}_")
    } else if KEYWORDS.contains(&name.as_str()) {
        format!("r#{name}")
    } else {
        name
    }
}

/// Names for a value made only of symbols (`=`, `!=`, `=~`, `*`).
fn symbols(value: &str) -> String {
    if value.is_empty() {
        return "Empty".to_owned();
    }
    value
        .chars()
        .map(|c| match c {
            '=' => "Eq",
            '!' => "Not",
            '~' => "Tilde",
            '<' => "Lt",
            '>' => "Gt",
            '*' => "Star",
            '/' => "Slash",
            '.' => "Dot",
            '-' => "Dash",
            '+' => "Plus",
            '_' => "Underscore",
            ' ' => "Space",
            ':' => "Colon",
            '%' => "Percent",
            '&' => "And",
            '|' => "Or",
            '^' => "Caret",
            '$' => "Dollar",
            '@' => "At",
            '#' => "Hash",
            '?' => "Question",
            ',' => "Comma",
            ';' => "Semicolon",
            _ => "Symbol",
        })
        .collect()
}

/// Singular-looking suffix for a list nested directly in a list.
pub(crate) const NESTED_ITEM: &str = "Item";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_names_are_snake_case_and_escaped() {
        assert_eq!(field_name("apiVersion"), "api_version");
        assert_eq!(field_name("type"), "r#type");
        assert_eq!(field_name("self"), "self_");
        assert_eq!(field_name("-XX"), "xx");
        assert_eq!(field_name("-Xms"), "xms");
        assert_eq!(field_name("hugepages-2Mi"), "hugepages_2mi");
        assert_eq!(field_name("2xx"), "n2xx");
        assert_eq!(field_name("$ref"), "r#ref");
        assert_eq!(field_name("--"), "field");
        assert_eq!(field_name("x-kubernetes-foo"), "x_kubernetes_foo");
    }

    #[test]
    fn type_fragments_are_upper_camel_case() {
        assert_eq!(type_fragment("secretTemplate"), "SecretTemplate");
        assert_eq!(type_fragment("-XX"), "Xx");
        assert_eq!(type_fragment("2xx"), "N2xx");
        assert_eq!(type_fragment(""), "Field");
    }

    #[test]
    fn variants_cover_symbols_and_collisions() {
        let values: Vec<String> =
            ["=", "!=", "", "TLS", "tls", "3DES", "cluster-wide"].map(String::from).to_vec();
        assert_eq!(
            unique_variants(&values),
            ["Eq", "NotEq", "Empty", "Tls", "Tls2", "V3des", "ClusterWide"]
        );
    }

    #[test]
    fn fields_are_made_unique_in_order() {
        let names = unique_fields(["foo_bar", "foo_bar", "r#type", "r#type"].map(String::from));
        assert_eq!(names, ["foo_bar", "foo_bar_2", "r#type", "type_2"]);
    }

    #[test]
    fn claims_number_collisions() {
        let mut names = Names::default();
        assert!(names.reserve("Foo"));
        assert_eq!(names.claim("Foo"), "Foo2");
        assert_eq!(names.claim("Foo"), "Foo3");
        assert_eq!(names.claim("Bar"), "Bar");
    }
}
