//! Every generated root type carries the CRD it was generated from: `T::crd()` reads, as
//! k8s-openapi's `CustomResourceDefinition`, the same name and spec as the corpus file.

// Helpers outside the `#[test]` functions fail the test on a broken expectation, too.
#![allow(clippy::unwrap_used)]

use std::path::PathBuf;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;

/// The CRD in the corpus file `file`, read by k8s-openapi.
fn input(file: &str) -> CustomResourceDefinition {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../fixtures/crd-corpus").join(file);
    let text = std::fs::read_to_string(&path).unwrap();
    serde_yaml_ng::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// `(file, version, crd())` of every generated root type.
macro_rules! carried {
    ($(($file:literal, $version:literal, $ty:ty)),* $(,)?) => {
        fn carried() -> Vec<(&'static str, &'static str, CustomResourceDefinition)> {
            vec![$(($file, $version, <$ty>::crd())),*]
        }
    };
}

informer_crd_corpus::with_resources!(carried);

#[test]
fn every_root_type_crd_round_trips_to_its_input_crd() {
    let carried = carried();
    assert!(carried.len() >= 45, "{}", carried.len());
    for (file, version, crd) in carried {
        let input = input(file);
        assert_eq!(crd.metadata.name, input.metadata.name, "{file} {version}");
        assert_eq!(crd.spec, input.spec, "{file} {version}");
        assert!(crd.status.is_none(), "{file} {version}");
    }
}
