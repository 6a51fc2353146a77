//! The build of a kube-rs program (issue 30): informer-client with its `kube` feature alone,
//! and informer-controller over it, compile warning-free and pull in none of informer-client's
//! own HTTP stack (reqwest, rustls, the kubeconfig parser), which its default `http` feature
//! builds. Part of `cargo xtask ci`.
//!
//! Cheap on purpose: clippy of two crates under one extra feature set (their dependencies are
//! built once for it), and `cargo tree`, which builds nothing.

use crate::cargo;

/// Crates of informer-client's own HTTP stack that a kube-rs program must not compile.
const HTTP_STACK: [&str; 4] = ["reqwest", "rustls", "hyper-rustls", "serde_yaml_ng"];

/// The dependency tree of informer-client as a kube-rs program builds it.
const TREE: [&str; 8] = [
    "tree",
    "-p",
    "informer-client",
    "--no-default-features",
    "--features",
    "kube",
    "-e",
    "normal",
];

/// Clippy of both crates as a kube-rs program builds them, then the check of the tree.
pub(crate) fn check() -> Result<(), String> {
    let features = ["--no-default-features", "--features", "kube,k8s-openapi/latest"];
    let deny = ["--", "-D", "warnings"];
    cargo(
        &[&["clippy", "-p", "informer-client"][..], &features, &["--all-targets"], &deny].concat(),
        &[],
    )?;
    // The library alone: its tests' dev-dependency on informer-client has the default features,
    // which would turn `http` back on. `client` too: `ApiWriter` for a `Client` over kube-rs.
    cargo(
        &[
            &["clippy", "-p", "informer-controller", "--no-default-features"][..],
            &["--features", "kube,client,k8s-openapi/latest"],
            &deny,
        ]
        .concat(),
        &[],
    )?;
    no_http_stack()
}

/// Fails, naming the crate and the command that shows why, when `cargo tree` of the kube-only
/// build lists a crate of the HTTP stack.
fn no_http_stack() -> Result<(), String> {
    eprintln!("+ cargo {} --prefix none", TREE.join(" "));
    let listed = crate::cargo_stdout(&[&TREE[..], &["--prefix", "none"]].concat())?;
    let found = http_stack_in(&listed);
    if found.is_empty() {
        return Ok(());
    }
    let why = found
        .iter()
        .map(|name| format!("  cargo {} -i {name}", TREE.join(" ")))
        .collect::<Vec<_>>()
        .join("\n");
    Err(format!(
        "informer-client with only its kube feature depends on {}, which only its http \
         feature may bring (a kube-rs program must not compile that stack); see what pulls it in:\n{why}",
        found.join(", ")
    ))
}

/// The crates of [`HTTP_STACK`] that `tree` (`cargo tree --prefix none` output: one
/// `name vX.Y.Z ...` a line) lists.
fn http_stack_in(tree: &str) -> Vec<&'static str> {
    HTTP_STACK
        .into_iter()
        .filter(|crate_name| {
            tree.lines().any(|line| line.split_whitespace().next() == Some(*crate_name))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_crates_of_the_http_stack_are_reported_by_their_exact_name() {
        let tree = "informer-client v0.1.0 (/w/informer-client)\nrustls-pki-types v1.12.0\n\
                    kube-client v5.0.0\nrustls v0.23.31 (*)\nhyper-rustls v0.27.7\n";
        assert_eq!(http_stack_in(tree), ["rustls", "hyper-rustls"]);
        assert!(http_stack_in("http v1.3.1\nhyper v1.7.0\n").is_empty());
    }
}
