//! Code generation for typed informers: from CRD schemas to Rust types with typed informers,
//! listers and grouped factory accessors (what client-go's informer-gen and lister-gen do for
//! Go), and from k8s-openapi's resource types to the built-in accessors of `informer-runtime`.
//!
//! Three front ends share one generator:
//! - the command line: `informer-gen crd crds/ > src/crds.rs` (one self-contained file, as kopium
//!   prints) or `informer-gen crd crds/ --out src/crds` (a module tree); the CRDs can also come
//!   from standard input (`kubectl get crd -o yaml | informer-gen crd -`) or straight from an API
//!   server (see [the command line](#the-command-line));
//! - a build script, through [`Builder`] (below);
//! - `cargo xtask codegen`, which regenerates the built-in accessors checked into
//!   `informer-runtime` ([`discover`] finds the resources, [`emit::accessors`] writes them).
//!
//! # From a build script
//!
//! `Cargo.toml`:
//!
//! ```toml
//! [dependencies]
//! informer-runtime = "0.1"
//! k8s-openapi = { version = "0.29", features = ["latest"] }
//! serde = { version = "1", features = ["derive"] }
//! serde_json = "1"
//!
//! [build-dependencies]
//! informer-gen = { version = "0.1", default-features = false }
//! ```
//!
//! `build.rs` (every `*.yaml`, `*.yml` and `*.json` in `crds/`; Cargo reruns it when one changes):
//!
//! ```no_run
//! fn main() {
//!     if let Err(error) = informer_gen::compile_crds(&["crds"]) {
//!         panic!("{error}"); // names the file and the schema path
//!     }
//! }
//! ```
//!
//! [`Builder`] takes the [`Generator`]'s options, another output directory or file name.
//!
//! `src/lib.rs`:
//!
//! ```ignore
//! pub mod crds {
//!     include!(concat!(env!("OUT_DIR"), "/custom_resources.rs"));
//! }
//!
//! # async fn run(client: informer_client::Client) {
//! let factory = informer_runtime::SharedInformerFactory::new(client);
//! // The accessors are methods of the generated trait: without this import, the call below
//! // fails with "no method named `cert_manager` found".
//! use crds::CustomResourceInformers as _;
//! let certificates = factory.cert_manager().v1().certificates();
//! certificates.informer(); // add handlers here
//! factory.start();
//! let lister: crds::cert_manager::v1::CertificateLister = certificates.lister();
//! # }
//! ```
//!
//! # The command line
//!
//! `informer-gen crd` (the default `cli` feature; `informer-gen crd --help` lists every option)
//! reads CRDs from:
//! - files and directories, as [`schema::load`] reads them;
//! - standard input, `-` among the files: JSON when it starts with `{`, YAML otherwise, at most
//!   64 MiB, named `<stdin>` in errors;
//! - an API server: `--from-cluster widgets.example.com ...` reads the CRDs of those names,
//!   `--all-from-cluster` every CRD, or with `--group cert-manager.io --group '*.istio.io'`
//!   those of the groups named (a `*.` pattern matches the groups that end in the suffix).
//!   The server and credentials are those of the current kubeconfig context (`KUBECONFIG`, else
//!   `~/.kube/config`; `--kubeconfig FILE`, `--context NAME` choose others), else of the
//!   in-cluster service account, as informer-client's `Client` loads them; each request must
//!   be answered within `--request-timeout` (30 s). Errors name the server. Files and the
//!   cluster are not read together.
//!
//! `--types-only` ([`Generator::types_only`]) writes the types and their resource impls alone,
//! for a crate that wants the types without informers: it depends on k8s-openapi, serde and
//! `serde_json`, and on informer-runtime (without default features) only where a schema has
//! quantities, for `NumberOrQuantity`. The other options mirror the
//! [`Generator`]'s setters.
//!
//! The `cli` feature brings the client and picks k8s-openapi's newest Kubernetes version (a
//! binary must pick one): a crate that uses informer-gen as a library, a build script
//! included, turns default features off, so that it picks none.
//!
//! # What a CRD becomes
//!
//! A module per API group (client-go's short name, `cert_manager`, or the whole group where
//! that is taken: `networking_istio_io`), a module per version, and in it:
//! - the root type (`Certificate`) with `metadata: ObjectMeta`, implementing k8s-openapi's
//!   `Resource`, `ListableResource` and `Metadata` (so every part of `informer-runtime`, and
//!   k8s-openapi based clients, take it), writing its own `apiVersion` and `kind`, and carrying
//!   its CRD: `Certificate::crd()` returns the `CustomResourceDefinition` it was generated from
//!   (embedded as JSON, once per CRD in the group module), to install on an API server in tests;
//! - a struct per object schema, named after its path (`CertificateSpecPrivateKey`); identical
//!   schemas share one struct;
//! - a string enum per `enum` (with an `Other(String)` variant, so a value a newer server adds
//!   still decodes and encodes back unchanged);
//! - `CertificateInformer`, `CertificateLister`, `CertificateNamespaceLister`, and the accessors
//!   behind `factory.cert_manager().v1().certificates()` (through the generated
//!   `CustomResourceInformers` trait, which must be imported where they are called), unless
//!   [`types_only`](Generator::types_only).
//!
//! A schema that is one of Kubernetes' own types becomes that type (see
//! [k8s-openapi's own types](#k8s-openapis-own-types) below).
//!
//! Mapping: `x-kubernetes-int-or-string` → `IntOrString`, or, when the schema has the quantity
//! pattern, `informer_runtime::quantity::NumberOrQuantity` (a quantity that writes a number
//! back as a number, where k8s-openapi's `Quantity` would write a string); `date-time` →
//! `Time`; `byte` → `ByteString`; `int32` → `i32`, other integers `i64`; `number` → `f64`;
//! `additionalProperties` → `BTreeMap<String, T>` (or a flattened map beside the properties);
//! `x-kubernetes-preserve-unknown-fields` → JSON values, kept beside known fields;
//! `x-kubernetes-embedded-resource` → a struct with `apiVersion`, `kind` and
//! `metadata: ObjectMeta`. `oneOf`/`anyOf`/`allOf`/`not` only validate in a structural schema
//! (the shape is always in `properties`), so they become documentation ("Exactly one of …").
//! Properties not `required` (or `nullable`) are `Option`s. Property names that are Rust
//! keywords or not identifiers are escaped and renamed for serde (`r#type`, `-XX` → `xx`).
//! Descriptions become doc comments that never run as doctests. Whatever an object holds, it
//! holds after a decode and an encode, with one exception: `null` in an optional field reads
//! as `None`, which is not written.
//!
//! Schemas that are not structural (an array without `items`, a `type` left out, a property only
//! inside `oneOf`, a CRD with `preserveUnknownFields: true`) still generate: each such spot gets
//! the loosest faithful type (free JSON where the schema says nothing) and a [`Warning`] naming
//! the file and schema path, printed by the command line and by [`Builder`]. So does a key that
//! is no schema keyword (a property written beside `properties` instead of inside), which the
//! generator drops as the API server's decoder does. With [`Generator::strict`] (`--strict`)
//! they are errors.
//!
//! Types and fields can be given attributes and derives of their own, as prost-build's hooks do:
//! [`Generator::type_attribute`], [`Generator::field_attribute`] and [`Generator::derive_for`]
//! (`--type-attribute`, `--field-attribute`, `--derive-for`), with paths that name generated
//! Rust types (`"."`, `CertificateSpec`, `cert_manager::v1::CertificateSpec`,
//! `CertificateSpec.dnsNames`). [`Generator::derive`] refuses the derives some type cannot take.
//!
//! # k8s-openapi's own types
//!
//! Most large CRDs embed Kubernetes' types, their schemas written by controller-gen from the
//! Go types k8s-openapi mirrors. Where a schema node is one of them, it becomes k8s-openapi's
//! type instead of a struct of its own: a container's probes are
//! `::k8s_openapi::api::core::v1::Probe`, a status's conditions
//! `Vec<::k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition>` (which
//! informer-controller's condition helpers take), an `affinity` an `Affinity`. Such code can be
//! passed to code written for Kubernetes' types, and there is less of it to compile.
//!
//! A node maps only where decoding any object valid for the CRD, and encoding it back, gives
//! the same JSON, in the Kubernetes version the code is compiled against:
//! - every property of the node is a field of the type, of a compatible type and format
//!   (`int32` fits `int32` and `int64` fields, `int64` only `int64`; `date-time` is `Time`;
//!   `byte` is `ByteString`; int-or-string is `IntOrString`), and a declared
//!   `x-kubernetes-list-type` (and map keys) is the type's;
//! - every field the type requires is required by the node (k8s-openapi writes a required
//!   field back even where the object had none: `LocalObjectReference`,
//!   `SecretKeySelector` and `ConfigMapKeySelector` require `name`, which controller-gen CRDs
//!   leave optional, so those do not map);
//! - the node lacks at most a quarter of the type's fields (fields Kubernetes added later), and
//!   keeps no field it does not name (`x-kubernetes-preserve-unknown-fields`,
//!   `additionalProperties`), which the type would drop;
//! - no quantity: k8s-openapi's `Quantity` reads a number (`cpu: 1`) and writes it back as a
//!   string, so `ResourceRequirements`, and with it `Container` and `PodSpec`, stay generated
//!   (their `Probe`s, `SecurityContext`s, `Affinity`, volume sources and so on map); nor
//!   `MicroTime`, written with microseconds;
//! - nested nodes match their fields' types, recursively; where a node could be several types,
//!   its descriptions (controller-gen copies the Go doc comments k8s-openapi has too) decide,
//!   and a tie is no match.
//!
//! The types and their fields come from a catalog of k8s-openapi 0.29's types in every
//! Kubernetes version it offers (read from its source by `cargo xtask codegen`), so the
//! generator needs no k8s-openapi itself. [`Builder`] matches in the Kubernetes version the
//! crate's k8s-openapi is built for; [`Generator::k8s_version`] (`--k8s-version`) names one;
//! otherwise a node must match in every version. [`Generator::k8s_types`] (`--no-k8s-types`)
//! turns the mapping off. [`Output::type_mappings`] (and [`Builder::explain`], `--explain`)
//! lists each node mapped, and each near miss with the rule it breaks.
//!
//! [`sample`] synthesises objects from a schema, for round-trip tests of generated code.
//! `KOPIUM.md` in this crate compares the generator with kopium over the 128 real CRDs of the
//! repository's corpus (`tests/fixtures/crd-corpus`).

#![cfg_attr(docsrs, feature(doc_cfg))]
#![allow(clippy::needless_doctest_main, reason = "a build script example is a whole file")]

mod builder;
pub mod discover;
pub mod emit;
mod error;
mod generator;
mod ir;
mod k8s_types;
mod output;
pub mod sample;
pub mod schema;
mod spec;

pub use builder::{Builder, compile_crds};
pub use error::{Error, Result, Warning};
pub use generator::{GeneratedResource, Generator, Output, Versions, Visibility};
pub use k8s_types::TypeMapping;
pub use spec::{NEWEST_MINOR, OLDEST_MINOR, ResourceSpec};

// The README is the crate's registry page: its examples compile as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
