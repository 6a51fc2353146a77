//! Test support: an in-process API source and a manual clock, for this crate's tests and yours.
//!
//! Enabled by the `testing` feature.

mod fake_clock;
mod fake_source;

pub use fake_clock::FakeClock;
pub use fake_source::FakeSource;
