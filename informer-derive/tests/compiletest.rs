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
//!
//! trybuild compiles the crate's dependencies again in a target of its own: about three minutes
//! of a cold run on 2 cores. So it belongs to the full gate (`cargo xtask ci`, which sets
//! `INFORMER_FULL_GATE=1`); a plain `cargo test` skips it with one line.

use std::io::Write;

#[rustversion::attr(not(stable(1.95)), ignore = "error messages are recorded with stable 1.95")]
#[test]
fn ui() {
    // The workspace's tests name this variable as `informer_tests::full_gate::ENV`; this crate
    // does not depend on them.
    if std::env::var_os("INFORMER_FULL_GATE").is_none_or(|v| v != "1") {
        let _ = writeln!(
            std::io::stderr(),
            "skipping the compile-fail tests: `cargo xtask ci` runs them (or set INFORMER_FULL_GATE=1)"
        );
        return;
    }
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*.rs");
    t.pass("tests/pass/*.rs");
}
