//! Example objects synthesised from a CRD version's schema, for round-trip tests of generated
//! types (JSON → Rust → JSON must give the same JSON, see [`json_eq`]) and for creating objects on
//! a real API server.
//!
//! [`samples`] makes, for one version of a CRD:
//!
//! 1. `required-only`: only required properties, recursively (and the keys of `map` lists'
//!    items), one item per array and map;
//! 2. `all-fields`: every property present, arrays with two items, maps with two entries;
//! 3. `enum-variant-1`, `enum-variant-2`, …: like `all-fields`, but sample *i* gives each enum its
//!    value *i* mod its length, so that together the samples hold every value of every enum.
//!
//! Each sample's `metadata.name` is its name, so all of them can be created side by side.
//!
//! # Values
//!
//! Values are valid where that is cheap to know. For each schema node, the first rule that applies
//! decides:
//!
//! 1. `enum`: value *i* mod the number of values (`null` is never chosen).
//! 2. `x-kubernetes-int-or-string`: integers and strings alternate, the strings being quantities
//!    such as `"1Gi"` where the node has the Kubernetes quantity pattern (a `pattern` containing
//!    `[KMGTPE]i`), `"25%"` otherwise: the API server keeps either form, and so must a round
//!    trip.
//! 3. `x-kubernetes-embedded-resource`: `apiVersion: v1`, `kind: ConfigMap`,
//!    `metadata: {name: embedded}` plus the node's other properties.
//! 4. By `type`:
//!    - `object`: its properties; `additionalProperties` with a schema gives map entries `key-1`,
//!      `key-2`; `additionalProperties: true` gives a string and a nested value;
//!      `x-kubernetes-preserve-unknown-fields: true` adds a key the schema does not know,
//!      `"x-extra": {"k": [1, "two"]}`; an object with none of these is `{}`.
//!    - `array`: two items (one in `required-only`), within `minItems` and `maxItems`. Only the
//!      first item has every property; the second has the required ones (and a `map` list's
//!      keys), so that nested lists do not double the size of the object at every level. Items of
//!      `set` and `map` lists are distinct.
//!    - `string`: by `format`: `date-time` → `2024-01-02T03:04:05Z` (second precision, UTC: the
//!      form the API server writes back), `date`, `byte` → canonical (padded) base64, `ipv4`,
//!      `ipv6`, `cidr`, `mac`, `uuid`, `hostname`, `email`, `uri`, `duration`; a string with the
//!      quantity pattern → `"1Gi"`; otherwise `sample-<n>`, lowercase, numbered so that strings
//!      differ, shortened or padded to `minLength`..`maxLength`. Other `pattern`s are not
//!      followed, but `sample-<n>` matches the common DNS-name patterns.
//!    - `integer`: a small integer within `minimum`/`maximum` (exclusive bounds and
//!      `multipleOf` respected).
//!    - `number`: a value with a fractional part, such as `1.5`, within the bounds, so that it
//!      stays a float through a Go or Rust round trip.
//!    - `boolean`: `true`.
//! 5. No `type`: `x-kubernetes-preserve-unknown-fields` (any value) → `{"x-extra": …}` (`{}` in
//!    `required-only`); properties or `additionalProperties` → an object; `items` → an array;
//!    anything else → a string.
//!
//! Schemas that are not structural get values of the same rules: a property only inside
//! `oneOf`/`anyOf`/`allOf`/`not` is set in `all-fields` (from the first branch that has it), and
//! when the CRD has `preserveUnknownFields: true` every object without `additionalProperties`
//! gets the unknown key, as the API server then keeps it.
//!
//! `null` is never produced, even for `nullable` nodes. `oneOf`, `anyOf`, `allOf` and `not` are
//! validation-only in a structural schema and are ignored, so a `required-only` or `all-fields`
//! object may break a CRD's "exactly one of" rule (and CEL rules are not evaluated at all).
//! Output is deterministic.
//!
//! # Examples
//!
//! ```
//! use std::path::Path;
//!
//! use informer_gen::sample::{json_eq, samples};
//!
//! let yaml = "
//! apiVersion: apiextensions.k8s.io/v1
//! kind: CustomResourceDefinition
//! metadata: {name: widgets.example.com}
//! spec:
//!   group: example.com
//!   names: {kind: Widget, plural: widgets}
//!   scope: Namespaced
//!   versions:
//!   - name: v1
//!     served: true
//!     storage: true
//!     schema:
//!       openAPIV3Schema:
//!         type: object
//!         properties:
//!           spec:
//!             type: object
//!             required: [size]
//!             properties:
//!               size: {type: string, enum: [small, large]}
//!               created: {type: string, format: date-time}
//! ";
//! let crd = &informer_gen::schema::parse_str(Path::new("widgets.yaml"), yaml).unwrap()[0].crd;
//! let samples = samples(crd, "v1");
//! let names: Vec<_> = samples.iter().map(|sample| sample.name.as_str()).collect();
//! assert_eq!(names, ["required-only", "all-fields", "enum-variant-1"]);
//!
//! let all = &samples[1].object;
//! assert_eq!(all["apiVersion"], "example.com/v1");
//! assert_eq!(all["metadata"]["namespace"], "default");
//! assert_eq!(all["spec"]["size"], "small");
//! assert_eq!(samples[2].object["spec"]["size"], "large");
//! assert_eq!(all["spec"]["created"], "2024-01-02T03:04:05Z");
//! assert!(samples[0].object["spec"].get("created").is_none());
//!
//! // What a round trip through generated types should preserve:
//! assert!(json_eq(&serde_json::json!({"replicas": 2}), &serde_json::json!({"replicas": 2.0})));
//! ```

mod check;

use std::fmt::Write as _;

use serde_json::{Map, Value, json};

use crate::schema::crd::CustomResourceDefinition;
use crate::schema::openapi::{AdditionalProperties, Items, Schema};

#[doc(hidden)]
pub use check::check_samples;

/// One synthesised object.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// What it shows: `required-only`, `all-fields` or `enum-variant-<i>`; also its
    /// `metadata.name`.
    pub name: String,
    /// The object: `apiVersion`, `kind`, `metadata` and the schema's other root properties.
    pub object: Value,
}

/// The sample objects of `version` of `crd`: `required-only`, `all-fields`, then as many
/// `enum-variant-<i>` objects as the longest enum needs (see the [module docs](self)).
///
/// A version that `crd` does not have gives no samples; a version without a schema gives objects
/// with only `apiVersion`, `kind` and `metadata`.
#[must_use]
pub fn samples(crd: &CustomResourceDefinition, version: &str) -> Vec<Sample> {
    let Some(found) = crd.spec.versions.iter().find(|candidate| candidate.name == version) else {
        return Vec::new();
    };
    let empty = Schema::default();
    let schema = found
        .schema
        .as_ref()
        .and_then(|schema| schema.open_api_v3_schema.as_ref())
        .unwrap_or(&empty);
    let header = Header {
        api_version: format!("{}/{version}", crd.spec.group),
        kind: &crd.spec.names.kind,
        namespaced: crd.namespaced(),
    };
    let keep_unknown = crd.spec.preserve_unknown_fields;
    let required_only =
        Generator::new(0, keep_unknown).root(schema, Mode::Required, &header, "required-only");
    let mut all_fields = Generator::new(0, keep_unknown);
    let all = all_fields.root(schema, Mode::All, &header, "all-fields");
    let mut samples = vec![required_only, all];
    for variant in 1..all_fields.longest_enum {
        let name = format!("enum-variant-{variant}");
        samples.push(Generator::new(variant, keep_unknown).root(schema, Mode::All, &header, &name));
    }
    samples
}

/// Whether two JSON values are equal, numbers compared by value: `2`, `2.0` and `2e0` are equal
/// (integers are compared exactly, and as floats only against a float).
#[must_use]
pub fn json_eq(a: &Value, b: &Value) -> bool {
    json_diff(a, b).is_none()
}

/// The first difference between two JSON values, with numbers compared as in [`json_eq`]: `None`
/// if they are equal, otherwise where and how they differ
/// (`spec.ports[1].name: "a" != "b"`, `spec.paused: missing on the right`), for assertion
/// messages.
#[must_use]
pub fn json_diff(a: &Value, b: &Value) -> Option<String> {
    let mut path = String::new();
    diff(a, b, &mut path).map(
        |message| {
            if path.is_empty() { message } else { format!("{path}: {message}") }
        },
    )
}

fn diff(a: &Value, b: &Value, path: &mut String) -> Option<String> {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            (!numbers_equal(x, y)).then(|| format!("{x} != {y}"))
        }
        (Value::Array(x), Value::Array(y)) => {
            if x.len() != y.len() {
                return Some(format!("{} items != {} items", x.len(), y.len()));
            }
            for (index, (x, y)) in x.iter().zip(y).enumerate() {
                let length = path.len();
                let _ = write!(path, "[{index}]");
                let found = diff(x, y, path);
                if found.is_some() {
                    return found;
                }
                path.truncate(length);
            }
            None
        }
        (Value::Object(x), Value::Object(y)) => {
            for (key, x_value) in x {
                let length = path.len();
                if !path.is_empty() {
                    path.push('.');
                }
                path.push_str(key);
                let Some(y_value) = y.get(key) else {
                    return Some("missing on the right".to_owned());
                };
                let found = diff(x_value, y_value, path);
                if found.is_some() {
                    return found;
                }
                path.truncate(length);
            }
            let extra = y.keys().find(|key| !x.contains_key(*key))?;
            if !path.is_empty() {
                path.push('.');
            }
            path.push_str(extra);
            Some("missing on the left".to_owned())
        }
        _ => (a != b).then(|| format!("{a} != {b}")),
    }
}

#[allow(clippy::float_cmp, reason = "numbers are compared exactly, as JSON values")]
fn numbers_equal(x: &serde_json::Number, y: &serde_json::Number) -> bool {
    let integer = |number: &serde_json::Number| {
        number.as_i64().map(i128::from).or_else(|| number.as_u64().map(i128::from))
    };
    match (integer(x), integer(y)) {
        (Some(x), Some(y)) => x == y,
        _ => x.as_f64() == y.as_f64(),
    }
}

/// Which properties an object gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Required properties only; one item per array and map.
    Required,
    /// Every property; two items per array and map.
    All,
}

/// What every sample object starts with.
struct Header<'a> {
    api_version: String,
    kind: &'a str,
    namespaced: bool,
}

/// The value `x-kubernetes-preserve-unknown-fields` objects get under [`EXTRA_KEY`].
fn extra_value() -> Value {
    json!({"k": [1, "two"]})
}

/// The key the schema does not know, added to objects that preserve unknown fields.
const EXTRA_KEY: &str = "x-extra";

/// Builds one sample; `counter` numbers leaf values so that they differ from each other.
struct Generator {
    /// Which enum value to use: this one mod the enum's length.
    variant: usize,
    /// The number of leaf values generated so far.
    counter: usize,
    /// The number of non-null values of the longest enum met.
    longest_enum: usize,
    /// The CRD has `preserveUnknownFields: true`: every object without `additionalProperties`
    /// keeps unknown fields.
    keep_unknown: bool,
}

impl Generator {
    fn new(variant: usize, keep_unknown: bool) -> Self {
        Self { variant, counter: 0, longest_enum: 1, keep_unknown }
    }

    /// The next leaf number, from 1.
    fn next(&mut self) -> usize {
        self.counter += 1;
        self.counter
    }

    fn root(&mut self, schema: &Schema, mode: Mode, header: &Header<'_>, name: &str) -> Sample {
        let mut object = Map::new();
        object.insert("apiVersion".to_owned(), Value::from(header.api_version.as_str()));
        object.insert("kind".to_owned(), Value::from(header.kind));
        let mut metadata = Map::new();
        metadata.insert("name".to_owned(), Value::from(name));
        if header.namespaced {
            metadata.insert("namespace".to_owned(), Value::from("default"));
        }
        object.insert("metadata".to_owned(), Value::Object(metadata));
        self.fill_object(schema, mode, self.variant, &[], &mut object);
        Sample { name: name.to_owned(), object: Value::Object(object) }
    }

    /// The value of `schema` (`None` when it allows nothing but `null`); `variant` picks enum
    /// values and `also` names properties to include even in [`Mode::Required`].
    fn value(
        &mut self,
        schema: &Schema,
        mode: Mode,
        variant: usize,
        also: &[String],
    ) -> Option<Value> {
        // An enum whose values cannot have the node's type (Gatekeeper's v1alpha1 puts a list of
        // strings on an array) is no guide: the type is.
        if let Some(values) = schema.enum_.as_ref().filter(|values| enum_fits(schema, values)) {
            let values: Vec<&Value> = values.iter().filter(|value| !value.is_null()).collect();
            if values.is_empty() {
                return None;
            }
            self.longest_enum = self.longest_enum.max(values.len());
            return Some(values[variant % values.len()].clone());
        }
        if schema.int_or_string {
            let n = self.next();
            return Some(if (variant + n).is_multiple_of(2) {
                integer(schema, n)
            } else if schema.is_quantity() {
                quantity(n)
            } else {
                Value::from("25%")
            });
        }
        if schema.embedded_resource {
            let mut object = Map::new();
            object.insert("apiVersion".to_owned(), Value::from("v1"));
            object.insert("kind".to_owned(), Value::from("ConfigMap"));
            object.insert("metadata".to_owned(), json!({"name": "embedded"}));
            self.fill_object(schema, mode, variant, also, &mut object);
            return Some(Value::Object(object));
        }
        let type_ = match schema.type_.as_deref() {
            Some(type_) => type_,
            None if schema.preserves_unknown_fields()
                || !schema.properties.is_empty()
                || schema.additional_properties.is_some() =>
            {
                "object"
            }
            None if schema.items.is_some() => "array",
            None => "string",
        };
        Some(match type_ {
            "object" => {
                let mut object = Map::new();
                self.fill_object(schema, mode, variant, also, &mut object);
                Value::Object(object)
            }
            "array" => self.array(schema, mode, variant),
            "integer" => {
                let n = self.next();
                integer(schema, n)
            }
            "number" => {
                let n = self.next();
                number(schema, n)
            }
            "boolean" => Value::Bool(true),
            _ => {
                let n = self.next();
                string(schema, n)
            }
        })
    }

    /// Adds `schema`'s properties (not those already in `object`), map entries and unknown field
    /// to `object`.
    fn fill_object(
        &mut self,
        schema: &Schema,
        mode: Mode,
        variant: usize,
        also: &[String],
        object: &mut Map<String, Value>,
    ) {
        let wanted = |name: &String| {
            mode == Mode::All || schema.required.contains(name) || also.contains(name)
        };
        for (name, property) in &schema.properties {
            if !wanted(name) || object.contains_key(name) {
                continue;
            }
            if let Some(value) = self.value(property, mode, variant, &[]) {
                object.insert(name.clone(), value);
            }
        }
        let min_properties = at_least(schema.min_properties);
        let max_properties = limit(schema.max_properties);
        if mode == Mode::Required && object.len() < min_properties {
            for (name, property) in &schema.properties {
                if object.len() >= min_properties {
                    break;
                }
                if object.contains_key(name) {
                    continue;
                }
                if let Some(value) = self.value(property, mode, variant, &[]) {
                    object.insert(name.clone(), value);
                }
            }
        }
        if mode == Mode::All {
            // Properties only inside oneOf/anyOf/allOf/not (not structural, but they are fields
            // a user may set), the first schema given for each.
            for (_, _, branch) in schema.junctions() {
                for (name, property) in &branch.properties {
                    if schema.properties.contains_key(name) || object.contains_key(name) {
                        continue;
                    }
                    if let Some(value) = self.value(property, mode, variant, &[]) {
                        object.insert(name.clone(), value);
                    }
                }
            }
        }
        // Where `additionalProperties` has a schema, every key must follow it: no unknown field.
        let typed_map = matches!(
            schema.additional_properties.as_deref(),
            Some(AdditionalProperties::Schema(_))
        );
        let preserve = mode == Mode::All
            && !typed_map
            && (schema.preserves_unknown_fields()
                || (self.keep_unknown && schema.additional_properties.is_none()));
        match schema.additional_properties.as_deref() {
            Some(AdditionalProperties::Schema(values)) => {
                let want = match mode {
                    Mode::Required => 1,
                    Mode::All => 2,
                };
                let room = max_properties.saturating_sub(object.len() + usize::from(preserve));
                let count = want.max(min_properties.saturating_sub(object.len())).min(room);
                for index in 0..count {
                    let (mode, variant) = item_mode(mode, variant, index);
                    if let Some(value) = self.value(values, mode, variant, &[]) {
                        object.insert(format!("key-{}", index + 1), value);
                    }
                }
            }
            Some(AdditionalProperties::Allowed(true)) => {
                let n = self.next();
                object.insert("key-1".to_owned(), Value::from(format!("value-{n}")));
                if mode == Mode::All {
                    object.insert("key-2".to_owned(), extra_value());
                }
            }
            Some(AdditionalProperties::Allowed(false)) | None => {}
        }
        if preserve && object.len() < max_properties {
            object.insert(EXTRA_KEY.to_owned(), extra_value());
        }
    }

    fn array(&mut self, schema: &Schema, mode: Mode, variant: usize) -> Value {
        let want = match mode {
            Mode::Required => 1,
            Mode::All => 2,
        };
        let count = want.max(at_least(schema.min_items)).min(limit(schema.max_items));
        let mut items = Vec::with_capacity(count);
        for index in 0..count {
            let (item_mode, item_variant) = item_mode(mode, variant, index);
            let item = match schema.items.as_deref() {
                Some(Items::Schema(item)) => {
                    self.value(item, item_mode, item_variant, &schema.list_map_keys)
                }
                Some(Items::Tuple(tuple)) => match tuple.get(index) {
                    Some(item) => self.value(item, item_mode, item_variant, &schema.list_map_keys),
                    None => break,
                },
                None => {
                    let n = self.next();
                    Some(Value::from(format!("sample-{n}")))
                }
            };
            items.extend(item);
        }
        match schema.list_type.as_deref() {
            Some("set") => dedup_by_key(&mut items, Clone::clone),
            Some("map") => dedup_by_key(&mut items, |item| {
                let keys: Vec<Value> = schema
                    .list_map_keys
                    .iter()
                    .map(|key| item.get(key).cloned().unwrap_or(Value::Null))
                    .collect();
                Value::Array(keys)
            }),
            _ => {}
        }
        Value::Array(items)
    }
}

/// The mode and enum variant of item `index` of an array or map: the first item is like its
/// container, later ones have only required properties (keeping nested lists from doubling at
/// every level) and the next enum values (keeping set items distinct).
fn item_mode(mode: Mode, variant: usize, index: usize) -> (Mode, usize) {
    if index == 0 { (mode, variant) } else { (Mode::Required, variant + index) }
}

/// A `maxItems`-like limit as a `usize`, absent meaning no limit.
fn limit(bound: Option<u64>) -> usize {
    bound.map_or(usize::MAX, |bound| usize::try_from(bound).unwrap_or(usize::MAX))
}

/// A `minItems`-like bound as a `usize`, absent meaning 0.
fn at_least(bound: Option<u64>) -> usize {
    bound.map_or(0, |bound| usize::try_from(bound).unwrap_or(usize::MAX))
}

/// Keeps the first of the items with the same key.
fn dedup_by_key(items: &mut Vec<Value>, key: impl Fn(&Value) -> Value) {
    let mut seen = Vec::new();
    items.retain(|item| {
        let key = key(item);
        if seen.contains(&key) {
            false
        } else {
            seen.push(key);
            true
        }
    });
}

/// Whether some value of `values` has `schema`'s type (any value does when it has none).
fn enum_fits(schema: &Schema, values: &[Value]) -> bool {
    values.iter().any(|value| match (schema.type_.as_deref(), value) {
        (None, _)
        | (Some("object"), Value::Object(_))
        | (Some("array"), Value::Array(_))
        | (Some("string"), Value::String(_))
        | (Some("boolean"), Value::Bool(_))
        | (Some("integer" | "number"), Value::Number(_)) => true,
        (Some(other), _) => {
            !["object", "array", "string", "boolean", "integer", "number"].contains(&other)
        }
    })
}

/// A quantity in canonical form (`1Gi` … `9Gi`).
fn quantity(n: usize) -> Value {
    Value::from(format!("{}Gi", n % 9 + 1))
}

/// A string for leaf number `n`, following `format`, the quantity pattern and the length limits.
fn string(schema: &Schema, n: usize) -> Value {
    if schema.is_quantity() {
        return quantity(n);
    }
    let text = match schema.format.as_deref() {
        Some("date-time") => format!("2024-01-02T03:04:{:02}Z", (n + 4) % 60),
        Some("date") => format!("2024-01-{:02}", n % 28 + 1),
        Some("byte") => base64(format!("sample-{n}").as_bytes()),
        Some("ipv4") => format!("192.0.2.{}", n % 254 + 1),
        Some("ipv6") => format!("2001:db8::{:x}", n % 0xffff + 1),
        Some("cidr") => format!("10.{}.{}.0/24", n / 256 % 256, n % 256),
        Some("mac") => format!("02:00:00:00:{:02x}:{:02x}", n / 256 % 256, n % 256),
        Some("uuid" | "uuid4") => format!("00000000-0000-4000-8000-{n:012x}"),
        Some("hostname") => format!("sample-{n}.example.com"),
        Some("email") => format!("sample-{n}@example.com"),
        Some("uri" | "url" | "https") => format!("https://example.com/sample-{n}"),
        Some("duration") => format!("{n}s"),
        _ => fit(format!("sample-{n}"), n, schema.min_length, schema.max_length),
    };
    Value::from(text)
}

/// `text` shortened or padded to `min..=max` characters (`text` is ASCII): too long, it becomes
/// `n` in lowercase letters (`a`, `b`, … `ba`), cut to `max`; too short, it is padded with `x`.
fn fit(text: String, n: usize, min: Option<u64>, max: Option<u64>) -> String {
    let max = limit(max);
    let min = at_least(min);
    let mut text = text;
    if text.len() > max {
        text = letters(n);
        text.truncate(max);
    }
    while text.len() < min.min(max) {
        text.push('x');
    }
    text
}

/// `n` written with the letters `a`–`z` as digits.
fn letters(mut n: usize) -> String {
    let mut digits = Vec::new();
    loop {
        digits.push(b"abcdefghijklmnopqrstuvwxyz"[n % 26]);
        n /= 26;
        if n == 0 {
            break;
        }
    }
    digits.iter().rev().map(|&digit| char::from(digit)).collect()
}

/// Standard base64 with padding, the form the API server writes `[]byte` fields in.
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut text = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let group = chunk
            .iter()
            .enumerate()
            .fold(0u32, |group, (index, &byte)| group | u32::from(byte) << (16 - 8 * index));
        for index in 0..4 {
            if index <= chunk.len() {
                text.push(char::from(ALPHABET[(group >> (18 - 6 * index) & 63) as usize]));
            } else {
                text.push('=');
            }
        }
    }
    text
}

/// The inclusive integer bounds of `schema`, from `minimum`, `maximum` and their exclusive flags.
#[allow(
    clippy::cast_possible_truncation,
    reason = "float-to-int casts saturate, which is what a bound needs"
)]
fn integer_bounds(schema: &Schema) -> (Option<i64>, Option<i64>) {
    let low = schema.minimum.map(|minimum| {
        let low = minimum.ceil() as i64;
        if schema.exclusive_minimum && minimum.fract() == 0.0 { low.saturating_add(1) } else { low }
    });
    let high = schema.maximum.map(|maximum| {
        let high = maximum.floor() as i64;
        if schema.exclusive_maximum && maximum.fract() == 0.0 {
            high.saturating_sub(1)
        } else {
            high
        }
    });
    (low, high)
}

/// A small integer within the bounds of `schema`, varying with `n`.
#[allow(clippy::cast_possible_truncation, clippy::cast_possible_wrap, reason = "n % 100 is small")]
fn integer(schema: &Schema, n: usize) -> Value {
    let (low, high) = integer_bounds(schema);
    let start = match (low, high) {
        (Some(low), _) => low,
        (None, Some(high)) if high < 1 => high,
        (None, _) => 1,
    };
    let span = high.map_or(100, |high| high.saturating_sub(start).saturating_add(1).clamp(1, 100));
    let mut value = start.saturating_add((n % 100) as i64 % span);
    if let Some(step) = schema.multiple_of.filter(|step| *step >= 1.0 && step.fract() == 0.0) {
        let step = step as i64;
        let up = value.div_euclid(step).saturating_add(i64::from(value.rem_euclid(step) != 0));
        value = up.saturating_mul(step);
        if high.is_some_and(|high| value > high) {
            value = value.saturating_sub(step);
        }
    }
    Value::from(value)
}

/// A number with a fractional part within the bounds of `schema`, varying with `n`.
#[allow(clippy::cast_precision_loss, reason = "n % 10 is small")]
fn number(schema: &Schema, n: usize) -> Value {
    let low = schema.minimum.unwrap_or(f64::NEG_INFINITY);
    let high = schema.maximum.unwrap_or(f64::INFINITY);
    let fits = |value: f64| {
        value.is_finite()
            && value.fract() != 0.0
            && (if schema.exclusive_minimum { value > low } else { value >= low })
            && (if schema.exclusive_maximum { value < high } else { value <= high })
    };
    let step = (n % 10) as f64;
    let candidates = [
        1.5 + step,
        low + 0.5 + step,
        low + 0.5,
        high - 0.5,
        f64::midpoint(low, high),
        low + (high - low) / 4.0,
        low + (high - low) / 3.0,
    ];
    let value = candidates.into_iter().find(|value| fits(*value)).unwrap_or(if low.is_finite() {
        low
    } else if high.is_finite() {
        high
    } else {
        1.5
    });
    serde_json::Number::from_f64(value).map_or(Value::from(1.5), Value::Number)
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use serde_json::{Value, json};

    use super::{Sample, base64, json_diff, json_eq, samples};
    use crate::schema::crd::CustomResourceDefinition;
    use crate::schema::parse_str;

    /// A one-version CRD whose root schema is `schema` (YAML, indented for `openAPIV3Schema`).
    fn crd(scope: &str, schema: &str) -> CustomResourceDefinition {
        let text = format!(
            "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
spec:
  group: example.com
  names: {{kind: Widget, plural: widgets}}
  scope: {scope}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
{schema}"
        );
        parse_str(Path::new("widgets.yaml"), &text).unwrap().remove(0).crd
    }

    fn sample<'a>(samples: &'a [Sample], name: &str) -> &'a Value {
        &samples.iter().find(|sample| sample.name == name).unwrap().object
    }

    /// A schema using every rule of the module docs.
    const RULES: &str = r"        type: object
        required: [spec]
        x-kubernetes-preserve-unknown-fields: true
        properties:
          spec:
            type: object
            required: [name, ports]
            properties:
              name: {type: string}
              short: {type: string, maxLength: 3}
              long: {type: string, minLength: 20}
              created: {type: string, format: date-time}
              data: {type: string, format: byte}
              replicas: {type: integer, format: int32, minimum: 3, maximum: 4}
              negative: {type: integer, maximum: -10}
              odd: {type: integer, minimum: 0, exclusiveMinimum: true, maximum: 1}
              ratio: {type: number, minimum: 0, maximum: 1}
              scale: {type: number}
              enabled: {type: boolean}
              nullable: {type: string, nullable: true}
              onlyNull: {enum: [null], nullable: true}
              port: {x-kubernetes-int-or-string: true}
              port2: {x-kubernetes-int-or-string: true}
              memory:
                x-kubernetes-int-or-string: true
                pattern: ^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$
              labels:
                type: object
                additionalProperties: {type: string}
              anything:
                type: object
                additionalProperties: true
              empty: {type: object}
              raw: {x-kubernetes-preserve-unknown-fields: true}
              template:
                type: object
                x-kubernetes-embedded-resource: true
                properties:
                  data: {type: string}
              ports:
                type: array
                x-kubernetes-list-type: map
                x-kubernetes-list-map-keys: [protocol, port]
                items:
                  type: object
                  required: [port]
                  properties:
                    port: {type: integer}
                    protocol: {type: string, enum: [TCP, UDP], default: TCP}
                    name: {type: string}
              grid:
                type: array
                minItems: 3
                items:
                  type: array
                  maxItems: 1
                  items: {type: string}
              tags:
                type: array
                x-kubernetes-list-type: set
                items: {type: string, enum: [a]}
            oneOf:
            - required: [name]
            - properties:
                hidden: {type: string}
";

    fn rule_samples() -> Vec<Sample> {
        samples(&crd("Namespaced", RULES), "v1")
    }

    #[test]
    fn required_only_has_the_required_properties_and_map_keys() {
        let samples = rule_samples();
        let names: Vec<_> = samples.iter().map(|sample| sample.name.as_str()).collect();
        assert_eq!(names, ["required-only", "all-fields", "enum-variant-1"]);

        // A `map` list's keys count as required.
        let required = sample(&samples, "required-only");
        assert_eq!(
            required,
            &json!({
                "apiVersion": "example.com/v1",
                "kind": "Widget",
                "metadata": {"name": "required-only", "namespace": "default"},
                "spec": {"name": "sample-1", "ports": [{"port": 3, "protocol": "TCP"}]},
            })
        );

        let variant = sample(&samples, "enum-variant-1");
        assert_eq!(variant["spec"]["ports"][0]["protocol"], "UDP");
        assert_eq!(variant["metadata"]["name"], "enum-variant-1");
    }

    #[test]
    fn all_fields_scalars_follow_the_rules() {
        let samples = rule_samples();
        let all = sample(&samples, "all-fields");
        let spec = &all["spec"];
        assert_eq!(all["x-extra"], json!({"k": [1, "two"]}));
        let text = |key: &str| spec[key].as_str().unwrap().to_owned();
        assert!(text("name").starts_with("sample-"));
        assert!(text("short").len() <= 3);
        assert!(text("long").len() >= 20 && text("long").starts_with("sample-"));
        assert!(text("created").starts_with("2024-01-02T03:04:") && text("created").ends_with('Z'));
        assert_eq!(text("created").len(), "2024-01-02T03:04:05Z".len());
        assert!(spec["replicas"] == 3 || spec["replicas"] == 4);
        assert!(spec["negative"].as_i64().unwrap() <= -10);
        assert_eq!(spec["odd"], 1);
        let ratio = spec["ratio"].as_f64().unwrap();
        assert!(ratio > 0.0 && ratio < 1.0 && spec["ratio"].is_f64());
        assert!(spec["scale"].is_f64() && spec["scale"].as_f64().unwrap().fract() != 0.0);
        assert_eq!(spec["enabled"], true);
        assert!(spec["nullable"].is_string());
        assert!(spec.get("onlyNull").is_none(), "never null");
        let int_or_string = [&spec["port"], &spec["port2"]];
        assert!(int_or_string.iter().any(|value| value.is_i64()), "{int_or_string:?}");
        assert!(int_or_string.contains(&&json!("25%")), "{int_or_string:?}");
        assert!(spec["memory"].is_i64() || text("memory").ends_with("Gi"), "{}", spec["memory"]);
        assert!(
            text("data").len() % 4 == 0 && text("data").starts_with("c2FtcGxlL"),
            "{}",
            text("data")
        );
    }

    #[test]
    fn rule_samples_are_valid_and_cover_every_enum_value() {
        super::check_samples(Path::new("rules"), &crd("Namespaced", RULES), "v1")
            .unwrap_or_else(|problem| panic!("{problem}"));
    }

    #[test]
    fn all_fields_containers_follow_the_rules() {
        let samples = rule_samples();
        let spec = &sample(&samples, "all-fields")["spec"];
        assert_eq!(spec["labels"].as_object().unwrap().len(), 2);
        assert_eq!(spec["anything"].as_object().unwrap().len(), 2);
        assert_eq!(spec["empty"], json!({}));
        assert_eq!(spec["raw"], json!({"x-extra": {"k": [1, "two"]}}));
        assert_eq!(spec["template"]["apiVersion"], "v1");
        assert_eq!(spec["template"]["kind"], "ConfigMap");
        assert_eq!(spec["template"]["metadata"], json!({"name": "embedded"}));
        assert!(spec["template"]["data"].is_string());
        let ports = spec["ports"].as_array().unwrap();
        assert_eq!(ports.len(), 2);
        assert_eq!(ports[0]["protocol"], "TCP");
        assert!(ports[0]["name"].is_string());
        assert_eq!(ports[1]["protocol"], "UDP", "map keys are included in later items");
        assert!(ports[1].get("name").is_none(), "later items have only required properties");
        let grid = spec["grid"].as_array().unwrap();
        assert_eq!(grid.len(), 3);
        assert!(grid.iter().all(|row| row.as_array().unwrap().len() == 1));
        assert_eq!(spec["tags"], json!(["a"]), "set items are distinct");
        assert!(spec["hidden"].is_string(), "a property only inside oneOf is set");
    }

    #[test]
    fn cluster_scoped_objects_have_no_namespace_and_unknown_versions_no_samples() {
        let crd = crd("Cluster", "        type: object\n");
        let samples = samples(&crd, "v1");
        assert_eq!(
            samples.iter().map(|sample| &sample.object).collect::<Vec<_>>(),
            [
                &json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "required-only"}}),
                &json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "all-fields"}}),
            ]
        );
        assert!(super::samples(&crd, "v2").is_empty());
    }

    #[test]
    fn json_eq_compares_numbers_by_value() {
        assert!(json_eq(&json!({"a": [2, 1.5], "b": "x"}), &json!({"b": "x", "a": [2.0, 1.5]})));
        assert!(json_eq(&json!(u64::MAX), &json!(u64::MAX)));
        assert!(!json_eq(&json!(u64::MAX), &json!(u64::MAX - 1)));
        assert!(!json_eq(&json!(-1), &json!(u64::MAX)));
        assert!(!json_eq(&json!(1), &json!("1")));
        assert!(!json_eq(&json!(null), &json!({})));
        assert_eq!(
            json_diff(&json!({"a": {"b": [1, 2]}}), &json!({"a": {"b": [1, 3]}})).unwrap(),
            "a.b[1]: 2 != 3"
        );
        assert_eq!(json_diff(&json!({"a": 1}), &json!({})).unwrap(), "a: missing on the right");
        assert_eq!(json_diff(&json!({}), &json!({"z": 1})).unwrap(), "z: missing on the left");
        assert_eq!(json_diff(&json!([1]), &json!([1, 2])).unwrap(), "1 items != 2 items");
        assert_eq!(json_diff(&json!("a"), &json!(true)).unwrap(), "\"a\" != true");
        assert_eq!(json_diff(&json!({"a": [1.0]}), &json!({"a": [1]})), None);
    }

    #[test]
    fn base64_is_standard_and_padded() {
        assert_eq!(base64(b""), "");
        assert_eq!(base64(b"f"), "Zg==");
        assert_eq!(base64(b"fo"), "Zm8=");
        assert_eq!(base64(b"foo"), "Zm9v");
        assert_eq!(base64(b"foob"), "Zm9vYg==");
        assert_eq!(base64(&[0xfb, 0xff]), "+/8=");
    }
}
