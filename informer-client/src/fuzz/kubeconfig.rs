//! `kubeconfig_loader`: the kubeconfig loader ([`Config::from_kubeconfig_file`] and
//! [`Config::from_kubeconfig_files`]) and the client built from what it loads ([`Client::new`]),
//! on the test kubeconfigs of `informer-client/tests/fixtures/kubeconfig` (tokens, basic auth,
//! client certificates from files and inline, exec plugins, merged files) mutated line by line
//! and byte by byte, rewritten as JSON with changed values, or replaced by random bytes.
//!
//! Property: it loads, or fails with an error whose message says what failed; no panic. The
//! files are written to a copy of the fixture directory, so the certificates and token files
//! they name are there. The client is built only without an exec plugin, which it would run.

use std::path::PathBuf;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

use fastrand::Rng;
use informer_fuzz::json::{self, Layout};
use informer_fuzz::{Unstructured, arbitrary, bytes, fixtures, text};
use serde_json::Value;

use crate::{Auth, Client, Config, KubeconfigOptions};

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/kubeconfig");

struct Seeds {
    /// `(name, text)` of each kubeconfig.
    files: Vec<(String, Vec<u8>)>,
    values: Vec<Value>,
    /// A copy of the fixture directory, where inputs are written.
    dir: PathBuf,
}

/// The directory inputs are written to, for the test to remove at the end.
pub(super) fn work_dir() -> PathBuf {
    std::env::temp_dir().join(format!("informer-fuzz-kubeconfig-{}", std::process::id()))
}

fn seeds() -> &'static Seeds {
    static SEEDS: OnceLock<Seeds> = OnceLock::new();
    SEEDS.get_or_init(|| {
        let mut files = fixtures::dir(FIXTURES, &[".yaml"]);
        files.extend(fixtures::dir(&format!("{FIXTURES}/merge"), &[".yaml"]));
        let values = files
            .iter()
            .filter_map(|(_, text)| serde_yaml_ng::from_slice::<Value>(text).ok())
            .collect();
        let dir = work_dir();
        copy_dir(std::path::Path::new(FIXTURES), &dir);
        Seeds { files, values, dir }
    })
}

fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

pub(super) fn property(u: &mut Unstructured<'_>) -> arbitrary::Result<()> {
    let mut rng = Rng::with_seed(u.arbitrary()?);
    let seeds = seeds();
    let contents = match u.int_in_range(0..=3)? {
        0 | 1 => {
            let mut text = seeds.files[rng.usize(0..seeds.files.len())].1.clone();
            let ops = rng.usize(0..=3);
            text::mutate_lines(&mut rng, &mut text, ops);
            let others: Vec<&[u8]> = seeds.files.iter().map(|(_, text)| text.as_slice()).collect();
            let ops = rng.usize(0..=3);
            bytes::mutate(&mut rng, &mut text, &others, text::YAML_TOKENS, ops);
            text
        }
        2 => {
            let mut value = seeds.values[rng.usize(0..seeds.values.len())].clone();
            let ops = rng.usize(1..=4);
            json::mutate(&mut rng, &mut value, &seeds.values, ops);
            let mut out = Vec::new();
            json::write(
                &mut rng,
                &value,
                Layout { newlines: true, duplicates: true, reorder: true },
                &mut out,
            );
            out
        }
        _ => u.bytes(u.len())?.to_vec(),
    };
    let names = ["", "files", "exec", "token", "merge", "nope", "exec-cluster", "files-user"];
    let mut option = || (rng.u8(0..3) == 0).then(|| names[rng.usize(0..names.len())].to_owned());
    let options = KubeconfigOptions { context: option(), cluster: option(), user: option() };
    check(&seeds.dir, &contents, &options, rng.bool());
    Ok(())
}

/// Loads `contents` as a kubeconfig file in `dir` (merged with another file if `merged`): it
/// loads, or fails with a message.
pub(super) fn check(
    dir: &std::path::Path,
    contents: &[u8],
    options: &KubeconfigOptions,
    merged: bool,
) {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    informer_fuzz::note("kubeconfig.yaml", contents);
    let path = dir.join(format!("input-{}.yaml", NEXT.fetch_add(1, Ordering::Relaxed)));
    std::fs::write(&path, contents).unwrap();
    let loaded = if merged {
        Config::from_kubeconfig_files(&[path.clone(), dir.join("merge/second.yaml")], options)
    } else {
        Config::from_kubeconfig_file(&path, options)
    };
    let _ = std::fs::remove_file(&path);
    match loaded {
        Ok(config) => {
            if !matches!(config.auth, Auth::Exec(_))
                && let Err(error) = Client::new(config)
            {
                assert!(!error.to_string().is_empty(), "a client error without a message");
            }
        }
        Err(error) => {
            assert!(!error.to_string().is_empty(), "a kubeconfig error without a message");
        }
    }
}
