//! The default plural of a kind. (The accessor name, whose words the docs use, is
//! `informer_emit::names::method_name`, shared with informer-gen.)

/// English plural of a lowercase kind, as kube-derive and the Kubernetes code generators
/// make it: `-es` after s, x, z, ch and sh; `-ies` for a consonant followed by y; else `-s`.
pub(crate) fn to_plural(word: &str) -> String {
    if ["s", "x", "z", "ch", "sh"].iter().any(|end| word.ends_with(end)) {
        return format!("{word}es");
    }
    if let Some(stem) = word.strip_suffix('y')
        && stem.ends_with(|c: char| !"aeiou".contains(c))
    {
        return format!("{stem}ies");
    }
    format!("{word}s")
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
}
