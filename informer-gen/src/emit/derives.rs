//! Which derives every generated type can take, checked when the generator is configured
//! ([`check`]), so that a derive some type cannot take is an error that says why at generation
//! time, not a compile error inside `OUT_DIR`.
//!
//! Every type the generator writes holds, somewhere, one of: `ObjectMeta` (the `metadata` of a
//! root type), `NumberOrQuantity`, `f64`, `serde_json::Value`, `BTreeMap`, `String` or `Vec`. What
//! those implement decides (checked by compiling generated code of cert-manager's, Istio's, KEDA's and Strimzi's CRDs
//! with each derive added to every struct, k8s-openapi 0.29):
//!
//! | derive       | taken | why                                                           |
//! |--------------|-------|---------------------------------------------------------------|
//! | `Clone`, `Debug`, `PartialEq` | yes | already derived on every type            |
//! | `Default`    | yes   | already derived wherever it can be (never twice, never where it cannot) |
//! | `Serialize`, `Deserialize` | yes | already derived or implemented on every type |
//! | `Eq`         | no    | `ObjectMeta`, `NumberOrQuantity` and `f64` are not `Eq`               |
//! | `Hash`       | no    | `ObjectMeta`, `Time`, `NumberOrQuantity`, `IntOrString` and `f64` are not `Hash` |
//! | `PartialOrd` | no    | `ObjectMeta`, `NumberOrQuantity`, `IntOrString` and `serde_json::Value` are not `PartialOrd` |
//! | `Ord`        | no    | as `PartialOrd`, and `f64` is not `Ord`                       |
//! | `Copy`       | no    | `String`, `Vec`, `BTreeMap` and `ObjectMeta` are not `Copy`   |
//! | `JsonSchema` | no    | string enums and `ByteString` fields need the schemas `Generator::schemars` writes |
//!
//! Other derives (another crate's) are passed through unchecked. A derive is recognised by the
//! last segment of its path (`Eq`, `::std::cmp::Eq`).

use crate::error::{Error, Result};

/// Derives refused for every type, by the last segment of their path, with the reason.
const REFUSED: [(&str, &str); 6] = [
    (
        "Eq",
        "`ObjectMeta` (every root type's metadata), `NumberOrQuantity` and `f64` do not implement `Eq`",
    ),
    (
        "Hash",
        "`ObjectMeta` (every root type's metadata), `Time`, `NumberOrQuantity`, `IntOrString` and `f64` do \
         not implement `Hash`",
    ),
    (
        "PartialOrd",
        "`ObjectMeta` (every root type's metadata), `NumberOrQuantity`, `IntOrString` and \
         `serde_json::Value` do not implement `PartialOrd`",
    ),
    (
        "Ord",
        "`ObjectMeta` (every root type's metadata), `NumberOrQuantity`, `IntOrString`, \
         `serde_json::Value` and `f64` do not implement `Ord`",
    ),
    ("Copy", "`String`, `Vec`, `BTreeMap` and `ObjectMeta` fields are not `Copy`"),
    (
        "JsonSchema",
        "string enums and `ByteString` fields need hand-written schemas; use \
         `Generator::schemars(true)` (`--schemars`) instead",
    ),
];

/// Parses `derive` as a path and refuses the derives some generated type cannot take.
///
/// # Errors
///
/// [`Error::Derive`] naming the derive and why; [`Error::Config`] when it is not a path.
pub(crate) fn check(derive: &str) -> Result<syn::Path> {
    let path = syn::parse_str::<syn::Path>(derive)
        .map_err(|e| Error::Config(format!("derive {derive:?} is not a path: {e}")))?;
    let refused =
        path.segments.last().and_then(|last| REFUSED.iter().find(|(name, _)| last.ident == name));
    match refused {
        Some((_, reason)) => Err(Error::Derive { derive: derive.to_owned(), reason }),
        None => Ok(path),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn derives_every_type_takes_pass_and_the_others_are_refused_by_last_segment() {
        for taken in ["Clone", "Debug", "PartialEq", "Default", "::serde::Serialize", "my::Derive"]
        {
            check(taken).unwrap();
        }
        for refused in ["Eq", "::std::hash::Hash", "PartialOrd", "core::cmp::Ord", "Copy"] {
            assert!(matches!(check(refused), Err(Error::Derive { .. })), "{refused}");
        }
        assert!(matches!(check("not a path"), Err(Error::Config(_))));
    }
}
