//! Fuzz target `field_selector`: the `fieldSelector` of a list or watch, as the server reads it
//! from a query string ([`ListParams::parse`]), on selectors built from pods' field labels with
//! values that need escaping, mutated selectors, and random text.
//!
//! Properties:
//! - it reads a selector as kube-apiserver does (apimachinery's `fields.ParseSelector`, written
//!   out below as a model): the same requirements, or an error where that refuses;
//! - what it accepts round-trips: written back with apimachinery's escaping, it reads the same;
//! - it never panics.
//!
//! It runs in `cargo test` for a short budget and in `cargo xtask fuzz`; a failure prints its
//! seed, and `ARBTEST_SEED=0x… cargo test -p embedded-apiserver --lib fuzz::field_selector`
//! replays it.

use std::sync::Arc;

use fastrand::Rng;
use informer_fuzz::{Target, Unstructured, arbitrary, bytes};

use crate::catalog::{ApiResource, Catalog};
use crate::query::{FieldRequirement, ListParams, Query};

#[test]
fn field_selector() {
    Target::new("field_selector", property).run();
}

/// Field labels: those pods take, `spec.host` (converted), and some they refuse.
const FIELDS: &[&str] = &[
    "metadata.name",
    "metadata.namespace",
    "spec.nodeName",
    "status.phase",
    "spec.host",
    "spec.unknown",
    "metadata.name ",
    "",
];

/// Selectors to mutate.
const SEEDS: &[&str] = &[
    "metadata.name=web-1",
    "metadata.name!=web-1,metadata.name!=db-0",
    "metadata.namespace==other,status.phase!=Failed",
    r"metadata.name=a\,b\=c\\d",
    "spec.nodeName=",
];

const TOKENS: &[&[u8]] =
    &[b"=", b"==", b"!=", b"!", b",", b"\\", b"\\,", b"\\=", b"\\\\", b" ", b"%"];

fn pods() -> Arc<ApiResource> {
    Catalog::builtin().find("", "v1", "pods").unwrap()
}

fn property(u: &mut Unstructured<'_>) -> arbitrary::Result<()> {
    let mut rng = Rng::with_seed(u.arbitrary()?);
    let selector = match u.int_in_range(0..=3)? {
        0 | 1 => {
            let terms: Vec<String> = (0..rng.usize(0..=4))
                .map(|_| {
                    let field = FIELDS[rng.usize(0..FIELDS.len())];
                    let op = ["=", "==", "!="][rng.usize(0..3)];
                    format!("{field}{op}{}", escape(&value(&mut rng)))
                })
                .collect();
            terms.join(",")
        }
        2 => {
            let mut text = SEEDS[rng.usize(0..SEEDS.len())].as_bytes().to_vec();
            let others: Vec<&[u8]> = SEEDS.iter().map(|s| s.as_bytes()).collect();
            let ops = rng.usize(1..=4);
            bytes::mutate(&mut rng, &mut text, &others, TOKENS, ops);
            String::from_utf8_lossy(&text).into_owned()
        }
        _ => String::from_utf8_lossy(u.bytes(u.len())?).into_owned(),
    };
    check(&selector);
    Ok(())
}

/// A value with the characters a field selector escapes, spaces and non-ASCII.
fn value(rng: &mut Rng) -> String {
    let alphabet: Vec<char> = "ab-.0 ,=\\!é".chars().collect();
    (0..rng.usize(0..=8)).map(|_| alphabet[rng.usize(0..alphabet.len())]).collect()
}

/// The properties, for one selector.
pub(crate) fn check(selector: &str) {
    informer_fuzz::note("selector.txt", selector.as_bytes());
    let resource = pods();
    let ours = parse(selector, &resource);
    let model = apimachinery(selector, &resource);
    match (&ours, &model) {
        (Ok(ours), Ok(model)) => {
            assert_eq!(
                sorted(ours.clone()),
                sorted(model.clone()),
                "{selector:?} is read otherwise than kube-apiserver reads it"
            );
            let written: Vec<String> = ours
                .iter()
                .map(|r| {
                    format!("{}{}{}", r.field, if r.equals { "=" } else { "!=" }, escape(&r.value))
                })
                .collect();
            // Terms are sorted as they are read (as apimachinery does); the order means nothing.
            let again = parse(&written.join(","), &resource).map(sorted);
            assert_eq!(again, Ok(sorted(ours.clone())), "{selector:?} does not round-trip");
        }
        (Err(_), Err(())) => {}
        (Ok(ours), Err(())) => {
            panic!("{selector:?} is refused by kube-apiserver, but read as {ours:?}")
        }
        // This server refuses selectors past its hostile-client bounds, which the model
        // (apimachinery's parser alone) does not have.
        (Err(_), Ok(model))
            if selector.len() > crate::query::MAX_SELECTOR_BYTES
                || model.len() > crate::query::MAX_SELECTOR_REQUIREMENTS => {}
        (Err(message), Ok(model)) => {
            panic!("{selector:?} is read by kube-apiserver as {model:?}, but refused: {message}")
        }
    }
}

/// The server's reading of `fieldSelector=selector`, through the query string.
fn parse(selector: &str, resource: &ApiResource) -> Result<Vec<FieldRequirement>, String> {
    let query = Query::parse(Some(&format!("fieldSelector={}", percent_encode(selector))));
    assert_eq!(query.get("fieldSelector"), Some(selector), "the query string carries the selector");
    ListParams::parse(&query, resource, false)
        .map(|params| params.field_selector)
        .map_err(|e| e.message)
}

fn sorted(mut requirements: Vec<FieldRequirement>) -> Vec<FieldRequirement> {
    requirements
        .sort_by(|a, b| (&a.field, a.equals, &a.value).cmp(&(&b.field, b.equals, &b.value)));
    requirements
}

fn percent_encode(text: &str) -> String {
    text.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                char::from(b).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// apimachinery's `fields.EscapeValue`.
fn escape(value: &str) -> String {
    value.replace('\\', r"\\").replace(',', r"\,").replace('=', r"\=")
}

/// apimachinery's `fields.ParseSelector` (`pkg/fields/selector.go`) with the pods' field label
/// conversion: terms split on unescaped commas; each split at the first `!=`, `==` or `=`; the
/// value unescaped strictly (only `\\`, `\,` and `\=`; a bare `,` or `=` is an error); no
/// whitespace trimmed anywhere.
fn apimachinery(selector: &str, resource: &ApiResource) -> Result<Vec<FieldRequirement>, ()> {
    let mut requirements = Vec::new();
    for term in split_terms(selector) {
        if term.is_empty() {
            continue;
        }
        let (field, op, value) = split_term(term).ok_or(())?;
        let value = unescape(value)?;
        let field = resource.field_labels.convert(field).map_err(|_| ())?;
        requirements.push(FieldRequirement { field: field.to_owned(), equals: op != "!=", value });
    }
    Ok(requirements)
}

fn split_terms(selector: &str) -> Vec<&str> {
    if selector.is_empty() {
        return Vec::new();
    }
    let (mut terms, mut start, mut slash) = (Vec::new(), 0, false);
    for (i, c) in selector.char_indices() {
        if slash {
            slash = false;
        } else if c == '\\' {
            slash = true;
        } else if c == ',' {
            terms.push(&selector[start..i]);
            start = i + 1;
        }
    }
    terms.push(&selector[start..]);
    terms
}

fn split_term(term: &str) -> Option<(&str, &str, &str)> {
    for (i, _) in term.char_indices() {
        for op in ["!=", "==", "="] {
            if term[i..].starts_with(op) {
                return Some((&term[..i], op, &term[i + op.len()..]));
            }
        }
    }
    None
}

fn unescape(value: &str) -> Result<String, ()> {
    let (mut out, mut slash) = (String::new(), false);
    for c in value.chars() {
        match (slash, c) {
            (true, '\\' | ',' | '=') => {
                out.push(c);
                slash = false;
            }
            (true, _) | (false, ',' | '=') => return Err(()),
            (false, '\\') => slash = true,
            (false, c) => out.push(c),
        }
    }
    if slash { Err(()) } else { Ok(out) }
}
