//! [`Builder`] and [`compile_crds`]: the `build.rs` front end. CRD files in, one generated file
//! in `OUT_DIR` out, for the crate to `include!`; Cargo told to rerun when any input changes.

use std::ffi::OsString;
use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::generator::{Generator, Versions};
use crate::output::write_file_if_changed;

/// The file [`Builder::build`] writes unless told otherwise.
const DEFAULT_FILE_NAME: &str = "custom_resources.rs";
/// File name extensions [`schema::load`](crate::schema::load) reads from a directory.
const EXTENSIONS: [&str; 3] = ["yaml", "yml", "json"];

/// Generates code from CRDs in a build script: [`crd`](Builder::crd) names the inputs,
/// [`generator`](Builder::generator) (or the forwarding setters) configures the code, and
/// [`build`](Builder::build) writes one file into `OUT_DIR`, to be pulled in with `include!`.
///
/// For the common case, with every default, there is [`compile_crds`].
///
/// Setters take and return the builder by value.
///
/// # Examples
///
/// In `build.rs`:
///
/// ```no_run
/// use informer_gen::{Builder, Versions};
///
/// fn main() {
///     let built = Builder::new()
///         .crd("crds/")
///         .crd("vendor/cert-manager.crds.yaml")
///         .versions(Versions::Storage)
///         .derive("::my_crate::Describe")
///         .build();
///     if let Err(error) = built {
///         panic!("{error}");
///     }
/// }
/// ```
///
/// and in the crate:
///
/// ```ignore
/// include!(concat!(env!("OUT_DIR"), "/custom_resources.rs"));
/// ```
#[derive(Debug, Clone)]
#[must_use]
pub struct Builder {
    inputs: Vec<PathBuf>,
    generator: Generator,
    out_dir: Option<PathBuf>,
    file_name: PathBuf,
    emit_rerun_if_changed: bool,
    explain: bool,
}

impl Default for Builder {
    fn default() -> Self {
        Self {
            inputs: Vec::new(),
            generator: Generator::new(),
            // `OUT_DIR` at build time.
            out_dir: None,
            file_name: PathBuf::from(DEFAULT_FILE_NAME),
            // Cargo sets `CARGO` for build scripts; elsewhere (a test, a tool) nobody reads the
            // lines (tonic-build's rule).
            emit_rerun_if_changed: std::env::var_os("CARGO").is_some(),
            explain: false,
        }
    }
}

impl Builder {
    /// A builder with no inputs, the default [`Generator`], output to
    /// `$OUT_DIR/custom_resources.rs`, and rerun-if-changed lines when run by Cargo.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a CRD input: a file (YAML, multi-document YAML or JSON) or a directory, whose
    /// `*.yaml`, `*.yml` and `*.json` files are read (see [`schema::load`](crate::schema::load)).
    /// Relative paths are relative to the package root, where Cargo runs build scripts.
    pub fn crd(mut self, path: impl Into<PathBuf>) -> Self {
        self.inputs.push(path.into());
        self
    }

    /// Adds several CRD inputs, as [`crd`](Builder::crd) does.
    pub fn crds<P: Into<PathBuf>>(mut self, paths: impl IntoIterator<Item = P>) -> Self {
        self.inputs.extend(paths.into_iter().map(Into::into));
        self
    }

    /// Replaces the generator, and with it every setting made through the forwarding setters
    /// ([`versions`](Builder::versions), [`derive`](Builder::derive), the hooks
    /// ([`type_attribute`](Builder::type_attribute), [`field_attribute`](Builder::field_attribute),
    /// [`derive_for`](Builder::derive_for)), [`runtime_crate`](Builder::runtime_crate),
    /// [`types_only`](Builder::types_only), [`strict`](Builder::strict),
    /// [`k8s_types`](Builder::k8s_types), [`k8s_version`](Builder::k8s_version)) before this
    /// call.
    pub fn generator(mut self, generator: Generator) -> Self {
        self.generator = generator;
        self
    }

    /// Which versions of each CRD to generate ([`Generator::versions`]).
    pub fn versions(mut self, versions: Versions) -> Self {
        self.generator = self.generator.versions(versions);
        self
    }

    /// Adds a derive to every generated type ([`Generator::derive`], which lists the derives
    /// refused because some generated type cannot take them: `Eq`, `Hash`, `PartialOrd`, `Ord`,
    /// `Copy` and `JsonSchema`).
    pub fn derive(mut self, path: impl Into<String>) -> Self {
        self.generator = self.generator.derive(path);
        self
    }

    /// Adds an attribute to the generated types `path` names ([`Generator::type_attribute`]:
    /// `"."` for every type, `"CertificateSpec"`, or `"cert_manager::v1::CertificateSpec"`).
    pub fn type_attribute(mut self, path: impl Into<String>, attribute: impl Into<String>) -> Self {
        self.generator = self.generator.type_attribute(path, attribute);
        self
    }

    /// Adds an attribute to the generated fields `path` names ([`Generator::field_attribute`]:
    /// `"CertificateSpec.dnsNames"` or `"CertificateSpec.dns_names"`).
    pub fn field_attribute(
        mut self,
        path: impl Into<String>,
        attribute: impl Into<String>,
    ) -> Self {
        self.generator = self.generator.field_attribute(path, attribute);
        self
    }

    /// Adds a derive to the generated types `path` names ([`Generator::derive_for`]).
    pub fn derive_for(mut self, path: impl Into<String>, derive: impl Into<String>) -> Self {
        self.generator = self.generator.derive_for(path, derive);
        self
    }

    /// Whether schemas that are not structural, or hold keys that are no schema keywords, fail
    /// the build ([`Generator::strict`]); by default each such spot is a `cargo:warning=` line,
    /// which Cargo shows.
    pub fn strict(mut self, enabled: bool) -> Self {
        self.generator = self.generator.strict(enabled);
        self
    }

    /// The path of the informer-runtime crate in generated code ([`Generator::runtime_crate`]).
    pub fn runtime_crate(mut self, path: impl Into<String>) -> Self {
        self.generator = self.generator.runtime_crate(path);
        self
    }

    /// Generates only the types and their resource impls, without informer and lister aliases,
    /// factory accessors and the `CustomResourceInformers` trait ([`Generator::types_only`],
    /// which says what such code depends on).
    pub fn types_only(mut self, enabled: bool) -> Self {
        self.generator = self.generator.types_only(enabled);
        self
    }

    /// Whether schema nodes that are k8s-openapi's types become those types
    /// ([`Generator::k8s_types`], on by default).
    ///
    /// The Kubernetes version they must be those types in is the one the crate's k8s-openapi
    /// is built for, which k8s-openapi gives build scripts (`DEP_K8S_OPENAPI_*_VERSION`, set
    /// when the crate depends on k8s-openapi directly, as generated code needs), unless
    /// [`k8s_version`](Builder::k8s_version) names one; without either (or for a version
    /// informer-gen does not know), every version k8s-openapi 0.29 offers.
    pub fn k8s_types(mut self, enabled: bool) -> Self {
        self.generator = self.generator.k8s_types(enabled);
        self
    }

    /// Whether each kind served in several versions gets a conversion handler through its
    /// storage version, the hub ([`Generator::conversion_hubs`], off by default): the crate
    /// then writes `From` both ways between each other version and the hub, and depends on
    /// `informer-webhook`.
    pub fn conversion_hubs(mut self, enabled: bool) -> Self {
        self.generator = self.generator.conversion_hubs(enabled);
        self
    }

    /// The Kubernetes version generated code is compiled against ([`Generator::k8s_version`]),
    /// instead of the one k8s-openapi gives the build script.
    pub fn k8s_version(mut self, minor: u32) -> Self {
        self.generator = self.generator.k8s_version(minor);
        self
    }

    /// Whether [`build`](Builder::build) prints which schema nodes became k8s-openapi's types,
    /// and the near misses with the reason ([`Output::explain`](crate::Output::explain)), to
    /// the build script's standard output: Cargo keeps it in the build's `output` file
    /// (`target/debug/build/<crate>-*/output`) and shows it with `cargo build -vv`. Off by
    /// default.
    pub fn explain(mut self, enabled: bool) -> Self {
        self.explain = enabled;
        self
    }

    /// Where to write, instead of the `OUT_DIR` environment variable. The `include!` must then
    /// name the same place.
    pub fn out_dir(mut self, path: impl Into<PathBuf>) -> Self {
        self.out_dir = Some(path.into());
        self
    }

    /// The name of the generated file in the output directory (`custom_resources.rs`).
    pub fn file_name(mut self, name: impl Into<PathBuf>) -> Self {
        self.file_name = name.into();
        self
    }

    /// Whether [`build`](Builder::build) prints `cargo:rerun-if-changed=` for every input file
    /// and directory. On by default when the `CARGO` environment variable is set, as it is for
    /// build scripts.
    ///
    /// Once a build script prints any such line, Cargo reruns it only when a listed path
    /// changes, instead of when anything in the package does: a build script that reads other
    /// files too must print lines for them as well.
    pub fn emit_rerun_if_changed(mut self, enabled: bool) -> Self {
        self.emit_rerun_if_changed = enabled;
        self
    }

    /// Loads the CRDs, generates code and writes it to the output file, returning its path.
    ///
    /// The file is written only when its contents change, so that an unchanged file keeps its
    /// modification time and does not make Cargo rebuild the crate. With
    /// [`emit_rerun_if_changed`](Builder::emit_rerun_if_changed), first prints
    /// `cargo:rerun-if-changed=` for each input, and for each directory input also for every
    /// file in it that is read.
    ///
    /// # Errors
    ///
    /// [`Error::Config`] when no input was given, or when no output directory was set and
    /// `OUT_DIR` is not set either; the errors of [`schema::load`](crate::schema::load) and
    /// [`Generator::generate`]; [`Error::Write`] when the file cannot be written.
    pub fn build(&self) -> Result<PathBuf> {
        let k8s = std::env::vars_os().find_map(|(key, value)| {
            let key = key.to_str()?;
            (key.starts_with("DEP_K8S_OPENAPI_") && key.ends_with("_VERSION")).then_some(value)
        });
        self.build_with(std::env::var_os("OUT_DIR"), k8s.as_ref(), &mut io::stdout().lock())
    }

    /// [`build`](Builder::build), with `OUT_DIR`, `DEP_K8S_OPENAPI_*_VERSION` and standard
    /// output passed in.
    fn build_with(
        &self,
        out_dir_env: Option<OsString>,
        k8s_openapi_version: Option<&OsString>,
        stdout: &mut dyn Write,
    ) -> Result<PathBuf> {
        if self.inputs.is_empty() {
            return Err(Error::Config(
                "no CRD inputs: give Builder::crd a file or a directory".to_owned(),
            ));
        }
        let out_dir = match (&self.out_dir, out_dir_env) {
            (Some(dir), _) => dir.clone(),
            (None, Some(dir)) => PathBuf::from(dir),
            (None, None) => {
                return Err(Error::Config(
                    "OUT_DIR is not set (Cargo sets it for build scripts): run from build.rs, or \
                     give Builder::out_dir"
                        .to_owned(),
                ));
            }
        };
        if self.emit_rerun_if_changed {
            print_rerun_if_changed(&rerun_if_changed_paths(&self.inputs), stdout)
                .map_err(|source| Error::Write { path: PathBuf::from("<stdout>"), source })?;
        }
        let crds = crate::schema::load(&self.inputs)?;
        let mut generator = self.generator.clone();
        if generator.k8s_version.is_none() {
            generator.k8s_version = k8s_openapi_version.and_then(minor_of);
        }
        let output = generator.generate(&crds)?;
        for warning in output.warnings() {
            // One line each: Cargo shows `cargo:warning=` lines, and a newline would end one.
            let line = warning.to_string().replace(['\n', '\r'], " ");
            writeln!(stdout, "cargo:warning={line}")
                .map_err(|source| Error::Write { path: PathBuf::from("<stdout>"), source })?;
        }
        if self.explain {
            stdout
                .write_all(output.explain().as_bytes())
                .map_err(|source| Error::Write { path: PathBuf::from("<stdout>"), source })?;
        }
        let path = out_dir.join(&self.file_name);
        write_file_if_changed(&path, &output.to_file_string())?;
        Ok(path)
    }
}

/// The Kubernetes minor version in k8s-openapi's `DEP_K8S_OPENAPI_*_VERSION` (`0x00_MM_NN_00`
/// as a decimal number: 1.34 is `74240`), if it is one informer-gen knows the types of.
fn minor_of(value: &OsString) -> Option<u32> {
    let number: u32 = value.to_str()?.trim().parse().ok()?;
    let (major, minor) = ((number >> 16) & 0xff, (number >> 8) & 0xff);
    (major == 1 && (crate::OLDEST_MINOR..=crate::NEWEST_MINOR).contains(&minor)).then_some(minor)
}

/// Generates code for the CRDs in `paths` (files or directories) with every default, into
/// `$OUT_DIR/custom_resources.rs`, and returns that path: `Builder::new().crds(paths).build()`.
///
/// # Errors
///
/// As [`Builder::build`].
///
/// # Examples
///
/// In `build.rs`'s `main`:
///
/// ```no_run
/// if let Err(error) = informer_gen::compile_crds(&["crds/"]) {
///     panic!("{error}");
/// }
/// ```
pub fn compile_crds(paths: &[impl AsRef<Path>]) -> Result<PathBuf> {
    Builder::new().crds(paths.iter().map(|path| path.as_ref().to_path_buf())).build()
}

/// Every path a build reads: each input, then for a directory input the files in it that
/// [`schema::load`](crate::schema::load) reads, sorted by name; without repeats. Paths that cannot
/// be read are listed as given (loading them fails, and Cargo reruns a failed build script).
fn rerun_if_changed_paths(inputs: &[PathBuf]) -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = Vec::new();
    let mut add = |path: PathBuf| {
        if !paths.contains(&path) {
            paths.push(path);
        }
    };
    for input in inputs {
        add(input.clone());
        let Ok(entries) = fs::read_dir(input) else { continue };
        let mut files: Vec<PathBuf> = entries
            .filter_map(|entry| entry.ok().map(|entry| entry.path()))
            .filter(|path| {
                path.extension().and_then(|extension| extension.to_str()).is_some_and(|extension| {
                    EXTENSIONS.iter().any(|wanted| extension.eq_ignore_ascii_case(wanted))
                }) && path.is_file()
            })
            .collect();
        files.sort_by(|a, b| a.file_name().cmp(&b.file_name()));
        for file in files {
            add(file);
        }
    }
    paths
}

fn print_rerun_if_changed(paths: &[PathBuf], out: &mut dyn Write) -> io::Result<()> {
    for path in paths {
        writeln!(out, "cargo:rerun-if-changed={}", path.display())?;
    }
    out.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    const CRD: &str = "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  names: {kind: Widget, plural: widgets}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object}
";

    #[test]
    fn out_dir_comes_from_the_setter_then_the_environment_else_an_error() {
        let temp = tempfile::tempdir().unwrap();
        let file = temp.path().join("widgets.yaml");
        fs::write(&file, CRD).unwrap();
        let builder = Builder::new().crd(&file).emit_rerun_if_changed(false);

        let env_dir = temp.path().join("env");
        let path = builder.build_with(Some(env_dir.clone().into()), None, &mut Vec::new()).unwrap();
        assert_eq!(path, env_dir.join("custom_resources.rs"));

        let set_dir = temp.path().join("set");
        let builder = builder.out_dir(&set_dir).file_name("crds.rs");
        let path = builder.build_with(Some(env_dir.into()), None, &mut Vec::new()).unwrap();
        assert_eq!(path, set_dir.join("crds.rs"));
        assert!(fs::read_to_string(path).unwrap().contains("pub struct Widget"));

        let error = Builder::new().crd(&file).build_with(None, None, &mut Vec::new()).unwrap_err();
        assert!(
            matches!(&error, Error::Config(message) if message.starts_with("OUT_DIR is not set"))
        );
    }

    #[test]
    fn rerun_if_changed_lists_inputs_and_the_files_read_from_directories() {
        let temp = tempfile::tempdir().unwrap();
        let dir = temp.path().join("crds");
        fs::create_dir(&dir).unwrap();
        fs::write(dir.join("b.yml"), CRD.replace("widgets", "bs").replace("Widget", "B")).unwrap();
        fs::write(dir.join("a.JSON"), "").unwrap();
        fs::write(dir.join("README.md"), "").unwrap();
        fs::create_dir(dir.join("nested.yaml")).unwrap();
        let file = temp.path().join("widgets.yaml");
        fs::write(&file, CRD).unwrap();

        let mut printed = Vec::new();
        let inputs = [dir.clone(), file.clone(), dir.join("b.yml")];
        print_rerun_if_changed(&rerun_if_changed_paths(&inputs), &mut printed).unwrap();
        let expected = [dir.clone(), dir.join("a.JSON"), dir.join("b.yml"), file]
            .iter()
            .map(|path| format!("cargo:rerun-if-changed={}\n", path.display()))
            .collect::<Vec<_>>()
            .concat();
        assert_eq!(String::from_utf8(printed).unwrap(), expected);
    }

    #[test]
    fn schemas_that_are_not_structural_are_cargo_warnings_unless_strict() {
        let temp = tempfile::tempdir().unwrap();
        let file = temp.path().join("widgets.yaml");
        let loose = CRD.replace(
            "openAPIV3Schema: {type: object}",
            "openAPIV3Schema: {type: object, properties: {tags: {type: array}}}",
        );
        fs::write(&file, loose).unwrap();
        let builder = Builder::new().crd(&file).out_dir(temp.path()).emit_rerun_if_changed(false);
        let mut printed = Vec::new();
        builder.build_with(None, None, &mut printed).unwrap();
        assert_eq!(
            String::from_utf8(printed).unwrap(),
            format!(
                "cargo:warning={}: spec.versions[0].schema.openAPIV3Schema.properties.tags: an \
                 array without `items` (a structural schema says what the items are): items of \
                 free JSON (Vec<serde_json::Value>)\n",
                file.display()
            )
        );
        let error = builder.strict(true).build_with(None, None, &mut Vec::new()).unwrap_err();
        assert!(matches!(error, Error::NotStructural { ref warnings } if warnings.len() == 1));
    }

    #[test]
    fn the_kubernetes_version_comes_from_k8s_openapi_unless_set_and_explain_prints_the_listing() {
        // HTTPGetAction's `protocol` is new in Kubernetes 1.37.
        let check = CRD.replace(
            "openAPIV3Schema: {type: object}",
            "openAPIV3Schema: {type: object, properties: {check: {type: object, required: [port], \
             properties: {host: {type: string}, path: {type: string}, port: \
             {x-kubernetes-int-or-string: true}, protocol: {type: string}, scheme: {type: string}}}}}",
        );
        let temp = tempfile::tempdir().unwrap();
        let file = temp.path().join("widgets.yaml");
        fs::write(&file, check).unwrap();
        let builder = Builder::new().crd(&file).out_dir(temp.path()).emit_rerun_if_changed(false);
        let mapped = "::k8s_openapi::api::core::v1::HTTPGetAction";
        // What k8s-openapi's build script publishes: 0x00_01_25_00 for 1.37, 0x00_01_24_00 for 1.36.
        let generated = |builder: &Builder, version: Option<&str>| {
            let path = builder
                .build_with(None, version.map(OsString::from).as_ref(), &mut Vec::new())
                .unwrap();
            fs::read_to_string(path).unwrap()
        };
        let code = generated(&builder, Some("75008"));
        assert!(code.contains(mapped));
        // The field's docs name the type it maps to, for a reader without `--explain`.
        assert!(
            code.contains(
                "/// Kubernetes' own type, k8s-openapi's `api::core::v1::HTTPGetAction`: the schema \
                 is that type's (`--no-k8s-types` generates a struct instead).\n"
            ),
            "{code}"
        );
        assert!(!generated(&builder, Some("74752")).contains(mapped));
        // Without it (not run by Cargo), or for a version informer-gen does not know: every version.
        assert!(!generated(&builder, None).contains(mapped));
        assert!(!generated(&builder, Some("75264")).contains(mapped));
        let set = builder.clone().k8s_version(37);
        assert!(generated(&set, Some("74752")).contains(mapped));
        assert!(!generated(&set.clone().k8s_types(false), Some("75008")).contains(mapped));

        let mut printed = Vec::new();
        builder.explain(true).build_with(None, Some(&"75008".into()), &mut printed).unwrap();
        let printed = String::from_utf8(printed).unwrap();
        assert!(
            printed.starts_with("mapped to k8s-openapi's types: 1\n  ")
                && printed
                    .contains(".properties.check -> ::k8s_openapi::api::core::v1::HTTPGetAction\n"),
            "{printed}"
        );
    }

    #[test]
    fn no_inputs_is_a_config_error() {
        let error = Builder::new().out_dir("unused").build().unwrap_err();
        assert!(matches!(error, Error::Config(_)), "{error}");
    }
}
