//! The catalog: every type of k8s-openapi, for every Kubernetes version it offers, as the
//! matcher needs it (JSON field names, their kinds, which are required, list types), read from
//! `catalog.tsv`, which [`extract`](super::extract) writes from k8s-openapi's source.
//!
//! # The file
//!
//! Tab-separated lines; `#` starts a comment line. A type line, then a line per field of it:
//!
//! ```text
//! T  <minors>  <rust path>  <shape>  <flags>  <description keys>
//! F  <minors>  <json name>  <required|optional>  <kind>  <list type>  <description keys>
//! ```
//!
//! - `<minors>`: the Kubernetes minor versions (`1.x`) with this type or this form of the field:
//!   `33-37`, or a list of ranges `33,35-37`. A field whose kind, requiredness or list type
//!   changed between versions has a line per form.
//! - `<rust path>`: below `::k8s_openapi::` (`api::core::v1::Container`).
//! - `<shape>`: `struct` (fields by name, the usual case); `time`, `micro-time`, `quantity`,
//!   `int-or-string` (newtypes and enums with their own serde); `json` (a newtype of
//!   `serde_json::Value`: `RawExtension`, `FieldsV1`, `JSON`); `opaque` (anything else, which
//!   never matches).
//! - `<flags>`: `default=<minors>` (derives `Default` in those versions), `resource`
//!   (implements `Resource`, so its serde writes `apiVersion` and `kind` itself),
//!   comma-separated, or `-`.
//! - `<kind>`: `string`, `bytes` (`ByteString`), `int32`, `int64`, `double`, `bool`, `json`
//!   (free-form object), `[K]` (a list of `K`), `{K}` (a map of `K` by string), `@path` (another
//!   type of the catalog).
//! - `<list type>`: for lists, how k8s-openapi merges them, which is the schema's
//!   `x-kubernetes-list-type`: `atomic`, `set`, or `map:key,...` (the keys k8s-openapi merges by,
//!   JSON names); `-` otherwise.
//! - `<description keys>`: [`description_key`]s of the descriptions the type or field has
//!   across the versions, comma-separated, or `-`.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::{self, Write as _};

/// The Kubernetes minor versions (`1.x`) something exists in, as a bit set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub(crate) struct Minors(u64);

impl Minors {
    /// Just `minor` (at most 63).
    pub(crate) fn one(minor: u32) -> Self {
        Self(1u64.checked_shl(minor).unwrap_or(0))
    }

    /// `first..=last`.
    pub(crate) fn range(first: u32, last: u32) -> Self {
        (first..=last).fold(Self::default(), Self::with)
    }

    pub(crate) fn with(self, minor: u32) -> Self {
        Self(self.0 | Self::one(minor).0)
    }

    pub(crate) fn contains(self, minor: u32) -> bool {
        self.0 & Self::one(minor).0 != 0
    }

    pub(crate) fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The minors in ascending order.
    pub(crate) fn iter(self) -> impl Iterator<Item = u32> {
        (0..64).filter(move |&minor| self.contains(minor))
    }

    fn parse(text: &str) -> Result<Self, String> {
        let mut set = Self::default();
        for part in text.split(',') {
            let (first, last) = part.split_once('-').unwrap_or((part, part));
            let number = |n: &str| {
                n.parse::<u32>().ok().filter(|&n| n < 64).ok_or(format!("bad minor {n:?}"))
            };
            set = Self(set.0 | Self::range(number(first)?, number(last)?).0);
        }
        Ok(set)
    }
}

impl fmt::Display for Minors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let minors: Vec<u32> = self.iter().collect();
        let mut parts = Vec::new();
        let mut start = 0;
        for i in 0..minors.len() {
            if i + 1 == minors.len() || minors[i + 1] != minors[i] + 1 {
                parts.push(if start == i {
                    minors[i].to_string()
                } else {
                    format!("{}-{}", minors[start], minors[i])
                });
                start = i + 1;
            }
        }
        f.write_str(&parts.join(","))
    }
}

/// What a catalog type is on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Shape {
    /// A struct with named fields.
    Struct,
    /// `Time`: an RFC 3339 timestamp, written with second precision.
    Time,
    /// `MicroTime`: written with microseconds.
    MicroTime,
    /// `Quantity`: a string (a number is read as its text and written back as a string).
    Quantity,
    /// `IntOrString`.
    IntOrString,
    /// A newtype of `serde_json::Value`.
    Json,
    /// Anything else (untagged enums of schemas, `Patch`, ...): never matches.
    Opaque,
}

const SHAPES: [(Shape, &str); 7] = [
    (Shape::Struct, "struct"),
    (Shape::Time, "time"),
    (Shape::MicroTime, "micro-time"),
    (Shape::Quantity, "quantity"),
    (Shape::IntOrString, "int-or-string"),
    (Shape::Json, "json"),
    (Shape::Opaque, "opaque"),
];

impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = SHAPES.iter().find(|(shape, _)| shape == self).map_or("opaque", |(_, n)| n);
        f.write_str(name)
    }
}

/// The kind of a field, a list item or a map value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Kind {
    String,
    /// `ByteString`: a base64 string.
    Bytes,
    I32,
    I64,
    F64,
    Bool,
    /// `serde_json::Value` inline (a free-form object).
    Json,
    Array(Box<Kind>),
    Map(Box<Kind>),
    /// Another catalog type, by Rust path below `::k8s_openapi::`.
    Ref(String),
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Kind::String => f.write_str("string"),
            Kind::Bytes => f.write_str("bytes"),
            Kind::I32 => f.write_str("int32"),
            Kind::I64 => f.write_str("int64"),
            Kind::F64 => f.write_str("double"),
            Kind::Bool => f.write_str("bool"),
            Kind::Json => f.write_str("json"),
            Kind::Array(inner) => write!(f, "[{inner}]"),
            Kind::Map(inner) => write!(f, "{{{inner}}}"),
            Kind::Ref(path) => write!(f, "@{path}"),
        }
    }
}

impl Kind {
    fn parse(text: &str) -> Result<Self, String> {
        Ok(match text {
            "string" => Kind::String,
            "bytes" => Kind::Bytes,
            "int32" => Kind::I32,
            "int64" => Kind::I64,
            "double" => Kind::F64,
            "bool" => Kind::Bool,
            "json" => Kind::Json,
            _ => {
                if let Some(inner) = text.strip_prefix('[').and_then(|t| t.strip_suffix(']')) {
                    Kind::Array(Box::new(Kind::parse(inner)?))
                } else if let Some(inner) = text.strip_prefix('{').and_then(|t| t.strip_suffix('}'))
                {
                    Kind::Map(Box::new(Kind::parse(inner)?))
                } else if let Some(path) = text.strip_prefix('@').filter(|p| !p.is_empty()) {
                    Kind::Ref(path.to_owned())
                } else {
                    return Err(format!("bad kind {text:?}"));
                }
            }
        })
    }
}

/// How k8s-openapi merges a list: the Kubernetes `x-kubernetes-list-type` of the field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ListType {
    /// Not a list, or nothing known.
    None,
    Atomic,
    Set,
    /// A map list, with the keys k8s-openapi merges by (the patch merge key: often fewer than
    /// the `x-kubernetes-list-map-keys` of the API).
    Map(Vec<String>),
}

impl fmt::Display for ListType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ListType::None => f.write_str("-"),
            ListType::Atomic => f.write_str("atomic"),
            ListType::Set => f.write_str("set"),
            ListType::Map(keys) => write!(f, "map:{}", keys.join(",")),
        }
    }
}

impl ListType {
    fn parse(text: &str) -> Result<Self, String> {
        Ok(match text {
            "-" => ListType::None,
            "atomic" => ListType::Atomic,
            "set" => ListType::Set,
            _ => match text.strip_prefix("map:") {
                Some(keys) => ListType::Map(keys.split(',').map(str::to_owned).collect()),
                None => return Err(format!("bad list type {text:?}")),
            },
        })
    }
}

/// One form of a field, in the versions `minors`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FieldDef {
    pub(crate) minors: Minors,
    pub(crate) json: String,
    pub(crate) required: bool,
    pub(crate) kind: Kind,
    pub(crate) list: ListType,
    pub(crate) descriptions: BTreeSet<u64>,
}

/// A type of the catalog.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TypeDef {
    pub(crate) minors: Minors,
    /// Below `::k8s_openapi::`.
    pub(crate) path: String,
    pub(crate) shape: Shape,
    /// The versions in which it derives `Default`.
    pub(crate) default: Minors,
    pub(crate) resource: bool,
    pub(crate) descriptions: BTreeSet<u64>,
    pub(crate) fields: Vec<FieldDef>,
}

impl TypeDef {
    /// The form of field `json` in Kubernetes `1.minor`.
    pub(crate) fn field(&self, json: &str, minor: u32) -> Option<&FieldDef> {
        self.fields.iter().find(|f| f.json == json && f.minors.contains(minor))
    }

    /// The fields of Kubernetes `1.minor`.
    pub(crate) fn fields_in(&self, minor: u32) -> impl Iterator<Item = &FieldDef> {
        self.fields.iter().filter(move |f| f.minors.contains(minor))
    }

    /// The type's name (the last segment of its path).
    pub(crate) fn name(&self) -> &str {
        self.path.rsplit("::").next().unwrap_or(&self.path)
    }
}

/// Every type of the catalog, by path.
#[derive(Debug, Default)]
pub(crate) struct Catalog {
    pub(crate) types: BTreeMap<String, TypeDef>,
    /// Every minor any type exists in.
    pub(crate) minors: Minors,
}

impl Catalog {
    /// Reads the text [`write`](Catalog::write) makes.
    pub(crate) fn parse(text: &str) -> Result<Self, String> {
        let mut catalog = Catalog::default();
        let mut current: Option<TypeDef> = None;
        for (number, line) in text.lines().enumerate() {
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let at = |message: String| format!("line {}: {message}", number + 1);
            let cells: Vec<&str> = line.split('\t').collect();
            match cells.as_slice() {
                ["T", minors, path, shape, flags, descriptions] => {
                    if let Some(done) = current.take() {
                        catalog.insert(done);
                    }
                    let shape = SHAPES
                        .iter()
                        .find(|(_, name)| name == shape)
                        .map(|(shape, _)| *shape)
                        .ok_or_else(|| at(format!("bad shape {shape:?}")))?;
                    let flags: Vec<&str> = flags.split(',').collect();
                    let default = flags
                        .iter()
                        .find_map(|flag| flag.strip_prefix("default="))
                        .map_or(Ok(Minors::default()), Minors::parse)
                        .map_err(at)?;
                    current = Some(TypeDef {
                        minors: Minors::parse(minors).map_err(at)?,
                        path: (*path).to_owned(),
                        shape,
                        default,
                        resource: flags.contains(&"resource"),
                        descriptions: parse_keys(descriptions).map_err(at)?,
                        fields: Vec::new(),
                    });
                }
                ["F", minors, json, required, kind, list, descriptions] => {
                    let Some(owner) = current.as_mut() else {
                        return Err(at("a field before any type".to_owned()));
                    };
                    owner.fields.push(FieldDef {
                        minors: Minors::parse(minors).map_err(at)?,
                        json: (*json).to_owned(),
                        required: match *required {
                            "required" => true,
                            "optional" => false,
                            other => return Err(at(format!("bad requiredness {other:?}"))),
                        },
                        kind: Kind::parse(kind).map_err(at)?,
                        list: ListType::parse(list).map_err(at)?,
                        descriptions: parse_keys(descriptions).map_err(at)?,
                    });
                }
                _ => return Err(at(format!("not a type or field line: {line:?}"))),
            }
        }
        if let Some(done) = current.take() {
            catalog.insert(done);
        }
        catalog.validate()?;
        Ok(catalog)
    }

    /// Every path is Rust identifiers joined by `::` (generated code names them), and every
    /// type a field refers to is in the catalog.
    fn validate(&self) -> Result<(), String> {
        let identifier = |s: &str| {
            s.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
                && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        };
        for def in self.types.values() {
            if !def.path.split("::").all(identifier) {
                return Err(format!("{:?} is no Rust path", def.path));
            }
            for field in &def.fields {
                let mut kind = &field.kind;
                while let Kind::Array(inner) | Kind::Map(inner) = kind {
                    kind = inner;
                }
                if let Kind::Ref(path) = kind
                    && !self.types.contains_key(path)
                {
                    return Err(format!(
                        "{}.{} refers to {path}, which is not in the catalog",
                        def.path, field.json
                    ));
                }
            }
        }
        Ok(())
    }

    pub(crate) fn insert(&mut self, def: TypeDef) {
        self.minors = Minors(self.minors.0 | def.minors.0);
        self.types.insert(def.path.clone(), def);
    }

    /// The catalog as text, after `header` (comment lines).
    pub(crate) fn write(&self, header: &str) -> String {
        let mut out = String::new();
        for line in header.lines() {
            out.push_str("# ");
            out.push_str(line);
            out.push('\n');
        }
        for def in self.types.values() {
            let mut flags = Vec::new();
            if !def.default.is_empty() {
                flags.push(format!("default={}", def.default));
            }
            if def.resource {
                flags.push("resource".to_owned());
            }
            let flags = if flags.is_empty() { "-".to_owned() } else { flags.join(",") };
            // Writing to a `String` does not fail.
            let _ = writeln!(
                out,
                "T\t{}\t{}\t{}\t{flags}\t{}",
                def.minors,
                def.path,
                def.shape,
                write_keys(&def.descriptions)
            );
            for field in &def.fields {
                let _ = writeln!(
                    out,
                    "F\t{}\t{}\t{}\t{}\t{}\t{}",
                    field.minors,
                    field.json,
                    if field.required { "required" } else { "optional" },
                    field.kind,
                    field.list,
                    write_keys(&field.descriptions)
                );
            }
        }
        out
    }
}

fn parse_keys(text: &str) -> Result<BTreeSet<u64>, String> {
    if text == "-" {
        return Ok(BTreeSet::new());
    }
    text.split(',')
        .map(|key| u64::from_str_radix(key, 16).map_err(|e| format!("bad description key: {e}")))
        .collect()
}

fn write_keys(keys: &BTreeSet<u64>) -> String {
    if keys.is_empty() {
        return "-".to_owned();
    }
    keys.iter().map(|key| format!("{key:016x}")).collect::<Vec<_>>().join(",")
}

/// What identifies a description: a hash (64-bit FNV-1a) of its first sentence with runs of
/// white space made one space, so that the same Go doc comment compares equal whether
/// controller-gen wrapped it (CRDs) or kube-openapi joined it (k8s-openapi), and across
/// Kubernetes versions that only changed later sentences.
pub(crate) fn description_key(text: &str) -> Option<u64> {
    let normal = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let first = normal.find(". ").map_or(normal.as_str(), |end| &normal[..=end]);
    if first.is_empty() {
        return None;
    }
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in first.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    Some(hash)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minors_print_as_ranges_and_read_back() {
        let minors = Minors::range(33, 35).with(37);
        assert_eq!(minors.to_string(), "33-35,37");
        assert_eq!(Minors::parse("33-35,37").unwrap(), minors);
        assert_eq!(Minors::parse("34").unwrap().iter().collect::<Vec<_>>(), [34]);
    }

    #[test]
    fn the_text_form_reads_back_to_the_same_catalog() {
        let text = "# a comment\n\
            T\t33-37\tapi::core::v1::EnvVar\tstruct\tdefault=35-37,resource\t00000000000000ff\n\
            F\t33-37\tname\trequired\tstring\t-\t-\n\
            F\t33-36\tvalueFrom\toptional\t@api::core::v1::EnvVar\t-\t-\n\
            F\t37\tvalues\toptional\t[{int32}]\tmap:name,port\t0000000000000001,0000000000000002\n";
        let catalog = Catalog::parse(text).unwrap();
        let env = &catalog.types["api::core::v1::EnvVar"];
        assert_eq!(env.fields.len(), 3);
        assert_eq!(env.fields[2].kind, Kind::Array(Box::new(Kind::Map(Box::new(Kind::I32)))));
        assert_eq!(env.fields[2].list, ListType::Map(vec!["name".into(), "port".into()]));
        assert!(env.field("valueFrom", 37).is_none());
        assert_eq!(catalog.write("a comment"), text);
    }

    #[test]
    fn description_keys_compare_first_sentences_across_wrapping() {
        let wrapped = "Name of the referent.\nThis field is effectively required, but";
        let joined = "Name of the referent. More info: https://kubernetes.io/docs";
        assert_eq!(description_key(wrapped), description_key(joined));
        assert_ne!(description_key("Name of the referent."), description_key("Name of the gate."));
        assert_eq!(description_key("  \n"), None);
    }
}
