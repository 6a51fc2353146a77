//! Fuzz targets for what reads bytes from outside, in this crate: the object decoder, the
//! label-selector parser and compact storage's forms (the HTTP client's decoders and parsers
//! have theirs in `informer-client`).
//!
//! Each `#[test]` here runs one target through [`informer_fuzz`] for a short time budget in
//! `cargo test` (2 s; `INFORMER_FUZZ_SECONDS` raises it) and for its share of
//! `cargo xtask fuzz --minutes N`. A failure prints its seed; `ARBTEST_SEED=0x… cargo test -p
//! informer-runtime --lib fuzz::NAME` replays it. Each target checks properties, not only the
//! absence of panics (see each module), and starts from the recorded objects of
//! `informer-runtime/tests/fixtures/` and `tests/fixtures/`.
//!
//! A crash one of them finds is fixed where it happened and kept as a test there, named after
//! what went wrong.

mod compact;
mod object;
mod selector;

use informer_fuzz::Target;

#[test]
fn object_decoder() {
    Target::new("object_decoder", object::property).run();
}

#[test]
fn label_selector() {
    Target::new("label_selector", selector::property).run();
}

#[test]
fn compact_form() {
    Target::new("compact_form", compact::property).run();
}
