//! What can go wrong while generating, each error naming the file and, where there is one, the
//! path in the document (`spec.versions[1].schema.openAPIV3Schema.properties.spec`).

use std::fmt;
use std::io;
use std::path::PathBuf;

/// An error from reading inputs, converting schemas or writing output.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An input file or directory could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Read {
        /// The file or directory.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: io::Error,
    },
    /// A document is not valid YAML or JSON, or does not have the shape of a CRD.
    #[error("{}{}: {path}: {message}", file.display(), document_suffix(*document))]
    Parse {
        /// The file.
        file: PathBuf,
        /// The index of the document in a multi-document YAML file (0 for the first).
        document: usize,
        /// Where in the document (`spec.versions[0].schema`), or `.` for the document itself.
        path: String,
        /// What is wrong, with a line and column where the parser knows them.
        message: String,
    },
    /// A document is valid, but not something the generator can use (not a CRD, a version without
    /// a schema, a schema construct that has no faithful Rust representation).
    #[error("{}{}: {path}: {message}", file.display(), document_suffix(*document))]
    Schema {
        /// The file.
        file: PathBuf,
        /// The index of the document in a multi-document YAML file (0 for the first).
        document: usize,
        /// Where in the document
        /// (`spec.versions[1].schema.openAPIV3Schema.properties.spec.properties.x`).
        path: String,
        /// What is wrong, and what would be accepted instead.
        message: String,
    },
    /// Generated output could not be written.
    #[error("cannot write {}: {source}", path.display())]
    Write {
        /// The file or directory.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: io::Error,
    },
    /// A derive was asked for every generated type that some of them cannot take: a root type's
    /// `ObjectMeta`, a `NumberOrQuantity`, an `f64` or a `serde_json::Value` does not implement the trait.
    /// The generated code would not compile; the error says so at generation time instead.
    #[error(
        "derive `{derive}` cannot be added to every generated type: {reason}; add it only to the \
         types that can take it (Generator::derive_for, --derive-for)"
    )]
    Derive {
        /// The derive as it was given (`Eq`, `::std::hash::Hash`).
        derive: String,
        /// Which generated field types lack the trait.
        reason: &'static str,
    },
    /// A hook ([`Generator::type_attribute`](crate::Generator::type_attribute),
    /// [`field_attribute`](crate::Generator::field_attribute),
    /// [`derive_for`](crate::Generator::derive_for)) cannot be applied: its path is malformed or
    /// matches no generated type or field, or its attribute does not parse.
    #[error("{setter}({path:?}): {message}")]
    Hook {
        /// The setter that added the hook (`type_attribute`).
        setter: &'static str,
        /// The path as given (`CertificateSpec.dnsNames`).
        path: String,
        /// What is wrong, and what would be accepted.
        message: String,
    },
    /// The generator was configured in a way it cannot work with.
    #[error("{0}")]
    Config(String),
    /// [`Generator::strict`](crate::Generator::strict) is on and some schemas are not
    /// structural or hold keys that are no schema keywords: every spot that would have been a
    /// [`Warning`], one per line.
    #[error(
        "{} schema spot(s) are not structural or not understood (strict mode):\n{}\nfix those \
         schemas, or generate without strict mode to get the loosest faithful types",
        warnings.len(),
        lines(warnings)
    )]
    NotStructural {
        /// What generating without strict mode would have warned about.
        warnings: Vec<Warning>,
    },
}

/// A spot of a schema that is not structural (arrays without `items`, a `type` left out, an
/// unknown `type`, a property only inside `oneOf`, `properties` beside `additionalProperties`,
/// pruning turned off for the whole CRD) or a CRD file in `apiextensions.k8s.io/v1beta1`, which
/// was generated with the loosest faithful Rust type: free JSON where the schema says nothing,
/// and a map keeping unknown fields where the API server keeps them; or a key in a generated
/// version's schema that is no schema keyword (most often a property written beside
/// `properties` instead of inside), dropped as the API server's decoder drops it.
///
/// These are the spots that change the Rust types or are most likely mistakes, not the API
/// server's whole structural validation: a `description` inside `oneOf`, say, is no warning.
///
/// Displayed as `file: path: message`, like [`Error::Schema`]. [`Output::warnings`] lists them;
/// the command line prints them to standard error, and a build script's
/// [`Builder`](crate::Builder) as `cargo:warning=` lines.
///
/// [`Output::warnings`]: crate::Output::warnings
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Warning {
    /// The file.
    pub file: PathBuf,
    /// The index of the document in a multi-document YAML file (0 for the first).
    pub document: usize,
    /// Where in the document (`spec.versions[0].schema.openAPIV3Schema.properties.spec`).
    pub path: String,
    /// What is not structural and which Rust type it became, or which key was dropped.
    pub message: String,
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Warning { file, document, path, message } = self;
        write!(f, "{}{}: {path}: {message}", file.display(), document_suffix(*document))
    }
}

fn lines(warnings: &[Warning]) -> String {
    warnings.iter().map(|w| format!("  {w}")).collect::<Vec<_>>().join("\n")
}

fn document_suffix(document: usize) -> String {
    if document == 0 { String::new() } else { format!(" (document {})", document + 1) }
}

/// The result type of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
