//! prost-build's hooks on the generator: `type_attribute`, `field_attribute` and `derive_for`
//! put their attributes and derives where their paths say (compared with
//! `tests/snapshots/hooks-widgets.rs`; `EXPECTORATE=overwrite` rewrites it), and a hook whose
//! path matches nothing, or whose attribute does not parse, is an error naming its path.
//! `tests/crd-corpus/tests/hooks.rs` compiles hooked code.

// Helpers outside the `#[test]` functions fail the test on a broken expectation, too.
#![allow(clippy::unwrap_used)]

mod support;

use std::fs;
use std::path::Path;

use informer_gen::{Error, Generator, Versions};

use support::{GADGETS, WIDGETS};

/// The code for `widgets.yaml` and `gadgets.yaml`.
fn generate(generator: &Generator) -> Result<String, Error> {
    let mut crds = informer_gen::schema::parse_str(Path::new("widgets.yaml"), WIDGETS)?;
    crds.extend(informer_gen::schema::parse_str(Path::new("gadgets.yaml"), GADGETS)?);
    Ok(generator.generate(&crds)?.to_file_string())
}

#[test]
fn attributes_and_derives_go_on_the_types_and_fields_their_paths_name() {
    let code = generate(
        &Generator::new()
            .type_attribute(".", "#[allow(dead_code)]")
            .type_attribute("example::v1::WidgetSpec", r#"#[doc = "Hooked."] #[non_exhaustive]"#)
            .field_attribute("WidgetSpec.size", r#"#[doc(alias = "bigness")]"#)
            .derive_for("example::v1::WidgetSpec", "Eq")
            .derive_for("WidgetSpec", "::std::hash::Hash")
            .derive_for("WidgetSpec", "Clone"),
    )
    .unwrap();
    syn::parse_file(&code).unwrap();

    let snapshot = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/snapshots/hooks-widgets.rs");
    if std::env::var_os("EXPECTORATE").is_some_and(|value| value == "overwrite") {
        fs::write(&snapshot, &code).unwrap();
    }
    let expected = fs::read_to_string(&snapshot).unwrap().replace("\r\n", "\n");
    assert_eq!(
        code, expected,
        "EXPECTORATE=overwrite cargo test -p informer-gen --test hooks updates it"
    );

    // The qualified path names only v1's WidgetSpec; the bare names, both versions'.
    assert_eq!(code.matches("///Hooked.").count(), 1, "{code}");
    assert_eq!(code.matches(" Eq,\n").count(), 1, "{code}");
    assert_eq!(code.matches("#[doc(alias = \"bigness\")]").count(), 2, "{code}");
    assert_eq!(code.matches("::std::hash::Hash,\n").count(), 2, "{code}");
    // `.` is every type, of every group.
    assert_eq!(code.matches("#[allow(dead_code)]").count(), 6, "{code}");
}

#[test]
fn a_path_that_matches_nothing_is_an_error_naming_it() {
    for (generator, expected) in [
        (
            Generator::new().type_attribute("WidgetSpek", "#[allow(dead_code)]"),
            "type_attribute(\"WidgetSpek\"): matches no generated type or field",
        ),
        (
            Generator::new().field_attribute("WidgetSpec.sise", "#[allow(dead_code)]"),
            "field_attribute(\"WidgetSpec.sise\"): matches no generated type or field",
        ),
        (
            // v1beta1 is not generated with only the storage version.
            Generator::new()
                .versions(Versions::Storage)
                .derive_for("example::v1beta1::WidgetSpec", "Eq"),
            "derive_for(\"example::v1beta1::WidgetSpec\"): matches no generated type or field",
        ),
    ] {
        let error = generate(&generator).unwrap_err();
        assert!(matches!(error, Error::Hook { .. }), "{error}");
        assert!(error.to_string().starts_with(expected), "{error}");
    }
}

#[test]
fn malformed_paths_and_attributes_are_errors_naming_the_path() {
    for (generator, expected) in [
        (
            Generator::new().type_attribute("WidgetSpec", "allow(dead_code)"),
            "type_attribute(\"WidgetSpec\"): attribute \"allow(dead_code)\" is not an outer \
             attribute (`#[...]`): ",
        ),
        (
            Generator::new().field_attribute("WidgetSpec.size", "#[allow(dead_code"),
            "field_attribute(\"WidgetSpec.size\"): attribute \"#[allow(dead_code\" is not Rust \
             tokens: ",
        ),
        (
            Generator::new().type_attribute("WidgetSpec", ""),
            "type_attribute(\"WidgetSpec\"): the attribute is empty",
        ),
        (
            Generator::new().type_attribute("example::WidgetSpec", "#[allow(dead_code)]"),
            "type_attribute(\"example::WidgetSpec\"): \"example::WidgetSpec\" has 2 segments",
        ),
        (
            Generator::new().field_attribute("WidgetSpec", "#[allow(dead_code)]"),
            "field_attribute(\"WidgetSpec\"): a field path is a type path, a `.` and the field's",
        ),
        (
            Generator::new().derive_for("WidgetSpec", "not a path"),
            "derive_for(\"WidgetSpec\"): derive \"not a path\" is not a path: ",
        ),
    ] {
        let error = generate(&generator).unwrap_err();
        assert!(matches!(error, Error::Hook { .. }), "{error}");
        assert!(error.to_string().starts_with(expected), "{error}");
    }
    // Every type is `.`, and `.` keeps `derive`'s check.
    let error = generate(&Generator::new().derive_for(".", "Eq")).unwrap_err();
    assert!(matches!(error, Error::Derive { .. }), "{error}");
}
