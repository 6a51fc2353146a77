//! Names in generated code: accessor methods, API group modules, and Rust keywords.

use std::collections::BTreeSet;

use heck::{ToSnakeCase as _, ToUpperCamelCase as _};

/// Rust's keywords, strict, reserved and weak: not usable as plain identifiers.
pub const KEYWORDS: &[&str] = &[
    "abstract", "as", "async", "await", "become", "box", "break", "const", "continue", "crate",
    "do", "dyn", "else", "enum", "extern", "false", "final", "fn", "for", "gen", "if", "impl",
    "in", "let", "loop", "macro", "match", "mod", "move", "mut", "override", "priv", "pub", "ref",
    "return", "self", "Self", "static", "struct", "super", "trait", "true", "try", "type",
    "typeof", "unsafe", "unsized", "use", "virtual", "where", "while", "yield",
];

/// Keywords that `r#` cannot escape.
pub const NOT_RAW: &[&str] = &["self", "Self", "super", "crate", "_"];

/// The accessor names of the built-in API groups (`factory.core()`, `factory.apps()`, …), which
/// custom resource groups must not take. `cargo xtask codegen` checks it against k8s-openapi.
pub const BUILTIN_GROUP_NAMES: &[&str] = &[
    "admissionregistration",
    "apiextensions",
    "apiregistration",
    "apps",
    "autoscaling",
    "batch",
    "certificates",
    "coordination",
    "core",
    "discovery",
    "events",
    "flowcontrol",
    "internal",
    "lifecycle",
    "networking",
    "node",
    "policy",
    "rbac",
    "resource",
    "scheduling",
    "storage",
    "storagemigration",
];

/// The names a custom resource group accessor must not take, besides the built-in groups: the
/// extension trait's own method, and `SharedInformerFactory`'s inherent methods, which would hide
/// a trait method of the same name.
const FACTORY_METHODS: &[&str] = &[
    "register_custom_resources",
    "register_builtins",
    "register",
    "builder",
    "new",
    "start",
    "shutdown",
    "informer",
    "lister",
    "for_resource",
    "wait_for_cache_sync",
];

/// The accessor method of a kind with `plural`: the plural in snake case
/// (`horizontal_pod_autoscalers`, `network_policies`, `endpoints`).
///
/// The spelling comes from the plural, the word boundaries from the kind (for as long as its
/// letters agree with the plural) and from the plural itself: a `-`, which a plural may hold
/// (`network-attachment-definitions`), or any other character an identifier cannot hold,
/// separates words.
///
/// ```
/// use informer_emit::names::method_name;
///
/// assert_eq!(method_name("FooBar", "foobars"), "foo_bars");
/// assert_eq!(method_name("NetworkPolicy", "networkpolicies"), "network_policies");
/// assert_eq!(method_name("Widget", "gizmos"), "gizmos");
/// assert_eq!(
///     method_name("NetworkAttachmentDefinition", "network-attachment-definitions"),
///     "network_attachment_definitions"
/// );
/// ```
#[must_use]
pub fn method_name(kind: &str, plural: &str) -> String {
    let (kind_letters, kind_breaks) = words(&kind.to_snake_case());
    let (letters, breaks) = words(&plural.to_lowercase());
    let common = kind_letters.iter().zip(&letters).take_while(|(a, b)| a == b).count();
    let mut out = String::with_capacity(plural.len());
    for (i, c) in letters.into_iter().enumerate() {
        if i > 0 && (breaks.contains(&i) || (i < common && kind_breaks.contains(&i))) {
            out.push('_');
        }
        out.push(c);
    }
    out
}

/// The ASCII letters and digits of `text`, and the indices among them that start a word after
/// the first: where any other character stood before them.
fn words(text: &str) -> (Vec<char>, BTreeSet<usize>) {
    let mut letters = Vec::with_capacity(text.len());
    let mut breaks = BTreeSet::new();
    let mut gap = false;
    for c in text.chars() {
        if c.is_ascii_alphanumeric() {
            if gap && !letters.is_empty() {
                breaks.insert(letters.len());
            }
            gap = false;
            letters.push(c);
        } else {
            gap = true;
        }
    }
    (letters, breaks)
}

/// The accessor name of an API group as client-go names it: `core` for the core group, otherwise
/// the group's first DNS label in snake case (`networking.k8s.io` → `networking`).
#[must_use]
pub fn group_short_name(group: &str) -> String {
    if group.is_empty() {
        return "core".to_owned();
    }
    let label = group.split('.').next().unwrap_or(group);
    label.to_upper_camel_case().to_snake_case()
}

/// The full name of an API group as an identifier (`flowcontrol.apiserver.k8s.io` →
/// `flowcontrol_apiserver_k8s_io`), for groups whose short names clash.
#[must_use]
pub fn group_full_name(group: &str) -> String {
    if group.is_empty() {
        return "core".to_owned();
    }
    group.replace(['.', '-'], "_").to_snake_case()
}

/// Module (and accessor) names for custom resource groups, in the order given (sort them first
/// for names that do not depend on input order): client-go's short name unless a built-in group,
/// a factory method or an earlier group has it; then the whole group (`networking.istio.io` →
/// `networking_istio_io`), numbered if even that is taken.
#[must_use]
pub fn custom_group_modules(groups: &[&str]) -> Vec<(String, String)> {
    let mut taken: BTreeSet<String> =
        BUILTIN_GROUP_NAMES.iter().chain(FACTORY_METHODS).map(|s| (*s).to_owned()).collect();
    let mut out = Vec::new();
    for group in groups {
        let short = module_name(&group_short_name(group));
        let name = if taken.contains(&short) {
            let full = module_name(&group_full_name(group));
            first_free(&full, "_", |n| taken.contains(n))
        } else {
            short
        };
        taken.insert(name.clone());
        out.push(((*group).to_owned(), name));
    }
    out
}

/// `name` made usable as a module or method name without raw identifiers: a leading digit
/// prefixed, a keyword suffixed (`3scale` → `n3scale`, `type` → `type_`).
#[must_use]
pub fn module_name(name: &str) -> String {
    if name.starts_with(|c: char| c.is_ascii_digit()) {
        format!("n{name}")
    } else if KEYWORDS.contains(&name) || NOT_RAW.contains(&name) || name.is_empty() {
        format!("{name}_")
    } else {
        name.to_owned()
    }
}

/// The module (and accessor) name of an API version: the version, with a `-` (a version is a DNS
/// label, so `v1-preview` is one) as `_`, made usable by [`module_name`].
///
/// ```
/// use informer_emit::names::version_module;
///
/// assert_eq!(version_module("v1beta1"), "v1beta1");
/// assert_eq!(version_module("v2-preview"), "v2_preview");
/// ```
#[must_use]
pub fn version_module(version: &str) -> String {
    module_name(&version.replace('-', "_"))
}

/// `wanted`, else `wanted{sep}2`, `wanted{sep}3`, …: the first that `taken` says is free.
pub fn first_free(wanted: &str, sep: &str, taken: impl Fn(&str) -> bool) -> String {
    let mut name = wanted.to_owned();
    let mut n = 1;
    while taken(&name) {
        n += 1;
        name = format!("{wanted}{sep}{n}");
    }
    name
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn method_names_are_snake_case_plurals() {
        assert_eq!(method_name("Pod", "pods"), "pods");
        assert_eq!(
            method_name("HorizontalPodAutoscaler", "horizontalpodautoscalers"),
            "horizontal_pod_autoscalers"
        );
        assert_eq!(method_name("NetworkPolicy", "networkpolicies"), "network_policies");
        assert_eq!(method_name("Endpoints", "endpoints"), "endpoints");
        assert_eq!(method_name("IngressClass", "ingressclasses"), "ingress_classes");
        assert_eq!(method_name("CSIDriver", "csidrivers"), "csi_drivers");
        assert_eq!(method_name("FooBar", "foobars"), "foo_bars");
        assert_eq!(method_name("Widget", "gizmos"), "gizmos");
        // Plurals are DNS labels: a `-` separates words too, and agrees with the kind's.
        assert_eq!(
            method_name("NetworkAttachmentDefinition", "network-attachment-definitions"),
            "network_attachment_definitions"
        );
        assert_eq!(method_name("Widget", "gizmo-things"), "gizmo_things");
        assert_eq!(method_name("FooBar", "foo-bars"), "foo_bars");
        assert_eq!(method_name("Foo-Bar", "foobars"), "foo_bars");
        assert_eq!(method_name("postgresql", "postgresqls"), "postgresqls");
        assert_eq!(method_name("Widget", "-widgets-"), "widgets");
        assert_eq!(method_name("Widget", "--"), "");
    }

    #[test]
    fn group_names_follow_client_go() {
        assert_eq!(group_short_name(""), "core");
        assert_eq!(group_short_name("apps"), "apps");
        assert_eq!(group_short_name("networking.k8s.io"), "networking");
        assert_eq!(group_short_name("flowcontrol.apiserver.k8s.io"), "flowcontrol");
        assert_eq!(group_short_name("my-group.example.com"), "my_group");
        assert_eq!(group_full_name("networking.istio.io"), "networking_istio_io");
    }

    #[test]
    fn custom_groups_avoid_builtin_groups_factory_methods_and_each_other() {
        let names = custom_group_modules(&[
            "apps.example.com",
            "example.com",
            "example.org",
            "start.example.com",
            "type.example.com",
        ]);
        let names: Vec<&str> = names.iter().map(|(_, n)| n.as_str()).collect();
        assert_eq!(
            names,
            ["apps_example_com", "example", "example_org", "start_example_com", "type_"]
        );
    }
}
