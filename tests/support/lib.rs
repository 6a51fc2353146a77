//! What the workspace's integration tests share: the real kube-apiserver harness.

pub mod kube_apiserver;
