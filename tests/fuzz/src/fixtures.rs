//! The real inputs the mutators start from: files under the repository's `tests/fixtures/`
//! (recorded watch streams, list pages and objects from kind clusters, the CRD corpus) and the
//! crates' own test data, read once per target run.

use std::path::{Path, PathBuf};

/// The repository's root directory.
#[must_use]
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Reads the file at `path`, relative to the repository's root, or absolute (a crate's tests
/// name their own files with `concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/...")`).
///
/// # Panics
///
/// If it cannot be read: the seeds are part of the repository, and a target without its seeds
/// would fuzz nothing of value.
#[must_use]
pub fn read(path: &str) -> Vec<u8> {
    let full = root().join(path);
    std::fs::read(&full).unwrap_or_else(|e| panic!("fuzz seed {}: {e}", full.display()))
}

/// The files directly in `dir` (relative to the repository's root, or absolute) whose names end in one of
/// `extensions`, sorted by name, as `(name, contents)`.
///
/// # Panics
///
/// If the directory cannot be read or holds no such file.
#[must_use]
pub fn dir(dir: &str, extensions: &[&str]) -> Vec<(String, Vec<u8>)> {
    let full = root().join(dir);
    let entries =
        std::fs::read_dir(&full).unwrap_or_else(|e| panic!("fuzz seeds {}: {e}", full.display()));
    let mut files: Vec<(String, Vec<u8>)> = entries
        .filter_map(Result::ok)
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .filter(|name| extensions.iter().any(|extension| name.ends_with(extension)))
        .map(|name| {
            let contents = read(&format!("{dir}/{name}"));
            (name, contents)
        })
        .collect();
    assert!(!files.is_empty(), "fuzz seeds: no {extensions:?} file in {}", full.display());
    files.sort();
    files
}
