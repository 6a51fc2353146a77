//! Round trip: for every CRD version of the corpus, objects synthesised from its schema
//! (required fields only, every field, every enum value) decode into the generated types and
//! encode back to equal JSON.

mod support;

use informer_crd_corpus::RESOURCES;

#[test]
fn every_generated_resource_round_trips_its_samples() {
    let (checked, failures) =
        support::round_trip_samples(&support::fixtures("crd-corpus"), RESOURCES);
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
    let dir = support::fixtures("crd-corpus");
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
    assert_eq!(files.len(), 128);
    assert_eq!(generated, files);
}
