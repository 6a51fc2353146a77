//! Types only (`Generator::types_only`, `--types-only`), compiled: the types of a few CRDs
//! without informers, listers and accessors (`build.rs`, included as
//! `informer_crd_corpus::types_only`) build warning-free, are resources to k8s-openapi and to
//! informer-runtime, carry their CRD, and encode as the full output's types do.

// Helpers outside the `#[test]` functions fail the test on a broken expectation, too.
#![allow(clippy::unwrap_used)]

use informer_crd_corpus::{corpus, types_only};
use k8s_openapi::{Metadata as _, Resource as _};

#[test]
fn types_only_roots_are_resources_that_carry_their_crd() {
    use types_only::cert_manager::v1::Certificate;
    assert_eq!(Certificate::API_VERSION, "cert-manager.io/v1");
    assert_eq!(<Certificate as informer_runtime::Resource>::PLURAL, "certificates");
    assert_eq!(
        Certificate::crd(),
        corpus::cert_manager::v1::Certificate::crd(),
        "the same CRD as the full output's"
    );
    let mut certificate = Certificate::default();
    certificate.metadata_mut().name = Some("web".to_owned());
    assert_eq!(certificate.metadata().name.as_deref(), Some("web"));
}

#[test]
fn types_only_objects_encode_as_the_full_outputs_do() {
    let json = serde_json::json!({
        "apiVersion": "kafka.strimzi.io/v1",
        "kind": "KafkaTopic",
        "metadata": {"name": "orders", "namespace": "default"},
        "spec": {"partitions": 3, "replicas": 2, "config": {"retention.ms": 7_200_000}},
    });
    let types_only: types_only::kafka::v1::KafkaTopic =
        serde_json::from_value(json.clone()).unwrap();
    let full: corpus::kafka::v1::KafkaTopic = serde_json::from_value(json.clone()).unwrap();
    assert_eq!(serde_json::to_value(&types_only).unwrap(), json);
    assert_eq!(serde_json::to_value(&full).unwrap(), json);
}
