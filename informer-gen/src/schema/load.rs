//! Reading CRD files: files and directories, multi-document YAML or JSON, `List`s of CRDs; each
//! document checked to be an `apiextensions.k8s.io/v1` `CustomResourceDefinition` whose served
//! versions all have a schema (a `v1beta1` one is converted to `v1` first, with a warning, as
//! the API server converts it).
//!
//! A YAML document is first read into a [`serde_json::Value`], the way the API server converts
//! YAML to JSON: YAML 1.2 scalars (a bare `=` is the string `"="`, `yes` is a string, not a
//! boolean), merge keys (`<<`) applied, scalar mapping keys turned into strings (`80:` is the key
//! `"80"`), tags dropped. `kind` and `apiVersion` are checked on that value, then it is
//! deserialised into a [`CustomResourceDefinition`], tracking the path so that a malformed field
//! is reported where it is (`spec.versions[1].schema.openAPIV3Schema.properties.spec.type`).
//! Only when that fails is the document parsed a second time, straight from the text, to find the
//! line and column of the error.

use std::fmt::{self, Write as _};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

use super::crd::{API_VERSION, CustomResourceDefinition};
use super::openapi;
use super::v1beta1;
use crate::error::{Error, Result, Warning};

/// The `kind` of a CRD.
const KIND: &str = "CustomResourceDefinition";
/// File name extensions read from a directory (compared without regard to case).
const EXTENSIONS: [&str; 3] = ["yaml", "yml", "json"];

/// One CRD read from a file.
#[derive(Debug, Clone)]
pub struct Loaded {
    /// The file it came from.
    pub file: PathBuf,
    /// Its index among the file's YAML documents (0 for the first), counting empty documents;
    /// the CRDs of a `List` share the index of the list's document. Always 0 in a JSON file.
    pub document: usize,
    /// The CRD.
    pub crd: CustomResourceDefinition,
    /// The CRD to install: its `apiVersion`, `kind`, `metadata.name` and `spec` as read (the
    /// rest of `metadata`, and `status`, left out), as JSON. Generated root types return it
    /// from `crd()`.
    pub manifest: Value,
    /// What reading it found to warn about: an `apiextensions.k8s.io/v1beta1` CRD read as v1.
    /// The generator adds them to [`Output::warnings`](crate::Output::warnings).
    pub warnings: Vec<Warning>,
}

impl Loaded {
    /// A warning for every key in the schema of version `index` that is no schema keyword. The
    /// API server's decoder drops such a key (or refuses the CRD under strict field validation,
    /// kubectl's default, outside `items` and `additionalProperties`), and serde drops it here;
    /// it is most often a mistake.
    pub(crate) fn unknown_keywords(&self, index: usize) -> Vec<Warning> {
        let path = format!("spec.versions[{index}].schema.openAPIV3Schema");
        let Some(schema) =
            self.manifest.pointer(&format!("/spec/versions/{index}/schema/openAPIV3Schema"))
        else {
            return Vec::new();
        };
        let mut unknown = Vec::new();
        openapi::unknown_keywords(schema, &path, &mut unknown);
        unknown.sort();
        let dropped = "the API server drops it (or refuses the CRD under strict field validation, \
                       kubectl's default), and so does the generator";
        unknown
            .into_iter()
            .map(|(path, keyword)| Warning {
                file: self.file.clone(),
                document: self.document,
                path: format!("{path}.{}", openapi::path_segment(&keyword)),
                message: if keyword.starts_with("x-") {
                    format!("{keyword:?} is no extension CRD schemas have: {dropped}")
                } else if openapi::is_foreign_keyword(&keyword) {
                    format!(
                        "{keyword:?} is a keyword of OpenAPI or JSON Schema that CRD schemas do \
                         not have: {dropped}"
                    )
                } else {
                    format!(
                        "{keyword:?} is no schema keyword: {dropped}; is it a property outside \
                         `properties`, or a keyword indented one level off?"
                    )
                },
            })
            .collect()
    }
}

/// Reads every CRD in `paths`: files (YAML, multi-document YAML or JSON) and directories (their
/// `*.yaml`, `*.yml` and `*.json` files, sorted by name, not recursive), in the order given.
///
/// A file whose name ends in `.json` is parsed as one JSON document, any other file as YAML
/// (see [`parse_str`] for what a document may hold).
///
/// # Errors
///
/// [`Error::Read`] for a path that cannot be read, or a directory with no `*.yaml`, `*.yml` or
/// `*.json` file; otherwise the first error of [`parse_str`] among the files.
pub fn load(paths: &[impl AsRef<Path>]) -> Result<Vec<Loaded>> {
    let mut loaded = Vec::new();
    for path in paths {
        let path = path.as_ref();
        let metadata = fs::metadata(path).map_err(|source| read_error(path, source))?;
        if metadata.is_dir() {
            for file in directory_files(path)? {
                loaded.extend(load_file(&file)?);
            }
        } else {
            loaded.extend(load_file(path)?);
        }
    }
    Ok(loaded)
}

/// Parses the CRDs in `text`, reporting errors against `file`.
///
/// `text` is JSON if `file`'s name ends in `.json`, and otherwise YAML, possibly several
/// documents separated by `---`. Empty documents (a trailing `---`) are skipped. Every other
/// document must be an `apiextensions.k8s.io/v1` `CustomResourceDefinition` (or a `v1beta1`
/// one, converted to `v1`), or a `List` (or `CustomResourceDefinitionList`) whose `items` are.
///
/// # Errors
///
/// - [`Error::Parse`] at path `.` for text that is not valid YAML or JSON, with the parser's
///   line and column; at the path of the field for a document that does not have the shape of a
///   CRD (`spec.versions[0].served`), with a line and column where one can be found.
/// - [`Error::Schema`] at `kind` for a document that is not a CRD, at `apiVersion` for a CRD
///   that is neither `apiextensions.k8s.io/v1` nor `v1beta1` (read as `v1`, with a
///   [`Warning`] in [`Loaded::warnings`]), and at `spec.versions[N].schema.openAPIV3Schema` for a
///   served version without a schema. Paths inside a `List` start with `items[N].`.
///
/// # Examples
///
/// ```
/// use std::path::Path;
///
/// let yaml = "
/// apiVersion: apiextensions.k8s.io/v1
/// kind: CustomResourceDefinition
/// metadata: {name: widgets.example.com}
/// spec:
///   group: example.com
///   names: {kind: Widget, plural: widgets}
///   scope: Namespaced
///   versions:
///   - name: v1
///     served: true
///     storage: true
///     schema:
///       openAPIV3Schema: {type: object}
/// ";
/// let loaded = informer_gen::schema::parse_str(Path::new("widgets.yaml"), yaml).unwrap();
/// assert_eq!(loaded[0].crd.spec.names.kind, "Widget");
///
/// let error = informer_gen::schema::parse_str(Path::new("cm.yaml"), "apiVersion: v1\nkind: ConfigMap\n")
///     .unwrap_err();
/// assert_eq!(error.to_string(), "cm.yaml: kind: a ConfigMap, not a CustomResourceDefinition");
/// ```
pub fn parse_str(file: &Path, text: &str) -> Result<Vec<Loaded>> {
    parse_str_as(file, text, Format::of_file(file))
}

/// The syntax of a CRD text: what [`parse_str_as`] parses it as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Format {
    /// YAML, possibly several documents separated by `---`.
    Yaml,
    /// One JSON document.
    Json,
}

impl Format {
    /// The format [`load`] and [`parse_str`] take `file` to be in: JSON if its name ends in
    /// `.json` (in any case), YAML otherwise.
    #[must_use]
    pub fn of_file(file: &Path) -> Self {
        if is_json(file) { Self::Json } else { Self::Yaml }
    }

    /// The format of a text that has no file name (standard input): JSON if its first
    /// character other than white space is `{`, YAML otherwise. (A YAML document that starts
    /// with a flow mapping, `{apiVersion: ...}`, is rare enough to be taken for JSON.)
    ///
    /// ```
    /// use informer_gen::schema::Format;
    /// assert_eq!(Format::of_text("\n  {\"kind\": \"CustomResourceDefinition\"}"), Format::Json);
    /// assert_eq!(Format::of_text("---\nkind: CustomResourceDefinition\n"), Format::Yaml);
    /// ```
    #[must_use]
    pub fn of_text(text: &str) -> Self {
        if text.trim_start().starts_with('{') { Self::Json } else { Self::Yaml }
    }
}

/// [`parse_str`] with the format given instead of taken from `file`'s name: for text that
/// comes from elsewhere than a file (standard input, an API server), where `file` only names
/// the source in errors and in [`Loaded::file`] (`<stdin>`).
///
/// # Errors
///
/// As [`parse_str`].
pub fn parse_str_as(file: &Path, text: &str, format: Format) -> Result<Vec<Loaded>> {
    let source = Source { file, text, json: format == Format::Json };
    let mut loaded = Vec::new();
    if source.json {
        let value: Value = serde_json::from_str(text)
            .map_err(|error| source.parse_error(0, ".".to_owned(), error.to_string()))?;
        source.document(0, value, &mut loaded)?;
    } else {
        for (document, deserializer) in serde_yaml_ng::Deserializer::from_str(text).enumerate() {
            let mut yaml = serde_yaml_ng::Value::deserialize(deserializer)
                .and_then(|mut yaml| yaml.apply_merge().map(|()| yaml))
                .map_err(|error| source.parse_error(document, ".".to_owned(), error.to_string()))?;
            let value = yaml_to_json(&mut yaml)
                .map_err(|error| source.parse_error(document, error.path(), error.message))?;
            if !value.is_null() {
                source.document(document, value, &mut loaded)?;
            }
        }
    }
    Ok(loaded)
}

fn load_file(file: &Path) -> Result<Vec<Loaded>> {
    let text = fs::read_to_string(file).map_err(|source| read_error(file, source))?;
    parse_str(file, &text)
}

/// The `*.yaml`, `*.yml` and `*.json` files of `directory`, sorted by name.
fn directory_files(directory: &Path) -> Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for entry in fs::read_dir(directory).map_err(|source| read_error(directory, source))? {
        let path = entry.map_err(|source| read_error(directory, source))?.path();
        let wanted =
            path.extension().and_then(|extension| extension.to_str()).is_some_and(|extension| {
                EXTENSIONS.iter().any(|wanted| extension.eq_ignore_ascii_case(wanted))
            });
        if wanted && path.is_file() {
            files.push(path);
        }
    }
    if files.is_empty() {
        let source = io::Error::new(io::ErrorKind::NotFound, "no *.yaml, *.yml or *.json files");
        return Err(read_error(directory, source));
    }
    files.sort_by(|a, b| a.file_name().cmp(&b.file_name()));
    Ok(files)
}

fn read_error(path: &Path, source: io::Error) -> Error {
    Error::Read { path: path.to_owned(), source }
}

fn is_json(file: &Path) -> bool {
    file.extension().is_some_and(|extension| extension.eq_ignore_ascii_case("json"))
}

/// The text being parsed, for error reports and for finding the line of an error.
struct Source<'a> {
    file: &'a Path,
    text: &'a str,
    json: bool,
}

impl Source<'_> {
    /// Adds the CRDs of one non-empty document to `loaded`.
    fn document(&self, document: usize, value: Value, loaded: &mut Vec<Loaded>) -> Result<()> {
        let Value::Object(mut object) = value else {
            return Err(self.parse_error(
                document,
                ".".to_owned(),
                format!(
                    "expected a Kubernetes object (a mapping with apiVersion and kind), found {}",
                    describe(&value)
                ),
            ));
        };
        let list = matches!(
            object.get("kind"),
            Some(Value::String(kind)) if kind == "List" || kind == "CustomResourceDefinitionList"
        );
        if list {
            let items = match object.remove("items") {
                None | Some(Value::Null) => Vec::new(),
                Some(Value::Array(items)) => items,
                Some(other) => {
                    return Err(self.parse_error(
                        document,
                        "items".to_owned(),
                        format!("expected a sequence of {KIND}s, found {}", describe(&other)),
                    ));
                }
            };
            for (index, item) in items.into_iter().enumerate() {
                let prefix = format!("items[{index}]");
                let Value::Object(item) = item else {
                    return Err(self.parse_error(
                        document,
                        prefix,
                        format!("expected a {KIND} (a mapping), found {}", describe(&item)),
                    ));
                };
                loaded.push(self.crd(
                    document,
                    (&prefix, vec![Step::Key("items".to_owned()), Step::Index(index)]),
                    item,
                )?);
            }
            return Ok(());
        }
        loaded.push(self.crd(document, ("", Vec::new()), object)?);
        Ok(())
    }

    /// Checks and deserialises one CRD found at `prefix` (`""` or `items[N]`) in `document`.
    ///
    /// `prefix_steps` are the same as `prefix`, to find the line of an error in the text.
    fn crd(
        &self,
        document: usize,
        (prefix, prefix_steps): (&str, Vec<Step>),
        mut object: Map<String, Value>,
    ) -> Result<Loaded> {
        let at = |path: &str| join(prefix, path);
        let mut warnings = Vec::new();
        let v1beta1 =
            object.get("apiVersion").and_then(Value::as_str) == Some(v1beta1::API_VERSION);
        if v1beta1 && object.get("kind").and_then(Value::as_str) == Some(KIND) {
            v1beta1::to_v1(&mut object);
            warnings.push(Warning {
                file: self.file.to_owned(),
                document,
                path: at("apiVersion"),
                message: format!(
                    "{} (removed in Kubernetes 1.22) read as {API_VERSION}, as the API server \
                     converts it: its schema, subresources and printer columns given to every \
                     version, pruning off unless preserveUnknownFields is false",
                    v1beta1::API_VERSION
                ),
            });
        }
        // Not needed, and sometimes large (annotations, managedFields): only the name is kept.
        let name = object
            .remove("metadata")
            .and_then(|mut metadata| metadata.get_mut("name").map(Value::take));
        let mut manifest = Map::new();
        for key in ["apiVersion", "kind"] {
            manifest.insert(key.to_owned(), object.get(key).cloned().unwrap_or(Value::Null));
        }
        let mut metadata = Map::new();
        metadata.insert("name".to_owned(), name.unwrap_or(Value::Null));
        manifest.insert("metadata".to_owned(), Value::Object(metadata));
        manifest.insert("spec".to_owned(), object.get("spec").cloned().unwrap_or(Value::Null));
        if let Some((field, message)) = header_problem(&object) {
            return Err(self.schema_error(document, at(field), message));
        }
        let crd: CustomResourceDefinition = serde_path_to_error::deserialize(Value::Object(object))
            .map_err(|error| {
                let path = at(&error.path().to_string());
                let mut message = error.inner().to_string();
                let mut steps = prefix_steps;
                for segment in error.path() {
                    match segment {
                        serde_path_to_error::Segment::Seq { index } => {
                            steps.push(Step::Index(*index));
                        }
                        serde_path_to_error::Segment::Map { key } => {
                            steps.push(Step::Key(key.clone()));
                        }
                        _ => break,
                    }
                }
                if let Some((line, column)) = self.locate(document, &steps) {
                    let _ = write!(message, " at line {line} column {column}");
                }
                self.parse_error(document, path, message)
            })?;
        if let Some((path, message)) = names_problem(&crd) {
            return Err(self.schema_error(document, at(&path), message));
        }
        for (index, version) in crd.spec.versions.iter().enumerate() {
            let schema =
                version.schema.as_ref().and_then(|schema| schema.open_api_v3_schema.as_ref());
            if version.served && schema.is_none() {
                return Err(self.schema_error(
                    document,
                    at(&format!("spec.versions[{index}].schema.openAPIV3Schema")),
                    format!(
                        "version {} is served but has no schema; {API_VERSION} requires one",
                        version.name
                    ),
                ));
            }
        }
        Ok(Loaded {
            file: self.file.to_owned(),
            document,
            crd,
            manifest: Value::Object(manifest),
            warnings,
        })
    }

    /// The line and column (from 1) of the node at `steps` in `document`, found by parsing the
    /// document again straight from the text; `None` if there is no such node (it came from a
    /// YAML merge key, or the path has a segment that cannot be followed).
    fn locate(&self, document: usize, steps: &[Step]) -> Option<(usize, usize)> {
        if self.json {
            let mut deserializer = serde_json::Deserializer::from_str(self.text);
            let error = Find(steps).deserialize(&mut deserializer).err()?;
            (error.to_string().contains(FOUND) && error.line() > 0)
                .then(|| (error.line(), error.column()))
        } else {
            let deserializer = serde_yaml_ng::Deserializer::from_str(self.text).nth(document)?;
            let error = Find(steps).deserialize(deserializer).err()?;
            let location = error.location()?;
            error.to_string().contains(FOUND).then(|| (location.line(), location.column()))
        }
    }

    fn parse_error(&self, document: usize, path: String, message: String) -> Error {
        Error::Parse { file: self.file.to_owned(), document, path, message }
    }

    fn schema_error(&self, document: usize, path: String, message: String) -> Error {
        Error::Schema { file: self.file.to_owned(), document, path, message }
    }
}

/// One step of a path into a document.
enum Step {
    Key(String),
    Index(usize),
}

/// What [`Here`] expects, and so part of the message of the error it raises at any node.
const FOUND: &str = "(the node looked for)";

/// A visitor that accepts nothing: every value is an error mentioning [`FOUND`], raised by the
/// parser where the value starts.
struct Here;

impl Visitor<'_> for Here {
    type Value = ();

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(FOUND)
    }
}

/// Walks a document to the node at a path and fails there, so that the parser's error carries the
/// node's line and column; succeeds (finding nothing) if the path leads nowhere.
struct Find<'a>(&'a [Step]);

impl<'de> DeserializeSeed<'de> for Find<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        if self.0.is_empty() {
            deserializer.deserialize_any(Here)
        } else {
            deserializer.deserialize_any(self)
        }
    }
}

impl<'de> Visitor<'de> for Find<'_> {
    type Value = ();

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("any value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let want = match self.0.first() {
            Some(Step::Key(key)) => Some(key),
            _ => None,
        };
        while let Some(key) = map.next_key::<String>()? {
            if want == Some(&key) {
                map.next_value_seed(Find(&self.0[1..]))?;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let want = match self.0.first() {
            Some(Step::Index(index)) => Some(*index),
            _ => None,
        };
        let mut index = 0;
        while if want == Some(index) {
            seq.next_element_seed(Find(&self.0[1..]))?.is_some()
        } else {
            seq.next_element::<IgnoredAny>()?.is_some()
        } {
            index += 1;
        }
        Ok(())
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }

    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }

    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }

    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }

    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }

    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_none<E>(self) -> Result<(), E> {
        Ok(())
    }
}

/// What is wrong with the `kind` or `apiVersion` of a document that should be a CRD: the field
/// and a message.
fn header_problem(object: &Map<String, Value>) -> Option<(&'static str, String)> {
    let problem = match object.get("kind") {
        Some(Value::String(kind)) if kind == KIND => None,
        Some(Value::String(kind)) => Some(format!("{} {kind}, not a {KIND}", article(kind))),
        None | Some(Value::Null) => Some(format!("missing; expected {KIND}")),
        Some(other) => Some(format!("expected {KIND}, found {}", describe(other))),
    };
    if let Some(problem) = problem {
        return Some(("kind", problem));
    }
    let problem = match object.get("apiVersion") {
        Some(Value::String(version)) if version == API_VERSION => None,
        Some(Value::String(version)) => {
            Some(format!("{version} is not supported; expected {API_VERSION}"))
        }
        None | Some(Value::Null) => Some(format!("missing; expected {API_VERSION}")),
        Some(other) => Some(format!("expected {API_VERSION}, found {}", describe(other))),
    };
    problem.map(|problem| ("apiVersion", problem))
}

/// The first name of `crd` that kube-apiserver refuses (apiextensions'
/// `ValidateCustomResourceDefinitionSpec`), as its path and what is wrong: the code generated
/// from a CRD names its module, types and accessors after these, so a name the API server
/// never serves would make code that does not compile.
///
/// The group is a DNS subdomain with at least one dot; the plural, singular, short names and
/// versions are lowercase RFC 1035 labels, and so are the kind and list kind once lowercased.
fn names_problem(crd: &CustomResourceDefinition) -> Option<(String, String)> {
    const LABEL: &str = "must be an RFC 1035 label: at most 63 characters, lowercase letters, \
                         digits and '-', starting with a letter and ending with a letter or digit";
    let spec = &crd.spec;
    if !(is_dns_subdomain(&spec.group) && spec.group.contains('.')) {
        let message = format!(
            "{:?} must be a DNS subdomain with at least one dot, such as example.com",
            spec.group
        );
        return Some(("spec.group".to_owned(), message));
    }
    let names = &spec.names;
    let mut labels: Vec<(String, &str, bool)> = vec![
        ("spec.names.plural".to_owned(), &names.plural, false),
        ("spec.names.kind".to_owned(), &names.kind, true),
    ];
    labels.extend(
        names
            .singular
            .iter()
            .filter(|s| !s.is_empty())
            .map(|s| ("spec.names.singular".to_owned(), s.as_str(), false)),
    );
    labels.extend(
        names
            .list_kind
            .iter()
            .filter(|s| !s.is_empty())
            .map(|s| ("spec.names.listKind".to_owned(), s.as_str(), true)),
    );
    for (index, short) in names.short_names.iter().enumerate() {
        labels.push((format!("spec.names.shortNames[{index}]"), short, false));
    }
    for (index, version) in spec.versions.iter().enumerate() {
        labels.push((format!("spec.versions[{index}].name"), &version.name, false));
    }
    labels.into_iter().find_map(|(path, name, mixed_case)| {
        let checked = if mixed_case { name.to_ascii_lowercase() } else { name.to_owned() };
        if name.is_empty() {
            Some((path, "required".to_owned()))
        } else if is_dns_label(&checked) {
            None
        } else if mixed_case {
            Some((path, format!("{name:?} may have mixed case, but otherwise {LABEL}")))
        } else {
            Some((path, format!("{name:?} {LABEL}")))
        }
    })
}

/// `[a-z]([-a-z0-9]*[a-z0-9])?`, at most 63 characters.
fn is_dns_label(name: &str) -> bool {
    let bytes = name.as_bytes();
    bytes.len() <= 63
        && bytes.first().is_some_and(u8::is_ascii_lowercase)
        && bytes.last().is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        && bytes.iter().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
}

/// Dot-separated labels of `[a-z0-9]([-a-z0-9]*[a-z0-9])?`, at most 253 characters.
fn is_dns_subdomain(name: &str) -> bool {
    let alphanumeric = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    name.len() <= 253
        && name.split('.').all(|label| {
            let bytes = label.as_bytes();
            bytes.len() <= 63
                && bytes.first().is_some_and(alphanumeric)
                && bytes.last().is_some_and(alphanumeric)
                && bytes.iter().all(|b| alphanumeric(b) || *b == b'-')
        })
}

/// `prefix.path`, or either alone when the other is empty (or `.`, the root).
fn join(prefix: &str, path: &str) -> String {
    match (prefix, path) {
        ("", path) => path.to_owned(),
        (prefix, "." | "") => prefix.to_owned(),
        (prefix, path) => format!("{prefix}.{path}"),
    }
}

/// The article of a kind: "a `ConfigMap`", "an `Ingress`".
fn article(kind: &str) -> &'static str {
    if kind.starts_with(['A', 'E', 'I', 'O', 'U', 'a', 'e', 'i', 'o', 'u']) { "an" } else { "a" }
}

/// What a value is, for messages: "a string", "a sequence", ….
fn describe(value: &Value) -> &'static str {
    match value {
        Value::Null => "nothing (null)",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a sequence",
        Value::Object(_) => "a mapping",
    }
}

/// An error converting YAML to JSON, with the path built while unwinding.
struct ConvertError {
    /// Path segments, innermost first.
    reversed: Vec<Segment>,
    message: String,
}

enum Segment {
    Key(String),
    Index(usize),
}

impl ConvertError {
    fn new(message: String) -> Self {
        Self { reversed: Vec::new(), message }
    }

    fn at(mut self, segment: Segment) -> Self {
        self.reversed.push(segment);
        self
    }

    /// The path in `serde_path_to_error`'s notation: `spec.versions[1].name`, `.` for the root.
    fn path(&self) -> String {
        let mut path = String::new();
        for segment in self.reversed.iter().rev() {
            match segment {
                Segment::Key(key) => {
                    if !path.is_empty() {
                        path.push('.');
                    }
                    path.push_str(key);
                }
                Segment::Index(index) => {
                    let _ = write!(path, "[{index}]");
                }
            }
        }
        if path.is_empty() { ".".to_owned() } else { path }
    }
}

/// Converts a YAML value to JSON as sigs.k8s.io/yaml does: scalar keys become strings, tags are
/// dropped. Takes the YAML value apart as it goes (strings are moved, not copied).
fn yaml_to_json(yaml: &mut serde_yaml_ng::Value) -> Result<Value, ConvertError> {
    use serde_yaml_ng::Value as Yaml;
    Ok(match std::mem::take(yaml) {
        Yaml::Null => Value::Null,
        Yaml::Bool(boolean) => Value::Bool(boolean),
        Yaml::Number(number) => json_number(&number)?,
        Yaml::String(string) => Value::String(string),
        Yaml::Sequence(mut sequence) => {
            let mut array = Vec::with_capacity(sequence.len());
            for (index, item) in sequence.iter_mut().enumerate() {
                array.push(yaml_to_json(item).map_err(|error| error.at(Segment::Index(index)))?);
            }
            Value::Array(array)
        }
        Yaml::Mapping(mapping) => {
            let mut object = Map::new();
            for (key, mut value) in mapping {
                let key = json_key(key)?;
                let converted = yaml_to_json(&mut value)
                    .map_err(|error| error.at(Segment::Key(key.clone())))?;
                object.insert(key, converted);
            }
            Value::Object(object)
        }
        Yaml::Tagged(mut tagged) => yaml_to_json(&mut tagged.value)?,
    })
}

/// A mapping key as a JSON object key: strings as they are, other scalars as their text.
fn json_key(key: serde_yaml_ng::Value) -> Result<String, ConvertError> {
    use serde_yaml_ng::Value as Yaml;
    match key {
        Yaml::String(key) => Ok(key),
        Yaml::Number(number) => Ok(number.to_string()),
        Yaml::Bool(boolean) => Ok(boolean.to_string()),
        Yaml::Null => Ok("null".to_owned()),
        Yaml::Tagged(tagged) => json_key(tagged.value),
        Yaml::Sequence(_) | Yaml::Mapping(_) => Err(ConvertError::new(
            "a mapping key must be a scalar, not a sequence or a mapping".to_owned(),
        )),
    }
}

fn json_number(number: &serde_yaml_ng::Number) -> Result<Value, ConvertError> {
    if let Some(integer) = number.as_u64() {
        Ok(Value::from(integer))
    } else if let Some(integer) = number.as_i64() {
        Ok(Value::from(integer))
    } else {
        number
            .as_f64()
            .and_then(serde_json::Number::from_f64)
            .map(Value::Number)
            .ok_or_else(|| ConvertError::new(format!("{number} cannot be represented in JSON")))
    }
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use super::{load, parse_str};
    use crate::error::Error;

    /// A CRD with two versions; `{v1}` stands for the rest of the second version.
    const CRD: &str = "\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  names:
    kind: Widget
    plural: widgets
  scope: Namespaced
  versions:
  - name: v1alpha1
    served: true
    storage: false
    schema:
      openAPIV3Schema:
        type: object
  - name: v1
    served: true
    storage: true
{v1}";

    const V1_SCHEMA: &str = "    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
";

    fn crd(v1: &str) -> String {
        CRD.replace("{v1}", v1)
    }

    fn error(file: &str, text: &str) -> String {
        match parse_str(Path::new(file), text) {
            Ok(loaded) => panic!("{file} parsed into {} CRDs", loaded.len()),
            Err(error) => error.to_string(),
        }
    }

    /// A fresh empty directory under the system's temporary directory.
    fn temp_dir(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("informer-gen-load-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn a_bare_equals_sign_is_the_string_equals() {
        let text = crd("    schema:
      openAPIV3Schema:
        type: object
        properties:
          matchType:
            type: string
            enum:
            - '!='
            - =
            - =~
            - '!~'
");
        let loaded = parse_str(Path::new("eq.yaml"), &text).unwrap();
        let schema = loaded[0].crd.spec.versions[1].schema.as_ref().unwrap();
        let root = schema.open_api_v3_schema.as_ref().unwrap();
        let enum_ = root.properties["matchType"].enum_.as_ref().unwrap();
        assert_eq!(
            enum_,
            &vec![
                serde_json::json!("!="),
                serde_json::json!("="),
                serde_json::json!("=~"),
                serde_json::json!("!~"),
            ]
        );
    }

    #[test]
    fn multi_document_yaml_skips_empty_documents_and_counts_them() {
        let one = crd(V1_SCHEMA);
        let text = format!("---\n{one}---\n---\n{}---\n", one.replace("widgets", "gadgets"));
        let loaded = parse_str(Path::new("two.yaml"), &text).unwrap();
        let found: Vec<_> =
            loaded.iter().map(|crd| (crd.document, crd.crd.spec.names.plural.as_str())).collect();
        assert_eq!(found, [(0, "widgets"), (2, "gadgets")]);
    }

    #[test]
    fn lists_are_expanded() {
        let item = crd(V1_SCHEMA).replace('\n', "\n  ");
        for kind in ["List", "CustomResourceDefinitionList"] {
            let text = format!(
                "apiVersion: v1\nkind: {kind}\nitems:\n- {item}\n- {}\n",
                item.replace("widgets", "gadgets")
            );
            let loaded = parse_str(Path::new("list.yaml"), &text).unwrap();
            let plurals: Vec<_> =
                loaded.iter().map(|crd| crd.crd.spec.names.plural.as_str()).collect();
            assert_eq!(plurals, ["widgets", "gadgets"]);
        }
    }

    #[test]
    fn json_files_are_json() {
        let yaml: serde_json::Value = serde_yaml_ng::from_str(&crd(V1_SCHEMA)).unwrap();
        let text = serde_json::to_string_pretty(&yaml).unwrap();
        let loaded = parse_str(Path::new("widgets.json"), &text).unwrap();
        assert_eq!(loaded[0].crd.spec.versions[1].name, "v1");
    }

    #[test]
    fn directories_are_read_in_name_order_and_other_files_ignored() {
        let dir = temp_dir("order");
        std::fs::write(dir.join("b.yml"), crd(V1_SCHEMA).replace("widgets", "bs")).unwrap();
        std::fs::write(dir.join("a.yaml"), crd(V1_SCHEMA).replace("widgets", "as")).unwrap();
        let json: serde_json::Value =
            serde_yaml_ng::from_str(&crd(V1_SCHEMA).replace("widgets", "cs")).unwrap();
        std::fs::write(dir.join("c.JSON"), json.to_string()).unwrap();
        std::fs::write(dir.join("README.md"), "not a CRD").unwrap();
        std::fs::create_dir(dir.join("nested.yaml")).unwrap();
        let loaded = load(&[&dir]).unwrap();
        let plurals: Vec<_> = loaded.iter().map(|crd| crd.crd.spec.names.plural.as_str()).collect();
        assert_eq!(plurals, ["as", "bs", "cs"]);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_directory_without_crd_files_is_an_error_naming_it() {
        let dir = temp_dir("empty");
        std::fs::write(dir.join("README.md"), "not a CRD").unwrap();
        let error = load(&[&dir]).unwrap_err();
        assert!(matches!(error, Error::Read { .. }));
        assert_eq!(
            error.to_string(),
            format!("cannot read {}: no *.yaml, *.yml or *.json files", dir.display())
        );
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_missing_file_is_a_read_error() {
        let error = load(&["/nonexistent/widgets.yaml"]).unwrap_err();
        assert!(matches!(error, Error::Read { .. }));
        assert!(
            error.to_string().starts_with("cannot read /nonexistent/widgets.yaml: "),
            "{error}"
        );
    }

    #[test]
    fn malformed_yaml_is_a_parse_error_at_the_document() {
        let error = parse_str(Path::new("bad.yaml"), "kind: [a\nb: c\n").unwrap_err();
        assert!(matches!(&error, Error::Parse { path, .. } if path == "."));
        assert_eq!(
            error.to_string(),
            "bad.yaml: .: did not find expected ',' or ']' at line 2 column 2, while parsing a flow sequence at line 1 column 7"
        );
    }

    #[test]
    fn malformed_json_is_a_parse_error_at_the_document() {
        assert_eq!(
            error("bad.json", "{\"kind\": }"),
            "bad.json: .: expected value at line 1 column 10"
        );
    }

    #[test]
    fn a_malformed_field_is_reported_at_its_path_line_and_column() {
        let text = crd(&V1_SCHEMA.replace("            type: object\n", "            type: 5\n"));
        let error = parse_str(Path::new("widgets.yaml"), &text).unwrap_err();
        assert!(matches!(&error, Error::Parse { .. }));
        assert_eq!(
            error.to_string(),
            "widgets.yaml: spec.versions[1].schema.openAPIV3Schema.properties.spec.type: invalid type: integer `5`, expected a string at line 26 column 19"
        );
    }

    #[test]
    fn a_malformed_field_in_json_is_reported_at_its_path_line_and_column() {
        let text = crd(&V1_SCHEMA.replace("            type: object\n", "            type: 5\n"));
        let yaml: serde_json::Value = serde_yaml_ng::from_str(&text).unwrap();
        let text = serde_json::to_string_pretty(&yaml).unwrap();
        assert_eq!(
            error("widgets.json", &text),
            "widgets.json: spec.versions[1].schema.openAPIV3Schema.properties.spec.type: invalid type: integer `5`, expected a string at line 31 column 25"
        );
    }

    #[test]
    fn a_malformed_field_in_a_later_document_names_the_document() {
        let good = crd(V1_SCHEMA);
        let bad = crd(V1_SCHEMA).replace(
            "    served: true\n    storage: true\n",
            "    served: yes\n    storage: true\n",
        );
        assert_eq!(
            error("two.yaml", &format!("{good}---\n{bad}")),
            "two.yaml (document 2): spec.versions[1].served: invalid type: string \"yes\", expected a boolean at line 46 column 13"
        );
    }

    #[test]
    fn a_document_that_is_not_a_mapping_is_a_parse_error() {
        assert_eq!(
            error("list.yaml", "- a\n- b\n"),
            "list.yaml: .: expected a Kubernetes object (a mapping with apiVersion and kind), found a sequence"
        );
    }

    #[test]
    fn a_document_that_is_not_a_crd_is_a_schema_error_at_kind() {
        let error = parse_str(Path::new("cm.yaml"), "apiVersion: v1\nkind: ConfigMap\ndata: {}\n")
            .unwrap_err();
        assert!(matches!(&error, Error::Schema { path, .. } if path == "kind"));
        assert_eq!(error.to_string(), "cm.yaml: kind: a ConfigMap, not a CustomResourceDefinition");
        assert_eq!(
            self::error("ing.yaml", "apiVersion: networking.k8s.io/v1\nkind: Ingress\n"),
            "ing.yaml: kind: an Ingress, not a CustomResourceDefinition"
        );
        assert_eq!(
            self::error("nokind.yaml", "apiVersion: v1\n"),
            "nokind.yaml: kind: missing; expected CustomResourceDefinition"
        );
    }

    #[test]
    fn a_v1beta1_crd_is_read_as_v1_with_a_warning() {
        let text = "apiVersion: apiextensions.k8s.io/v1beta1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  version: v1
  names: {kind: Widget, plural: widgets}
  scope: Namespaced
  validation:
    openAPIV3Schema:
      properties:
        spec: {type: object, properties: {size: {type: integer}}}
";
        let loaded = parse_str(Path::new("old.yaml"), text).unwrap();
        let version = &loaded[0].crd.spec.versions[0];
        assert_eq!((version.name.as_str(), version.served, version.storage), ("v1", true, true));
        assert!(version.schema.as_ref().unwrap().open_api_v3_schema.is_some());
        assert!(loaded[0].crd.spec.preserve_unknown_fields);
        assert_eq!(loaded[0].manifest["apiVersion"], "apiextensions.k8s.io/v1");
        let warnings: Vec<String> = loaded[0].warnings.iter().map(ToString::to_string).collect();
        assert_eq!(warnings.len(), 1);
        assert!(
            warnings[0].starts_with(
                "old.yaml: apiVersion: apiextensions.k8s.io/v1beta1 (removed in Kubernetes 1.22) \
                 read as apiextensions.k8s.io/v1"
            ),
            "{warnings:?}"
        );
        let text = crd(V1_SCHEMA).replace("apiextensions.k8s.io/v1\n", "apiextensions.k8s.io/v2\n");
        assert_eq!(
            self::error("new.yaml", &text),
            "new.yaml: apiVersion: apiextensions.k8s.io/v2 is not supported; expected apiextensions.k8s.io/v1"
        );
    }

    #[test]
    fn a_served_version_without_a_schema_is_a_schema_error() {
        let error = parse_str(Path::new("widgets.yaml"), &crd("")).unwrap_err();
        assert!(matches!(&error, Error::Schema { .. }));
        assert_eq!(
            error.to_string(),
            "widgets.yaml: spec.versions[1].schema.openAPIV3Schema: version v1 is served but has no schema; apiextensions.k8s.io/v1 requires one"
        );
        let unserved = crd("").replace(
            "    served: true\n    storage: true\n",
            "    served: false\n    storage: true\n",
        );
        assert_eq!(parse_str(Path::new("widgets.yaml"), &unserved).unwrap().len(), 1);
    }

    /// Found by the `crd_schema_reader` fuzz target: a CRD whose plural was empty loaded, and
    /// the generator then panicked on the accessor it named `_`. kube-apiserver refuses such
    /// names, and so does the reader now.
    #[test]
    fn names_the_api_server_refuses_are_schema_errors() {
        let cases = [
            ("    plural: widgets\n", "    plural: ''\n", "spec.names.plural: required"),
            (
                "    plural: widgets\n",
                "    plural: Widgets\n",
                "spec.names.plural: \"Widgets\" must be an RFC 1035",
            ),
            (
                "    plural: widgets\n",
                "    plural: 1widgets\n",
                "spec.names.plural: \"1widgets\" must be",
            ),
            (
                "    kind: Widget\n",
                "    kind: Wid_get\n",
                "spec.names.kind: \"Wid_get\" may have mixed case",
            ),
            (
                "  group: example.com\n",
                "  group: example\n",
                "spec.group: \"example\" must be a DNS subdomain",
            ),
            (
                "  group: example.com\n",
                "  group: Example.com\n",
                "spec.group: \"Example.com\" must be",
            ),
            ("  - name: v1\n", "  - name: v1.0\n", "spec.versions[1].name: \"v1.0\" must be"),
        ];
        for (from, to, expected) in cases {
            let text = crd(V1_SCHEMA).replace(from, to);
            assert_ne!(text, crd(V1_SCHEMA), "{from:?} is in the CRD");
            let error = parse_str(Path::new("names.yaml"), &text).map(|loaded| loaded.len());
            let error = error.expect_err(expected).to_string();
            assert!(error.starts_with(&format!("names.yaml: {expected}")), "{error}");
        }
    }

    #[test]
    fn errors_in_list_items_have_item_paths() {
        let good = crd(V1_SCHEMA).replace('\n', "\n  ");
        let bad = crd("").replace('\n', "\n  ");
        let text = format!("apiVersion: v1\nkind: List\nitems:\n- {good}\n- {bad}\n");
        assert_eq!(
            error("list.yaml", &text),
            "list.yaml: items[1].spec.versions[1].schema.openAPIV3Schema: version v1 is served but has no schema; apiextensions.k8s.io/v1 requires one"
        );
        let text = format!("---\nkind: List\nitems:\n- {good}\n- apiVersion: v1\n  kind: Secret\n");
        assert_eq!(
            error("list.yaml", &format!("{}---\n{text}", crd(V1_SCHEMA))),
            "list.yaml (document 3): items[1].kind: a Secret, not a CustomResourceDefinition"
        );
        let bad = crd(V1_SCHEMA)
            .replace("    served: true\n    storage: true\n", "    served: 1\n    storage: true\n")
            .replace('\n', "\n  ");
        assert_eq!(
            error("list.yaml", &format!("kind: List\nitems:\n- {good}\n- {bad}\n")),
            "list.yaml: items[1].spec.versions[1].served: invalid type: integer `1`, expected a boolean at line 48 column 15"
        );
    }
}
