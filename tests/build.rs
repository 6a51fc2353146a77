//! Generates typed informers for the CRDs in `fixtures/crds`, as a user's build script would:
//! `informer_gen::Builder` writes `$OUT_DIR/custom_resources.rs` and tells Cargo what to watch.
//! A second file, with crate-private items and no docs, checks that those options compile.

use informer_gen::{Builder, Generator, Visibility};

fn main() {
    let private = Generator::new().visibility(Visibility::Crate).docs(false);
    let result = Builder::new().crd("fixtures/crds").build().and_then(|_| {
        Builder::new()
            .crd("fixtures/crds/foobar.json")
            .generator(private)
            .file_name("custom_resources_private.rs")
            .build()
    });
    if let Err(e) = result {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}
