//! The corpus and its samples: reading each CRD file of the corpus with informer-gen's loader,
//! and writing the sample objects of each version to the work directory.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use informer_gen::sample;
use informer_gen::schema::crd::CustomResourceDefinition;
use serde_json::Value;

use super::process::{create_dir, remove_dir, sanitize, write};

/// One CRD file of the corpus.
pub(super) struct Input {
    /// The file.
    pub(super) path: PathBuf,
    /// Its file name, as shown in the table.
    pub(super) file: String,
    /// A Cargo package name for the crate that holds each tool's output for this file.
    pub(super) package: String,
    /// The CRD, or why informer-gen could not read it.
    pub(super) crd: Result<CustomResourceDefinition, String>,
    /// Sample objects, by version.
    pub(super) samples: BTreeMap<String, Vec<SampleFile>>,
}

/// One sample object, as written to the samples directory.
pub(super) struct SampleFile {
    /// What the sample exercises, from `informer_gen::sample`.
    pub(super) name: String,
    /// Its file name without `.json`.
    pub(super) stem: String,
    /// The object.
    pub(super) object: Value,
}

pub(super) fn read_inputs(dir: &Path, only: &[String]) -> Result<Vec<Input>, String> {
    let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut paths = Vec::new();
    for entry in entries {
        let path = entry.map_err(|e| format!("{}: {e}", dir.display()))?.path();
        let is_crd = path.extension().is_some_and(|e| e == "yaml" || e == "yml" || e == "json");
        let file = path.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default();
        if is_crd && (only.is_empty() || only.iter().any(|o| file.contains(o.as_str()))) {
            paths.push(path);
        }
    }
    paths.sort();
    if paths.is_empty() {
        return Err(format!("no CRD files (*.yaml, *.yml, *.json) in {}", dir.display()));
    }
    Ok(paths.into_iter().map(Input::read).collect())
}

impl Input {
    pub(super) fn read(path: PathBuf) -> Input {
        let file = path.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default();
        let stem = path.file_stem().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default();
        let package = format!("crd-{}", sanitize(&stem, '-'));
        let crd = load_crd(&path);
        let samples = match &crd {
            Ok(crd) => crd
                .spec
                .versions
                .iter()
                .map(|v| (v.name.clone(), sample_files(crd, &v.name)))
                .collect(),
            Err(_) => BTreeMap::new(),
        };
        Input { path, file, package, crd, samples }
    }

    /// The version objects are stored in, if the CRD could be read.
    pub(super) fn storage_version(&self) -> Option<&str> {
        let crd = self.crd.as_ref().ok()?;
        crd.spec.versions.iter().find(|v| v.storage).map(|v| v.name.as_str())
    }
}

/// The one CRD in `path`, read by informer-gen's loader.
fn load_crd(path: &Path) -> Result<CustomResourceDefinition, String> {
    let mut loaded = informer_gen::schema::load(&[path]).map_err(|e| e.to_string())?;
    match loaded.len() {
        1 => Ok(loaded.remove(0).crd),
        n => Err(format!("{n} CRDs in the file, expected one")),
    }
}

/// The samples of one version, named for files.
fn sample_files(crd: &CustomResourceDefinition, version: &str) -> Vec<SampleFile> {
    sample::samples(crd, version)
        .into_iter()
        .enumerate()
        .map(|(i, sample)| {
            let stem = format!("{i:03}-{}", sanitize(&sample.name, '-'));
            SampleFile { name: sample.name, stem, object: sample.object }
        })
        .collect()
}

pub(super) fn write_samples(inputs: &[Input], dir: &Path) -> Result<(), String> {
    remove_dir(dir)?;
    for input in inputs {
        for (version, samples) in &input.samples {
            let version_dir = dir.join(&input.package).join(version);
            create_dir(&version_dir)?;
            for sample in samples {
                let path = version_dir.join(format!("{}.json", sample.stem));
                let json = serde_json::to_string_pretty(&sample.object)
                    .map_err(|e| format!("{}: {e}", path.display()))?;
                write(&path, &json)?;
            }
        }
    }
    Ok(())
}
