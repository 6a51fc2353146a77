//! Generates typed informers for three CRDs, as a user's build script would:
//! `informer_gen::Builder` writes `$OUT_DIR/custom_resources.rs` and tells Cargo what to watch.
//! A second file, with crate-private items and no docs, checks that those options compile.
//!
//! The CRDs are read where they are stored once (see `fixtures/README.md`): cert-manager's
//! Certificate and Strimzi's `KafkaTopic` in the corpus, k8s-openapi's `FooBar` in
//! informer-derive's fixtures.

use informer_gen::{Builder, Generator, Visibility};

/// k8s-openapi's `FooBar` CRD, as a kind cluster returned it.
const FOOBAR: &str = "../informer-derive/tests/fixtures/foobar.json";

/// Every CRD this crate's tests generate code for.
const CRDS: [&str; 3] = [
    "fixtures/crd-corpus/cert-manager-certificate.yaml",
    "fixtures/crd-corpus/strimzi-kafkatopic.yaml",
    FOOBAR,
];

fn main() {
    let private = Generator::new().visibility(Visibility::Crate).docs(false);
    let result = Builder::new().crds(CRDS).build().and_then(|_| {
        Builder::new()
            .crd(FOOBAR)
            .generator(private)
            .file_name("custom_resources_private.rs")
            .build()
    });
    if let Err(e) = result {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}
