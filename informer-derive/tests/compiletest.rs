//! Compile-fail tests: every `tests/ui/*.rs` must fail to compile with exactly the errors in the
//! `.stderr` file next to it (the message, the span it points at, the advice). And every
//! `tests/pass/*.rs` must compile and run (expansions that stay warning-free under strict lints).
//!
//! rustc's rendering of errors changes between releases, so the files are checked only on the
//! toolchain they were recorded with (see the `rustversion` gate); other toolchains skip them.
//! After changing a message, or to record them on a new toolchain (then update the gate):
//!
//! ```sh
//! TRYBUILD=overwrite cargo test -p informer-derive --test compiletest
//! ```
//!
//! and review the diff of `tests/ui/*.stderr` like code.

#[rustversion::attr(not(stable(1.95)), ignore = "error messages are recorded with stable 1.95")]
#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*.rs");
    t.pass("tests/pass/*.rs");
}
