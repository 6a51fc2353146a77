//! `list_splitter` and `list_page_decoder`: the list splitter ([`ListSplitter`]) and the page
//! decoder on top of it ([`PageDecoder`]), on recorded list pages (pods, deployments, a custom
//! resource) laid out anew, mutated, or replaced by random bytes.
//!
//! Properties of the splitter:
//! - any body, cut into random chunks, gives the same pieces (and error) as whole, and each
//!   piece's offset points at its bytes in the body;
//! - its pieces, concatenated, are `serde_json`'s view of the body: when the body is a JSON
//!   object, the splitter accepts it and hands out its members (and `items`' elements) with
//!   equal values, repeated keys included; when the splitter accepts a body and every piece is
//!   JSON, the body is JSON.
//!
//! Properties of the page decoder:
//! - any body gives the same page or error in any chunking, and an error names the resource;
//! - when the body is a JSON object without repeated top-level keys, the decoder returns a page
//!   exactly when the body is a `PodList` with `items` and a `resourceVersion` whose items all
//!   decode, and then its items equal `serde_json`'s decode of each item (without
//!   `managedFields` unless kept), with the same version and continue token, reported first.
//!   The reference is `serde_json` reading the body into a type, which, like the decoder, skips
//!   the members it does not read without checking their strings' UTF-8.

use std::fmt;
use std::sync::{Arc, OnceLock};

use fastrand::Rng;
use informer_fuzz::json::{self, Layout};
use informer_fuzz::{Unstructured, arbitrary, bytes, chunk_ends};
use k8s_openapi::api::core::v1::Pod;
use serde::Deserialize;
use serde::de::{IgnoredAny, MapAccess, Visitor};
use serde_json::Value;

use crate::list_watch::list_page::PageDecoder;
use crate::list_watch::list_split::{ListSplitter, Piece};
use informer_runtime::codec::prune::ObjectSeed;

struct Seeds {
    /// Pod lists, which the page decoder takes.
    pod_lists: Vec<Value>,
    /// Every list page, pods or not.
    lists: Vec<Value>,
    raw: Vec<Vec<u8>>,
}

fn seeds() -> &'static Seeds {
    static SEEDS: OnceLock<Seeds> = OnceLock::new();
    SEEDS.get_or_init(|| {
        let pods = [
            "kind-v1-36-job-pods-podlist.compact.json",
            "kind-v1-36-kube-system-podlist.compact.json",
        ];
        let others = [
            "kind-v1-36-kube-system-deploymentlist.compact.json",
            "kind-v1-36-foobar-cr-list.compact.json",
        ];
        let raw: Vec<Vec<u8>> =
            pods.iter().chain(&others).map(|name| super::recorded(name)).collect();
        let lists: Vec<Value> =
            raw.iter().map(|body| serde_json::from_slice(body).unwrap()).collect();
        Seeds { pod_lists: lists[..pods.len()].to_vec(), lists, raw }
    })
}

/// A list body: a seed re-laid out, with values changed, bytes mutated, or random bytes.
fn body(u: &mut Unstructured<'_>, rng: &mut Rng, lists: &[Value]) -> arbitrary::Result<Vec<u8>> {
    let seeds = seeds();
    let mode = u.int_in_range(0..=4)?;
    if mode == 4 {
        return Ok(u.bytes(u.len())?.to_vec());
    }
    let mut value = lists[rng.usize(0..lists.len())].clone();
    // Fewer items: a page of a longer list, and faster runs.
    if let Some(items) = value.get_mut("items").and_then(Value::as_array_mut) {
        let keep = rng.usize(0..=items.len().min(8));
        let start = rng.usize(0..=items.len() - keep);
        *items = items[start..start + keep].to_vec();
    }
    if rng.bool() {
        value["metadata"]["continue"] = Value::String(json::string(rng));
    }
    if mode >= 1 {
        let ops = rng.usize(1..=4);
        json::mutate(rng, &mut value, &seeds.lists, ops);
    }
    let layout = Layout { newlines: true, duplicates: mode >= 1, reorder: u.ratio(1, 2)? };
    let mut body = Vec::new();
    json::write(rng, &value, layout, &mut body);
    if mode >= 2 {
        let raw: Vec<&[u8]> = seeds.raw.iter().map(Vec::as_slice).collect();
        let ops = rng.usize(1..=6);
        bytes::mutate(rng, &mut body, &raw, bytes::JSON_TOKENS, ops);
    }
    Ok(body)
}

/// One piece, owned: the member's key (`None` for an item), its bytes, its offset.
type OwnedPiece = (Option<String>, Vec<u8>, u64);

/// Every piece of `body` fed in chunks ending at `ends`, or the splitter's error.
fn split(body: &[u8], ends: &[usize]) -> Result<Vec<OwnedPiece>, String> {
    // No cap: the cap has tests of its own, and the property compares with serde_json.
    let mut splitter = ListSplitter::new(usize::MAX);
    let mut pieces = Vec::new();
    let mut start = 0;
    for &end in ends {
        splitter.push(&body[start..end]);
        start = end;
        while let Some(piece) = splitter.next_piece().map_err(|e| e.to_string())? {
            pieces.push(match piece {
                Piece::Member { key, value, offset } => {
                    (Some(key.to_owned()), value.to_vec(), offset)
                }
                Piece::Item { value, offset } => (None, value.to_vec(), offset),
            });
        }
    }
    splitter.finish().map_err(|e| e.to_string())?;
    Ok(pieces)
}

/// A JSON object's members in order, repeated keys kept (a [`Value`] keeps the last).
struct Members(Vec<(String, Value)>);

impl<'de> Deserialize<'de> for Members {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct MembersVisitor;
        impl<'de> Visitor<'de> for MembersVisitor {
            type Value = Members;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Members, A::Error> {
                let mut members = Vec::new();
                while let Some(key) = map.next_key::<String>()? {
                    members.push((key, map.next_value::<Value>()?));
                }
                Ok(Members(members))
            }
        }
        deserializer.deserialize_map(MembersVisitor)
    }
}

/// A JSON object's keys in order, repeated keys kept; the values are skipped.
struct Keys(Vec<String>);

impl<'de> Deserialize<'de> for Keys {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeysVisitor;
        impl<'de> Visitor<'de> for KeysVisitor {
            type Value = Keys;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Keys, A::Error> {
                let mut keys = Vec::new();
                while let Some(key) = map.next_key::<String>()? {
                    map.next_value::<IgnoredAny>()?;
                    keys.push(key);
                }
                Ok(Keys(keys))
            }
        }
        deserializer.deserialize_map(KeysVisitor)
    }
}

pub(super) fn splitter_property(u: &mut Unstructured<'_>) -> arbitrary::Result<()> {
    let mut rng = Rng::with_seed(u.arbitrary()?);
    let body = body(u, &mut rng, &seeds().lists)?;
    informer_fuzz::note("list.json", &body);
    let whole = split(&body, &[body.len()]);
    let ends = chunk_ends(u, body.len())?;
    let chunked = split(&body, &ends);
    if chunked != whole {
        let shown = |split: &Result<Vec<OwnedPiece>, String>| {
            split.as_ref().map(Vec::len).map_err(Clone::clone)
        };
        panic!(
            "chunked and whole splits differ: {:?} pieces vs {:?}",
            shown(&chunked),
            shown(&whole)
        );
    }
    let reference = serde_json::from_slice::<Members>(&body);
    let too_deep = matches!(&reference, Err(e) if e.to_string().contains("recursion limit"));
    match (whole, reference) {
        (Ok(pieces), reference) => {
            for (_, value, offset) in &pieces {
                let at = usize::try_from(*offset).unwrap();
                assert_eq!(
                    &body[at..at + value.len()],
                    value.as_slice(),
                    "a piece's offset is off"
                );
            }
            let parsed: Result<Vec<(Option<String>, Value)>, _> = pieces
                .iter()
                .map(|(key, value, _)| serde_json::from_slice(value).map(|v| (key.clone(), v)))
                .collect();
            match (parsed, reference) {
                (Ok(parsed), Ok(Members(members))) => {
                    let expected: Vec<(Option<String>, Value)> = members
                        .into_iter()
                        .flat_map(|(key, value)| match value {
                            Value::Array(items) if key == "items" => {
                                items.into_iter().map(|item| (None, item)).collect::<Vec<_>>()
                            }
                            value => vec![(Some(key), value)],
                        })
                        .collect();
                    assert!(
                        parsed == expected,
                        "the pieces are not serde_json's members and items"
                    );
                }
                (Ok(_), Err(e)) => {
                    assert!(too_deep, "the splitter accepted a body that is not JSON: {e}");
                }
                (Err(e), Ok(_)) => panic!("a piece of a valid JSON object is not JSON: {e}"),
                (Err(_), Err(_)) => {}
            }
        }
        (Err(error), Ok(_)) => panic!("the splitter refused a JSON object: {error}"),
        (Err(_), Err(_)) => {}
    }
    Ok(())
}

/// What the decoder made of a page: its items, version and continue token, or the error; and
/// the tokens it reported early.
type Page = (Result<(Vec<Arc<Pod>>, String, Option<String>), String>, Vec<String>);

fn decode_page(body: &[u8], ends: &[usize], keep_managed_fields: bool) -> Page {
    let mut reported = Vec::new();
    let mut decoder = PageDecoder::<Pod, _>::new(
        Arc::new(crate::request::Target::of::<Pod>()),
        keep_managed_fields,
        |t: &str| {
            reported.push(t.to_owned());
        },
    );
    let mut start = 0;
    let mut result = Ok(());
    for &end in ends {
        result = decoder.push(&body[start..end]);
        start = end;
        if result.is_err() {
            break;
        }
    }
    let page = result.and_then(|()| decoder.finish()).map_err(|e| e.to_string());
    let page = page.map(|list| (list.items, list.resource_version, list.continue_token));
    (page, reported)
}

/// `serde_json`'s view of a list body, as the reference the decoder must match: one typed
/// read of the whole body, items included.
#[derive(Deserialize)]
struct ReferenceList<const KEEP: bool> {
    #[serde(default)]
    kind: Option<String>,
    #[serde(default)]
    metadata: Option<ReferenceMeta>,
    /// Absent, `null`, or the items.
    #[expect(clippy::option_option, reason = "absent and `null` differ here, as in the decoder")]
    #[serde(default, deserialize_with = "present")]
    items: Option<Option<Pods<KEEP>>>,
    // The decoder reads these as strings (for a `Status` in place of a list).
    #[serde(default)]
    #[expect(dead_code, reason = "only its type is checked")]
    reason: Option<String>,
    #[serde(default)]
    #[expect(dead_code, reason = "only its type is checked")]
    message: Option<String>,
}

#[derive(Deserialize)]
struct ReferenceMeta {
    #[serde(default, rename = "resourceVersion")]
    resource_version: Option<String>,
    #[serde(default, rename = "continue")]
    continue_token: Option<String>,
}

/// Pods, each read through the decoders' [`ObjectSeed`] (`managedFields` kept if `KEEP`).
struct Pods<const KEEP: bool>(Vec<Pod>);

impl<'de, const KEEP: bool> Deserialize<'de> for Pods<KEEP> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct PodsVisitor<const KEEP: bool>;
        impl<'de, const KEEP: bool> Visitor<'de> for PodsVisitor<KEEP> {
            type Value = Pods<KEEP>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an array of pods")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<Pods<KEEP>, A::Error> {
                let mut pods = Vec::new();
                while let Some(pod) = seq.next_element_seed(ObjectSeed::<Pod>::new(KEEP))? {
                    pods.push(pod);
                }
                Ok(Pods(pods))
            }
        }
        deserializer.deserialize_seq(PodsVisitor::<KEEP>)
    }
}

fn present<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    T::deserialize(deserializer).map(Some)
}

/// The page `serde_json` reads from `body`: `None` when the decoder need not agree (not a
/// JSON object, repeated top-level keys, nesting past `serde_json`'s limit, which counts from
/// the body here but from each item in the decoder, or the two documented differences of the
/// fast object decoder).
#[expect(clippy::type_complexity, reason = "a page or no page, as the decoder returns it")]
fn reference_page(
    body: &[u8],
    keep: bool,
) -> Option<Result<(Vec<Pod>, String, Option<String>), ()>> {
    if body.trim_ascii_start().first() != Some(&b'{') || json::negative_zero_or_plus_key(body) {
        return None;
    }
    // The keys only: like the decoder (and `serde_json` reading a type), this skips the values
    // of members it does not read without checking their strings' UTF-8.
    match serde_json::from_slice::<Keys>(body) {
        Ok(Keys(mut keys)) => {
            keys.sort_unstable();
            if keys.windows(2).any(|pair| pair[0] == pair[1]) {
                return None;
            }
        }
        Err(e) if e.to_string().contains("recursion limit") => return None,
        Err(_) => return Some(Err(())),
    }
    let read = if keep { read::<true>(body) } else { read::<false>(body) };
    let Ok(Parts { kind: Some(kind), metadata, items: Some(items) }) = read? else {
        return Some(Err(()));
    };
    let (version, token) =
        metadata.map(|m| (m.resource_version, m.continue_token)).unwrap_or_default();
    match version.filter(|v| !v.is_empty()) {
        Some(version) if kind == "PodList" => {
            Some(Ok((items.unwrap_or_default(), version, token.filter(|t| !t.is_empty()))))
        }
        _ => Some(Err(())),
    }
}

/// What the page decoder reads of a list body: its kind, its metadata, its items (absent,
/// `null`, or the pods).
struct Parts {
    kind: Option<String>,
    metadata: Option<ReferenceMeta>,
    #[expect(clippy::option_option, reason = "absent and `null` differ here, as in the decoder")]
    items: Option<Option<Vec<Pod>>>,
}

/// The typed read of `body`: `None` past the recursion limit.
fn read<const KEEP: bool>(body: &[u8]) -> Option<Result<Parts, ()>> {
    match serde_json::from_slice::<ReferenceList<KEEP>>(body) {
        Ok(list) => Some(Ok(Parts {
            kind: list.kind,
            metadata: list.metadata,
            items: list.items.map(|items| items.map(|pods| pods.0)),
        })),
        Err(e) if e.to_string().contains("recursion limit") => None,
        Err(_) => Some(Err(())),
    }
}

pub(super) fn page_property(u: &mut Unstructured<'_>) -> arbitrary::Result<()> {
    let mut rng = Rng::with_seed(u.arbitrary()?);
    let lists = if u.ratio(1, 5)? { &seeds().lists } else { &seeds().pod_lists };
    let body = body(u, &mut rng, lists)?;
    informer_fuzz::note("list.json", &body);
    let keep = u.ratio(1, 4)?;
    let whole = decode_page(&body, &[body.len()], keep);
    let ends = chunk_ends(u, body.len())?;
    let chunked = decode_page(&body, &ends, keep);
    assert!(chunked == whole, "chunked and whole page decodes differ");
    let (page, reported) = whole;
    if let Err(message) = &page {
        assert!(
            message.starts_with("decode error: pods list: "),
            "an error that does not name the list: {message}"
        );
    }
    match (page, reference_page(&body, keep)) {
        (_, None) | (Err(_), Some(Err(()))) => {}
        (Ok((items, version, token)), Some(Ok((pods, expected_version, expected_token)))) => {
            assert!(
                items.len() == pods.len()
                    && items.iter().zip(&pods).all(|(item, pod)| **item == *pod),
                "the page's items are not serde_json's"
            );
            assert_eq!((version, &token), (expected_version, &expected_token));
            assert_eq!(reported, token.into_iter().collect::<Vec<_>>(), "the token reported early");
        }
        (Ok(_), Some(Err(()))) => panic!("the decoder took a body that is not a valid PodList"),
        (Err(message), Some(Ok(_))) => panic!("the decoder refused a valid PodList: {message}"),
    }
    Ok(())
}
