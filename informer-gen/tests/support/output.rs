//! What the tests that run the `informer-gen` binary share (`cli.rs`, `cluster.rs`,
//! `corpus.rs`): a run's output and the files it wrote. Each of them uses a part.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Output;

/// The standard output of a run that must have succeeded; its stderr in the failure otherwise.
pub fn stdout(output: &Output) -> String {
    assert!(
        output.status.success(),
        "status {}, stderr:\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout.clone()).unwrap()
}

/// Every file under `dir`, by relative path, with its contents.
pub fn tree(dir: &Path) -> BTreeMap<PathBuf, String> {
    let mut files = BTreeMap::new();
    let mut pending = vec![dir.to_owned()];
    while let Some(directory) = pending.pop() {
        for entry in std::fs::read_dir(&directory).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
            } else {
                let relative = path.strip_prefix(dir).unwrap().to_owned();
                files.insert(relative, std::fs::read_to_string(&path).unwrap());
            }
        }
    }
    files
}
