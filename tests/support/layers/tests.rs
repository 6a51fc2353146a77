//! The resolver and the checks on small crates held in memory.

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::order::OrderError;
use super::resolve::Resolver;
use super::tree::Tree;
use super::{Report, check};

fn krate(files: &[(&str, &str)]) -> BTreeMap<PathBuf, String> {
    files.iter().map(|(path, text)| (PathBuf::from(path), (*text).to_owned())).collect()
}

/// Every edge as `from -> to: names`.
fn edges(files: &[(&str, &str)]) -> Vec<String> {
    let sources = krate(files);
    let tree = Tree::load(&sources).unwrap();
    let mut found: Vec<String> = Resolver::new(&tree)
        .edges()
        .iter()
        .map(|((from, to), names)| {
            let names: Vec<_> = names.iter().cloned().collect();
            format!(
                "{} -> {}: {}",
                tree.files[*from].path.display(),
                tree.files[*to].path.display(),
                names.join(", ")
            )
        })
        .collect();
    found.sort();
    found
}

fn report(files: &[(&str, &str)]) -> Report {
    let sources = krate(files);
    let lib = sources[&PathBuf::from("src/lib.rs")].clone();
    check("demo", &sources, &lib, "demo/src/lib.rs").unwrap()
}

#[test]
fn a_chain_of_re_exports_resolves_to_the_file_that_defines_the_item() {
    let found = edges(&[
        ("src/lib.rs", "mod a; mod b; mod c;"),
        ("src/a.rs", "pub struct Foo;"),
        ("src/b.rs", "pub use crate::a::Foo as Renamed;"),
        ("src/c.rs", "use crate::b::Renamed; fn f(_: Renamed) {}"),
    ]);
    assert_eq!(found, ["src/b.rs -> src/a.rs: Foo", "src/c.rs -> src/a.rs: Foo"]);
}

#[test]
fn super_super_and_self_paths_in_code_resolve_from_the_module_that_writes_them() {
    let found = edges(&[
        ("src/lib.rs", "mod a;"),
        ("src/a/mod.rs", "mod b; mod inner; pub struct A; fn f() { self::inner::g() }"),
        ("src/a/inner.rs", "pub fn g() {}"),
        ("src/a/b/mod.rs", "mod c;"),
        ("src/a/b/c.rs", "fn f() -> super::super::A { todo!() }"),
    ]);
    assert_eq!(found, ["src/a/b/c.rs -> src/a/mod.rs: A", "src/a/mod.rs -> src/a/inner.rs: g"]);
}

#[test]
fn a_glob_re_export_of_a_child_leads_to_the_child() {
    let found = edges(&[
        ("src/lib.rs", "mod m; mod user;"),
        ("src/m/mod.rs", "mod made; pub use made::*;"),
        ("src/m/made.rs", "pub fn make() {} fn hidden() {}"),
        ("src/user.rs", "use crate::m::make; fn f() { make(); crate::m::hidden(); }"),
    ]);
    // `hidden` is private to `made`: the glob does not carry it, so the path falls back to the
    // deepest module it names.
    assert_eq!(
        found,
        ["src/user.rs -> src/m/made.rs: make", "src/user.rs -> src/m/mod.rs: hidden"]
    );
}

#[test]
fn test_only_code_makes_no_edge() {
    let found = edges(&[
        ("src/lib.rs", "mod a; mod b; #[cfg(test)] mod fuzz;"),
        ("src/b.rs", "pub struct B;"),
        (
            "src/a.rs",
            "#[cfg(test)] use crate::b::B;\n\
             #[cfg(all(test, feature = \"x\"))] fn t() -> crate::b::B { B }\n\
             pub struct A;\n\
             impl A { #[cfg(test)] fn t(&self) -> crate::b::B { crate::b::B } }\n\
             mod tests { use crate::b::B; }",
        ),
    ]);
    assert!(found.is_empty(), "{found:?}");
}

#[test]
fn path_attributes_and_inline_modules_are_followed() {
    let found = edges(&[
        ("src/lib.rs", "#[path = \"elsewhere/impl.rs\"] mod a; mod b; mod c;"),
        ("src/elsewhere/impl.rs", "mod near; pub use near::Near;"),
        ("src/elsewhere/near.rs", "pub struct Near;"),
        ("src/b.rs", "pub mod inner { pub struct Deep; } fn f(_: crate::a::Near) {}"),
        ("src/c.rs", "use crate::b::inner; fn f(_: inner::Deep) {}"),
    ]);
    assert_eq!(found, ["src/b.rs -> src/elsewhere/near.rs: Near", "src/c.rs -> src/b.rs: Deep"]);
}

#[test]
fn an_import_of_a_trait_as_underscore_is_an_edge_and_no_glob() {
    let found = edges(&[
        ("src/lib.rs", "mod a; mod b;"),
        ("src/a.rs", "pub trait Tr { fn go(&self) {} } pub struct Other;"),
        (
            "src/b.rs",
            "use crate::a::Tr as _; use crate::a as _; fn f(x: u8) { x.go(); let _ = Other; }",
        ),
    ]);
    // `Other` is not imported: had an `as _` import acted as a glob of `a`, it would be.
    assert_eq!(found, ["src/b.rs -> src/a.rs: Tr"]);
}

#[test]
fn test_only_statements_in_a_function_make_no_edge() {
    let found = edges(&[
        ("src/lib.rs", "mod a; mod b;"),
        ("src/b.rs", "pub fn check() {} pub struct B;"),
        (
            "src/a.rs",
            "pub struct A;\n\
             fn f() { #[cfg(test)] crate::b::check(); #[cfg(test)] let _b = crate::b::B; }\n\
             impl A { fn g(&self) { #[cfg(test)] { use crate::b::check; check(); } } }",
        ),
    ]);
    assert!(found.is_empty(), "{found:?}");
}

#[test]
fn code_behind_a_feature_makes_edges() {
    let found = edges(&[
        ("src/lib.rs", "mod a; #[cfg(feature = \"x\")] mod b;"),
        ("src/b.rs", "pub struct B;"),
        ("src/a.rs", "#[cfg(any(test, feature = \"x\"))] pub fn t() -> crate::b::B { todo!() }"),
    ]);
    assert_eq!(found, ["src/a.rs -> src/b.rs: B"]);
}

#[test]
fn a_parents_re_export_of_its_child_is_surface_but_its_private_import_is_an_edge() {
    let found = edges(&[
        ("src/lib.rs", "mod p; pub use p::Foo;"),
        ("src/p/mod.rs", "mod child; pub use child::Foo; use child::Bar; fn f(_: Bar) {}"),
        ("src/p/child.rs", "pub struct Foo; pub struct Bar;"),
    ]);
    assert_eq!(found, ["src/p/mod.rs -> src/p/child.rs: Bar"]);
}

#[test]
fn a_module_named_by_use_resolves_where_its_items_are_used() {
    let found = edges(&[
        ("src/lib.rs", "mod store; mod user; mod idle;"),
        ("src/store.rs", "pub struct Foo;"),
        ("src/user.rs", "use crate::store; fn f(store: store::Foo) { let _ = store; }"),
        ("src/idle.rs", "use crate::store;"),
    ]);
    assert_eq!(found, ["src/user.rs -> src/store.rs: Foo"]);
}

#[test]
fn paths_in_macros_and_serde_attributes_count_and_unknown_items_fall_back_to_their_module() {
    let found = edges(&[
        ("src/lib.rs", "mod a; mod b; mod c;"),
        ("src/a.rs", "pub fn name() -> String { String::new() }"),
        (
            "src/b.rs",
            "fn f() -> String { format!(\"{}\", crate::a::name()) } fn g() { crate::c::Made::new(); }",
        ),
        (
            "src/c.rs",
            "#[derive(serde::Deserialize)] struct S { #[serde(deserialize_with = \"crate::a::name\")] x: u8 }",
        ),
    ]);
    assert_eq!(
        found,
        ["src/b.rs -> src/a.rs: name", "src/b.rs -> src/c.rs: Made", "src/c.rs -> src/a.rs: name"]
    );
}

#[test]
fn fields_methods_and_other_crates_are_not_edges() {
    let found = edges(&[
        ("src/lib.rs", "mod a; mod b;"),
        ("src/a.rs", "pub fn len() {}"),
        ("src/b.rs", "fn f(v: Vec<u8>) -> usize { let _ = ::std::mem::size_of::<u8>(); v.len() }"),
    ]);
    assert!(found.is_empty(), "{found:?}");
}

#[test]
fn circles_between_files_and_modules_and_upward_edges_fail_with_what_to_do() {
    let report = report(&[
        (
            "src/lib.rs",
            "//! # Layers\n//!\n//! - `a`: bottom\n//! - `b`, `c`: top\n//!\n//! # Next\nmod a; mod b; mod c;",
        ),
        ("src/a.rs", "pub struct A; fn f(_: crate::b::B) {}"),
        ("src/b.rs", "pub struct B; fn f(_: crate::a::A) {}"),
        ("src/c/mod.rs", "mod x; mod y;"),
        ("src/c/x.rs", "pub struct X(super::y::Y);"),
        ("src/c/y.rs", "pub struct Y(Option<Box<super::x::X>>);"),
    ]);
    assert_eq!(report.upward.len(), 1);
    assert_eq!(report.module_circles.len(), 1);
    assert_eq!(report.module_circles[0].members, ["a", "b"]);
    assert_eq!(
        report.module_circles[0].edges,
        ["a -> b: src/a.rs -> src/b.rs: B", "b -> a: src/b.rs -> src/a.rs: A"]
    );
    assert_eq!(report.file_circles.len(), 2);
    // One file per module: that file circle is the module circle, whose edges say it all.
    assert_eq!(report.file_circles[0].members, ["src/a.rs", "src/b.rs"]);
    assert!(report.file_circles[0].repeats_modules);
    assert_eq!(report.file_circles[1].members, ["src/c/x.rs", "src/c/y.rs"]);
    assert_eq!(
        report.file_circles[1].edges,
        ["src/c/x.rs -> src/c/y.rs: Y", "src/c/y.rs -> src/c/x.rs: X"]
    );
    let failures = report.failures().join("\n");
    assert!(
        failures.contains(
            "upward edge src/a.rs -> src/b.rs: B (from layer 1 `a` up to layer 2 `b`): move B below, or move \
             the importing code up; the layer order is in demo/src/lib.rs"
        ),
        "{failures}"
    );
}

#[test]
fn a_module_left_out_listed_twice_or_absent_fails_and_test_only_modules_may_be_listed() {
    let report = report(&[
        (
            "src/lib.rs",
            "//! # Layers\n//! - `a`, `gone`: one\n//! - `a`, `fuzz`, `inline`: two\n\
             mod a; mod b; #[cfg(test)] mod fuzz; pub mod inline { pub use std::fmt; }",
        ),
        ("src/a.rs", ""),
        ("src/b.rs", ""),
    ]);
    assert_eq!(report.missing, ["b"]);
    assert_eq!(report.twice, ["a"]);
    assert_eq!(report.absent, ["gone"]);
    assert_eq!(report.failures().len(), 3);
}

#[test]
fn a_crate_without_a_layers_section_fails_saying_so() {
    let report = report(&[
        ("src/lib.rs", "//! A crate.\n//!\n//! # Where to start\nmod a;"),
        ("src/a.rs", ""),
    ]);
    assert_eq!(report.layers, Err(OrderError::Missing { origin: "demo/src/lib.rs".to_owned() }));
    let failures = report.failures();
    assert_eq!(failures.len(), 1, "{failures:?}");
    assert!(failures[0].contains("has no `# Layers` section"), "{failures:?}");
}

#[test]
fn an_override_file_holds_one_part_per_crate() {
    let file = "[one]\n//! # Layers\n//! - `a`: x\n[two]\n//! ## Layers\n//! - `b`: y\n";
    let two = super::part_for(file, "two").unwrap();
    assert_eq!(super::order::parse(&two, "f").unwrap().lines, [["b"]]);
    assert!(super::part_for(file, "three").is_none());
}
