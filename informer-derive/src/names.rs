//! Names derived from the kind: the default plural, and the accessor name informer-gen gives a
//! resource (whose words its docs use), so both front ends write the same aliases and docs.

use heck::ToSnakeCase as _;

/// English plural of a lowercase kind, as kube-derive and the Kubernetes code generators
/// make it: `-es` after s, x, z, ch and sh; `-ies` for a consonant followed by y; else `-s`.
pub(crate) fn to_plural(word: &str) -> String {
    if ["s", "x", "z", "ch", "sh"].iter().any(|end| word.ends_with(end)) {
        return format!("{word}es");
    }
    if let Some(stem) = word.strip_suffix('y') {
        if stem.ends_with(|c: char| !"aeiou".contains(c)) {
            return format!("{stem}ies");
        }
    }
    format!("{word}s")
}

/// The accessor name of a kind with `plural`, as informer-gen's `ResourceSpec::method_name`
/// makes it: the kind in snake case for as long as it agrees with the plural, then the rest of
/// the plural (`FooBar`/`foobars` → `foo_bars`, `NetworkPolicy`/`networkpolicies` →
/// `network_policies`).
pub(crate) fn method_name(kind: &str, plural: &str) -> String {
    let snake = kind.to_snake_case();
    let letters = kind.to_lowercase();
    let plural = plural.to_lowercase();
    let common = letters.chars().zip(plural.chars()).take_while(|(a, b)| a == b).count();
    let mut out = String::new();
    let mut taken = 0;
    for c in snake.chars() {
        if taken == common {
            break;
        }
        out.push(c);
        if c != '_' {
            taken += 1;
        }
    }
    out.extend(plural.chars().skip(common));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plurals() {
        for (word, plural) in [
            ("foo", "foos"),
            ("class", "classes"),
            ("box", "boxes"),
            ("quiz", "quizes"),
            ("match", "matches"),
            ("mesh", "meshes"),
            ("policy", "policies"),
            ("gateway", "gateways"),
            ("key", "keys"),
        ] {
            assert_eq!(to_plural(word), plural);
        }
    }

    #[test]
    fn method_names_match_informer_gen() {
        assert_eq!(method_name("Pod", "pods"), "pods");
        assert_eq!(method_name("FooBar", "foobars"), "foo_bars");
        assert_eq!(method_name("NetworkPolicy", "networkpolicies"), "network_policies");
        assert_eq!(method_name("Endpoints", "endpoints"), "endpoints");
        assert_eq!(method_name("Widget", "gizmos"), "gizmos");
    }
}
