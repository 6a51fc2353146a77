//! The layers of informer-runtime and embedded-apiserver point one way, and no files import
//! each other in a circle.
//!
//! Each crate writes its layer order once, in its crate docs (`src/lib.rs`): a `# Layers`
//! section with one `//! - ` line per layer, the bottom layer first, naming its top-level
//! modules in backticks before the first `:`. A module may import from its own line and the
//! lines above it. This test reads each crate's module tree from `src/lib.rs`, resolves every
//! `use` and every path in code (`crate::`, `super::`, `self::`, names in scope; through
//! re-exports and globs) to the file that defines the item, leaving out test-only code, and
//! fails on: a top-level module missing from the order, listed twice or listed but absent; an
//! edge from a module to one of a higher line; a circle between top-level modules; a circle
//! between any two files. A module's re-exports of its own children are its surface, not
//! edges; doc links are not edges.
//!
//! Run it with `cargo test -p informer-tests --test layers -- --nocapture` to see, per crate,
//! the counts of files, edges, modules and layers and every upward edge and circle.
//!
//! To try an order before writing it into a crate's docs, set `INFORMER_LAYERS_FILE` to a file
//! holding, for each crate to override, a `[crate-name]` line followed by the `# Layers` section
//! as the crate docs would hold it:
//!
//! ```text
//! [informer-runtime]
//! //! # Layers
//! //!
//! //! - `clock`, `instrument`: time and tracing helpers
//! //! - `resource`: objects
//! ```
//!
//! Crates without a part in the file use their crate docs.

#[path = "support/layers/mod.rs"]
mod layers;

use std::path::Path;

/// The crates whose layers are checked, each a folder of the workspace.
const CRATES: &[&str] = &[
    "informer-runtime",
    "informer-client",
    "informer-controller",
    "embedded-apiserver",
    "informer-webhook",
];

#[test]
fn imports_point_down_the_layers_and_close_no_circle() {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the tests crate sits in the workspace's folder");
    let overrides = std::env::var_os("INFORMER_LAYERS_FILE").map(|path| {
        let text = layers::read_bounded(Path::new(&path))
            .unwrap_or_else(|error| panic!("INFORMER_LAYERS_FILE: {error}"));
        (Path::new(&path).display().to_string(), text)
    });
    let mut failures = Vec::new();
    for krate in CRATES {
        let folder = workspace.join(krate);
        let part = overrides.as_ref().and_then(|(path, text)| {
            Some((format!("INFORMER_LAYERS_FILE={path}"), layers::part_for(text, krate)?))
        });
        let (origin, docs) = part.unwrap_or_else(|| {
            let lib = folder.join("src/lib.rs");
            let docs =
                layers::read_bounded(&lib).unwrap_or_else(|error| panic!("{krate}: {error}"));
            (format!("{krate}/src/lib.rs"), docs)
        });
        let report = layers::check(krate, &layers::Disk(folder), &docs, &origin)
            .unwrap_or_else(|error| panic!("{krate}: {error}"));
        println!("{report}");
        failures.extend(report.failures());
    }
    assert!(failures.is_empty(), "the layer check failed:\n\n{}", failures.join("\n\n"));
}
