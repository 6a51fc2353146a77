//! Round trip: for every CRD version of the corpus, objects synthesised from its schema
//! (required fields only, every field, every enum value) decode into the generated types and
//! encode back to equal JSON.

use std::path::PathBuf;

use informer_crd_corpus::RESOURCES;
use informer_gen::sample;

/// The corpus, part of the repository: a missing directory fails the test, naming the path.
fn corpus() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../fixtures/crd-corpus");
    assert!(dir.is_dir(), "the CRD corpus {} is absent", dir.display());
    dir
}

#[test]
fn every_generated_resource_round_trips_its_samples() {
    let dir = corpus();
    let crds = informer_gen::schema::load(&[&dir]).unwrap();
    let mut failures = Vec::new();
    let mut checked = 0;
    for resource in RESOURCES {
        let loaded = crds
            .iter()
            .find(|l| l.file.file_name().is_some_and(|f| f == resource.file))
            .unwrap_or_else(|| panic!("{} is not in the corpus", resource.file));
        let samples = sample::samples(&loaded.crd, resource.version);
        assert!(!samples.is_empty(), "{} {}: no samples", resource.file, resource.version);
        for sample in samples {
            checked += 1;
            let text = serde_json::to_string(&sample.object).unwrap();
            match (resource.round_trip)(&text) {
                Ok(back) => {
                    if let Some(diff) = sample::json_diff(&sample.object, &back) {
                        failures.push(format!(
                            "{} {} {}: {diff}",
                            resource.file, resource.version, sample.name
                        ));
                    }
                }
                Err(e) => failures
                    .push(format!("{} {} {}: {e}", resource.file, resource.version, sample.name)),
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {checked} samples failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
    println!("{checked} samples of {} resource versions round-tripped", RESOURCES.len());
}

#[test]
fn every_corpus_file_is_generated() {
    let dir = corpus();
    let mut files: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x.eq_ignore_ascii_case("yaml")))
        .filter_map(|p| p.file_name()?.to_str().map(str::to_owned))
        .collect();
    files.sort();
    let mut generated: Vec<String> = RESOURCES.iter().map(|r| r.file.to_owned()).collect();
    generated.sort();
    generated.dedup();
    assert_eq!(files.len(), 91);
    assert_eq!(generated, files);
}
