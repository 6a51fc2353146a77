//! Generates every CRD of the repository's corpus (`tests/fixtures/crd-corpus`) into one module,
//! and the CRDs whose schemas are not structural (`tests/fixtures/crd-non-structural`) into
//! another, each with a table of round-trip functions; and a few of the corpus again with the
//! generator's hooks (every derive every type can take), and as types only, whose output must
//! compile too.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    let fixtures = manifest.join("../fixtures");
    let corpus = fixtures.join("crd-corpus");
    let non_structural = fixtures.join("crd-non-structural");
    for dir in [&corpus, &non_structural] {
        println!("cargo::rerun-if-changed={}", dir.display());
        // The corpus is part of the repository: its absence is a broken checkout, not a reason
        // to build an empty crate whose tests pass without testing anything.
        if !dir.is_dir() {
            eprintln!("error: the CRD fixtures {} are absent", dir.display());
            std::process::exit(1);
        }
    }
    let out = PathBuf::from(std::env::var_os("OUT_DIR").unwrap_or_default());
    let generated = load(&corpus).and_then(|corpus| {
        let non_structural = load(&non_structural)?;
        // Every CRD of the corpus is installable on today's API server, so structural: strict
        // mode makes a warning about one of them (a false alarm) fail the build.
        generate(&corpus, &out, ("corpus", true), "RESOURCES", "with_resources")?;
        generate(
            &non_structural,
            &out,
            ("non_structural", false),
            "NON_STRUCTURAL_RESOURCES",
            "with_non_structural_resources",
        )?;
        hooks(&pick(&corpus, &HOOKS_CRDS), &out)?;
        let mut loose = non_structural;
        loose.extend(pick(&corpus, &["cert-manager-issuer.yaml", "karpenter-nodepool.yaml"]));
        with_schemars(&loose, &out)
    });
    if let Err(e) = generated {
        // A build script's error is the generator's error message, named with file and path.
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

type Loaded = informer_gen::schema::Loaded;
type Result<T = ()> = std::result::Result<T, Box<dyn std::error::Error>>;

/// Every CRD of the `*.yaml` files in `dir`, read once for every module generated from them;
/// Cargo is told to run the script again when one changes.
fn load(dir: &Path) -> Result<Vec<Loaded>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    files.sort();
    for file in &files {
        println!("cargo::rerun-if-changed={}", file.display());
    }
    Ok(informer_gen::schema::load(&files)?)
}

/// The CRDs of `crds` read from the files `names`.
fn pick(crds: &[Loaded], names: &[&str]) -> Vec<Loaded> {
    let named = |crd: &&Loaded| {
        crd.file.file_name().and_then(|f| f.to_str()).is_some_and(|f| names.contains(&f))
    };
    crds.iter().filter(named).cloned().collect()
}

/// Generates `crds` into `<module>.rs` (in strict mode if `strict`), and into
/// `<module>_table.rs` a table `table` of round-trip functions and a macro `with` listing every
/// generated type.
fn generate(
    crds: &[Loaded],
    out: &Path,
    (module, strict): (&str, bool),
    table_name: &str,
    with: &str,
) -> Result {
    let output = informer_gen::Generator::new().strict(strict).generate(crds)?;
    write_if_changed(&out.join(format!("{module}.rs")), &output.to_file_string())?;
    // The same list twice: as a table of function pointers, and as tokens, for tests that
    // instantiate generic code for every generated type (a table of function pointers cannot
    // name functions of the test crate).
    let mut rows = String::new();
    let mut types = String::new();
    for r in output.resources() {
        let file = r.file.file_name().and_then(|f| f.to_str()).unwrap_or_default();
        writeln!(
            rows,
            "    Resource {{ file: {file:?}, group: {:?}, version: {:?}, kind: {:?}, round_trip: round_trip::<{module}::{}> }},",
            r.group, r.version, r.kind, r.rust_path
        )?;
        writeln!(
            types,
            "            ({file:?}, {:?}, $crate::{module}::{}),",
            r.version, r.rust_path
        )?;
    }
    let table = format!(
        "/// Every generated resource: (file, group, version, kind, round trip).\n\
         pub static {table_name}: &[Resource] = &[\n{rows}];\n\n\
         /// Calls `$callback! {{ (file, version, Type), ... }}` with every generated resource type.\n\
         #[macro_export]\nmacro_rules! {with} {{\n    ($callback:ident) => {{\n        $callback! {{\n\
         {types}        }}\n    }};\n}}\n"
    );
    write_if_changed(&out.join(format!("{module}_table.rs")), &table)?;
    Ok(())
}

/// CRDs of the corpus generated again with the hooks: `ObjectMeta`, `NumberOrQuantity`,
/// `IntOrString`, JSON values, maps and numbers between them.
const HOOKS_CRDS: [&str; 4] = [
    "cert-manager-certificate.yaml",
    "istio-envoyfilter.yaml",
    "keda-scaledobject.yaml",
    "strimzi-kafkatopic.yaml",
];

/// Every derive every generated type takes (`Generator::derive`'s list), and attributes and
/// derives on chosen types and fields, into `hooks.rs`; and the same CRDs as types only.
fn hooks(crds: &[Loaded], out: &Path) -> Result {
    // Attributes and derives on chosen types and fields, as a user's build script adds them.
    let mut generator = informer_gen::Generator::new()
        .type_attribute(".", "#[allow(dead_code)]")
        .type_attribute("cert_manager::v1::Certificate", r#"#[doc(alias = "cert")]"#)
        .field_attribute("CertificateSpec.dnsNames", r#"#[doc = "Hooked: the SANs."]"#)
        .field_attribute("CertificateSpec.secret_name", "#[allow(clippy::struct_field_names)]")
        .derive_for("CertificateSpecPrivateKey", "Eq")
        .derive_for("cert_manager::v1::CertificateSpecPrivateKey", "::std::hash::Hash");
    for derive in
        ["Clone", "Debug", "PartialEq", "Default", "::serde::Serialize", "::serde::Deserialize"]
    {
        generator = generator.derive(derive);
    }
    let output = generator.generate(crds)?;
    write_if_changed(&out.join("hooks.rs"), &output.to_file_string())?;
    // The same CRDs as types only (`--types-only`): no informers, listers or accessors.
    let output = informer_gen::Generator::new().types_only(true).generate(crds)?;
    write_if_changed(&out.join("types_only.rs"), &output.to_file_string())?;
    Ok(())
}

/// `crds` (the CRDs whose schemas are not structural and two of the corpus: quantities in
/// maps, base64 strings) generated with `Generator::schemars(true)` into `schemars.rs`: every
/// type derives `JsonSchema`, which must compile.
fn with_schemars(crds: &[Loaded], out: &Path) -> Result {
    let output = informer_gen::Generator::new().schemars(true).generate(crds)?;
    write_if_changed(&out.join("schemars.rs"), &output.to_file_string())?;
    Ok(())
}

fn write_if_changed(path: &Path, text: &str) -> std::io::Result<()> {
    if std::fs::read_to_string(path).is_ok_and(|old| old == text) {
        return Ok(());
    }
    std::fs::write(path, text)
}
