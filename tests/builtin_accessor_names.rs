//! A custom resource group never takes the name of a built-in group's accessor: the names
//! informer-gen and `#[derive(Informer)]` keep free (`informer_emit::names::BUILTIN_GROUP_NAMES`)
//! are exactly the group accessors of the checked-in built-in informers
//! (`factory.core()`, `factory.apps()`, …, in `informer-runtime/src/informers/generated.rs`).
//!
//! The check spans three crates (the names in informer-emit, the accessors informer-gen wrote
//! into informer-runtime), so it lives in the workspace's tests, which may read any crate's
//! files; no crate reads outside its own folder.

use std::path::Path;

use informer_emit::names::BUILTIN_GROUP_NAMES;

/// The checked-in built-in accessors, relative to the repository's root.
const GENERATED: &str = "informer-runtime/src/informers/generated.rs";

#[test]
fn builtin_group_names_match_the_generated_accessors() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(GENERATED);
    let generated = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("the built-in accessors {}: {e}", path.display()));
    // A group accessor is `pub fn NAME(&self) -> NAME::Group…`.
    let mut names: Vec<&str> = generated
        .lines()
        .filter_map(|l| l.trim().strip_prefix("pub fn "))
        .filter_map(|l| {
            let (name, rest) = l.split_once("(&self) -> ")?;
            rest.starts_with(&format!("{name}::Group")).then_some(name)
        })
        .collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(
        names, BUILTIN_GROUP_NAMES,
        "the group accessors of {GENERATED} (left) and informer_emit::names::BUILTIN_GROUP_NAMES \
         (right) differ: run `cargo xtask codegen`, or update the names"
    );
}
