//! One object's JSON to the `K` the cache keeps: fast, pruned, and at exact capacities.
//!
//! Both decode paths of the HTTP lister-watcher end here, once per object: a list item cut out
//! by the client's list splitter (`client/list_watch/list_split.rs`), or the object of a watch
//! event. An [`ObjectDecoder`]
//! decodes it with [`simd_json`], through the [`prune`](super::prune) wrapper that skips
//! `metadata.managedFields` unless told to keep it.
//!
//! # Why simd-json
//!
//! The cache holds every object for as long as it runs, so what matters is the heap each one
//! keeps, and that depends on how `Vec`s are built. JSON does not say how long an array is until
//! it ends, so a streaming parser (`serde_json`) builds every `Vec` by pushing onto it: the
//! vector ends with up to twice the capacity it needs, and with at least four slots when its
//! elements are at most 1 KiB (Rust's growth policy). k8s-openapi's structs are large inline (a
//! `Volume` is 3.2 KiB, a `Container` 2.3 KiB, a `ContainerStatus` 752 bytes on x86-64), so the
//! slack is a large part of a decoded pod: one container status alone carries three empty
//! 752-byte slots. simd-json first indexes the whole document (its "tape", which records how
//! many elements each array has), then hands serde each array with its exact length as the size
//! hint, so every `Vec` is allocated once, at exactly its length (serde preallocates at most
//! 1 MiB of elements per `Vec`). Its SIMD parser is also about twice as fast as `serde_json` on
//! the benchmark's pods (`cargo xtask bench`), where the alternative, decoding with
//! `serde_json` and then cloning into exact capacities, cost half a decode more.
//!
//! # `serde_json` has the last word
//!
//! Anything simd-json rejects is decoded again by `serde_json` (and then copied once into exact
//! capacities, as `Clone` allocates every vector at its length), so every error message, with
//! its position, is `serde_json`'s. That also covers what simd-json cannot represent but `K`
//! may hold (integers beyond 64 bits, `RawValue` fields): it takes the slow way. Three kinds of
//! input never reach simd-json, because it would take them where `serde_json` does not:
//!
//! - nesting deeper than `serde_json`'s recursion limit (128): simd-json's serde layer recurses
//!   once per level, even through values it skips, so a hostile `[[[[…` could overflow the
//!   stack and abort the process, where `serde_json` returns an error or skips without recursing;
//! - UTF-16 surrogate escapes (`\ud800` to `\udfff`): simd-json turns a lone surrogate into NUL
//!   instead of refusing it (valid pairs are rare enough to go the slow way too);
//! - objects over 256 KiB: simd-json's buffers grow to the largest object decoded and are kept
//!   for the next one, which must not pin a few MiB for the whole life of a watch.
//!
//! The depth is read off simd-json's tape (each container there says how many nodes it spans)
//! before anything is deserialized; escapes are found with `memchr`. Together they cost a few
//! microseconds a pod, a few percent of its decoding.
//!
//! What still differs is minor and never written by an API server: `-0` read as the integer 0,
//! a `+` sign accepted in an integer map key.
//!
//! Objects a relist finds unchanged in the cache are dropped right after decoding: the cached one
//! is kept (see [`ListIntake::unchanged`](crate::listwatch::ListIntake::unchanged)).

use std::fmt;
use std::marker::PhantomData;

use serde::de::{Deserialize, DeserializeOwned, DeserializeSeed, Deserializer};

use super::prune::ObjectSeed;

/// The deepest nesting simd-json is given: `serde_json`'s own recursion limit.
const MAX_DEPTH: usize = 128;

/// The largest object simd-json is given. Kubernetes objects are rarely above a few tens of KiB;
/// a `ConfigMap` of 1 MiB goes through `serde_json` and leaves no large buffers behind.
const FAST_MAX: usize = 256 * 1024;

/// Decodes objects of type `K`, reusing its parse buffers from one object to the next.
///
/// Public for the HTTP client's list and watch decoders, not a user API (see the `codec` module).
pub struct ObjectDecoder<K> {
    keep_managed_fields: bool,
    /// simd-json parses in place (it unescapes strings where they lie), so each object is
    /// copied here first; the buffer keeps its allocation between objects.
    input: Vec<u8>,
    buffers: simd_json::Buffers,
    _kind: PhantomData<fn() -> K>,
}

impl<K> fmt::Debug for ObjectDecoder<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ObjectDecoder")
            .field("keep_managed_fields", &self.keep_managed_fields)
            .finish_non_exhaustive()
    }
}

impl<K: DeserializeOwned + Clone> ObjectDecoder<K> {
    /// A decoder whose objects keep `metadata.managedFields` only if `keep_managed_fields` is set.
    #[must_use]
    pub fn new(keep_managed_fields: bool) -> Self {
        Self {
            keep_managed_fields,
            input: Vec::new(),
            buffers: simd_json::Buffers::default(),
            _kind: PhantomData,
        }
    }

    /// Decodes `json`, one JSON value, into `K` with exact-capacity vectors.
    ///
    /// # Errors
    ///
    /// `serde_json`'s error when `json` is not a `K`, with its position within `json`.
    pub fn decode(&mut self, json: &[u8]) -> Result<K, serde_json::Error> {
        if json.len() > FAST_MAX || has_surrogate_escape(json) {
            return self.decode_with_serde_json(json);
        }
        self.input.clear();
        self.input.extend_from_slice(json);
        let fast = match simd_json::to_tape_with_buffers(&mut self.input, &mut self.buffers) {
            Ok(tape) if nesting_within_limit(&tape.0) => {
                if self.keep_managed_fields {
                    tape.deserialize::<Seeded<K, true>>().map(|object| object.0).ok()
                } else {
                    tape.deserialize::<Seeded<K, false>>().map(|object| object.0).ok()
                }
            }
            _ => None,
        };
        match fast {
            Some(object) => Ok(object),
            None => self.decode_with_serde_json(json),
        }
    }

    /// Wipes what this decoder holds of the last object it decoded: its copy of the JSON is
    /// zeroed, and simd-json's buffers (which hold the object's strings) are let go. For a
    /// decoder kept between reads of objects that may be deleted meanwhile: compact storage's.
    pub(crate) fn forget(&mut self) {
        // Past the length, the buffer holds what an earlier `forget` zeroed, or nothing written.
        self.input.fill(0);
        // Sized for an object as large as this one: buffers that start small regrow (and copy)
        // a dozen times while the next object is parsed.
        self.buffers = simd_json::Buffers::new(self.input.len());
    }

    /// The bytes this decoder holds between objects that a test can read: its copy of the
    /// last object's JSON.
    #[cfg(test)]
    pub(crate) fn held_bytes(&self) -> &[u8] {
        &self.input
    }

    fn decode_with_serde_json(&self, json: &[u8]) -> Result<K, serde_json::Error> {
        let mut deserializer = serde_json::Deserializer::from_slice(json);
        let decoded = ObjectSeed::<K>::new(self.keep_managed_fields)
            .deserialize(&mut deserializer)
            .and_then(|object| deserializer.end().map(|()| object))?;
        // `Clone` allocates every vector at exactly its length: the slack pushing left goes.
        Ok(decoded.clone())
    }
}

/// `K` decoded through an [`ObjectSeed`] that keeps `metadata.managedFields` or not: a tape
/// deserializes types, not seeds.
struct Seeded<K, const KEEP_MANAGED_FIELDS: bool>(K);

impl<'de, K: Deserialize<'de>, const KEEP_MANAGED_FIELDS: bool> Deserialize<'de>
    for Seeded<K, KEEP_MANAGED_FIELDS>
{
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        ObjectSeed::<K>::new(KEEP_MANAGED_FIELDS).deserialize(deserializer).map(Self)
    }
}

/// Whether no container on the tape `nodes` is nested more than [`MAX_DEPTH`] deep.
fn nesting_within_limit(nodes: &[simd_json::Node<'_>]) -> bool {
    // Where each open container ends (just past its last node), innermost last.
    let mut ends = [0usize; MAX_DEPTH];
    let mut open = 0;
    let mut at = 0;
    while let Some(node) = nodes.get(at) {
        while open > 0 && ends[open - 1] == at {
            open -= 1;
        }
        let (simd_json::Node::Array { count, .. } | simd_json::Node::Object { count, .. }) = node
        else {
            at += 1;
            continue;
        };
        let end = at + count + 1;
        // Every container inside this one is a node of its `count`, so a container that
        // could not go too deep even if all of them were nested is skipped whole: a pod's tape
        // is then walked in a few dozen steps, not one per node.
        if open + 1 + count <= MAX_DEPTH {
            at = end;
            continue;
        }
        if open == MAX_DEPTH {
            return false;
        }
        ends[open] = end;
        open += 1;
        at += 1;
    }
    true
}

/// Whether `json` holds a UTF-16 surrogate escape, `\uD800` to `\uDFFF`.
fn has_surrogate_escape(json: &[u8]) -> bool {
    let mut from = 0;
    while let Some(found) = json.get(from..).and_then(|rest| memchr::memchr(b'\\', rest)) {
        let at = from + found;
        if let Some([b'u', b'd' | b'D', b'8' | b'9' | b'a'..=b'f' | b'A'..=b'F', ..]) =
            json.get(at + 1..)
        {
            return true;
        }
        // Every escape is at least two bytes, so `\\` never starts a second one.
        from = at + 2;
    }
    false
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::Pod;

    use super::*;

    const POD: &[u8] = br#"{"metadata":{"name":"a","managedFields":[{"manager":"m"}]},
        "spec":{"containers":[{"name":"c"}],"volumes":[{"name":"v1"},{"name":"v2"},{"name":"v3"}]},
        "status":{"containerStatuses":[{"name":"c","image":"i","imageID":"","ready":true,"restartCount":0}]}}"#;

    fn statuses_capacity(pod: &Pod) -> usize {
        pod.status.as_ref().unwrap().container_statuses.as_ref().unwrap().capacity()
    }

    fn volumes_capacity(pod: &Pod) -> usize {
        pod.spec.as_ref().unwrap().volumes.as_ref().unwrap().capacity()
    }

    #[test]
    fn vectors_are_exactly_as_long_as_their_content() {
        // What serde_json alone leaves: room to grow.
        let pushed: Pod = serde_json::from_slice(POD).unwrap();
        assert!(statuses_capacity(&pushed) > 1);
        assert!(volumes_capacity(&pushed) > 3);

        let mut decoder = ObjectDecoder::<Pod>::new(true);
        let decoded = decoder.decode(POD).unwrap();
        assert_eq!(decoded, pushed);
        assert_eq!(statuses_capacity(&decoded), 1);
        assert_eq!(volumes_capacity(&decoded), 3);
    }

    #[test]
    fn managed_fields_are_skipped_unless_kept() {
        let mut pruning = ObjectDecoder::<Pod>::new(false);
        let mut keeping = ObjectDecoder::<Pod>::new(true);
        // Twice each: the second decode runs on the grown, reused buffers.
        for _ in 0..2 {
            assert_eq!(pruning.decode(POD).unwrap().metadata.managed_fields, None);
            assert_eq!(
                keeping.decode(POD).unwrap().metadata.managed_fields.map(|m| m.len()),
                Some(1)
            );
        }
    }

    /// The recorded pods (kind's and the every-field pod), by file name.
    fn pod_fixtures() -> Vec<(String, Vec<u8>)> {
        let pods = crate::test_fixtures::recorded_pods();
        assert!(pods.len() >= 8, "found {} pod files in the crate's tests/fixtures", pods.len());
        pods
    }

    #[test]
    fn every_real_pod_decodes_as_serde_json_decodes_it() {
        let mut decoder = ObjectDecoder::<Pod>::new(true);
        for (name, json) in pod_fixtures() {
            let expected: Pod = serde_json::from_slice(&json).unwrap();
            assert_eq!(decoder.decode(&json).unwrap(), expected, "{name}");
        }
    }

    /// `file` of the crate's fixtures, decoded by the object decoder of `K` as `serde_json`
    /// decodes it.
    fn decodes_as_serde_json<K>(file: &str)
    where
        K: DeserializeOwned + Clone + PartialEq + fmt::Debug,
    {
        let path = format!("{}/tests/fixtures/{file}", env!("CARGO_MANIFEST_DIR"));
        let json = std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        let expected: K = serde_json::from_slice(&json).unwrap_or_else(|e| panic!("{path}: {e}"));
        let decoded = ObjectDecoder::<K>::new(true).decode(&json);
        assert_eq!(decoded.unwrap_or_else(|e| panic!("{path}: {e}")), expected, "{path}");
    }

    #[test]
    fn every_field_of_the_common_kinds_decodes_as_serde_json_decodes_it() {
        use k8s_openapi::api::{apps, batch, core, discovery};
        decodes_as_serde_json::<apps::v1::Deployment>("k8s-api-allfields-apps.v1.Deployment.json");
        decodes_as_serde_json::<batch::v1::Job>("k8s-api-allfields-batch.v1.Job.json");
        decodes_as_serde_json::<batch::v1::Job>("kind-v1-36-job.json");
        decodes_as_serde_json::<core::v1::ConfigMap>("k8s-api-allfields-core.v1.ConfigMap.json");
        decodes_as_serde_json::<core::v1::Event>("k8s-api-allfields-core.v1.Event.json");
        decodes_as_serde_json::<core::v1::Node>("k8s-api-allfields-core.v1.Node.json");
        decodes_as_serde_json::<core::v1::Secret>("k8s-api-allfields-core.v1.Secret.json");
        decodes_as_serde_json::<core::v1::Service>("k8s-api-allfields-core.v1.Service.json");
        decodes_as_serde_json::<discovery::v1::EndpointSlice>(
            "k8s-api-allfields-discovery.k8s.io.v1.EndpointSlice.json",
        );
    }

    /// A view of pods: the fields a scheduler-like controller reads.
    #[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
    struct PodView {
        metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
        spec: Option<PodViewSpec>,
    }

    #[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
    struct PodViewSpec {
        #[serde(rename = "nodeName")]
        node_name: Option<String>,
        containers: Vec<ContainerView>,
    }

    #[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
    struct ContainerView {
        name: String,
    }

    crate::impl_resource!(PodView, view = Pod);

    #[test]
    fn views_decode_real_pods_as_serde_json_does_without_managed_fields() {
        let mut pruning = ObjectDecoder::<PodView>::new(false);
        let mut keeping = ObjectDecoder::<PodView>::new(true);
        for (name, json) in pod_fixtures() {
            let expected: PodView = serde_json::from_slice(&json).unwrap();
            assert!(expected.metadata.managed_fields.is_some(), "{name} has managedFields");
            assert_eq!(keeping.decode(&json).unwrap(), expected, "{name}");
            let pruned = pruning.decode(&json).unwrap();
            assert_eq!(pruned.metadata.managed_fields, None, "{name}");
            assert_eq!(pruned.spec, expected.spec, "{name}");
        }
    }

    #[test]
    fn fields_a_view_does_not_name_are_skipped_whatever_they_hold() {
        // Neither a `Pod` (priority is an integer there, volumes a list) nor small, and both
        // decoders (simd-json, and serde_json past FAST_MAX) skip it.
        let odd = r#"{"metadata":{"name":"a"},"spec":{"nodeName":"n1","priority":"high",
            "containers":[{"name":"c","ports":{"not":"a list"}}],"volumes":7},"status":[1,2]}"#;
        assert!(serde_json::from_str::<Pod>(odd).is_err());
        let large = odd.replacen("\"high\"", &format!("\"{}\"", "h".repeat(FAST_MAX)), 1);
        let mut decoder = ObjectDecoder::<PodView>::new(false);
        for json in [odd, large.as_str()] {
            let view = decoder.decode(json.as_bytes()).unwrap();
            let spec = view.spec.unwrap();
            assert_eq!(spec.node_name.as_deref(), Some("n1"));
            assert_eq!(spec.containers, [ContainerView { name: "c".to_owned() }]);
        }
    }

    #[test]
    fn nesting_too_deep_for_serde_json_is_refused_without_overflowing_the_stack() {
        // Deeper than a thread's stack can recurse through, in a field pods do not have:
        // simd-json would walk it recursively to skip it. Small enough for simd-json's size.
        let depth = 100_000;
        let json = format!(
            r#"{{"metadata":{{"name":"a"}},"x":{}{}}}"#,
            "[".repeat(depth),
            "]".repeat(depth)
        );
        assert!(json.len() < FAST_MAX);
        let mut decoder = ObjectDecoder::<Pod>::new(false);
        let decoded = decoder.decode(json.as_bytes()).map(|pod| pod.metadata.name);
        let expected = serde_json::from_slice::<Pod>(json.as_bytes()).map(|pod| pod.metadata.name);
        assert_eq!(decoded.map_err(|e| e.to_string()), expected.map_err(|e| e.to_string()));
    }

    #[test]
    fn nesting_is_measured_on_the_tape() {
        let within = |json: &str| {
            let mut input = json.as_bytes().to_vec();
            nesting_within_limit(&simd_json::to_tape(&mut input).unwrap().0)
        };
        let nested = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
        assert!(within(&nested(MAX_DEPTH)));
        assert!(!within(&nested(MAX_DEPTH + 1)));
        // Siblings do not add up, and brackets in strings are not nesting.
        let siblings = format!("[{}]", vec![nested(MAX_DEPTH - 1); 3].join(","));
        assert!(within(&siblings));
        let keyed = format!(r#"{{"a":{},"b":"{}"}}"#, nested(MAX_DEPTH - 1), "[".repeat(500));
        assert!(within(&keyed));
        assert!(!within(&format!(r#"{{"a":{}}}"#, nested(MAX_DEPTH))));
        assert!(within(r#"{"a":[],"b":{},"c":[{}],"d":1}"#));
        // Too many nodes to be skipped whole: the depth still counts, not the size.
        let wide = format!("[{}]", vec!["1"; 300].join(","));
        assert!(within(&format!("[{wide},{}]", nested(MAX_DEPTH - 1))));
        assert!(!within(&format!("[{wide},{}]", nested(MAX_DEPTH))));
        let padded = |n: usize| format!("{}1{}", "[1,".repeat(n), "]".repeat(n));
        assert!(within(&padded(MAX_DEPTH)));
        assert!(!within(&padded(MAX_DEPTH + 1)));
        assert!(!within(&format!("[{},{wide}]", padded(MAX_DEPTH))));
    }

    /// The walk before containers were skipped: every node visited, the reference the
    /// skipping walk must agree with.
    fn nesting_within_limit_node_by_node(nodes: &[simd_json::Node<'_>]) -> bool {
        let mut ends = Vec::new();
        for (at, node) in nodes.iter().enumerate() {
            while ends.last() == Some(&at) {
                ends.pop();
            }
            if let simd_json::Node::Array { count, .. } | simd_json::Node::Object { count, .. } =
                node
            {
                if ends.len() == MAX_DEPTH {
                    return false;
                }
                ends.push(at + count + 1);
            }
        }
        true
    }

    /// A value `levels` containers deep along one chain, with random siblings (scalars and
    /// small random subtrees) beside it at every level.
    fn random_chain(rng: &mut fastrand::Rng, levels: usize) -> String {
        fn small(rng: &mut fastrand::Rng, depth: usize) -> String {
            if depth == 0 || rng.bool() {
                return if rng.bool() { "1".into() } else { r#""[{""#.into() };
            }
            let items: Vec<String> = (0..rng.usize(0..4)).map(|_| small(rng, depth - 1)).collect();
            container(rng.bool(), &items)
        }
        fn container(object: bool, items: &[String]) -> String {
            if object {
                let members: Vec<String> =
                    items.iter().enumerate().map(|(i, v)| format!(r#""k{i}":{v}"#)).collect();
                format!("{{{}}}", members.join(","))
            } else {
                format!("[{}]", items.join(","))
            }
        }
        if levels == 0 {
            return "0".into();
        }
        let mut items: Vec<String> = (0..rng.usize(0..3)).map(|_| small(rng, 5)).collect();
        items.insert(rng.usize(0..=items.len()), random_chain(rng, levels - 1));
        container(rng.bool(), &items)
    }

    #[test]
    fn skipping_small_containers_finds_what_the_node_by_node_walk_finds() {
        let mut rng = fastrand::Rng::with_seed(20_261_122);
        let (mut within, mut beyond) = (0, 0);
        for _ in 0..400 {
            let levels = rng.usize(110..=140);
            let json = random_chain(&mut rng, levels);
            let mut input = json.into_bytes();
            let tape = simd_json::to_tape(&mut input).unwrap();
            let expected = nesting_within_limit_node_by_node(&tape.0);
            assert_eq!(nesting_within_limit(&tape.0), expected);
            if expected { within += 1 } else { beyond += 1 }
        }
        // Both answers were tried many times.
        assert!(within > 50 && beyond > 50, "{within} within, {beyond} beyond");
    }

    #[test]
    fn surrogate_escapes_are_found() {
        assert!(!has_surrogate_escape(POD));
        assert!(!has_surrogate_escape(br#"{"a":"\\ud800 is text, \u00e9 no surrogate"}"#));
        for json in [r#"{"a":"\ud800"}"#, r#"{"a":"x\uDBFF\uDC00"}"#, r#"{"a":"\udfff"}"#] {
            assert!(has_surrogate_escape(json.as_bytes()), "{json}");
        }
        assert!(!has_surrogate_escape(br#"{"a":"ends in a backslash\"#));
    }

    #[test]
    fn a_lone_surrogate_is_refused_as_serde_json_refuses_it() {
        let json = br#"{"metadata":{"name":"a\ud800"}}"#;
        let mut decoder = ObjectDecoder::<Pod>::new(false);
        let error = decoder.decode(json).unwrap_err();
        assert_eq!(error.to_string(), serde_json::from_slice::<Pod>(json).unwrap_err().to_string());
        // A valid pair decodes, the slow way.
        let pair = br#"{"metadata":{"name":"a\ud83d\ude00"}}"#;
        assert_eq!(decoder.decode(pair).unwrap().metadata.name.as_deref(), Some("a\u{1f600}"));
    }

    #[test]
    fn large_objects_leave_no_large_buffers_behind() {
        let big = format!(
            r#"{{"metadata":{{"name":"a","annotations":{{"big":"{}"}}}}}}"#,
            "x".repeat(FAST_MAX)
        );
        let mut decoder = ObjectDecoder::<Pod>::new(false);
        decoder.decode(POD).unwrap();
        let pod = decoder.decode(big.as_bytes()).unwrap();
        assert_eq!(pod.metadata.annotations.unwrap()["big"].len(), FAST_MAX);
        assert!(decoder.input.capacity() < FAST_MAX);
    }

    #[test]
    fn what_does_not_fit_gets_serde_json_s_error_and_position() {
        let mut decoder = ObjectDecoder::<Pod>::new(false);
        let json = br#"{"metadata":{"name":"a"},"spec":{"containers":[{"name":7}]}}"#;
        let expected = serde_json::from_slice::<Pod>(json).unwrap_err();
        let error = decoder.decode(json).unwrap_err();
        assert_eq!(error.to_string(), expected.to_string());
        assert_eq!((error.line(), error.column()), (expected.line(), expected.column()));
        // The decoder is not left broken by a failure.
        assert_eq!(decoder.decode(POD).unwrap().metadata.name.as_deref(), Some("a"));
    }
}
