//! The generator's hooks, compiled: CRDs generated with every derive every generated type can
//! take, and with attributes and derives on chosen types and fields (`build.rs`'s `hooks`,
//! included as `informer_crd_corpus::hooks`), build warning-free, and the types have the traits.

// Helpers outside the `#[test]` functions fail the test on a broken expectation, too.
#![allow(clippy::unwrap_used)]

use std::fmt::Debug;

use informer_crd_corpus::hooks::cert_manager::v1::{
    Certificate, CertificateSpec, CertificateSpecPrivateKey,
};
use informer_crd_corpus::hooks::kafka::v1::KafkaTopic;
use informer_crd_corpus::hooks::keda::v1alpha1::ScaledObject;
use informer_crd_corpus::hooks::networking_istio_io::v1alpha3::EnvoyFilter;
use serde::Serialize;
use serde::de::DeserializeOwned;

/// Encodes `value`, decodes it back, and compares the two through `Clone` and `PartialEq`.
fn round_trip<T>(value: &T)
where
    T: Clone + Debug + PartialEq + Serialize + DeserializeOwned,
{
    let json = serde_json::to_value(value).unwrap();
    let back: T = serde_json::from_value(json).unwrap();
    assert_eq!(back, value.clone(), "{value:?}");
}

#[test]
fn every_accepted_derive_compiles_on_every_kind() {
    // Every kind has the traits (instantiated without a value).
    let _: fn(&ScaledObject) = round_trip::<ScaledObject>;
    let _: fn(&KafkaTopic) = round_trip::<KafkaTopic>;
    let _: fn(&EnvoyFilter) = round_trip::<EnvoyFilter>;
    round_trip(&Certificate::default());
    round_trip(&CertificateSpec::default());
}

#[test]
fn derives_for_chosen_types_compile_and_hold() {
    use std::collections::HashSet;
    let key = CertificateSpecPrivateKey { size: Some(2048), ..Default::default() };
    let set: HashSet<CertificateSpecPrivateKey> = [key.clone(), key.clone()].into_iter().collect();
    assert_eq!(set.len(), 1);
    assert!(set.contains(&key));
}
