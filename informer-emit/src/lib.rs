//! The code both front ends write, so that a resource gets the same items whether its type
//! comes from a CRD (`informer-gen`) or from Rust (`#[derive(Informer)]`):
//!
//! - [`names`]: accessor names (`network_policies`), group module names (`cert_manager`), and
//!   the escaping of Rust keywords;
//! - [`resource_impls`]: k8s-openapi's `Resource`, `ListableResource` and `Metadata`;
//! - [`aliases`]: client-go's `FooInformer`, `FooLister` and `FooNamespaceLister`;
//! - [`accessors`]: the grouped factory accessors, `factory.<group>().<version>().<plural>()`,
//!   through a `CustomResourceInformers` extension trait;
//! - [`conversion_hub`]: the conversion of a kind's versions through its hub version
//!   (`informer-webhook`'s `Hub` and `KindHub`).
//!
//! Everything is a [`TokenStream`](proc_macro2::TokenStream) naming crates by the paths it is
//! given; formatting is the caller's (informer-gen unparses, a derive hands tokens to rustc).
//! The crate depends only on syn, quote and heck, so that the proc-macro crate can link it.

#![cfg_attr(docsrs, feature(doc_cfg))]
pub mod accessors;
mod conversion;
pub mod names;
mod resource;

pub use conversion::conversion_hub;
pub use resource::{Identity, aliases, resource_impls};

// The README is the crate's registry page: its examples compile as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
