//! What the workspace's integration tests share: the real kube-apiserver harness, which suites
//! belong to the full gate, the kube-rs program the kube tests run as a child process, the chaos
//! scenario (run by `tests/chaos.rs` and `cargo xtask soak`), and waiting on a condition with a deadline (embedded-apiserver's, which the crates' own tests use
//! too).

pub mod chaos;
pub mod full_gate;
pub mod kube_apiserver;
pub mod kube_program;

pub use embedded_apiserver::testing::eventually;

// The root README's examples compile as doctests of this crate, whose dependencies cover what
// they use: the runtime, the client with `kube`, the controller, the embedded API server,
// kube-rs and informer-derive, and the informers `build.rs` generates for cert-manager's
// Certificate (the README's `include!` of `custom_resources.rs`).
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
struct RootReadmeDoctests;
