//! What the workspace's integration tests share: the real kube-apiserver harness, and waiting
//! on a condition with a deadline.

pub mod kube_apiserver;
mod wait;

pub use wait::eventually;
