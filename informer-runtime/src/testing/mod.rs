//! Test support, for this crate's tests and yours: an embedded API server, an in-process API
//! source and a manual clock.
//!
//! - [`apiserver`]: a protocol-faithful Kubernetes API server on loopback (list, watch, get and
//!   writes over real HTTP, discovery for kubectl, CRDs, faults to inject). Test a controller
//!   end to end with the real HTTP client, without a cluster.
//! - [`FakeSource`]: the same list/watch protocol in process, without HTTP, generic over types.
//! - [`FakeClock`]: a clock that moves only when the test steps it.
//!
//! Enabled by the `testing` feature.

#[cfg(feature = "testing")]
#[cfg_attr(docsrs, doc(cfg(feature = "testing")))]
pub mod apiserver;
mod fake_clock;
mod fake_source;
#[cfg(test)]
pub(crate) mod objects;

pub use fake_clock::FakeClock;
pub use fake_source::FakeSource;
