//! Test support, for this crate's tests and yours: an in-process API source and a manual clock.
//!
//! - [`FakeSource`]: the list/watch protocol in process, without HTTP, generic over types.
//! - [`FakeClock`]: a clock that moves only when the test steps it.
//!
//! Enabled by the `testing` feature. To test a controller end to end with the real HTTP
//! client, without a cluster, use the `embedded-apiserver` crate: a protocol-faithful
//! Kubernetes API server on loopback (list, watch, get and writes over real HTTP, discovery for
//! kubectl, CRDs, faults to inject).

mod fake_clock;
mod fake_source;
#[cfg(test)]
pub(crate) mod objects;
#[cfg(test)]
pub(crate) mod wait;

pub use fake_clock::FakeClock;
pub use fake_source::FakeSource;
