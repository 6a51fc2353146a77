//! What `round_trip.rs` and `non_structural.rs` share: their fixtures, and the round trip of
//! every sample through the generated types.

// Helpers outside the `#[test]` functions fail the test on a broken expectation, too.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};

use informer_crd_corpus::Resource;
use informer_gen::sample;

/// `tests/fixtures/<name>`, part of the repository: a missing directory fails the test, naming
/// the path.
pub fn fixtures(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../fixtures").join(name);
    assert!(dir.is_dir(), "the fixtures {} are absent", dir.display());
    dir
}

/// Every sample of every version in `resources` (generated from the CRDs in `dir`), decoded
/// into its generated type and encoded back: how many were checked, and one line for each that
/// failed to decode or came back different. A version without samples fails the test.
pub fn round_trip_samples(dir: &Path, resources: &[Resource]) -> (usize, Vec<String>) {
    let crds = informer_gen::schema::load(&[dir]).unwrap();
    let mut failures = Vec::new();
    let mut checked = 0;
    for resource in resources {
        let loaded = crds
            .iter()
            .find(|l| l.file.file_name().is_some_and(|f| f == resource.file))
            .unwrap_or_else(|| panic!("{} is not in {}", resource.file, dir.display()));
        let samples = sample::samples(&loaded.crd, resource.version);
        assert!(!samples.is_empty(), "{} {}: no samples", resource.file, resource.version);
        for sample in samples {
            checked += 1;
            let text = serde_json::to_string(&sample.object).unwrap();
            let at = format!("{} {} {}", resource.file, resource.version, sample.name);
            match (resource.round_trip)(&text) {
                Ok(back) => {
                    if let Some(diff) = sample::json_diff(&sample.object, &back) {
                        failures.push(format!("{at}: {diff}"));
                    }
                }
                Err(e) => failures.push(format!("{at}: {e}")),
            }
        }
    }
    (checked, failures)
}
