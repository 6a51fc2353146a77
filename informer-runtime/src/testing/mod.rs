//! Test support: an in-process API source and a manual clock, for this crate's tests and yours.
//!
//! Enabled by the `testing` feature.

#[cfg(feature = "testing")]
#[cfg_attr(docsrs, doc(cfg(feature = "testing")))]
pub mod apiserver;
mod fake_clock;
mod fake_source;

pub use fake_clock::FakeClock;
pub use fake_source::FakeSource;
