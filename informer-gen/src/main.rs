//! `informer-gen`, the command-line front end: parses arguments, then hands over to the library
//! ([`informer_gen::schema::load`], [`Generator`], [`Output::write_module_tree`]).
//!
//! `informer-gen crd FILE...` prints one self-contained Rust file to standard output;
//! `--out DIR` writes a module tree instead; `--list` prints what was generated, one
//! tab-separated line per resource. Errors go to standard error as `error: …`, with exit status
//! 1 (2 for a bad command line).
//!
//! The CRDs come from files, from standard input (`-`, in `stdin`), or from an API server
//! (`--from-cluster`, `--all-from-cluster`, in `cluster`).

#[path = "cli/cluster.rs"]
mod cluster;
#[path = "cli/stdin.rs"]
mod stdin;

use std::fmt::Write as _;
use std::io::{self, Write as _};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};
use informer_gen::schema::Loaded;
use informer_gen::{Generator, Output, Result, Versions, Visibility};

/// Generates typed Kubernetes informers, listers and resource types
#[derive(Debug, Parser)]
#[command(name = "informer-gen", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
#[allow(clippy::doc_markdown, reason = "doc comments are --help text, shown verbatim")]
enum Command {
    /// Generates Rust types, informer and lister aliases and factory accessors from
    /// CustomResourceDefinitions
    ///
    /// Without --out, prints one self-contained Rust file to standard output. With --out,
    /// writes a module tree (mod.rs, <group>/mod.rs, <group>/<version>.rs) to DIR, replacing
    /// what informer-gen wrote there before; DIR must not hold other files.
    ///
    /// The CRDs come from files, standard input (-) or a live API server (--from-cluster,
    /// --all-from-cluster). The generated code adds its accessors to SharedInformerFactory
    /// through the CustomResourceInformers trait, which must be imported where they are
    /// called: use crate::crds::CustomResourceInformers as _;
    Crd(CrdArgs),
}

#[derive(Debug, clap::Args)]
#[allow(clippy::struct_excessive_bools, reason = "one field per command-line flag")]
#[allow(clippy::doc_markdown, reason = "doc comments are --help text, shown verbatim")]
struct CrdArgs {
    /// CRD files (YAML, multi-document YAML or JSON) or directories of *.yaml, *.yml and *.json
    /// files; - reads standard input (JSON if it starts with {, else YAML; at most 64 MiB)
    #[arg(value_name = "FILE", required_unless_present = "cluster")]
    files: Vec<PathBuf>,

    /// Writes a module tree to DIR instead of printing one file
    #[arg(short, long, value_name = "DIR")]
    out: Option<PathBuf>,

    /// Versions to generate: served, storage, or a comma-separated list of version names
    #[arg(
        long,
        value_name = "served|storage|V1,V2",
        default_value = "served",
        value_parser = parse_versions
    )]
    versions: Versions,

    /// Adds a derive to every generated type (repeatable, or comma-separated)
    ///
    /// Every type already derives Clone, Debug, PartialEq (and Default where it can). Eq, Hash,
    /// PartialOrd, Ord and Copy are refused: ObjectMeta, NumberOrQuantity, IntOrString, f64 or
    /// serde_json::Value lack them; for JsonSchema use --schemars. Other crates' derives are passed through.
    #[arg(long, value_name = "PATH", value_delimiter = ',')]
    derive: Vec<String>,

    /// Adds ATTR to the generated types PATH names (repeatable)
    ///
    /// PATH is ".", every type; a type name, in any group and version (CertificateSpec); or
    /// group module, version and name (cert_manager::v1::CertificateSpec). ATTR is one or more
    /// outer attributes (#[allow(dead_code)]), written verbatim. A PATH that matches nothing is
    /// an error.
    #[arg(long, value_name = "PATH=ATTR", value_parser = parse_hook)]
    type_attribute: Vec<(String, String)>,

    /// Adds ATTR to the generated fields PATH names (repeatable)
    ///
    /// PATH is a type path as for --type-attribute, a ".", and the field's JSON or Rust name
    /// (CertificateSpec.dnsNames or CertificateSpec.dns_names).
    #[arg(long, value_name = "PATH=ATTR", value_parser = parse_hook)]
    field_attribute: Vec<(String, String)>,

    /// Adds DERIVE to the generated types PATH names (repeatable), for derives not every type
    /// can take (--derive-for CertificateSpecPrivateKey=Eq)
    #[arg(long, value_name = "PATH=DERIVE", value_parser = parse_hook)]
    derive_for: Vec<(String, String)>,

    /// Derives schemars::JsonSchema for every type
    #[arg(long)]
    schemars: bool,

    /// Leaves out the doc comments made from schema descriptions
    #[arg(long)]
    no_docs: bool,

    /// Visibility of generated items
    #[arg(long, value_enum, default_value_t = VisibilityArg::Pub)]
    visibility: VisibilityArg,

    /// Makes schemas that are not structural, or keys that are no schema keywords, an error
    /// instead of a warning
    ///
    /// Without it, each such spot (an array without items or with tuple items, a node without
    /// type or with an unknown one, a property only inside oneOf, properties beside
    /// additionalProperties, a CRD with preserveUnknownFields, a v1beta1 file, a key that is no
    /// schema keyword) is printed to
    /// standard error as `warning: FILE: PATH: ...` and generated with the loosest faithful Rust
    /// type.
    #[arg(long)]
    strict: bool,

    /// Generates a struct for every object schema, even where a schema is one of k8s-openapi's
    /// types (Probe, Toleration, Condition, ...), which it otherwise becomes
    #[arg(long)]
    no_k8s_types: bool,

    /// Makes each kind's storage version the hub of its other versions: the hub implements
    /// informer-webhook's `Hub`, a conversion handler that converts any served version to any
    /// other through `From` conversions to and from the hub, which your crate writes (and
    /// depends on informer-webhook)
    #[arg(long)]
    conversion_hubs: bool,

    /// The Kubernetes version the generated code is compiled against (the k8s-openapi version
    /// feature of its crate, 1.33 to 1.37): a schema becomes a k8s-openapi type only where it is
    /// that type in this version; without it, in every version
    #[arg(long, value_name = "1.MINOR", value_parser = parse_k8s_version)]
    k8s_version: Option<u32>,

    /// Prints which schemas became k8s-openapi's types, and the near misses with the reason,
    /// instead of the code (with --out, writes the tree too)
    #[arg(long)]
    explain: bool,

    /// Path of the informer-runtime crate in generated code
    #[arg(long, value_name = "PATH", default_value = "::informer_runtime")]
    runtime_crate: String,

    /// Prints one tab-separated line per generated resource instead of the code: group,
    /// version, kind, plural, namespaced|cluster, Rust path, CRD file (with --out, writes the
    /// tree too)
    #[arg(long)]
    list: bool,

    /// Generates only the Rust types and their resource impls (k8s-openapi's Resource,
    /// ListableResource and Metadata; crd()), without informer and lister aliases, factory
    /// accessors and the CustomResourceInformers trait; the code then needs k8s-openapi, serde
    /// and serde_json, and informer-runtime (without default features) only where a schema has
    /// quantities (informer_runtime::quantity::NumberOrQuantity)
    #[arg(long)]
    types_only: bool,

    #[command(flatten)]
    cluster: cluster::ClusterArgs,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum VisibilityArg {
    /// pub items, usable from other crates
    Pub,
    /// pub(crate) items, usable only in the crate that includes them
    Crate,
}

fn parse_versions(value: &str) -> Result<Versions, String> {
    match value {
        "served" => Ok(Versions::Served),
        "storage" => Ok(Versions::Storage),
        _ => {
            let names: Vec<String> = value.split(',').map(|name| name.trim().to_owned()).collect();
            if names.iter().any(String::is_empty) {
                return Err("expected served, storage, or version names separated by commas".into());
            }
            Ok(Versions::Only(names))
        }
    }
}

/// `1.34` -> 34.
fn parse_k8s_version(value: &str) -> Result<u32, String> {
    value
        .strip_prefix("1.")
        .and_then(|minor| minor.parse().ok())
        .ok_or_else(|| format!("expected a Kubernetes version such as 1.34, not {value:?}"))
}

/// `PATH=VALUE`, split at the first `=` (paths have none; attributes may).
fn parse_hook(value: &str) -> Result<(String, String), String> {
    match value.split_once('=') {
        Some((path, value)) if !path.is_empty() && !value.is_empty() => {
            Ok((path.to_owned(), value.to_owned()))
        }
        _ => Err("expected PATH=VALUE, as in CertificateSpec=#[allow(dead_code)]".into()),
    }
}

fn main() -> ExitCode {
    let Command::Crd(args) = Cli::parse().command;
    let text = match crd(&args) {
        Ok(text) => text,
        Err(error) => {
            eprintln!("error: {error}");
            return ExitCode::FAILURE;
        }
    };
    match io::stdout().lock().write_all(text.as_bytes()) {
        // A closed pipe (`| head`) is the reader's choice, not a failure.
        Err(error) if error.kind() != io::ErrorKind::BrokenPipe => {
            eprintln!("error: cannot write to standard output: {error}");
            ExitCode::FAILURE
        }
        _ => ExitCode::SUCCESS,
    }
}

/// Runs `informer-gen crd`: everything is generated in memory before anything is written, so an
/// error leaves `--out` as it was. Returns what to print.
fn crd(args: &CrdArgs) -> Result<String, Box<dyn std::error::Error>> {
    let crds = inputs(args)?;
    let mut generator = Generator::new()
        .types_only(args.types_only)
        .versions(args.versions.clone())
        .schemars(args.schemars)
        .docs(!args.no_docs)
        .visibility(match args.visibility {
            VisibilityArg::Pub => Visibility::Public,
            VisibilityArg::Crate => Visibility::Crate,
        })
        .runtime_crate(&args.runtime_crate)
        .strict(args.strict)
        .k8s_types(!args.no_k8s_types)
        .conversion_hubs(args.conversion_hubs);
    if let Some(minor) = args.k8s_version {
        generator = generator.k8s_version(minor);
    }
    for derive in &args.derive {
        generator = generator.derive(derive);
    }
    for (path, attribute) in &args.type_attribute {
        generator = generator.type_attribute(path, attribute);
    }
    for (path, attribute) in &args.field_attribute {
        generator = generator.field_attribute(path, attribute);
    }
    for (path, derive) in &args.derive_for {
        generator = generator.derive_for(path, derive);
    }
    let output = generator.generate(&crds)?;
    for warning in output.warnings() {
        eprintln!("warning: {warning}");
    }
    if let Some(dir) = &args.out {
        output.write_module_tree(dir)?;
    }
    Ok(if args.list || args.explain {
        let mut text = if args.list { list(&output) } else { String::new() };
        if args.explain {
            text.push_str(&output.explain());
        }
        text
    } else if args.out.is_some() {
        String::new()
    } else {
        output.to_file_string()
    })
}

/// The CRDs of the files and standard input (`-`, once) in the order given, or of the cluster.
fn inputs(args: &CrdArgs) -> Result<Vec<Loaded>, Box<dyn std::error::Error>> {
    if args.cluster.selected() {
        return Ok(cluster::load(&args.cluster)?);
    }
    if args.files.iter().filter(|path| stdin::is_stdin(path)).count() > 1 {
        return Err("- (standard input) can be read only once".into());
    }
    let mut crds = Vec::new();
    for path in &args.files {
        if stdin::is_stdin(path) {
            crds.extend(stdin::load()?);
        } else {
            crds.extend(informer_gen::schema::load(std::slice::from_ref(path))?);
        }
    }
    Ok(crds)
}

/// The `--list` lines.
fn list(output: &Output) -> String {
    let mut lines = String::new();
    for resource in output.resources() {
        // Writing to a `String` does not fail.
        let _ = writeln!(
            lines,
            "{}\t{}\t{}\t{}\t{}\t{}\t{}",
            resource.group,
            resource.version,
            resource.kind,
            resource.plural,
            if resource.namespaced { "namespaced" } else { "cluster" },
            resource.rust_path,
            resource.file.display(),
        );
    }
    lines
}
