//! The recorded pods of the crate's `tests/fixtures`, read the one way the unit tests and the
//! fuzz targets all read them.

/// The recorded pods: kind's seven and kubernetes/api's every-field pod, as `(file name, JSON)`,
/// sorted by file name. The other files of the folder (other kinds) are left out.
pub(crate) fn recorded_pods() -> Vec<(String, Vec<u8>)> {
    informer_fuzz::fixtures::dir(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures"), &[".json"])
        .into_iter()
        .filter(|(name, _)| name.contains("-pod-") || name.ends_with("core.v1.Pod.json"))
        .collect()
}
