//! What a client's reads are bounded by, and the defaults: an idle deadline on every wait for
//! bytes, and a cap on each object.
//!
//! Where it sits: below both ways of making a client. [`Config`](crate::Config) (the `http`
//! feature) starts from these defaults and lets a program change them; a client over a kube-rs
//! `kube::Client` (the `kube` feature) takes them as they are. The [body reader](crate::body)
//! and the decoders of the read path apply them.

use std::time::Duration;

/// The default `Config::read_idle_timeout`: kube-apiserver's one-minute request timeout plus
/// the 30 seconds of margin a watch gets past its own timeout.
#[cfg(any(feature = "http", feature = "kube"))]
pub(crate) const DEFAULT_READ_IDLE_TIMEOUT: Duration = Duration::from_secs(60 + 30);

/// The default `Config::max_object_size`: a few times the 3 MiB kube-apiserver accepts in a
/// request body.
pub(crate) const DEFAULT_MAX_OBJECT_SIZE: usize = 16 * 1024 * 1024;

/// What a client's reads are bounded by: the settings of its `Config`, or the defaults.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Limits {
    /// `Config::read_idle_timeout`.
    pub(crate) read_idle_timeout: Duration,
    /// `Config::max_object_size`.
    pub(crate) max_object_size: usize,
}
