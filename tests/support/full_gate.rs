//! The suites that belong to the full gate (`cargo xtask ci`) rather than to a newcomer's
//! `cargo test`: each takes a minute or more of a cold run on 2 cores (the whole-corpus run of
//! the `informer-gen` binary, the CI-sized chaos scenario). They run when `cargo xtask ci` sets
//! [`ENV`], or when a developer sets it; otherwise each says in one line that it was skipped and
//! how to run it, and returns early. A skip is never silent, and CI never skips them.

use std::io::Write;

/// Set to `1` to run the full gate's suites in a plain `cargo test`; `cargo xtask ci` sets it.
pub const ENV: &str = "INFORMER_FULL_GATE";

/// Whether the full gate's suite `what` runs here; when not, says so on stderr once per call.
#[must_use]
pub fn runs(what: &str) -> bool {
    if std::env::var_os(ENV).is_some_and(|v| v == "1") {
        return true;
    }
    // Straight to stderr: libtest captures `eprintln!` of passing tests.
    let _ =
        writeln!(std::io::stderr(), "skipping {what}: `cargo xtask ci` runs it (or set {ENV}=1)");
    false
}
